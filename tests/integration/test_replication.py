"""Replication with real broker processes, real ZooKeeper and real clients: leader
failover under acks=all, clean and unclean elections, crash recovery of a torn log,
truncation of divergent records on a former leader. Brokers are killed with SIGKILL
or paused with SIGSTOP; every process is stopped by PID when the test ends."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from praha.admin.status import cluster_status
from praha.cluster.local import LocalCluster
from praha.common import ReplicaAssignment, TopicAssignment
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.testing.cluster import bootstrap, scrape_metrics, wait_for

pytestmark = pytest.mark.integration

OVERRIDES = {
    "replica.lag.time.max.ms": "3000",
    "zookeeper.session.timeout.ms": "3000",
    "isr.change.notification.interval.ms": "300",
    "replica.fetch.backoff.ms": "200",
    "replica.fetch.wait.max.ms": "500",
}


# --------------------------------------------------------------------------------- helpers


@pytest.fixture
def cluster(make_cluster) -> LocalCluster:
    """A cluster of its own for each test, on the test's chroot (`zk_connect`)."""
    return make_cluster(3, OVERRIDES)



def partition_state(zk_connect, store, topic: str, partition: int = 0) -> dict:
    return cluster_status(zk_connect, store=store)["topics"][topic]["partitions"][partition]


def create_topic(cluster, store, zk_connect, name: str, assignment: dict[int, tuple[int, ...]],
                 config: dict[str, str] | None = None) -> None:
    store.create_topic(name, TopicAssignment({p: ReplicaAssignment(r) for p, r in assignment.items()}), config or {})
    wait_for(lambda: all(partition_state(zk_connect, store, name, p)["leader"] >= 0 for p in assignment),
             30, what=f"leaders of {name}")
    for b in cluster.load().brokers.values():
        if not cluster.broker_running(b):
            continue
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{b.port}"})

        def known(admin=admin):
            t = admin.list_topics(name, timeout=5).topics[name]
            return len(t.partitions) == len(assignment) and all(p.leader >= 0 for p in t.partitions.values())
        wait_for(known, 20, what=f"broker {b.id} to know {name}")


def wait_isr(zk_connect, store, topic: str, isr: set[int], partition: int = 0, timeout: float = 30) -> dict:
    return wait_for(lambda: (s := partition_state(zk_connect, store, topic, partition)) and set(s["isr"]) == isr and s,
                    timeout, what=f"ISR of {topic}-{partition} to be {sorted(isr)}")


def produce_all(bs: str, topic: str, values: list[bytes], partition: int = 0, acks: str = "all") -> None:
    errors = []
    p = Producer({"bootstrap.servers": bs, "acks": acks, "linger.ms": 2, "message.timeout.ms": 20000})
    for v in values:
        p.produce(topic, value=v, partition=partition, on_delivery=lambda e, m: errors.append(e) if e else None)
    assert p.flush(30) == 0, errors
    assert not errors, errors


def consume_all(bs: str, topic: str, partition: int = 0, timeout: float = 30) -> list[tuple[int, bytes]]:
    """(offset, value) of every record below the high watermark."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "check", "enable.auto.commit": False})
    try:
        # right after an election the new leader may not have its LeaderAndIsr yet
        _, high = wait_for(lambda: c.get_watermark_offsets(CTP(topic, partition), timeout=5), 30,
                           what=f"the leader of {topic}-{partition} to answer")
        c.assign([CTP(topic, partition, OFFSET_BEGINNING)])
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + timeout
        while (not out or out[-1][0] < high - 1) and time.monotonic() < deadline and high > 0:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append((m.offset(), m.value()))
        return out
    finally:
        c.close()


def raw_batch(values: list[bytes]) -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
    for i, v in enumerate(values):
        b.append(i, timestamp=int(time.time() * 1000), key=None, value=v, headers=[])
    return bytes(b.build())


def raw_produce(cluster, broker_id: int, topic: str, values: list[bytes], acks: int,
                timeout_ms: int = 10000) -> tuple[int, int]:
    conn = BrokerConnection("127.0.0.1", cluster.load().brokers[broker_id].port, timeout=10)
    try:
        resp = conn.send(ProduceRequest(transactional_id=None, acks=acks, timeout_ms=timeout_ms, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=raw_batch(values))])]), 9)
        p = resp.responses[0].partition_responses[0]
        return p.error_code, p.base_offset
    finally:
        conn.close()


def log_dir(cluster, broker_id: int, topic: str, partition: int = 0) -> Path:
    return Path(cluster.load().brokers[broker_id].dir) / "data" / f"{topic}-{partition}"


def disk_records(directory: Path) -> list[tuple[int, bytes, int]]:
    """(offset, value, leader epoch) of every record in a stopped broker's partition dir."""
    data = b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))
    out = []
    mr = MemoryRecords(data)
    while mr.has_next():
        b = mr.next_batch()
        for r in b:
            out.append((r.offset, r.value, b.leader_epoch))
    return out


