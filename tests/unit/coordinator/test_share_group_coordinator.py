"""Share-group membership (KIP-932) as the coordinator decides it, and share sessions as a
partition leader keeps them: the decisions, and each group's record in an in-memory
`__consumer_offsets` that a coordinator taking the partition over loads."""
from __future__ import annotations

import asyncio
import dataclasses
import uuid

from praha.broker.share.session import ShareSessionCache
from praha.common import TopicPartition
from praha.coordinator.group.consumer.model import TopicInfo
from praha.coordinator.group.coordinator import GroupCoordinator
from praha.coordinator.group.share.assignor import assign
from praha.coordinator.group.share.heartbeat import ShareHeartbeat, ShareSettings
from praha.coordinator.group.share.records import (
    KEY_VERSIONS,
    ShareGroupKey,
    ShareGroupValue,
    ShareRecord,
    decode,
    encode,
)
from praha.coordinator.group.share.service import ShareGroupService
from praha.errors import ErrorCode as E
from tests.unit.coordinator.test_group_coordinator import CONFIG, MemoryLog, blocking, run

T1 = uuid.uuid4()
TOPICS = {"orders": TopicInfo("orders", T1, 1)}
S = ShareSettings(heartbeat_interval_ms=500, session_timeout_ms=1000, max_size=3)


async def _append(partition: int, records: list[tuple[bytes, bytes | None]]) -> E:
    return E.NONE


def service(other: bool = False, topics=lambda: TOPICS, settings: ShareSettings = S) -> ShareGroupService:
    """The decisions alone: every write succeeds (the coordinator tests below keep a log)."""
    return ShareGroupService(settings, lambda g: E.NONE, lambda g: other, topics, _append, lambda g: 0)


def hb(member: str, epoch: int, topics: tuple[str, ...] | None = None, group: str = "g") -> ShareHeartbeat:
    return ShareHeartbeat(group, member, epoch, None, topics)


def test_more_members_than_partitions_all_share_the_partition():
    assert assign({"a": frozenset({T1}), "b": frozenset({T1}), "c": frozenset({T1})}, {T1: 1}) == {
        "a": {T1: frozenset({0})}, "b": {T1: frozenset({0})}, "c": {T1: frozenset({0})}}
    two = assign({"a": frozenset({T1}), "b": frozenset({T1})}, {T1: 4})
    assert two == {"a": {T1: frozenset({0, 2})}, "b": {T1: frozenset({1, 3})}}


def test_join_heartbeat_leave_with_member_epochs():
    async def go():
        s = service()
        a = await s.heartbeat(hb("a", 0, ("orders",)), 0)
        assert a.error == E.NONE
        assert a.member_epoch == 1
        assert a.assignment == {T1: frozenset({0})}
        b = await s.heartbeat(hb("b", 0, ("orders",)), 0)
        assert b.member_epoch == 2
        assert b.assignment == {T1: frozenset({0})}
        # a learns of the new epoch on its next heartbeat (no revocation step: partitions are shared)
        a2 = await s.heartbeat(hb("a", 1), 10)
        assert a2.member_epoch == 2
        assert a2.assignment == {T1: frozenset({0})}
        assert (await s.heartbeat(hb("a", 2), 20)).assignment is None  # unchanged: not sent again
        assert (await s.heartbeat(hb("a", 1), 20)).error == E.FENCED_MEMBER_EPOCH
        assert (await s.heartbeat(hb("zz", 3), 20)).error == E.UNKNOWN_MEMBER_ID
        assert (await s.heartbeat(hb("b", -1), 30)).member_epoch == -1
        assert sorted(s.find("g")[1].members) == ["a"]
    run(go())


def test_bad_heartbeats_are_refused_and_change_nothing():
    async def go():
        s = service()
        assert (await s.heartbeat(hb("", 0, ("orders",)), 0)).error == E.INVALID_REQUEST
        assert (await s.heartbeat(hb("a", 0), 0)).error == E.INVALID_REQUEST  # joining without a subscription
        assert (await s.heartbeat(ShareHeartbeat("", "a", 0, None, ("orders",)), 0)).error == E.INVALID_REQUEST
        for m in "abc":
            assert (await s.heartbeat(hb(m, 0, ("orders",)), 0)).error == E.NONE
        assert (await s.heartbeat(hb("d", 0, ("orders",)), 0)).error == E.GROUP_MAX_SIZE_REACHED
        assert len(s.find("g")[1].members) == 3
        assert (await service(other=True).heartbeat(hb("a", 0, ("orders",)), 0)).error == E.GROUP_ID_NOT_FOUND
        assert service().find("nope")[0] == E.GROUP_ID_NOT_FOUND
    run(go())


def test_silent_members_expire_and_an_empty_group_can_be_deleted():
    async def go():
        s = service()
        await s.heartbeat(hb("a", 0, ("orders",)), 0)
        assert await s.delete("g") == E.NON_EMPTY_GROUP
        assert s.expire(500) == 0
        assert s.expire(1001) == 1
        assert await s.delete("g") == E.NONE
        assert s.find("g")[0] == E.GROUP_ID_NOT_FOUND
    run(go())


