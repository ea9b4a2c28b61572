"""Fixtures for pipeline tests: one SparkSession and one 3-broker cluster per session.

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

    def values(self, topic: str, at_least: int, timeout: float = 100) -> list[str]:
        """The values in `topic` (read from offset 0 of every partition, no group), once at
        least `at_least` are there or `timeout` passes."""
        from confluent_kafka import Consumer
        from confluent_kafka import TopicPartition as Tp

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "pipeline-check", "enable.auto.commit": False})
        try:
            c.assign([Tp(topic, p, 0) for p in range(len(self.partitions(topic)))])
            got: list[str] = []
            deadline = time.monotonic() + timeout
            while len(got) < at_least and time.monotonic() < deadline:
                got += [m.value().decode() for m in c.consume(500, 0.5) if m.error() is None]
            return got
        finally:
            c.close()

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
        assert left == 0, f"produce failed: {left} unacknowledged, errors {errors[:3]}"
        assert not errors, f"produce failed: {left} unacknowledged, errors {errors[:3]}"


#: `PRAHA_SPARK_MASTER=standalone` (make test-spark-cluster): the same tests on a Spark
#: standalone cluster of two workers, praha shipped to the executors as a zip (--py-files)
SPARK_MASTER_ENV = "PRAHA_SPARK_MASTER"


@pytest.fixture(scope="session")
def spark(tmp_path_factory) -> Iterator[Any]:
    import os
    import sys

    from praha.spark import local_session, package_zip, session, worker_python

    # a Python worker (the streaming planner's included) gets two minutes to connect back to
    # the JVM, not 15 s: on the shared 2-core machine they can take longer to start
    conf = {"spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2",
            "spark.python.authenticate.socketTimeout": "120s"}
    os.environ.setdefault("SPARK_AUTH_SOCKET_TIMEOUT", "120")  # the Python side of the same wait
    if os.environ.get(SPARK_MASTER_ENV, "local") != "standalone":
        s = local_session("praha-pipeline-tests", cores=2, task_retries=4, **conf)
        try:
            yield s
        finally:
            s.stop()
        return
    from praha.spark.standalone import standalone_cluster

    root = tmp_path_factory.mktemp("spark-standalone")
    with standalone_cluster(root / "cluster", workers=2, cores=1, memory="1g") as cluster:
        s = session(cluster.master_url, "praha-pipeline-tests", py_files=[package_zip(str(root))],
                    python=worker_python(sys.executable),  # the cluster is on this machine
                    conf={**conf, "spark.task.maxFailures": "4", "spark.executor.memory": "512m",
                          "spark.cores.max": "2"})
        try:
            yield s
        finally:
            s.stop()


@pytest.fixture(scope="session")
def pipeline(zookeeper, tmp_path_factory) -> Iterator[PipelineCluster]:
    with cluster_on_chroot(zookeeper.connect_string, tmp_path_factory.mktemp("pipeline"), 3, PIPELINE_BROKER_CONFIG,
                           store=False) as env:
        yield PipelineCluster(env.cluster, env.zookeeper)


@pytest.fixture
def topic_name(request) -> str:
    """A topic name unique to the test."""
    return f"{request.node.name.replace('test_', '').replace('_', '-')[:40]}-{int(time.time() * 1000) % 100000}"


#: per-test bound on a standalone cluster (the suite's 300 s default covers neither the
#: first test's share of the cluster's and the session's start, 280 s on the shared
#: machine, nor executors in JVMs of their own); a timeout's interrupt also breaks the
#: session's py4j connection for every test after it
STANDALONE_TIMEOUT = 1800


def pytest_collection_modifyitems(config, items) -> None:
    import os

    if os.environ.get(SPARK_MASTER_ENV, "local") != "standalone":
        return
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(STANDALONE_TIMEOUT))
