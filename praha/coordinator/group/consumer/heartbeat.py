"""The decisions of KIP-848's ConsumerGroupHeartbeat, leave and timeouts: no I/O, no clock.

Each decision takes the coordinator's groups and a request (or a timer's firing), checks it
with Kafka's errors, and returns the records to write to `__consumer_offsets`, the answer,
and what the coordinator's timers must do. The records are already replayed onto the group
(`replay.py`) when the decision returns, as Kafka's coordinator applies them to its
in-memory state before the write; a coordinator whose append then fails must reload the
partition from its log (the state it answered from is then gone, as on a failover).

A heartbeat, in order (Kafka's `GroupMetadataManager.consumerGroupHeartbeat`):
1. validate the request (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION);
2. epoch -1 / -2: the member leaves (for good / a static member for now);
3. find or create the group (only epoch 0 creates; else GROUP_ID_NOT_FOUND), check its size;
4. find the member: dynamic by id, static by instance id (UNKNOWN_MEMBER_ID,
   UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID), and its epoch (FENCED_MEMBER_EPOCH);
5. a changed subscription, a newly resolved regex or changed topic metadata bump the group epoch;
6. a group epoch above the target assignment's runs the assignor (sticky) for the new target;
7. the member reconciles one step towards its target (`reconcile.py`).
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from praha.coordinator.group.consumer.assignors import ASSIGNORS, DEFAULT_ASSIGNORS, MemberSpec
from praha.coordinator.group.consumer.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    TopicInfo,
    assignment_of,
    is_subset,
)
from praha.coordinator.group.consumer.reconcile import Owned, reconcile
from praha.coordinator.group.consumer.records import (
    CurrentAssignmentKey,
    CurrentAssignmentValue,
    GroupEpochKey,
    GroupEpochValue,
    MemberMetadataKey,
    MemberMetadataValue,
    PartitionMetadataKey,
    PartitionMetadataValue,
    Record,
    RegexKey,
    RegexValue,
    TargetEpochKey,
    TargetEpochValue,
    TargetMemberKey,
    TargetMemberValue,
)
from praha.coordinator.group.consumer.replay import replay
from praha.coordinator.group.consumer.subscription import compile_regex, resolve, subscription_metadata
from praha.errors import ErrorCode, PrahaError


@dataclass(frozen=True, slots=True)
class ConsumerGroupSettings:
    """The broker's `group.consumer.*` settings the decisions need."""

    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = DEFAULT_ASSIGNORS

    @property
    def default_assignor(self) -> str:
        return self.assignors[0]


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """ConsumerGroupHeartbeat v0-1's fields; None means "not sent, unchanged"."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    #: the member's assignment, sent when it changed or the request was a full one
    assignment: Assignment | None = None


class TimerKind(Enum):
    """A member's timers; each one that fires fences the member (Kafka's timer keys)."""

    SESSION = "session"
    #: a consumer-protocol member must revoke within its rebalance timeout
    REVOCATION = "revocation"
    #: a classic member told REBALANCE_IN_PROGRESS must send JoinGroup within its rebalance timeout
    JOIN = "join"
    #: a classic member answered JoinGroup must send SyncGroup within its rebalance timeout
    SYNC = "sync"


@dataclass(frozen=True, slots=True)
class Timers:
    """What the coordinator's timers must do after a decision (keys: group id, member id)."""

    #: (member id, session timeout ms): restart this member's session timer
    session: tuple[str, int] | None = None
    #: (member id, member epoch, rebalance timeout ms): the member must revoke within this time
    revocation: tuple[str, int, int] | None = None
    #: member ids whose timers (every kind) are cancelled
    cancel: tuple[str, ...] = ()
    #: (member id, rebalance timeout ms): a classic member's join timer, started unless already running
    join: tuple[str, int] | None = None
    #: (member id, rebalance timeout ms): a classic member's sync timer, restarted
    sync: tuple[str, int] | None = None
    #: (member id, kind): these timers stop (a classic member joined or synced in time)
    stop: tuple[tuple[str, TimerKind], ...] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    records: list[Record]
    answer: HeartbeatAnswer | None = None
    timers: Timers = field(default_factory=Timers)


def _invalid(message: str) -> PrahaError:
    return PrahaError(message, ErrorCode.INVALID_REQUEST)


def _no_empty(value: str | None, what: str) -> None:
    if value is not None and not value.strip():
        raise _invalid(f"{what} can't be empty.")


