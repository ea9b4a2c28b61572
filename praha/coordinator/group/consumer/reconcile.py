"""One member's step towards its target assignment: revoke first, then assign (no I/O).

Kafka's `CurrentAssignmentBuilder`. A partition the member must give up goes to
`pending_revocation` and stays owned by it until a heartbeat shows it no longer holds it;
only then does the member move to the target epoch. A partition the target gives it but
another member still owns (its epoch in the group's partition epochs) is withheld until that
member releases it (`UNRELEASED_PARTITIONS`). So no partition is ever owned by two members.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from praha.coordinator.group.consumer.model import (
    Assignment,
    ConsumerMember,
    MemberState,
    check_member_move,
)
from praha.errors import ErrorCode, PrahaError

#: (topic id, partition ids) pairs the member says it owns; None when the heartbeat left it out
Owned = Iterable[tuple[uuid.UUID, Iterable[int]]] | None


def _still_owns_any(owned: Owned, revoking: Assignment) -> bool:
    if owned is None:
        return True  # not told: assume it still holds them
    return any(p in revoking.get(tid, frozenset()) for tid, parts in owned for p in parts)


def reconcile(member: ConsumerMember, target_epoch: int, target: Assignment,
              partition_epoch: Callable[[uuid.UUID, int], int], owned: Owned) -> ConsumerMember:
    """The member after this heartbeat; itself when nothing can move yet."""
    after = _next(member, target_epoch, target, partition_epoch, owned)
    check_member_move(member.state, after.state)
    return after


def _next(member: ConsumerMember, target_epoch: int, target: Assignment,
          partition_epoch: Callable[[uuid.UUID, int], int], owned: Owned) -> ConsumerMember:
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _compute(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _still_owns_any(owned, member.pending_revocation):
            return member
        return _compute(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _compute(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    # UNKNOWN: only a member that holds nothing may start over
    if owned is None or any(True for _, parts in owned for _ in parts):
        raise PrahaError("member in an unknown state must abandon its partitions and rejoin",
                         ErrorCode.FENCED_MEMBER_EPOCH)
    return _compute(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _compute(member: ConsumerMember, revoke_epoch: int, target_epoch: int, target: Assignment,
             partition_epoch: Callable[[uuid.UUID, int], int], owned: Owned) -> ConsumerMember:
    keep: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    add: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for tid in set(target) | set(member.assigned):
        want = target.get(tid, frozenset())
        have = member.assigned.get(tid, frozenset())
        kept = have & want
        free = set()
        for p in want - kept:
            if partition_epoch(tid, p) == -1:
                free.add(p)
            else:
                unreleased = True
        if kept:
            keep[tid] = kept
        if have - kept:
            revoke[tid] = have - kept
        if free:
            add[tid] = frozenset(free)
    if revoke and _still_owns_any(owned, revoke):
        # revoke first, at the current epoch (bumped by one when leaving UNREVOKED_PARTITIONS)
        return member.with_epoch(revoke_epoch).with_(
            state=MemberState.UNREVOKED_PARTITIONS, assigned=keep, pending_revocation=revoke)
    for tid, parts in add.items():
        keep[tid] = keep.get(tid, frozenset()) | parts
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(target_epoch).with_(state=state, assigned=keep, pending_revocation={})
