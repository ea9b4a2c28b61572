"""Idempotent producers against a real cluster: kafka-python 3.x's default producer
(idempotence on) and confluent-kafka with `enable.idempotence` write to RF 3 and read back
exactly what they wrote; InitProducerId hands out ids unique across brokers (claimed in
`/latest_producer_id_block`) and sends transactional ids to their coordinator; a Produce retried with the
same producer id and sequence is answered with the first write's offset and stored once,
also by a new leader after the old one is killed."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTP
from kafka import KafkaProducer
from kafka.protocol.producer import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.common import ReplicaAssignment, TopicAssignment
from praha.common import TopicPartition as TP
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.testing.cluster import bootstrap, wait_for
from praha.zk import znodes as zn

pytestmark = pytest.mark.integration


def create(store, topic: str, replicas: tuple[int, ...], partitions: int = 1) -> None:
    store.create_topic(topic, TopicAssignment({p: ReplicaAssignment(replicas) for p in range(partitions)}), {})
    tps = [TP(topic, p) for p in range(partitions)]
    wait_for(lambda: all((s := store.get_partition_states(tps)[0].get(tp)) and s.leader_and_isr.leader >= 0
                         and len(s.leader_and_isr.isr) == len(replicas) for tp in tps), 30, what=f"{topic} led")


def leader_of(store, tp: TP) -> int:
    return store.get_partition_states([tp])[0][tp].leader_and_isr.leader


def read_values(bs: str, topic: str, partitions: int = 1) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bs, "group.id": "idem-check", "enable.auto.commit": False, "log_level": 3})
    try:
        c.assign([CTP(topic, p, 0) for p in range(partitions)])
        his = [c.get_watermark_offsets(CTP(topic, p), timeout=10)[1] for p in range(partitions)]
        want, out = sum(his), []
        for _ in range(600):
            if len(out) >= want:
                break
            for m in c.consume(500, timeout=0.2):
                if m.error() is None:
                    out.append(m.value())
        return out
    finally:
        c.close()


def idem_batch(pid: int, seq: int, values: list[bytes], epoch: int = 0) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=pid,
                                  producer_epoch=epoch, base_sequence=seq, batch_size=1 << 20)
    for i, v in enumerate(values):
        b.append(i, timestamp=1000 + i, key=None, value=v, headers=[])
    return bytes(b.build())


def produce(conn: BrokerConnection, tp: TP, records: bytes) -> tuple[int, int]:
    resp = conn.send(ProduceRequest(transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name=tp.topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=tp.partition, records=records)])]), 9)
    p = resp.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def init_producer_id(port: int, transactional_id: str | None = None):
    with BrokerConnection("127.0.0.1", port, timeout=10) as conn:
        return conn.send(InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60000,
                                               producer_id=-1, producer_epoch=-1), 4)


def test_default_clients_produce_idempotently(make_cluster, zk_store):
    cluster = make_cluster(3)
    bs = bootstrap(cluster)
    create(zk_store, "idem", (1, 2, 3), partitions=3)
    kp = KafkaProducer(bootstrap_servers=bs, acks="all")  # kafka-python 3.x: idempotence on by default
    assert kp.config["enable_idempotence"]
    sent = [b"kp-%d" % i for i in range(300)]
    for v in sent:
        kp.send("idem", v)
    kp.flush(30)
    kp.close(10)
    cp = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 2, "log_level": 3})
    sent2 = [b"cp-%d" % i for i in range(300)]
    for v in sent2:
        cp.produce("idem", v)
    assert cp.flush(30) == 0
    got = read_values(bs, "idem", 3)
    assert sorted(got) == sorted(sent + sent2)  # every record exactly once


def test_producer_ids_and_retried_produce(make_cluster, zk_store):
    cluster = make_cluster(3)
    ports = {i: b.port for i, b in cluster.load().brokers.items()}
    ids = []
    for port in ports.values():
        for _ in range(2):
            r = init_producer_id(port)
            assert r.error_code == 0
            assert r.producer_epoch == 0
            ids.append(r.producer_id)
    assert len(set(ids)) == len(ids)  # unique across brokers: each claimed its own block
    broker, start, end = zn.decode_producer_id_block(zk_store.get_data(zn.PRODUCER_ID_BLOCK_PATH)[0])
    assert end - start == 999
    assert max(ids) <= end
    # a transactional id goes to its transaction coordinator: none before __transaction_state exists
    refused = init_producer_id(ports[1], "txn-1")
    assert refused.error_code == ErrorCode.NOT_COORDINATOR
    assert refused.producer_id == -1

    tp = TP("retries", 0)
    create(zk_store, tp.topic, (1, 2, 3))
    pid = ids[0]
    leader = leader_of(zk_store, tp)
    with BrokerConnection("127.0.0.1", ports[leader], timeout=10) as conn:
        # ZooKeeper names the leader before its LeaderAndIsr has arrived: wait for the first write
        first = wait_for(lambda: (r := produce(conn, tp, idem_batch(pid, 0, [b"a", b"b"])))[0] not in (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER) and r, 30, what="the leader")
        assert first == (0, 0)
        assert produce(conn, tp, idem_batch(pid, 2, [b"c"])) == (0, 2)
        assert produce(conn, tp, idem_batch(pid, 0, [b"a", b"b"])) == (0, 0)  # retry: same offset
        assert produce(conn, tp, idem_batch(pid, 7, [b"x"]))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    # the leader dies; the new one knows the producer from replication
    cluster.kill_broker(leader)
    new = wait_for(lambda: (n := leader_of(zk_store, tp)) not in (-1, leader) and n, 30, what="new leader")
    with BrokerConnection("127.0.0.1", ports[new], timeout=10) as conn:
        code, offset = wait_for(lambda: (r := produce(conn, tp, idem_batch(pid, 2, [b"c"])))[0] == 0 and r, 30,
                                what="retry accepted by the new leader")
        assert offset == 2
        assert produce(conn, tp, idem_batch(pid, 3, [b"d"])) == (0, 3)
    live = ",".join(f"127.0.0.1:{p}" for i, p in ports.items() if i != leader)
    assert read_values(live, tp.topic) == [b"a", b"b", b"c", b"d"]


@pytest.mark.parametrize("stop", ["clean", "sigkill"])
def test_producer_state_outlives_a_restart_after_64_mib(make_cluster, zk_store, stop):
    """A producer's epoch and last batch are remembered across a restart however much was
    written after it (issue 13: producer-state snapshots; before them, recovery rebuilt the
    table from the last 64 MiB of the active segment only, and an old epoch was accepted)."""
    cluster = make_cluster(1)
    port = cluster.load().brokers[1].port
    tp = TP("fencing", 0)
    create(zk_store, tp.topic, (1,))
    pid = init_producer_id(port).producer_id
    with BrokerConnection("127.0.0.1", port, timeout=10) as conn:
        first = wait_for(lambda: (r := produce(conn, tp, idem_batch(pid, 0, [b"first"], epoch=3)))[0] not in (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER) and r, 30, what="the leader")
        assert first == (0, 0)
    # 72 MiB more in the same (active) segment, from a producer that is not idempotent
    filler = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "enable.idempotence": False, "acks": 1,
                       "linger.ms": 20, "batch.size": 1 << 20, "log_level": 3})
    value = b"x" * 65536
    for _ in range(72 * 16):
        while True:
            try:
                filler.produce(tp.topic, value, partition=0)
                break
            except BufferError:
                filler.poll(0.05)
    assert filler.flush(60) == 0
    if stop == "clean":
        cluster.stop_broker(1)
    else:
        cluster.kill_broker(1)
    cluster.start_broker(1, timeout=60)
    with BrokerConnection("127.0.0.1", port, timeout=10) as conn:
        fenced = wait_for(lambda: (r := produce(conn, tp, idem_batch(pid, 0, [b"zombie"], epoch=2)))[0] not in (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER) and r, 60, what="the leader")
        assert fenced[0] == ErrorCode.INVALID_PRODUCER_EPOCH
        assert produce(conn, tp, idem_batch(pid, 0, [b"first"], epoch=3)) == (0, 0)  # a retry: its first offset
        assert produce(conn, tp, idem_batch(pid, 1, [b"second"], epoch=3))[0] == 0
