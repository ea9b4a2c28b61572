"""Online migration between the classic and the consumer protocol in the group coordinator, on an
in-memory `__consumer_offsets`: a classic group with offsets upgraded by a consumer-protocol
member, its classic members answered through JoinGroup/SyncGroup/Heartbeat from the consumer
group's assignment, downgraded when that member leaves, each step surviving a reload, the
offsets untouched throughout; and `group.consumer.migration.policy` refusing either move."""
from __future__ import annotations

import asyncio
import dataclasses
import struct
import uuid

from praha.coordinator.group.consumer.heartbeat import HeartbeatRequest, TimerKind
from praha.coordinator.group.consumer.migration import (
    MigrationPolicy,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from praha.coordinator.group.consumer.model import MemberState, TopicInfo
from praha.coordinator.group.consumer.records import MemberMetadataKey, Record, decode, encode
from praha.coordinator.group.coordinator import GroupCoordinator
from praha.coordinator.group.metadata import CommittedOffset, GroupState
from praha.errors import ErrorCode
from tests.unit.coordinator.test_group_coordinator import CONFIG, MemoryLog, blocking, run

E = ErrorCode
TOPICS = {"orders": TopicInfo("orders", uuid.UUID(int=7), 6)}
OFFSET = {("orders", 0): CommittedOffset(42, -1, "", 1)}


def subscription(topics: list[str], owned: list[tuple[str, list[int]]] | None = None) -> bytes:
    """ConsumerProtocolSubscription v1 as a Java or librdkafka consumer sends it."""
    out = bytearray(struct.pack(">hi", 1, len(topics)))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    out += struct.pack(">ii", -1, len(owned or []))
    for t, parts in owned or []:
        out += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(parts))
        out += b"".join(struct.pack(">i", p) for p in parts)
    return bytes(out)


PROTOCOLS = [("range", subscription(["orders"]))]


async def coordinator(log: MemoryLog, policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL) -> GroupCoordinator:
    c = GroupCoordinator(dataclasses.replace(CONFIG, migration_policy=policy), log, run_blocking=blocking,
                         topics=lambda: TOPICS)
    for p in range(CONFIG.partitions):
        c.on_elected(p, 1)
    for _ in range(20):
        await asyncio.sleep(0)
    return c


async def join(c: GroupCoordinator, member_id: str, protocols=PROTOCOLS, rebalance_ms: int = 2000,
               session_ms: int = 5000):
    return await c.join_group("g", member_id, None, "client", "/127.0.0.1", session_ms, rebalance_ms, "consumer",
                              protocols, require_known_member_id=True)


async def classic_group(c: GroupCoordinator, rebalance_ms: int = 2000,
                        session_ms: int = 5000) -> tuple[str, str, int]:
    """Two classic members, a owning orders 0-2 and b 3-5, and a committed offset; (a, b, generation)."""
    def joined(member_id: str):
        return join(c, member_id, rebalance_ms=rebalance_ms, session_ms=session_ms)
    a = (await joined("")).member_id
    first = await joined(a)
    await c.sync_group("g", first.generation, a, None, "consumer", "range",
                       {a: encode_assignment([("orders", range(6))], 1)})
    b = (await joined("")).member_id
    ja, jb = await asyncio.gather(joined(a), joined(b))
    assert ja.generation == jb.generation == 2
    assert ja.leader == a
    sa, sb = await asyncio.gather(
        c.sync_group("g", 2, a, None, "consumer", "range", {a: encode_assignment([("orders", [0, 1, 2])], 1),
                                                            b: encode_assignment([("orders", [3, 4, 5])], 1)}),
        c.sync_group("g", 2, b, None, "consumer", "range", {}))
    assert sa.error == sb.error == E.NONE
    assert await c.commit_offsets("g", 2, a, None, OFFSET) == {("orders", 0): E.NONE}
    return a, b, 2


def owned_of(answer_assignment) -> tuple:
    return tuple((t, tuple(sorted(p))) for t, p in answer_assignment.items())


async def rejoin_and_sync(c: GroupCoordinator, member_id: str) -> tuple[int, list[int]]:
    """An eager classic member's round: it revoked everything, rejoins, syncs; (generation, partitions)."""
    j = await join(c, member_id)
    assert j.error == E.NONE, j
    assert j.leader == "", j
    assert j.members == [], j
    s = await c.sync_group("g", j.generation, member_id, None, "consumer", j.protocol, {})
    assert s.error == E.NONE, s
    return j.generation, sorted(p for _, parts in decode_assignment(s.assignment) for p in parts)


