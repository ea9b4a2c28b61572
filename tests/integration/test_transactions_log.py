"""Transactions on the partition leader and its followers, against a real cluster: the
test plays the transaction coordinator itself (transactional batches through Produce,
markers through WriteTxnMarkers over the wire) and unmodified clients read.

- confluent-kafka with `isolation.level=read_committed` sees non-transactional and
  committed records only, in order, never an aborted one, and stops at the last stable
  offset while a transaction is open; `read_uncommitted` sees everything; kafka-python's
  `isolation_level='read_committed'` agrees. ListOffsets read_committed answers the LSO.
- Followers write the same aborted-transaction index; the leader SIGKILLed and restarted
  rebuilds it (recovery), and a read_committed reader of the new leader sees the same.
- WriteTxnMarkers' errors are Kafka's and change nothing: a stale coordinator epoch, a
  partition not led here, an unknown topic.
- Transactional records in a Produce without a transactional id: the whole request is
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers.
- KIP-890: with `transaction.partition.verification.enable` (broker 1) and no transaction
  coordinator for the id, a transactional produce that would open a transaction is
  refused with Kafka's retriable NOT_ENOUGH_REPLICAS and nothing is appended; with it off
  (brokers 2 and 3) the same produce is accepted.
One cluster for the module; each test uses its own topic and producer ids.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTP
from kafka import KafkaConsumer
from kafka import TopicPartition as KTP
from kafka.protocol.consumer import ListOffsetsRequest
from kafka.protocol.producer import ProduceRequest
from kafka.protocol.producer.transaction import WriteTxnMarkersRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.common import ReplicaAssignment, TopicAssignment
from praha.common import TopicPartition as TP
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.testing.cluster import bootstrap, wait_for

pytestmark = pytest.mark.integration

OVERRIDES = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.backoff.ms": "200",
    "transaction.partition.verification.enable": "false",
    "offsets.topic.num.partitions": "3",
}
VERIFYING_BROKER = 1
_M = WriteTxnMarkersRequest.WritableTxnMarker
_MT = _M.WritableTxnMarkerTopic


@pytest.fixture(scope="module")
def env(module_cluster):
    c = module_cluster(3, OVERRIDES, {VERIFYING_BROKER: {"transaction.partition.verification.enable": "true"}})
    return c.cluster, c.store


# ------------------------------------------------------------------------------ helpers
def create(env, topic: str, replicas: tuple[int, ...]) -> int:
    """Create a one-partition topic; wait until its full ISR is in place and the leader
    serves it (not only ZooKeeper's state: its LeaderAndIsr may still be on the way); its leader."""
    cluster, store = env
    store.create_topic(topic, TopicAssignment({0: ReplicaAssignment(replicas)}), {})
    tp = TP(topic, 0)
    state = wait_for(lambda: (s := store.get_partition_states([tp])[0].get(tp)) and s.leader_and_isr.leader >= 0
                     and len(s.leader_and_isr.isr) == len(replicas) and s, 30, what=f"{topic} led")
    leader = state.leader_and_isr.leader
    with conn_to(cluster, leader) as conn:
        wait_for(lambda: list_offset(conn, topic, 0) >= 0, 30, what=f"{topic} served by broker {leader}")
    return leader


def leader_of(store, topic: str) -> int:
    tp = TP(topic, 0)
    return store.get_partition_states([tp])[0][tp].leader_and_isr.leader


def conn_to(cluster, broker_id: int) -> BrokerConnection:
    return BrokerConnection("127.0.0.1", cluster.load().brokers[broker_id].port, timeout=15)


def batch(values: list[bytes], pid: int = -1, epoch: int = -1, seq: int = -1, transactional: bool = False) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=int(transactional), producer_id=pid,
                                  producer_epoch=epoch, base_sequence=seq, batch_size=1 << 20)
    for i, v in enumerate(values):
        b.append(i, timestamp=1000 + i, key=None, value=v, headers=[])
    return bytes(b.build())


def produce(conn: BrokerConnection, topic: str, records: bytes, transactional_id: str | None = None) -> tuple[int, int]:
    resp = conn.send(ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)])]), 9)
    p = resp.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def write_marker(conn: BrokerConnection, topics: dict[str, list[int]], pid: int, commit: bool,
                 coordinator_epoch: int = 0, epoch: int = 0) -> dict[tuple[str, int], int]:
    resp = conn.send(WriteTxnMarkersRequest(markers=[_M(
        producer_id=pid, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator_epoch,
        topics=[_MT(name=t, partition_indexes=ps) for t, ps in topics.items()])]), 1)
    (m,) = resp.markers
    assert m.producer_id == pid
    return {(t.name, p.partition_index): p.error_code for t in m.topics for p in t.partitions}


