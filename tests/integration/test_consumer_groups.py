"""Consumer groups with unmodified Kafka clients on a 3-broker cluster (issue 11 §2).

One cluster for the module (groups and topics are named per test). Each client library
runs three members of one group over a 6-partition RF 3 topic: every record is consumed,
the members end with disjoint assignments covering the topic, and the committed offsets
are read back by a new member. Then kcat's balanced consumer, a member SIGKILLed, a
static member, the coordinator's broker SIGKILLed while members commit, and the error
codes a hostile or confused client gets.
"""
from __future__ import annotations

import asyncio
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
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, OffsetCommitRequest, SyncGroupRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from praha.coordinator.group.records import OFFSETS_TOPIC, partition_for
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.protocol.errors import BrokerConnectionError
from praha.testing.cluster import bootstrap, wait_for

pytestmark = pytest.mark.integration

PARTITIONS, RECORDS = 6, 600
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.commit.timeout.ms": "5000",
}


@pytest.fixture(scope="module")
def cluster(module_cluster):
    return module_cluster(3, GROUP_SETTINGS, store=False).cluster


def new_topic(cluster, records: int = RECORDS, partitions: int = PARTITIONS) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    bs = bootstrap(cluster)
    admin = AdminClient({"bootstrap.servers": bs})  # kept alive until the result is in
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(records):
        p.produce(name, key=str(i).encode(), value=str(i).encode())
    assert p.flush(30) == 0
    return name


def check_shares(assignments: list[set[int]], partitions: int = PARTITIONS) -> None:
    union = set().union(*assignments)
    assert union == set(range(partitions)), assignments
    assert sum(len(a) for a in assignments) == partitions, f"overlapping assignments {assignments}"
    assert all(assignments), f"a member got nothing: {assignments}"


def committed_ck(bs: str, group: str, topic: str, partitions: int = PARTITIONS) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        got = c.committed([CkTopicPartition(topic, i) for i in range(partitions)], timeout=15)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


def end_offsets(bs: str, topic: str, partitions: int = PARTITIONS) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": "offsets-probe"})
    try:
        return {i: c.get_watermark_offsets(CkTopicPartition(topic, i), timeout=10)[1] for i in range(partitions)}
    finally:
        c.close()


# ------------------------------------------------------------------ three client libraries
def test_confluent_kafka_group_shares_and_commits(cluster):
    bs, topic, group = bootstrap(cluster), new_topic(cluster), "ck-group"
    ends = end_offsets(bs, topic)
    seen: set[tuple[int, int]] = set()
    assignments: list[set[int]] = [set(), set(), set()]
    caught_up = [False, False, False]  # read its own share to the end
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def member(i: int) -> None:
        c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 200})
        try:
            c.subscribe([topic])
            while not stop.is_set():  # every member keeps polling, so every rebalance completes
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    with lock:
                        seen.add((m.partition(), m.offset()))
                mine = c.assignment()
                with lock:
                    assignments[i] = {tp.partition for tp in mine}
                    caught_up[i] = bool(mine) and all(p.offset == ends[p.partition] for p in c.position(mine))
            c.commit(asynchronous=False)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    try:
        def settled() -> bool:
            with lock:
                sizes = sorted(len(a) for a in assignments)
                return len(seen) == RECORDS and sizes == [2, 2, 2] and all(caught_up)
        wait_for(settled, 60, what="three members sharing six partitions, every record read")
        with lock:
            shares = [set(a) for a in assignments]
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not errors, errors
    check_shares(shares)
    assert committed_ck(bs, group, topic) == ends