def test_a_classic_group_migrates_to_the_consumer_protocol_member_by_member_and_back_with_its_offsets():
    async def go():
        log = MemoryLog()
        c = await coordinator(log)
        a, b, gen = await classic_group(c)
        # a consumer-protocol member joins: the classic group is upgraded, its members kept at generation 2
        x = await c.consumer_group_heartbeat(HeartbeatRequest("g", "x", 0, rebalance_timeout_ms=30000,
                                                              subscribed_topic_names=("orders",), topic_partitions=()))
        assert x.error == E.NONE
        assert x.answer.member_epoch == 3
        assert not x.answer.assignment  # all still owned
        g = c.consumer.groups["g"]
        assert {m: (g.members[m].member_epoch, g.members[m].classic is not None) for m in g.members} == \
            {a: (2, True), b: (2, True), "x": (3, False)}
        assert not c._has_classic_members("g")
        assert c.groups["g"].offsets[("orders", 0)].offset == 42
        # the classic members learn of the new epoch through Heartbeat, rejoin and sync, one at a time
        assert c.heartbeat("g", gen, a, None) == E.REBALANCE_IN_PROGRESS
        assert c.heartbeat("g", 1, a, None) == E.ILLEGAL_GENERATION
        gen_a, parts_a = await rejoin_and_sync(c, a)
        assert gen_a == 3
        assert len(parts_a) == 2
        assert c.heartbeat("g", 3, a, None) == E.NONE
        gen_b, parts_b = await rejoin_and_sync(c, b)
        assert gen_b == 3
        assert len(parts_b) == 2
        assert not set(parts_a) & set(parts_b)
        x2 = await c.consumer_group_heartbeat(HeartbeatRequest("g", "x", 3, topic_partitions=()))
        parts_x = sorted(p for ps in x2.answer.assignment.values() for p in ps)
        assert len(parts_x) == 2
        assert sorted(parts_a + parts_b + parts_x) == list(range(6))
        assert g.members["x"].state is MemberState.STABLE
        # a classic member commits with its generation (any OffsetCommit version), a stale one is refused
        assert await c.commit_offsets("g", 3, a, None, OFFSET, api_version=8) == {("orders", 0): E.NONE}
        assert await c.commit_offsets("g", 2, a, None, OFFSET, api_version=8) == {("orders", 0): E.ILLEGAL_GENERATION}
        c.shutdown()
        # a failover keeps the mixed group: classic metadata, epochs, assignments
        d = await coordinator(log)
        g2 = d.consumer.groups["g"]
        assert g2.members == g.members
        assert g2.target == g.target
        assert d.heartbeat("g", 3, b, None) == E.NONE
        # the last consumer-protocol member leaves: the group goes back to classic and rebalances
        left = await d.consumer_group_heartbeat(HeartbeatRequest("g", "x", -1))
        assert left.error == E.NONE
        assert d.consumer_group("g") is None
        classic = d.groups["g"]
        assert set(classic.members) == {a, b}
        assert classic.is_(GroupState.PREPARING_REBALANCE)
        # at the generation a and b hold (Kafka converts instead of fencing x): asked to rejoin, their
        # commits still accepted, rather than ILLEGAL_GENERATION (partitions lost, commits refused)
        assert classic.generation == 3
        assert classic.offsets[("orders", 0)].offset == 42
        assert d.heartbeat("g", 3, a, None) == E.REBALANCE_IN_PROGRESS
        assert await d.commit_offsets("g", 3, b, None, OFFSET, api_version=8) == {("orders", 0): E.NONE}
        ja, jb = await asyncio.gather(join(d, a), join(d, b))
        assert ja.error == jb.error == E.NONE
        assert ja.generation == 4
        d.shutdown()
        e = await coordinator(log)
        assert "g" not in e.consumer.groups
        assert set(e.groups["g"].members) == {a, b}
        assert e.fetch_offsets("g", [("orders", 0)])[1][("orders", 0)].offset == 42
        e.shutdown()
    run(go())


