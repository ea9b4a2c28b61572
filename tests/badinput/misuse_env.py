"""Helpers of the bad-input catalogue: the shared cluster's handle and topic creation.

A plain module, not a conftest, so tests can import it by a name no other directory uses
(every directory has a `conftest`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from praha.admin.status import cluster_status
from praha.cluster.local import LocalCluster
from praha.common import ReplicaAssignment, TopicAssignment
from praha.testing.cluster import wait_for
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