def restart(cluster, store, broker_id: int, timeout: float = 60) -> None:
    """Start a stopped broker and wait for its new registration. (Waiting through
    `start_broker(wait=True)` can misread a just-forked child, whose command line is
    still the parent's, as a broker that exited; ZooKeeper is the better witness.)"""
    before = store.get_broker(broker_id)
    cluster.start_broker(broker_id, wait=False)
    wait_for(lambda: (b := store.get_broker(broker_id)) is not None and (before is None or b.epoch != before.epoch),
             timeout, what=f"broker {broker_id} to register again")


def broker_log(cluster, broker_id: int) -> str:
    return cluster.load().brokers[broker_id].log_path.read_text(errors="replace")


# --------------------------------------------------------------------------------- tests
def test_leader_sigkill_during_acks_all_stream_loses_no_acknowledged_record(cluster, zk_store, zk_connect):
    topic = "stream"
    create_topic(cluster, zk_store, zk_connect, topic, {0: (1, 2, 3), 1: (2, 3, 1)}, {"min.insync.replicas": "2"})
    before = partition_state(zk_connect, zk_store, topic, 0)
    victim = before["leader"]
    bs = bootstrap(cluster)
    # no retries: a record is either acknowledged once or reported failed, never written twice
    p = Producer({"bootstrap.servers": bs, "acks": "all", "retries": 0, "linger.ms": 5,
                  "message.timeout.ms": 20000, "request.timeout.ms": 10000,
                  "topic.metadata.refresh.interval.ms": 1000, "reconnect.backoff.max.ms": 500})
    acked: dict[int, list[int]] = {0: [], 1: []}
    failed = [0]
    killed_at: list[float] = []
    acked_after_kill = {0: 0, 1: 0}

    def report(err, m):
        if err is not None:
            failed[0] += 1
            return
        acked[m.partition()].append(int(m.value()))
        if killed_at:
            acked_after_kill[m.partition()] += 1

    seq = 0
    deadline = time.monotonic() + 60
    start = time.monotonic()
    while time.monotonic() < deadline:
        if not killed_at and time.monotonic() - start > 1.5:
            cluster.kill_broker(victim)
            killed_at.append(time.monotonic())
        p.produce(topic, value=str(seq).encode(), partition=seq % 2, on_delivery=report)
        seq += 1
        p.poll(0.003)
        if killed_at and min(acked_after_kill.values()) >= 100:
            break
    assert p.flush(30) == 0
    assert killed_at, (acked_after_kill, failed)
    assert min(acked_after_kill.values()) >= 100, (acked_after_kill, failed)

    after = partition_state(zk_connect, zk_store, topic, 0)
    assert after["leader"] not in (victim, -1)
    assert after["leader"] in before["isr"]
    assert after["leader_epoch"] > before["leader_epoch"]
    live = bootstrap(cluster)
    for part in (0, 1):
        got = [int(v) for _, v in consume_all(live, topic, part)]
        acked_set = set(acked[part])
        # every acknowledged record exactly once, in the order acknowledged
        assert [s for s in got if s in acked_set] == acked[part]
        assert len(got) == len(set(got))
        assert all(s % 2 == part for s in got)