#: one kafka-python group member, a process of its own (three members and their heartbeat
#: threads in the test's process starved each other of the GIL on a loaded machine): it
#: polls until the file `stop` appears, writing its assignment and whether it has read that
#: share to the end (`ends`) to `<i>.json` as it goes, then commits, writes what it read to
#: `<i>.final` and leaves once the file `close` appears
KAFKA_PYTHON_MEMBER = textwrap.dedent("""
    import json, logging, os, sys, time
    from kafka import KafkaConsumer
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("kafka.coordinator").setLevel(logging.INFO)  # joins, syncs, heartbeat errors
    bs, topic, group, i, where, ends = sys.argv[1:7]
    ends = {int(p): o for p, o in json.loads(ends).items()}
    c = KafkaConsumer(bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=300,
                      metadata_max_age_ms=2000)
    seen, deadline = set(), time.monotonic() + 150
    c.subscribe([topic])
    # One metadata update after subscribing, before the first join. kafka-python 3.0.12 loses a
    # rebalance it starts itself because the leader's snapshot of the subscription's partitions
    # changed (the snapshot taken before the first update after `subscribe` is empty): that path
    # leaves `rejoin_needed` False and the assignment makes the snapshots equal, so a poll whose
    # timer ends while the SyncGroup is in flight never looks at the join again -- the member got
    # its answer, never applies it and never heartbeats. Seen here with kafka-python's wire log:
    # SyncGroup answered NONE in 35 ms, the broker's group stable, the member silent for good
    # (dpkp/kafka-python#2855 chases the same symptom). `topics()` fetches metadata, which
    # rebuilds the snapshot, so the first assignment's snapshot is already the whole topic; a leader
    # still rejoins on its own at times, so each poll also lasts long enough for a join to finish.
    while topic not in c.topics() and time.monotonic() < deadline:
        time.sleep(0.1)
    def report(name, **extra):
        tmp = os.path.join(where, name + ".tmp")
        with open(tmp, "w") as f:
            json.dump({"assignment": sorted(tp.partition for tp in c.assignment()), **extra}, f)
        os.replace(tmp, os.path.join(where, name))
    while not os.path.exists(os.path.join(where, "stop")) and time.monotonic() < deadline:
        for tp, msgs in c.poll(timeout_ms=1000).items():  # long enough for a join to finish within it (above)
            seen.update((tp.partition, m.offset) for m in msgs)
        mine = c.assignment()
        report(f"{i}.json", caught_up=bool(mine) and all(c.position(tp) == ends[tp.partition] for tp in mine))
    c.commit()
    report(f"{i}.final", seen=sorted(seen))
    while not os.path.exists(os.path.join(where, "close")) and time.monotonic() < deadline:
        time.sleep(0.1)  # no member leaves (a rebalance) before every member has committed
    c.close()
""")


def test_kafka_python_group_shares_and_commits(cluster, tmp_path):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition

    bs, topic, group = bootstrap(cluster), new_topic(cluster), "kp-group"
    ends = end_offsets(bs, topic)
    args = [bs, topic, group]
    members = [subprocess.Popen([sys.executable, "-c", KAFKA_PYTHON_MEMBER, *args, str(i), str(tmp_path),
                                 json.dumps(ends)], stdout=subprocess.DEVNULL, stderr=open(tmp_path / f"{i}.log", "w"))
               for i in range(3)]

    def state(name: str) -> dict | None:
        try:
            return json.loads((tmp_path / name).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def logs() -> str:  # each member's own account (kafka-python's coordinator at INFO), and the coordinator's
        members = [f"--- member {i}:\n" + (tmp_path / f"{i}.log").read_text()[-3000:] for i in range(3)]
        coordinator = [line for b in cluster.load().brokers.values() if b.log_path.exists()
                       for line in b.log_path.read_text(errors="replace").splitlines() if group in line]
        return "\n".join([*members, "--- the brokers' lines about the group:", *coordinator[-40:]])

    try:
        def settled() -> bool:
            states = [state(f"{i}.json") for i in range(3)]
            return all(s is not None and len(s["assignment"]) == 2 and s["caught_up"] for s in states)
        try:
            wait_for(settled, 120, what="three kafka-python members sharing six partitions, each caught up")
        except AssertionError as e:
            raise AssertionError(f"{e}\nstates: {[state(f'{i}.json') for i in range(3)]}\n{logs()}") from None
        shares = [set(state(f"{i}.json")["assignment"]) for i in range(3)]
        (tmp_path / "stop").touch()
        wait_for(lambda: all(state(f"{i}.final") for i in range(3)) or any(m.poll() is not None for m in members),
                 60, what="every member to commit")
        (tmp_path / "close").touch()
        for m in members:
            m.wait(60)
    finally:
        for m in members:
            if m.poll() is None:
                m.kill()
                m.wait()
    finals = [state(f"{i}.final") for i in range(3)]
    assert all(finals), logs()
    assert len({tuple(o) for f in finals for o in f["seen"]}) == RECORDS, logs()
    check_shares(shares)
    reader = KafkaConsumer(bootstrap_servers=bs, group_id=group, enable_auto_commit=False)
    try:
        got = {i: reader.committed(KpTopicPartition(topic, i)) for i in range(PARTITIONS)}
    finally:
        reader.close()
    assert got == ends


def test_aiokafka_group_shares_and_commits(cluster):
    from aiokafka import AIOKafkaConsumer

    bs, topic, group = bootstrap(cluster), new_topic(cluster), "aio-group"

    async def run() -> list[set[int]]:
        consumers = [AIOKafkaConsumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                                      enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=200)
                     for _ in range(3)]
        seen: set[tuple[int, int]] = set()
        for c in consumers:
            await c.start()
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                for c in consumers:
                    for tp, msgs in (await c.getmany(timeout_ms=100)).items():
                        seen.update((tp.partition, m.offset) for m in msgs)
                if len(seen) >= RECORDS and all(len(c.assignment()) == 2 for c in consumers):
                    break
            assert len(seen) == RECORDS
            shares = [{tp.partition for tp in c.assignment()} for c in consumers]
            for c in consumers:
                await c.commit()
            return shares
        finally:
            for c in consumers:
                await c.stop()

    check_shares(asyncio.run(run()))
    assert committed_ck(bs, group, topic) == end_offsets(bs, topic)


