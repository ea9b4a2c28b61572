"""A full log directory on a partition leader (issue 15 §3): the directory goes offline on
that broker, leadership moves within the ISR, the client follows, nothing acknowledged is
lost, the broker's other directory keeps serving, and after a restart with room on the disk
the replicas come back. The disk is a real 16 MB tmpfs that gets filled (ENOSPC); a broker
whose only directory fails exits.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from confluent_kafka import Producer

from praha.admin.records import describe_log_dirs
from praha.admin.status import cluster_status
from praha.testing import disks
from praha.testing.clients import read_back
from praha.testing.cluster import bootstrap, cluster_on_chroot, running_cluster, wait_for
from praha.zk import znodes
from praha.zk.admin_zk import create_topic
from praha.zk.store import ZkStore

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not disks.available(), reason="needs root and tmpfs mounts for a small real disk"),
]

TOPIC = "disk"
FAILING_BROKER = 1


def root_of(cluster) -> Path:
    return Path(cluster.root)


def _partition(connect: str, store: ZkStore, partition: int) -> dict:
    parts = cluster_status(connect, store=store)["topics"].get(TOPIC, {}).get("partitions", [])
    return next((p for p in parts if p["partition"] == partition), {"leader": -1, "isr": []})


class Writer(threading.Thread):
    """A confluent-kafka producer (acks=all) writing to one partition until stopped."""

    def __init__(self, bs: str, partition: int):
        super().__init__(daemon=True)
        self.partition = partition
        self.producer = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5,
                                  "enable.idempotence": True, "message.timeout.ms": 120000})
        self.acked: list[bytes] = []
        self.failed: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            self.producer.produce(TOPIC, f"v{i:07d}".encode() + b"x" * 200, partition=self.partition,
                                  on_delivery=self._delivered)
            i += 1
            self.producer.poll(0.002)
        self.producer.flush(120)

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked.append(msg.value())
        else:
            self.failed.append(str(err))


@pytest.fixture(scope="module")
def env(zookeeper, tmp_path_factory):
    """The disk outlives the brokers that write to it: cluster_on_chroot inside its mount."""
    root = tmp_path_factory.mktemp("logdirs")
    disk = disks.TinyDisk(root / "disk-of-broker-1", size_mb=16)
    try:
        disk.mount()
        # broker 1: the small disk listed first, so the first new log goes there
        per_broker = {FAILING_BROKER: {"log.dirs": f"{disk.path},{root / 'cluster' / 'broker-1' / 'data'}"}}
        with cluster_on_chroot(zookeeper.connect_string, root / "cluster", 3, per_broker=per_broker) as c:
            yield c.cluster, c.store, c.zookeeper, disk
    finally:
        disk.unmount()


def test_a_full_log_dir_moves_leadership_loses_nothing_and_recovers_after_a_restart(env, cli):
    cluster, store, connect, disk = env
    create_topic(store, TOPIC, None, None, {"min.insync.replicas": "2"}, assignment={0: [1, 2, 3], 1: [1, 3, 2]})
    wait_for(lambda: all(_partition(connect, store, p)["leader"] == FAILING_BROKER for p in (0, 1)), 30,
             what="broker 1 leading both partitions")
    data_dir = root_of(cluster) / "broker-1" / "data"
    wait_for(lambda: all((Path(disk.path) / f"{TOPIC}-{p}").is_dir() or (data_dir / f"{TOPIC}-{p}").is_dir()
                         for p in (0, 1)), 30, what="broker 1's logs of both partitions")
    on_disk = [p for p in (0, 1) if (Path(disk.path) / f"{TOPIC}-{p}").is_dir()]
    assert len(on_disk) == 1, "one partition per directory (fewest logs first)"
    failing, healthy = on_disk[0], 1 - on_disk[0]
    wait_for(lambda: len(_partition(connect, store, failing)["isr"]) == 3, 30, what="a full ISR")
    bs = bootstrap(cluster)

    writer = Writer(bs, failing)
    writer.start()
    try:
        wait_for(lambda: len(writer.acked) >= 200, 60, what="records acknowledged before the disk fills")
        disk.fill()
        moved = wait_for(lambda: _partition(connect, store, failing)["leader"] not in (-1, FAILING_BROKER), 60,
                         what="leadership moving off the full disk")
        assert moved
        acked_at_failover = len(writer.acked)
        wait_for(lambda: len(writer.acked) >= acked_at_failover + 200, 90,
                 what="the producer writing on to the new leader")
    finally:
        writer.stop.set()
        writer.join(150)
    assert not writer.failed, writer.failed[:5]
    state = _partition(connect, store, failing)
    assert FAILING_BROKER not in state["isr"]

    # `topics describe` (and Metadata) show the replica offline; the notification is consumed
    rc, out, _err = cli("topics", "describe", "--zookeeper", connect, "--topic", TOPIC, "--json")
    assert rc == 0
    described = {p["partition"]: p for p in json.loads(out)["topics"][TOPIC]["partitions"]}
    assert described[failing]["offline_replicas"] == [FAILING_BROKER]
    assert described[healthy]["offline_replicas"] == []
    wait_for(lambda: store.get_children(znodes.LOG_DIR_EVENT_NOTIFICATION_PATH) == [], 30,
             what="the controller deleting the log dir event notification")
    _, b1 = cluster.broker(FAILING_BROKER)
    assert "log dir event notification log_dir_event_" in Path(b1.log_path).read_text()
    # DescribeLogDirs (`praha log-dirs`): the full dir is offline, the other one serves
    rc, out, _err = cli("log-dirs", "--describe", "--bootstrap-server", bs, "--broker-list", str(FAILING_BROKER))
    assert rc == 0
    (b1_dirs,) = json.loads(out.strip().splitlines()[-1])["brokers"]
    errors = {Path(d["logDir"]).name: d["error"] for d in b1_dirs["logDirs"]}
    assert errors == {disk.path.name: "KAFKA_STORAGE_ERROR", "data": None}
    healthy_dir = next(d for d in b1_dirs["logDirs"] if d["error"] is None)
    assert f"{TOPIC}-{healthy}" in {p["partition"] for p in healthy_dir["partitions"]}

    # broker 1's other directory keeps serving its partition: still its leader, writable
    other = Writer(bs, healthy)
    other.start()
    wait_for(lambda: len(other.acked) >= 100, 60, what="writes to the healthy directory")
    other.stop.set()
    other.join(150)
    assert not other.failed
    assert _partition(connect, store, healthy)["leader"] == FAILING_BROKER

    # nothing acknowledged was lost
    acked = set(writer.acked)
    assert read_back(bs, TOPIC, failing, acked) >= acked
    assert read_back(bs, TOPIC, healthy, set(other.acked)) >= set(other.acked)

    # restart broker 1 with room on the disk: its replica comes back into the ISR
    cluster.stop_broker(FAILING_BROKER)
    disk.free()
    cluster.start_broker(FAILING_BROKER)
    wait_for(lambda: FAILING_BROKER in _partition(connect, store, failing)["isr"], 90,
             what="the replica on the repaired disk rejoining the ISR")
    (b1_dirs,) = describe_log_dirs(bs, [FAILING_BROKER])
    assert all(d.error is None for d in b1_dirs.dirs)
    assert read_back(bs, TOPIC, failing, acked) >= acked


def test_a_broker_whose_only_log_dir_fails_exits(zk_connect, zk_store, tmp_path):
    connect, store = zk_connect, zk_store
    disk = disks.TinyDisk(tmp_path / "only-disk", size_mb=8)
    try:
        disk.mount()
        with running_cluster(tmp_path / "cluster", connect, 1, per_broker={1: {"log.dirs": str(disk.path)}}) as cluster:
            create_topic(store, "alone", 1, 1)
            wait_for(lambda: cluster_status(connect, store=store)["topics"]["alone"]["partitions"][0]["leader"] == 1,
                     30, what="a leader")
            disk.fill()
            p = Producer({"bootstrap.servers": bootstrap(cluster), "acks": "1", "message.timeout.ms": 5000})
            for i in range(50):
                p.produce("alone", b"x" * 4096 + str(i).encode())
            p.flush(10)
            _, b = cluster.broker(1)
            wait_for(lambda: not cluster.broker_running(b), 30, what="the broker exiting")
            text = Path(b.log_path).read_text()
            assert "because all log dirs in" in text
            assert "have failed" in text
    finally:
        disk.unmount()


def test_a_broker_starts_with_an_unusable_log_dir_offline(zk_connect, zk_store, make_cluster, tmp_path):
    """As Kafka: a dir that fails at start-up is offline from the start; the others serve."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a log dir should be")
    store = zk_store
    good = tmp_path / "good"
    cluster = make_cluster(1, per_broker={1: {"log.dirs": f"{blocker}/data,{good}"}})
    create_topic(store, "survivor", 2, 1)
    bs = bootstrap(cluster)
    wait_for(lambda: all(p["leader"] == 1 for p in
                         cluster_status(zk_connect, store=store)["topics"]["survivor"]["partitions"]),
             30, what="leaders")
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    acked: list[int] = []
    for i in range(20):
        p.produce("survivor", str(i).encode(), partition=i % 2,
                  on_delivery=lambda err, _m: acked.append(0 if err is None else 1))
    p.flush(30)
    assert acked.count(0) == 20
    (b,) = describe_log_dirs(bs, [1])
    errors = {d.path: d.error for d in b.dirs}
    assert errors == {f"{blocker}/data": "KAFKA_STORAGE_ERROR", str(good): None}
    assert {p.partition for d in b.dirs for p in d.partitions} == {"survivor-0", "survivor-1"}
    meta = (good / "meta.properties").read_text()  # Kafka's record of whose data this is
    assert "broker.id=1" in meta
    assert f"cluster.id={store.get_or_create_cluster_id()}" in meta

