"""Unclean leader elections an operator asks for (ElectLeaders with election type UNCLEAN).

Kafka's `processReplicaElection` for ElectionType.UNCLEAN, for each named partition (all
partitions when none are named):
1. unknown → UNKNOWN_TOPIC_OR_PARTITION; its topic queued for deletion → INVALID_TOPIC_EXCEPTION;
2. led by a live broker already → ELECTION_NOT_NEEDED: an unclean election only brings an
   offline partition back, it never replaces a working leader;
3. otherwise the offline algorithm with unclean election allowed whatever the topic's
   `unclean.leader.election.enable` says: the first live ISR replica, else the first live
   replica, whose missing records are then lost (the operator's explicit choice); no live
   replica at all → ELIGIBLE_LEADERS_NOT_AVAILABLE and the partition stays offline.
"""
from __future__ import annotations

import logging

from praha.common import TopicPartition
from praha.controller.election import Election, ElectionKind
from praha.controller.partition_state_machine import PartitionStateMachine
from praha.controller.services import ControllerServices
from praha.controller.states import PartitionState
from praha.errors import ErrorCode

log = logging.getLogger(__name__)

Results = dict[TopicPartition, tuple[int, str | None]]


def elect_unclean(services: ControllerServices, partition_sm: PartitionStateMachine,
                  partitions: set[TopicPartition] | None) -> Results:
    """Decide which partitions need an election, run it, and answer each partition."""
    ctx = services.context
    live = ctx.live_broker_ids
    wanted = set(ctx.all_partitions()) if partitions is None else set(partitions)
    results: Results = {}
    candidates = []
    for tp in sorted(wanted):
        refusal = ctx.election_refusal(tp)
        leadership = ctx.leadership.get(tp)
        if refusal is not None:
            results[tp] = refusal
        elif leadership is not None and leadership.leader_and_isr.leader in live:
            results[tp] = (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
        else:
            candidates.append(tp)
    if candidates:
        outcome = partition_sm.handle_state_changes(candidates, PartitionState.ONLINE, ElectionKind.UNCLEAN)
        for tp in candidates:
            r = outcome.get(tp)
            if isinstance(r, Election):
                results[tp] = (ErrorCode.NONE, None)
            else:
                results[tp] = (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                               r if isinstance(r, str) else f"no live replica of {tp} can lead")
    elected = sum(1 for code, _ in results.values() if code == ErrorCode.NONE)
    log.warning("unclean election (ElectLeaders API): %d partitions asked, %d offline, %d elected",
                len(wanted), len(candidates), elected)
    services.state_log.record(
        "UncleanReplicaElection", services.controller_id, ctx.epoch, trigger="ElectLeaders API",
        asked=len(wanted), elected=elected,
        failed={str(tp): why for tp, (code, why) in results.items()
                if code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)},
    )
    return results
