"""The group coordinator's flows on an in-memory `__consumer_offsets` (no processes):
the records' formats, the join/sync protocol, the error codes, commits only once written,
loading after a failover, offset expiry."""
from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from praha.coordinator.group.coordinator import GroupConfig, GroupCoordinator
from praha.coordinator.group.metadata import CommittedOffset, Group, GroupState
from praha.coordinator.group.records import (
    GroupKey,
    GroupValue,
    MemberRecord,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    group_key,
    group_value,
    java_string_hash,
    offset_key,
    offset_value,
    partition_for,
)
from praha.coordinator.group.storage import LogRecord
from praha.errors import ErrorCode

E = ErrorCode


# ------------------------------------------------------------------ records
def test_java_string_hash_matches_java():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("abc") == 96354
    assert java_string_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE
    assert partition_for("polygenelubricants", 50) == 0  # Kafka's Utils.abs(MIN_VALUE) is 0
    assert java_string_hash("é") == 233  # UTF-16 code units, not bytes


def test_offset_records_in_kafkas_layout():
    key = offset_key("g", "t", 3)
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    assert decode_key(key) == OffsetKey("g", "t", 3)
    value = offset_value(OffsetValue(42, 7, "meta", 1000))
    assert value[:2] == b"\x00\x03"
    assert value[2:10] == (42).to_bytes(8, "big")
    assert decode_offset_value(value) == OffsetValue(42, 7, "meta", 1000)


def test_group_records_round_trip():
    v = GroupValue("consumer", 5, "range", "m-1", 123, (
        MemberRecord("m-1", None, "client", "/127.0.0.1", 300000, 10000, b"sub", b"assign"),
        MemberRecord("m-2", "static-2", "client", "/127.0.0.1", 300000, 10000, b"", b""),
    ))
    assert decode_key(group_key("g")) == GroupKey("g")
    assert decode_group_value(group_value(v)) == v


# ------------------------------------------------------------------ a coordinator on a list
class MemoryLog:
    def __init__(self) -> None:
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.fail_with: ErrorCode | None = None

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]], producer=None) -> ErrorCode:
        await asyncio.sleep(0)
        if self.fail_with is not None:
            return self.fail_with
        self.records.setdefault(partition, []).extend(records)
        return E.NONE

    def read(self, partition: int) -> Iterator[LogRecord]:
        yield from [LogRecord(k, v) for k, v in self.records.get(partition, [])]


CONFIG = GroupConfig(partitions=4, min_session_timeout_ms=10, initial_rebalance_delay_ms=0)


async def blocking(fn):
    return fn()


async def coordinator_for(group: str, log: MemoryLog | None = None,
                          config: GroupConfig = CONFIG) -> tuple[GroupCoordinator, MemoryLog]:
    log = log or MemoryLog()
    c = GroupCoordinator(config, log, run_blocking=blocking)
    c.on_elected(c.partition_of(group), 1)
    for _ in range(10):
        await asyncio.sleep(0)
    assert c._check(group) == E.NONE
    return c, log


PROTOCOLS = [("range", b"r"), ("roundrobin", b"rr")]


async def join(c: GroupCoordinator, group: str, member_id: str = "", instance: str | None = None,
               protocols=PROTOCOLS, protocol_type: str = "consumer", session_ms: int = 5000):
    return await c.join_group(group, member_id, instance, "client", "/127.0.0.1", session_ms, 2000,
                              protocol_type, protocols, require_known_member_id=True)


async def join_fully(c: GroupCoordinator, group: str, instance: str | None = None):
    first = await join(c, group, instance=instance)
    if first.error == E.MEMBER_ID_REQUIRED:
        return await join(c, group, first.member_id, instance)
    return first


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 10))


def test_first_member_gets_an_id_then_leads_generation_one():
    async def go():
        c, log = await coordinator_for("g")
        first = await join(c, "g")
        assert first.error == E.MEMBER_ID_REQUIRED
        assert first.member_id.startswith("client-")
        res = await join(c, "g", first.member_id)
        assert (res.error, res.generation, res.leader, res.protocol) == (E.NONE, 1, first.member_id, "range")
        assert [m[0] for m in res.members] == [first.member_id]
        sync = await c.sync_group("g", 1, first.member_id, None, "consumer", "range", {first.member_id: b"A"})
        assert (sync.error, sync.assignment) == (E.NONE, b"A")
        assert c.groups["g"].state is GroupState.STABLE
        stored = decode_group_value(log.records[c.partition_of("g")][-1][1])
        assert stored.generation == 1
        assert stored.members[0].assignment == b"A"
    run(go())


