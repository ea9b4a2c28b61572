"""Online migration between the classic and the consumer protocol, with no I/O (Kafka 4's
`group.consumer.migration.policy`, `ConsumerGroup.fromClassicGroup`, `ClassicGroup.fromConsumerGroup`).

Upgrade: a ConsumerGroupHeartbeat joining a classic group of the consumer protocol type
turns it into a consumer group at epoch = the classic generation; every classic member
becomes a member at that epoch owning the partitions of its last SyncGroup, its JoinGroup
kept as `ClassicMetadata`. The joining member then bumps the group epoch as any new member.

Classic members inside a consumer group are answered from the group's assignment: their
Heartbeat says REBALANCE_IN_PROGRESS while they must catch up, their JoinGroup is one
reconciliation step (the owned partitions of their subscription are what they still hold)
answered at once with their member epoch as the generation and no member list (they are
never the leader), their SyncGroup returns their assigned partitions.

Downgrade: when the last ConsumerGroupHeartbeat member is gone and only classic members
remain, the group's records are tombstoned and it goes back to a classic group at the generation
its classic members hold (`downgrade`), which then rebalances (every member rejoins through JoinGroup).
Offsets are keyed by the group id alone and never move.
"""
from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from praha.coordinator.group.consumer.heartbeat import (
    ConsumerGroupSettings,
    Decision,
    HeartbeatAnswer,
    TimerKind,
    Timers,
    _current_record,
    _emit,
    _existing,
    _member_records,
    _new_target,
    _refresh_metadata,
    _removal,
    _unknown,
    delete_group,
)
from praha.coordinator.group.consumer.model import (
    Assignment,
    ClassicMetadata,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    TopicInfo,
    assignment_of,
)
from praha.coordinator.group.consumer.reconcile import reconcile
from praha.coordinator.group.consumer.records import (
    GroupEpochKey,
    GroupEpochValue,
    PartitionMetadataKey,
    PartitionMetadataValue,
    Record,
    TargetEpochKey,
    TargetEpochValue,
    TargetMemberKey,
    TargetMemberValue,
)
from praha.coordinator.group.consumer.subscription import subscription_metadata
from praha.errors import ErrorCode, PrahaError

#: the embedded protocol type a group must use to move between the two protocols
CONSUMER_PROTOCOL_TYPE = "consumer"


class MigrationPolicy(Enum):
    """`group.consumer.migration.policy` (Kafka 4's default: bidirectional)."""

    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @property
    def upgrades(self) -> bool:
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrades(self) -> bool:
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)


# ------------------------------------------------------------------ ConsumerProtocol bytes
@dataclass(frozen=True, slots=True)
class Subscription:
    """Kafka's ConsumerProtocolSubscription v0-3 (topics; owned partitions v1+; rack v3)."""

    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
    rack_id: str | None = None


class _Bytes:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> int:
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(v)

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n]
        if len(s) != n:
            raise struct.error("string truncated")
        self.pos += n
        return s.decode()

    def skip_bytes(self) -> None:
        n = self.take(">i")
        self.pos += max(n, 0)

    def topic_partitions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        out = []
        for _ in range(max(self.take(">i"), 0)):
            name = self.string() or ""
            out.append((name, tuple(self.take(">i") for _ in range(max(self.take(">i"), 0)))))
        return tuple(out)


def _malformed(what: str, e: Exception) -> PrahaError:
    return PrahaError(f"malformed embedded consumer protocol {what}: {e}", ErrorCode.INCONSISTENT_GROUP_PROTOCOL)


def decode_subscription(data: bytes) -> Subscription:
    try:
        r = _Bytes(data)
        version = r.take(">h")
        topics = tuple(r.string() or "" for _ in range(max(r.take(">i"), 0)))
        r.skip_bytes()  # user data
        if version < 1 or r.pos >= len(data):
            return Subscription(version, topics)
        owned = r.topic_partitions()
        if version >= 2 and r.pos < len(data):
            r.take(">i")  # generation id
        rack = r.string() if version >= 3 and r.pos < len(data) else None
        return Subscription(version, topics, owned, rack)
    except (struct.error, UnicodeDecodeError) as e:
        raise _malformed("subscription", e) from None


def decode_assignment(data: bytes) -> tuple[tuple[str, tuple[int, ...]], ...]:
    if not data:
        return ()
    try:
        r = _Bytes(data)
        r.take(">h")
        return r.topic_partitions()
    except (struct.error, UnicodeDecodeError) as e:
        raise _malformed("assignment", e) from None


