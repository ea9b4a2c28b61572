"""Transactions with unmodified clients on a 3-broker cluster (issue 13, the coordinator side).

One cluster for the module; topics and transactional ids are named per test. confluent-kafka's
and kafka-python's transactional producers commit and abort, and read_committed consumers
see exactly the committed records, in order; consume-transform-produce commits the group's
offsets atomically with the output; a second producer with the same transactional id fences
the first; a producer that goes silent is aborted at its timeout and the LSO moves on; `praha
transactions` lists, describes and aborts; bad requests get Kafka's errors. Then
the failures: the coordinator's broker SIGKILLed mid-transaction and in the middle of a
commit, a partition leader SIGKILLed between markers — each transaction ends entirely
committed or entirely aborted as a read_committed consumer sees it.
"""
from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KTP
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KNewTopic
from kafka.protocol.admin.transactions import DescribeTransactionsRequest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer.transaction import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.testing.cluster import bootstrap, scrape_metrics, wait_for

pytestmark = pytest.mark.integration

PARTITIONS = 3
SETTINGS = {
    # fewer coordinator partitions than Kafka's 50 keep the module's start-up short
    "transaction.state.log.num.partitions": "10",
    "offsets.topic.num.partitions": "10",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}


@pytest.fixture(scope="module")
def cluster(module_cluster):
    return module_cluster(3, SETTINGS, store=False).cluster


def new_topic(cluster, partitions: int = PARTITIONS, replicas: list[list[int]] | None = None) -> str:
    name = f"txn-{uuid.uuid4().hex[:8]}"
    if replicas:
        partitions = len(replicas)
        kadmin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster, running_only=True))
        try:
            kadmin.create_topics([KNewTopic(name, num_partitions=-1, replication_factor=-1,
                                            replica_assignments=dict(enumerate(replicas)))])
        finally:
            kadmin.close()
    else:
        admin = AdminClient({"bootstrap.servers": bootstrap(cluster, running_only=True)})
        for f in admin.create_topics([NewTopic(name, partitions, 3)]).values():
            f.result(30)
    wait_for(lambda: all(_leader(cluster, name, p) is not None for p in range(partitions)), 30, what="leaders")
    return name


def _leader(cluster, topic: str, partition: int) -> int | None:
    admin = AdminClient({"bootstrap.servers": bootstrap(cluster, running_only=True)})
    md = admin.list_topics(topic, timeout=10).topics[topic]
    p = md.partitions.get(partition)
    return p.leader if p is not None and p.leader >= 0 else None


def producer(cluster, tid: str, **extra) -> Producer:
    return Producer({"bootstrap.servers": bootstrap(cluster, running_only=True), "transactional.id": tid,
                     "log_level": 3, **extra})


