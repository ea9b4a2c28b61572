"""The failover's speed-ups decide and send exactly what the straightforward code does:
grouped LeaderAndIsr entries, the reused leader state, the lazily built partial
UpdateMetadata, and the UpdateMetadata body encoded once and shared by every broker."""
from __future__ import annotations

import threading

import pytest

from praha.common import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from praha.controller.context import ControllerContext
from praha.controller.replica_state_machine import ReplicaStateMachine
from praha.controller.request_batch import ControllerRequestBatch
from praha.controller.states import PartitionAndReplica, ReplicaState
from praha.protocol import controller_wire as wire
from praha.protocol.controller_apis import UpdateMetadataRequest
from praha.protocol.controller_requests import PartitionLeaderState, UpdateMetadataRequestData
from praha.protocol.framing import encode_request
from praha.statelog import StateChangeLog
from praha.testing.fake_controller_store import FakeControllerStore


class Sender:
    def __init__(self):
        self.sent = []

    def send_request(self, broker_id, request, callback):
        self.sent.append((broker_id, request))


def context(live=(1, 2, 3, 4), topics=3, partitions=4) -> ControllerContext:
    ctx = ControllerContext(epoch=2, epoch_zk_version=1)
    ctx.live_brokers = {b: BrokerInfo(b, (EndPoint("127.0.0.1", 9000 + b),), None, 10 + b) for b in live}
    g = 0
    for t in range(topics):
        name = f"t{t}"
        ctx.all_topics.add(name)
        ctx.assignments[name] = {}
        for p in range(partitions):
            r = tuple((g + k) % 5 + 1 for k in range(3))
            g += 1
            ctx.assignments[name][p] = ReplicaAssignment(r)
            ctx.leadership[TopicPartition(name, p)] = LeaderIsrAndControllerEpoch(LeaderAndIsr(r[0], r, 1, 3), 1)
    return ctx


def per_replica_reference(ctx: ControllerContext, replicas) -> dict:
    """What one add_leader_and_isr per replica (the plain way) puts in the batch."""
    rb = ControllerRequestBatch(1, ctx, Sender())
    for pr in replicas:
        rb.add_leader_and_isr([pr.replica], pr.partition, ctx.leadership[pr.partition],
                              ctx.partition_assignment(pr.partition))
    return {b: dict(v) for b, v in rb._leader_and_isr.items()}, set(rb._update_metadata_partitions), set(
        rb._update_metadata_brokers)


def test_startup_online_replicas_get_the_same_entries_as_one_call_per_replica():
    ctx = context()
    expected = per_replica_reference(ctx, [
        PartitionAndReplica(TopicPartition(t, p), r)
        for t, parts in ctx.assignments.items() for p, a in parts.items() for r in a.replicas if r in ctx.live_brokers
    ])
    rb = ControllerRequestBatch(1, ctx, Sender())
    ReplicaStateMachine(1, ctx, FakeControllerStore(), rb, StateChangeLog(None, 1)).startup()
    got = {b: dict(v) for b, v in rb._leader_and_isr.items()}, set(rb._update_metadata_partitions), set(
        rb._update_metadata_brokers)
    assert got == expected
    # and in the same order per broker
    assert {b: list(v) for b, v in got[0].items()} == {b: list(v) for b, v in expected[0].items()}
    assert ctx.replica_states[PartitionAndReplica(TopicPartition("t0", 2), 5)] is ReplicaState.OFFLINE


def test_new_replica_added_to_the_assignment_mid_run_keeps_earlier_recipients_on_the_old_assignment():
    ctx = context(live=(1, 2, 3, 4, 5))
    tp = TopicPartition("t0", 0)
    ctx.assignments["t0"][0] = ReplicaAssignment((1, 2, 3))
    for r in (1, 2, 3):
        ctx.replica_states[PartitionAndReplica(tp, r)] = ReplicaState.OFFLINE
    ctx.replica_states[PartitionAndReplica(tp, 4)] = ReplicaState.NEW  # not in AR yet
    order = [PartitionAndReplica(tp, 1), PartitionAndReplica(tp, 4), PartitionAndReplica(tp, 2)]
    rb = ControllerRequestBatch(1, ctx, Sender())
    ReplicaStateMachine(1, ctx, FakeControllerStore(), rb, StateChangeLog(None, 1)).handle_state_changes(
        order, ReplicaState.ONLINE)
    assert rb._leader_and_isr[1][tp].replicas == (1, 2, 3)
    assert rb._leader_and_isr[2][tp].replicas == (1, 2, 3, 4)
    assert 4 not in rb._leader_and_isr
    assert ctx.partition_assignment(tp).replicas == (1, 2, 3, 4)