def encode_assignment(pairs: Iterable[tuple[str, Iterable[int]]], version: int) -> bytes:
    """ConsumerProtocolAssignment at the member's subscription version (v0's layout leads every one)."""
    rows = [(t, sorted(ps)) for t, ps in sorted(pairs)]
    out = bytearray(struct.pack(">hi", max(min(version, 3), 0), len(rows)))
    for topic, parts in rows:
        name = topic.encode()
        out += struct.pack(">h", len(name)) + name + struct.pack(">i", len(parts))
        out += b"".join(struct.pack(">i", p) for p in parts)
    out += struct.pack(">i", -1)  # user data: null
    return bytes(out)


def _by_ids(pairs: Iterable[tuple[str, Iterable[int]]],
            topics: Mapping[str, TopicInfo]) -> dict[uuid.UUID, frozenset[int]]:
    """Named partitions as an assignment by topic id; topics that no longer exist are dropped."""
    return assignment_of((topics[t].topic_id, ps) for t, ps in pairs if t in topics)


def _by_names(a: Assignment, topics: Mapping[str, TopicInfo]) -> list[tuple[str, frozenset[int]]]:
    names = {t.topic_id: t.name for t in topics.values()}
    return [(names[tid], ps) for tid, ps in a.items() if tid in names]


# ------------------------------------------------------------------ upgrade
@dataclass(frozen=True, slots=True)
class ClassicMemberState:
    """What the upgrade needs of a classic member (its JoinGroup and its last SyncGroup)."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    #: its subscription for the group's chosen protocol
    subscription: bytes
    assignment: bytes


def upgrade(groups: dict[str, ConsumerGroup], group_id: str, generation: int,
            members: Sequence[ClassicMemberState], topics: Mapping[str, TopicInfo]) -> list[Record]:
    """The records that make a classic group a consumer group (replayed onto `groups`): every
    member Stable at epoch = generation, owning and targeted at its classic assignment."""
    groups.pop(group_id, None)
    groups[group_id] = ConsumerGroup(group_id)
    converted = []
    for c in members:
        try:
            sub = decode_subscription(c.subscription)
            assigned = _by_ids(decode_assignment(c.assignment), topics)
        except PrahaError as e:
            raise PrahaError(f"Cannot upgrade the classic group {group_id} to a consumer group: {e}",
                             ErrorCode.GROUP_ID_NOT_FOUND) from None
        converted.append(ConsumerMember(
            c.member_id, c.instance_id, sub.rack_id, c.client_id, c.client_host, sub.topics, None,
            c.rebalance_timeout_ms, None, generation, generation, MemberState.STABLE, assigned, {},
            ClassicMetadata(c.session_timeout_ms, c.protocols)))
    meta = subscription_metadata({t for m in converted for t in m.subscribed_topic_names}, topics)
    out: list[Record] = []
    _emit(groups, out, *[_member_records(group_id, m) for m in converted])
    _emit(groups, out, Record(GroupEpochKey(group_id), GroupEpochValue(generation)),
          Record(PartitionMetadataKey(group_id), PartitionMetadataValue(tuple(meta.values()))))
    _emit(groups, out, *[Record(TargetMemberKey(group_id, m.member_id), TargetMemberValue(m.assigned))
                         for m in converted])
    _emit(groups, out, Record(TargetEpochKey(group_id), TargetEpochValue(generation)))
    _emit(groups, out, *[_current_record(group_id, m) for m in converted])
    return out


# ------------------------------------------------------------------ classic members in a consumer group
@dataclass(frozen=True, slots=True)
class ClassicJoin:
    group_id: str
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]


def _classic_member(g: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
    """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is not None:
        mid = g.static_members.get(instance_id)
        if mid is None:
            raise _unknown(f"Instance id {instance_id} is unknown.")
        if mid != member_id:
            raise PrahaError(f"Static member {member_id} with instance id {instance_id} was fenced by member {mid}.",
                             ErrorCode.FENCED_INSTANCE_ID)
    m = g.members.get(member_id)
    if m is None or m.classic is None:
        raise _unknown(f"Member {member_id} is not a classic member of group {g.group_id}.")
    return m


def _check_generation(m: ConsumerMember, generation: int) -> None:
    if generation != m.member_epoch:
        raise PrahaError(f"The member {m.member_id} generation {generation} is not the current {m.member_epoch}.",
                         ErrorCode.ILLEGAL_GENERATION)


