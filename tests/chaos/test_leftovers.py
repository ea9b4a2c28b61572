"""A campaign SIGKILLed from outside (as a test's timeout does) leaves nothing behind once
`praha chaos cleanup` has run: no process of it, no tmpfs log dir mounted, no namespace,
veth or bridge of its layout (so none of its nftables rules), no claim.

Slow (a real campaign on hosts of their own, killed during its first full_disk fault): run by
`make chaos`. Needs root, namespaces, nft and tmpfs mounts; skips with the reason elsewhere.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from praha.chaos import leftovers
from praha.cluster import netns
from praha.testing import disks

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _mounts(root: str) -> list[str]:
    return leftovers.mounts_below(root, Path("/proc/self/mounts").read_text())


@pytest.mark.timeout(900)
def test_a_killed_campaign_leaves_nothing_after_cleanup(tmp_path):
    reason = netns.unavailable_reason() or ("" if shutil.which("nft") else "nftables' `nft` is not installed")
    if reason or not disks.available():
        pytest.skip(reason or "tmpfs cannot be mounted here (full_disk's log dirs)")
    err = tmp_path / "chaos.err"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(err, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "praha", "chaos", "--netns", "--brokers", "3", "--faults", "4", "--seed", "5",
             "--kinds", "full_disk,partition", "--workload", "txn", "--dir", str(tmp_path / "campaigns")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=out, env=env, start_new_session=True)
    root = ""
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None and "chaos: fault 1/" not in err.read_text():
            time.sleep(1)
        assert proc.poll() is None, f"the campaign ended before its first fault:\n{err.read_text()[-3000:]}"
        assert "chaos: fault 1/" in err.read_text(), err.read_text()[-3000:]
        root = str(next((tmp_path / "campaigns").glob("seed-5-*")))
        layout = netns.NetnsLayout.load(Path(root) / "netns.json")
        assert layout is not None
        proc.send_signal(signal.SIGKILL)  # from outside: no finally, no close() runs
        proc.wait(30)
        # what the killed campaign left (the point of the test: all of it is there now)
        assert _mounts(root), "the campaign's tmpfs log dirs should still be mounted"
        assert leftovers.processes_working_in(root), "the campaign's brokers and clients should still run"
        assert {n.netns for n in layout.nodes.values()} <= netns.existing_names()[0]
        done = subprocess.run([sys.executable, "-m", "praha", "chaos", "cleanup"], capture_output=True, text=True,
                              env=env, timeout=180)
        assert done.returncode == 0, done.stderr
        assert root in done.stdout, done.stdout
        assert _mounts(root) == []
        assert leftovers.processes_working_in(root) == set()
        ns, links = netns.existing_names()
        assert not {n.netns for n in layout.nodes.values()} & ns
        assert not ({n.link for n in layout.nodes.values()} | {layout.bridge}) & links
        assert all(c.root != root for c in leftovers.claims())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        leftovers.cleanup_leftovers()
