"""ShareGroupHeartbeat's decision (Kafka 4's share-group membership), pure: no I/O, no clock.

Epochs as in the consumer protocol, without its revocation step (a share partition may be
read by several members at once, so a member takes its new assignment at once):

- epoch 0 joins (the member id is the client's own, KIP-1082), -1 leaves;
- any other epoch must be the member's current one, else FENCED_MEMBER_EPOCH; an id the
  group does not know gets UNKNOWN_MEMBER_ID (the client then joins again with epoch 0);
- a change of members, subscriptions or subscribed topics' partitions bumps the group epoch
  and computes the target assignment; a member whose epoch is behind it takes its target
  and the new epoch on its next heartbeat.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from praha.coordinator.group.consumer.model import TopicInfo
from praha.coordinator.group.share.assignor import assign
from praha.coordinator.group.share.model import Assignment, ShareGroup, ShareMember
from praha.errors import ErrorCode

LEAVE_EPOCH = -1
JOIN_EPOCH = 0


@dataclass(frozen=True)
class ShareSettings:
    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    max_size: int = 200


@dataclass(frozen=True)
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class ShareAnswer:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = -1
    #: None: unchanged since the member's last answer
    assignment: Assignment | None = None


def _refuse(code: ErrorCode, message: str) -> ShareAnswer:
    return ShareAnswer(code, message)


def subscribed_topics(g: ShareGroup, topics: Mapping[str, TopicInfo]) -> dict[uuid.UUID, int]:
    names = {n for m in g.members.values() for n in m.subscribed_topic_names}
    return {topics[n].topic_id: topics[n].partitions for n in sorted(names) if n in topics}


def rebalance(g: ShareGroup, topics: Mapping[str, TopicInfo]) -> dict[str, Assignment]:
    """Bump the group epoch and compute every member's target."""
    g.group_epoch += 1
    g.assignment_epoch = g.group_epoch
    subs = {mid: frozenset(topics[n].topic_id for n in m.subscribed_topic_names if n in topics)
            for mid, m in g.members.items()}
    return assign(subs, subscribed_topics(g, topics))


def heartbeat(g: ShareGroup, targets: dict[str, Assignment], req: ShareHeartbeat,
              topics: Mapping[str, TopicInfo], settings: ShareSettings, now_ms: int) -> ShareAnswer:
    """Apply one heartbeat to `g` (and its `targets`, replaced on a rebalance) and answer it."""
    if not req.member_id:
        return _refuse(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if req.member_epoch < LEAVE_EPOCH:
        return _refuse(ErrorCode.INVALID_REQUEST, f"MemberEpoch {req.member_epoch} is invalid.")
    m = g.members.get(req.member_id)
    if req.member_epoch == LEAVE_EPOCH:
        if m is None:
            return _refuse(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not in group {g.group_id}.")
        del g.members[req.member_id]
        targets.clear()
        targets.update(rebalance(g, topics))
        return ShareAnswer(ErrorCode.NONE, member_id=req.member_id, member_epoch=LEAVE_EPOCH)
    changed = False
    if req.member_epoch == JOIN_EPOCH:
        if not req.subscribed_topic_names:
            return _refuse(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        if m is None and len(g.members) >= settings.max_size:
            return _refuse(ErrorCode.GROUP_MAX_SIZE_REACHED, f"The share group has reached its maximum capacity of "
                                                             f"{settings.max_size} members.")
        m = g.members[req.member_id] = ShareMember(req.member_id, 0, req.client_id, req.client_host, req.rack_id,
                                                   tuple(sorted(req.subscribed_topic_names)))
        changed = True
    elif m is None:
        return _refuse(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not in group {g.group_id}.")
    elif req.member_epoch != m.member_epoch:
        return _refuse(ErrorCode.FENCED_MEMBER_EPOCH, f"The share group member has a member epoch "
                                                      f"({req.member_epoch}) different from the coordinator's "
                                                      f"({m.member_epoch}).")
    elif (
        req.subscribed_topic_names is not None and tuple(sorted(req.subscribed_topic_names)) != m.subscribed_topic_names
    ):
        m.subscribed_topic_names = tuple(sorted(req.subscribed_topic_names))
        changed = True
    m.last_heartbeat_ms = now_ms
    m.client_id, m.client_host = req.client_id or m.client_id, req.client_host or m.client_host
    if changed or g.topics_seen != subscribed_topics(g, topics):
        g.topics_seen = subscribed_topics(g, topics)
        targets.clear()
        targets.update(rebalance(g, topics))
    send = req.subscribed_topic_names is not None
    if m.member_epoch < g.assignment_epoch:
        m.member_epoch = g.assignment_epoch
        m.assigned = dict(targets.get(m.member_id, {}))
        send = True
    return ShareAnswer(ErrorCode.NONE, member_id=m.member_id, member_epoch=m.member_epoch,
                       heartbeat_interval_ms=settings.heartbeat_interval_ms,
                       assignment=dict(m.assigned) if send else None)


def expire(g: ShareGroup, targets: dict[str, Assignment], topics: Mapping[str, TopicInfo],
           settings: ShareSettings, now_ms: int) -> list[str]:
    """Members silent for longer than the session timeout leave the group."""
    gone = [mid for mid, m in g.members.items() if now_ms - m.last_heartbeat_ms > settings.session_timeout_ms]
    for mid in gone:
        del g.members[mid]
    if gone:
        targets.clear()
        targets.update(rebalance(g, topics))
    return gone
