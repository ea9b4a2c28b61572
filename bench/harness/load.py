"""What the machine was doing: CPU seconds, the load meter beside every figure, the
machine's identity line, and bounded waits for a condition."""
from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Iterable


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (from /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (from /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


class LoadMeter:
    """The share of the machine's CPUs that processes other than the bench, the broker and
    ZooKeeper took during a window (the machine is shared)."""

    def __init__(self, pids: Iterable[int]):
        self.pids = [p for p in pids if p and p > 0]
        self.t0 = time.perf_counter()
        self.busy0 = machine_busy_seconds()
        self.own0 = sum(process_cpu_s(p) for p in self.pids) + time.process_time()

    def other_share(self) -> float:
        wall = time.perf_counter() - self.t0
        own = sum(process_cpu_s(p) for p in self.pids) + time.process_time() - self.own0
        others = machine_busy_seconds() - self.busy0 - own
        return max(others, 0.0) / max(wall * (os.cpu_count() or 1), 1e-9)



def wait_until(pred: Callable[[], bool], timeout: float, what: str, step: float = 0.005) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(step)


# ------------------------------------------------------------------------- report
def machine_id() -> str:
    """CPUs, Python and platform: what a figure in RESULTS.md was taken on."""
    return f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}"


def machine_line() -> str:
    """`machine_id` and the load average (the machine is shared: a busy one explains a figure)."""
    la = os.getloadavg()
    return f"{machine_id()}; load average at the end {la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f} (1/5/15 min)"

