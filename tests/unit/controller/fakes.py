"""Test doubles for unit tests of the controller's pure logic (no ZooKeeper, no brokers).

The store is `praha.testing.fake_controller_store.FakeControllerStore` (ZooKeeper's
conditional-write rules on partition states, in memory); `RecordingSender` records what
the request batch sends per broker; `FakeSeat` says whether this broker holds the seat;
`services` bundles them as the `Controller` does for its flows.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from praha.common import BrokerInfo, EndPoint, ReplicaAssignment, TopicPartition
from praha.config import BrokerConfig
from praha.controller.context import ControllerContext
from praha.controller.events import ControllerEvent
from praha.controller.request_batch import ControllerRequestBatch
from praha.controller.services import ControllerServices
from praha.protocol.controller_requests import (
    LeaderAndIsrRequestData,
    StopReplicaRequestData,
    UpdateMetadataRequestData,
)
from praha.statelog import StateChangeLog
from praha.testing.fake_controller_store import FakeControllerStore


class RecordingSender:
    """The channels to the brokers: records requests (and which brokers joined or left)."""

    def __init__(self):
        self.sent: list[tuple[int, object]] = []
        self.added: list[int] = []
        self.removed: list[int] = []

    def send_request(self, broker_id, request, callback=None):
        self.sent.append((broker_id, request))

    def add_broker(self, broker: BrokerInfo) -> None:
        self.added.append(broker.id)

    def remove_broker(self, broker_id: int) -> None:
        self.removed.append(broker_id)

    def of(self, kind) -> dict[int, list]:
        out: dict[int, list] = {}
        for b, r in self.sent:
            if isinstance(r, kind):
                out.setdefault(b, []).append(r)
        return out

    def leader_and_isr(self):
        return self.of(LeaderAndIsrRequestData)

    def update_metadata(self):
        return self.of(UpdateMetadataRequestData)

    def stop_replica(self):
        return self.of(StopReplicaRequestData)


def broker(i: int) -> BrokerInfo:
    return BrokerInfo(i, (EndPoint("127.0.0.1", 9000 + i),), epoch=100 + i)


@dataclass
class FakeSeat:
    is_active: bool = True
    is_acting: bool = True
    suspended: bool = False


@dataclass
class Rig:
    ctx: ControllerContext
    store: FakeControllerStore
    sender: RecordingSender
    batch: ControllerRequestBatch
    log: StateChangeLog
    seat: FakeSeat = field(default_factory=FakeSeat)
    #: events the flows enqueued (when no other queue is given to `services`)
    enqueued: list[ControllerEvent] = field(default_factory=list)


def rig(brokers=(1, 2, 3), topics: dict[str, dict[int, tuple[int, ...]]] | None = None, epoch: int = 2) -> Rig:
    ctx = ControllerContext(epoch=epoch, epoch_zk_version=epoch)
    ctx.add_live_brokers(broker(b) for b in brokers)
    for t, parts in (topics or {}).items():
        ctx.all_topics.add(t)
        ctx.assignments[t] = {p: ReplicaAssignment(tuple(r)) for p, r in parts.items()}
    sender = RecordingSender()
    return Rig(ctx, FakeControllerStore(), sender, ControllerRequestBatch(1, ctx, sender), StateChangeLog(None, 1))


def services(r: Rig, enqueue: Callable[[ControllerEvent], object] | None = None) -> ControllerServices:
    """The rig as the services of controller 1 (with the request batch of the rig, so that
    what the flows send is in `r.sender`)."""
    return ControllerServices(
        controller_id=1, config=BrokerConfig(broker_id=1), context=r.ctx, store=r.store, request_batch=r.batch,
        state_log=r.log, enqueue=enqueue or r.enqueued.append, channels=r.sender, seat=r.seat,
    )


def online_topics(r: Rig, topics: dict[str, dict[int, tuple[int, ...]]], leader_epoch: int = 3) -> None:
    """Put `topics` in the rig's store (assignment znodes and partition states led by the first
    replica) and in its context as online partitions with online replicas: the starting point
    of the controller-flow tests."""
    store = r.store
    from praha.common import TopicAssignment
    from praha.controller.states import (
        PartitionAndReplica,
        PartitionState,
        ReplicaState,
    )

    for t, parts in topics.items():
        store.topics[t] = TopicAssignment({p: ReplicaAssignment(a) for p, a in parts.items()})
        for p, a in parts.items():
            tp = TopicPartition(t, p)
            store.put(tp, a[0], a, leader_epoch=leader_epoch, controller_epoch=r.ctx.epoch)
            r.ctx.leadership[tp] = store.states[tp]
            r.ctx.partition_states[tp] = PartitionState.ONLINE
            for b in a:
                r.ctx.replica_states[PartitionAndReplica(tp, b)] = ReplicaState.ONLINE
