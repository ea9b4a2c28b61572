"""Queues for Kafka (KIP-932 share groups, issue 23) with confluent-kafka's own `ShareConsumer`
on a 3-broker cluster, one cluster for the module.

Members run as separate processes (so one can be SIGKILLed) and report, one JSON line each,
every record they received (offset, delivery count) and every acknowledgement the broker
confirmed (`commit_sync` answered without error). The checks are on those reports; the bad
input checks speak the wire protocol directly.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from praha.admin.groups import GroupNotEmptyError
from praha.admin.share_groups import ShareGroupAdmin
from praha.common import TopicPartition
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.protocol.messages.gen.groups import DescribeGroupsRequest
from praha.protocol.messages.gen.metadata import FindCoordinatorRequest, MetadataRequest
from praha.protocol.messages.gen.share import (
    AlterShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)
from praha.testing.cluster import bootstrap, wait_for

# slow (a cluster and member processes, minutes): `make test-share-groups`
pytestmark = [pytest.mark.integration, pytest.mark.slow]

LOCK_MS = 4000
LIMIT = 3
SETTINGS = {
    "share.auto.offset.reset": "earliest",
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.delivery.count.limit": str(LIMIT),
    "group.share.heartbeat.interval.ms": "500",
    "group.share.session.timeout.ms": "6000",
    "group.initial.rebalance.delay.ms": "0",
    # let a GROUP config set a short lock (Kafka's minimum is 15 s)
    "group.share.min.record.lock.duration.ms": "1000",
}


@pytest.fixture(scope="module")
def chrooted(module_cluster):
    return module_cluster(3, SETTINGS)


@pytest.fixture(scope="module")
def cluster(chrooted):
    return chrooted.cluster


@pytest.fixture(scope="module")
def bs(cluster) -> str:
    return bootstrap(cluster)


def new_topic(bs: str, records: int, partitions: int = 1) -> str:
    name = f"q-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5})
    for i in range(records):
        p.produce(name, value=str(i).encode(), partition=i % partitions)
    assert p.flush(60) == 0
    return name


MEMBER = textwrap.dedent("""
    import json, sys, time
    from confluent_kafka import AcknowledgeType, ShareConsumer
    bs, group, topic, plan = sys.argv[1:5]
    plan = json.loads(plan)
    # plan: {"hold": true} never acknowledges; {"release": [offsets]}, {"reject": [offsets]}: those
    # offsets so (every time they come); the rest accepted. "max": records per poll.
    conf = {"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit",
            "max.poll.records": plan.get("max", 500)}
    if plan.get("debug"):
        conf["debug"] = plan["debug"]
    def say(*parts):
        print(json.dumps(parts), flush=True)
    c = ShareConsumer(conf)
    c.subscribe([topic])
    say("started")
    deadline = time.monotonic() + plan.get("seconds", 120)
    kinds = {"release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}
    while time.monotonic() < deadline:
        ms = c.poll(0.5)
        acked = []
        for m in ms:
            if m.error() is not None:
                say("error", str(m.error()))
                continue
            say("got", m.partition(), m.offset(), m.delivery_count())
            if plan.get("hold") or m.offset() >= plan.get("accept_below", 1 << 62):
                continue
            kind = next((k for k in kinds if m.offset() in plan.get(k, [])), "accept")
            c.acknowledge(m, kinds.get(kind, AcknowledgeType.ACCEPT))
            acked.append((m.partition(), m.offset(), kind))
            if plan.get("work_ms"):
                time.sleep(plan["work_ms"] / 1000)
        if acked:
            res = c.commit_sync(30)
            bad = {f"{tp.partition}": str(e) for tp, e in res.items() if e is not None}
            if bad:
                say("commit-failed", bad, acked)
            else:
                for p, o, kind in acked:
                    say("acked", p, o, kind)
        if (plan.get("hold") or "accept_below" in plan) and ms:
            say("holding")
            time.sleep(3600)
    c.close()
    say("closed")
""")


class Member:
    """One ShareConsumer process and what it reported."""

    def __init__(self, bs: str, group: str, topic: str, **plan: object):
        self.events: list[list] = []
        self.lock = threading.Lock()
        if os.environ.get("SHARE_MEMBER_DEBUG"):
            plan = {**plan, "debug": os.environ["SHARE_MEMBER_DEBUG"]}
        self.proc = subprocess.Popen([sys.executable, "-c", MEMBER, bs, group, topic, json.dumps(plan)],
                                     stdout=subprocess.PIPE, text=True,
                                     stderr=open(os.environ["SHARE_MEMBER_LOG"], "a") if os.environ.get(
                                         "SHARE_MEMBER_LOG") else subprocess.DEVNULL,
                                     start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.events.append(event)

    def of(self, kind: str) -> list[list]:
        with self.lock:
            return [e[1:] for e in self.events if e[0] == kind]

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@pytest.fixture
def members():
    started: list[Member] = []
    yield started
    for m in started:
        m.stop()


def accepted(ms: list[Member]) -> list[int]:
    return sorted(o for m in ms for _, o, kind in m.of("acked") if kind == "accept")


def test_four_share_consumers_on_one_partition_take_disjoint_records_and_accept_each_once(bs, members):
    n = 400
    topic = new_topic(bs, n)
    group = f"g-{uuid.uuid4().hex[:6]}"
    members += [Member(bs, group, topic, max=10, work_ms=5) for _ in range(4)]
    wait_for(lambda: len(accepted(members)) >= n, timeout=120, what="every record accepted")
    assert accepted(members) == list(range(n))  # each exactly once
    got = [set(o for _, o, _ in m.of("got")) for m in members]
    for i in range(4):
        for j in range(i + 1, 4):
            assert not got[i] & got[j], f"members {i} and {j} both received {sorted(got[i] & got[j])[:5]}"
    assert sum(1 for g in got if g) >= 2, "the partition's records were not shared"
    assert all(dc == 1 for m in members for _, _, dc in m.of("got"))


def test_records_held_by_a_killed_consumer_come_to_another_after_the_lock_with_delivery_count_two(bs, members):
    topic = new_topic(bs, 20)
    group = f"g-{uuid.uuid4().hex[:6]}"
    holder = Member(bs, group, topic, hold=True, max=5)
    members.append(holder)
    wait_for(lambda: holder.of("holding"), timeout=120, what="the holder holds records")
    held = sorted(o for _, o, _ in holder.of("got"))
    holder.kill()
    other = Member(bs, group, topic)
    members.append(other)
    wait_for(lambda: len(accepted([other])) >= 20, timeout=90, what="the other consumer accepted all")
    counts = {o: dc for _, o, dc in other.of("got")}
    assert accepted([other]) == list(range(20))
    assert held, (held, counts)
    assert all(counts[o] == 2 for o in held), (held, counts)
    assert all(counts[o] == 1 for o in counts if o not in held)


def test_release_redelivers_reject_archives_and_a_poison_record_is_archived_at_the_limit(bs, members):
    topic = new_topic(bs, 10)
    group = f"g-{uuid.uuid4().hex[:6]}"
    m = Member(bs, group, topic, release=[3], reject=[5])
    members.append(m)
    # 3 is released every time: delivered LIMIT times, then archived; 5 rejected once, never again
    wait_for(lambda: len(accepted([m])) >= 8 and len([1 for _, o, _ in m.of("acked") if o == 3]) >= LIMIT,
             timeout=60, what="the poison record released to the limit")
    deliveries = [dc for _, o, dc in m.of("got") if o == 3]
    assert deliveries == list(range(1, LIMIT + 1))
    assert [dc for _, o, dc in m.of("got") if o == 5] == [1]
    assert accepted([m]) == [o for o in range(10) if o not in (3, 5)]
    # more records after it: the window moved past the archived ones, nothing comes back
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    p.produce(topic, value=b"late")
    assert p.flush(30) == 0
    wait_for(lambda: 10 in accepted([m]), timeout=60, what="the late record")
    assert [dc for _, o, dc in m.of("got") if o == 3] == list(range(1, LIMIT + 1))
    assert [dc for _, o, dc in m.of("got") if o == 5] == [1]


def test_a_share_group_and_a_classic_group_read_the_same_topic_independently(bs, members):
    topic = new_topic(bs, 30)
    group = f"g-{uuid.uuid4().hex[:6]}"
    m = Member(bs, group, topic)
    members.append(m)
    c = Consumer({"bootstrap.servers": bs, "group.id": group + "-classic", "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic])
        seen: list[int] = []
        deadline = time.monotonic() + 60
        while len(seen) < 30 and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg.offset())
    finally:
        c.close()
    wait_for(lambda: len(accepted([m])) >= 30, timeout=60, what="the share group read all")
    assert sorted(seen) == list(range(30))
    assert accepted([m]) == list(range(30))


def test_after_the_leader_is_killed_acknowledged_records_stay_done_and_held_ones_come_again(cluster, bs, members):
    topic = new_topic(bs, 30)
    group = f"g-{uuid.uuid4().hex[:6]}"
    holder = Member(bs, group, topic, accept_below=10, max=20)
    members.append(holder)
    wait_for(lambda: holder.of("holding"), timeout=120, what="the consumer accepted 10 and holds 10")
    assert accepted([holder]) == list(range(10))
    held = sorted(o for _, o, _ in holder.of("got") if o >= 10)
    assert held == list(range(10, 20))
    any_broker = BrokerConnection(*bs.split(",")[0].split(":")[:1], int(bs.split(",")[0].split(":")[1]))
    _, leader_conn = _leader(any_broker, topic)
    md = any_broker.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 12)
    leader = md.topics[0].partitions[0].leader_id
    for c in (any_broker, leader_conn):
        c.close()
    cluster.kill_broker(leader)
    try:
        other = Member(bs, group, topic)
        members.append(other)
        wait_for(lambda: set(accepted([other])) >= set(range(10, 30)), timeout=120,
                 what="the other consumer accepted the rest after the election")
        got = {o: dc for _, o, dc in other.of("got")}
        assert not set(got) & set(range(10)), (
            f"acknowledged records delivered again: {sorted(set(got) & set(range(10)))}"
        )
        assert accepted([other]) == list(range(10, 30))
        assert all(got[o] == 2 for o in held), got  # the held ones come back, their first delivery counted
    finally:
        cluster.start_broker(leader, timeout=120)


def test_praha_groups_share_describe_shows_members_start_offsets_and_in_flight_records(cluster, bs, members, cli):
    topic = new_topic(bs, 12)
    group = f"g-{uuid.uuid4().hex[:6]}"
    holder = Member(bs, group, topic, accept_below=4, max=8)
    members.append(holder)
    wait_for(lambda: holder.of("holding"), timeout=120, what="4 accepted, 4 held")
    rc, out, err = cli("groups", "--share", "--list", "--dir", cluster.root)
    assert rc == 0
    assert group in out.split()
    rc, out, err = cli("groups", "--share", "--describe", "--group", group, "--dir", cluster.root, "--json")
    assert rc == 0, err
    g = json.loads(out)["groups"][0]
    assert g["state"] == "Stable"
    assert len(g["members"]) == 1
    assert g["members"][0]["assignment"] == [{"topic": topic, "partition": 0}]
    # lag (DescribeShareGroupOffsets v1): records from the start offset to the end not yet done
    assert g["partitions"] == [{"topic": topic, "partition": 0, "start_offset": 4, "lag": 8, "in_flight": 4}]
    rc, out, err = cli("groups", "--share", "--describe", "--group", "no-such-" + group, "--dir", cluster.root)
    assert rc == 1
    assert "does not exist" in err
    rc, out, err = cli("groups", "--share", "--delete", "--group", group, "--dir", cluster.root)
    assert rc != 0


# ---------------------------------------------------------------- bad input, on the wire
def _connect(bs: str, group: str) -> tuple[BrokerConnection, BrokerConnection, uuid.UUID]:
    host, port = bs.split(",")[0].split(":")
    any_broker = BrokerConnection(host, int(port))
    coord = wait_for(lambda: _coordinator(any_broker, group), timeout=30, what="a coordinator")
    return any_broker, BrokerConnection(*coord), uuid.UUID(int=0)


def _coordinator(conn: BrokerConnection, group: str):
    r = conn.send(FindCoordinatorRequest(key=group, key_type=0), 2)
    return (r.host, r.port) if r.error_code == 0 else None


def _leader(conn: BrokerConnection, topic: str):
    md = conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 12)
    t = md.topics[0]
    leader = t.partitions[0].leader_id
    b = next(b for b in md.brokers if b.node_id == leader)
    return t.topic_id, BrokerConnection(b.host, b.port)


def _share_fetch(leader: BrokerConnection, group: str, member: str, topic_id: uuid.UUID, epoch: int,
                 max_records: int, acks=()):
    """One ShareFetch v1 of partition 0, with acknowledgements (first, last, type)."""
    F = ShareFetchRequest
    part = F.FetchTopic.FetchPartition
    return leader.send(F(group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=2000,
                         min_bytes=1, max_bytes=1 << 20, max_records=max_records, batch_size=max_records,
                         topics=[F.FetchTopic(topic_id=topic_id, partitions=[part(
                             partition_index=0, acknowledgement_batches=[part.AcknowledgementBatch(
                                 first_offset=a, last_offset=b, acknowledge_types=[t]) for a, b, t in acks])])],
                         forgotten_topics_data=[]), 1)


def _acquired(r) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count) for t in r.responses for p in t.partitions
            for a in p.acquired_records]


def test_a_leader_hands_out_nothing_another_broker_has_since_written_done(chrooted, bs):
    """Chaos seed 502 (`--workload share`, a one_way cut of the leader): records accepted at the
    new leader were handed out again by the old one, which did not know yet and still had the
    share partition loaded. Here the durable state is rewritten from outside as a successor
    would leave it (all ten records done) while this leader holds 0-4 for a member: its next
    ShareFetch must not hand out 5-9, and the held records are done for it too."""
    from praha.zk.share_state import ShareSnapshot, ShareStateStore

    topic = new_topic(bs, 10)
    group = f"g-{uuid.uuid4().hex[:6]}"
    any_broker, coord, _ = _connect(bs, group)
    member = uuid.uuid4().hex
    wait_for(lambda: coord.send(ShareGroupHeartbeatRequest(  # a fresh cluster's coordinator may still load
        group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]), 1).error_code == 0,
        timeout=60, what="the member joined")
    topic_id, leader = _leader(any_broker, topic)
    first = _share_fetch(leader, group, member, topic_id, 0, 5)
    assert first.error_code == 0
    assert _acquired(first) == [(0, 4, 1)]
    store = ShareStateStore(chrooted.store.client)
    tp = TopicPartition(topic, 0)
    _, version = store.read(group, tp)
    store.write(group, tp, ShareSnapshot(10, (), 1), version)  # a successor acknowledged all ten
    nxt = _share_fetch(leader, group, member, topic_id, 1, 5)
    assert nxt.error_code == 0, "records done in the durable state handed out again"
    assert _acquired(nxt) == [], "records done in the durable state handed out again"
    late = _share_fetch(leader, group, member, topic_id, 2, 5, acks=[(0, 4, 1)])  # accepting 0-4 now: done already
    assert late.responses[0].partitions[0].acknowledge_error_code == ErrorCode.INVALID_RECORD_STATE
    assert _acquired(late) == []
    assert store.read(group, tp)[0].start_offset == 10
    for c in (any_broker, coord, leader):
        c.close()


def test_a_leader_the_controller_replaced_without_its_knowing_hands_out_nothing(chrooted, bs):
    """Chaos seed 503 (`--secure --workload share`): a deposed leader, cut off from the controller,
    loaded the share partition beside the real one and both handed out the same records. Here the
    partition's leader epoch in ZooKeeper is raised from outside, as an election the leader has not
    heard of would leave it: its ShareFetch hands out nothing until the znode is put back."""
    import dataclasses

    from praha.common import LeaderIsrAndControllerEpoch
    from praha.zk.znodes import decode_partition_state, encode_partition_state, partition_state_path

    topic = new_topic(bs, 10)
    group = f"g-{uuid.uuid4().hex[:6]}"
    any_broker, coord, _ = _connect(bs, group)
    member = uuid.uuid4().hex
    wait_for(lambda: coord.send(ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]), 1).error_code == 0,
        timeout=60, what="the member joined")
    topic_id, leader = _leader(any_broker, topic)
    zk, path = chrooted.store.client, partition_state_path(topic, 0)
    data, stat = zk.get(path)
    state = decode_partition_state(data, stat.version)
    elected = LeaderIsrAndControllerEpoch(dataclasses.replace(
        state.leader_and_isr, leader_epoch=state.leader_and_isr.leader_epoch + 1), state.controller_epoch)
    zk.set(path, encode_partition_state(elected))
    try:
        r = _share_fetch(leader, group, member, topic_id, 0, 5)
        assert r.error_code == 0, "a leader ZooKeeper no longer names handed records out"
        assert _acquired(r) == [], "a leader ZooKeeper no longer names handed records out"
    finally:
        zk.set(path, data)  # as the controller left it
    assert _acquired(_share_fetch(leader, group, member, topic_id, 1, 5)) == [(0, 4, 1)]
    for c in (any_broker, coord, leader):
        c.close()


def test_bad_input_gets_kafkas_errors_and_changes_nothing(bs):
    topic = new_topic(bs, 5)
    group = f"g-{uuid.uuid4().hex[:6]}"
    any_broker, coord, _ = _connect(bs, group)
    member = uuid.uuid4().hex
    hb = coord.send(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=0,
                                               subscribed_topic_names=[topic]), 1)
    assert hb.error_code == 0
    assert hb.member_epoch >= 1
    # a stale member epoch is fenced; an unknown group is not found
    fenced = coord.send(ShareGroupHeartbeatRequest(group_id=group, member_id=member,
                                                   member_epoch=hb.member_epoch + 5), 1)
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    d = coord.send(ShareGroupDescribeRequest(group_ids=["no-such-" + group]), 1)
    assert d.groups[0].error_code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NOT_COORDINATOR)
    topic_id, leader = _leader(any_broker, topic)

    def fetch(epoch: int, acks=()):
        return _share_fetch(leader, group, member, topic_id, epoch, 2, acks)

    # no session yet: epoch 1 is SHARE_SESSION_NOT_FOUND
    assert fetch(1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    first = fetch(0)
    assert first.error_code == 0
    acquired = [(a.first_offset, a.last_offset) for t in first.responses for p in t.partitions
                for a in p.acquired_records]
    assert acquired == [(0, 1)]
    # a stale session epoch: INVALID_SHARE_SESSION_EPOCH, the acknowledgement in it not applied
    assert fetch(0 + 5, acks=[(0, 0, 1)]).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    A = ShareAcknowledgeRequest
    apart = A.AcknowledgeTopic.AcknowledgePartition

    def ack(epoch: int, first_offset: int, last_offset: int, kind: int = 1):
        return leader.send(A(group_id=group, member_id=member, share_session_epoch=epoch, topics=[A.AcknowledgeTopic(
            topic_id=topic_id, partitions=[apart(partition_index=0, acknowledgement_batches=[
                apart.AcknowledgementBatch(first_offset=first_offset, last_offset=last_offset,
                                           acknowledge_types=[kind])])])]), 1)

    assert ack(0, 0, 0).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    # acknowledging records never acquired (2-3): INVALID_RECORD_STATE for the partition, nothing changed
    r = ack(1, 0, 3)
    assert r.error_code == 0
    assert r.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
    r = ack(2, 0, 1)  # 0 and 1 are still ours: accepted now
    assert r.error_code == 0
    assert r.responses[0].partitions[0].error_code == 0
    assert _acquired(fetch(3)) == [(2, 3, 1)]
    for c in (any_broker, coord, leader):
        c.close()


# ---------------------------------------------------------------- share-group offsets admin
def _empty(admin: ShareGroupAdmin, group: str) -> bool:
    return not admin.describe_share_groups([group])[group].members


def _share_offsets(cli, cluster, group: str) -> list[dict]:
    rc, out, err = cli("groups", "--share", "--describe", "--group", group, "--dir", cluster.root, "--json")
    assert rc == 0, err
    return [{k: p[k] for k in ("partition", "start_offset", "lag")} for p in json.loads(out)["groups"][0]["partitions"]]


def test_share_group_offsets_described_reset_and_deleted_while_the_group_is_empty(cluster, bs, members, cli):
    topic = new_topic(bs, 10)
    group = f"g-{uuid.uuid4().hex[:6]}"
    first = Member(bs, group, topic)
    members.append(first)
    wait_for(lambda: len(accepted([first])) >= 10, timeout=120, what="every record accepted")
    admin = ShareGroupAdmin(bs, timeout=30)
    tp = TopicPartition(topic, 0)
    # DescribeShareGroupOffsets: start offset past everything, lag 0
    d = admin.describe_share_group_offsets([group])[group]
    assert d is not None
    assert (d[tp].start_offset, d[tp].lag, d[tp].error) == (10, 0, 0)
    # a group with a member: its offsets stay (NON_EMPTY_GROUP), by the wire and by the CLI
    with pytest.raises(GroupNotEmptyError):
        admin.alter_share_group_offsets(group, {tp: 0})
    rc, _, err = cli("groups", "--share", "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest",
                     "--execute", "--dir", cluster.root)
    assert rc == 1
    assert "not empty" in err
    first.kill()
    wait_for(lambda: _empty(admin, group), timeout=60, what="the killed member's session to time out")
    # AlterShareGroupOffsets through praha groups: back to offset 4; a new member gets 4..9 once each
    rc, out, err = cli("groups", "--share", "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "4",
                       "--dry-run", "--dir", cluster.root)
    assert rc == 0
    assert _share_offsets(cli, cluster, group) == [{"partition": 0, "start_offset": 10, "lag": 0}]
    rc, out, err = cli("groups", "--share", "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "4",
                       "--execute", "--dir", cluster.root)
    assert rc == 0, err
    assert _share_offsets(cli, cluster, group) == [{"partition": 0, "start_offset": 4, "lag": 6}]
    second = Member(bs, group, topic)
    members.append(second)
    wait_for(lambda: len(accepted([second])) >= 6, timeout=120, what="the records after the new start offset")
    assert accepted([second]) == list(range(4, 10))
    assert all(dc == 1 for _, _, dc in second.of("got"))
    second.kill()
    wait_for(lambda: _empty(admin, group), timeout=60, what="the second member's session to time out")
    # DeleteShareGroupOffsets: the state is gone; the next member starts at share.auto.offset.reset (earliest)
    rc, out, err = cli("groups", "--share", "--delete-offsets", "--group", group, "--topic", topic,
                       "--dir", cluster.root)
    assert rc == 0, err
    assert admin.describe_share_group_offsets([group])[group] == {}
    third = Member(bs, group, topic)
    members.append(third)
    wait_for(lambda: len(accepted([third])) >= 10, timeout=120, what="every record again after the delete")
    assert accepted([third]) == list(range(10))
    third.kill()
    admin.close()


def test_an_empty_share_group_survives_a_coordinator_move(cluster, bs, members):
    """Kafka keeps a share group's metadata in __consumer_offsets: when the coordinator's broker
    dies, the next coordinator of the partition answers the emptied group as before (described,
    listed, its offsets described and deleted, the group deleted), at the same epoch."""
    topic = new_topic(bs, 10)
    group = f"g-{uuid.uuid4().hex[:6]}"
    first = Member(bs, group, topic)
    members.append(first)
    wait_for(lambda: len(accepted([first])) >= 10, timeout=120, what="every record accepted")
    first.kill()
    admin = ShareGroupAdmin(bs, timeout=30)
    wait_for(lambda: _empty(admin, group), timeout=60, what="the killed member's session to time out")
    tp = TopicPartition(topic, 0)
    d = admin.describe_share_group_offsets([group])[group]
    assert d is not None
    assert (d[tp].start_offset, d[tp].lag) == (10, 0)
    # its share state deleted, the group has nothing in ZooKeeper: only its record says it exists
    assert admin.delete_share_group_offsets(group, [topic]) == {topic: 0}
    assert admin.describe_share_group_offsets([group])[group] == {}
    before = admin.describe_share_groups([group])[group]
    assert (before.state, before.members) == ("Empty", ())
    cluster.kill_broker(before.coordinator.id)
    try:
        def moved():
            g = admin.describe_share_groups([group])[group]
            return g if g.coordinator.id != before.coordinator.id else None

        after = wait_for(moved, timeout=120, what="another coordinator")
        assert (after.state, after.group_epoch, after.members) == ("Empty", before.group_epoch, ())
        assert group in [g.group_id for g in admin.list_share_groups()]
        assert admin.describe_share_group_offsets([group])[group] == {}
        assert admin.delete_share_group_offsets(group, [topic]) == {topic: 0}
        assert admin.delete_groups([group]) == {group: 0}
        assert not admin.describe_share_groups([group])[group].exists
        assert admin.describe_share_group_offsets([group])[group] is None
    finally:
        admin.close()
        cluster.start_broker(before.coordinator.id, timeout=120)


def test_share_group_offsets_bad_input_and_describe_groups_of_a_share_group(bs):
    topic = new_topic(bs, 3)
    group = f"g-{uuid.uuid4().hex[:6]}"
    any_broker, coord, _ = _connect(bs, group)
    hb = coord.send(ShareGroupHeartbeatRequest(group_id=group, member_id=uuid.uuid4().hex, member_epoch=0,
                                               subscribed_topic_names=[topic]), 1)
    assert hb.error_code == 0
    # DescribeGroups answers a share group as Kafka does for a group that is not classic: Dead, no members
    dg = coord.send(DescribeGroupsRequest(groups=[group], include_authorized_operations=False), 5).groups[0]
    assert (dg.error_code, dg.group_state, dg.protocol_type, dg.members) == (0, "Dead", "", [])
    D = DescribeShareGroupOffsetsRequest
    G = D.DescribeShareGroupOffsetsRequestGroup

    def describe(gid: str, topics=None):
        return coord.send(D(groups=[G(group_id=gid, topics=topics)]), 1).groups[0]

    unknown = describe("no-such-" + group)
    assert unknown.error_code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NOT_COORDINATOR)
    # a partition without state is uninitialised (-1); an unknown topic is UNKNOWN_TOPIC_OR_PARTITION
    d = describe(group, [G.DescribeShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[0]),
                         G.DescribeShareGroupOffsetsRequestTopic(topic_name="no-such-topic", partitions=[0])])
    assert d.error_code == 0
    rows = {t.topic_name: [(p.start_offset, p.error_code) for p in t.partitions] for t in d.topics}
    assert rows == {topic: [(-1, 0)], "no-such-topic": [(-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]}
    # altering a group with a member: NON_EMPTY_GROUP, and nothing written
    A = AlterShareGroupOffsetsRequest
    T = A.AlterShareGroupOffsetsRequestTopic
    alter = A(group_id=group, topics=[T(topic_name=topic, partitions=[
        T.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=1)])])
    assert coord.send(alter, 0).error_code == ErrorCode.NON_EMPTY_GROUP
    assert describe(group).topics == []
    # an empty group: a negative offset and an unknown partition are refused per partition
    empty = f"g-{uuid.uuid4().hex[:6]}"
    _, coord2, _ = _connect(bs, empty)
    r = coord2.send(A(group_id=empty, topics=[T(topic_name=topic, partitions=[
        T.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=-5),
        T.AlterShareGroupOffsetsRequestPartition(partition_index=7, start_offset=0)])]), 0)
    assert r.error_code == 0
    assert [(p.partition_index, p.error_code) for p in r.responses[0].partitions] == [
        (0, ErrorCode.INVALID_REQUEST), (7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    for c in (any_broker, coord, coord2):
        c.close()


# ---------------------------------------------------------------- GROUP configs of a share group
def test_share_group_configs_through_confluent_kafkas_admin_client_apply_to_that_group(bs, members):
    """IncrementalAlterConfigs/DescribeConfigs on the GROUP resource with confluent-kafka's own
    AdminClient: Kafka's INVALID_CONFIG for bad values, and the group's lock duration and offset
    reset used by its partition leader (the broker-wide reset here is earliest)."""
    topic = new_topic(bs, 5)
    group = f"g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bs})

    def alter(**values: str) -> None:
        res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry(k.replace("_", "."), v,
                        incremental_operation=AlterConfigOpType.SET) for k, v in values.items()])
        admin.incremental_alter_configs([res])[res].result(30)

    for bad, message in ((dict(share_auto_offset_reset="sometimes"), "String must be one of"),
                         (dict(share_record_lock_duration_ms="500"), "greater than or equal"),
                         (dict(share_fetch_size="1"), "Unknown group config name")):
        with pytest.raises(KafkaException, match=message) as e:
            alter(**bad)
        assert e.value.args[0].code() == ErrorCode.INVALID_CONFIG
    alter(share_auto_offset_reset="latest", share_record_lock_duration_ms="2000")
    res = ConfigResource(ResourceType.GROUP, group)
    described = {k: v.value for k, v in admin.describe_configs([res])[res].result(30).items()}
    assert described["share.auto.offset.reset"] == "latest"
    assert described["share.record.lock.duration.ms"] == "2000"
    assert described["share.isolation.level"] == "read_uncommitted"  # the broker's, not overridden
    # the partition leader has the group's config once its ShareFetch answers the group's lock duration
    # (a session without partitions: nothing is loaded before the config arrives)
    any_broker, coord, _ = _connect(bs, group)
    topic_id, leader = _leader(any_broker, topic)
    F = ShareFetchRequest

    def lock_ms() -> bool:
        r = leader.send(F(group_id=group, member_id="probe", share_session_epoch=0, max_wait_ms=0, min_bytes=1,
                          max_bytes=1 << 20, max_records=1, batch_size=1, topics=[], forgotten_topics_data=[]), 1)
        return r.error_code == 0 and r.acquisition_lock_timeout_ms == 2000
    wait_for(lock_ms, timeout=60, what="the leader answering the group's lock duration")
    m = Member(bs, group, topic)
    members.append(m)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for _ in range(300):  # bounded: records keep coming until the member (started at latest) has some
        p.produce(topic, value=b"later")
        assert p.flush(30) == 0
        if accepted([m]):
            break
        time.sleep(0.2)
    assert accepted([m]), "the member received none of the later records"
    assert min(o for _, o, _ in m.of("got")) >= 5, "share.auto.offset.reset=latest (the group's) was not used"
    for c in (any_broker, coord, leader):
        c.close()