def test_the_migration_policy_refuses_the_upgrade_or_keeps_classic_members_in_the_consumer_group():
    async def go():
        c = await coordinator(MemoryLog(), MigrationPolicy.DOWNGRADE)
        await classic_group(c)
        refused = await c.consumer_group_heartbeat(HeartbeatRequest(
            "g", "x", 0, rebalance_timeout_ms=30000, subscribed_topic_names=("orders",), topic_partitions=()))
        assert refused.error == E.GROUP_ID_NOT_FOUND
        assert c._has_classic_members("g")
        assert "g" not in c.consumer.groups
        c.shutdown()
        c = await coordinator(MemoryLog(), MigrationPolicy.UPGRADE)
        a, b, _ = await classic_group(c)
        await c.consumer_group_heartbeat(HeartbeatRequest(
            "g", "x", 0, rebalance_timeout_ms=30000, subscribed_topic_names=("orders",), topic_partitions=()))
        await c.consumer_group_heartbeat(HeartbeatRequest("g", "x", -1))
        assert set(c.consumer.groups["g"].members) == {a, b}
        assert not c._has_classic_members("g")
        c.shutdown()
    run(go())


def test_classic_requests_in_a_consumer_group_get_kafkas_errors_and_change_nothing():
    async def go():
        c = await coordinator(MemoryLog())
        a, b, _ = await classic_group(c)
        await c.consumer_group_heartbeat(HeartbeatRequest(
            "g", "x", 0, rebalance_timeout_ms=30000, subscribed_topic_names=("orders",), topic_partitions=()))
        g = c.consumer.groups["g"]
        epoch, members = g.group_epoch, dict(g.members)
        assert (await join(c, a, [("range", b"\x00")])).error == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await c.join_group("g", a, None, "c", "/h", 5000, 2000, "connect", PROTOCOLS, True)).error == \
            E.INCONSISTENT_GROUP_PROTOCOL
        assert (await c.sync_group("g", 2, "nobody", None, None, None, {})).error == E.UNKNOWN_MEMBER_ID
        assert (await c.sync_group("g", 2, "x", None, None, None, {})).error == E.UNKNOWN_MEMBER_ID  # not classic
        assert (await c.sync_group("g", 2, a, None, "consumer", "roundrobin", {})).error == \
            E.INCONSISTENT_GROUP_PROTOCOL
        assert (await c.sync_group("g", 2, a, None, None, None, {})).error == E.REBALANCE_IN_PROGRESS
        assert c.heartbeat("g", 2, "x", None) == E.UNKNOWN_MEMBER_ID
        assert await c.leave_group("g", [("nobody", None), ("x", None)]) == \
            (E.NONE, [E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID])
        assert g.group_epoch == epoch
        assert g.members == members
        # a new classic member is asked for a member id first, then joins at the next epoch
        first = await join(c, "")
        assert first.error == E.MEMBER_ID_REQUIRED
        assert "g" in c.consumer.groups
        new = await join(c, first.member_id)
        assert new.error == E.NONE
        assert new.generation == epoch + 1
        assert await c.leave_group("g", [(new.member_id, None)]) == (E.NONE, [E.NONE])
        g = c.consumer.groups["g"]
        assert new.member_id not in g.members
        assert g.group_epoch == epoch + 2
        c.shutdown()
    run(go())


def test_the_classic_member_metadata_round_trips_as_kafkas_tagged_field():
    sub = subscription(["orders", "audit"], [("orders", [1, 2])])
    assert decode_subscription(sub).topics == ("orders", "audit")
    assert decode_subscription(sub).owned == (("orders", (1, 2)),)
    from praha.coordinator.group.consumer.model import ClassicMetadata
    from praha.coordinator.group.consumer.records import MemberMetadataValue
    value = MemberMetadataValue(None, None, "c", "/h", ("orders",), None, 3000, None,
                                ClassicMetadata(45000, (("range", sub), ("roundrobin", b""))))
    r = Record(MemberMetadataKey("g", "m"), value)
    assert decode(*encode(r)) == r
    plain = Record(MemberMetadataKey("g", "m"), dataclasses.replace(value, classic=None))
    assert decode(*encode(plain)) == plain
    assert len(encode(plain)[1]) < len(encode(r)[1])


