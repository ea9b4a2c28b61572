"""Test doubles for unit tests of the controller's pure logic (no ZooKeeper, no brokers).

`MemoryPartitionStore` keeps partition state znodes in a dict with zkVersions, enforcing
the same conditional-write rules as ZooKeeper; `RecordingSender` records what the request
batch sends per broker.
"""
from __future__ import annotations

from dataclasses import dataclass

from praha.common import BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition
from praha.controller.context import ControllerContext
from praha.controller.messages import LeaderAndIsrRequestData, StopReplicaRequestData, UpdateMetadataRequestData
from praha.controller.request_batch import ControllerRequestBatch
from praha.statelog import StateChangeLog
from praha.zk.ops import WriteOutcome, WriteResult


class MemoryPartitionStore:
    def __init__(self):
        self.states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.writes = 0

    def get_partition_states(self, tps):
        return {tp: self.states[tp] for tp in tps if tp in self.states}, {}

    def create_partition_states(self, states, epoch_zk_version):
        out = {}
        for tp, st in states.items():
            if tp in self.states:
                out[tp] = WriteResult(WriteOutcome.NODE_EXISTS, None)
            else:
                li = st.leader_and_isr
                self.states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(li.leader, li.isr, li.leader_epoch, 0), st.controller_epoch)
                out[tp] = WriteResult(WriteOutcome.OK, 0)
                self.writes += 1
        return out

    def update_partition_states(self, states, epoch_zk_version):
        out = {}
        for tp, st in states.items():
            cur = self.states.get(tp)
            li = st.leader_and_isr
            if cur is None:
                out[tp] = WriteResult(WriteOutcome.NO_NODE, None)
            elif cur.leader_and_isr.zk_version != li.zk_version:
                out[tp] = WriteResult(WriteOutcome.BAD_VERSION, None)
            else:
                v = li.zk_version + 1
                self.states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(li.leader, li.isr, li.leader_epoch, v), st.controller_epoch)
                out[tp] = WriteResult(WriteOutcome.OK, v)
                self.writes += 1
        return out

    def put(self, tp, leader, isr, leader_epoch=0, controller_epoch=1):
        self.states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, tuple(isr), leader_epoch, 0), controller_epoch)


class RecordingSender:
    def __init__(self):
        self.sent: list[tuple[int, object]] = []

    def send_request(self, broker_id, request, callback):
        self.sent.append((broker_id, request))

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
class Rig:
    ctx: ControllerContext
    store: MemoryPartitionStore
    sender: RecordingSender
    batch: ControllerRequestBatch
    log: StateChangeLog


def rig(brokers=(1, 2, 3), topics: dict[str, dict[int, tuple[int, ...]]] | None = None, epoch: int = 2) -> Rig:
    ctx = ControllerContext(epoch=epoch, epoch_zk_version=epoch)
    ctx.add_live_brokers(broker(b) for b in brokers)
    for t, parts in (topics or {}).items():
        ctx.all_topics.add(t)
        ctx.assignments[t] = {p: ReplicaAssignment(tuple(r)) for p, r in parts.items()}
    sender = RecordingSender()
    return Rig(ctx, MemoryPartitionStore(), sender, ControllerRequestBatch(1, ctx, sender), StateChangeLog(None, 1))


def online_topics(r: Rig, store, topics: dict[str, dict[int, tuple[int, ...]]], leader_epoch: int = 3) -> None:
    """Put `topics` in `store` (assignment znodes and partition states led by the first
    replica) and in the rig's context as online partitions with online replicas: the
    starting point of the controller-flow tests."""
    from praha.common import TopicAssignment
    from praha.controller.states import PartitionAndReplica, PartitionState, ReplicaState

    for t, parts in topics.items():
        store.topics[t] = TopicAssignment({p: ReplicaAssignment(a) for p, a in parts.items()})
        for p, a in parts.items():
            tp = TopicPartition(t, p)
            store.put(tp, a[0], a, leader_epoch=leader_epoch, controller_epoch=r.ctx.epoch)
            r.ctx.leadership[tp] = store.states[tp]
            r.ctx.partition_states[tp] = PartitionState.ONLINE
            for b in a:
                r.ctx.replica_states[PartitionAndReplica(tp, b)] = ReplicaState.ONLINE