def test_reused_leader_state_is_rebuilt_when_anything_it_came_from_differs():
    ctx = context()
    rb = ControllerRequestBatch(1, ctx, Sender())
    tp, other = TopicPartition("t0", 0), TopicPartition("t0", 1)
    li, a = ctx.leadership[tp], ctx.partition_assignment(tp)
    rb.add_leader_and_isr([1], tp, li, a)
    rb.add_leader_and_isr([2], tp, li, a)
    assert rb._leader_and_isr[1][tp] is rb._leader_and_isr[2][tp]
    rb.add_leader_and_isr([3], other, li, a)  # same leadership object, another partition
    assert rb._leader_and_isr[3][other].tp == other
    rb.add_leader_and_isr([4], tp, li, ReplicaAssignment((1, 2, 3, 4)))
    assert rb._leader_and_isr[4][tp].replicas == (1, 2, 3, 4)
    rb.add_leader_and_isr([4], other, li, a, is_new=True)
    assert rb._leader_and_isr[4][other].is_new


def test_partial_update_metadata_is_built_only_for_brokers_that_get_it():
    ctx = context()
    sender = Sender()
    rb = ControllerRequestBatch(1, ctx, sender)
    rb.add_update_metadata([1, 2], None)
    rb.add_update_metadata([3], [TopicPartition("t1", 2), TopicPartition("t0", 1)])
    rb.send_requests_to_brokers(2)
    by_broker = {b: r for b, r in sender.sent}
    assert by_broker[1].partitions is by_broker[2].partitions
    assert len(by_broker[1].partitions) == 12
    assert [s.tp for s in by_broker[3].partitions] == [TopicPartition("t0", 1), TopicPartition("t1", 2)]
    assert by_broker[3].partitions[0] == rb._partition_metadata(TopicPartition("t0", 1))


def test_update_metadata_marks_deleted_topics_and_offline_replicas():
    ctx = context(live=(1, 2))
    ctx.topics_to_be_deleted = {"t1"}
    rb = ControllerRequestBatch(1, ctx, Sender())
    s = rb._partition_metadata(TopicPartition("t1", 0))
    assert s.leader == -2
    assert s.offline_replicas == tuple(r for r in s.replicas if r not in (1, 2))
    assert rb._partition_metadata(TopicPartition("nope", 0)) is None



def test_update_metadata_reusing_the_batch_leader_states_equals_the_states_built_afresh():
    """At failover the full UpdateMetadata takes the plain LeaderAndIsr states of the batch: the
    same list as building each anew, also with a partition being reassigned, a replica offline,
    a topic being deleted, a new replica, and a leadership changed after its LeaderAndIsr."""
    ctx = context(live=(1, 2, 3, 4), topics=4)
    ctx.topics_to_be_deleted = {"t3"}
    # t0-0, t0-1 and t3-3 have all their replicas live (1-4; 5 is down), so only what the test
    # changes keeps them from being reused
    changed, moving, fresh = TopicPartition("t0", 0), TopicPartition("t0", 1), TopicPartition("t2", 3)
    ctx.assignments["t0"][1] = ReplicaAssignment((2, 3, 4), adding=(4,))
    rb = ControllerRequestBatch(1, ctx, Sender())
    for tp in ctx.all_partitions():
        rb.add_leader_and_isr([1, 2], tp, ctx.leadership[tp], ctx.known_assignment(tp), is_new=tp == fresh)
    li = ctx.leadership[changed].leader_and_isr
    ctx.leadership[changed] = LeaderIsrAndControllerEpoch(LeaderAndIsr(li.leader, li.isr, li.leader_epoch + 1, 4), 2)
    reused = rb._partitions_metadata(ctx.all_partitions())
    assert any(s is rb._leader_and_isr[1][s.tp] for s in reused)  # some were reused
    afresh = ControllerRequestBatch(1, ctx, Sender())._partitions_metadata(ctx.all_partitions())
    assert reused == afresh
    by_tp = {s.tp: s for s in reused}
    assert by_tp[changed].leader_epoch == li.leader_epoch + 1
    assert by_tp[moving] is not rb._leader_and_isr[2][moving]  # its LeaderAndIsr state carries adding replicas
    assert by_tp[TopicPartition("t3", 3)].leader == -2
    assert any(s.offline_replicas for s in reused)  # broker 5 is down