def validate(req: HeartbeatRequest, settings: ConsumerGroupSettings) -> None:
    """Kafka's checks of a heartbeat's shape, before any state is read."""
    _no_empty(req.group_id, "GroupId")
    _no_empty(req.instance_id, "InstanceId")
    _no_empty(req.rack_id, "RackId")
    if req.member_epoch > 0 or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        _no_empty(req.member_id, "MemberId")
    elif req.member_epoch == 0:
        if req.version >= 1:
            _no_empty(req.member_id, "MemberId")
        if req.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise _invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        _no_empty(req.member_id, "MemberId")
        if req.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    else:
        raise _invalid("MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in settings.assignors:
        raise PrahaError(f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                         f"{', '.join(settings.assignors)}.", ErrorCode.UNSUPPORTED_ASSIGNOR)
    if req.subscribed_topic_regex:
        compile_regex(req.subscribed_topic_regex)


# ------------------------------------------------------------------ helpers
def _member_records(group_id: str, m: ConsumerMember) -> Record:
    return Record(MemberMetadataKey(group_id, m.member_id), MemberMetadataValue(
        m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
        m.subscribed_topic_regex, m.rebalance_timeout_ms, m.server_assignor, m.classic))


def _current_record(group_id: str, m: ConsumerMember) -> Record:
    return Record(CurrentAssignmentKey(group_id, m.member_id), CurrentAssignmentValue(
        m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending_revocation))


def _emit(groups: dict[str, ConsumerGroup], out: list[Record], *records: Record) -> None:
    out.extend(records)
    replay(groups, records)


def _removal(group_id: str, member_id: str) -> list[Record]:
    return [Record(CurrentAssignmentKey(group_id, member_id), None),
            Record(TargetMemberKey(group_id, member_id), None),
            Record(MemberMetadataKey(group_id, member_id), None)]


def _fence(groups: dict[str, ConsumerGroup], g: ConsumerGroup, member_id: str) -> list[Record]:
    """The member is gone: its records deleted, the group epoch bumped so the rest rebalance."""
    out: list[Record] = []
    _emit(groups, out, *_removal(g.group_id, member_id))
    _emit(groups, out, Record(GroupEpochKey(g.group_id), GroupEpochValue(g.group_epoch + 1)))
    return out


def _existing(groups: Mapping[str, ConsumerGroup], group_id: str) -> ConsumerGroup:
    g = groups.get(group_id)
    if g is None or g.dead:
        raise PrahaError(f"Group {group_id} not found.", ErrorCode.GROUP_ID_NOT_FOUND)
    return g


def _unknown(what: str) -> PrahaError:
    return PrahaError(what, ErrorCode.UNKNOWN_MEMBER_ID)


def _check_epoch(m: ConsumerMember, received: int, owned: Owned) -> None:
    if received > m.member_epoch:
        raise PrahaError(f"member epoch {received} is ahead of the coordinator's {m.member_epoch}; "
                         "the member must abandon its partitions and rejoin", ErrorCode.FENCED_MEMBER_EPOCH)
    if received < m.member_epoch and (received != m.previous_member_epoch or not is_subset(owned, m.assigned)):
        raise PrahaError(f"member epoch {received} is behind the coordinator's {m.member_epoch}; "
                         "the member must abandon its partitions and rejoin", ErrorCode.FENCED_MEMBER_EPOCH)


def _check_static_owner(m: ConsumerMember | None, member_id: str, instance_id: str) -> ConsumerMember:
    if m is None:
        raise _unknown(f"Instance id {instance_id} is unknown.")
    if m.member_id != member_id:
        raise PrahaError(f"static member {member_id} with instance id {instance_id} was fenced by member "
                         f"{m.member_id}", ErrorCode.FENCED_INSTANCE_ID)
    return m


# ------------------------------------------------------------------ heartbeat
def heartbeat(groups: dict[str, ConsumerGroup], req: HeartbeatRequest, topics: Mapping[str, TopicInfo],
              settings: ConsumerGroupSettings, now_ms: int) -> Decision:
    validate(req, settings)
    if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
        return leave(groups, req, settings)
    out: list[Record] = []
    joining = req.member_epoch == 0
    g = groups.get(req.group_id) if joining else _existing(groups, req.group_id)
    if g is None or g.dead:
        g = groups[req.group_id] = ConsumerGroup(req.group_id)
    member_id = req.member_id or str(uuid.uuid4())  # v0: the coordinator names new members
    if len(g.members) >= settings.max_size and member_id not in g.members and \
            g.static_member(req.instance_id) is None:
        raise PrahaError(f"The consumer group has reached its maximum capacity of {settings.max_size} members.",
                         ErrorCode.GROUP_MAX_SIZE_REACHED)
    member = _find_member(groups, g, req, member_id, joining, out)
    updated = member if _unchanged(member, req) else member.with_(
        instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
        rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                              else member.rebalance_timeout_ms),
        server_assignor=req.server_assignor if req.server_assignor is not None else member.server_assignor,
        subscribed_topic_names=(tuple(req.subscribed_topic_names) if req.subscribed_topic_names is not None
                                else member.subscribed_topic_names),
        subscribed_topic_regex=(req.subscribed_topic_regex or None if req.subscribed_topic_regex is not None
                                else member.subscribed_topic_regex),
        client_id=req.client_id, client_host=req.client_host)
    bump = False
    if _metadata_changed(member, updated) or member_id not in g.members:
        _emit(groups, out, _member_records(g.group_id, updated))
        bump = updated.subscribed_topic_names != member.subscribed_topic_names \
            or updated.subscribed_topic_regex != member.subscribed_topic_regex \
            or updated.server_assignor != member.server_assignor or member_id not in g.members
    if bump:  # topics themselves changing is `topics_changed`'s, called on metadata updates
        out.extend(_refresh_regexes(groups, g, topics, now_ms))
        _refresh_metadata(groups, g, topics, out)
    if bump:
        _emit(groups, out, Record(GroupEpochKey(g.group_id), GroupEpochValue(g.group_epoch + 1)))
    if g.group_epoch > g.assignment_epoch:
        out.extend(_new_target(groups, g, settings))
    before = g.members[member_id]
    owned = _maybe_owned(g, before, _proof_of_ownership(before, req))
    after = reconcile(before, g.assignment_epoch, g.target_of(member_id), g.current_partition_epoch,
                      None if owned is None else tuple(owned.items()))
    if after != before:
        _emit(groups, out, _current_record(g.group_id, after))
    full = joining or (req.rebalance_timeout_ms != -1 and req.topic_partitions is not None and
                       (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None))
    changed = after.assigned != member.assigned or after.member_epoch != member.member_epoch
    if req.topic_partitions is not None:
        g.acknowledged[member_id] = assignment_of(req.topic_partitions)
    answer = HeartbeatAnswer(member_id, after.member_epoch, settings.heartbeat_interval_ms,
                             after.assigned if full or changed or _unacknowledged(g, after) else None)
    if answer.assignment is not None:
        given = {tid: parts - (owned or {}).get(tid, frozenset()) if owned is not None else parts
                 for tid, parts in answer.assignment.items()}
        _note_unconfirmed(g, member_id, given)
    revocation = None
    if after.state is MemberState.UNREVOKED_PARTITIONS and before.state is not MemberState.UNREVOKED_PARTITIONS:
        revocation = (member_id, after.member_epoch, after.rebalance_timeout_ms)
    return Decision(out, answer, Timers(session=(member_id, settings.session_timeout_ms), revocation=revocation))