def test_kcat_balanced_consumer(cluster):
    bs, topic = bootstrap(cluster), new_topic(cluster, records=100)
    out = subprocess.run(
        ["kcat", "-b", bs, "-G", "kcat-group", "-o", "beginning", "-c", "100", "-f", "%p:%o\\n", "-q",
         "-X", "session.timeout.ms=6000", topic],
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert len(set(out.stdout.split())) == 100


# ------------------------------------------------------------------ failures
MEMBER_SCRIPT = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    bs, group, topic, instance = sys.argv[1:5]
    conf = {"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
            "session.timeout.ms": 3000, "heartbeat.interval.ms": 200}
    if instance != "-":
        conf["group.instance.id"] = instance
    c = Consumer(conf)
    c.subscribe([topic])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        c.poll(0.2)
        print("assigned", sorted(tp.partition for tp in c.assignment()), flush=True)
""")


def start_member(bs: str, group: str, topic: str, instance: str = "-") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", MEMBER_SCRIPT, bs, group, topic, instance],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def describe(bs: str, group: str):
    admin = AdminClient({"bootstrap.servers": bs})
    return admin.describe_consumer_groups([group])[group].result(15)


def test_killed_member_partitions_move_after_session_timeout(cluster):
    bs, topic, group = bootstrap(cluster), new_topic(cluster, records=10), "kill-group"
    victim = start_member(bs, group, topic)
    survivor = Consumer({"bootstrap.servers": bs, "group.id": group, "session.timeout.ms": 3000,
                         "heartbeat.interval.ms": 200, "auto.offset.reset": "earliest"})
    try:
        survivor.subscribe([topic])

        def survivor_has(n: int) -> bool:
            survivor.poll(0.2)
            return len(survivor.assignment()) == n
        wait_for(lambda: survivor_has(3) and len(describe(bs, group).members) == 2, 60, what="two members, 3+3")
        os.killpg(victim.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        wait_for(lambda: survivor_has(PARTITIONS), 30, what="the survivor owning every partition")
        assert time.monotonic() - killed_at >= 2.0, "moved before the session timeout"
    finally:
        stop(victim)
        survivor.close()


def test_static_member_restart_causes_no_rebalance(cluster):
    bs, topic, group = bootstrap(cluster), new_topic(cluster, records=10), "static-group"
    first = start_member(bs, group, topic, instance="inst-1")
    other = start_member(bs, group, topic, instance="inst-2")
    try:
        def owners() -> dict[str, set[int]] | None:
            d = describe(bs, group)
            got = {m.group_instance_id: {tp.partition for tp in m.assignment.topic_partitions} for m in d.members}
            whole = d.state.name == "STABLE" and len(got) == 2 and set().union(*got.values()) == set(range(PARTITIONS))
            return got if whole else None
        owners_before = wait_for(owners, 60, what="a stable group of two static members sharing the topic")
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        first = start_member(bs, group, topic, instance="inst-1")
        wait_for(lambda: any(line.startswith("assigned [") and line.strip() != "assigned []"
                             for line in [first.stdout.readline()]), 30, what="the restarted member's assignment")
        assert owners() == owners_before
    finally:
        stop(first)
        stop(other)


def find_coordinator(bs: str, group: str) -> tuple[int, str, int]:
    """(node id, host, port) of the group's coordinator, once there is one (the first
    lookup creates __consumer_offsets and is answered COORDINATOR_NOT_AVAILABLE meanwhile)."""
    return wait_for(lambda: _find_ok(bs, group), 30, what=f"a coordinator for {group}")


def test_coordinator_killed_while_members_commit_loses_no_commit(cluster):
    bs, topic, group = bootstrap(cluster), new_topic(cluster, records=300), "failover-group"
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 10000, "heartbeat.interval.ms": 200})
    acked: dict[int, int] = {}
    coordinator_id = find_coordinator(bs, group)[0]
    try:
        c.subscribe([topic])
        killed = False
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and sum(acked.values()) < 300:
            m = c.poll(0.2)
            if m is None or m.error() is not None:
                continue
            try:
                for tp in c.commit(message=m, asynchronous=False):
                    if tp.error is None:
                        acked[tp.partition] = max(acked.get(tp.partition, 0), tp.offset)
            except Exception:  # noqa: BLE001 - a commit refused during failover is retried by the next one
                pass
            if not killed and sum(acked.values()) >= 100:
                cluster.kill_broker(coordinator_id)
                killed = True
        assert killed
        assert sum(acked.values()) >= 300 - PARTITIONS
        assert find_coordinator(bs, group)[0] != coordinator_id
    finally:
        c.close()
        cluster.start_broker(coordinator_id)
    committed = committed_ck(bs, group, topic)
    for p, offset in acked.items():
        assert committed[p] >= offset, f"partition {p}: acknowledged {offset}, committed {committed[p]}"


# ------------------------------------------------------------------ bad input
class GroupClient:
    """A raw connection to a group's coordinator, to send what a well-behaved client would not."""

    def __init__(self, bs: str, group: str):
        _, host, port = wait_for(lambda: _find_ok(bs, group), 30, what="a coordinator")
        self.conn = BrokerConnection(host, port, timeout=30)
        self.group = group

    def join(self, member_id: str = "", protocol_type: str = "consumer", instance: str | None = None,
             protocols=(("range", b"meta"),), version: int = 5):
        req = JoinGroupRequest(group_id=self.group, session_timeout_ms=6000, rebalance_timeout_ms=3000,
                               member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
                               protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m)
                                          for n, m in protocols], reason=None)
        return self.conn.send(req, version)

    def sync(self, generation: int, member_id: str, instance: str | None = None):
        req = SyncGroupRequest(group_id=self.group, generation_id=generation, member_id=member_id,
                               group_instance_id=instance, protocol_type=None, protocol_name=None,
                               assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id,
                                                                                        assignment=b"a")])
        return self.conn.send(req, 3)

    def heartbeat(self, generation: int, member_id: str, instance: str | None = None):
        return self.conn.send(HeartbeatRequest(group_id=self.group, generation_id=generation, member_id=member_id,
                                               group_instance_id=instance), 3).error_code

    def commit(self, topic: str, generation: int = -1, member_id: str = ""):
        T = OffsetCommitRequest.OffsetCommitRequestTopic
        req = OffsetCommitRequest(group_id=self.group, generation_id_or_member_epoch=generation, member_id=member_id,
                                  group_instance_id=None, retention_time_ms=-1, topics=[T(name=topic, partitions=[
                                      T.OffsetCommitRequestPartition(partition_index=0, committed_offset=5,
                                                                     committed_leader_epoch=-1,
                                                                     committed_metadata="")])])
        return self.conn.send(req, 7).topics[0].partitions[0].error_code

    def close(self) -> None:
        self.conn.close()


