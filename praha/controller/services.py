"""The services the controller's flows are given, instead of the whole `Controller`.

Why a bundle: the flows (state machines, topic deletion, reassignment, preferred elections,
broker changes) need a handful of things — the context, the request batch, the state-change
log, the event queue, the configuration, ZooKeeper — and nothing of the election or the
session. Handing them exactly that keeps the dependency one-way (`controller.py` builds the
flows; the flows never see the `Controller`), lets unit tests build flows from an in-memory
store, and makes every ZooKeeper call go through one typed interface (`ControllerStore`).
It is Kafka's `TopicDeletionManager(config, context, replicaStateMachine,
partitionStateMachine, client: DeletionClient)`, for all the flows at once.

`ControllerServices.create` also wires the request batch's response callbacks: a
LeaderAndIsr answer with errors and every StopReplica answer of a topic deletion become
controller events (callbacks run on sender threads, so they only enqueue).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from praha.common import BrokerInfo
from praha.config import BrokerConfig
from praha.controller import events as ev
from praha.controller.context import ControllerContext
from praha.controller.request_batch import ControllerRequestBatch, RequestSender
from praha.controller.store_api import ControllerStore, WatchCallback
from praha.protocol.controller_requests import ControllerResponseData
from praha.statelog import StateChangeLog
from praha.zk.watches import WatchEvent

#: puts an event on the controller's queue (the event thread processes it later)
Enqueue = Callable[[ev.ControllerEvent], object]


class ControllerSeat(Protocol):
    """Whether this broker holds the controller seat: flows act only while it does."""

    @property
    def is_active(self) -> bool:
        """Holds the seat, as far as the event thread knows."""
        ...

    @property
    def is_acting(self) -> bool:
        """Holds the seat and is connected to ZooKeeper."""
        ...

    @property
    def suspended(self) -> bool:
        """The ZooKeeper connection is lost right now (set from the session thread)."""
        ...


class BrokerChannels(RequestSender, Protocol):
    """The per-broker request queues: brokers join and leave as broker changes are processed."""

    def add_broker(self, broker: BrokerInfo) -> None: ...

    def remove_broker(self, broker_id: int) -> None: ...


@dataclass(frozen=True)
class ControllerServices:
    controller_id: int
    config: BrokerConfig
    context: ControllerContext
    store: ControllerStore
    request_batch: ControllerRequestBatch
    state_log: StateChangeLog
    enqueue: Enqueue
    channels: BrokerChannels
    seat: ControllerSeat

    @classmethod
    def create(
        cls,
        config: BrokerConfig,
        context: ControllerContext,
        store: ControllerStore,
        state_log: StateChangeLog,
        enqueue: Enqueue,
        channels: BrokerChannels,
        seat: ControllerSeat,
    ) -> ControllerServices:
        """The bundle, with a request batch whose responses come back as events."""

        def on_leader_and_isr_response(broker_id: int, response: ControllerResponseData) -> None:
            if response.error_code or any(response.partition_errors.values()):
                enqueue(ev.LeaderAndIsrResponseReceived(broker_id, response))

        def on_deletion_stop_replica_response(broker_id: int, response: ControllerResponseData) -> None:
            enqueue(ev.TopicDeletionStopReplicaResponseReceived(
                broker_id, response.error_code, dict(response.partition_errors)))

        batch = ControllerRequestBatch(
            config.broker_id, context, channels,
            on_leader_and_isr_response=on_leader_and_isr_response,
            on_deletion_stop_replica_response=on_deletion_stop_replica_response,
            inter_broker_listener=config.inter_broker_listener,
        )
        return cls(config.broker_id, config, context, store, batch, state_log, enqueue, channels, seat)

    def on_watch(self, make_event: Callable[[], ev.ControllerEvent]) -> WatchCallback:
        """A watch callback that enqueues `make_event()` (and does nothing else: it runs on the
        ZooKeeper client's thread)."""
        enqueue = self.enqueue

        def fire(_event: WatchEvent) -> None:
            enqueue(make_event())

        return fire
