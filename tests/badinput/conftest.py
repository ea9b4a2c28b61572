"""Fixtures of the bad-input catalogue: a shared 3-broker cluster with a known topic layout.

`misuse_cluster` (one per test module): brokers 1-3 on the test run's ZooKeeper (own
chroot), topic `orders` with partitions on 1:2, 3:2, 1:3 and topic `orders_x`, so that
every expected error message is deterministic. Stopped by PID at the end.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from praha.admin.status import cluster_status
from praha.cluster.local import LocalCluster
from praha.common import ReplicaAssignment, TopicAssignment
from praha.testing.cluster import running_cluster, wait_for
from praha.testing.zookeeper import delete_chroot, unique_chroot
from praha.zk.store import ZkStore

ORDERS = {0: (1, 2), 1: (3, 2), 2: (1, 3)}


@dataclass
class MisuseCluster:
    cluster: LocalCluster
    store: ZkStore
    connect: str
    files: Path

    @property
    def dir(self) -> str:
        return str(self.cluster.root)

    def port(self, broker: int) -> int:
        return self.cluster.load().brokers[broker].port

    def pid(self, broker: int) -> int:
        return self.cluster.load().brokers[broker].pid

    def file(self, name: str, text: str) -> str:
        path = self.files / name
        path.write_text(text)
        return str(path)


def create_and_wait(store: ZkStore, connect: str, topic: str, assignment: dict[int, tuple[int, ...]]) -> None:
    store.create_topic(topic, TopicAssignment({p: ReplicaAssignment(r) for p, r in assignment.items()}), {})

    def led() -> bool:
        parts = cluster_status(connect, store=store)["topics"].get(topic, {}).get("partitions", [])
        return len(parts) == len(assignment) and all(p["leader"] >= 0 for p in parts)

    wait_for(led, 30, what=f"leaders of {topic}")


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