def _proof_of_ownership(m: ConsumerMember, req: HeartbeatRequest) -> Owned:
    """The owned partitions a heartbeat shows, or None ("assume it still holds all") for one sent
    at the member's previous epoch (praha's addition to Kafka's rule).

    Such a heartbeat is accepted (its answer at the current epoch may have been lost), but it may
    also have been sent while that answer was on its way: the member is about to take the
    partitions the current epoch gave it, so their absence from its list does not mean it let them
    go. Taken as a release, a partition the target then moved on was given to another member while
    this one took it (a real-cluster trial saw the two own it for 2 ms). The member learns its
    epoch from the answer (it is repeated until reported) and its next heartbeat decides."""
    if 0 < req.member_epoch < m.member_epoch:
        return None
    return req.topic_partitions


def _maybe_owned(g: ConsumerGroup, m: ConsumerMember, reported: Owned) -> dict[uuid.UUID, frozenset[int]] | None:
    """What a heartbeat proves the member may still own: what it reports, plus what answers gave it
    that it has never reported owning (praha's addition to Kafka's rule; the issue 22 flake).

    librdkafka reports its last acknowledged assignment in a full request (the first heartbeats
    after joining, any after an error), also while it is still taking a newer one: a member given
    all six partitions at epoch 1 reported owning none at epoch 1 while its assign callback ran,
    the target had moved four of them on, and they went to another member 3 ms before the first
    one revoked them. A partition given and never reported counts as owned until a heartbeat
    reports it, or reports exactly the member's assignment (it has taken in the last answer)."""
    if reported is None:
        return None
    now = assignment_of(reported)
    pending = g.unconfirmed.get(m.member_id, {})
    if now == dict(m.assigned):
        pending = {}
    left = {tid: parts - now.get(tid, frozenset()) for tid, parts in pending.items()}
    left = {tid: parts for tid, parts in left.items() if parts}
    g.unconfirmed[m.member_id] = left
    return assignment_of([*now.items(), *left.items()])


