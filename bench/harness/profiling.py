"""Sampling profiles of a process with py-spy, and stopping a helper process by its PID."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path


# ------------------------------------------------------------------------- misc processes
def start_py_spy(pid: int, out: Path, duration: int, fmt: str = "speedscope",
                 gil_only: bool = False) -> subprocess.Popen | None:
    """py-spy (pip-installed into the venv for measuring only) sampling `pid` at 200 Hz;
    `fmt` "speedscope" or "raw" (collapsed stacks, one line per stack with its count);
    `gil_only`: only the thread holding the GIL is sampled (where the interpreter's time goes)."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(exe).exists():
        print("  (py-spy not found; no profile)")
        return None
    return subprocess.Popen([exe, "record", "-p", str(pid), "-o", str(out), "-d", str(duration), "-r", "200",
                             "-f", fmt, "--nonblocking"] + (["--gil"] if gil_only else []),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def stop_process(proc: subprocess.Popen | None, grace: float = 30.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def stop_py_spy(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        os.kill(proc.pid, signal.SIGINT)
        stop_process(proc, grace=30)


