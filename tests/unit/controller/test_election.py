"""The four election algorithms of docs/controller.md §6 and the layer that builds the new LeaderAndIsr."""
from praha.common import LeaderAndIsr, TopicPartition
from praha.controller.election import (
    ElectionKind,
    controlled_shutdown_leader,
    elect,
    offline_partition_leader,
    preferred_replica_leader,
    reassign_partition_leader,
)

TP = TopicPartition("t", 0)


def test_offline_prefers_first_live_isr_member_in_assignment_order():
    assert offline_partition_leader([1, 2, 3], isr=[3, 2], live=[2, 3], unclean_enabled=False) == 2
    assert offline_partition_leader([1, 2, 3], isr=[1, 3], live=[3], unclean_enabled=False) == 3


def test_offline_without_live_isr_member_is_none_unless_unclean():
    assert offline_partition_leader([1, 2, 3], isr=[1], live=[2, 3], unclean_enabled=False) is None
    assert offline_partition_leader([1, 2, 3], isr=[1], live=[3, 2], unclean_enabled=True) == 2
    assert offline_partition_leader([1, 2, 3], isr=[1], live=[], unclean_enabled=True) is None


def test_reassign_picks_first_target_in_isr_and_alive():
    assert reassign_partition_leader([4, 2, 3], isr=[1, 2, 3], live=[2, 3, 4]) == 2
    assert reassign_partition_leader([4, 5], isr=[1, 2], live=[4, 5]) is None


def test_preferred_is_first_assigned_only_if_alive_and_in_isr():
    assert preferred_replica_leader([2, 1, 3], isr=[1, 2], live=[1, 2]) == 2
    assert preferred_replica_leader([2, 1, 3], isr=[1, 3], live=[1, 2, 3]) is None
    assert preferred_replica_leader([2, 1, 3], isr=[1, 2], live=[1, 3]) is None
    assert preferred_replica_leader([], isr=[1], live=[1]) is None


def test_controlled_shutdown_skips_shutting_down_brokers():
    assert controlled_shutdown_leader([1, 2, 3], isr=[1, 2, 3], live=[1, 2, 3], shutting_down=[1]) == 2
    assert controlled_shutdown_leader([1, 2, 3], isr=[1, 3], live=[1, 2, 3], shutting_down={1}) == 3
    assert controlled_shutdown_leader([1, 2], isr=[1], live=[1, 2], shutting_down={1}) is None


def test_offline_election_bumps_epoch_and_shrinks_isr_to_live_members():
    cur = LeaderAndIsr(1, (1, 2, 3), leader_epoch=4, zk_version=7)
    e = elect(ElectionKind.OFFLINE, TP, cur, [1, 2, 3], live={2, 3})
    assert e.leader_and_isr == LeaderAndIsr(2, (2, 3), 5, 7)
    assert e.recipients == (2, 3)
    assert not e.unclean


def test_unclean_election_isr_is_just_the_new_leader():
    cur = LeaderAndIsr(1, (1,), leader_epoch=0)
    e = elect(ElectionKind.OFFLINE, TP, cur, [1, 2, 3], live={3}, unclean_enabled=True)
    assert e.unclean
    assert e.leader_and_isr.leader == 3
    assert e.leader_and_isr.isr == (3,)
    assert elect(ElectionKind.OFFLINE, TP, cur, [1, 2, 3], live={3}, unclean_enabled=False) is None


def test_reassignment_and_preferred_keep_isr_and_name_their_recipients():
    cur = LeaderAndIsr(1, (1, 2, 3, 4), leader_epoch=1)
    e = elect(ElectionKind.REASSIGNMENT, TP, cur, [1, 2, 3, 4], live={1, 2, 3, 4}, target_replicas=[2, 3, 4])
    assert (e.leader_and_isr.leader, e.leader_and_isr.isr, e.recipients) == (2, (1, 2, 3, 4), (2, 3, 4))
    cur = LeaderAndIsr(2, (1, 2), leader_epoch=3)
    e = elect(ElectionKind.PREFERRED, TP, cur, [1, 2, 3], live={1, 2, 3})
    assert (e.leader_and_isr.leader, e.leader_and_isr.leader_epoch, e.recipients) == (1, 4, (1, 2, 3))


def test_controlled_shutdown_removes_shutting_down_brokers_from_isr():
    cur = LeaderAndIsr(1, (1, 2, 3), leader_epoch=0)
    e = elect(ElectionKind.CONTROLLED_SHUTDOWN, TP, cur, [1, 2, 3], live={1, 2, 3}, shutting_down={1})
    assert e.leader_and_isr.leader == 2
    assert e.leader_and_isr.isr == (2, 3)
    assert e.recipients == (1, 2, 3)