def _note_unconfirmed(g: ConsumerGroup, member_id: str, given: Mapping[uuid.UUID, frozenset[int]]) -> None:
    pending = dict(g.unconfirmed.get(member_id, {}))
    for tid, parts in given.items():
        if parts:
            pending[tid] = pending.get(tid, frozenset()) | parts
    g.unconfirmed[member_id] = pending


def _unacknowledged(g: ConsumerGroup, m: ConsumerMember) -> bool:
    """The member has not confirmed its assignment: the answer carries it again (praha's addition).

    Kafka sends an assignment once, when it changes, and again only on a full request. librdkafka
    times its heartbeat out after one heartbeat interval and then sends a plain heartbeat, so an
    answer that arrives late (a slow acks=all write on a busy machine, a 100 ms interval) loses the
    assignment for good and the member waits forever. librdkafka confirms an assignment that
    differs from its own with the next heartbeat's owned partitions: until that report matches,
    the assignment is repeated (a repeated one equal to its own is ignored by the client)."""
    acked = g.acknowledged.get(m.member_id)
    return acked is not None and acked is not m.assigned and acked != m.assigned


def _unchanged(m: ConsumerMember, req: HeartbeatRequest) -> bool:
    """The request changes none of the member's fields (librdkafka's regular heartbeat sends none)."""
    return (req.instance_id is None or req.instance_id == m.instance_id) and \
        (req.rack_id is None or req.rack_id == m.rack_id) and \
        (req.rebalance_timeout_ms == -1 or req.rebalance_timeout_ms == m.rebalance_timeout_ms) and \
        (req.server_assignor is None or req.server_assignor == m.server_assignor) and \
        (req.subscribed_topic_names is None or tuple(req.subscribed_topic_names) == m.subscribed_topic_names) and \
        (req.subscribed_topic_regex is None or (req.subscribed_topic_regex or None) == m.subscribed_topic_regex) and \
        req.client_id == m.client_id and req.client_host == m.client_host


def is_steady(groups: Mapping[str, ConsumerGroup], req: HeartbeatRequest) -> bool:
    """A heartbeat that cannot change the group: a known dynamic member at its epoch, reconciled,
    in a group at its target epoch, changing no field and reporting nothing new. The coordinator
    skips the copy it keeps to undo a failed write (most heartbeats of a settled group are these)."""
    g = groups.get(req.group_id)
    if g is None or g.dead or req.member_epoch <= 0 or req.instance_id is not None:
        return False
    m = g.members.get(req.member_id)
    return m is not None and m.member_epoch == req.member_epoch == g.assignment_epoch == g.group_epoch and \
        m.state is MemberState.STABLE and req.topic_partitions is None and _unchanged(m, req)


def steady_heartbeat(groups: Mapping[str, ConsumerGroup], req: HeartbeatRequest,
                     settings: ConsumerGroupSettings) -> Decision:
    """`heartbeat`'s decision for a request `is_steady` holds for, without its steps: no records,
    the member's session restarted, its assignment only if it has not reported it yet."""
    g = groups[req.group_id]
    m = g.members[req.member_id]
    return Decision([], HeartbeatAnswer(m.member_id, m.member_epoch, settings.heartbeat_interval_ms,
                                        m.assigned if _unacknowledged(g, m) else None),
                    Timers(session=(m.member_id, settings.session_timeout_ms)))


def _metadata_changed(a: ConsumerMember, b: ConsumerMember) -> bool:
    return (a.instance_id, a.rack_id, a.client_id, a.client_host, a.subscribed_topic_names, a.subscribed_topic_regex,
            a.rebalance_timeout_ms, a.server_assignor, a.classic) != \
        (b.instance_id, b.rack_id, b.client_id, b.client_host, b.subscribed_topic_names, b.subscribed_topic_regex,
         b.rebalance_timeout_ms, b.server_assignor, b.classic)