def test_unclean_election_off_keeps_partition_offline_on_elects_out_of_sync_replica(cluster, zk_store, zk_connect):
    """Three ways an offline partition whose ISR is dead can go: stay offline (unclean election
    off), come back automatically (on for the topic), come back when an operator asks
    (ElectLeaders UNCLEAN from confluent-kafka's AdminClient, as kafka-leader-election does)."""
    ctrl = zk_store.get_controller_id()
    a, b = [x for x in (1, 2, 3) if x != ctrl]
    create_topic(cluster, zk_store, zk_connect, "clean", {0: (a, b)})
    create_topic(cluster, zk_store, zk_connect, "dirty", {0: (a, b)}, {"unclean.leader.election.enable": "true"})
    create_topic(cluster, zk_store, zk_connect, "asked", {0: (a, b)})
    topics = ("clean", "dirty", "asked")
    bs = bootstrap(cluster)
    for t in topics:
        produce_all(bs, t, [b"%s-%d" % (t.encode(), i) for i in range(10)])
    # b dies: a shrinks the ISRs to itself and takes writes that b never sees
    cluster.kill_broker(b)
    for t in topics:
        wait_isr(zk_connect, zk_store, t, {a})
        produce_all(bs, t, [b"%s-late-%d" % (t.encode(), i) for i in range(5)])
    # a dies too: the whole ISR is dead, every partition offline with ISR [a] kept
    cluster.kill_broker(a)
    for t in topics:
        wait_for(lambda t=t: (s := partition_state(zk_connect, zk_store, t)) and s["leader"] == -1 and s["isr"] == [a],
                 30, what=f"{t} offline")
    # b returns: only the topic allowing unclean election elects it
    restart(cluster, zk_store, b)
    s = wait_for(lambda: (s := partition_state(zk_connect, zk_store, "dirty")) and s["leader"] == b and s, 30,
                 what="unclean election of b")
    assert s["isr"] == [b]
    time.sleep(2)
    for t in ("clean", "asked"):
        s = partition_state(zk_connect, zk_store, t)
        assert s["leader"] == -1
        assert s["isr"] == [a]
    # the operator asks for an unclean election of "asked" (and of "dirty", which needs none)
    from confluent_kafka import ElectionType

    admin = AdminClient({"bootstrap.servers": bootstrap(cluster)})
    outcome = admin.elect_leaders(ElectionType.UNCLEAN, [CTP("asked", 0), CTP("dirty", 0)]).result(timeout=60)
    errors = {tp.topic: e for tp, e in outcome.items()}
    assert errors["asked"] is None
    assert errors["dirty"] is not None
    assert errors["dirty"].name() == "ELECTION_NOT_NEEDED"
    s = partition_state(zk_connect, zk_store, "asked")
    assert s["leader"] == b
    assert s["isr"] == [b]
    assert partition_state(zk_connect, zk_store, "clean")["leader"] == -1  # not asked: still offline
    m = scrape_metrics(cluster.load().brokers[ctrl].metrics_port)
    assert max(m.get("praha_controller_unclean_leader_elections_total", 0),
               m.get("praha_controller_unclean_leader_elections", 0)) >= 2
    for t in ("dirty", "asked"):
        got = [v for _, v in consume_all(bootstrap(cluster), t)]
        assert got == [b"%s-%d" % (t.encode(), i) for i in range(10)]  # the late writes only a had are gone
    # a returns: clean comes back with its data; a follows b on dirty and drops what b lacks
    restart(cluster, zk_store, a)
    wait_for(lambda: partition_state(zk_connect, zk_store, "clean")["leader"] == a, 30, what="clean back online")
    clean = [v for _, v in consume_all(bootstrap(cluster), "clean")]
    assert clean == [b"clean-%d" % i for i in range(10)] + [b"clean-late-%d" % i for i in range(5)]