def _find_ok(bs: str, group: str):
    """Ask the first broker of `bs` that answers (a test may have killed one)."""
    for addr in bs.split(","):
        host, port = addr.split(":")
        try:
            with BrokerConnection(host, int(port)) as conn:
                r = conn.send(FindCoordinatorRequest(key=group, key_type=0), 3)
        except BrokerConnectionError:
            continue
        return (r.node_id, r.host, r.port) if r.error_code == 0 else None
    return None


def joined_member(g: GroupClient, instance: str | None = None):
    first = g.join(instance=instance)
    if first.error_code == ErrorCode.MEMBER_ID_REQUIRED:
        first = g.join(member_id=first.member_id, instance=instance)
    assert first.error_code == 0, first
    return first


def test_bad_group_requests_get_kafkas_errors(cluster):
    bs = bootstrap(cluster)
    topic = new_topic(cluster, records=1)
    g = GroupClient(bs, f"bad-{uuid.uuid4().hex[:6]}")
    try:
        assert g.join(member_id="nobody").error_code == ErrorCode.UNKNOWN_MEMBER_ID
        first = g.join()
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        assert first.member_id
        joined = g.join(member_id=first.member_id)
        assert joined.error_code == 0
        assert joined.leader == first.member_id
        assert joined.generation_id == 1
        assert g.sync(joined.generation_id, first.member_id).error_code == 0
        assert g.heartbeat(joined.generation_id, first.member_id) == 0
        assert g.heartbeat(joined.generation_id - 1, first.member_id) == ErrorCode.ILLEGAL_GENERATION
        assert g.heartbeat(joined.generation_id, "stranger") == ErrorCode.UNKNOWN_MEMBER_ID
        assert g.sync(joined.generation_id + 5, first.member_id).error_code == ErrorCode.ILLEGAL_GENERATION
        assert g.join(protocol_type="connect").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert g.join(protocols=(("other", b""),)).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert g.commit(topic, joined.generation_id, "stranger") == ErrorCode.UNKNOWN_MEMBER_ID
        assert g.commit(topic, joined.generation_id + 1, first.member_id) == ErrorCode.ILLEGAL_GENERATION
        assert g.commit("no-such-topic", joined.generation_id, first.member_id) == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert g.commit(topic, joined.generation_id, first.member_id) == 0
    finally:
        g.close()
    empty = BrokerConnection(*bs.split(",")[0].split(":")[:1], int(bs.split(",")[0].split(":")[1]))
    try:
        r = empty.send(FindCoordinatorRequest(key="", key_type=0), 3)
        assert r.error_code == ErrorCode.INVALID_GROUP_ID
    finally:
        empty.close()


