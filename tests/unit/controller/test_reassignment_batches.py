"""Reassigning many partitions in one event (grouped reads, one write per topic znode, one
rewrite of the admin znode) leaves ZooKeeper, the controller context and the requests of the
event exactly as taking the partitions one after the other does (the flow before batching)."""
from __future__ import annotations

import copy

from praha.common import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicPartition,
)
from praha.controller.flows import ControllerFlows
from praha.controller.reassignment import reassign_to
from praha.errors import ErrorCode

from .fakes import RecordingSender, online_topics, rig, services

TOPICS = {"t0": {p: (1, 2, 3) for p in range(5)}, "t1": {p: (2, 3, 4) for p in range(4)}}
#: targets: adding a replica (waits for the ISR), a subset (complete at once), a move of the
#: leader away, the same set (refused), an unknown partition (refused), a full swap
TARGETS = {
    TopicPartition("t0", 0): (2, 3, 4), TopicPartition("t0", 1): (1, 2), TopicPartition("t0", 2): (3, 2),
    TopicPartition("t0", 3): (1, 2, 3), TopicPartition("t0", 9): (1, 2), TopicPartition("t1", 0): (5, 1, 2),
    TopicPartition("t1", 2): (2, 3), TopicPartition("t1", 3): (4, 5),
}


def _setup():
    r = rig(brokers=(1, 2, 3, 4, 5), topics=TOPICS)
    online_topics(r, TOPICS)
    r.store.admin = dict(TARGETS)
    return r, r.store, ControllerFlows(services(r))


def _reference_admin_znode(mgr):
    """The admin-znode handling of the flow before batching: one partition after the other."""
    ctx = mgr.ctx
    refused = {}
    for tp, target in sorted(mgr.store.get_reassignments().items()):
        current = ctx.partition_assignment(tp)
        if current is not None and tp in ctx.partitions_being_reassigned and current.target_replicas == tuple(target):
            continue
        code, why = mgr.validate(tp, tuple(target))
        if code != ErrorCode.NONE:
            refused[tp] = why
            continue
        mgr._on_reassignments([(tp, reassign_to(current, tuple(target)))])
    if refused:
        mgr._remove_from_admin_znode(set(refused))


def _snapshot(r, store, sender: RecordingSender):
    ctx = r.ctx
    per_broker = {}
    for b, req in sender.sent:
        parts = {(type(req).__name__, p.tp): p for p in req.partitions}
        per_broker.setdefault((b, type(req).__name__), {}).update(parts)
    return {
        "requests": per_broker,
        "kinds": sorted((b, type(req).__name__) for b, req in sender.sent),
        "states": dict(store.states),
        "topics": {t: a for t, a in store.topics.items()},
        "admin": store.admin,
        "watched": sorted(store.watched),
        "assignments": copy.deepcopy(ctx.assignments),
        "reassigning": set(ctx.partitions_being_reassigned),
        "replica_states": dict(ctx.replica_states),
        "partition_states": dict(ctx.partition_states),
        "leadership": dict(ctx.leadership),
        "state_writes": sorted((e for e in store.log if e[0] == "state"), key=str),
    }


def _catch_up(store, tps):
    """What each leader writes once the added replicas are in sync."""
    for tp in tps:
        st = store.states[tp]
        li = st.leader_and_isr
        store.states[tp] = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(li.leader, tuple(dict.fromkeys(li.isr + (1, 2, 3, 4, 5))), li.leader_epoch, li.zk_version + 1),
            st.controller_epoch)


def test_one_event_for_all_partitions_is_one_partition_after_the_other():
    r1, store1, flows1 = _setup()
    with flows1.batch():
        flows1.reassignment.on_admin_znode()
    r2, store2, flows2 = _setup()
    with flows2.batch():
        _reference_admin_znode(flows2.reassignment)
    first = _snapshot(r1, store1, r1.sender)
    assert first == _snapshot(r2, store2, r2.sender)
    # the batch grouped its writes: each topic znode written once per step (the reassignment
    # written, then, for partitions complete at once, the new assignment), the admin znode once
    # for the completed partitions and once for the refused ones
    assert len([e for e in store1.log if e == ("topic", "t0")]) == 2
    assert len([e for e in store2.log if e == ("topic", "t0")]) == 5
    assert len([e for e in store1.log if e == ("admin",)]) == 2
    assert first["admin"] is not None
    assert set(first["admin"]) == {TopicPartition("t0", 0), TopicPartition("t1", 0),
                                                                  TopicPartition("t1", 3)}

    # the ISR catches up: one event naming all of them, against one at a time
    waiting = sorted(r1.ctx.partitions_being_reassigned)
    for store in (store1, store2):
        _catch_up(store, waiting)
    for r in (r1, r2):
        r.sender.sent.clear()
    with flows1.batch():
        flows1.reassignment.on_isr_change(set(waiting))
    with flows2.batch():
        for tp in waiting:
            flows2.reassignment.on_isr_change({tp})
    done = _snapshot(r1, store1, r1.sender)
    assert done == _snapshot(r2, store2, r2.sender)
    assert done["admin"] is None
    assert not done["reassigning"]
    assert done["assignments"]["t1"][0].replicas == (5, 1, 2)
    assert done["leadership"][TopicPartition("t1", 3)] \
        .leader_and_isr.leader == 4


def test_api_alter_and_cancel_in_one_event_as_one_after_the_other():
    def run(batched: bool):
        r, store, flows = _setup()
        store.admin = None
        targets = {TopicPartition("t0", 0): (2, 3, 4), TopicPartition("t0", 4): (5, 4, 3),
                   TopicPartition("t1", 1): (2, 3), TopicPartition("t9", 0): (1,)}
        with flows.batch():
            if batched:
                out = flows.reassignment.api_alter(targets)
            else:
                out = {}
                for tp, t in targets.items():
                    out.update(flows.reassignment.api_alter({tp: t}))
        with flows.batch():
            cancel = {TopicPartition("t0", 0): None, TopicPartition("t0", 4): None, TopicPartition("t1", 2): None}
            if batched:
                out2 = flows.reassignment.api_alter(cancel)
            else:
                out2 = {}
                for tp, t in cancel.items():
                    out2.update(flows.reassignment.api_alter({tp: t}))
        return out, out2, _snapshot(r, store, r.sender)

    assert run(True) == run(False)
