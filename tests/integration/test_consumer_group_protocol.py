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
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from praha.testing.cluster import bootstrap, wait_for

pytestmark = pytest.mark.integration

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
    def on_assign(c, tps):
        say("assign", [[tp.topic, tp.partition] for tp in tps])
    def on_revoke(c, tps):
        say("revoke", [[tp.topic, tp.partition] for tp in tps])
    def on_lost(c, tps):
        say("lost", [[tp.topic, tp.partition] for tp in tps])
    c = Consumer(conf)
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    c.subscribe(spec.split(",") if not spec.startswith("^") else [spec], on_assign=on_assign,
                on_revoke=on_revoke, on_lost=on_lost)
    say("started")
    # records read but not yet committed, by partition: a commit refused (STALE_MEMBER_EPOCH while
    # the member takes its new epoch) is tried again after the next poll, while the partition is ours
    pending = {}
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
                        out.append((tuple(tp), since.pop(tuple(tp)), t))
        end = self.killed_at if self.killed_at is not None else time.monotonic()
        out += [(tp, t, end) for tp, t in since.items()]
        return out

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
    spans = [(tp, a, b, i) for i, m in enumerate(members) for tp, a, b in m.intervals()]
    for tp, a, b, i in spans:
        for tp2, a2, b2, j in spans:
            if i < j and tp == tp2:
                assert b <= a2 or b2 <= a, f"{tp} owned by members {i} and {j} at once: {a}-{b} and {a2}-{b2}"


def produce(bs: str, topic: str, n: int, per_second: float) -> threading.Thread:
    def run() -> None:
        p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5})
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
            odd = [e for e in m.events if e[1] in ("error", "commit-failed", "assign", "revoke", "lost", "dropped")][-12:]
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
