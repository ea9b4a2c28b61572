"""Kafka clients against a real 3-broker praha cluster: kafka-python and confluent-kafka
produce (acks=all) and consume (assign), offsets lookups, bad input answered with the
right error code, and the console tools. One cluster for the module (each test uses
its own topics); every process is stopped by PID at the end."""
from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient, OffsetSpec
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTP
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.admin.status import cluster_status
from praha.common import ReplicaAssignment, TopicAssignment
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.testing.cluster import bootstrap, scrape_metrics, wait_for

pytestmark = pytest.mark.integration

OVERRIDES = {
    "replica.lag.time.max.ms": "3000",
    "isr.change.notification.interval.ms": "300",
    "replica.fetch.backoff.ms": "200",
}


@pytest.fixture(scope="module")
def env(module_cluster):
    c = module_cluster(3, OVERRIDES)
    return c.cluster, c.store, c.zookeeper


def create_topic(env, name: str, assignment: dict[int, tuple[int, ...]], config: dict[str, str] | None = None) -> None:
    """Write the assignment znode; wait for leaders in ZooKeeper and in every broker's metadata."""
    cluster, store, connect = env
    store.create_topic(name, TopicAssignment({p: ReplicaAssignment(r) for p, r in assignment.items()}), config or {})

    def leaders():
        parts = cluster_status(connect, store=store)["topics"].get(name, {}).get("partitions", [])
        return len(parts) == len(assignment) and all(p["leader"] >= 0 for p in parts)

    wait_for(leaders, 30, what=f"leaders of {name}")
    for b in cluster.load().brokers.values():
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{b.port}"})
        wait_for(
            lambda admin=admin: (
                all(p.leader >= 0 for p in admin.list_topics(name, timeout=5).topics[name].partitions.values())
                and len(admin.list_topics(name, timeout=5).topics[name].partitions) == len(assignment)
            ),
            20,
            what=f"broker {b.id} to know {name}",
        )


def leader_of(env, topic: str, partition: int) -> int:
    _, store, connect = env
    return cluster_status(connect, store=store)["topics"][topic]["partitions"][partition]["leader"]


def consume_confluent(bs: str, topic: str, partitions: list[int], expect: int, timeout: float = 30) -> list:
    c = Consumer({"bootstrap.servers": bs, "group.id": "test", "enable.auto.commit": False})
    try:
        c.assign([CTP(topic, p, OFFSET_BEGINNING) for p in partitions])
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < expect and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append(m)
        return out
    finally:
        c.close()


def batch(values: list[bytes], ts: int = 1_700_000_000_000) -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
    for i, v in enumerate(values):
        b.append(i, timestamp=ts + i, key=None, value=v, headers=[])
    return bytes(b.build())


def produce_request(topic: str, partition: int, records: bytes | None, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=acks, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=records)])])


def produce_code(conn: BrokerConnection, topic: str, partition: int, records: bytes | None,
                 acks: int = -1) -> tuple[int, int]:
    resp = conn.send(produce_request(topic, partition, records, acks), 9)
    p = resp.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def fetch(conn: BrokerConnection, topic: str, partition: int, offset: int, max_wait_ms: int = 0):
    req = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                       session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                           FetchRequest.FetchTopic.FetchPartition(partition=partition, current_leader_epoch=-1,
                                                                  fetch_offset=offset, last_fetched_epoch=-1,
                                                                  log_start_offset=-1, partition_max_bytes=1 << 20)])],
                       forgotten_topics_data=[], rack_id="")
    return conn.send(req, 12).responses[0].partitions[0]


def broker_conn(env, broker_id: int) -> BrokerConnection:
    cluster = env[0]
    c = BrokerConnection("127.0.0.1", cluster.load().brokers[broker_id].port, timeout=15)
    c.connect()
    return c


