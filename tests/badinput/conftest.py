"""Fixtures of the bad-input catalogue: a shared 3-broker cluster with a known topic layout.

`misuse_cluster` (one per test module): brokers 1-3 on the test run's ZooKeeper (own
chroot), topic `orders` with partitions on 1:2, 3:2, 1:3 and topic `orders_x`, so that
every expected error message is deterministic. Stopped by PID at the end.
"""
from __future__ import annotations

import pytest
from misuse_env import ORDERS, MisuseCluster, create_and_wait


@pytest.fixture(scope="module")
def misuse_cluster(module_cluster, tmp_path_factory):
    c = module_cluster(3)
    create_and_wait(c.store, c.zookeeper, "orders", ORDERS)
    create_and_wait(c.store, c.zookeeper, "orders_x", {0: (1,)})
    return MisuseCluster(c.cluster, c.store, c.zookeeper, tmp_path_factory.mktemp("files"))
