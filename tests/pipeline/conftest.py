"""Fixtures for pipeline tests: one local SparkSession and one 3-broker cluster per session.

Spark takes ~15 s to start on 2 cores, so every pipeline test shares one session
(`local[2,4]`: two cores, and failed tasks are retried, which the sink tests rely on).
The cluster is shared too; each test uses its own topics, and a test that kills a
broker restarts it and waits for full ISRs before it returns. Every process is stopped
by PID at the end, even on failure.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from praha.admin.status import cluster_status
from praha.cluster.local import LocalCluster
from praha.testing.cluster import bootstrap, cluster_on_chroot, wait_for

PIPELINE_BROKER_CONFIG = {
    "replica.lag.time.max.ms": "3000",
    "isr.change.notification.interval.ms": "300",
    "replica.fetch.backoff.ms": "200",
    "leader.imbalance.check.interval.seconds": "3600",  # no leader moves the tests did not ask for
    "log.retention.check.interval.ms": "1000",  # the data-loss test waits for retention
}


@dataclass
class PipelineCluster:
    cluster: LocalCluster
    zookeeper: str

    @property
    def directory(self) -> Path:
        return self.cluster.root

    @property
    def bootstrap(self) -> str:
        return bootstrap(self.cluster)

    def status(self) -> dict[str, Any]:
        return cluster_status(self.zookeeper)

    def partitions(self, topic: str) -> list[dict[str, Any]]:
        return self.status()["topics"].get(topic, {}).get("partitions", [])

    def leader(self, topic: str, partition: int) -> int:
        return self.partitions(topic)[partition]["leader"]

    def controller(self) -> int:
        return self.status()["controller"]["id"]

    def create_topic(self, name: str, partitions: int, rf: int = 3, config: dict[str, str] | None = None) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics([NewTopic(name, partitions, rf, config=config or {})], request_timeout=30)
        futures[name].result(timeout=60)
        self.wait_ready(name, partitions)

    def wait_ready(self, topic: str, partitions: int, full_isr: bool = True, timeout: float = 60) -> None:
        """Leaders everywhere (ZooKeeper and every live broker's metadata) and, if asked, full ISRs."""
        from confluent_kafka.admin import AdminClient

        def ok() -> bool:
            parts = self.partitions(topic)
            if len(parts) != partitions or any(p["leader"] < 0 or p["offline"] for p in parts):
                return False
            if full_isr and any(len(p["isr"]) < len(p["replicas"]) for p in parts):
                return False
            for b in self.cluster.load().brokers.values():
                if not self.cluster.broker_running(b):
                    continue
                md = AdminClient({"bootstrap.servers": f"127.0.0.1:{b.port}"}).list_topics(topic, timeout=5)
                t = md.topics.get(topic)
                if t is None or t.error is not None or len(t.partitions) != partitions \
                        or any(p.leader < 0 for p in t.partitions.values()):
                    return False
            return True

        wait_for(ok, timeout, interval=0.25, what=f"topic {topic} ready")

    def restart(self, broker_id: int) -> None:
        """Start a broker the test stopped or killed (a no-op if it is running)."""
        _, b = self.cluster.broker(broker_id)
        if not self.cluster.broker_running(b):
            self.cluster.start_broker(broker_id, timeout=60)

    def written(self, topic: str) -> int:
        """Records in `topic` so far (sum of high watermarks)."""
        from praha.spark.kafka import ClusterClient
        from praha.spark.options import parse_bootstrap

        with ClusterClient(parse_bootstrap({"kafka.bootstrap.servers": self.bootstrap})) as c:
            tps = c.refresh([topic]).partitions_of(topic)
            return sum(c.list_offsets({tp: -1 for tp in tps}, 3, 100).values())

    def produce(self, topic: str, records: list[dict[str, Any]], **config: Any) -> None:
        """Each record: value, and optionally key, partition, headers, timestamp. acks=all; raises on any failure."""
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5, **config})
        errors: list[Any] = []
        for r in records:
            while True:
                try:
                    p.produce(topic, on_delivery=lambda e, m: errors.append(e) if e else None, **r)
                    break
                except BufferError:
                    p.poll(0.05)
        left = p.flush(60)
        assert left == 0 and not errors, f"produce failed: {left} unacknowledged, errors {errors[:3]}"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from praha.spark import local_session

    session = local_session("praha-pipeline-tests", cores=2, task_retries=4,
                            **{"spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2"})
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def pipeline(zookeeper, tmp_path_factory) -> Iterator[PipelineCluster]:
    with cluster_on_chroot(zookeeper.connect_string, tmp_path_factory.mktemp("pipeline"), 3, PIPELINE_BROKER_CONFIG,
                           store=False) as env:
        yield PipelineCluster(env.cluster, env.zookeeper)


@pytest.fixture
def topic_name(request) -> str:
    """A topic name unique to the test."""
    return f"{request.node.name.replace('test_', '').replace('_', '-')[:40]}-{int(time.time() * 1000) % 100000}"