def _find_member(groups: dict[str, ConsumerGroup], g: ConsumerGroup, req: HeartbeatRequest, member_id: str,
                 joining: bool, out: list[Record]) -> ConsumerMember:
    if req.instance_id is None:
        m = g.members.get(member_id)
        if m is None:
            if not joining:
                raise _unknown(f"Member {member_id} is not a member of group {g.group_id}.")
            return ConsumerMember(member_id)
        if not joining:
            _check_epoch(m, req.member_epoch, req.topic_partitions)
        return m
    static = g.static_member(req.instance_id)
    if not joining:
        m = _check_static_owner(static, member_id, req.instance_id)
        _check_epoch(m, req.member_epoch, req.topic_partitions)
        return m
    if static is None:
        return g.members.get(member_id) or ConsumerMember(member_id)
    if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise PrahaError(f"Static member {member_id} with instance id {req.instance_id} cannot join the group "
                         f"because the instance id is owned by {static.member_id} member.",
                         ErrorCode.UNRELEASED_INSTANCE_ID)
    # the instance comes back under a new member id: it takes over the old one's assignment
    replacement = static.with_(member_id=member_id, member_epoch=0, previous_member_epoch=0)
    target = g.target_of(static.member_id)
    _emit(groups, out, *_removal(g.group_id, static.member_id))
    _emit(groups, out, _member_records(g.group_id, replacement),
          Record(TargetMemberKey(g.group_id, member_id), TargetMemberValue(target)),
          _current_record(g.group_id, replacement))
    return replacement


def _refresh_regexes(groups: dict[str, ConsumerGroup], g: ConsumerGroup, topics: Mapping[str, TopicInfo],
                     now_ms: int) -> list[Record]:
    """Resolve every regex in use against the topics now; records for the ones whose result changed,
    tombstones for the ones no member uses any more."""
    out: list[Record] = []
    in_use = {m.subscribed_topic_regex for m in g.members.values() if m.subscribed_topic_regex}
    for rx in sorted(in_use):
        found = resolve(rx, topics)
        if g.resolved_regexes.get(rx) != found:
            _emit(groups, out,
                  Record(RegexKey(g.group_id, rx), RegexValue(tuple(sorted(found)), g.group_epoch, now_ms)))
    for rx in sorted(set(g.resolved_regexes) - in_use):
        _emit(groups, out, Record(RegexKey(g.group_id, rx), None))
    return out


def _refresh_metadata(groups: dict[str, ConsumerGroup], g: ConsumerGroup, topics: Mapping[str, TopicInfo],
                      out: list[Record]) -> bool:
    meta = subscription_metadata(g.subscribed_topic_names(), topics)
    if meta == g.subscription_metadata:
        return False
    _emit(groups, out, Record(PartitionMetadataKey(g.group_id), PartitionMetadataValue(tuple(meta.values()))))
    return True


def _new_target(groups: dict[str, ConsumerGroup], g: ConsumerGroup, settings: ConsumerGroupSettings) -> list[Record]:
    """The assignor's answer for the group epoch, written as the changed members' targets."""
    by_name = g.subscription_metadata
    specs = {mid: MemberSpec(frozenset(by_name[t].topic_id for t in g.member_topics(m) if t in by_name),
                             g.target_of(mid))
             for mid, m in g.members.items()}
    assignor = ASSIGNORS[g.preferred_assignor(settings.default_assignor)]
    result = assignor(specs, {t.topic_id: t.partitions for t in by_name.values()})
    out: list[Record] = []
    for mid in sorted(result):
        if dict(g.target_of(mid)) != result[mid]:
            _emit(groups, out, Record(TargetMemberKey(g.group_id, mid), TargetMemberValue(result[mid])))
    _emit(groups, out, Record(TargetEpochKey(g.group_id), TargetEpochValue(g.group_epoch)))
    return out


# ------------------------------------------------------------------ leave and timers
def leave(groups: dict[str, ConsumerGroup], req: HeartbeatRequest, settings: ConsumerGroupSettings) -> Decision:
    g = _existing(groups, req.group_id)
    if req.instance_id is None:
        if req.member_id not in g.members:
            raise _unknown(f"Member {req.member_id} is not a member of group {g.group_id}.")
        return Decision(_fence(groups, g, req.member_id),
                        HeartbeatAnswer(req.member_id, req.member_epoch, settings.heartbeat_interval_ms),
                        Timers(cancel=(req.member_id,)))
    m = _check_static_owner(g.static_member(req.instance_id), req.member_id, req.instance_id)
    if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        return Decision(_fence(groups, g, m.member_id),
                        HeartbeatAnswer(m.member_id, req.member_epoch, settings.heartbeat_interval_ms),
                        Timers(cancel=(m.member_id,)))
    # a static member away for now keeps its assignment until its session times out
    out: list[Record] = []
    away = m.with_(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={})
    _emit(groups, out, _current_record(g.group_id, away))
    return Decision(out, HeartbeatAnswer(m.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH, settings.heartbeat_interval_ms))


