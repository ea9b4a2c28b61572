"""ElectLeaders with election type UNCLEAN: the controller's decisions per partition."""
from praha.common import TopicPartition
from praha.controller.partition_state_machine import PartitionStateMachine
from praha.controller.states import PartitionState
from praha.controller.unclean_election import elect_unclean
from praha.errors import ErrorCode

from .fakes import rig, services

OFFLINE = TopicPartition("t", 0)
HEALTHY = TopicPartition("t", 1)
DEAD = TopicPartition("t", 2)


def _setup():
    """Brokers 2 and 3 live. t-0: led by dead 1 with ISR [1] (2 and 3 out of sync);
    t-1: led by live 2; t-2: every replica (1) dead."""
    r = rig(brokers=(2, 3), topics={"t": {0: (1, 2, 3), 1: (2, 3, 1), 2: (1,)}})
    for tp, leader, isr, state in ((OFFLINE, -1, (1,), PartitionState.OFFLINE),
                                   (HEALTHY, 2, (2, 3), PartitionState.ONLINE),
                                   (DEAD, -1, (1,), PartitionState.OFFLINE)):
        r.store.put(tp, leader, isr, leader_epoch=4)
        r.ctx.leadership[tp] = r.store.states[tp]
        r.ctx.partition_states[tp] = state
    return r, PartitionStateMachine(1, r.ctx, r.store, r.batch, r.log, unclean_default=False)


def test_unclean_election_brings_an_offline_partition_back_whatever_the_topic_says():
    r, m = _setup()
    r.batch.new_batch()
    results = elect_unclean(services(r), m, {OFFLINE, HEALTHY, DEAD, TopicPartition("nosuch", 0)})
    r.batch.send_requests_to_brokers(r.ctx.epoch)
    assert results[OFFLINE] == (ErrorCode.NONE, None)
    li = r.store.states[OFFLINE].leader_and_isr
    assert (li.leader, li.isr, li.leader_epoch) == (2, (2,), 5)  # first live replica, out of sync
    assert r.ctx.partition_states[OFFLINE] is PartitionState.ONLINE
    assert r.ctx.unclean_elections == 1
    assert set(r.sender.leader_and_isr()) == {2, 3}
    assert results[HEALTHY][0] == ErrorCode.ELECTION_NOT_NEEDED
    assert r.store.states[HEALTHY].leader_and_isr.leader_epoch == 4  # untouched
    assert results[DEAD][0] == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert r.store.states[DEAD].leader_and_isr.leader == -1
    assert results[TopicPartition("nosuch", 0)][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_unclean_election_of_every_partition_only_touches_offline_ones():
    r, m = _setup()
    r.batch.new_batch()
    results = elect_unclean(services(r), m, None)
    assert {tp: code for tp, (code, _) in results.items()} == {
        OFFLINE: ErrorCode.NONE, HEALTHY: ErrorCode.ELECTION_NOT_NEEDED,
        DEAD: ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}


def test_a_partition_led_by_a_dead_broker_is_electable():
    r, m = _setup()
    r.store.put(HEALTHY, 1, (1, 2), leader_epoch=4)  # leader 1 is dead but the state says it leads
    r.ctx.leadership[HEALTHY] = r.store.states[HEALTHY]
    r.batch.new_batch()
    results = elect_unclean(services(r), m, {HEALTHY})
    assert results[HEALTHY] == (ErrorCode.NONE, None)
    assert r.store.states[HEALTHY].leader_and_isr.leader == 2  # 2 is in the ISR: a clean choice