# --------------------------------------------------------------------------------- tests
def test_kafka_python_and_confluent_round_trip_keys_values_headers_timestamps(env):
    cluster = env[0]
    topic = "roundtrip"
    create_topic(env, topic, {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2), 3: (1, 3, 2)}, {"min.insync.replicas": "2"})
    bs = bootstrap(cluster)
    base_ts = 1_700_000_000_000
    sent = []  # (partition, key, value, headers, ts)
    errors = []
    cp = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 2})
    for i in range(200):
        rec = (i % 4, b"ck%d" % i, b"confluent-%d" % i, [("src", b"confluent"), ("i", str(i).encode())], base_ts + i)
        sent.append(rec)
        cp.produce(topic, key=rec[1], value=rec[2], headers=rec[3], timestamp=rec[4], partition=rec[0],
                   on_delivery=lambda err, m: errors.append(err) if err else None)
    assert cp.flush(30) == 0
    assert not errors
    kp = KafkaProducer(bootstrap_servers=bs, acks="all", enable_idempotence=False, linger_ms=2)
    futures = []
    for i in range(200):
        rec = (i % 4, b"kk%d" % i, b"kafka-python-%d" % i, [("src", b"kafka-python")], base_ts + 1000 + i)
        sent.append(rec)
        futures.append(kp.send(topic, key=rec[1], value=rec[2], headers=rec[3], timestamp_ms=rec[4], partition=rec[0]))
    kp.flush(30)
    metas = [f.get(timeout=30) for f in futures]
    kp.close()
    assert all(m.offset >= 0 for m in metas)

    def key_of(r):
        return (r[0], r[1], r[2], tuple((k, bytes(v)) for k, v in r[3]), r[4])

    want = sorted(key_of(r) for r in sent)
    got_c = consume_confluent(bs, topic, [0, 1, 2, 3], len(sent))
    assert sorted(key_of((m.partition(), m.key(), m.value(), m.headers() or [],
                          m.timestamp()[1])) for m in got_c) == want
    # offsets are dense and in order per partition
    for p in range(4):
        offs = [m.offset() for m in got_c if m.partition() == p]
        assert offs == list(range(100))

    kc = KafkaConsumer(bootstrap_servers=bs, enable_auto_commit=False, group_id=None, consumer_timeout_ms=10000)
    try:
        tps = [KTP(topic, p) for p in range(4)]
        kc.assign(tps)
        kc.seek_to_beginning(*tps)
        got_k = []
        deadline = time.monotonic() + 30
        while len(got_k) < len(sent) and time.monotonic() < deadline:
            for recs in kc.poll(timeout_ms=1000).values():
                got_k.extend(recs)
        assert sorted(key_of((r.partition, r.key, r.value, r.headers, r.timestamp)) for r in got_k) == want
        # ListOffsets: earliest, latest (high watermark), by timestamp
        assert kc.beginning_offsets(tps) == {tp: 0 for tp in tps}
        assert kc.end_offsets(tps) == {tp: 100 for tp in tps}
        found = kc.offsets_for_times({KTP(topic, 0): base_ts + 1000})
        assert found[KTP(topic, 0)].offset == 50
        assert found[KTP(topic, 0)].timestamp == base_ts + 1000
        assert kc.offsets_for_times({KTP(topic, 0): base_ts + 10_000})[KTP(topic, 0)] is None
    finally:
        kc.close()

    c = Consumer({"bootstrap.servers": bs, "group.id": "x", "enable.auto.commit": False})
    try:
        assert c.get_watermark_offsets(CTP(topic, 1), timeout=10) == (0, 100)
        (res,) = c.offsets_for_times([CTP(topic, 1, base_ts + 1001)], timeout=10)
        assert res.offset == 50
    finally:
        c.close()
    # ListOffsets from the AdminClient: max timestamp (KIP-734) is the record with the largest
    # timestamp, exactly (Kafka 3.8's answer, KAFKA-16310), and a timestamp lookup the first >= it
    admin = AdminClient({"bootstrap.servers": bs})
    newest = max((m for m in got_c if m.partition() == 2), key=lambda m: (m.timestamp()[1], -m.offset()))
    listed = admin.list_offsets({CTP(topic, 2): OffsetSpec.max_timestamp(),
                                 CTP(topic, 3): OffsetSpec.for_timestamp(base_ts + 1003)})
    at_max = listed[CTP(topic, 2)].result(10)
    assert (at_max.offset, at_max.timestamp) == (newest.offset(), newest.timestamp()[1])
    assert listed[CTP(topic, 3)].result(10).offset == 50
    # DescribeCluster (AdminClient) names the three brokers and the controller
    desc = admin.describe_cluster().result(timeout=10)
    assert sorted(n.id for n in desc.nodes) == [1, 2, 3]
    assert desc.controller is not None
    assert desc.controller.id in (1, 2, 3)
    m = scrape_metrics(cluster.load().brokers[1].metrics_port)
    assert m["praha_broker_messages_in"] > 0
    assert m["praha_broker_under_replicated_partitions"] == 0


