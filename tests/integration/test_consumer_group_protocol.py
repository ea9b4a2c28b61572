"""Kafka 4's consumer group protocol (KIP-848, issue 22) with unmodified confluent-kafka
consumers (`group.protocol=consumer`) on a 3-broker cluster, one cluster for the module.

Members run as separate processes (so one can be SIGKILLed) and report, from their own
rebalance callbacks, every partition assigned and revoked with a timestamp of the machine's
monotonic clock, and every record they consumed and committed. The checks are on those
reports: no partition owned by two members at any instant, every record committed exactly once.
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
from confluent_kafka import Consumer, ConsumerGroupType, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.protocol.errors import BrokerConnectionError
from praha.protocol.messages.gen.groups import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
)
from praha.protocol.messages.gen.metadata import FindCoordinatorRequest
from praha.testing.cluster import bootstrap, wait_for

# slow (a cluster and member processes, minutes): `make test-consumer-protocol`
pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITIONS = 6
SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "500",
    "offsets.commit.timeout.ms": "5000",
}


@pytest.fixture(scope="module")
def cluster(module_cluster):
    return module_cluster(3, SETTINGS, store=False).cluster


def new_topic(bs: str, partitions: int = PARTITIONS, name: str | None = None) -> str:
    name = name or f"k-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    return name


MEMBER = textwrap.dedent("""
    import json, signal, sys, time
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    bs, group, spec, extra = sys.argv[1:5]
    conf = {"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    conf.update(json.loads(extra))
    def say(*parts):
        print(json.dumps([time.monotonic(), *parts]), flush=True)
    # records read but not yet committed, by partition: a commit refused (STALE_MEMBER_EPOCH while
    # the member takes its new epoch) is tried again after the next poll, while the partition is ours
    pending = {}
    def give_up(tps):
        # read but not committed: the partition's next owner reads them again (maybe this member,
        # when one poll revokes and assigns it back: it then starts again at the committed offset)
        for tp in tps:
            if (tp.topic, tp.partition) in pending:
                say("dropped", tp.topic, tp.partition, sorted(pending.pop((tp.topic, tp.partition))))
    def on_assign(c, tps):
        say("assign", [[tp.topic, tp.partition] for tp in tps])
    def on_revoke(c, tps):
        give_up(tps)
        say("revoke", [[tp.topic, tp.partition] for tp in tps])
    def on_lost(c, tps):
        give_up(tps)
        say("lost", [[tp.topic, tp.partition] for tp in tps])
    c = Consumer(conf)
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    c.subscribe(spec.split(",") if not spec.startswith("^") else [spec], on_assign=on_assign,
                on_revoke=on_revoke, on_lost=on_lost)
    say("started")
    def commit(tp):
        t, p = tp
        upto = max(pending[tp])
        try:
            c.commit(offsets=[TopicPartition(t, p, upto + 1)], asynchronous=False)
        except KafkaException as e:
            say("commit-failed", t, p, upto, str(e))
            return
        for o in sorted(pending.pop(tp)):
            say("ok", t, p, o)
    deadline = time.monotonic() + 240
    while not stop and time.monotonic() < deadline:
        m = c.poll(0.1)
        mine = {(tp.topic, tp.partition) for tp in c.assignment()}
        for tp in [tp for tp in pending if tp not in mine]:
            say("dropped", *tp, sorted(pending.pop(tp)))  # no longer ours: the next owner reads them again
        if m is not None and m.error() is not None:
            say("error", str(m.error()))
        elif m is not None:
            say("got", m.topic(), m.partition(), m.offset())
            pending.setdefault((m.topic(), m.partition()), []).append(m.offset())
        for tp in list(pending):
            commit(tp)
    c.close()
    say("closed")
""")


class Member:
    """One consumer process and what it reported."""

    def __init__(self, bs: str, group: str, topics: str, **conf: object):
        self.events: list[list] = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen([sys.executable, "-c", MEMBER, bs, group, topics, json.dumps(conf)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     start_new_session=True)
        self.killed_at: float | None = None
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

    def owned(self) -> set[tuple[str, int]]:
        """What the member holds now, by its own callbacks."""
        held: set[tuple[str, int]] = set()
        with self.lock:
            for _, kind, *rest in self.events:
                if kind == "assign":
                    held |= {tuple(tp) for tp in rest[0]}
                elif kind in ("revoke", "lost"):
                    held -= {tuple(tp) for tp in rest[0]}
        return held

    def records(self, kind: str) -> list[tuple[str, int, int]]:
        with self.lock:
            return [tuple(e[2:5]) for e in self.events if e[1] == kind]

    def intervals(self) -> list[tuple[tuple[str, int], float, float]]:
        """(partition, from, to) of every ownership, from the callbacks; open ones end now
        (or when the process was killed)."""
        return [(tp, a, b) for tp, a, b, _ in self.spans()]

    def spans(self) -> list[tuple[tuple[str, int], float, float, str]]:
        """`intervals` with how each ended: revoke, lost (the member was fenced), killed or open."""
        out = []
        since: dict[tuple[str, int], float] = {}
        with self.lock:
            events = list(self.events)
        for t, kind, *rest in events:
            if kind == "assign":
                for tp in rest[0]:
                    since[tuple(tp)] = t
            elif kind in ("revoke", "lost"):
                for tp in rest[0]:
                    if tuple(tp) in since:
                        out.append((tuple(tp), since.pop(tuple(tp)), t, kind))
        end = self.killed_at if self.killed_at is not None else time.monotonic()
        out += [(tp, t, end, "killed" if self.killed_at is not None else "open") for tp, t in since.items()]
        return out

    def around(self, t: float, window: float = 3.0) -> list[list]:
        """The member's callbacks and errors within `window` seconds of `t` (a failure's evidence)."""
        with self.lock:
            return [e for e in self.events if abs(e[0] - t) <= window and e[1] not in ("got", "ok")]

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)

    def kill(self) -> None:
        self.killed_at = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def assert_never_owned_twice(members: list[Member]) -> None:
    spans = [(tp, a, b, end, i) for i, m in enumerate(members) for tp, a, b, end in m.spans()]
    for tp, a, b, end, i in spans:
        for tp2, a2, b2, end2, j in spans:
            if i < j and tp == tp2:
                assert b <= a2 or b2 <= a, (
                    f"{tp} owned by members {i} and {j} at once: {a}-{b} (ended by {end}) and {a2}-{b2} "
                    f"(ended by {end2}); member {i} around then: {members[i].around(max(a, a2))}; "
                    f"member {j}: {members[j].around(max(a, a2))}")


def produce(bs: str, topic: str, n: int, per_second: float) -> threading.Thread:
    def run() -> None:
        # idempotent: a retried request under load must not write a record twice (offsets are checked)
        p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5, "enable.idempotence": True})
        for i in range(n):
            p.produce(topic, key=str(i).encode(), value=str(i).encode(), partition=i % PARTITIONS)
            p.poll(0)
            time.sleep(1 / per_second)
        assert p.flush(60) == 0
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def summary(members: list[Member]) -> str:
    """What each member did, for a failure's message."""
    out = []
    for i, m in enumerate(members):
        with m.lock:
            kinds: dict[str, int] = {}
            for e in m.events:
                kinds[e[1]] = kinds.get(e[1], 0) + 1
            odd = [e for e in m.events if e[1] in ("error", "commit-failed", "assign", "revoke", "lost",
                                                   "dropped")][-12:]
        out.append(f"member {i}: {kinds} owned={sorted(m.owned())} last={odd}")
    return "; ".join(out)