def test_second_member_rebalances_and_both_get_answers():
    async def go():
        c, _ = await coordinator_for("g")
        a = await join_fully(c, "g")
        await c.sync_group("g", 1, a.member_id, None, None, None, {a.member_id: b"all"})
        b_first = await join(c, "g")
        b_task = asyncio.ensure_future(join(c, "g", b_first.member_id))
        await asyncio.sleep(0.01)
        assert c.heartbeat("g", 1, a.member_id, None) == E.REBALANCE_IN_PROGRESS
        a_again = await join(c, "g", a.member_id)
        b = await b_task
        assert a_again.generation == b.generation == 2
        assert a_again.leader == a.member_id
        assert len(a_again.members) == 2
        assert b.members == []
        leader_sync = asyncio.ensure_future(c.sync_group("g", 2, a.member_id, None, None, None,
                                                         {a.member_id: b"x", b.member_id: b"y"}))
        follower = await c.sync_group("g", 2, b.member_id, None, None, None, {})
        assert follower.assignment == b"y"
        assert (await leader_sync).assignment == b"x"
    run(go())


def test_errors_a_confused_member_gets():
    async def go():
        c, _ = await coordinator_for("g")
        assert (await join(c, "g", "nobody")).error == E.UNKNOWN_MEMBER_ID
        a = await join_fully(c, "g")
        await c.sync_group("g", 1, a.member_id, None, None, None, {})
        assert (await join(c, "g", protocol_type="connect")).error == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await join(c, "g", protocols=[("sticky", b"")])).error == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await join(c, "g", session_ms=1)).error == E.INVALID_SESSION_TIMEOUT
        assert (await join(c, "")).error == E.INVALID_GROUP_ID
        assert c.heartbeat("g", 0, a.member_id, None) == E.ILLEGAL_GENERATION
        assert c.heartbeat("g", 1, "stranger", None) == E.UNKNOWN_MEMBER_ID
        assert (await c.sync_group("g", 7, a.member_id, None, None, None, {})).error == E.ILLEGAL_GENERATION
        assert (await c.sync_group("g", 1, a.member_id, None, "consumer", "roundrobin", {})).error == \
            E.INCONSISTENT_GROUP_PROTOCOL
        commit = CommittedOffset(5, -1, "", 0)
        assert (await c.commit_offsets("g", 1, "stranger", None, {("t", 0): commit}))[("t", 0)] == E.UNKNOWN_MEMBER_ID
        assert (await c.commit_offsets("g", 2, a.member_id, None, {("t", 0): commit}))[("t", 0)] == \
            E.ILLEGAL_GENERATION
        assert (await c.commit_offsets("g", 1, a.member_id, None,
                                       {("t", 0): CommittedOffset(5, -1, "x" * 5000, 0)}))[("t", 0)] == \
            E.OFFSET_METADATA_TOO_LARGE
        other = next(g for g in (f"x{i}" for i in range(100)) if c.partition_of(g) != c.partition_of("g"))
        assert c.heartbeat(other, 1, "m", None) == E.NOT_COORDINATOR
        unknown = next(g for g in (f"u{i}" for i in range(100)) if c.partition_of(g) == c.partition_of("g"))
        assert await c.delete_groups(["g", unknown]) == {"g": E.NON_EMPTY_GROUP, unknown: E.GROUP_ID_NOT_FOUND}
    run(go())


def test_commit_is_visible_only_once_written():
    async def go():
        c, log = await coordinator_for("g")
        offsets = {("t", 0): CommittedOffset(10, 3, "m", 1)}
        log.fail_with = E.NOT_ENOUGH_REPLICAS
        assert (await c.commit_offsets("g", -1, "", None, offsets))[("t", 0)] == E.COORDINATOR_NOT_AVAILABLE
        assert c.fetch_offsets("g", [("t", 0)]) == (E.NONE, {("t", 0): None})
        log.fail_with = E.NOT_LEADER_OR_FOLLOWER
        assert (await c.commit_offsets("g", -1, "", None, offsets))[("t", 0)] == E.NOT_COORDINATOR
        log.fail_with = None
        assert (await c.commit_offsets("g", -1, "", None, offsets))[("t", 0)] == E.NONE  # a standalone consumer
        assert c.fetch_offsets("g", None)[1][("t", 0)].offset == 10
    run(go())