def test_bad_input_gets_kafka_error_codes_and_nothing_is_lost(env):
    cluster = env[0]
    topic = "badinput"
    create_topic(env, topic, {0: (1, 2, 3)}, {"min.insync.replicas": "2", "max.message.bytes": "4000"})
    leader = leader_of(env, topic, 0)
    follower = next(b for b in (1, 2, 3) if b != leader)
    conn = broker_conn(env, leader)
    try:
        assert produce_code(conn, topic, 0, batch([b"a", b"b"])) == (ErrorCode.NONE, 0)
        # malformed frames cost only their own connection
        port = cluster.load().brokers[leader].port
        for frame in (struct.pack(">i", 12) + b"\x00\x00garbage!!!", struct.pack(">i", -5), b"\xff" * 64):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(frame)
                s.settimeout(5)
                try:
                    assert s.recv(100) == b""  # closed without an answer
                except ConnectionResetError:
                    pass
        # unknown topic / partition
        assert produce_code(conn, "no-such-topic", 0, batch([b"x"]))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert produce_code(conn, topic, 7, batch([b"x"]))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # oversized batch (topic max.message.bytes 4000)
        assert produce_code(conn, topic, 0, batch([b"x" * 5000]))[0] == ErrorCode.MESSAGE_TOO_LARGE
        # bad CRC
        bad = bytearray(batch([b"hello", b"world"]))
        bad[-3] ^= 0xFF
        assert produce_code(conn, topic, 0, bytes(bad))[0] == ErrorCode.CORRUPT_MESSAGE
        # truncated batch
        assert produce_code(conn, topic, 0, batch([b"cut"])[:-4])[0] == ErrorCode.CORRUPT_MESSAGE
        # invalid acks
        assert produce_code(conn, topic, 0, batch([b"x"]), acks=2)[0] == ErrorCode.INVALID_REQUIRED_ACKS
        # fetch outside the log
        p = fetch(conn, topic, 0, 1000)
        assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert p.high_watermark == 2
        # a fetch waiting for data that never comes returns empty after max_wait
        t0 = time.monotonic()
        p = fetch(conn, topic, 0, 2, max_wait_ms=300)
        assert p.error_code == ErrorCode.NONE
        assert not p.records
        assert time.monotonic() - t0 >= 0.25
        # the same connection still works
        assert produce_code(conn, topic, 0, batch([b"c"])) == (ErrorCode.NONE, 2)
    finally:
        conn.close()
    # produce and consumer fetch sent to a follower
    fconn = broker_conn(env, follower)
    try:
        assert produce_code(fconn, topic, 0, batch([b"x"]))[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert fetch(fconn, topic, 0, 0).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                partition_index=0, current_leader_epoch=-1, timestamp=-1)])])
        assert fconn.send(req, 7).topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    finally:
        fconn.close()
    # nothing lost, the broker keeps serving
    got = consume_confluent(bootstrap(cluster), topic, [0], 3)
    assert [m.value() for m in got] == [b"a", b"b", b"c"]
    conn = broker_conn(env, leader)
    try:
        md = conn.send(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                       include_cluster_authorized_operations=False,
                                       include_topic_authorized_operations=False), 12)
        assert sorted(b.node_id for b in md.brokers) == [1, 2, 3]
    finally:
        conn.close()
    assert cluster.broker_running(cluster.load().brokers[leader])
    m = scrape_metrics(cluster.load().brokers[leader].metrics_port)
    assert m["praha_broker_bad_requests"] >= 3