def list_offset(conn: BrokerConnection, topic: str, isolation_level: int) -> int:
    L = ListOffsetsRequest
    resp = conn.send(L(replica_id=-1, isolation_level=isolation_level, topics=[L.ListOffsetsTopic(
        name=topic, partitions=[L.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=-1)])]), 5)
    p = resp.topics[0].partitions[0]
    assert p.error_code == 0
    return p.offset


def confluent_read(bs: str, topic: str, isolation: str, expect: int, idle_polls: int = 6) -> list[bytes]:
    """Everything a fresh confluent-kafka consumer reads from offset 0: at least `expect`
    values, then a few more polls to show nothing else arrives."""
    c = Consumer({"bootstrap.servers": bs, "group.id": f"txn-{topic}", "enable.auto.commit": False,
                  "isolation.level": isolation, "log_level": 3})
    out: list[bytes] = []
    try:
        c.assign([CTP(topic, 0, 0)])
        idle = 0
        for _ in range(300):
            msgs = c.consume(100, timeout=0.3)
            out.extend(m.value() for m in msgs if m.error() is None)
            if len(out) >= expect:
                idle = idle + 1 if not msgs else 0
                if idle >= idle_polls:
                    break
        return out
    finally:
        c.close()


def kafka_python_read(bs: str, topic: str, expect: int) -> list[bytes]:
    c = KafkaConsumer(bootstrap_servers=bs, isolation_level="read_committed", enable_auto_commit=False,
                      consumer_timeout_ms=3000)
    try:
        tp = KTP(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        out: list[bytes] = []
        deadline = time.monotonic() + 90  # a loaded machine may take long to bootstrap
        while len(out) < expect and time.monotonic() < deadline:
            out.extend(r.value for r in c)
        return out
    finally:
        c.close()


def txn_indexes(cluster, broker_id: int, topic: str) -> dict[str, bytes]:
    d = Path(cluster.load().brokers[broker_id].dir) / "data" / f"{topic}-0"
    return {f.name: f.read_bytes() for f in sorted(d.glob("*.txnindex"))}


# ------------------------------------------------------------------------------ tests
def test_read_committed_clients_see_committed_records_only(env):
    cluster, store = env
    topic = "txn-read"
    leader = create(env, topic, (2, 3, 1))
    assert leader != VERIFYING_BROKER
    bs = bootstrap(cluster)
    with conn_to(cluster, leader) as conn:
        assert produce(conn, topic, batch([b"p0", b"p1"]))[0] == 0                                     # 0-1
        assert produce(conn, topic, batch([b"a0", b"a1"], 1000, 0, 0, True), "tx-a")[0] == 0          # 2-3
        assert produce(conn, topic, batch([b"b0", b"b1"], 1001, 0, 0, True), "tx-b")[0] == 0          # 4-5
        assert produce(conn, topic, batch([b"a2"], 1000, 0, 2, True), "tx-a")[0] == 0                 # 6
        assert write_marker(conn, {topic: [0]}, 1000, commit=False) == {(topic, 0): 0}                 # 7
        assert write_marker(conn, {topic: [0]}, 1001, commit=True) == {(topic, 0): 0}                  # 8
        assert produce(conn, topic, batch([b"p2"]))[0] == 0                                            # 9
        assert produce(conn, topic, batch([b"c0"], 1002, 0, 0, True), "tx-c")[0] == 0                 # 10
        assert produce(conn, topic, batch([b"p3"]))[0] == 0                                            # 11
        # the high watermark is 12; the last stable offset stops at c's open transaction
        assert list_offset(conn, topic, 0) == 12
        assert list_offset(conn, topic, 1) == 10

        committed = [b"p0", b"p1", b"b0", b"b1", b"p2"]
        everything = [b"p0", b"p1", b"a0", b"a1", b"b0", b"b1", b"a2", b"p2", b"c0", b"p3"]
        assert confluent_read(bs, topic, "read_committed", len(committed)) == committed
        assert confluent_read(bs, topic, "read_uncommitted", len(everything)) == everything
        assert kafka_python_read(bs, topic, len(committed)) == committed

        assert write_marker(conn, {topic: [0]}, 1002, commit=True) == {(topic, 0): 0}                  # 12
        assert list_offset(conn, topic, 1) == 13
    final = committed + [b"c0", b"p3"]
    assert confluent_read(bs, topic, "read_committed", len(final)) == final
    assert kafka_python_read(bs, topic, len(final)) == final

    # every replica wrote the same aborted-transaction index (one entry, 34 bytes)
    wait_for(lambda: all(txn_indexes(cluster, b, topic) == txn_indexes(cluster, leader, topic) for b in (1, 2, 3)),
             60, what="followers' aborted-transaction indexes")
    (index,) = txn_indexes(cluster, leader, topic).values()
    assert len(index) == 34

    # the leader crashes: the new leader serves the same; the old one recovers its index
    pid_killed = cluster.kill_broker(leader)
    assert pid_killed > 0
    wait_for(lambda: leader_of(store, topic) not in (-1, leader), 30, what="a new leader")
    assert confluent_read(bs, topic, "read_committed", len(final)) == final
    os.unlink(next(iter((Path(cluster.load().brokers[leader].dir) / "data" / f"{topic}-0").glob("*.txnindex"))))
    cluster.start_broker(leader)
    wait_for(lambda: txn_indexes(cluster, leader, topic) == {"00000000000000000000.txnindex": index}, 60,
             what="the restarted broker's rebuilt index")


def test_write_txn_markers_errors_change_nothing(env):
    cluster, store = env
    topic = "txn-markers"
    leader = create(env, topic, (3, 1, 2))
    follower = next(b for b in (1, 2, 3) if b != leader)
    with conn_to(cluster, leader) as conn:
        assert produce(conn, topic, batch([b"x"], 2000, 0, 0, True), "tx-x")[0] == 0
        assert write_marker(conn, {topic: [0]}, 2000, commit=False, coordinator_epoch=5) == {(topic, 0): 0}
        assert produce(conn, topic, batch([b"y"], 2000, 0, 1, True), "tx-x")[0] == 0
        end = list_offset(conn, topic, 0)
        assert write_marker(conn, {topic: [0]}, 2000, commit=True, coordinator_epoch=4) == {
            (topic, 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED}
        assert write_marker(conn, {"no-such-topic": [0], topic: [7]}, 2000, commit=True, coordinator_epoch=5) == {
            ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            (topic, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert list_offset(conn, topic, 0) == end
        assert list_offset(conn, topic, 1) == end - 1  # y's transaction is still open
    with conn_to(cluster, follower) as conn:
        assert write_marker(conn, {topic: [0]}, 2000, commit=True, coordinator_epoch=5) == {
            (topic, 0): ErrorCode.NOT_LEADER_OR_FOLLOWER}


def test_kip890_refuses_an_unverified_transactional_produce(env):
    cluster, store = env
    verified, unverified = "txn-verify-on", "txn-verify-off"
    assert create(env, verified, (VERIFYING_BROKER, 2, 3)) == VERIFYING_BROKER
    off_leader = create(env, unverified, (2, 3, VERIFYING_BROKER))
    records = batch([b"late"], 3000, 0, 0, True)
    with conn_to(cluster, VERIFYING_BROKER) as conn:
        # no __transaction_state, so no coordinator to confirm the partition is in the transaction
        assert produce(conn, verified, records, "tx-v") == (ErrorCode.NOT_ENOUGH_REPLICAS, -1)
        assert list_offset(conn, verified, 0) == 0  # nothing appended
        assert produce(conn, verified, batch([b"plain"]))[0] == 0  # non-transactional: not asked
        # transactional records without a transactional id: Kafka refuses the whole request
        assert produce(conn, verified, records) == (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)
    with conn_to(cluster, off_leader) as conn:
        assert produce(conn, unverified, records, "tx-v") == (0, 0)


def test_an_open_transaction_survives_a_restart(env):
    """The producer snapshot carries the open transaction: after a clean restart the last
    stable offset still stops at it, and the COMMIT marker then releases it."""
    cluster, store = env
    topic = "txn-restart"
    assert create(env, topic, (3,)) == 3
    with conn_to(cluster, 3) as conn:
        assert produce(conn, topic, batch([b"before"]))[0] == 0                              # 0
        assert produce(conn, topic, batch([b"t0"], 4000, 0, 0, True), "tx-r")[0] == 0       # 1
        assert produce(conn, topic, batch([b"after"]))[0] == 0                               # 2
        assert list_offset(conn, topic, 1) == 1
    assert cluster.stop_broker(3)
    cluster.start_broker(3)
    wait_for(lambda: leader_of(store, topic) == 3, 30, what="broker 3 leading again")
    with conn_to(cluster, 3) as conn:
        wait_for(lambda: list_offset(conn, topic, 0) == 3, 30, what="the high watermark back")
        assert list_offset(conn, topic, 1) == 1
        assert write_marker(conn, {topic: [0]}, 4000, commit=True) == {(topic, 0): 0}
        assert list_offset(conn, topic, 1) == 4
    assert confluent_read(bootstrap(cluster), topic, "read_committed", 3) == [b"before", b"t0", b"after"]
