"""The replica state machine (docs/controller.md §7), with Kafka 2.x/3.x's valid-previous table.

`handle_state_changes(replicas, target)` refuses invalid transitions (counted, logged
once per call) and applies the valid ones:
  → New: LeaderAndIsr with the current leader/ISR to the replica (it can only follow);
  New → Online: add it to the assignment if missing;
  Online/Offline/Ineligible → Online: LeaderAndIsr with the current leader/ISR to it;
  → Offline: StopReplica (no delete) to it; remove it from the ISR (conditional znode
     write, leader epoch + 1; the last ISR member is kept, as Kafka does, and a leader that
     goes offline leaves leader = -1); LeaderAndIsr with the new ISR to the remaining
     replicas (UpdateMetadata to all follows from the batch);
  Offline → DeletionStarted: StopReplica (delete);
  → DeletionSuccessful / DeletionIneligible: the state only;
  DeletionSuccessful → NonExistent: drop the replica from the assignment.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator

from praha.common import NO_LEADER, LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition
from praha.controller.context import ControllerContext
from praha.controller.leadership import update_leader_and_isr
from praha.controller.request_batch import ControllerRequestBatch
from praha.controller.states import (
    REPLICA_VALID_PREVIOUS,
    PartitionAndReplica,
    ReplicaState,
    split_valid_transitions,
)
from praha.controller.store_api import PartitionStateStore
from praha.statelog import StateChangeLog

log = logging.getLogger(__name__)

#: builds a NamedTuple (TopicPartition, PartitionAndReplica) without the Python-level
#: `__new__` wrapper; startup makes one per replica
_new_tuple = tuple.__new__


class ReplicaStateMachine:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        store: PartitionStateStore,
        batch: ControllerRequestBatch,
        state_log: StateChangeLog,
    ):
        self.controller_id = controller_id
        self.context = context
        self.store = store
        self.batch = batch
        self.state_log = state_log
        self.invalid_transitions = 0

    def startup(self) -> None:
        """Every replica Online if its broker lives, else Offline (DeletionIneligible if its topic
        is queued for deletion); the Online ones get LeaderAndIsr with their partition's current
        leadership, the Offline ones (topics not being deleted) go → Offline.

        At failover the table starts empty, and each live replica's move to Online is valid by
        construction (it was just set Online): the states are set and each partition's
        LeaderAndIsr added in one pass over the assignments (the same entries, in the same order,
        as checking and applying 300k transitions at 100k partitions). A table that already
        holds entries takes the general path."""
        ctx = self.context
        if ctx.replica_states:
            self.initialize_replica_state()
            live = ctx.live_broker_ids
            self.handle_state_changes([pr for pr in ctx.replica_states if pr.replica in live], ReplicaState.ONLINE)
            offline = [pr for pr in ctx.replica_states if pr.replica not in live]
        else:
            online_brokers: set[int] = set()
            offline = []
            counts = [0]
            self.batch.add_leader_and_isr_many(self._initial_states(online_brokers, offline, counts))
            if counts[0]:
                self.state_log.record(
                    "ReplicaStateChange", self.controller_id, ctx.epoch, target=ReplicaState.ONLINE.value,
                    count=counts[0], brokers=sorted(online_brokers),
                )
        self.handle_state_changes(
            [pr for pr in offline if not ctx.is_topic_queued_for_deletion(pr.partition.topic)], ReplicaState.OFFLINE
        )

    def _initial_states(
        self, online_brokers: set[int], offline: list[PartitionAndReplica], counts: list[int]
    ) -> Iterator[tuple[list[int], TopicPartition, LeaderIsrAndControllerEpoch, ReplicaAssignment]]:
        """Fills an empty table as `initialize_replica_state` does and yields, per partition with
        a leadership, its live replicas (the LeaderAndIsr recipients); collects the replicas on
        dead brokers in `offline`, the live ones' brokers in `online_brokers` and their count
        in `counts[0]`."""
        ctx = self.context
        live = ctx.live_broker_ids
        states = ctx.replica_states
        leadership = ctx.leadership
        online = ReplicaState.ONLINE
        n = 0
        for t, parts in ctx.assignments.items():
            dead = ReplicaState.DELETION_INELIGIBLE if ctx.is_topic_queued_for_deletion(t) else ReplicaState.OFFLINE
            for p, a in parts.items():
                tp = _new_tuple(TopicPartition, (t, p))
                recipients: list[int] = []
                for r in a.replicas:
                    pr = _new_tuple(PartitionAndReplica, (tp, r))
                    if pr in states:
                        continue  # a replica listed twice
                    if r in live:
                        states[pr] = online
                        recipients.append(r)
                    else:
                        states[pr] = dead
                        offline.append(pr)
                if recipients:
                    n += len(recipients)
                    online_brokers.update(recipients)
                    li = leadership.get(tp)
                    if li is not None:
                        yield recipients, tp, li, a
        counts[0] = n

    def initialize_replica_state(self) -> None:
        ctx = self.context
        live = ctx.live_broker_ids
        states = ctx.replica_states
        online = ReplicaState.ONLINE
        for t, parts in ctx.assignments.items():
            dead = ReplicaState.DELETION_INELIGIBLE if ctx.is_topic_queued_for_deletion(t) else ReplicaState.OFFLINE
            for p, a in parts.items():
                tp = _new_tuple(TopicPartition, (t, p))
                for r in a.replicas:
                    states[_new_tuple(PartitionAndReplica, (tp, r))] = online if r in live else dead

    def _valid(self, replicas: Iterable[PartitionAndReplica], target: ReplicaState) -> list[PartitionAndReplica]:
        ctx = self.context
        valid, refused = split_valid_transitions(
            replicas, target, ctx.replica_states, ReplicaState.NON_EXISTENT, REPLICA_VALID_PREVIOUS,
            "replica", self.state_log, self.controller_id, ctx.epoch,
        )
        self.invalid_transitions += refused
        return valid

    def handle_state_changes(self, replicas: Iterable[PartitionAndReplica], target: ReplicaState) -> None:
        ctx = self.context
        valid = self._valid(replicas, target)
        if not valid:
            return
        batch = self.batch
        if target is ReplicaState.NEW:
            for pr in valid:
                li = ctx.leadership.get(pr.partition)
                if li is not None:
                    if li.leader_and_isr.leader == pr.replica:
                        log.error("replica %s is the leader of its partition; it cannot become NewReplica", pr)
                        continue
                    batch.add_leader_and_isr(
                        [pr.replica], pr.partition, li, ctx.known_assignment(pr.partition), is_new=True
                    )
                ctx.replica_states[pr] = ReplicaState.NEW
        elif target is ReplicaState.ONLINE:
            states = ctx.replica_states
            new, online, missing = ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.NON_EXISTENT
            # Replicas of one partition come in a row (startup: 3 per partition at RF 3): its
            # assignment and leadership are looked up once per run, and one add_leader_and_isr
            # names all the run's recipients (the same entries as one call per replica).
            # (recipients are only gathered while the run's partition has both)
            looked_up: TopicPartition | None = None
            assignment: ReplicaAssignment | None = None
            li = None
            recipients: list[int] = []
            for pr in valid:
                tp, replica = pr
                if tp is not looked_up:
                    if recipients and looked_up is not None and li is not None and assignment is not None:
                        batch.add_leader_and_isr(recipients, looked_up, li, assignment)
                        recipients = []
                    looked_up = tp
                    assignment = ctx.partition_assignment(tp)
                    li = ctx.leadership.get(tp)
                if states.get(pr, missing) is new:
                    if assignment is not None and replica not in assignment.replicas:
                        if recipients and li is not None:  # decided with the assignment as it was
                            batch.add_leader_and_isr(recipients, tp, li, assignment)
                            recipients = []
                        assignment = ReplicaAssignment(
                            assignment.replicas + (replica,), assignment.adding, assignment.removing
                        )
                        ctx.update_assignment(tp, assignment)
                elif li is not None and assignment is not None:
                    recipients.append(replica)
                states[pr] = online
            if recipients and looked_up is not None and li is not None and assignment is not None:
                batch.add_leader_and_isr(recipients, looked_up, li, assignment)
        elif target is ReplicaState.OFFLINE:
            for pr in valid:
                batch.add_stop_replica([pr.replica], pr.partition, delete=False)
            self._remove_from_isr(valid)
            for pr in valid:
                ctx.replica_states[pr] = ReplicaState.OFFLINE
        elif target is ReplicaState.DELETION_STARTED:
            for pr in valid:
                batch.add_stop_replica([pr.replica], pr.partition, delete=True)
                ctx.replica_states[pr] = ReplicaState.DELETION_STARTED
        elif target in (ReplicaState.DELETION_SUCCESSFUL, ReplicaState.DELETION_INELIGIBLE):
            for pr in valid:
                ctx.replica_states[pr] = target
        elif target is ReplicaState.NON_EXISTENT:
            for pr in valid:
                a = ctx.partition_assignment(pr.partition)
                if a is not None:
                    ctx.update_assignment(
                        pr.partition,
                        ReplicaAssignment(tuple(r for r in a.replicas if r != pr.replica), a.adding, a.removing),
                    )
                ctx.replica_states.pop(pr, None)
        self.state_log.record(
            "ReplicaStateChange", self.controller_id, ctx.epoch, target=target.value, count=len(valid),
            brokers=sorted({pr.replica for pr in valid}),
        )

    def _remove_from_isr(self, replicas: list[PartitionAndReplica]) -> None:
        """Take each replica out of its partition's ISR (grouped: one read/write pass per broker)."""
        ctx = self.context
        by_replica: dict[int, list[TopicPartition]] = defaultdict(list)
        for pr in replicas:
            if pr.partition in ctx.leadership:
                by_replica[pr.replica].append(pr.partition)
        for replica_id, partitions in by_replica.items():

            def decide(tp: TopicPartition, cur: LeaderAndIsr, replica_id: int = replica_id) -> LeaderAndIsr | None:
                if replica_id not in cur.isr and cur.leader != replica_id:
                    return None
                new_leader = NO_LEADER if cur.leader == replica_id else cur.leader
                new_isr: tuple[int, ...]
                if len(cur.isr) == 1 and replica_id in cur.isr:
                    new_isr = cur.isr  # never shrink the ISR to nothing: keep the last member
                else:
                    new_isr = tuple(r for r in cur.isr if r != replica_id)
                if new_leader == cur.leader and new_isr == cur.isr:
                    return None
                return cur.new_leader(new_leader, new_isr)

            outcome = update_leader_and_isr(self.store, ctx, partitions, decide)
            for tp, state in outcome.updated.items():
                if ctx.is_topic_queued_for_deletion(tp.topic):
                    continue
                assignment = ctx.known_assignment(tp)
                recipients = [r for r in assignment.replicas if r != replica_id]
                self.batch.add_leader_and_isr(recipients, tp, state, assignment)
            if outcome.failed:
                log.warning(
                    "could not remove broker %d from the ISR of %d partitions (e.g. %s: %s)",
                    replica_id, len(outcome.failed), *next(iter(outcome.failed.items())),
                )