def test_acks_all_with_too_small_isr_is_refused_before_append(env):
    cluster = env[0]
    topic = "minisr"
    # RF 2 with min.insync.replicas 3: acks=all can never be satisfied; acks=1 can
    create_topic(env, topic, {0: (2, 3)}, {"min.insync.replicas": "3"})
    conn = broker_conn(env, leader_of(env, topic, 0))
    try:
        assert produce_code(conn, topic, 0, batch([b"x"]))[0] == ErrorCode.NOT_ENOUGH_REPLICAS
        assert produce_code(conn, topic, 0, batch([b"y"]), acks=1) == (ErrorCode.NONE, 0)
    finally:
        conn.close()
    assert [m.value() for m in consume_confluent(bootstrap(cluster), topic, [0], 1)] == [b"y"]


def test_console_producer_and_consumer(env):
    cluster = env[0]
    topic = "console"
    create_topic(env, topic, {0: (1, 2, 3), 1: (2, 3, 1)}, {"min.insync.replicas": "2"})
    bs = cluster.load().brokers[1].port
    lines = [f"k{i}:value {i}" for i in range(50)]
    prod = subprocess.run(
        [sys.executable, "-m", "praha", "produce", "--topic", topic, "--bootstrap-server", f"127.0.0.1:{bs}",
         "--acks", "all", "--key-separator", ":"],
        input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
    assert prod.returncode == 0, prod.stderr
    assert "produced 50 of 50" in prod.stderr
    cons = subprocess.run(
        [sys.executable, "-m", "praha", "consume", "--topic", topic, "--dir", str(cluster.root), "--from-beginning",
         "--max-messages", "50", "--print-key", "--key-separator", ":", "--idle-timeout", "20"],
        capture_output=True, text=True, timeout=60)
    assert cons.returncode == 0, cons.stderr
    assert sorted(cons.stdout.splitlines()) == sorted(lines)
    one = subprocess.run(
        [sys.executable, "-m", "praha", "consume", "--topic", topic, "--bootstrap-server", f"127.0.0.1:{bs}",
         "--from-beginning", "--partition", "1", "--idle-timeout", "3"],
        capture_output=True, text=True, timeout=60)
    assert one.returncode == 0, one.stderr
    assert 0 < len(one.stdout.splitlines()) < 50
    bad = subprocess.run(
        [sys.executable, "-m", "praha", "consume", "--topic", "missing-topic", "--bootstrap-server", f"127.0.0.1:{bs}",
         "--timeout", "3"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert "missing-topic" in bad.stderr


def test_deleted_topic_stops_being_served_and_its_logs_go(env):
    cluster, store, connect = env
    topic = "doomed"
    create_topic(env, topic, {0: (1, 2, 3)})
    conn = broker_conn(env, leader_of(env, topic, 0))
    try:
        assert produce_code(conn, topic, 0, batch([b"x"]))[0] == ErrorCode.NONE
        store.mark_topic_for_deletion(topic)
        dirs = [Path(b.dir) / "data" / f"{topic}-0" for b in cluster.load().brokers.values()]
        wait_for(lambda: not any(d.exists() for d in dirs), 30, what="the logs of the deleted topic to go")
        wait_for(lambda: produce_code(conn, topic, 0, batch([b"y"]))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                 20, what="produce to the deleted topic to be refused")
        assert fetch(conn, topic, 0, 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        conn.close()


def test_compressed_batches_are_stored_and_served_as_they_are(env):
    cluster = env[0]
    topic = "compressed"
    codecs = ["gzip", "snappy", "lz4", "zstd"]
    create_topic(env, topic, {p: (1, 2, 3) for p in range(len(codecs))}, {"min.insync.replicas": "2"})
    bs = bootstrap(cluster)
    want = {}
    for p, codec in enumerate(codecs):
        prod = Producer({"bootstrap.servers": bs, "acks": "all", "compression.type": codec, "linger.ms": 20})
        values = [(b"%s-%d " % (codec.encode(), i)) * 20 for i in range(300)]
        for v in values:
            prod.produce(topic, value=v, partition=p)
        assert prod.flush(30) == 0
        want[p] = values
    got = consume_confluent(bs, topic, list(range(len(codecs))), sum(len(v) for v in want.values()))
    for p in want:
        assert [m.value() for m in got if m.partition() == p] == want[p]
        assert [m.offset() for m in got if m.partition() == p] == list(range(300))


def test_log_append_time_topics_carry_the_leaders_clock(env):
    """message.timestamp.type=LogAppendTime: the leader stamps each batch with its clock and
    the timestamp-type bit; producer (delivery report, from the Produce answer) and consumer
    see the broker's time, not the hour-old CreateTime the producer gave."""
    import confluent_kafka

    cluster, _, _ = env
    create_topic(env, "appended", {0: (1, 2, 3)}, {"message.timestamp.type": "LogAppendTime"})
    an_hour_ago = int(time.time() * 1000) - 3_600_000
    before = int(time.time() * 1000)
    delivered: list = []
    p = Producer({"bootstrap.servers": bootstrap(cluster), "acks": "all"})
    for i in range(3):
        p.produce("appended", value=b"v%d" % i, timestamp=an_hour_ago + i, on_delivery=lambda e, m: delivered.append(m))
    assert p.flush(30) == 0
    after = int(time.time() * 1000)
    assert [m.error() for m in delivered] == [None] * 3
    for m in delivered:
        kind, ts = m.timestamp()
        assert kind == confluent_kafka.TIMESTAMP_LOG_APPEND_TIME
        assert before <= ts <= after
    got = consume_confluent(bootstrap(cluster), "appended", [0], 3)
    assert [m.value() for m in got] == [b"v0", b"v1", b"v2"]
    for m in got:
        kind, ts = m.timestamp()
        assert kind == confluent_kafka.TIMESTAMP_LOG_APPEND_TIME
        assert before <= ts <= after


def test_keyless_records_for_a_compacted_topic_fail_with_their_index(env):
    """KIP-467 with librdkafka: a batch holding keyless records for a compacted topic is
    refused with INVALID_RECORD naming each bad record's index, and the client fails those
    records with the broker's reason; a keyed record sent on its own is written."""
    cluster, _, _ = env
    create_topic(env, "keyed", {0: (1, 2, 3)}, {"cleanup.policy": "compact"})
    reports: list = []
    p = Producer({"bootstrap.servers": bootstrap(cluster), "acks": "all", "linger.ms": 500,
                  "enable.idempotence": False, "retries": 0})
    for key in (b"a", None, b"b", None):
        p.produce("keyed", key=key, value=b"v", on_delivery=lambda e, m: reports.append((m.key(), e)))
    assert p.flush(30) == 0
    p.produce("keyed", key=b"alone", value=b"v", on_delivery=lambda e, m: reports.append((m.key(), e)))
    assert p.flush(30) == 0
    from confluent_kafka import KafkaError

    got = [(k, e.code() if e is not None else None) for k, e in reports]
    # each keyless record fails with the broker's INVALID_RECORD; the keyed ones of its batch
    # fail locally because of them (librdkafka's KIP-467 handling), as with Kafka
    assert got == [(b"a", KafkaError._INVALID_DIFFERENT_RECORD), (None, KafkaError.INVALID_RECORD),
                   (b"b", KafkaError._INVALID_DIFFERENT_RECORD), (None, KafkaError.INVALID_RECORD), (b"alone", None)]
    assert [m.key() for m in consume_confluent(bootstrap(cluster), "keyed", [0], 1)] == [b"alone"]


def test_topics_get_an_id_at_creation_and_a_new_one_when_created_again(env):
    """Topic ids (KIP-516, Kafka 2.8+): assigned at creation, kept in the topic znode
    (version 3), answered in Metadata v10+ (librdkafka's describe_topics) and CreateTopics
    v7; a topic deleted and created again under its name has a new id."""
    from confluent_kafka import KafkaError, KafkaException, TopicCollection
    from confluent_kafka.admin import NewTopic

    cluster, store, _ = env
    admin = AdminClient({"bootstrap.servers": bootstrap(cluster)})

    def topic_id() -> str:
        found = admin.describe_topics(TopicCollection(["reborn"]))["reborn"].result(15).topic_id
        return str(found).replace("+", "-").replace("/", "_")  # librdkafka prints plain base64, Kafka URL-safe

    def created() -> bool:
        try:  # until the deletion has removed the znodes, the name is taken (Kafka's answer too)
            admin.create_topics([NewTopic("reborn", 1, 3)])["reborn"].result(30)
            return True
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
            return False

    wait_for(created, 60, 0.5, what="reborn created")
    first = topic_id()
    assert first != "A" * 22
    assert store.get_topic_assignments(["reborn"])[0]["reborn"].topic_id == first
    admin.delete_topics(["reborn"])["reborn"].result(30)
    wait_for(lambda: "reborn" not in admin.list_topics(timeout=5).topics, 30, what="the deletion")
    wait_for(created, 60, 0.5, what="reborn created again")
    second = topic_id()
    assert second not in (first, "A" * 22)
    assert store.get_topic_assignments(["reborn"])[0]["reborn"].topic_id == second


def test_a_topic_written_without_an_id_gets_one_from_the_controller(env):
    """A topic znode written straight into ZooKeeper with no id (as an old tool writes it):
    the controller gives it one, as Kafka 2.8+'s does, and librdkafka's describe_topics
    answers that id, not the zero id."""
    from confluent_kafka import TopicCollection

    from praha.zk import znodes as zn
    from praha.zk.ops import CreateOp

    cluster, store, connect = env
    store.set_topic_config("idless", {})
    store.multi([CreateOp(zn.topic_path("idless"),  # the znode as an old tool writes it: no id
                          zn.encode_topic_assignment(TopicAssignment({0: ReplicaAssignment((1, 2, 3))})))])
    written = wait_for(lambda: store.get_topic_assignments(["idless"])[0]["idless"].topic_id, 30,
                       what="the controller's id in the znode")
    admin = AdminClient({"bootstrap.servers": bootstrap(cluster)})
    described = wait_for(lambda: admin.describe_topics(TopicCollection(["idless"]))["idless"].result(15).topic_id,
                         30, what="the brokers to know the topic")  # UNKNOWN_TOPIC_OR_PART until then
    assert str(described).replace("+", "-").replace("/", "_") == written != "A" * 22


def test_a_producer_keeps_delivering_across_a_delete_and_recreate_of_its_topic(env):
    """Issue 21: a confluent-kafka producer producing continuously while its topic is deleted
    and created again under the same name delivers everything produced after the re-create;
    what was in flight before is delivered or fails with an error, none is left hanging.
    librdkafka 2.16.1 ignores metadata whose leader epoch went backwards even when the topic id
    changed (its issue 4898), so the re-created topic's partitions start above the deleted
    one's last leader epoch (kept in ZooKeeper under /praha/retired_leader_epochs)."""
    import threading

    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    from praha.common import TopicPartition

    cluster, store, _ = env
    admin = AdminClient({"bootstrap.servers": bootstrap(cluster)})

    def topic_id() -> str | None:
        found = store.get_topic_assignments(["phoenix"])[0].get("phoenix")
        return found.topic_id if found is not None else None

    def created(old: str | None, replicas: list[int] | None = None) -> bool:
        """The topic exists under a new id (created here: the producer does not auto-create)."""
        try:
            new = NewTopic("phoenix", 1, 3) if replicas is None else NewTopic("phoenix", 1,
                                                                              replica_assignment=[replicas])
            admin.create_topics([new])["phoenix"].result(30)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        now = topic_id()
        return now is not None and now != old and \
            all(p.leader >= 0 for p in admin.list_topics("phoenix", timeout=5).topics["phoenix"].partitions.values())

    wait_for(lambda: created(None), 60, 0.5, what="phoenix created")
    first = topic_id()
    producer = Producer({"bootstrap.servers": bootstrap(cluster), "acks": "all", "linger.ms": 5,
                         "allow.auto.create.topics": False, "message.timeout.ms": 60000})
    outcome: dict[bytes, str] = {}

    def report(err, msg) -> None:
        outcome[msg.value()] = "ok" if err is None else err.name()

    def produce(tag: str, count: int) -> list[bytes]:
        values = [f"{tag}-{i}".encode() for i in range(count)]
        for v in values:
            try:
                producer.produce("phoenix", v, on_delivery=report)
            except KafkaException as e:  # refused at once while the topic is known not to exist
                outcome[v] = e.args[0].name()
            producer.poll(0.01)
        return values

    # the old partition gets a leader epoch above 0 (a leader change), as a long-lived topic
    # has: the re-created one starts again at 0, and librdkafka takes a lower epoch only
    # from a topic whose id changed
    tp = TopicPartition("phoenix", 0)
    replicas = store.get_topic_assignments(["phoenix"])[0]["phoenix"].partitions[0].replicas
    store.create_reassignment({tp: tuple(reversed(replicas))})
    wait_for(lambda: not store.get_reassignments(), 30, what="the reordering")
    store.create_preferred_election([tp])
    wait_for(lambda: leader_of(env, "phoenix", 0) == replicas[-1], 30, what="the new leader")
    early = produce("before", 50)
    wait_for(lambda: producer.flush(1) == 0, 30, what="the first messages delivered")
    assert all(outcome[v] == "ok" for v in early)
    reborn = threading.Event()

    def delete_and_recreate() -> None:
        admin.delete_topics(["phoenix"])["phoenix"].result(30)
        wait_for(lambda: topic_id() != first, 30, what="the znodes gone")
        # led by another broker than the one the producer cached (else its stale view works)
        wait_for(lambda: created(first, list(replicas)), 60, 0.2, what="phoenix created again")
        reborn.set()

    worker = threading.Thread(target=delete_and_recreate, daemon=True)
    worker.start()
    during: list[bytes] = []
    for batch_no in range(600):  # bounded: 6,000 messages at most while the topic comes back
        during += produce(f"during{batch_no}", 10)
        if reborn.is_set():
            break
    worker.join(90)
    assert reborn.is_set()
    after = produce("after", 105)
    wait_for(lambda: producer.flush(1) == 0, 90, what="every message delivered or failed")
    assert all(v in outcome for v in during + after)
    assert {v: outcome[v] for v in after if outcome[v] != "ok"} == {}
    # everything the re-created topic holds, up to its high watermark: a "during" message
    # acknowledged before the delete went with the old topic, so their count bounds nothing
    # (reading for that many waited out the read's 30 s whenever one had)
    reader = Consumer({"bootstrap.servers": bootstrap(cluster), "group.id": "test"})
    try:
        _, high = reader.get_watermark_offsets(CTP("phoenix", 0), timeout=10)
    finally:
        reader.close()
    got = consume_confluent(bootstrap(cluster), "phoenix", [0], high)
    assert len(got) == high
    assert set(after) <= {m.value() for m in got}


def one_partition_of(env, topic: str, values: list[bytes]) -> tuple[str, int]:
    """A one-partition topic on the three brokers holding `values`: (bootstrap, its leader)."""
    cluster, store, connect = env
    create_topic(env, topic, {0: (1, 2, 3)})
    bs = bootstrap(cluster)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for v in values:
        p.produce(topic, value=v, partition=0)
    assert p.flush(30) == 0
    return bs, cluster_status(connect, store=store)["topics"][topic]["partitions"][0]["leader"]


def test_list_offsets_answers_each_special_timestamp_from_the_version_that_knows_it(env):
    """KIP-405's EARLIEST_LOCAL (-4, v8+) is the log start (praha keeps every offset local)
    and LATEST_TIERED (-5, v9+) is none; a special timestamp asked for in an older version,
    or one Kafka does not define, is UNSUPPORTED_VERSION, as Kafka answers. Requests are
    kafka-python's encoding; the AdminClient's DeleteRecords moves the log start first."""
    topic = "offset-kinds"
    bs, leader = one_partition_of(env, topic, [b"r%d" % i for i in range(5)])
    admin = AdminClient({"bootstrap.servers": bs})
    admin.delete_records([CTP(topic, 0, 2)])[CTP(topic, 0, 2)].result(15)

    def ask(version: int, timestamp: int) -> tuple[int, int]:
        req = ListOffsetsRequest(replica_id=-1, isolation_level=0, timeout_ms=1000, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=0, current_leader_epoch=-1, timestamp=timestamp)])])
        with broker_conn(env, leader) as conn:
            (part,) = conn.send(req, version).topics[0].partitions
        return part.error_code, part.offset

    assert ask(9, -4) == (ErrorCode.NONE, 2) == ask(8, -4) == ask(10, -2)
    assert ask(9, -5) == (ErrorCode.NONE, -1)
    assert ask(10, -1) == (ErrorCode.NONE, 5)
    assert ask(7, -4)[0] == ask(8, -5)[0] == ask(6, -3)[0] == ask(10, -7)[0] == ErrorCode.UNSUPPORTED_VERSION


