"""Many reassigned partitions catching up at once complete together: the per-partition watch
events (`PartitionReassignmentIsrChange`) queued back to back are one event, so the
completion is one bulk read, one request of each kind per broker and ONE rewrite (here: the
deletion) of /admin/reassign_partitions — not one of each per partition (O(P²) bytes). The
order of events is unchanged, and the end state is the one of one event per partition."""
from __future__ import annotations

import copy

from praha.common import TopicPartition
from praha.controller import events as ev
from praha.controller.event_manager import ControllerEventManager
from praha.controller.flows import ControllerFlows

from .fakes import online_topics, rig, services
from .test_reassignment_batches import _catch_up

BROKERS = (1, 2, 3, 4, 5)
#: 3 topics of 12 partitions, RF 3 rotating over the brokers
TOPICS = {t: {p: tuple(BROKERS[(12 * n + p + i) % 5] for i in range(3)) for p in range(12)}
          for n, t in enumerate(("a", "b", "c"))}


def _target(replicas: tuple[int, ...]) -> tuple[int, ...]:
    """(r0, r1, r2) → (r1, r2, r3): one replica added, the leader removed (as bench/reassignment.py)."""
    return replicas[1:] + (BROKERS[(BROKERS.index(replicas[-1]) + 1) % 5],)


def _state_path(tp: TopicPartition) -> str:
    return f"/brokers/topics/{tp.topic}/partitions/{tp.partition}/state"


class _Dispatch:
    def __init__(self):
        self.handlers = {}
        self.processed: list[ev.ControllerEvent] = []

    def process(self, event):
        self.processed.append(event)
        self.handlers[type(event)](event)


def _started(catch_up_first: tuple[TopicPartition, ...] = ()):
    """Every partition of TOPICS being reassigned (through the admin znode), waiting for its new
    replica; `catch_up_first` caught up before the event after the start (unwatched still)."""
    r = rig(brokers=BROKERS, topics=TOPICS)
    store = r.store
    online_topics(r, TOPICS)
    store.admin = {TopicPartition(t, p): _target(a) for t, parts in TOPICS.items() for p, a in parts.items()}
    dispatch = _Dispatch()
    em = ControllerEventManager(dispatch, name="test-controller-events")
    r.enqueued = []  # what each put returned (the queue entry, or the one it was absorbed into)
    flows = ControllerFlows(services(r, enqueue=lambda e: r.enqueued.append(em.put(e))))
    dispatch.handlers.update(flows.handlers())
    with flows.batch():
        flows.reassignment.on_admin_znode()
    tps = sorted(store.admin)
    assert r.ctx.partitions_being_reassigned == set(tps)
    assert len(tps) == 36
    # not watched yet: the epoch bumps (this event's own writes) fired nothing; the next event
    # watches them all and checks them once more (a change made in between): it finds none
    # complete and writes nothing
    assert not store.watches
    assert not store.fired
    assert em.queue_size == 1
    check = em._queue.popleft().event
    assert check == ev.PartitionReassignmentIsrChange(set(tps))
    _catch_up(store, catch_up_first)
    writes = len(store.log)
    dispatch.process(check)
    assert sorted(store.watched) == sorted(_state_path(tp) for tp in tps)
    assert not store.fired
    if catch_up_first:
        return r, store, flows, dispatch, tps, em
    assert len(store.log) == writes
    assert r.ctx.partitions_being_reassigned == set(tps)
    dispatch.processed.clear()
    r.sender.sent.clear()
    store.log.clear()
    return r, store, flows, dispatch, tps, em


def _end_state(r, store):
    ctx = r.ctx
    return {
        "states": dict(store.states), "topics": copy.deepcopy(store.topics), "admin": store.admin,
        "assignments": copy.deepcopy(ctx.assignments), "reassigning": set(ctx.partitions_being_reassigned),
        "replica_states": dict(ctx.replica_states), "partition_states": dict(ctx.partition_states),
        "leadership": dict(ctx.leadership),
    }