def test_a_topic_created_after_the_subscription_is_assigned_on_a_later_heartbeat():
    async def go():
        topics: dict[str, TopicInfo] = {}
        s = service(topics=lambda: topics)
        a = await s.heartbeat(hb("a", 0, ("orders",)), 0)
        assert a.assignment == {}
        topics.update(TOPICS)
        a2 = await s.heartbeat(hb("a", a.member_epoch), 1)
        assert a2.member_epoch > a.member_epoch
        assert a2.assignment == {T1: frozenset({0})}
    run(go())


# ---------------------------------------------------------------- the group's record in __consumer_offsets
def test_every_share_group_record_kind_round_trips_through_bytes():
    samples = {ShareGroupKey: ShareRecord(ShareGroupKey("g"), ShareGroupValue(7))}
    assert set(samples) == set(KEY_VERSIONS)  # a new kind needs its sample here
    for r in samples.values():
        assert decode(*encode(r)) == r
        assert decode(encode(r)[0], None) == dataclasses.replace(r, value=None)
    key, value = encode(ShareRecord(ShareGroupKey("g"), ShareGroupValue(7)))
    assert key == b"\x00\x0b\x00\x01g"  # Kafka's ShareGroupMetadataKey: version 11, the group id
    assert value == b"\x00\x00\x00\x00\x00\x07\x00"  # value version 0, Epoch 7, no tagged fields


async def coordinator(log: MemoryLog) -> GroupCoordinator:
    c = GroupCoordinator(dataclasses.replace(CONFIG, share=S), log, run_blocking=blocking, topics=lambda: TOPICS)
    for p in range(CONFIG.partitions):
        c.on_elected(p, 1)
    for _ in range(20):
        await asyncio.sleep(0)
    return c


def test_an_empty_share_group_survives_a_coordinator_move_at_its_epoch_until_deleted():
    """Kafka keeps a share group's metadata in __consumer_offsets: the next coordinator of its
    partition knows the emptied group (describe, list, delete act on it) and its epoch goes on."""
    async def go():
        log = MemoryLog()
        c = await coordinator(log)
        assert (await c.share.heartbeat(hb("a", 0, ("orders",)), 0)).member_epoch == 1
        assert (await c.share.heartbeat(hb("b", 0, ("orders",)), 0)).member_epoch == 2
        assert (await c.share.heartbeat(hb("a", 1), 10)).member_epoch == 2
        assert (await c.share.heartbeat(hb("a", -1), 20)).error == E.NONE
        assert c.share.expire(5000) == 1  # b's session runs out: epoch 4, written by the expiry
        for _ in range(5):
            await asyncio.sleep(0)
        partition = c.partition_of("g")
        c.on_resigned(partition)
        assert c.share.find("g")[0] == E.NOT_COORDINATOR
        # another broker takes the partition over: the group is there, empty, at its last epoch
        d = await coordinator(log)
        code, g = d.share.find("g")
        assert code == E.NONE
        assert (g.group_epoch, g.members, g.state.value) == (4, {}, "Empty")
        assert [x.group_id for x in d.share.listed(set(), set())] == ["g"]
        # a member joins again: the epoch goes on from there
        assert (await d.share.heartbeat(hb("c", 0, ("orders",)), 30)).member_epoch == 5
        assert (await d.share.heartbeat(hb("c", -1), 40)).error == E.NONE
        assert await d.share.delete("g") == E.NONE
        d.shutdown()
        # deleted: the next coordinator does not know it
        e = await coordinator(log)
        assert e.share.find("g")[0] == E.GROUP_ID_NOT_FOUND
        e.shutdown()
        c.shutdown()
    run(go())


def test_a_share_group_change_whose_record_is_not_written_is_refused():
    async def go():
        log = MemoryLog()
        c = await coordinator(log)
        assert (await c.share.heartbeat(hb("a", 0, ("orders",)), 0)).error == E.NONE
        log.fail_with = E.NOT_LEADER_OR_FOLLOWER
        assert (await c.share.heartbeat(hb("b", 0, ("orders",)), 0)).error == E.NOT_COORDINATOR
        assert (await c.share.heartbeat(hb("a", -1), 0)).error == E.NOT_COORDINATOR
        assert await c.share.delete("other") == E.GROUP_ID_NOT_FOUND
        c.shutdown()
    run(go())


TP = TopicPartition("orders", 0)


def test_share_session_epochs():
    c = ShareSessionCache()
    assert c.on_fetch("g", "m", 1, [TP], []).error == E.SHARE_SESSION_NOT_FOUND
    assert c.on_acknowledge("g", "m", 1).error == E.SHARE_SESSION_NOT_FOUND
    d = c.on_fetch("g", "m", 0, [TP], [])
    assert d.error == E.NONE
    assert d.session.partitions == {TP}
    assert d.session.epoch == 1
    assert c.on_acknowledge("g", "m", 0).error == E.INVALID_SHARE_SESSION_EPOCH  # cannot open one
    assert c.on_fetch("g", "m", 2, [], []).error == E.INVALID_SHARE_SESSION_EPOCH  # stale/future: refused
    assert c.sessions[("g", "m")].epoch == 1  # and nothing moved
    assert c.on_fetch("g", "m", 1, [], [TP]).session.partitions == set()
    assert c.on_acknowledge("g", "m", 2).error == E.NONE
    closing = c.on_fetch("g", "m", -1, [], [])
    assert closing.closing
    assert ("g", "m") not in c.sessions