def test_static_member_id_reused_fences_the_older_process(cluster):
    bs = bootstrap(cluster)
    group = f"static-{uuid.uuid4().hex[:6]}"
    old, new = GroupClient(bs, group), GroupClient(bs, group)
    try:
        first = joined_member(old, instance="shared-instance")
        assert old.sync(first.generation_id, first.member_id, "shared-instance").error_code == 0
        second = new.join(instance="shared-instance")
        assert second.error_code == 0
        assert second.member_id != first.member_id
        assert old.heartbeat(first.generation_id, first.member_id, "shared-instance") == \
            ErrorCode.FENCED_INSTANCE_ID
        assert new.heartbeat(second.generation_id, second.member_id, "shared-instance") == 0
    finally:
        old.close()
        new.close()


def test_offsets_topic_is_internal_compacted_and_where_kafka_puts_groups(cluster):
    bs = bootstrap(cluster)
    node_id = find_coordinator(bs, "where-am-i")[0]
    admin = AdminClient({"bootstrap.servers": bs})
    md = admin.list_topics(OFFSETS_TOPIC, timeout=10)
    partition = md.topics[OFFSETS_TOPIC].partitions[partition_for("where-am-i", 50)]
    assert len(md.topics[OFFSETS_TOPIC].partitions) == 50
    assert partition.leader == node_id
    assert partition_for("hello", 50) == 99162322 % 50  # "hello".hashCode() in Java
    assert md.topics[OFFSETS_TOPIC].error is None
    from kafka import KafkaAdminClient
    kp = KafkaAdminClient(bootstrap_servers=bs)
    try:
        described = kp.describe_topics([OFFSETS_TOPIC])[0]
    finally:
        kp.close()
    assert described["is_internal"] is True
    p = Producer({"bootstrap.servers": bs, "message.timeout.ms": 5000, "retries": 0})
    outcome = []
    p.produce(OFFSETS_TOPIC, value=b"forged", partition=0, on_delivery=lambda err, msg: outcome.append(err))
    p.flush(10)
    assert outcome
    assert outcome[0] is not None
    assert outcome[0].code() == 17  # INVALID_TOPIC_EXCEPTION