def read(cluster, topic: str, isolation: str, expect: int, partitions: int = PARTITIONS, idle_s: float = 2.0
         ) -> dict[int, list[bytes]]:
    """Every record a fresh consumer with `isolation` reads, by partition: until `expect`
    arrived and then nothing more for `idle_s` (so extra records would be seen too)."""
    c = Consumer({"bootstrap.servers": bootstrap(cluster, running_only=True), "group.id": f"r-{uuid.uuid4().hex[:6]}",
                  "isolation.level": isolation, "enable.auto.commit": False, "log_level": 3})
    out: dict[int, list[bytes]] = defaultdict(list)
    try:
        c.assign([CTP(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 60
        last = time.monotonic()
        while time.monotonic() < deadline:
            got = c.consume(200, timeout=0.2)
            for m in got:
                if m.error() is None:
                    out[m.partition()].append(m.value())
                    last = time.monotonic()
            n = sum(len(v) for v in out.values())
            if n >= expect and time.monotonic() - last >= idle_s:
                break
        return dict(out)
    finally:
        c.close()


def values(by_partition: dict[int, list[bytes]]) -> set[bytes]:
    return {v for vs in by_partition.values() for v in vs}


def produce_txn(p: Producer, topic: str, tag: str, n: int = 6) -> list[bytes]:
    sent = [f"{tag}-{i}".encode() for i in range(n)]
    for i, v in enumerate(sent):
        p.produce(topic, value=v, partition=i % PARTITIONS)
    assert p.flush(30) == 0
    return sent


def coordinator_of(cluster, tid: str) -> int:
    def ask():
        for b in cluster.load().brokers.values():  # a paused broker does not answer: ask the next
            try:
                with BrokerConnection("127.0.0.1", b.port, timeout=2) as conn:
                    r = conn.send(FindCoordinatorRequest(key=tid, key_type=1), 1)
                    if r.error_code == 0:
                        return r.node_id
            except Exception:  # noqa: BLE001 - down, paused or refusing: try another broker
                continue
        return None
    return wait_for(ask, 30, what=f"the coordinator of {tid}")


def describe(cluster, tid: str):
    port = cluster.load().brokers[coordinator_of(cluster, tid)].port
    with BrokerConnection("127.0.0.1", port, timeout=10) as conn:
        return conn.send(DescribeTransactionsRequest(transactional_ids=[tid]), 0).transaction_states[0]


# ------------------------------------------------------------------ commit and abort
def test_confluent_commit_and_abort_read_committed_sees_committed_only_in_order(cluster):
    topic = new_topic(cluster)
    tid = f"tx-{uuid.uuid4().hex[:6]}"
    p = producer(cluster, tid)
    p.init_transactions(30)
    committed: list[bytes] = []
    aborted: list[bytes] = []
    for tag in ("c1", "a1", "c2", "a2", "c3"):
        p.begin_transaction()
        sent = produce_txn(p, topic, tag)
        if tag.startswith("c"):
            p.commit_transaction(30)
            committed += sent
        else:
            p.abort_transaction(30)
            aborted += sent
    got = read(cluster, topic, "read_committed", len(committed))
    assert values(got) == set(committed)
    assert not values(got) & set(aborted)
    for part, vs in got.items():  # in each partition, in the order written
        assert vs == [v for i, v in enumerate(committed) if i % 6 % PARTITIONS == part]
    everything = read(cluster, topic, "read_uncommitted", len(committed) + len(aborted))
    assert values(everything) == set(committed) | set(aborted)
    d = describe(cluster, tid)
    assert (d.error_code, d.transaction_state, d.producer_epoch, d.topics) == (0, "CompleteCommit", 0, [])
    figures = scrape_metrics(cluster.load().brokers[coordinator_of(cluster, tid)].actual_metrics_port)
    assert figures["praha_broker_transaction_commits_total"] >= 3
    assert figures["praha_broker_transaction_aborts_total"] >= 2
    assert figures["praha_broker_transactions_complete_commit"] >= 1
    assert figures["praha_broker_transaction_marker_jobs_total"] >= 5
    assert figures["praha_broker_transaction_marker_latency_ms_total"] > 0


def test_kafka_python_transactional_producer(cluster):
    topic = new_topic(cluster)
    bs = bootstrap(cluster, running_only=True)
    group = f"kp-{uuid.uuid4().hex[:6]}"
    p = KafkaProducer(bootstrap_servers=bs, transactional_id=f"kp-{uuid.uuid4().hex[:6]}")
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(6):
            p.send(topic, value=b"kc-%d" % i, partition=i % PARTITIONS)
        p.send_offsets_to_transaction({KTP(topic, 0): OffsetAndMetadata(7, "", -1)}, group)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(6):
            p.send(topic, value=b"ka-%d" % i, partition=i % PARTITIONS)
        p.send_offsets_to_transaction({KTP(topic, 0): OffsetAndMetadata(99, "", -1)}, group)
        p.flush()
        p.abort_transaction()
    finally:
        p.close()
    grouped = KafkaConsumer(bootstrap_servers=bs, group_id=group, enable_auto_commit=False)
    try:
        assert grouped.committed(KTP(topic, 0)) == 7  # the committed transaction's offset, not the aborted one's
    finally:
        grouped.close()
    c = KafkaConsumer(bootstrap_servers=bs, isolation_level="read_committed", consumer_timeout_ms=3000,
                      enable_auto_commit=False)
    try:
        c.assign([KTP(topic, i) for i in range(PARTITIONS)])
        c.seek_to_beginning()
        seen = sorted(m.value for m in c)
    finally:
        c.close()
    assert seen == sorted(b"kc-%d" % i for i in range(6))


# ------------------------------------------------------------------ consume-transform-produce
def test_consume_transform_produce_commits_offsets_with_the_output(cluster):
    source, sink = new_topic(cluster, 1), new_topic(cluster)
    bs = bootstrap(cluster, running_only=True)
    feed = Producer({"bootstrap.servers": bs, "log_level": 3})
    for i in range(20):
        feed.produce(source, value=b"in-%d" % i, partition=0)
    assert feed.flush(30) == 0
    group = f"ctp-{uuid.uuid4().hex[:6]}"

    def consumer() -> Consumer:
        c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                      "isolation.level": "read_committed", "auto.offset.reset": "earliest", "log_level": 3,
                      "session.timeout.ms": 6000})
        c.subscribe([source])
        return c

    def take(c: Consumer, n: int) -> list:
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            got += [m for m in c.consume(n - len(got), timeout=0.5) if m.error() is None]
        assert len(got) == n
        return got

    def committed_offset() -> int:
        c = Consumer({"bootstrap.servers": bs, "group.id": group, "log_level": 3})
        try:
            return c.committed([CTP(source, 0)], timeout=10)[0].offset
        finally:
            c.close()

    p = producer(cluster, f"ctp-{uuid.uuid4().hex[:6]}")
    p.init_transactions(30)
    c = consumer()
    try:
        first = take(c, 10)
        p.begin_transaction()
        for m in first:
            p.produce(sink, value=m.value().replace(b"in", b"out"), partition=0)
        p.send_offsets_to_transaction([CTP(source, 0, first[-1].offset() + 1)], c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        assert wait_for(lambda: committed_offset() == 10, 30, what="the offset committed with the transaction")

        second = take(c, 10)
        p.begin_transaction()
        for m in second:
            p.produce(sink, value=m.value().replace(b"in", b"out"), partition=0)
        p.send_offsets_to_transaction([CTP(source, 0, second[-1].offset() + 1)], c.consumer_group_metadata(), 30)
        p.abort_transaction(30)
        assert committed_offset() == 10  # the aborted transaction's offsets never became visible
    finally:
        c.close()
    out = read(cluster, sink, "read_committed", 10)
    assert values(out) == {b"out-%d" % i for i in range(10)}


# ------------------------------------------------------------------ fencing
def test_a_second_producer_with_the_same_id_fences_the_first(cluster):
    topic = new_topic(cluster)
    tid = f"zombie-{uuid.uuid4().hex[:6]}"
    old = producer(cluster, tid)
    old.init_transactions(30)
    old.begin_transaction()
    produce_txn(old, topic, "old")
    new = producer(cluster, tid)
    new.init_transactions(30)  # bumps the epoch and aborts the old incarnation's transaction
    old.produce(topic, value=b"zombie-write", partition=0)
    with pytest.raises(KafkaException) as refused_write:  # the broker refuses the old epoch: fatal
        old.flush(30)
    assert refused_write.value.args[0].code() == KafkaError._FENCED
    with pytest.raises(KafkaException) as refused:
        old.commit_transaction(30)
    err = refused.value.args[0]
    assert err.fatal()
    assert err.code() in (KafkaError._FENCED, ErrorCode.PRODUCER_FENCED,
                                          ErrorCode.INVALID_PRODUCER_EPOCH)
    new.begin_transaction()
    sent = produce_txn(new, topic, "new")
    new.commit_transaction(30)
    got = read(cluster, topic, "read_committed", len(sent))
    assert values(got) == set(sent)
    assert b"zombie-write" not in values(read(cluster, topic, "read_uncommitted", len(sent) + 6))  # never stored
    d = describe(cluster, tid)
    # epoch 0 the old producer's, 1 the abort that fenced it, 2 the new producer's
    assert (d.error_code, d.transaction_state, d.producer_epoch) == (0, "CompleteCommit", 2)


# ------------------------------------------------------------------ timeout
def test_a_silent_producer_is_aborted_at_its_timeout_and_the_lso_moves_on(cluster):
    topic = new_topic(cluster, 1)
    tid = f"silent-{uuid.uuid4().hex[:6]}"
    p = producer(cluster, tid, **{"transaction.timeout.ms": 3000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"never", partition=0)
    assert p.flush(30) == 0
    bs = bootstrap(cluster, running_only=True)
    kc = KafkaConsumer(bootstrap_servers=bs, isolation_level="read_committed", enable_auto_commit=False)
    try:
        tp = KTP(topic, 0)
        assert kc.end_offsets([tp])[tp] == 0  # the LSO waits at the open transaction
        # the producer says nothing more; the coordinator aborts it after 3 s
        wait_for(lambda: describe(cluster, tid).transaction_state == "CompleteAbort", 30, what="the abort")
        assert wait_for(lambda: kc.end_offsets([tp])[tp] == 2, 30, what="the LSO past the abort marker")
    finally:
        kc.close()
    assert read(cluster, topic, "read_committed", 0, partitions=1, idle_s=3.0) == {}
    assert describe(cluster, tid).producer_epoch == 1  # fenced: its next request is refused


# ------------------------------------------------------------------ failures
def healed(cluster) -> None:
    """Every broker back in the cluster and in the ISR of every partition (the next test
    starts from a whole cluster)."""
    admin = AdminClient({"bootstrap.servers": bootstrap(cluster, running_only=True)})

    def whole() -> bool:
        md = admin.list_topics(timeout=10)
        return len(md.brokers) == 3 and all(
            len(p.isrs) == len(p.replicas) for t in md.topics.values() for p in t.partitions.values())
    wait_for(whole, 90, interval=0.5, what="every broker back in every ISR")


def _all_or_nothing(cluster, topic: str, txns: dict[str, list[bytes]], committed: int) -> dict[str, bool]:
    """Each transaction's fate as a read_committed consumer sees it: entirely there (True)
    or entirely absent (False); a partial one fails the test. `committed`: how many records
    the client was told are committed (read at least those, then until idle)."""
    seen = values(read(cluster, topic, "read_committed", committed, idle_s=3.0))
    fate = {}
    for tag, sent in txns.items():
        present = set(sent) & seen
        assert present in (set(), set(sent)), f"transaction {tag} is partly visible: {sorted(present)}"
        fate[tag] = bool(present)
    return fate


def test_coordinator_killed_mid_transaction(cluster):
    topic = new_topic(cluster)
    tid = f"kill-mid-{uuid.uuid4().hex[:6]}"
    p = producer(cluster, tid, **{"transaction.timeout.ms": 60000})
    p.init_transactions(30)
    p.begin_transaction()
    sent = produce_txn(p, topic, "mid")
    victim = coordinator_of(cluster, tid)
    cluster.kill_broker(victim)
    try:
        try:
            p.commit_transaction(60)
            committed = True
        except KafkaException as e:  # the client was told it did not commit: it must be aborted
            if e.args[0].txn_requires_abort():
                p.abort_transaction(60)
            committed = False
        fate = _all_or_nothing(cluster, topic, {"mid": sent}, len(sent) if committed else 0)
        assert fate["mid"] is committed
        assert coordinator_of(cluster, tid) != victim
    finally:
        cluster.start_broker(victim)
        healed(cluster)


def test_coordinator_killed_during_commit_completes_it(cluster):
    """PrepareCommit is written and the client answered, but the only replica of one of the
    transaction's partitions is frozen, so its marker cannot be written; the coordinator is
    killed then. The next coordinator loads PrepareCommit and finishes the commit once that
    replica is back."""
    tid = f"kill-commit-{uuid.uuid4().hex[:6]}"
    p = producer(cluster, tid)
    p.init_transactions(30)
    coordinator = coordinator_of(cluster, tid)
    frozen = next(b for b in (1, 2, 3) if b != coordinator)
    topic = new_topic(cluster)
    solo = new_topic(cluster, replicas=[[frozen]])  # on the frozen broker alone: its leader cannot move
    p.begin_transaction()
    sent = produce_txn(p, topic, "commit")
    solo_sent = [b"solo-0", b"solo-1"]
    for v in solo_sent:
        p.produce(solo, value=v, partition=0)
    assert p.flush(30) == 0
    cluster.pause_broker(frozen)
    try:
        p.commit_transaction(60)  # answered once PrepareCommit is replicated
        d = describe(cluster, tid)
        assert d.transaction_state == "PrepareCommit"  # its marker to the frozen leader is owed
        cluster.kill_broker(coordinator)
    finally:
        cluster.resume_broker(frozen)
    try:
        assert _all_or_nothing(cluster, topic, {"commit": sent}, len(sent)) == {"commit": True}
        assert values(read(cluster, solo, "read_committed", 2, partitions=1)) == set(solo_sent)
        wait_for(lambda: describe(cluster, tid).transaction_state == "CompleteCommit", 60, what="CompleteCommit")
    finally:
        if not cluster.broker_running(cluster.broker(coordinator)[1]):
            cluster.start_broker(coordinator)
        healed(cluster)


def test_partition_leader_killed_between_markers(cluster):
    topic = new_topic(cluster)
    tid = f"kill-leader-{uuid.uuid4().hex[:6]}"
    p = producer(cluster, tid)
    p.init_transactions(30)
    txns = {}
    p.begin_transaction()
    txns["before"] = produce_txn(p, topic, "before")
    p.commit_transaction(30)
    p.begin_transaction()
    txns["during"] = produce_txn(p, topic, "during")
    coordinator = coordinator_of(cluster, tid)
    victim = next(lead for part in range(PARTITIONS) if (lead := _leader(cluster, topic, part)) != coordinator)
    cluster.kill_broker(victim)  # its partitions' markers wait for the new leaders
    try:
        p.commit_transaction(60)
        wait_for(lambda: describe(cluster, tid).transaction_state == "CompleteCommit", 60, what="CompleteCommit")
        p.begin_transaction()
        txns["after"] = produce_txn(p, topic, "after")
        p.abort_transaction(60)
        fate = _all_or_nothing(cluster, topic, txns, len(txns["before"]) + len(txns["during"]))
        assert fate == {"before": True, "during": True, "after": False}
    finally:
        cluster.start_broker(victim)
        healed(cluster)


# ------------------------------------------------------------------ praha transactions
def test_transactions_cli_lists_describes_and_aborts(cluster, cli):
    topic = new_topic(cluster, 1)
    tid = f"cli-{uuid.uuid4().hex[:6]}"
    bs = bootstrap(cluster, running_only=True).split(",")[0]
    p = producer(cluster, tid)
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=0)
    assert p.flush(30) == 0

    rc, out, _ = cli("transactions", "--list", "--bootstrap-server", bs, "--json")
    listed = {t["TransactionalId"]: t for t in json.loads(out)}
    assert rc == 0
    assert listed[tid]["TransactionState"] == "Ongoing"
    rc, out, _ = cli("transactions", "--describe", "--transactional-id", tid, "--bootstrap-server", bs, "--json")
    (d,) = json.loads(out)
    assert (d["TransactionState"], d["TopicPartitions"], d["CoordinatorId"]) == (
        "Ongoing", f"{topic}-0", coordinator_of(cluster, tid))
    rc, out, _ = cli("transactions", "--describe-producers", "--topic", topic, "--partition", 0,
                     "--bootstrap-server", bs, "--json")
    (prod,) = json.loads(out)
    assert (prod["ProducerId"], prod["ProducerEpoch"], prod["CurrentTransactionStartOffset"]) == (
        d["ProducerId"], d["ProducerEpoch"], 0)
    leader = _leader(cluster, topic, 0)
    rc, out, _ = cli("transactions", "--find-hanging", "--broker-id", leader, "--bootstrap-server", bs, "--json")
    assert rc == 0
    assert json.loads(out) == []  # open, but its coordinator will end it: not hanging

    rc, out, _ = cli("transactions", "--abort", "--topic", topic, "--partition", 0, "--producer-id", prod["ProducerId"],
                     "--producer-epoch", prod["ProducerEpoch"], "--coordinator-epoch",
                     max(prod["LatestCoordinatorEpoch"], 0),
                     "--bootstrap-server", bs)
    assert rc == 0
    assert out.startswith(f"Aborted the transaction of producer {prod['ProducerId']}")
    rc, out, _ = cli("transactions", "--describe-producers", "--topic", topic, "--partition", 0,
                     "--bootstrap-server", bs, "--json")
    assert json.loads(out)[0]["CurrentTransactionStartOffset"] == -1
    kc = KafkaConsumer(bootstrap_servers=bootstrap(cluster, running_only=True), isolation_level="read_committed",
                       enable_auto_commit=False)
    try:
        assert kc.end_offsets([KTP(topic, 0)])[KTP(topic, 0)] == 2  # the LSO passed the record and the marker
    finally:
        kc.close()
    p.abort_transaction(30)
    assert read(cluster, topic, "read_committed", 0, partitions=1, idle_s=3.0) == {}


# ------------------------------------------------------------------ bad input over the wire
def _at_coordinator(cluster, key: str, key_type: int, request, version: int):
    """Send `request` to the coordinator of `key`, retrying while the coordinator moves or loads."""
    def attempt():
        with BrokerConnection("127.0.0.1", bootstrap_port(cluster), timeout=10) as conn:
            found = conn.send(FindCoordinatorRequest(key=key, key_type=key_type), 1)
        if found.error_code:
            return None
        with BrokerConnection("127.0.0.1", found.port, timeout=10) as conn:
            resp = conn.send(request, version)
        code = getattr(resp, "error_code", 0)
        return None if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                ErrorCode.COORDINATOR_NOT_AVAILABLE) else resp
    return wait_for(attempt, 30, what=f"an answer from the coordinator of {key}")


def bootstrap_port(cluster) -> int:
    return next(b.port for b in cluster.load().brokers.values() if cluster.broker_running(b))


def test_bad_transaction_requests_get_kafkas_errors_and_change_nothing(cluster):
    topic = new_topic(cluster, 1)
    tid = f"bad-{uuid.uuid4().hex[:6]}"
    init = _at_coordinator(cluster, tid, 1, InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1), 4)
    assert init.error_code == 0
    assert init.producer_epoch == 0
    pid = init.producer_id
    too_long = _at_coordinator(cluster, tid, 1, InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=900001, producer_id=-1, producer_epoch=-1), 4)
    assert too_long.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT  # transaction.max.timeout.ms

    def add(partitions: dict[str, list[int]], epoch: int = 0, version: int = 3):
        resp = _at_coordinator(cluster, tid, 1, AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps)
                                 for t, ps in partitions.items()]), version)
        return {(t.name, r.partition_index): r.partition_error_code
                for t in resp.results_by_topic_v3_and_below for r in t.results_by_partition}

    assert add({"nosuch": [0], topic: [0]}) == {("nosuch", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                (topic, 0): ErrorCode.OPERATION_NOT_ATTEMPTED}
    assert add({topic: [0]}, epoch=5) == {(topic, 0): ErrorCode.PRODUCER_FENCED}
    assert add({topic: [0]}, epoch=5, version=1) == {(topic, 0): ErrorCode.INVALID_PRODUCER_EPOCH}  # before v2
    end = _at_coordinator(cluster, tid, 1, EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=0,
                                                         committed=True), 3)
    assert end.error_code == ErrorCode.INVALID_TXN_STATE  # EndTxn without a transaction
    d = describe(cluster, tid)
    assert (d.transaction_state, d.producer_epoch, d.topics) == ("Empty", 0, [])  # nothing changed

    # TxnOffsetCommit from a member with the wrong generation
    group = f"bad-{uuid.uuid4().hex[:6]}"
    c = Consumer({"bootstrap.servers": bootstrap(cluster, running_only=True), "group.id": group, "log_level": 3,
                  "session.timeout.ms": 6000})
    try:
        c.subscribe([topic])
        wait_for(lambda: c.poll(0.2) is None and c.assignment(), 30, what="the consumer's assignment")
        Topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
        commit = _at_coordinator(cluster, group, 0, TxnOffsetCommitRequest(
            transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=0, generation_id=999,
            member_id=c.memberid(), group_instance_id=None, topics=[Topic(name=topic, partitions=[
                Topic.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=5,
                                                      committed_leader_epoch=-1, committed_metadata="")])]), 3)
        assert commit.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
        assert c.committed([CTP(topic, 0)], timeout=10)[0].offset < 0  # no offset committed
    finally:
        c.close()