# ---------------------------------------------------------------------- the shared UpdateMetadata body
def _um_requests(n_partitions: int, epochs=(101, 102, 103), controller_epoch=7, shared=True):
    parts = [
        PartitionLeaderState(TopicPartition(f"t{i // 50}", i % 50), 3, i % 4 + 1, 2, (1, 2, 3), 5, (1, 2, 3), (), (),
                             False, (3,) if i % 3 else ())
        for i in range(n_partitions)
    ]
    if shared:
        parts = wire.SharedPartitions(parts)
    brokers = [BrokerInfo(b, (EndPoint("127.0.0.1", 9000 + b),), "r1" if b % 2 else None) for b in (1, 2, 3)]
    return [UpdateMetadataRequestData(1, controller_epoch, e, parts, brokers) for e in epochs]


def _plain(req: UpdateMetadataRequestData) -> bytes:
    msg = UpdateMetadataRequest(
        controller_id=req.controller_id, controller_epoch=req.controller_epoch, broker_epoch=req.broker_epoch,
        topic_states=wire._um_topic_states(req.partitions), live_brokers=wire._um_brokers(req.live_brokers),
    )
    return bytes(encode_request(msg, wire.UPDATE_METADATA_VERSION, 5, "praha"))


@pytest.mark.parametrize("shared", [True, False])
def test_shared_update_metadata_encodes_byte_for_byte_as_each_request_alone(shared):
    first = _um_requests(120, shared=shared)
    # same partitions, another controller epoch (a cached body must not be reused for it)
    second = [UpdateMetadataRequestData(1, 8, -1, first[0].partitions, first[0].live_brokers)]
    # same partitions, another broker list object: converted on its own
    third = [UpdateMetadataRequestData(1, 7, 5, first[0].partitions, list(first[0].live_brokers[:2]))]
    for req in first + second + third + first:
        obj, version = wire.request_to_wire(req)
        assert bytes(encode_request(obj, version, 5, "praha")) == _plain(req)
        assert isinstance(obj, wire._SharedUpdateMetadataRequest) == (shared and req not in third)


def test_batch_gives_every_broker_the_same_shared_list():
    ctx = context()
    sender = Sender()
    rb = ControllerRequestBatch(1, ctx, sender)
    rb.add_update_metadata([1, 2, 3, 4], None)
    rb.send_requests_to_brokers(2)
    lists = [r.partitions for _b, r in sender.sent]
    assert all(isinstance(x, wire.SharedPartitions) and x is lists[0] for x in lists)
    objs = [wire.request_to_wire(r)[0] for _b, r in sender.sent]
    assert all(o.topic_states is objs[0].topic_states for o in objs)


def test_shared_update_metadata_decodes_to_the_request_and_other_versions_still_encode():
    req = _um_requests(60)[1]
    obj, version = wire.request_to_wire(req)
    back = wire.update_metadata_from_wire(UpdateMetadataRequest.decode(bytes(obj.encode(version=version)),
                                                                      version=version))
    assert back == req
    assert bytes(obj.encode(version=5)) == bytes(UpdateMetadataRequest(
        controller_id=1, controller_epoch=7, broker_epoch=102, topic_states=obj.topic_states,
        live_brokers=obj.live_brokers).encode(version=5))


def test_shared_update_metadata_from_many_sender_threads_at_once():
    reqs = _um_requests(2000, epochs=tuple(range(200, 208)))
    out: dict[int, bytes] = {}

    def send(req):
        obj, version = wire.request_to_wire(req)
        out[req.broker_epoch] = bytes(encode_request(obj, version, 5, "praha"))

    threads = [threading.Thread(target=send, args=(r,)) for r in reqs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert out == {r.broker_epoch: _plain(r) for r in reqs}