def poll_until(consumers, predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.05)
        if predicate():
            return
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def test_clean_leave_rebalances_at_once(cluster):
    bs, topic, group = bootstrap(cluster), new_topic(cluster, records=10), "leave-group"
    conf = {"bootstrap.servers": bs, "group.id": group, "session.timeout.ms": 45000, "heartbeat.interval.ms": 200}
    a, b = Consumer(conf), Consumer(conf)
    try:
        a.subscribe([topic])
        b.subscribe([topic])
        poll_until([a, b], lambda: len(a.assignment()) == len(b.assignment()) == 3, 60, "3+3")
        b.close()
        left_at = time.monotonic()
        poll_until([a], lambda: len(a.assignment()) == PARTITIONS, 30, "the remaining member owning all")
        assert time.monotonic() - left_at < 20, "waited for the session timeout instead of the LeaveGroup"
    finally:
        a.close()


def test_cooperative_sticky_moves_only_what_must_move(cluster):
    bs, topic, group = bootstrap(cluster), new_topic(cluster, records=10), "coop-group"
    revoked: list[set[int]] = [set(), set(), set()]

    def member(i: int) -> Consumer:
        c = Consumer({"bootstrap.servers": bs, "group.id": group, "session.timeout.ms": 6000,
                      "heartbeat.interval.ms": 200, "partition.assignment.strategy": "cooperative-sticky"})
        c.subscribe([topic], on_revoke=lambda _c, tps: revoked[i].update(tp.partition for tp in tps))
        return c

    a, b = member(0), member(1)
    c = None
    try:
        poll_until([a, b], lambda: len(a.assignment()) == len(b.assignment()) == 3, 60, "3+3")
        before = ({tp.partition for tp in a.assignment()}, {tp.partition for tp in b.assignment()})
        for r in revoked:  # forget what moved while the first two formed the group (which joined first varies)
            r.clear()
        c = member(2)
        poll_until([a, b, c], lambda: all(len(x.assignment()) == 2 for x in (a, b, c)), 60, "2+2+2")
        after_a, after_b = {tp.partition for tp in a.assignment()}, {tp.partition for tp in b.assignment()}
        assert after_a <= before[0], "a partition moved between the old members"
        assert after_b <= before[1], "a partition moved between the old members"
        assert revoked[0] == before[0] - after_a
        assert revoked[1] == before[1] - after_b
        assert {tp.partition for tp in c.assignment()} == revoked[0] | revoked[1]
    finally:
        for x in (a, b, c):
            if x is not None:
                x.close()


def test_standalone_consumer_commits_and_figures_count_them(cluster):
    from praha.testing.cluster import scrape_metrics

    bs, topic, group = bootstrap(cluster), new_topic(cluster, records=10), "standalone-group"
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    try:
        c.assign([CkTopicPartition(topic, 0, 0)])  # no subscribe: generation -1, no member id
        c.commit(offsets=[CkTopicPartition(topic, 0, 4), CkTopicPartition(topic, 1, 2)], asynchronous=False)
    finally:
        c.close()
    got = committed_ck(bs, group, topic)
    assert (got[0], got[1], got[2]) == (4, 2, -1001)  # -1001: librdkafka's "no committed offset"
    figures = [scrape_metrics(b.actual_metrics_port) for b in cluster.load().brokers.values()]
    assert sum(f.get("praha_broker_group_offset_commits_total", 0) for f in figures) >= 1
    assert sum(f.get("praha_broker_group_coordinator_partitions", 0) for f in figures) == 50
    import urllib.request
    text = "".join(urllib.request.urlopen(f"http://127.0.0.1:{b.actual_metrics_port}/metrics",
                                          timeout=5).read().decode()
                   for b in cluster.load().brokers.values())
    per_partition = [line for line in text.splitlines() if line.startswith("praha_group_coordinator_load_time_ms{")]
    assert len(per_partition) == 50  # every __consumer_offsets partition, on the broker leading it


