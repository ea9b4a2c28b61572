"""Catalogue: damaged log files on a broker that restarts.

One broker, single-replica topics (so nothing can be repaired from another replica: the
log itself must cope), small segments. Each case writes records, stops the broker
(SIGKILL = crash, or SIGTERM = clean), damages files, starts it again and reads the
partition back with a real client. Expected, as Kafka: a torn or corrupt tail is
truncated to the last valid batch, indexes and the leader-epoch checkpoint are rebuilt,
unreadable checkpoints cost only a full recovery — and every record served is exactly
the one written at that offset; writes continue right after the last valid record.
"""
from __future__ import annotations

import os
import random

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTP
from kafka.protocol.consumer import OffsetForLeaderEpochRequest as OFLE
from misuse_env import create_and_wait

from praha.protocol.client import BrokerConnection
from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration

N = 60
CONFIG = {"log.segment.bytes": "1024", "log.index.interval.bytes": "64"}


class Node:
    def __init__(self, cluster, store, connect):
        self.cluster, self.store, self.connect = cluster, store, connect

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.cluster.load().brokers[1].port}"

    def data_dir(self, topic: str):
        from pathlib import Path

        return Path(self.cluster.load().brokers[1].dir) / "data" / f"{topic}-0"

    def topic(self, name: str) -> list[str]:
        create_and_wait(self.store, self.connect, name, {0: (1,)})
        values = [f"{name}-{i}" for i in range(N)]
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 0, "log_level": 0})
        for v in values:  # one batch per record: tears land between known records
            p.produce(name, value=v.encode(), partition=0)
            p.flush(10)
        assert p.flush(10) == 0
        del p
        return values

    def read(self, topic: str, start: int = 0) -> dict[int, str]:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "badinput-logs", "enable.auto.commit": False,
                      "log_level": 0})
        try:
            _, high = c.get_watermark_offsets(CTP(topic, 0), timeout=10)
            c.assign([CTP(topic, 0, start)])
            got: dict[int, str] = {}
            for _ in range(60):
                for m in c.consume(500, 0.3):
                    if not m.error():
                        got[m.offset()] = m.value().decode()
                if not got and high <= start or got and max(got) + 1 >= high:
                    break
            return got
        finally:
            c.close()

    def append_one(self, topic: str, value: str) -> int:
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "log_level": 0})
        offsets: list[int] = []
        p.produce(topic, value=value.encode(), partition=0, on_delivery=lambda e, m: offsets.append(m.offset()))
        assert p.flush(30) == 0
        assert offsets
        del p
        return offsets[0]

    def restart(self, crash: bool) -> None:
        if crash:
            self.cluster.kill_broker(1)
        else:
            self.cluster.stop_broker(1)

    def start(self, topic: str) -> None:
        self.cluster.start_broker(1, wait=True)
        wait_for(lambda: self.read(topic, 0) is not None and self._leads(topic), 30, what=f"{topic} served again")

    def _leads(self, topic: str) -> bool:
        from praha.admin.client_status import fetch_metadata

        md = fetch_metadata(self.bootstrap, topics=[topic], timeout=5)
        return md.topics[0].partitions[0].leader_id == 1


@pytest.fixture(scope="module")
def node(module_cluster):
    c = module_cluster(1, CONFIG)
    return Node(c.cluster, c.store, c.zookeeper)


def segments(node: Node, topic: str, suffix: str = ".log"):
    return sorted(node.data_dir(topic).glob(f"*{suffix}"))


def assert_prefix(served: dict[int, str], values: list[str], at_least: int) -> int:
    """Served records are exactly the written ones, offsets 0..k-1, k >= at_least; returns k."""
    k = len(served)
    assert sorted(served) == list(range(k)), "holes in the served offsets"
    assert [served[i] for i in range(k)] == values[:k], "a record served is not the one written there"
    assert k >= at_least
    return k


def test_torn_tail_after_a_crash_is_truncated_to_the_last_whole_batch(node):
    values = node.topic("torn")
    node.restart(crash=True)
    last = segments(node, "torn")[-1]
    os.truncate(last, last.stat().st_size - 7)
    node.start("torn")
    k = assert_prefix(node.read("torn"), values, N - 1)
    assert k == N - 1
    assert node.append_one("torn", "after") == N - 1


def test_junk_after_the_last_batch_is_dropped(node):
    values = node.topic("junk")
    node.restart(crash=True)
    with open(segments(node, "junk")[-1], "ab") as f:
        f.write(random.Random(1).randbytes(300))
    node.start("junk")
    assert assert_prefix(node.read("junk"), values, N) == N
    assert node.append_one("junk", "after") == N


def test_a_corrupt_batch_in_the_tail_cuts_the_log_there(node):
    values = node.topic("flipped")
    node.restart(crash=True)
    last = segments(node, "flipped")[-1]
    data = bytearray(last.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside some batch of the last segment: its CRC no longer matches
    last.write_bytes(bytes(data))
    node.start("flipped")
    k = assert_prefix(node.read("flipped"), values, 1)
    assert k < N
    assert node.append_one("flipped", "after") == k


@pytest.mark.parametrize("crash", [True, False], ids=["crash", "clean"])
@pytest.mark.parametrize("damage", ["garbage", "deleted", "empty"])
def test_indexes_are_rebuilt(node, crash, damage):
    topic = f"index-{damage}-{'crash' if crash else 'clean'}"
    values = node.topic(topic)
    node.restart(crash=crash)
    rng = random.Random(7)
    for idx in segments(node, topic, ".index") + segments(node, topic, ".timeindex"):
        if damage == "garbage":
            idx.write_bytes(rng.randbytes(max(idx.stat().st_size, 24)))
        elif damage == "deleted":
            idx.unlink()
        else:
            idx.write_bytes(b"")
    node.start(topic)
    assert assert_prefix(node.read(topic), values, N) == N
    middle = node.read(topic, start=N // 2)  # a lookup through the rebuilt index
    assert min(middle) == N // 2
    assert middle[N // 2] == values[N // 2]


@pytest.mark.parametrize("damage", ["missing", "garbage"])
def test_leader_epoch_checkpoint_is_rebuilt(node, damage):
    topic = f"epochs-{damage}"
    values = node.topic(topic)
    node.restart(crash=False)
    path = node.data_dir(topic) / "leader-epoch-checkpoint"
    if damage == "missing":
        path.unlink()
    else:
        path.write_text("0\n3\nbanana\n")
    node.start(topic)
    assert assert_prefix(node.read(topic), values, N) == N
    with BrokerConnection("127.0.0.1", int(node.bootstrap.rsplit(":", 1)[1]), timeout=5) as c:
        r = c.send(OFLE(replica_id=-1, topics=[OFLE.OffsetForLeaderTopic(topic=topic, partitions=[
            OFLE.OffsetForLeaderTopic.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1,
                                                               leader_epoch=0)])]), 3)
    p = r.topics[0].partitions[0]
    assert (p.error_code, p.leader_epoch, p.end_offset) == (0, 0, N)


@pytest.mark.parametrize("name", ["replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                                  "log-start-offset-checkpoint"])
def test_unreadable_broker_checkpoints_cost_only_a_recovery(node, name):
    topic = f"ckpt-{name.split('-')[0]}"
    values = node.topic(topic)
    node.restart(crash=False)
    (node.data_dir(topic).parent / name).write_text("0\nthree\n\x00\x01")
    node.start(topic)
    assert assert_prefix(node.read(topic), values, N) == N
    assert node.append_one(topic, "after") == N