async def until(check, what: str, bound_s: float = 5.0) -> None:
    """Wait for a condition on the coordinator's event loop, with a generous bound."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound_s
    while not check():
        assert loop.time() < deadline, f"not within {bound_s} s: {what}"
        await asyncio.sleep(0.01)


def test_a_classic_member_that_does_not_rejoin_or_sync_within_its_rebalance_timeout_is_fenced():
    """Kafka's join and sync timers of classic members in a consumer group: told REBALANCE_IN_PROGRESS,
    a member must send JoinGroup within its rebalance timeout (the first answer starts the timer, later
    ones keep its deadline); answered, it must send SyncGroup within it; a member that does both stays.
    Sessions of a minute: only the 300 ms join and sync timers can fence within the waits' bounds,
    and b's session does not run out on a slow machine."""
    session_ms = 60_000

    async def go():
        log = MemoryLog()
        c = await coordinator(log)
        a, b, gen = await classic_group(c, rebalance_ms=300, session_ms=session_ms)
        await c.consumer_group_heartbeat(HeartbeatRequest("g", "x", 0, rebalance_timeout_ms=30000,
                                                          subscribed_topic_names=("orders",), topic_partitions=()))
        g = c.consumer.groups["g"]
        assert set(c.consumer.deadlines("g", a)) == {TimerKind.SESSION}  # no revocation timer for classic members
        # a is told to rejoin twice: its join timer starts once and keeps its deadline
        assert c.heartbeat("g", gen, a, None) == E.REBALANCE_IN_PROGRESS
        first = c.consumer.deadlines("g", a)[TimerKind.JOIN]
        await asyncio.sleep(0.02)
        assert c.heartbeat("g", gen, a, None) == E.REBALANCE_IN_PROGRESS
        assert c.consumer.deadlines("g", a)[TimerKind.JOIN] == first
        # b rejoins: its join timer stops, its sync timer starts; the sync stops it
        assert c.heartbeat("g", gen, b, None) == E.REBALANCE_IN_PROGRESS
        j = await join(c, b, rebalance_ms=300, session_ms=session_ms)
        assert j.error == E.NONE
        assert set(c.consumer.deadlines("g", b)) == {TimerKind.SESSION, TimerKind.SYNC}
        s = await c.sync_group("g", j.generation, b, None, "consumer", j.protocol, {})
        assert s.error == E.NONE
        assert set(c.consumer.deadlines("g", b)) == {TimerKind.SESSION}
        # a never rejoins: fenced by its join timer (its session, a minute, has not run out), its partitions freed
        epoch = g.group_epoch
        await until(lambda: a not in g.members, "a fenced by its join timer")
        assert g.group_epoch == epoch + 1
        assert c.consumer.deadlines("g", a) == {}
        assert b in g.members
        assert c.heartbeat("g", j.generation, a, None) == E.UNKNOWN_MEMBER_ID
        # a new classic member joins and never syncs: fenced by its sync timer
        new = await join(c, (await join(c, "", rebalance_ms=300, session_ms=session_ms)).member_id, rebalance_ms=300,
                         session_ms=session_ms)
        assert new.error == E.NONE
        assert TimerKind.SYNC in c.consumer.deadlines("g", new.member_id)
        await until(lambda: new.member_id not in g.members, "the joined member fenced by its sync timer")
        assert b in g.members
        assert "x" in g.members
        # a fence leaves memory when its timer fires and reaches the log one append later: the
        # reload below reads the log, so it waits for both fences' records there
        written = log.records[c.partition_of("g")]
        tombstones = [encode(Record(MemberMetadataKey("g", fenced), None)) for fenced in (a, new.member_id)]
        await until(lambda: all(t in written for t in tombstones), "both fences written")
        c.shutdown()
        # the fences were written: a reload has neither
        d = await coordinator(log)
        assert set(d.consumer.groups["g"].members) == {b, "x"}
        d.shutdown()
    run(go())


class HeldLog(MemoryLog):
    """The next append waits until `release` (the others pass)."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def append(self, partition, records, producer=None):
        if self.armed:
            self.armed = False
            self.held.set()
            await self.release.wait()
        return await super().append(partition, records, producer)


def test_an_offset_commit_written_while_the_group_downgrades_is_applied():
    """A classic member's commit is being written when the last consumer-protocol member leaves and
    the group goes back to classic: the commit is answered NONE and OffsetFetch returns it."""
    async def go():
        log = HeldLog()
        c = await coordinator(log)
        a, _, _ = await classic_group(c)
        await c.consumer_group_heartbeat(HeartbeatRequest("g", "x", 0, rebalance_timeout_ms=30000,
                                                          subscribed_topic_names=("orders",), topic_partitions=()))
        log.armed = True
        commit = asyncio.ensure_future(c.commit_offsets("g", 2, a, None,
                                                        {("orders", 1): CommittedOffset(7, -1, "", 1)}))
        await asyncio.wait_for(log.held.wait(), 5)
        left = await c.consumer_group_heartbeat(HeartbeatRequest("g", "x", -1))
        assert left.error == E.NONE
        assert c.consumer_group("g") is None  # downgraded meanwhile
        log.release.set()
        assert await commit == {("orders", 1): E.NONE}
        assert c.fetch_offsets("g", [("orders", 1)])[1][("orders", 1)].offset == 7
        c.shutdown()
    run(go())