def test_crashed_follower_recovers_a_torn_log_and_rejoins_the_isr(cluster, zk_store, zk_connect):
    topic = "recover"
    create_topic(cluster, zk_store, zk_connect, topic, {0: (1, 2, 3)}, {"min.insync.replicas": "2"})
    leader = partition_state(zk_connect, zk_store, topic)["leader"]
    ctrl = zk_store.get_controller_id()
    followers = [x for x in (1, 2, 3) if x != leader]
    victim = next((x for x in followers if x != ctrl), followers[0])
    bs = bootstrap(cluster)
    first = [b"first-%d" % i for i in range(300)]
    produce_all(bs, topic, first)
    cluster.kill_broker(victim)
    seg = sorted(log_dir(cluster, victim, topic).glob("*.log"))[-1]
    size = seg.stat().st_size
    assert size > 0
    with open(seg, "r+b") as f:  # a torn tail: half a batch missing, then garbage
        f.truncate(size - 7)
        f.seek(0, os.SEEK_END)
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x09\xff\xff" + os.urandom(300))
    second = [b"second-%d" % i for i in range(200)]
    produce_all(bs, topic, second)  # ISR is {leader, other} meanwhile, enough for acks=all
    restart(cluster, zk_store, victim)
    wait_isr(zk_connect, zk_store, topic, {1, 2, 3})
    assert "Recovered log" in broker_log(cluster, victim)
    assert "truncated" in broker_log(cluster, victim)
    # the recovered follower holds exactly the leader's records
    cluster.stop_broker(victim)
    cluster.stop_broker(leader)
    ours = disk_records(log_dir(cluster, victim, topic))
    theirs = disk_records(log_dir(cluster, leader, topic))
    assert [v for _, v, _ in ours] == first + second
    assert ours == theirs


def test_former_leader_truncates_records_only_it_had(cluster, zk_store, zk_connect):
    ctrl = zk_store.get_controller_id()
    old = next(x for x in (1, 2, 3) if x != ctrl)
    others = [x for x in (1, 2, 3) if x != old]
    topic = "diverge"
    create_topic(cluster, zk_store, zk_connect, topic, {0: (old, *others)}, {"min.insync.replicas": "2"})
    bs = bootstrap(cluster)
    produce_all(bs, topic, [b"agreed-%d" % i for i in range(20)])
    wait_isr(zk_connect, zk_store, topic, {1, 2, 3})
    # freeze the followers (after their parked fetches were answered), write to the leader
    # alone (acks=1; and acks=all, which times out as nobody replicates), then crash it:
    # those records exist only on the old leader
    for x in others:
        cluster.pause_broker(x)
    try:
        time.sleep(0.8)
        code, base = raw_produce(cluster, old, topic, [b"divergent-%d" % i for i in range(5)], acks=1)
        assert (code, base) == (ErrorCode.NONE, 20)
        code, base = raw_produce(cluster, old, topic, [b"divergent-%d" % i for i in range(5, 10)], acks=-1,
                                 timeout_ms=300)
        assert (code, base) == (ErrorCode.REQUEST_TIMED_OUT, 25)
        cluster.kill_broker(old)
    finally:
        for x in others:
            cluster.resume_broker(x)
    new = wait_for(lambda: (s := partition_state(zk_connect, zk_store, topic))["leader"] in others and s["leader"],
                   30, what="a new leader")
    produce_all(bootstrap(cluster), topic, [b"new-%d" % i for i in range(15)])
    restart(cluster, zk_store, old)
    wait_isr(zk_connect, zk_store, topic, {1, 2, 3})
    assert "truncated from 30 to 20" in broker_log(cluster, old)
    want = [b"agreed-%d" % i for i in range(20)] + [b"new-%d" % i for i in range(15)]
    assert [v for _, v in consume_all(bootstrap(cluster), topic)] == want
    cluster.stop_broker(old)
    cluster.stop_broker(new)
    ours, theirs = disk_records(log_dir(cluster, old, topic)), disk_records(log_dir(cluster, new, topic))
    assert [v for _, v, _ in ours] == want
    assert ours == theirs
    assert {e for _, _, e in ours[20:]} == {max(e for _, _, e in ours)}
    assert ours[20][2] > ours[0][2]