def test_a_new_coordinator_loads_groups_and_offsets_from_the_log():
    async def go():
        c, log = await coordinator_for("g")
        a = await join_fully(c, "g")
        await c.sync_group("g", 1, a.member_id, None, None, None, {a.member_id: b"A"})
        await c.commit_offsets("g", 1, a.member_id, None, {("t", 0): CommittedOffset(7, -1, "", 1),
                                                            ("t", 1): CommittedOffset(9, -1, "", 1)})
        assert (await c.delete_offsets("g", [("other", 0)]))[0] == E.NONE
        c.on_resigned(c.partition_of("g"))
        assert c.heartbeat("g", 1, a.member_id, None) == E.NOT_COORDINATOR
        c2, _ = await coordinator_for("g", log)
        g = c2.groups["g"]
        assert (g.state, g.generation, g.leader_id) == (GroupState.STABLE, 1, a.member_id)
        assert g.members[a.member_id].assignment == b"A"
        assert {tp: o.offset for tp, o in g.offsets.items()} == {("t", 0): 7, ("t", 1): 9}
        assert c2.heartbeat("g", 1, a.member_id, None) == E.NONE
        for c_ in (c, c2):
            c_.shutdown()
    run(go())


def test_member_that_stops_heartbeating_is_removed_and_offsets_then_expire():
    async def go():
        config = GroupConfig(partitions=4, min_session_timeout_ms=10, initial_rebalance_delay_ms=0,
                             offsets_retention_ms=1000)
        c, log = await coordinator_for("g", config=config)
        a = await join_fully(c, "g")
        await c.sync_group("g", 1, a.member_id, None, None, None, {})
        await c.commit_offsets("g", 1, a.member_id, None, {("t", 0): CommittedOffset(1, -1, "", 1)})
        c.groups["g"].members[a.member_id].session_timeout_ms = 50
        c.heartbeat("g", 1, a.member_id, None)
        for _ in range(500):  # until the 50 ms session has expired (bounded: 5 s on a loaded machine)
            if not c.groups["g"].members and c.groups["g"].state is GroupState.EMPTY:
                break
            await asyncio.sleep(0.01)
        g = c.groups["g"]
        assert not g.members
        assert g.state is GroupState.EMPTY
        assert g.generation == 2
        assert await c.expire_offsets(g.state_timestamp + 500) == 0
        assert await c.expire_offsets(g.state_timestamp + 1000) == 1
        assert "g" not in c.groups
        assert log.records[c.partition_of("g")][-1] == (group_key("g"), None)
        c.shutdown()
    run(go())


def test_static_member_rejoining_fences_the_old_id_without_a_rebalance():
    async def go():
        c, _ = await coordinator_for("g")
        a = await join_fully(c, "g", instance="i-1")
        await c.sync_group("g", 1, a.member_id, "i-1", None, None, {a.member_id: b"A"})
        again = await join(c, "g", instance="i-1")
        assert again.error == E.NONE
        assert again.member_id != a.member_id
        assert again.generation == 1
        assert c.heartbeat("g", 1, a.member_id, "i-1") == E.FENCED_INSTANCE_ID
        assert c.heartbeat("g", 1, again.member_id, "i-1") == E.NONE
        assert c.groups["g"].state is GroupState.STABLE
        assert await c.leave_group("g", [("", "i-1"), ("", "i-9")]) == (E.NONE, [E.NONE, E.UNKNOWN_MEMBER_ID])
        c.shutdown()
    run(go())


@pytest.mark.parametrize("state", list(GroupState))
def test_every_state_may_die(state):
    g = Group("g", state=state)
    g.transition(GroupState.DEAD, 0)
    assert g.state is GroupState.DEAD


def test_stable_cannot_jump_to_completing():
    g = Group("g", state=GroupState.STABLE)
    with pytest.raises(AssertionError):
        g.transition(GroupState.COMPLETING_REBALANCE, 0)


def test_group_max_size_and_over_long_ids():
    async def go():
        config = GroupConfig(partitions=4, min_session_timeout_ms=10, initial_rebalance_delay_ms=0, max_size=1)
        c, _ = await coordinator_for("g", config=config)
        a = await join_fully(c, "g")
        assert a.error == E.NONE
        assert (await join(c, "g")).error == E.GROUP_MAX_SIZE_REACHED
        assert (await join(c, "g" * 40000)).error == E.INVALID_GROUP_ID
        c.shutdown()
    run(go())


def test_a_new_leader_epoch_of_a_partition_already_led_reloads_nothing():
    async def go():
        c, _ = await coordinator_for("g")
        a = await join_fully(c, "g")
        await c.sync_group("g", 1, a.member_id, None, None, None, {a.member_id: b"A"})
        group = c.groups["g"]
        c.on_elected(c.partition_of("g"), 2)  # an ISR change bumped the leader epoch
        await asyncio.sleep(0.01)
        assert c.groups["g"] is group
        assert c.heartbeat("g", 1, a.member_id, None) == E.NONE
        assert c.owned[c.partition_of("g")][1] == 2
        c.shutdown()
    run(go())