def classic_join(groups: dict[str, ConsumerGroup], req: ClassicJoin, topics: Mapping[str, TopicInfo],
                 settings: ConsumerGroupSettings) -> Decision:
    """A classic member's JoinGroup in a consumer group: one heartbeat's worth of decisions.
    The answer's epoch is the JoinGroup generation; the member id is the (maybe new) member's."""
    g = _existing(groups, req.group_id)
    if req.protocol_type != CONSUMER_PROTOCOL_TYPE or not req.protocols:
        raise PrahaError(f"Group {g.group_id} uses the consumer protocol type; a member of protocol type "
                         f"{req.protocol_type!r} cannot join it.", ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    member_id = req.member_id or str(uuid.uuid4())
    if len(g.members) >= settings.max_size and member_id not in g.members and \
            g.static_member(req.instance_id) is None:
        raise PrahaError(f"The consumer group has reached its maximum capacity of {settings.max_size} members.",
                         ErrorCode.GROUP_MAX_SIZE_REACHED)
    sub = decode_subscription(req.protocols[0][1])
    out: list[Record] = []
    member = _joining_member(groups, g, req, member_id, out)
    updated = member.with_(
        instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
        rack_id=sub.rack_id if sub.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0 else member.rebalance_timeout_ms,
        subscribed_topic_names=sub.topics, subscribed_topic_regex=None,
        client_id=req.client_id, client_host=req.client_host,
        classic=ClassicMetadata(req.session_timeout_ms, req.protocols))
    new = member_id not in g.members
    if updated != member or new:
        _emit(groups, out, _member_records(g.group_id, updated))
    if new or updated.subscribed_topic_names != member.subscribed_topic_names or \
            updated.subscribed_topic_regex != member.subscribed_topic_regex:
        _refresh_metadata(groups, g, topics, out)
        _emit(groups, out, Record(GroupEpochKey(g.group_id), GroupEpochValue(g.group_epoch + 1)))
    if g.group_epoch > g.assignment_epoch:
        out.extend(_new_target(groups, g, settings))
    before = g.members[member_id]
    owned = tuple(_by_ids(sub.owned, topics).items())  # what it still holds (eager members: nothing)
    after = reconcile(before, g.assignment_epoch, g.target_of(member_id), g.current_partition_epoch, owned)
    if after != before:
        _emit(groups, out, _current_record(g.group_id, after))
    # Kafka's timers of a classic member: no revocation timer (it revokes by rejoining, under its
    # join timer); joined in time, it must now send SyncGroup within its rebalance timeout
    rebalance_ms = after.rebalance_timeout_ms if after.rebalance_timeout_ms > 0 else req.session_timeout_ms
    return Decision(out, HeartbeatAnswer(member_id, after.member_epoch, settings.heartbeat_interval_ms, after.assigned),
                    Timers(session=(member_id, req.session_timeout_ms), sync=(member_id, rebalance_ms),
                           stop=((member_id, TimerKind.JOIN),)))


def _joining_member(groups: dict[str, ConsumerGroup], g: ConsumerGroup, req: ClassicJoin, member_id: str,
                    out: list[Record]) -> ConsumerMember:
    if req.instance_id is None:
        m = g.members.get(member_id)
        if m is not None and m.classic is None:
            raise _unknown(f"Member {member_id} uses the consumer protocol, not JoinGroup.")
        return m or ConsumerMember(member_id)
    static = g.static_member(req.instance_id)
    if static is None:
        return ConsumerMember(member_id)
    if static.member_id == member_id:
        return static
    if req.member_id:
        raise PrahaError(f"Static member {member_id} with instance id {req.instance_id} was fenced by member "
                         f"{static.member_id}.", ErrorCode.FENCED_INSTANCE_ID)
    # the instance is back under a new member id: it takes over the old one's place and assignment
    target = g.target_of(static.member_id)
    replacement = static.with_(member_id=member_id)
    _emit(groups, out, *_removal(g.group_id, static.member_id))
    _emit(groups, out, _member_records(g.group_id, replacement),
          Record(TargetMemberKey(g.group_id, member_id), TargetMemberValue(target)),
          _current_record(g.group_id, replacement))
    return replacement


@dataclass(frozen=True, slots=True)
class ClassicAnswer:
    """A classic member's SyncGroup or Heartbeat in a consumer group: its error, what its timers
    must do, and (SyncGroup) its assignment as ConsumerProtocolAssignment bytes."""

    error: ErrorCode
    timers: Timers
    assignment: bytes = b""


def _must_rejoin(m: ConsumerMember, session_ms: int) -> ClassicAnswer:
    """REBALANCE_IN_PROGRESS, and the member must send JoinGroup within its rebalance timeout
    (a join timer already running keeps its deadline, as Kafka's scheduleIfAbsent)."""
    return ClassicAnswer(ErrorCode.REBALANCE_IN_PROGRESS, Timers(
        session=(m.member_id, session_ms), join=(m.member_id, m.rebalance_timeout_ms or session_ms)))


def classic_sync(g: ConsumerGroup, member_id: str, instance_id: str | None, generation: int,
                 protocol_type: str | None, protocol: str | None, topics: Mapping[str, TopicInfo]) -> ClassicAnswer:
    """A classic member's SyncGroup: its assigned partitions; its sync timer stops."""
    m = _classic_member(g, member_id, instance_id)
    assert m.classic is not None
    _check_generation(m, generation)
    name, meta = m.classic.protocols[0]
    if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or \
            (protocol is not None and protocol != name):
        raise PrahaError(f"protocol {protocol_type}/{protocol} does not match the member's "
                         f"{CONSUMER_PROTOCOL_TYPE}/{name}", ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    session_ms = m.classic.session_timeout_ms
    if g.group_epoch > m.member_epoch and m.state is not MemberState.UNREVOKED_PARTITIONS:
        return _must_rejoin(m, session_ms)
    version = struct.unpack_from(">h", meta)[0] if len(meta) >= 2 else 0
    known = {**{t.name: t for t in g.subscription_metadata.values()}, **topics}
    return ClassicAnswer(ErrorCode.NONE, Timers(session=(member_id, session_ms), stop=((member_id, TimerKind.SYNC),)),
                         encode_assignment(_by_names(m.assigned, known), version))


def classic_heartbeat(g: ConsumerGroup, member_id: str, instance_id: str | None, generation: int) -> ClassicAnswer:
    """NONE, or REBALANCE_IN_PROGRESS when the member must rejoin to take its next step."""
    m = _classic_member(g, member_id, instance_id)
    assert m.classic is not None
    _check_generation(m, generation)
    session_ms = m.classic.session_timeout_ms
    if m.member_epoch < g.group_epoch or m.state is MemberState.UNREVOKED_PARTITIONS or \
            (m.state is MemberState.UNRELEASED_PARTITIONS and not g.waiting_on_unreleased(m)):
        return _must_rejoin(m, session_ms)
    return ClassicAnswer(ErrorCode.NONE, Timers(session=(member_id, session_ms)))


def classic_leave(groups: dict[str, ConsumerGroup], g: ConsumerGroup, leaving: Sequence[tuple[str, str | None]],
                  topics: Mapping[str, TopicInfo]) -> tuple[list[Record], list[ErrorCode], list[str]]:
    """LeaveGroup of classic members: (records, per-member error, member ids gone)."""
    out: list[Record] = []
    codes: list[ErrorCode] = []
    gone: list[str] = []
    for member_id, instance_id in leaving:
        try:
            if instance_id is not None:
                mid = g.static_members.get(instance_id)
                if mid is None:
                    raise _unknown(f"Instance id {instance_id} is unknown.")
                member_id = member_id or mid
            m = _classic_member(g, member_id, instance_id)
        except PrahaError as e:
            codes.append(e.code)
            continue
        _emit(groups, out, *_removal(g.group_id, m.member_id))
        gone.append(m.member_id)
        codes.append(ErrorCode.NONE)
    if gone:
        _refresh_metadata(groups, g, topics, out)
        _emit(groups, out, Record(GroupEpochKey(g.group_id), GroupEpochValue(g.group_epoch + 1)))
    return out, codes, gone


# ------------------------------------------------------------------ downgrade
def may_downgrade(g: ConsumerGroup, policy: MigrationPolicy, classic_max_size: int) -> bool:
    """After a consumer-protocol member is gone: only classic members are left, and the policy allows."""
    return policy.downgrades and g.all_classic() and len(g.members) <= classic_max_size


def downgrade(groups: dict[str, ConsumerGroup], group_id: str) -> tuple[list[Record], list[ConsumerMember], int]:
    """Tombstones for the whole consumer group; (records, its classic members, the classic
    generation) for the coordinator to build the classic group from.

    A downgrade follows the fence (leave or timeout) of the last consumer-protocol member, which
    bumped the group epoch by one. Kafka converts the group instead of fencing that member, so
    the classic generation is the epoch before the bump: the one the reconciled classic members
    hold. They are then asked to rejoin (REBALANCE_IN_PROGRESS: a clean revoke, and commits at
    their generation still accepted) instead of told ILLEGAL_GENERATION (their partitions lost,
    their commits refused)."""
    g = _existing(groups, group_id)
    members = list(g.members.values())
    epoch = g.group_epoch - 1
    out: list[Record] = []
    for m in members:
        _emit(groups, out, *_removal(group_id, m.member_id))
    for mid in list(g.target):
        _emit(groups, out, Record(TargetMemberKey(group_id, mid), None))
    out.extend(delete_group(groups, group_id))
    return out, members, epoch