def test_admin_clients_list_describe_alter_and_delete_groups(cluster):
    from confluent_kafka import ConsumerGroupTopicPartitions
    from kafka import KafkaAdminClient

    bs, topic = bootstrap(cluster), new_topic(cluster, records=10)
    group = f"admin-{uuid.uuid4().hex[:6]}"
    member = Consumer({"bootstrap.servers": bs, "group.id": group, "session.timeout.ms": 6000,
                       "heartbeat.interval.ms": 200, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    admin = AdminClient({"bootstrap.servers": bs})
    kp = KafkaAdminClient(bootstrap_servers=bs)
    try:
        member.subscribe([topic])
        poll_until([member], lambda: len(member.assignment()) == PARTITIONS, 60, "an assignment")
        member.commit(offsets=[CkTopicPartition(topic, 0, 3)], asynchronous=False)
        listed = admin.list_consumer_groups(states=set()).result(15)
        assert group in {g.group_id for g in listed.valid}
        d = admin.describe_consumer_groups([group])[group].result(15)
        assert d.state.name == "STABLE"
        assert len(d.members) == 1
        assert d.partition_assignor == "range"
        assert {tp.partition for tp in d.members[0].assignment.topic_partitions} == set(range(PARTITIONS))
        assert (group, "consumer") in [(g["group_id"], g["protocol_type"]) for g in kp.list_groups()]
        assert kp.describe_groups([group])[group]["group_state"] == "Stable"
        # kafka-python's admin does not retry NOT_COORDINATOR (Java's does): the group's coordinator
        # can move while earlier tests' restarted brokers take their preferred leaderships back
        kp_offsets = wait_for(lambda: kp.list_group_offsets({group: None})[group], 60,
                              what="kafka-python's OffsetFetch answered by the group's coordinator")
        assert [(tp.partition, o.offset) for tp, o in kp_offsets.items()] == [(0, 3)]
        # an active group: Kafka refuses to delete it and to alter its offsets from outside
        refused = admin.delete_consumer_groups([group])[group]
        with pytest.raises(Exception, match="NON_EMPTY_GROUP|not empty"):
            refused.result(15)
        member.close()
        member = None
        altered = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [CkTopicPartition(topic, 1, 7)])])[group].result(15)
        assert altered.topic_partitions[0].error is None
        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(15)
        assert {tp.partition: tp.offset for tp in offsets.topic_partitions} == {0: 3, 1: 7}
        assert kp.delete_groups([group]) == {group: "OK"}
        assert group not in {g.group_id for g in admin.list_consumer_groups().result(15).valid}
        assert admin.describe_consumer_groups([group])[group].result(15).state.name == "DEAD"
    finally:
        if member is not None:
            member.close()
        kp.close()


def test_over_long_group_id_is_refused(cluster):
    bs = bootstrap(cluster)
    host, port = bs.split(",")[0].split(":")
    long_id = "g" * 40000  # only a flexible (compact-string) request can carry it
    with BrokerConnection(host, int(port)) as conn:
        r = conn.send(FindCoordinatorRequest(key=long_id, key_type=0), 3)
        assert r.error_code == ErrorCode.INVALID_GROUP_ID
        assert "32767" in r.error_message
        _, chost, cport = find_coordinator(bs, "short")
    with BrokerConnection(chost, cport) as conn:
        req = JoinGroupRequest(group_id=long_id, session_timeout_ms=6000, rebalance_timeout_ms=3000, member_id="",
                               group_instance_id=None, protocol_type="consumer", reason=None,
                               protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])
        assert conn.send(req, 6).error_code == ErrorCode.INVALID_GROUP_ID
