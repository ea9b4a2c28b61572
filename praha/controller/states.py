"""Partition and replica states, with their valid-previous-state tables written once.

These are docs/controller.md §5 and §7 (Kafka 2.x/3.x). A transition whose current state is not in
the target's valid-previous set is refused by the state machines and logged.
"""
from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Mapping
from enum import Enum
from typing import NamedTuple, TypeVar

from praha.common import TopicPartition
from praha.statelog import StateChangeLog


class PartitionState(Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


PARTITION_VALID_PREVIOUS: dict[PartitionState, frozenset[PartitionState]] = {
    PartitionState.NON_EXISTENT: frozenset({PartitionState.OFFLINE}),
    PartitionState.NEW: frozenset({PartitionState.NON_EXISTENT}),
    PartitionState.ONLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE}),
    PartitionState.OFFLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE}),
}


class ReplicaState(Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


REPLICA_VALID_PREVIOUS: dict[ReplicaState, frozenset[ReplicaState]] = {
    ReplicaState.NEW: frozenset({ReplicaState.NON_EXISTENT}),
    ReplicaState.ONLINE: frozenset(
        {ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.OFFLINE, ReplicaState.DELETION_INELIGIBLE}
    ),
    ReplicaState.OFFLINE: frozenset(
        {ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.OFFLINE, ReplicaState.DELETION_INELIGIBLE}
    ),
    ReplicaState.DELETION_STARTED: frozenset({ReplicaState.OFFLINE}),
    ReplicaState.DELETION_SUCCESSFUL: frozenset({ReplicaState.DELETION_STARTED}),
    ReplicaState.DELETION_INELIGIBLE: frozenset({ReplicaState.OFFLINE, ReplicaState.DELETION_STARTED}),
    ReplicaState.NON_EXISTENT: frozenset({ReplicaState.DELETION_SUCCESSFUL}),
}


log = logging.getLogger(__name__)
K = TypeVar("K", bound=Hashable)
S = TypeVar("S", bound=Enum)


def split_valid_transitions(
    items: Iterable[K], target: S, current: Mapping[K, S], missing: S,
    table: Mapping[S, frozenset[S]], kind: str, state_log: StateChangeLog, controller_id: int, epoch: int,
) -> tuple[list[K], int]:
    """The items whose current state may move to `target`, and how many were refused.

    Refusals are logged once per call (with a sample) and recorded in the state-change
    log, never applied: the rule both state machines share."""
    allowed = tuple(table[target])  # identity `in` on a tuple: no Enum.__hash__ per item
    get = current.get
    valid: list[K] = []
    invalid: list[K] = []
    for item in items:
        (valid if get(item, missing) in allowed else invalid).append(item)
    if invalid:
        sample = ", ".join(f"{item}:{get(item, missing).value}" for item in invalid[:5])
        log.error("refused %d invalid %s transitions to %s (e.g. %s)", len(invalid), kind, target.value, sample)
        state_log.record(
            f"Invalid{kind.capitalize()}Transition", controller_id, epoch, target=target.value, count=len(invalid),
            **{f"{kind}s": {str(item): get(item, missing).value for item in invalid}},
        )
    return valid, len(invalid)


class PartitionAndReplica(NamedTuple):
    partition: TopicPartition
    replica: int

    def __str__(self) -> str:
        return f"[{self.partition},{self.replica}]"
