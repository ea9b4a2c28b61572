"""A consumer group's state, with no I/O: members, generation, chosen protocol, offsets.

The classic group protocol's states, and the states each may be entered from (Kafka's
`GroupState.validPreviousStates`):

    Empty ──join──▶ PreparingRebalance ──all joined──▶ CompletingRebalance ──leader syncs──▶ Stable
      ▲                   ▲   │                              │                              │
      └──last member left─┘   └──────────── a member joins, leaves or fails ◀───────────────┘
    any state ──group deleted, or its partition's leadership lost──▶ Dead

The coordinator (`coordinator.py`) owns the timers and the log; this module only answers
"what is the group now" and "what would this change make it".
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from praha.coordinator.group.records import (
    GroupValue,
    MemberRecord,
    OffsetValue,
    subscribed_topics,
)


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}

#: `praha groups --list --state` and ListGroups' filter take these names, any case
STATE_NAMES = {s.value.lower(): s for s in GroupState}


@dataclass(eq=False)
class Member:
    """One member of a group. Futures and timers are the coordinator's; kept here so a
    member's whole life is in one object."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    #: the subscription bytes for the group's current protocol (set when the generation starts)
    metadata_for_current: bytes = b""
    #: the JoinGroup / SyncGroup answer this member waits for (an asyncio Future), if any
    awaiting_join: Any = None
    awaiting_sync: Any = None
    #: joined before the current rebalance's generation (a new member gets a longer timeout)
    is_new: bool = False
    heartbeat_timer: Any = None

    def metadata_for(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """This member's choice: the first of its protocols every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError("member supports none of the candidate protocols")

    def record(self) -> MemberRecord:
        return MemberRecord(self.member_id, self.group_instance_id, self.client_id, self.client_host,
                            self.rebalance_timeout_ms, self.session_timeout_ms, self.metadata_for_current,
                            self.assignment)


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1

    def value(self) -> OffsetValue:
        return OffsetValue(self.offset, self.leader_epoch, self.metadata, self.commit_timestamp)


@dataclass(eq=False)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp: int = -1
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    #: member ids handed out with MEMBER_ID_REQUIRED, not yet joined (KIP-394)
    pending_members: set[str] = field(default_factory=set)
    #: group.instance.id -> member id (KIP-345)
    static_members: dict[str, str] = field(default_factory=dict)
    #: members of this generation that have not sent SyncGroup yet
    pending_sync: set[str] = field(default_factory=set)
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    #: offset commits written but not yet replicated, by partition (count of writes in flight)
    pending_offset_writes: dict[tuple[str, int], int] = field(default_factory=dict)
    #: TxnOffsetCommit offsets per producer id, waiting for their transaction's marker
    pending_txn_offsets: dict[int, dict[tuple[str, int], CommittedOffset]] = field(default_factory=dict)
    #: a timer (rebalance or initial delay) of the coordinator's
    join_timer: Any = None
    sync_timer: Any = None
    #: an empty group's first join phase waits `group.initial.rebalance.delay.ms`, extended
    #: while new members arrive, up to this time (loop time, seconds)
    in_initial_delay: bool = False
    new_member_added: bool = False
    initial_delay_deadline: float = 0.0
    #: when the current join phase began (monotonic seconds), for the rebalance figures
    rebalance_started: float | None = None

    # ------------------------------------------------------------ states
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def complete_txn_offsets(self, producer_id: int, commit: bool) -> None:
        """The transaction of `producer_id` ended: its offsets become committed, or vanish."""
        pending = self.pending_txn_offsets.pop(producer_id, None)
        if pending and commit:
            self.offsets.update(pending)

    def transition(self, to: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[to]:
            raise AssertionError(f"group {self.group_id}: illegal transition {self.state.value} -> {to.value}")
        self.state = to
        self.state_timestamp = now_ms

    # ------------------------------------------------------------ members
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def new_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id or client_id}-{uuid.uuid4()}"

    def add(self, m: Member) -> None:
        if not self.members:
            self.protocol_type = m.protocol_type
        self.members[m.member_id] = m
        if m.group_instance_id is not None:
            self.static_members[m.group_instance_id] = m.member_id
        if self.leader_id is None:
            self.leader_id = m.member_id
        self.pending_members.discard(m.member_id)

    def remove(self, member_id: str) -> Member | None:
        m = self.members.pop(member_id, None)
        if m is None:
            return None
        if m.group_instance_id is not None and self.static_members.get(m.group_instance_id) == member_id:
            del self.static_members[m.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return m

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """A static member that presents an id its instance no longer holds."""
        if group_instance_id is None:
            return False
        current = self.static_members.get(group_instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, group_instance_id: str, old_id: str, new_id: str) -> Member:
        m = self.members.pop(old_id)
        m.member_id = new_id
        self.members[new_id] = m
        self.static_members[group_instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return m

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def elect_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick a member that did; False if none did."""
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.awaiting_join is not None:
            return True
        joined = next((mid for mid, m in self.members.items() if m.awaiting_join is not None), None)
        if joined is None:
            return False
        self.leader_id = joined
        return True

    def all_rejoined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join is not None for m in self.members.values())

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ------------------------------------------------------------ protocols
    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """May a member with these protocols join? Same type, and a protocol in common with all."""
        if not protocol_type or not protocols:
            return False
        if not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        names = {n for n, _ in protocols}
        return bool(names & self.candidate_protocols())

    def candidate_protocols(self) -> set[str]:
        sets = [{n for n, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Every member votes for its first candidate; the most votes win (ties: first seen)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda k: votes[k])

    def init_next_generation(self, now_ms: int) -> None:
        """A join phase ended with members: next generation, protocol chosen, awaiting sync."""
        self.generation += 1
        if self.members:
            self.protocol = self.select_protocol()
            for m in self.members.values():
                m.metadata_for_current = m.metadata_for(self.protocol)
                m.is_new = False
            self.pending_sync = set(self.members)
            self.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol = None
            self.protocol_type = self.protocol_type if self.offsets else None
            self.transition(GroupState.EMPTY, now_ms)

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to; None when unknown (a non-consumer group)."""
        if self.protocol_type != "consumer" or self.protocol is None:
            return None if self.members else set()
        topics: set[str] = set()
        for m in self.members.values():
            topics |= subscribed_topics("consumer", m.metadata_for_current)
        return topics

    # ------------------------------------------------------------ records
    def value(self) -> GroupValue:
        return GroupValue(self.protocol_type or "", self.generation, self.protocol, self.leader_id,
                          self.state_timestamp, tuple(m.record() for m in self.members.values()))