def session_expired(groups: dict[str, ConsumerGroup], group_id: str, member_id: str) -> list[Record]:
    """The member's session timer fired: fence it (nothing when it is already gone)."""
    g = groups.get(group_id)
    if g is None or member_id not in g.members:
        return []
    return _fence(groups, g, member_id)


def revocation_expired(groups: dict[str, ConsumerGroup], group_id: str, member_id: str,
                       member_epoch: int) -> list[Record]:
    """The member did not revoke within its rebalance timeout: fence it, if it still has not."""
    g = groups.get(group_id)
    m = None if g is None else g.members.get(member_id)
    if g is None or m is None or m.state is not MemberState.UNREVOKED_PARTITIONS or m.member_epoch != member_epoch:
        return []
    return _fence(groups, g, member_id)


def topics_changed(groups: dict[str, ConsumerGroup], topics: Mapping[str, TopicInfo], now_ms: int,
                   group_ids: Iterable[str] | None = None) -> list[Record]:
    """Topics were created, deleted or grew: regexes resolved again, and every group whose
    subscribed topics changed gets a new group epoch (its members reconcile on their next heartbeat)."""
    out: list[Record] = []
    for gid in sorted(group_ids if group_ids is not None else list(groups)):
        g = groups.get(gid)
        if g is None or not g.members:
            continue
        out.extend(_refresh_regexes(groups, g, topics, now_ms))
        if _refresh_metadata(groups, g, topics, out):
            _emit(groups, out, Record(GroupEpochKey(gid), GroupEpochValue(g.group_epoch + 1)))
    return out


def delete_group(groups: dict[str, ConsumerGroup], group_id: str) -> list[Record]:
    """An empty group's tombstones (DeleteGroups, or offsets expiry of an empty group)."""
    g = _existing(groups, group_id)
    if g.members:
        raise PrahaError(f"Group {group_id} is not empty.", ErrorCode.NON_EMPTY_GROUP)
    out: list[Record] = []
    _emit(groups, out, *[Record(RegexKey(group_id, rx), None) for rx in sorted(g.resolved_regexes)],
          Record(TargetEpochKey(group_id), None), Record(PartitionMetadataKey(group_id), None),
          Record(GroupEpochKey(group_id), None))
    return out


# ------------------------------------------------------------------ offsets
def validate_offset_commit(g: ConsumerGroup, member_id: str, member_epoch: int, api_version: int) -> None:
    """OffsetCommit against a consumer group: an admin-style commit (epoch < 0) only while the
    group is empty; otherwise the member must exist and send its current epoch (v9+)."""
    if member_epoch < 0 and not g.members:
        return
    m = g.members.get(member_id)
    if m is None:
        raise _unknown(f"Member {member_id} is not a member of group {g.group_id}.")
    if m.classic is not None:  # a classic member (after an upgrade) commits with its generation, any version
        if member_epoch != m.member_epoch:
            raise PrahaError(f"generation {member_epoch} is not the member's {m.member_epoch}",
                             ErrorCode.ILLEGAL_GENERATION)
        return
    if api_version < 9:
        raise PrahaError("OffsetCommit version 9 or above must be used by members using the consumer group protocol",
                         ErrorCode.UNSUPPORTED_VERSION)
    if member_epoch != m.member_epoch:
        raise PrahaError(f"member epoch {member_epoch} is not the current {m.member_epoch}",
                         ErrorCode.STALE_MEMBER_EPOCH)


def validate_offset_fetch(g: ConsumerGroup, member_id: str | None, member_epoch: int) -> None:
    """OffsetFetch v9 naming a member: it must exist at its current epoch; without one, anyone may read."""
    if member_id is None or member_epoch < 0:
        return
    m = g.members.get(member_id)
    if m is None:
        raise _unknown(f"Member {member_id} is not a member of group {g.group_id}.")
    if member_epoch != m.member_epoch:
        raise PrahaError(f"member epoch {member_epoch} is not the current {m.member_epoch}",
                         ErrorCode.STALE_MEMBER_EPOCH)
