"""A consumer group of Kafka 4's protocol (KIP-848), with no I/O: epochs, members, assignments.

The group's state is not stored; it follows from its epochs and members (Kafka's
`ConsumerGroup.maybeUpdateGroupState`), by the first row of `_STATE_RULES` that holds:

    Empty        no members
    Assigning    group epoch > target assignment epoch (the assignor must run)
    Reconciling  some member is not yet at the target assignment epoch, or not Stable
    Stable       every member owns exactly its target assignment at the assignment epoch
    Dead         the group was deleted, or its partition's leadership lost (set, not derived)

A member's own state (`MemberState`) says where its reconciliation stands; the moves it may
make are `_MEMBER_NEXT` (a test drives every one of them). Every change to a group goes
through `replay` of a `__consumer_offsets` record (`records.py`), the same path a new
coordinator takes when it loads the partition, so a failover rebuilds exactly this state.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum

#: topic id -> partition ids; the unit of every assignment in this protocol
Assignment = Mapping[uuid.UUID, frozenset[int]]

#: a member that leaves for good (dynamic) or is fenced
LEAVE_GROUP_MEMBER_EPOCH = -1
#: a static member that leaves for now: its instance id and assignment are kept for it
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(Enum):
    """Kafka's `MemberState`; the byte is what the current-assignment record stores."""

    STABLE = 1
    UNREVOKED_PARTITIONS = 2
    UNRELEASED_PARTITIONS = 3
    UNKNOWN = 4


#: where a member's reconciliation may go from each state (Kafka's CurrentAssignmentBuilder)
_MEMBER_NEXT: dict[MemberState, frozenset[MemberState]] = {
    MemberState.STABLE: frozenset(MemberState) - {MemberState.UNKNOWN},
    MemberState.UNREVOKED_PARTITIONS: frozenset(MemberState) - {MemberState.UNKNOWN},
    MemberState.UNRELEASED_PARTITIONS: frozenset(MemberState) - {MemberState.UNKNOWN},
    MemberState.UNKNOWN: frozenset(MemberState) - {MemberState.UNKNOWN},
}


def check_member_move(before: MemberState, after: MemberState) -> None:
    if after is not before and after not in _MEMBER_NEXT[before]:
        raise AssertionError(f"illegal member state move {before.name} -> {after.name}")


