"""The four leader-election algorithms of docs/controller.md §6, as pure functions, plus the layer that
turns a chosen leader into the new leader/ISR/epoch and the replicas that must hear it.

Arguments are sequences or collections of broker ids. `assignment` order matters: the
first eligible replica in assignment order wins, so the preferred replica is favoured.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import Enum

from praha.common import LeaderAndIsr, TopicPartition


def offline_partition_leader(
    assignment: Sequence[int], isr: Collection[int], live: Collection[int], unclean_enabled: bool
) -> int | None:
    """First live replica that is in the ISR; else, if unclean election is enabled, the first
    live replica (possible data loss); else None."""
    for r in assignment:
        if r in live and r in isr:
            return r
    if unclean_enabled:
        for r in assignment:
            if r in live:
                return r
    return None


def reassign_partition_leader(reassignment: Sequence[int], isr: Collection[int], live: Collection[int]) -> int | None:
    """First replica of the target list that is alive and in the ISR."""
    for r in reassignment:
        if r in live and r in isr:
            return r
    return None


def preferred_replica_leader(assignment: Sequence[int], isr: Collection[int], live: Collection[int]) -> int | None:
    """The first assigned replica, if it is alive and in the ISR."""
    if assignment and assignment[0] in live and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_leader(
    assignment: Sequence[int], isr: Collection[int], live: Collection[int], shutting_down: Collection[int]
) -> int | None:
    """First assigned replica that is alive (shutting-down brokers count as alive here), in the
    ISR and not shutting down."""
    for r in assignment:
        if r in live and r in isr and r not in shutting_down:
            return r
    return None


class ElectionKind(Enum):
    OFFLINE = "offline"
    REASSIGNMENT = "reassignment"
    PREFERRED = "preferred"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    UNCLEAN = "unclean"  # the offline algorithm with unclean election forced on (ElectLeaders UNCLEAN)


@dataclass(frozen=True, slots=True)
class Election:
    """The outcome for one partition: a new LeaderAndIsr (epoch bumped) and its recipients."""

    tp: TopicPartition
    leader_and_isr: LeaderAndIsr
    recipients: tuple[int, ...]
    unclean: bool = False


def elect(
    kind: ElectionKind,
    tp: TopicPartition,
    current: LeaderAndIsr,
    assignment: Sequence[int],
    live: Collection[int],
    *,
    unclean_enabled: bool = False,
    target_replicas: Sequence[int] = (),
    shutting_down: Collection[int] = (),
) -> Election | None:
    """Apply algorithm `kind`; None when no replica qualifies (the partition stays as it is).

    `live` excludes shutting-down brokers, except for CONTROLLED_SHUTDOWN where the caller
    passes live-or-shutting-down brokers and the shutting-down set separately."""
    isr = current.isr
    if kind is ElectionKind.OFFLINE or kind is ElectionKind.UNCLEAN:
        leader = offline_partition_leader(assignment, isr, live, unclean_enabled or kind is ElectionKind.UNCLEAN)
        if leader is None:
            return None
        unclean = leader not in isr
        new_isr = (leader,) if unclean else tuple(r for r in isr if r in live)
        recipients = tuple(r for r in assignment if r in live)
        return Election(tp, current.new_leader(leader, new_isr), recipients, unclean)
    if kind is ElectionKind.REASSIGNMENT:
        leader = reassign_partition_leader(target_replicas, isr, live)
        if leader is None:
            return None
        return Election(tp, current.new_leader(leader), tuple(target_replicas))
    if kind is ElectionKind.PREFERRED:
        leader = preferred_replica_leader(assignment, isr, live)
        if leader is None:
            return None
        return Election(tp, current.new_leader(leader), tuple(assignment))
    if kind is ElectionKind.CONTROLLED_SHUTDOWN:
        leader = controlled_shutdown_leader(assignment, isr, live, shutting_down)
        if leader is None:
            return None
        new_isr = tuple(r for r in isr if r not in shutting_down)
        recipients = tuple(r for r in assignment if r in live)
        return Election(tp, current.new_leader(leader, new_isr), recipients)
    raise ValueError(f"unknown election kind {kind}")
