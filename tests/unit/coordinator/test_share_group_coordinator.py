"""Share-group membership (KIP-932) as the coordinator decides it, and share sessions as a
partition leader keeps them: pure decisions, no broker."""
from __future__ import annotations

import uuid

from praha.broker.share.session import ShareSessionCache
from praha.common import TopicPartition
from praha.coordinator.group.consumer.model import TopicInfo
from praha.coordinator.group.share.assignor import assign
from praha.coordinator.group.share.heartbeat import ShareHeartbeat, ShareSettings
from praha.coordinator.group.share.service import ShareGroupService
from praha.errors import ErrorCode as E

T1 = uuid.uuid4()
TOPICS = {"orders": TopicInfo("orders", T1, 1)}
S = ShareSettings(heartbeat_interval_ms=500, session_timeout_ms=1000, max_size=3)


def service(other: bool = False) -> ShareGroupService:
    return ShareGroupService(S, lambda g: E.NONE, lambda g: other, lambda: TOPICS)


def hb(member: str, epoch: int, topics: tuple[str, ...] | None = None) -> ShareHeartbeat:
    return ShareHeartbeat("g", member, epoch, None, topics)


def test_more_members_than_partitions_all_share_the_partition():
    assert assign({"a": frozenset({T1}), "b": frozenset({T1}), "c": frozenset({T1})}, {T1: 1}) == {
        "a": {T1: frozenset({0})}, "b": {T1: frozenset({0})}, "c": {T1: frozenset({0})}}
    two = assign({"a": frozenset({T1}), "b": frozenset({T1})}, {T1: 4})
    assert two == {"a": {T1: frozenset({0, 2})}, "b": {T1: frozenset({1, 3})}}


def test_join_heartbeat_leave_with_member_epochs():
    s = service()
    a = s.heartbeat(hb("a", 0, ("orders",)), 0)
    assert a.error == E.NONE
    assert a.member_epoch == 1
    assert a.assignment == {T1: frozenset({0})}
    b = s.heartbeat(hb("b", 0, ("orders",)), 0)
    assert b.member_epoch == 2
    assert b.assignment == {T1: frozenset({0})}
    # a learns of the new epoch on its next heartbeat (no revocation step: partitions are shared)
    a2 = s.heartbeat(hb("a", 1), 10)
    assert a2.member_epoch == 2
    assert a2.assignment == {T1: frozenset({0})}
    assert s.heartbeat(hb("a", 2), 20).assignment is None  # unchanged: not sent again
    assert s.heartbeat(hb("a", 1), 20).error == E.FENCED_MEMBER_EPOCH
    assert s.heartbeat(hb("zz", 3), 20).error == E.UNKNOWN_MEMBER_ID
    assert s.heartbeat(hb("b", -1), 30).member_epoch == -1
    assert sorted(s.find("g")[1].members) == ["a"]


def test_bad_heartbeats_are_refused_and_change_nothing():
    s = service()
    assert s.heartbeat(hb("", 0, ("orders",)), 0).error == E.INVALID_REQUEST
    assert s.heartbeat(hb("a", 0), 0).error == E.INVALID_REQUEST  # joining without a subscription
    assert s.heartbeat(ShareHeartbeat("", "a", 0, None, ("orders",)), 0).error == E.INVALID_REQUEST
    for m in "abc":
        assert s.heartbeat(hb(m, 0, ("orders",)), 0).error == E.NONE
    assert s.heartbeat(hb("d", 0, ("orders",)), 0).error == E.GROUP_MAX_SIZE_REACHED
    assert len(s.find("g")[1].members) == 3
    assert service(other=True).heartbeat(hb("a", 0, ("orders",)), 0).error == E.GROUP_ID_NOT_FOUND
    assert service().find("nope")[0] == E.GROUP_ID_NOT_FOUND


def test_silent_members_expire_and_an_empty_group_can_be_deleted():
    s = service()
    s.heartbeat(hb("a", 0, ("orders",)), 0)
    assert s.delete("g") == E.NON_EMPTY_GROUP
    assert s.expire(500) == 0
    assert s.expire(1001) == 1
    assert s.delete("g") == E.NONE
    assert s.find("g")[0] == E.GROUP_ID_NOT_FOUND


def test_a_topic_created_after_the_subscription_is_assigned_on_a_later_heartbeat():
    topics: dict[str, TopicInfo] = {}
    s = ShareGroupService(S, lambda g: E.NONE, lambda g: False, lambda: topics)
    a = s.heartbeat(hb("a", 0, ("orders",)), 0)
    assert a.assignment == {}
    topics.update(TOPICS)
    a2 = s.heartbeat(hb("a", a.member_epoch), 1)
    assert a2.member_epoch > a.member_epoch
    assert a2.assignment == {T1: frozenset({0})}


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
