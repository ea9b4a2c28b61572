"""Every benchmark script still starts after a change to the shared machinery (bench/harness/):
`--help` of each, in this process (cheap: praha is imported once), and tiny real runs of two
that print their figures without touching bench/RESULTS.md."""
from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))


def test_every_script_is_found():
    assert len(SCRIPTS) >= 20
    assert (BENCH / "harness" / "__init__.py").exists()
    assert not (BENCH / "_harness.py").exists()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help(script, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    monkeypatch.setattr(sys, "path", [str(BENCH), *sys.path])  # as `python bench/X.py` runs it
    with pytest.raises(SystemExit) as e:
        runpy.run_path(str(script), run_name="__main__")
    assert e.value.code in (0, None)
    assert "usage:" in capsys.readouterr().out


def _run(*args: str, timeout: float) -> str:
    done = subprocess.run([sys.executable, *args], cwd=BENCH.parent, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_a_tiny_heartbeat_cpu_run():
    out = _run("bench/heartbeat_cpu.py", "--groups", "2", "--members", "4", "--rounds", "1", "--no-write",
               timeout=300)
    assert "steady heartbeat" in out


@pytest.mark.slow
def test_a_tiny_controller_bench_run(tmp_path):
    """The controller benches' rig end to end: embedded ZooKeeper, pre-load, stand-in brokers,
    a real broker 1, the trial loop, the table (`make test-bench`)."""
    out = _run("bench/topic_create.py", "--sizes", "100", "--repeat", "1", "--no-write", "--timeout", "240",
               timeout=600)
    assert "| 100 |" in out
    assert "missing 0" in out
