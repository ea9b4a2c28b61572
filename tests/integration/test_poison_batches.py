"""Poison-pill batches (issue 15 §2) sent to a real RF 3 partition from a plain socket:
each is refused with Kafka's error before the append, so no replica stores it and real
consumers (kafka-python, confluent-kafka) read every acknowledged record past the attempt.
Before the leader walked records, these were accepted, copied by followers, and left
kafka-python raising CorruptRecordError and confluent-kafka looping at their offset."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition
from kafka.protocol.producer import ProduceRequest

from praha.encoding.compression import compress
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.testing.batches import forge_batch, record
from praha.testing.cluster import bootstrap

pytestmark = pytest.mark.integration

GOOD = b"".join(record(b"k%d" % i, b"good-%d" % i, i) for i in range(3))
POISON = {
    "count says 1000, holds 1": (forge_batch(record(b"k", b"v", 0), record_count=1000), ErrorCode.INVALID_RECORD),
    "count says 1, holds 3": (forge_batch(GOOD, record_count=1), ErrorCode.INVALID_RECORD),
    "gzip that is not gzip": (forge_batch(b"\x1f\x8b not really gzip", record_count=1, attributes=1),
                              ErrorCode.CORRUPT_MESSAGE),
    "record body corrupted": (forge_batch(b"\x02" + GOOD[1:], record_count=3), ErrorCode.INVALID_RECORD),
    "lz4 of a lying count": (forge_batch(compress(3, GOOD), record_count=5), ErrorCode.INVALID_RECORD),
}


def produce_raw(port: int, topic: str, batch: bytes, version: int = 9):
    with BrokerConnection("127.0.0.1", port, timeout=10) as conn:
        resp = conn.send(ProduceRequest(transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])]), version)
    return resp.responses[0].partition_responses[0]


def test_poison_batches_are_refused_and_consumers_read_past_the_attempt(make_cluster):
    cluster = make_cluster(3)
    brokers = cluster.load().brokers
    bs = bootstrap(cluster)
    admin = AdminClient({"bootstrap.servers": bs})
    futures = admin.create_topics([NewTopic("victim", 1, 3), NewTopic("table", 1, 3,
                                                                      config={"cleanup.policy": "compact"})])
    for f in futures.values():
        f.result(30)
    leader = {t: admin.list_topics(t, timeout=10).topics[t].partitions[0].leader for t in ("victim", "table")}

    producer = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(5):
        producer.produce("victim", key=b"before", value=b"before-%d" % i)
    assert producer.flush(30) == 0

    for name, (batch, code) in POISON.items():
        got = produce_raw(brokers[leader["victim"]].port, "victim", batch)
        assert got.error_code == code, (name, got)
        assert got.error_message, name  # Produce v8+ says why
    keyless = forge_batch(record(b"a", b"1", 0) + record(None, b"2", 1), record_count=2)
    got = produce_raw(brokers[leader["table"]].port, "table", keyless)
    assert (got.error_code, [(e.batch_index, e.batch_index_error_message) for e in got.record_errors]) == (
        ErrorCode.INVALID_RECORD, [(1, "Compacted topic cannot accept message without key")])

    for i in range(5):
        producer.produce("victim", key=b"after", value=b"after-%d" % i)
    assert producer.flush(30) == 0
    expected = [b"before-%d" % i for i in range(5)] + [b"after-%d" % i for i in range(5)]

    # every replica holds exactly the acknowledged records: the leader appended no poison
    c = Consumer({"bootstrap.servers": bs, "group.id": "poison-check", "enable.auto.commit": False})
    try:
        lo, hi = c.get_watermark_offsets(CTopicPartition("victim", 0), timeout=10)
        assert (lo, hi) == (0, 10)
        c.assign([CTopicPartition("victim", 0, 0)])
        got_values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got_values) < 10 and time.monotonic() < deadline:
            for m in c.consume(100, 1.0):
                assert m.error() is None, m.error()
                got_values.append(m.value())
        assert got_values == expected
    finally:
        c.close()

    kp = KafkaConsumer(bootstrap_servers=bs, enable_auto_commit=False, consumer_timeout_ms=10000)
    try:
        kp.assign([KTopicPartition("victim", 0)])
        kp.seek_to_beginning()
        assert [m.value for _, m in zip(range(10), kp)] == expected
    finally:
        kp.close()
