"""Partition and replica states, with their valid-previous-state tables written once.

These are SPEC §5 and §7 (Kafka 2.x/3.x). A transition whose current state is not in
the target's valid-previous set is refused by the state machines and logged.
"""
from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from praha.common import TopicPartition


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


class PartitionAndReplica(NamedTuple):
    partition: TopicPartition
    replica: int

    def __str__(self) -> str:
        return f"[{self.partition},{self.replica}]"
