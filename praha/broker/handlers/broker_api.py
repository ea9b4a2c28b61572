"""What the request handlers, the socket server and the metrics see of their broker.

The handlers need a handful of the broker's parts (metadata cache, replica manager, fence,
ZooKeeper, the hosted controller seat) and nothing of its start-up and shutdown. Naming
them here, as Protocols, lets `server.py` build the handlers without the handlers
importing `server.py` back: the arrows inside the broker go one way, from the process
(`server.py`) to its parts.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from praha.broker.handlers.authorization import RequestAuthorizer
from praha.broker.quotas.client_quota import ClientQuotas
from praha.broker.replication.fencing import ControllerFence
from praha.broker.replication.metadata_cache import MetadataCache
from praha.broker.replication.replica_manager import ReplicaManager
from praha.broker.share.manager import SharePartitionManager
from praha.broker.share.session import ShareSessionCache
from praha.common import BrokerInfo, TopicPartition
from praha.config import BrokerConfig
from praha.coordinator.group.consumer.model import TopicInfo
from praha.coordinator.group.coordinator import GroupCoordinator
from praha.coordinator.group.share.service import ShareGroupService
from praha.coordinator.transaction.coordinator import TransactionCoordinator
from praha.protocol.controller_requests import UpdateMetadataRequestData
from praha.statelog import StateChangeLog
from praha.zk.store import ZkStore

_R = TypeVar("_R")
#: partition → (error code, message): what an election or a reassignment answers
PartitionResults = dict[TopicPartition, tuple[int, str | None]]
#: partition → (replicas, adding, removing) of a reassignment in flight
OngoingReassignments = dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]


class AdminFlows(Protocol):
    """The controller flows' admin entry points (`ControllerFlows.api_*`), run on its event thread."""

    def api_elect_preferred(self, partitions: set[TopicPartition] | None) -> PartitionResults: ...

    def api_elect_unclean(self, partitions: set[TopicPartition] | None) -> PartitionResults: ...

    def api_alter_reassignments(self, targets: dict[TopicPartition, tuple[int, ...] | None]) -> PartitionResults: ...

    def api_list_reassignments(self, partitions: set[TopicPartition] | None) -> OngoingReassignments: ...


class ControllerSeat(Protocol):
    """The controller as a function run on its event thread sees it."""

    @property
    def flows(self) -> AdminFlows: ...


class HostedController(Protocol):
    """The controller seat every broker hosts, as the broker's handlers use it."""

    @property
    def is_acting(self) -> bool:
        """Holds the seat and is connected to ZooKeeper."""
        ...

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int, callback: Callable[[int, set[TopicPartition]], None]
    ) -> None: ...

    def run_on_controller(
        self, fn: Callable[[ControllerSeat], _R], callback: Callable[[_R | None, BaseException | None], None]
    ) -> None: ...

    def figures(self) -> dict[str, float]: ...


class Broker(Protocol):
    """A running broker, as its request handlers and metrics use it."""

    broker_id: int
    cluster_id: str
    config: BrokerConfig
    fence: ControllerFence
    metadata_cache: MetadataCache
    replica_manager: ReplicaManager
    state_log: StateChangeLog
    store: ZkStore | None
    broker_info: BrokerInfo | None
    group_coordinator: GroupCoordinator
    share_groups: ShareGroupService
    share_sessions: ShareSessionCache
    share_manager: SharePartitionManager
    authz: RequestAuthorizer
    client_quotas: ClientQuotas
    txn_coordinator: TransactionCoordinator

    @property
    def controller(self) -> HostedController | None: ...

    async def replica_manager_call(self, fn: Callable[[ReplicaManager], Awaitable[_R]]) -> _R: ...

    def on_metadata_update(self, data: UpdateMetadataRequestData, deleted: list[TopicPartition]) -> None: ...

    def broker_figures(self) -> list[tuple[str, float, str]]: ...

    async def controller_seat(self) -> tuple[int, int] | None:
        """(controller id, controller epoch) as ZooKeeper has them now; raises PrahaError if
        ZooKeeper cannot be read."""
        ...

    async def registered_brokers(self, broker_ids: list[int]) -> dict[int, BrokerInfo]:
        """The registrations (`/brokers/ids/<id>`) of these brokers that exist."""
        ...

    def consumer_group_topics(self) -> dict[str, TopicInfo]:
        """The topics KIP-848 consumer groups may subscribe to, with ids and partition counts."""
        ...

    async def load_topic_ids(self) -> None:
        """Read the ids of topics the metadata cache has none for yet (from their znodes)."""
        ...

    def zk_store(self) -> ZkStore:
        """The broker's ZooKeeper session (raises until the broker has connected)."""
        ...
