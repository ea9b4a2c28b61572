"""`make run`'s showcase lives outside the library (examples/showcase.py): it still starts from
a checkout and explains itself, and nothing in praha imports it."""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHOWCASE = ROOT / "examples" / "showcase.py"


def test_the_showcase_explains_itself(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(SHOWCASE), "--help"])
    with pytest.raises(SystemExit) as e:
        runpy.run_path(str(SHOWCASE), run_name="__main__")
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "usage: python examples/showcase.py" in out
    assert "SIGKILLs the leader" in out


def test_the_showcase_is_not_part_of_the_library():
    assert not (ROOT / "praha" / "showcase.py").exists()
    assert "examples/showcase.py" in (ROOT / "Makefile").read_text()
    users = [p for p in (ROOT / "praha").rglob("*.py") if "showcase import" in p.read_text()
             or "import praha.showcase" in p.read_text()]
    assert not users
