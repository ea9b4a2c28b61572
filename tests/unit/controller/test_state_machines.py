"""Every valid and invalid transition of both state machines, with the requests each sends."""
import pytest

from praha.common import LEADER_DURING_DELETE, NO_LEADER, TopicPartition
from praha.controller.election import ElectionKind
from praha.controller.partition_state_machine import PartitionStateMachine
from praha.controller.replica_state_machine import ReplicaStateMachine
from praha.controller.states import (
    PARTITION_VALID_PREVIOUS,
    REPLICA_VALID_PREVIOUS,
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
)

from .fakes import rig

T0 = TopicPartition("t", 0)


def psm(r, unclean=False):
    return PartitionStateMachine(1, r.ctx, r.store, r.batch, r.log, unclean_default=unclean)


def rsm(r):
    return ReplicaStateMachine(1, r.ctx, r.store, r.batch, r.log)


def send(r):
    r.batch.send_requests_to_brokers(r.ctx.epoch)


# ---------------------------------------------------------------- tables
def test_tables_are_kafkas():
    P = PartitionState
    assert PARTITION_VALID_PREVIOUS[P.NEW] == {P.NON_EXISTENT}
    assert PARTITION_VALID_PREVIOUS[P.ONLINE] == {P.NEW, P.ONLINE, P.OFFLINE}
    assert PARTITION_VALID_PREVIOUS[P.OFFLINE] == {P.NEW, P.ONLINE, P.OFFLINE}
    assert PARTITION_VALID_PREVIOUS[P.NON_EXISTENT] == {P.OFFLINE}
    R = ReplicaState
    assert REPLICA_VALID_PREVIOUS[R.ONLINE] == {R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}
    assert REPLICA_VALID_PREVIOUS[R.DELETION_INELIGIBLE] == {R.OFFLINE, R.DELETION_STARTED}
    assert REPLICA_VALID_PREVIOUS[R.NON_EXISTENT] == {R.DELETION_SUCCESSFUL}


# ---------------------------------------------------------------- partition state machine
INVALID_PARTITION = [(c, t) for t in PartitionState for c in PartitionState if c not in PARTITION_VALID_PREVIOUS[t]]
INVALID_REPLICA = [(c, t) for t in ReplicaState for c in ReplicaState if c not in REPLICA_VALID_PREVIOUS[t]]


@pytest.mark.parametrize(("current", "target"), INVALID_PARTITION)
def test_invalid_partition_transitions_are_refused_and_change_nothing(current, target):
    r = rig(topics={"t": {0: (1, 2, 3)}})
    if current is not PartitionState.NON_EXISTENT:
        r.ctx.partition_states[T0] = current
    r.store.put(T0, 1, (1, 2, 3))
    m = psm(r)
    r.batch.new_batch()
    m.handle_state_changes([T0], target, ElectionKind.OFFLINE)
    send(r)
    assert r.ctx.partition_states.get(T0, PartitionState.NON_EXISTENT) is current
    assert m.invalid_transitions == 1
    assert r.sender.sent == []
    assert r.store.writes == 0


def test_a_topic_recreated_under_a_deleted_name_starts_above_its_last_leader_epoch():
    """librdkafka ignores metadata whose leader epoch went backwards (topic id or not), so a
    re-created topic starting again at 0 would leave producers on the old leader."""
    r = rig(brokers=(1, 2, 3), topics={"t": {0: (1, 2, 3)}})
    r.store.retired_leader_epochs["t"] = 7
    m = psm(r)
    r.batch.new_batch()
    m.handle_state_changes([T0], PartitionState.NEW)
    m.handle_state_changes([T0], PartitionState.ONLINE, ElectionKind.OFFLINE)
    send(r)
    assert r.store.states[T0].leader_and_isr.leader_epoch == 8
    assert r.sender.leader_and_isr()[1][0].partitions[0].leader_epoch == 8


def test_new_to_online_leader_is_first_live_replica_and_isr_live_replicas():
    r = rig(brokers=(2, 3), topics={"t": {0: (1, 2, 3)}})
    m = psm(r)
    r.batch.new_batch()
    m.handle_state_changes([T0], PartitionState.NEW)
    m.handle_state_changes([T0], PartitionState.ONLINE, ElectionKind.OFFLINE)
    send(r)
    st = r.store.states[T0]
    assert (st.leader_and_isr.leader, st.leader_and_isr.isr, st.leader_and_isr.leader_epoch) == (2, (2, 3), 0)
    assert st.controller_epoch == r.ctx.epoch
    assert r.ctx.partition_states[T0] is PartitionState.ONLINE
    lis = r.sender.leader_and_isr()
    assert set(lis) == {2, 3}  # the live replicas, one request each
    assert all(len(v) == 1 and v[0].partitions[0].is_new for v in lis.values())
    assert set(r.sender.update_metadata()) == {2, 3}  # UpdateMetadata to every live broker


