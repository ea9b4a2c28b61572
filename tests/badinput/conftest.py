"""Fixtures of the bad-input catalogue: a shared 3-broker cluster with a known topic layout.

`misuse_cluster` (one per test module): brokers 1-3 on the test run's ZooKeeper (own
chroot), topic `orders` with partitions on 1:2, 3:2, 1:3 and topic `orders_x`, so that
every expected error message is deterministic. Stopped by PID at the end.
"""
from __future__ import annotations

import pytest
from misuse_env import ORDERS, MisuseCluster, create_and_wait

from praha.testing.cluster import running_cluster
from praha.testing.zookeeper import delete_chroot, unique_chroot
from praha.zk.store import ZkStore


@pytest.fixture(scope="module")
def misuse_cluster(zookeeper, tmp_path_factory):
    connect = unique_chroot(zookeeper.connect_string)
    store = ZkStore(connect, session_timeout_ms=10000).start()
    try:
        store.ensure_persistent_paths()
        with running_cluster(tmp_path_factory.mktemp("misuse"), connect, 3) as cluster:
            create_and_wait(store, connect, "orders", ORDERS)
            create_and_wait(store, connect, "orders_x", {0: (1,)})
            files = tmp_path_factory.mktemp("files")
            yield MisuseCluster(cluster, store, connect, files)
    finally:
        store.stop()
        delete_chroot(connect)
