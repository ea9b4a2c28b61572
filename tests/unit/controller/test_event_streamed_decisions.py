"""The speed-ups of the controller's per-event paths decide, write and send what the plain
paths do: read–decide–write with decisions taken while the reads stream in, LeaderAndIsr
entries added in bulk, the cyclic GC paused for an event's batch only."""
from __future__ import annotations

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from praha.common import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from praha.controller.flows import ControllerFlows
from praha.controller.leadership import update_leader_and_isr
from praha.controller.request_batch import ControllerRequestBatch
from praha.errors import ControllerMovedError
from praha.testing.fake_controller_store import FakeControllerStore
from praha.testing.fuzz import examples
from praha.zk.ops import WriteOutcome, WriteResult

from .fakes import RecordingSender, rig, services


class BadVersionOnce(FakeControllerStore):
    """The first write of some partitions finds the zkVersion moved (a leader's ISR change)."""

    def __init__(self, moved):
        super().__init__()
        self.moved = set(moved)

    def update_partition_states(self, states, epoch_zk_version):
        out = {}
        for tp in list(states):
            if tp in self.moved:
                self.moved.discard(tp)
                cur = self.states[tp]
                li = cur.leader_and_isr
                self.states[tp] = LeaderIsrAndControllerEpoch(
                    LeaderAndIsr(li.leader, li.isr[:1], li.leader_epoch, li.zk_version + 1), cur.controller_epoch)
                out[tp] = WriteResult(WriteOutcome.BAD_VERSION, None)
        rest = {tp: s for tp, s in states.items() if tp not in out}
        out.update(super().update_partition_states(rest, epoch_zk_version))
        return {tp: out[tp] for tp in states}


TPS = [TopicPartition("t", p) for p in range(12)]


def _load(store):
    for tp in TPS:
        if tp.partition % 5 != 4:  # some partitions have no state znode
            store.put(tp, tp.partition % 3 + 1, (1, 2, 3), leader_epoch=tp.partition, controller_epoch=2)
    return store


def _decide(tp, cur):
    if tp.partition % 4 == 0:
        return None
    if tp.partition % 4 == 1:
        return "no eligible leader"
    return cur.new_leader(cur.isr[-1], cur.isr[1:])


def _run(store, partitions):
    r = rig(topics={"t": {tp.partition: (1, 2, 3) for tp in TPS}})
    outcome = update_leader_and_isr(store, r.ctx, partitions, _decide)
    return outcome, dict(r.ctx.leadership), dict(store.states)


@pytest.mark.parametrize("lose_at", [0, 5, 11])
@pytest.mark.parametrize("partitions", [TPS, TPS[::-1], TPS + TPS[:3]])
def test_streamed_decisions_survive_a_lost_connection_and_repeated_partitions(lose_at, partitions):
    plain = _run(_load(FakeControllerStore()), list(dict.fromkeys(partitions)))
    store = _load(FakeControllerStore())
    store.lose_connection_at = lose_at
    streamed = _run(store, partitions)
    assert store.streamed == 1
    assert streamed == plain
    assert list(streamed[0].updated) == list(plain[0].updated)  # written (and sent) in the same order


def test_bad_version_rounds_and_corrupt_znodes():
    store = _load(BadVersionOnce({TPS[2], TPS[6]}))
    store.corrupt = {TPS[3]}
    outcome, leadership, states = _run(store, TPS)
    assert store.streamed == 2  # one more round, for the two partitions whose zkVersion moved
    # decided again on the state the leader wrote meanwhile (ISR (1,)): new leader 1, ISR ()
    assert outcome.updated[TPS[2]].leader_and_isr == LeaderAndIsr(1, (), 3, 2)
    assert outcome.updated[TPS[6]].leader_and_isr == LeaderAndIsr(1, (), 7, 2)
    assert outcome.failed[TPS[3]] == "corrupt state znode"
    assert TPS[3] not in leadership
    assert outcome.failed[TPS[4]] == "no state znode"
    # a lost connection in the middle of the first round changes nothing
    again = _load(BadVersionOnce({TPS[2], TPS[6]}))
    again.corrupt = {TPS[3]}
    again.lose_connection_at = 7
    assert _run(again, TPS) == (outcome, leadership, states)


def test_a_newer_controller_epoch_anywhere_stops_the_event_before_any_write():
    store = _load(FakeControllerStore())
    last = TPS[-1]
    store.put(last, 1, (1, 2, 3), controller_epoch=99)
    with pytest.raises(ControllerMovedError):
        _run(store, TPS)
    assert store.writes == 0


# -- bulk LeaderAndIsr entries ---------------------------------------------------------------------
entries = st.lists(st.tuples(st.lists(st.integers(0, 5), max_size=4), st.integers(0, 6), st.booleans()),
                   max_size=25)


@settings(max_examples=examples(150), deadline=None)
@given(entries, st.booleans())
def test_bulk_leader_and_isr_entries_are_the_one_by_one_ones(items, is_new):
    def fill(bulk: bool):
        r = rig(brokers=(1, 2, 3, 4))
        r.ctx.shutting_down_broker_ids.add(4)
        rb = ControllerRequestBatch(1, r.ctx, RecordingSender())
        rows = []
        for brokers, p, new_in_batch in items:
            tp = TopicPartition("t", p)
            li = LeaderIsrAndControllerEpoch(LeaderAndIsr(p % 4 + 1, (1, 2), p, 1), 2)
            rows.append((brokers, tp, li, ReplicaAssignment((1, 2, 3))))
            if new_in_batch:
                rb.add_leader_and_isr(brokers, tp, li, ReplicaAssignment((1, 2, 3)), is_new=True)
        if bulk:
            rb.add_leader_and_isr_many(rows, is_new=is_new)
        else:
            for row in rows:
                rb.add_leader_and_isr(*row, is_new=is_new)
        return ({b: list(v.items()) for b, v in rb._leader_and_isr.items()}, set(rb._update_metadata_partitions),
                set(rb._update_metadata_brokers))

    assert fill(True) == fill(False)


# -- the cyclic GC during an event -------------------------------------------------------------------
def _flows_batch():
    r = rig()
    return ControllerFlows(services(r)), r


def test_gc_is_paused_for_an_events_batch_and_restored():
    flows, r = _flows_batch()
    assert gc.isenabled()
    with flows.batch() as rb:
        assert not gc.isenabled()
        rb.add_update_metadata([1, 2], [])
    assert gc.isenabled()
    assert len(r.sender.sent) == 2
    with pytest.raises(RuntimeError):
        with flows.batch():
            raise RuntimeError("boom")
    assert gc.isenabled()


def test_gc_left_off_if_someone_else_turned_it_off():
    flows, _r = _flows_batch()
    gc.disable()
    try:
        with flows.batch():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