def test_new_partition_without_live_replica_stays_new():
    r = rig(brokers=(4,), topics={"t": {0: (1, 2)}})
    m = psm(r)
    r.batch.new_batch()
    m.handle_state_changes([T0], PartitionState.NEW)
    res = m.handle_state_changes([T0], PartitionState.ONLINE, ElectionKind.OFFLINE)
    send(r)
    assert isinstance(res[T0], str)
    assert r.ctx.partition_states[T0] is PartitionState.NEW
    assert r.sender.leader_and_isr() == {}


def _online(r, leader=1, isr=(1, 2, 3), epoch=0):
    r.store.put(T0, leader, isr, leader_epoch=epoch)
    r.ctx.leadership[T0] = r.store.states[T0]
    r.ctx.partition_states[T0] = PartitionState.ONLINE


def test_offline_to_online_elects_from_live_isr_and_writes_conditionally():
    r = rig(brokers=(2, 3), topics={"t": {0: (1, 2, 3)}})
    _online(r)
    m = psm(r)
    r.batch.new_batch()
    m.handle_state_changes([T0], PartitionState.OFFLINE)
    m.handle_state_changes([T0], PartitionState.ONLINE, ElectionKind.OFFLINE)
    send(r)
    li = r.store.states[T0].leader_and_isr
    assert (li.leader, li.isr, li.leader_epoch, li.zk_version) == (2, (2, 3), 1, 1)
    assert r.ctx.leadership[T0].leader_and_isr == li
    assert set(r.sender.leader_and_isr()) == {2, 3}


def test_offline_partition_with_dead_isr_stays_offline_without_unclean():
    r = rig(brokers=(3,), topics={"t": {0: (1, 2, 3)}})
    _online(r, leader=1, isr=(1,))
    m = psm(r)
    r.batch.new_batch()
    m.handle_state_changes([T0], PartitionState.OFFLINE)
    res = m.handle_state_changes([T0], PartitionState.ONLINE, ElectionKind.OFFLINE)
    send(r)
    assert isinstance(res[T0], str)
    assert r.ctx.partition_states[T0] is PartitionState.OFFLINE
    assert r.store.states[T0].leader_and_isr.isr == (1,)
    assert r.ctx.unclean_elections == 0


def test_unclean_per_topic_config_overrides_broker_default():
    r = rig(brokers=(3,), topics={"t": {0: (1, 2, 3)}})
    r.ctx.topic_configs["t"] = {"unclean.leader.election.enable": "true"}
    _online(r, leader=1, isr=(1,))
    m = psm(r, unclean=False)
    r.batch.new_batch()
    m.handle_state_changes([T0], PartitionState.OFFLINE)
    m.handle_state_changes([T0], PartitionState.ONLINE, ElectionKind.OFFLINE)
    send(r)
    li = r.store.states[T0].leader_and_isr
    assert (li.leader, li.isr) == (3, (3,))
    assert r.ctx.unclean_elections == 1


def test_election_retries_when_the_leader_changed_the_isr_concurrently():
    r = rig(brokers=(2, 3), topics={"t": {0: (1, 2, 3)}})
    _online(r)
    # the leader shrank the ISR in ZooKeeper; our cached zkVersion is stale
    r.store.put(T0, 1, (1, 3))
    r.store.states[T0] = type(r.store.states[T0])(
        type(r.store.states[T0].leader_and_isr)(1, (1, 3), 0, 5), 1
    )
    m = psm(r)
    r.batch.new_batch()
    m.handle_state_changes([T0], PartitionState.OFFLINE)
    m.handle_state_changes([T0], PartitionState.ONLINE, ElectionKind.OFFLINE)
    send(r)
    li = r.store.states[T0].leader_and_isr
    assert (li.leader, li.isr, li.zk_version) == (3, (3,), 6)


def test_preferred_election_moves_leadership_back_and_is_a_no_op_when_preferred_leads():
    r = rig(topics={"t": {0: (1, 2, 3)}})
    _online(r, leader=2)
    m = psm(r)
    r.batch.new_batch()
    m.handle_state_changes([T0], PartitionState.ONLINE, ElectionKind.PREFERRED)
    send(r)
    assert r.store.states[T0].leader_and_isr.leader == 1
    writes = r.store.writes
    r.batch.new_batch()
    m.handle_state_changes([T0], PartitionState.ONLINE, ElectionKind.PREFERRED)
    send(r)
    assert r.store.writes == writes


def test_offline_to_non_existent_and_new_only_mark_state():
    r = rig(topics={"t": {0: (1, 2, 3)}})
    _online(r)
    m = psm(r)
    r.batch.new_batch()
    m.handle_state_changes([T0], PartitionState.OFFLINE)
    m.handle_state_changes([T0], PartitionState.NON_EXISTENT)
    send(r)
    assert T0 not in r.ctx.partition_states
    assert r.sender.sent == []