def test_partitions_catching_up_together_complete_in_one_event_with_one_admin_znode_write():
    r, store, flows, dispatch, tps, em = _started()
    _catch_up(store, tps)
    # the state znodes' watches fire, one partition each (the event thread is not running yet)
    r.enqueued.clear()
    for tp in tps:
        store.fire(_state_path(tp))
    entries = {id(entry) for entry in r.enqueued}
    assert len(r.enqueued) == len(tps)
    assert em.queue_size == 1
    assert len(entries) == 1
    assert em.events_absorbed == len(tps) - 1
    em.start()
    try:
        em.put(ev.ShutdownEventThread())  # stop after what is queued (not absorbed: another kind)
        em._thread.join(10)
    finally:
        assert not em.is_alive()
    assert len(dispatch.processed) == 1
    assert dispatch.processed[0].partitions == set(tps)
    # the completion's own state writes (new leaders, removed replicas out of the ISR) fired no
    # watch: they were cancelled first
    assert store.fired == [_state_path(tp) for tp in tps]
    # all complete, the admin znode deleted once (not rewritten per partition)
    assert store.admin is None
    assert not r.ctx.partitions_being_reassigned
    assert store.log.count(("admin",)) == 1
    assert all(r.ctx.partition_assignment(tp).replicas == _target(TOPICS[tp.topic][tp.partition]) for tp in tps)
    assert all(r.ctx.leadership[tp].leader_and_isr.leader == _target(TOPICS[tp.topic][tp.partition])[0] for tp in tps)
    # each topic znode written once; one request of each kind per broker
    assert sorted(e for e in store.log if e[0] == "topic") == [("topic", t) for t in sorted(TOPICS)]
    kinds = [(b, type(req).__name__) for b, req in r.sender.sent]
    assert len(kinds) == len(set(kinds))
    assert {k for _b, k in kinds} == {"LeaderAndIsrRequestData", "UpdateMetadataRequestData", "StopReplicaRequestData"}

    # the same end state as one event per partition (Kafka's flow without the coalescing)
    r2, store2, flows2, _dispatch2, _, _em2 = _started()
    _catch_up(store2, tps)
    for tp in tps:
        with flows2.batch():
            flows2.reassignment.on_isr_change({tp})
    assert store2.log.count(("admin",)) == len(tps)  # what the coalescing saves
    assert _end_state(r, store) == _end_state(r2, store2)


def test_only_a_run_queued_back_to_back_is_one_event():
    processed = []

    class P:
        def process(self, e):
            processed.append(e)

    em = ControllerEventManager(P(), name="test-coalescing")
    a, b, c, d = (TopicPartition("t", i) for i in range(4))
    first = em.put(ev.PartitionReassignmentIsrChange({a}))
    assert em.put(ev.PartitionReassignmentIsrChange({b})) is first
    em.put(ev.BrokerChange())
    third = em.put(ev.PartitionReassignmentIsrChange({c}))
    assert third is not first
    assert em.put(ev.PartitionReassignmentIsrChange({d})) is third
    em.put(ev.BrokerChange())
    em.put(ev.BrokerChange())  # other kinds are never merged
    assert em.queue_size == 5
    assert em.events_absorbed == 2
    em.put(ev.ShutdownEventThread())  # after all of them (close() would drop what is queued)
    em.start()
    em._thread.join(10)
    assert not em.is_alive()
    assert third.await_processing(0)
    assert [type(e).__name__ for e in processed] == [
        "PartitionReassignmentIsrChange", "BrokerChange", "PartitionReassignmentIsrChange", "BrokerChange",
        "BrokerChange"]
    assert processed[0].partitions == {a, b}
    assert processed[2].partitions == {c, d}


def test_a_partition_catching_up_before_its_watch_is_armed_completes():
    early = (TopicPartition("a", 3), TopicPartition("c", 11))
    r, store, _flows, _dispatch, tps, _em = _started(catch_up_first=early)
    assert r.ctx.partitions_being_reassigned == set(tps) - set(early)
    assert set(store.admin) == set(tps) - set(early)
    assert store.log.count(("admin",)) == 1
    for tp in early:
        assert r.ctx.partition_assignment(tp).replicas == _target(TOPICS[tp.topic][tp.partition])
    # completed without a watch firing, and their watches are gone; the others stay watched
    assert not store.fired
    assert all(store.watches[_state_path(tp)].cancelled == (tp in early) for tp in tps)