def assignment_of(pairs: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> dict[uuid.UUID, frozenset[int]]:
    """An assignment from (topic id, partitions) pairs, dropping empty topics."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for tid, parts in pairs:
        merged = out.get(tid, frozenset()) | frozenset(parts)
        if merged:
            out[tid] = merged
    return out


def is_subset(owned: Iterable[tuple[uuid.UUID, Iterable[int]]] | None, of: Assignment) -> bool:
    if owned is None:
        return False
    return all(frozenset(parts) <= of.get(tid, frozenset()) for tid, parts in owned)


def count_partitions(a: Assignment) -> int:
    return sum(len(p) for p in a.values())


@dataclass(frozen=True, slots=True)
class ClassicMetadata:
    """What a member of the classic protocol sent in its JoinGroup (Kafka's ClassicMemberMetadata):
    such a member lives in a consumer group after an online upgrade, answered through
    JoinGroup/SyncGroup/Heartbeat from the group's assignment (`migration.py`)."""

    session_timeout_ms: int
    #: (protocol name, ConsumerProtocolSubscription bytes), in the member's order of preference
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    """One member, immutable: every change makes a new one (Kafka's `ConsumerGroupMember.Builder`)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    #: set for a member that speaks the classic protocol (None: ConsumerGroupHeartbeat)
    classic: ClassicMetadata | None = None

    def with_(self, **changes: object) -> ConsumerMember:
        return replace(self, **changes)  # type: ignore[arg-type]

    def with_epoch(self, epoch: int) -> ConsumerMember:
        """A new member epoch; the old one is kept as the previous (a lost answer is forgiven)."""
        return replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    def owned(self) -> dict[uuid.UUID, frozenset[int]]:
        """What the member holds until it confirms otherwise: assigned plus pending revocation."""
        return assignment_of([*self.assigned.items(), *self.pending_revocation.items()])


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """What the coordinator needs of a topic: its id and partition count."""

    name: str
    topic_id: uuid.UUID
    partitions: int


def _is_stable(g: ConsumerGroup) -> bool:
    return all(m.member_epoch == g.assignment_epoch and m.state is MemberState.STABLE
               for m in g.members.values())


_STATE_RULES: tuple[tuple[ConsumerGroupState, Callable[[ConsumerGroup], bool]], ...] = (
    (ConsumerGroupState.EMPTY, lambda g: not g.members),
    (ConsumerGroupState.ASSIGNING, lambda g: g.group_epoch > g.assignment_epoch),
    (ConsumerGroupState.STABLE, _is_stable),
    (ConsumerGroupState.RECONCILING, lambda g: True),
)


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    #: member id -> its target assignment at `assignment_epoch`
    target: dict[str, Assignment] = field(default_factory=dict)
    #: instance id -> member id
    static_members: dict[str, str] = field(default_factory=dict)
    #: (topic id, partition) -> epoch of the member that owns it (assigned or pending revocation)
    partition_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    #: the subscribed topics' metadata the target assignment was computed from (name -> info)
    subscription_metadata: dict[str, TopicInfo] = field(default_factory=dict)
    #: regex -> the topic names it resolved to when last evaluated
    resolved_regexes: dict[str, frozenset[str]] = field(default_factory=dict)
    #: soft state (no record): member id -> the assignment its last heartbeat reported owning
    acknowledged: dict[str, Assignment] = field(default_factory=dict)
    #: soft state: member id -> partitions answers gave it that no heartbeat of it has reported
    #: owning yet (it may be taking them: `heartbeat._maybe_owned`)
    unconfirmed: dict[str, Assignment] = field(default_factory=dict)
    dead: bool = False

    # ------------------------------------------------------------ state
    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        for state, holds in _STATE_RULES:
            if holds(self):
                return state
        raise AssertionError("unreachable: the last rule always holds")

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """-1 when no member owns the partition (it may be given to another)."""
        return self.partition_epochs.get((topic_id, partition), -1)

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        if instance_id is None:
            return None
        mid = self.static_members.get(instance_id)
        return None if mid is None else self.members.get(mid)

    def target_of(self, member_id: str) -> Assignment:
        return self.target.get(member_id, {})

    def subscribed_topic_names(self) -> set[str]:
        """Every topic some member subscribes to, by name or through a resolved regex."""
        names: set[str] = set()
        for m in self.members.values():
            names.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex is not None:
                names.update(self.resolved_regexes.get(m.subscribed_topic_regex, ()))
        return names

    def member_topics(self, m: ConsumerMember) -> frozenset[str]:
        extra = (
            self.resolved_regexes.get(m.subscribed_topic_regex, frozenset())
            if m.subscribed_topic_regex
            else frozenset()
        )
        return frozenset(m.subscribed_topic_names) | extra

    def all_classic(self) -> bool:
        """Every member speaks the classic protocol (and there is one): the group may go back to classic."""
        return bool(self.members) and all(m.classic is not None for m in self.members.values())

    def waiting_on_unreleased(self, m: ConsumerMember) -> bool:
        """Some partition of the member's target is still owned by another member (Kafka's
        `waitingOnUnreleasedPartition`): a classic member need not rejoin yet."""
        if m.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        return any(p not in m.assigned.get(tid, frozenset()) and self.current_partition_epoch(tid, p) != -1
                   for tid, parts in self.target_of(m.member_id).items() for p in parts)

    def preferred_assignor(self, default: str) -> str:
        """The assignor most members ask for (ties: by name); the default when none asks."""
        votes: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return default
        return min(votes, key=lambda a: (-votes[a], a))

    # ------------------------------------------------------------ changes (through replay only)
    def put_member(self, m: ConsumerMember) -> None:
        old = self.members.get(m.member_id)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and old.instance_id != m.instance_id:
                self.static_members.pop(old.instance_id, None)
        self.members[m.member_id] = m
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        self._own(m)

    def drop_member(self, member_id: str) -> None:
        self.acknowledged.pop(member_id, None)
        self.unconfirmed.pop(member_id, None)
        m = self.members.pop(member_id, None)
        if m is None:
            return
        self._release(m)
        if m.instance_id is not None and self.static_members.get(m.instance_id) == member_id:
            del self.static_members[m.instance_id]

    def _own(self, m: ConsumerMember) -> None:
        for tid, parts in m.owned().items():
            for p in parts:
                self.partition_epochs[(tid, p)] = m.member_epoch

    def _release(self, m: ConsumerMember) -> None:
        for tid, parts in m.owned().items():
            for p in parts:
                if self.partition_epochs.get((tid, p)) == m.member_epoch:
                    del self.partition_epochs[(tid, p)]
