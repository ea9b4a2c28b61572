"""A local cluster's ZooKeeper, killed and started again with `praha zookeeper start --dir`,
is the cluster's again: its brokers reconnect, and `praha cluster down` stops it (issue 15 §5:
`cluster down` used to lose track of a ZooKeeper restarted by hand)."""
from __future__ import annotations

import os
import signal
import time

import pytest

from praha.cluster.local import LocalCluster, _process_matches

pytestmark = pytest.mark.integration


def test_restarted_zookeeper_belongs_to_the_cluster(tmp_path, cli):
    root = tmp_path / "own-zk"
    rc, _, err = cli("cluster", "up", "--brokers", "1", "--dir", root)
    try:
        assert rc == 0, err
        cluster = LocalCluster(root)
        old = cluster.load().zookeeper_pid
        rc, _, err = cli("zookeeper", "start", "--dir", root)
        assert rc == 1
        assert f"is running (pid {old})" in err  # one ZooKeeper per cluster
        os.kill(old, signal.SIGKILL)
        try:
            os.waitpid(old, 0)  # `cluster up` ran in this process: reap its child (a shell's init would)
        except ChildProcessError:
            pass
        rc, out, err = cli("zookeeper", "start", "--dir", root)
        assert rc == 0, err
        new = cluster.load().zookeeper_pid
        assert new != old
        assert _process_matches(new, "zookeeper")
        assert f"(pid {new})" in out
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the broker's session survives or it registers again
            rc, out, _ = cli("cluster", "status", "--dir", root)
            if rc == 0 and "controller: broker 1" in out:
                break
            time.sleep(0.5)
        assert rc == 0, out
        assert "controller: broker 1" in out, out
    finally:
        rc, _, err = cli("cluster", "down", "--dir", root)
    assert rc == 0, err
    assert not _process_matches(cluster.load().zookeeper_pid, "zookeeper")