def test_initialize_partition_state_at_failover():
    r = rig(brokers=(1, 2), topics={"t": {0: (1, 2), 1: (3, 2), 2: (2, 1)}})
    r.store.put(T0, 1, (1, 2))
    r.store.put(TopicPartition("t", 1), 3, (3,))
    for tp, st in r.store.states.items():
        r.ctx.leadership[tp] = st
    psm(r).initialize_partition_state()
    assert r.ctx.partition_states == {
        T0: PartitionState.ONLINE,
        TopicPartition("t", 1): PartitionState.OFFLINE,
        TopicPartition("t", 2): PartitionState.NEW,
    }
    assert r.ctx.offline_partition_count == 1


# ---------------------------------------------------------------- replica state machine
def pr(b, tp=T0):
    return PartitionAndReplica(tp, b)


@pytest.mark.parametrize(("current", "target"), INVALID_REPLICA)
def test_invalid_replica_transitions_are_refused(current, target):
    r = rig(topics={"t": {0: (1, 2, 3)}})
    _online(r)
    if current is not ReplicaState.NON_EXISTENT:
        r.ctx.replica_states[pr(2)] = current
    m = rsm(r)
    r.batch.new_batch()
    m.handle_state_changes([pr(2)], target)
    send(r)
    assert r.ctx.replica_states.get(pr(2), ReplicaState.NON_EXISTENT) is current
    assert m.invalid_transitions == 1
    assert r.sender.sent == []
    assert r.store.writes == 0


def test_new_replica_gets_leader_and_isr_as_follower():
    r = rig(brokers=(1, 2, 3, 4), topics={"t": {0: (1, 2, 3)}})
    _online(r)
    m = rsm(r)
    r.batch.new_batch()
    m.handle_state_changes([pr(4)], ReplicaState.NEW)
    send(r)
    assert r.ctx.replica_states[pr(4)] is ReplicaState.NEW
    (req,) = r.sender.leader_and_isr()[4]
    assert req.partitions[0].leader == 1
    assert req.partitions[0].is_new


def test_new_to_online_adds_the_replica_to_the_assignment():
    r = rig(brokers=(1, 2, 3, 4), topics={"t": {0: (1, 2, 3)}})
    _online(r)
    m = rsm(r)
    r.batch.new_batch()
    m.handle_state_changes([pr(4)], ReplicaState.NEW)
    m.handle_state_changes([pr(4)], ReplicaState.ONLINE)
    send(r)
    assert r.ctx.partition_replicas(T0) == (1, 2, 3, 4)


@pytest.mark.parametrize("current", [ReplicaState.ONLINE, ReplicaState.OFFLINE, ReplicaState.DELETION_INELIGIBLE])
def test_back_online_sends_current_leadership(current):
    r = rig(topics={"t": {0: (1, 2, 3)}})
    _online(r)
    r.ctx.replica_states[pr(3)] = current
    m = rsm(r)
    r.batch.new_batch()
    m.handle_state_changes([pr(3)], ReplicaState.ONLINE)
    send(r)
    assert r.ctx.replica_states[pr(3)] is ReplicaState.ONLINE
    (req,) = r.sender.leader_and_isr()[3]
    assert not req.partitions[0].is_new
    assert set(r.sender.update_metadata()) == {1, 2, 3}


def test_offline_follower_stops_and_leaves_the_isr():
    r = rig(topics={"t": {0: (1, 2, 3)}})
    _online(r)
    r.ctx.replica_states[pr(3)] = ReplicaState.ONLINE
    m = rsm(r)
    r.batch.new_batch()
    m.handle_state_changes([pr(3)], ReplicaState.OFFLINE)
    send(r)
    li = r.store.states[T0].leader_and_isr
    assert (li.leader, li.isr, li.leader_epoch) == (1, (1, 2), 1)
    (stop,) = r.sender.stop_replica()[3]
    assert not stop.partitions[0].delete
    assert set(r.sender.leader_and_isr()) == {1, 2}  # the remaining replicas learn the new ISR


def test_offline_last_isr_member_leader_gives_leader_minus_one_and_keeps_isr():
    r = rig(brokers=(2, 3), topics={"t": {0: (1, 2, 3)}})
    _online(r, leader=1, isr=(1,))
    r.ctx.replica_states[pr(1)] = ReplicaState.ONLINE
    m = rsm(r)
    r.batch.new_batch()
    m.handle_state_changes([pr(1)], ReplicaState.OFFLINE)
    send(r)
    li = r.store.states[T0].leader_and_isr
    assert (li.leader, li.isr) == (NO_LEADER, (1,))


