"""docs/compatibility.md's API table is the broker's table (bench/compat.py writes it)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_api_table_in_the_docs_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "compat.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, "docs/compatibility.md is stale: run .venv/bin/python bench/compat.py"