def test_fetch_by_topic_id_serves_records_and_names_an_unknown_id(env):
    """Fetch v13+ (KIP-516): topics named by id, answered by id; an id no topic has is
    UNKNOWN_TOPIC_ID for each of its partitions while the known topic is served in the same
    answer. Requests in kafka-python's encoding; librdkafka (Fetch v16) consumes by id too."""
    import uuid

    from confluent_kafka import TopicCollection

    topic = "by-id"
    bs, leader = one_partition_of(env, topic, [b"i%d" % i for i in range(3)])
    admin = AdminClient({"bootstrap.servers": bs})
    tid = wait_for(lambda: admin.describe_topics(TopicCollection([topic]))[topic].result(15).topic_id, 30,
                   what="the topic's id")
    known = uuid.UUID(bytes=tid.get_most_significant_bits().to_bytes(8, "big", signed=True)
                      + tid.get_least_significant_bits().to_bytes(8, "big", signed=True))
    stranger = uuid.uuid4()

    def partition(t: uuid.UUID, index: int = 0):
        return FetchRequest.FetchTopic(topic_id=t, partitions=[FetchRequest.FetchTopic.FetchPartition(
            partition=index, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=1 << 20)])

    for version in (13, 16):
        req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                           session_id=0, session_epoch=-1, topics=[partition(known), partition(stranger, 3)],
                           forgotten_topics_data=[], rack_id="")
        with broker_conn(env, leader) as conn:
            answer = conn.send(req, version).responses
        by_id = {t.topic_id: t.partitions for t in answer}
        assert set(by_id) == {known, stranger}
        (served,) = by_id[known]
        assert served.error_code == ErrorCode.NONE
        assert served.high_watermark == 3
        assert served.records
        assert [(x.partition_index, x.error_code) for x in by_id[stranger]] == [(3, ErrorCode.UNKNOWN_TOPIC_ID)]
    got = consume_confluent(bs, topic, [0], 3)
    assert [m.value() for m in got] == [b"i0", b"i1", b"i2"]