def test_deletion_path_start_success_nonexistent():
    r = rig(topics={"t": {0: (1, 2, 3)}})
    _online(r)
    r.ctx.topics_to_be_deleted.add("t")
    r.ctx.replica_states[pr(2)] = ReplicaState.OFFLINE
    m = rsm(r)
    r.batch.new_batch()
    m.handle_state_changes([pr(2)], ReplicaState.DELETION_STARTED)
    send(r)
    (stop,) = r.sender.stop_replica()[2]
    assert stop.partitions[0].delete
    assert stop.partitions[0].leader_epoch == -2  # EpochDuringDelete
    assert r.sender.update_metadata() == {}
    r.batch.new_batch()
    m.handle_state_changes([pr(2)], ReplicaState.DELETION_SUCCESSFUL)
    m.handle_state_changes([pr(2)], ReplicaState.NON_EXISTENT)
    send(r)
    assert pr(2) not in r.ctx.replica_states
    assert r.ctx.partition_replicas(T0) == (1, 3)


def test_ineligible_path():
    r = rig(topics={"t": {0: (1, 2, 3)}})
    r.ctx.replica_states[pr(2)] = ReplicaState.OFFLINE
    m = rsm(r)
    m.handle_state_changes([pr(2)], ReplicaState.DELETION_INELIGIBLE)
    assert r.ctx.replica_states[pr(2)] is ReplicaState.DELETION_INELIGIBLE
    m.handle_state_changes([pr(2)], ReplicaState.OFFLINE)
    assert r.ctx.replica_states[pr(2)] is ReplicaState.OFFLINE


def test_update_metadata_marks_partitions_of_deleted_topics():
    r = rig(topics={"t": {0: (1, 2, 3)}})
    _online(r)
    r.ctx.topics_to_be_deleted.add("t")
    r.batch.new_batch()
    r.batch.add_update_metadata({1, 2, 3}, [T0])
    send(r)
    for reqs in r.sender.update_metadata().values():
        assert reqs[0].partitions[0].leader == LEADER_DURING_DELETE


def test_one_request_of_each_kind_per_broker_per_batch():
    topics = {"t": {p: (1, 2, 3) for p in range(50)}}
    r = rig(brokers=(2, 3), topics=topics)
    for p in range(50):
        tp = TopicPartition("t", p)
        r.store.put(tp, 1, (1, 2, 3))
        r.ctx.leadership[tp] = r.store.states[tp]
        r.ctx.partition_states[tp] = PartitionState.ONLINE
        for b in (1, 2, 3):
            r.ctx.replica_states[pr(b, tp)] = ReplicaState.ONLINE
    p, rep = psm(r), rsm(r)
    parts = [TopicPartition("t", i) for i in range(50)]
    r.batch.new_batch()
    p.handle_state_changes(parts, PartitionState.OFFLINE)
    p.trigger_online_partition_state_change()
    rep.handle_state_changes([pr(1, tp) for tp in parts], ReplicaState.OFFLINE)
    send(r)
    counts = {}
    for b, req in r.sender.sent:
        counts[(b, type(req).__name__)] = counts.get((b, type(req).__name__), 0) + 1
    assert counts
    assert max(counts.values()) == 1
    assert 1 not in {b for b, _ in r.sender.sent}  # the dead broker hears nothing
    assert all(r.store.states[tp].leader_and_isr.leader == 2 for tp in parts)


def test_failover_treats_a_leader_that_restarted_unseen_as_offline():
    """A leader whose registration (czxid) is newer than the state znode's last write was elected
    as an earlier incarnation: it gets a new election (new leader epoch), as if the bounce was seen."""
    from praha.common import BrokerInfo, EndPoint
    from praha.controller.context_loader import stale_leaderships

    r = rig(brokers=(1, 2, 3), topics={"t": {0: (1, 2, 3), 1: (2, 3, 1)}})
    t1 = TopicPartition("t", 1)
    r.store.put(T0, 1, (1, 2, 3), leader_epoch=4)
    r.store.put(t1, 2, (2, 3, 1), leader_epoch=7)
    r.ctx.live_brokers[1] = BrokerInfo(1, (EndPoint("127.0.0.1", 1),), epoch=500)  # re-registered at zxid 500
    mzxids = {T0: 300, t1: 300}
    states = dict(r.store.states)
    r.ctx.leadership = states
    r.ctx.stale_leadership = stale_leaderships(states, mzxids, r.ctx.live_brokers)
    assert r.ctx.stale_leadership == {T0}
    m = psm(r)
    r.batch.new_batch()
    m.startup()
    send(r)
    li = r.store.states[T0].leader_and_isr
    assert li.leader_epoch == 5  # a fresh election, even though broker 1 is live and may lead again
    assert r.store.states[t1].leader_and_isr.leader_epoch == 7  # untouched
    assert not r.ctx.stale_leadership