def shares(members: list[Member]) -> list[int]:
    return sorted(len(m.owned()) for m in members)


# ------------------------------------------------------------------ the group's life
def test_members_leave_die_and_join_without_owning_a_partition_twice_or_losing_a_record(cluster):
    bs = bootstrap(cluster)
    topic, group, total = new_topic(bs), f"g-{uuid.uuid4().hex[:6]}", 900
    members = [Member(bs, group, topic) for _ in range(3)]
    a, b, c = members
    try:
        producer = produce(bs, topic, total, per_second=60)
        wait_for(lambda: shares(members) == [2, 2, 2], 90, what="three members with two partitions each")
        a.leave()  # clean leave (epoch -1): its partitions move at once
        wait_for(lambda: shares([b, c]) == [3, 3], 60, what="b and c with three partitions each")
        b.kill()  # SIGKILL: its partitions move after the session timeout
        d = Member(bs, group, topic)
        members.append(d)
        wait_for(lambda: shares([c, d]) == [3, 3] and not (b.owned() & (c.owned() | d.owned())) or
                 shares([c, d]) == [3, 3], 90, what="c and d with three partitions each")
        producer.join(120)
        # a record the SIGKILLed member read may have been committed just before the kill, without
        # its report: it counts as consumed (if its commit did not land, another member reads it again)
        committed = lambda: {r for m in members for r in m.records("ok")} | set(b.records("got"))  # noqa: E731
        try:
            wait_for(lambda: len(committed()) >= total, 120, what="every record consumed and committed")
        except AssertionError as e:
            ok = {r[1:] for r in committed()}
            missing = sorted({(i % PARTITIONS, i // PARTITIONS) for i in range(total)} - ok)[:10]
            got_by = {r: [i for i, m in enumerate(members) if r in {g[1:] for g in m.records("got")}] for r in missing}
            raise AssertionError(f"{e}: missing {got_by}; {summary(members)}") from None
        c.leave()
        d.leave()
    finally:
        for m in members:
            m.stop()
    ok = [r for m in members for r in m.records("ok")]
    assert len(ok) == len(set(ok)), "a record committed twice"
    in_flight = set(b.records("got")) - set(b.records("ok"))
    assert {r[1:] for r in set(ok) | in_flight} == {(i % PARTITIONS, i // PARTITIONS) for i in range(total)}
    assert_never_owned_twice(members)
    for m in members:  # a member read only what it owned at the time
        got = m.records("got")
        assert {(t, p) for t, p, _ in got} <= {tp for tp, _, _ in m.intervals()}


# ------------------------------------------------------------------ migration classic <-> consumer
CLASSIC = {"group.protocol": "classic", "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}


def group_type(admin: AdminClient, group: str) -> ConsumerGroupType | None:
    res = admin.list_consumer_groups().result(15)
    return {g.group_id: g.type for g in res.valid}.get(group)


def committed_total(bs: str, group: str, topic: str) -> int:
    from confluent_kafka import TopicPartition
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=15)
        return sum(max(tp.offset, 0) for tp in got)
    finally:
        c.close()


def test_a_classic_group_with_offsets_migrates_to_the_consumer_protocol_member_by_member_and_back(cluster):
    """Classic members a and b commit; consumer-protocol members c and d replace them one by one
    (the group upgraded online); classic members e and f join the consumer group, then c and d
    leave (the group downgraded when the last of them goes). Every record committed exactly once
    across all six members, no partition owned twice, the committed offsets intact at the end."""
    bs = bootstrap(cluster)
    topic, group, total = new_topic(bs), f"m-{uuid.uuid4().hex[:6]}", 1200
    admin = AdminClient({"bootstrap.servers": bs})
    members: list[Member] = []

    def start(**conf: object) -> Member:
        members.append(Member(bs, group, topic, **conf))
        return members[-1]

    def settled(live: list[Member]) -> bool:
        owned = [m.owned() for m in live]
        return sorted(len(o) for o in owned) == sorted(
            PARTITIONS // len(live) + (i < PARTITIONS % len(live)) for i in range(len(live))) and \
            len(set().union(*owned)) == PARTITIONS

    try:
        producer = produce(bs, topic, total, per_second=50)
        a, b = start(**CLASSIC), start(**CLASSIC)
        wait_for(lambda: settled([a, b]), 90, what="the classic members a and b sharing the topic")
        wait_for(lambda: len(a.records("ok")) + len(b.records("ok")) >= 60, 60, what="the classic group committing")
        assert group_type(admin, group) == ConsumerGroupType.CLASSIC
        c = start()  # the first consumer-protocol member: the group is upgraded
        wait_for(lambda: settled([a, b, c]), 90, what="a, b (classic) and c (consumer) sharing the topic")
        wait_for(lambda: group_type(admin, group) == ConsumerGroupType.CONSUMER, 30, what="the group upgraded")
        a.leave()
        d = start()
        wait_for(lambda: settled([b, c, d]), 90, what="b (classic), c and d sharing the topic")
        b.leave()
        wait_for(lambda: settled([c, d]), 90, what="c and d alone: every member on the new protocol")
        wait_for(lambda: c.records("ok") and d.records("ok"), 60, what="the new members committing")
        # and back: classic members join the consumer group; when the last of c and d leaves, it is classic again
        e, f = start(**CLASSIC), start(**CLASSIC)
        wait_for(lambda: settled([c, d, e, f]), 90, what="c, d and the classic e, f sharing the topic")
        c.leave()
        wait_for(lambda: settled([d, e, f]), 90, what="d, e and f sharing the topic")
        assert group_type(admin, group) == ConsumerGroupType.CONSUMER
        d.leave()
        wait_for(lambda: group_type(admin, group) == ConsumerGroupType.CLASSIC, 30, what="the group downgraded")
        wait_for(lambda: settled([e, f]), 90, what="e and f sharing the topic in the classic group")
        producer.join(120)
        committed = lambda: {r for m in members for r in m.records("ok")}  # noqa: E731
        try:
            wait_for(lambda: len(committed()) >= total, 120, what="every record consumed and committed")
        except AssertionError as err:
            raise AssertionError(f"{err}: {summary(members)}") from None
        e.leave()
        f.leave()
    finally:
        for m in members:
            m.stop()
    ok = [r for m in members for r in m.records("ok")]
    twice = {r: [i for i, m in enumerate(members) if r in m.records("ok")] for r in ok if ok.count(r) > 1}
    assert not twice, f"records committed twice (record: members): {twice}; {summary(members)}"
    assert {r[1:] for r in ok} == {(i % PARTITIONS, i // PARTITIONS) for i in range(total)}
    assert_never_owned_twice(members)
    assert all(m.records("ok") for m in members), summary(members)  # each member had its turn
    assert committed_total(bs, group, topic) == total  # the group's offsets went through both moves intact


def test_a_classic_member_in_a_consumer_group_that_never_syncs_is_fenced_by_its_rebalance_timeout(cluster):
    """Kafka's sync and join timers on a real broker: a classic member (the raw protocol) joins a
    consumer group with a 3 s rebalance timeout and a 30 s session, heartbeats every half second but
    never sends SyncGroup (nor rejoins when told REBALANCE_IN_PROGRESS): it is fenced although its
    session is kept alive, and the consumer-protocol member gets its partition back."""
    from tests.unit.coordinator.test_consumer_group_migration import subscription
    bs = bootstrap(cluster)
    topic, group = new_topic(bs, 2), f"t-{uuid.uuid4().hex[:6]}"
    m = Member(bs, group, topic)
    try:
        wait_for(lambda: len(m.owned()) == 2, 90, what="the consumer-protocol member owning both partitions")
        broker = cluster.load().brokers[coordinator_of(bs, group)]
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            def join(member_id: str):
                return conn.send(JoinGroupRequest(
                    group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=3000, member_id=member_id,
                    protocol_type="consumer",
                    protocols=[JoinGroupRequest.JoinGroupRequestProtocol("range", subscription([topic]))]), 5, 15)
            seen = len(m.events)
            first = join("")
            assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED, first
            joined = join(first.member_id)
            assert joined.error_code == ErrorCode.NONE, joined
            assert joined.generation_id > 0, joined
            beats: list[int] = []

            def beat() -> bool:  # its session stays alive; the answers say what became of it
                beats.append(conn.send(HeartbeatRequest(group_id=group, generation_id=joined.generation_id,
                                                        member_id=first.member_id), 4, 15).error_code)
                time.sleep(0.5)
                return beats[-1] == ErrorCode.UNKNOWN_MEMBER_ID
            def gave_up() -> bool:
                with m.lock:
                    return any(e[1] == "revoke" for e in m.events[seen:])
            wait_for(lambda: gave_up() or beat() and False, 60,
                     what="the consumer-protocol member giving a partition up for the classic one")
            wait_for(beat, 60, what="the classic member fenced without syncing")
        assert ErrorCode.REBALANCE_IN_PROGRESS in beats or ErrorCode.NONE in beats, beats  # it was a member
        wait_for(lambda: len(m.owned()) == 2, 60, what="the partition back with the consumer-protocol member")
    finally:
        m.stop()


# ------------------------------------------------------------------ coordinator failover
def coordinator_of(bs: str, group: str) -> int:
    def ask() -> int | None:
        for addr in bs.split(","):
            host, port = addr.split(":")
            try:
                with BrokerConnection(host, int(port)) as conn:
                    r = conn.send(FindCoordinatorRequest(key=group, key_type=0), 3)
            except BrokerConnectionError:
                continue
            return r.node_id if r.error_code == 0 else None
        return None
    return wait_for(ask, 60, what=f"a coordinator for {group}")


def test_coordinator_sigkilled_mid_reconciliation_keeps_the_members_epochs(cluster):
    bs = bootstrap(cluster)
    topic, group = new_topic(bs), f"f-{uuid.uuid4().hex[:6]}"
    coordinator = coordinator_of(bs, group)
    a, b = Member(bs, group, topic), Member(bs, group, topic)
    members = [a, b]
    try:
        wait_for(lambda: shares(members) == [3, 3], 90, what="a and b with three partitions each")
        seen = {id(m): len(m.events) for m in (a, b)}  # what happened before c came
        c = Member(bs, group, topic)
        members.append(c)
        wait_for(lambda: any(e[1] == "revoke" for m in (a, b) for e in m.events[seen[id(m)]:]), 60,
                 what="a or b told to revoke for c (reconciling)")
        cluster.kill_broker(coordinator)
        try:
            wait_for(lambda: shares(members) == [2, 2, 2], 120, what="the group finishing at 2+2+2 after the failover")
            assert coordinator_of(bs, group) != coordinator
        finally:
            cluster.start_broker(coordinator)
        for m in (a, b):  # no member was fenced: nothing lost, and each gave up only what c took
            with m.lock:
                assert not [e for e in m.events if e[1] == "lost"], m.events
                revoked = {tuple(tp) for e in m.events[seen[id(m)]:] if e[1] == "revoke" for tp in e[2]}
            assert len(revoked) == 1, f"a full rebalance: {revoked}"
    finally:
        for m in members:
            m.stop()
    assert_never_owned_twice(members)


# ------------------------------------------------------------------ regex
def test_regex_subscription_picks_up_a_new_topic_and_drops_a_deleted_one(cluster):
    bs = bootstrap(cluster)
    prefix = f"rx{uuid.uuid4().hex[:6]}"
    first = new_topic(bs, 2, f"{prefix}-a")
    m = Member(bs, f"{prefix}-g", f"^{prefix}-.*")
    admin = AdminClient({"bootstrap.servers": bs})
    try:
        wait_for(lambda: m.owned() == {(first, 0), (first, 1)}, 90, what="the regex member on the first topic")
        second = new_topic(bs, 3, f"{prefix}-b")
        wait_for(lambda: {t for t, _ in m.owned()} == {first, second} and len(m.owned()) == 5, 90,
                 what="the topic created after the member joined")
        admin.delete_topics([first])[first].result(30)
        wait_for(lambda: m.owned() == {(second, p) for p in range(3)}, 90, what="the deleted topic dropped")
    finally:
        m.stop()


# ------------------------------------------------------------------ admin
def test_admin_client_describes_and_lists_consumer_groups_by_type(cluster):
    bs = bootstrap(cluster)
    topic, group = new_topic(bs, 2), f"d-{uuid.uuid4().hex[:6]}"
    m = Member(bs, group, topic)
    classic = Consumer({"bootstrap.servers": bs, "group.id": f"{group}-classic", "session.timeout.ms": 6000})
    admin = AdminClient({"bootstrap.servers": bs})
    try:
        classic.subscribe([topic])
        wait_for(lambda: len(m.owned()) == 2, 90, what="the member owning both partitions")
        wait_for(lambda: classic.poll(0.2) is None and len(classic.assignment()) == 2, 60, what="the classic member")

        def described():
            d = admin.describe_consumer_groups([group])[group].result(15)
            return d if d.members and d.state.name == "STABLE" else None
        d = wait_for(described, 60, what="a stable described group")
        assert d.type == ConsumerGroupType.CONSUMER
        assert len(d.members) == 1
        assert {(tp.topic, tp.partition) for tp in d.members[0].assignment.topic_partitions} == m.owned()

        def listed(types):
            res = admin.list_consumer_groups(types=types).result(15)
            return {g.group_id: g.type for g in res.valid}
        consumers = wait_for(lambda: listed({ConsumerGroupType.CONSUMER}), 30, what="consumer groups listed")
        assert consumers.get(group) == ConsumerGroupType.CONSUMER
        assert f"{group}-classic" not in consumers
        wait_for(lambda: f"{group}-classic" in listed({ConsumerGroupType.CLASSIC}), 60, what="the classic group")
        assert group not in listed({ConsumerGroupType.CLASSIC})
        out = subprocess.run([sys.executable, "-m", "praha", "groups", "--list", "--type", "consumer", "--state",
                              "--bootstrap-server", bs], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[1:]}
        assert rows.get(group) == ["Consumer", "Stable"], out.stdout
        assert f"{group}-classic" not in rows, out.stdout
        out = subprocess.run([sys.executable, "-m", "praha", "groups", "--describe", "--group", group, "--members",
                              "--verbose", "--bootstrap-server", bs], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        header, row = [line.split() for line in out.stdout.splitlines() if line.strip()][:2]
        assert header[-4:] == ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"], out.stdout
        assert row[-4:] == [row[-4], f"{topic}(0,1)", row[-2], f"{topic}(0,1)"], out.stdout
        assert int(row[-4]) >= 1, out.stdout
    finally:
        m.stop()
        classic.close()


# ------------------------------------------------------------------ GROUP configs
def test_group_configs_override_the_brokers_with_kafkas_checks(cluster):
    """IncrementalAlterConfigs / DescribeConfigs on a GROUP resource (type 32): Kafka's errors for a
    bad value, the override reported as GROUP_CONFIG, and the group's next heartbeat answered with
    its own interval by whichever broker coordinates it."""
    from praha.protocol.messages.gen.admin import DescribeConfigsRequest, IncrementalAlterConfigsRequest
    bs = bootstrap(cluster)
    topic, group = new_topic(bs, 2), f"c-{uuid.uuid4().hex[:6]}"
    host, port = bs.split(",")[0].split(":")
    IA, DC = IncrementalAlterConfigsRequest, DescribeConfigsRequest

    def alter(validate_only: bool = False, **values: str):
        req = IA(resources=[IA.AlterConfigsResource(resource_type=32, resource_name=group, configs=[
            IA.AlterConfigsResource.AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v)
            for k, v in values.items()])], validate_only=validate_only)
        with BrokerConnection(host, int(port)) as conn:
            r = conn.send(req, 1).responses[0]
        return r.error_code, r.error_message

    def described() -> dict[str, tuple[str, int]]:
        with BrokerConnection(host, int(port)) as conn:
            r = conn.send(DC(resources=[DC.DescribeConfigsResource(resource_type=32, resource_name=group,
                                                                     configuration_keys=None)]), 4).results[0]
        assert r.error_code == 0, r.error_message
        return {c.name: (c.value, c.config_source) for c in r.configs if c.name.startswith("consumer.")}

    assert described() == {"consumer.session.timeout.ms": ("6000", 5), "consumer.heartbeat.interval.ms": ("500", 5)}
    cases = [
        (dict(consumer_heartbeat_interval_ms="100"), "must be greater than or equal to group.consumer.min.heartbeat"),
        (dict(consumer_session_timeout_ms="90000"), "must be less than or equal to group.consumer.max.session"),
        (dict(consumer_heartbeat_interval_ms="7000"), "consumer.session.timeout.ms must be greater than"),
        (dict(consumer_max_poll_records="5"), "Unknown group config name"),
        (dict(consumer_session_timeout_ms="soon"), "Not a number"),
    ]
    for values, message in cases:
        code, text = alter(**values)
        assert code == ErrorCode.INVALID_CONFIG, (values, code, text)
        assert message in (text or ""), (values, code, text)
    assert alter(validate_only=True, consumer_session_timeout_ms="50000") == (0, None)
    assert described()["consumer.session.timeout.ms"] == ("6000", 5)  # validate_only wrote nothing
    assert alter(consumer_session_timeout_ms="50000", consumer_heartbeat_interval_ms="7000") == (0, None)
    assert described() == {"consumer.session.timeout.ms": ("50000", 8), "consumer.heartbeat.interval.ms": ("7000", 8)}
    coordinator_of(bs, group)
    R = ConsumerGroupHeartbeatRequest

    def interval() -> int | None:
        for b in bs.split(","):
            h, p = b.split(":")
            with BrokerConnection(h, int(p)) as conn:
                r = conn.send(R(group_id=group, member_id=f"m-{uuid.uuid4().hex[:6]}", member_epoch=0,
                                rebalance_timeout_ms=30000, subscribed_topic_names=[topic], topic_partitions=[]), 1)
            if r.error_code != ErrorCode.NOT_COORDINATOR:
                assert r.error_code == 0, r
                return r.heartbeat_interval_ms if r.heartbeat_interval_ms == 7000 else None
        return None
    wait_for(interval, 30, what="the coordinator answering with the group's own heartbeat interval")


# ------------------------------------------------------------------ bad input
def test_bad_heartbeats_get_kafkas_errors_and_change_nothing(cluster):
    bs = bootstrap(cluster)
    topic, group = new_topic(bs, 2), f"b-{uuid.uuid4().hex[:6]}"
    other = f"{group}-other"
    coordinator_of(bs, group)
    R = ConsumerGroupHeartbeatRequest

    def send(**fields):
        base = dict(group_id=group, member_id="m-1", member_epoch=0, rebalance_timeout_ms=30000,
                    subscribed_topic_names=[topic], topic_partitions=[])
        base.update(fields)
        for b in bs.split(","):
            h, p = b.split(":")
            with BrokerConnection(h, int(p)) as conn:
                r = conn.send(R(**base), 1)
            if r.error_code != ErrorCode.NOT_COORDINATOR:
                return r
        raise AssertionError("no broker coordinates the group")

    ok = send()
    assert ok.error_code == 0
    assert ok.member_epoch == 1
    assert send(group_id=other, member_id="o-1").error_code == 0
    # the member's epoch now: the topic's metadata reaching the coordinator just after the join may
    # have given the group a new epoch (a heartbeat at epoch 1 then moves the member to it)
    before = send(member_epoch=1, subscribed_topic_names=None, rebalance_timeout_ms=-1, topic_partitions=None)
    assert before.error_code == 0
    epoch = before.member_epoch
    cases = [
        (ErrorCode.UNSUPPORTED_ASSIGNOR, dict(member_id="m-2", server_assignor="sticky")),
        (ErrorCode.INVALID_REGULAR_EXPRESSION, dict(member_id="m-2", subscribed_topic_names=None,
                                                    subscribed_topic_regex="(?=t)")),
        (ErrorCode.FENCED_MEMBER_EPOCH, dict(member_epoch=epoch + 5, topic_partitions=None)),
        (ErrorCode.UNKNOWN_MEMBER_ID, dict(member_id="o-1", member_epoch=1)),  # a member of the other group
        (ErrorCode.INVALID_REQUEST, dict(member_id="m-2", rebalance_timeout_ms=-1)),  # malformed first heartbeat
        (ErrorCode.INVALID_REQUEST, dict(member_epoch=-5)),
        (ErrorCode.GROUP_ID_NOT_FOUND, dict(group_id=f"{group}-none", member_epoch=3)),
    ]
    for code, fields in cases:
        got = send(**fields)
        assert got.error_code == code, (code, fields, got)
    OC = OffsetCommitRequest
    P = OC.OffsetCommitRequestTopic.OffsetCommitRequestPartition

    def commit(epoch: int) -> int:
        req = OC(group_id=group, generation_id_or_member_epoch=epoch, member_id="m-1",
                 topics=[OC.OffsetCommitRequestTopic(name=topic,
                                                     partitions=[P(partition_index=0, committed_offset=1)])])
        for b in bs.split(","):
            h, p = b.split(":")
            with BrokerConnection(h, int(p)) as conn:
                code = conn.send(req, 9).topics[0].partitions[0].error_code
            if code != ErrorCode.NOT_COORDINATOR:
                return code
        raise AssertionError("no broker coordinates the group")
    assert commit(0) == ErrorCode.STALE_MEMBER_EPOCH  # the member is at epoch >= 1: a stale epoch, nothing written
    after = send(member_epoch=epoch, subscribed_topic_names=None, rebalance_timeout_ms=-1, topic_partitions=None)
    assert (after.error_code, after.member_epoch) == (0, epoch)
    admin = AdminClient({"bootstrap.servers": bs})
    d = admin.describe_consumer_groups([group])[group].result(15)
    assert [mm.member_id for mm in d.members] == ["m-1"]
