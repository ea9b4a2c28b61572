"""The controller's requests to brokers, as plain dataclasses.

The controller decides in these terms and the broker acts on them; only the channel
manager (sending) and the broker's handlers (receiving) convert them to and from the
Kafka wire classes in `praha.protocol.controller_apis`, via `to_wire` / `from_wire`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from praha.common import BrokerInfo, TopicPartition


@dataclass(frozen=True, slots=True)
class PartitionLeaderState:
    """One partition's leadership as carried by LeaderAndIsr and UpdateMetadata."""

    tp: TopicPartition
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    is_new: bool = False
    offline_replicas: tuple[int, ...] = ()


@dataclass(slots=True)
class LeaderAndIsrRequestData:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: list[PartitionLeaderState]
    live_leaders: list[BrokerInfo]
    #: shared by the LeaderAndIsr requests of one batch: a partition state sent to several
    #: brokers (the same object) is encoded once (see wire._fast_leader_and_isr_body)
    encoded_states: dict[int, tuple[Any, bytes]] | None = field(default=None, compare=False, repr=False)

    api_key = 4


@dataclass(slots=True)
class UpdateMetadataRequestData:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: list[PartitionLeaderState]
    live_brokers: list[BrokerInfo]

    api_key = 6


@dataclass(frozen=True, slots=True)
class StopReplicaPartition:
    tp: TopicPartition
    leader_epoch: int
    delete: bool


@dataclass(slots=True)
class StopReplicaRequestData:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: list[StopReplicaPartition]

    api_key = 5


@dataclass(slots=True)
class ControllerResponseData:
    """Answer to any of the three: a top-level error and per-partition errors."""

    error_code: int
    partition_errors: dict[TopicPartition, int] = field(default_factory=dict)


ControllerRequest = LeaderAndIsrRequestData | UpdateMetadataRequestData | StopReplicaRequestData

