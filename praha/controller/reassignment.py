"""Partition reassignment (SPEC §8; Kafka 2.4+ with adding/removing replicas in the topic znode).

AR → RAR, e.g. {1,2,3} → {2,3,4}: OAR = {1,2,3}; full set RS = RAR ∪ OAR with
adding = RAR − OAR = {4}, removing = OAR − RAR = {1}. For one partition (`_on_reassignment`):
  U.  the topic is ineligible for deletion; if RS changed, write it with adding/removing to
      /brokers/topics/<t> (fenced) and into the context; watch the partition's state znode;
  A.  not complete (some of RAR not in the ISR): bump the leader epoch and send LeaderAndIsr
      to all of RS; adding replicas → NewReplica (they start fetching and catch up);
  B.  complete (RAR ⊆ ISR): adding → OnlineReplica; AR := RAR in memory; if the leader is
      not in RAR or not alive, elect with the reassignment algorithm, else bump the leader
      epoch and resend LeaderAndIsr; removing → Offline → DeletionStarted →
      DeletionSuccessful → NonExistent; AR := RAR in ZooKeeper; drop the partition from
      /admin/reassign_partitions (delete the znode when empty); UpdateMetadata to all;
      resume a deletion of the topic that waited.
Triggers: /admin/reassign_partitions (validated; refused partitions are dropped from the
znode with a logged reason), the AlterPartitionReassignments API (None = cancel: go back
to OAR), ISR changes of a reassigning partition, a target broker starting, failover.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from praha.common import ReplicaAssignment, TopicAssignment, TopicPartition
from praha.controller import events as ev
from praha.controller.election import ElectionKind
from praha.controller.leadership import update_leader_and_isr
from praha.controller.states import PartitionAndReplica, PartitionState, ReplicaState
from praha.errors import ErrorCode
from praha.zk import znodes

if TYPE_CHECKING:
    from praha.controller.flows import ControllerFlows

log = logging.getLogger(__name__)


def reassign_to(current: ReplicaAssignment, target: tuple[int, ...]) -> ReplicaAssignment:
    """The full assignment while moving from the current origin replicas to `target`."""
    origin = current.origin_replicas
    full = tuple(dict.fromkeys(tuple(target) + tuple(origin)))
    return ReplicaAssignment(
        full,
        tuple(r for r in target if r not in origin),
        tuple(r for r in origin if r not in target),
    )


class ReassignmentManager:
    def __init__(self, flows: "ControllerFlows"):
        self.flows = flows
        self.c = flows.c
        self.ctx = flows.context
        self._isr_watches: dict[TopicPartition, object] = {}

    # ---- validation ----------------------------------------------------------------------------
    def validate(self, tp: TopicPartition, target: tuple[int, ...] | None) -> tuple[int, str | None]:
        ctx = self.ctx
        if tp.topic not in ctx.all_topics or ctx.partition_assignment(tp) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {tp}"
        if ctx.is_topic_queued_for_deletion(tp.topic):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {tp.topic} is being deleted"
        if target is None:
            if tp not in ctx.partitions_being_reassigned:
                return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, f"no reassignment of {tp} in progress"
            return ErrorCode.NONE, None
        if not target:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "empty replica list"
        if len(set(target)) != len(target):
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"duplicate replicas in {list(target)}"
        unknown = [b for b in target if b < 0]
        if unknown:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"invalid broker ids {unknown}"
        current = ctx.partition_assignment(tp)
        if tuple(target) == current.replicas and not current.is_being_reassigned:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"target {list(target)} equals the current assignment"
        return ErrorCode.NONE, None

    # ---- triggers ------------------------------------------------------------------------------
    def on_admin_znode(self) -> None:
        """`/admin/reassign_partitions` created or changed."""
        ctx = self.ctx
        try:
            wanted = self.c.store.get_reassignments()
        except Exception as e:  # noqa: BLE001 - a corrupt request must not wedge the controller
            log.error("ignoring /admin/reassign_partitions: %s", e)
            self.c.state_log.record("ReassignmentRefused", self.c.broker_id, ctx.epoch, reason=str(e))
            self.c.store.set_reassignments({}, ctx.epoch_zk_version)
            return
        refused: dict[TopicPartition, str] = {}
        for tp, target in sorted(wanted.items()):
            current = ctx.partition_assignment(tp)
            if current is not None and tp in ctx.partitions_being_reassigned and current.target_replicas == tuple(target):
                continue  # already moving there
            code, why = self.validate(tp, tuple(target))
            if code != ErrorCode.NONE:
                refused[tp] = why
                continue
            self._on_reassignment(tp, reassign_to(current, tuple(target)))
        if refused:
            reasons = {str(tp): why for tp, why in refused.items()}
            log.warning("refused reassignment of %d partitions: %s", len(refused), reasons)
            self.c.state_log.record("ReassignmentRefused", self.c.broker_id, ctx.epoch, partitions=reasons)
            self._remove_from_admin_znode(set(refused))

    def api_alter(self, targets: dict[TopicPartition, tuple[int, ...] | None]) -> dict[TopicPartition, tuple[int, str | None]]:
        out = {}
        for tp, target in targets.items():
            code, why = self.validate(tp, None if target is None else tuple(target))
            if code == ErrorCode.NONE:
                current = self.ctx.partition_assignment(tp)
                if target is None:
                    self._on_reassignment(tp, reassign_to(current, current.origin_replicas))
                else:
                    self._on_reassignment(tp, reassign_to(current, tuple(target)))
            out[tp] = (code, why)
        return out

    def api_list(self, partitions: set[TopicPartition] | None):
        ctx = self.ctx
        return {
            tp: (a.replicas, a.adding, a.removing)
            for tp in sorted(ctx.partitions_being_reassigned)
            if (partitions is None or tp in partitions) and (a := ctx.partition_assignment(tp)) is not None
        }

    def on_isr_change(self, partitions) -> None:
        for tp in sorted(set(partitions) & self.ctx.partitions_being_reassigned):
            a = self.ctx.partition_assignment(tp)
            if a is not None and self._complete(tp, a):
                self._on_reassignment(tp, a)

    def resume_for_brokers(self, broker_ids: set[int]) -> None:
        for tp in sorted(self.ctx.partitions_being_reassigned):
            a = self.ctx.partition_assignment(tp)
            if a is not None and set(a.target_replicas) & broker_ids:
                self._on_reassignment(tp, a)

    def on_failover(self) -> None:
        """Resume reassignments found in topic znodes, then those requested in the admin znode."""
        for tp in sorted(self.ctx.partitions_being_reassigned):
            a = self.ctx.partition_assignment(tp)
            if a is not None:
                self._on_reassignment(tp, a)
        if self.c.store.exists(znodes.REASSIGN_PARTITIONS_PATH):
            self.on_admin_znode()

    def on_resignation(self) -> None:
        for h in self._isr_watches.values():
            h.cancel()
        self._isr_watches.clear()

    # ---- the flow --------------------------------------------------------------------------------
    def _complete(self, tp: TopicPartition, a: ReplicaAssignment) -> bool:
        if not a.is_being_reassigned:
            return True
        states, _ = self.c.store.get_partition_states([tp])
        st = states.get(tp)
        if st is None:
            return False
        self.ctx.leadership[tp] = st
        return set(a.target_replicas) <= set(st.leader_and_isr.isr)

    def _on_reassignment(self, tp: TopicPartition, target: ReplicaAssignment) -> None:
        ctx = self.ctx
        flows = self.flows
        flows.deletion.mark_ineligible({tp.topic}, "a partition reassignment is in progress")
        current = ctx.partition_assignment(tp)
        if current != target:
            self._write_assignment(tp, target)
            removed_early = [r for r in current.replicas if r not in target.replicas]
            if removed_early:
                self._stop_removed(tp, removed_early)
        self._watch_isr(tp)
        ctx.partitions_being_reassigned.add(tp)
        if not self._complete(tp, target):
            self._bump_epoch_and_send(tp, target)
            flows.replica_sm.handle_state_changes(
                [PartitionAndReplica(tp, r) for r in target.adding
                 if ctx.replica_states.get(PartitionAndReplica(tp, r), ReplicaState.NON_EXISTENT) is ReplicaState.NON_EXISTENT],
                ReplicaState.NEW,
            )
            log.info("reassignment of %s to %s started: waiting for %s to join the ISR",
                     tp, list(target.target_replicas), list(target.adding))
            self.c.state_log.record("ReassignmentStarted", self.c.broker_id, ctx.epoch, partition=str(tp),
                                    target=list(target.target_replicas), adding=list(target.adding),
                                    removing=list(target.removing))
            return
        flows.replica_sm.handle_state_changes([PartitionAndReplica(tp, r) for r in target.adding], ReplicaState.ONLINE)
        done = ReplicaAssignment(target.target_replicas)
        ctx.update_assignment(tp, done)
        self._move_leader_if_required(tp, done)
        self._stop_removed(tp, list(target.removing))
        self._write_assignment(tp, done)
        self._finish(tp)
        self.c.request_batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, [tp])
        log.info("reassignment of %s to %s completed", tp, list(done.replicas))
        self.c.state_log.record("ReassignmentCompleted", self.c.broker_id, ctx.epoch, partition=str(tp),
                                replicas=list(done.replicas))
        if not any(p.topic == tp.topic for p in ctx.partitions_being_reassigned):
            flows.deletion.resume_for_topics({tp.topic})

    def _move_leader_if_required(self, tp: TopicPartition, done: ReplicaAssignment) -> None:
        ctx = self.ctx
        li = ctx.leadership.get(tp)
        leader = li.leader_and_isr.leader if li else -1
        if leader not in done.replicas or leader not in ctx.live_broker_ids:
            self.flows.partition_sm.handle_state_changes(
                [tp], PartitionState.ONLINE, ElectionKind.REASSIGNMENT, target_replicas={tp: done.replicas}
            )
        else:
            self._bump_epoch_and_send(tp, done)

    def _bump_epoch_and_send(self, tp: TopicPartition, a: ReplicaAssignment) -> None:
        """New leader epoch, same leader and ISR, so every replica of RS learns the new RS."""
        outcome = update_leader_and_isr(self.c.store, self.ctx, [tp], lambda _tp, cur: cur.new_leader(cur.leader))
        state = outcome.updated.get(tp)
        if state is not None:
            self.c.request_batch.add_leader_and_isr(a.replicas, tp, state, a)

    def _stop_removed(self, tp: TopicPartition, removed: list[int]) -> None:
        rsm = self.flows.replica_sm
        replicas = [PartitionAndReplica(tp, r) for r in removed]
        rsm.handle_state_changes(replicas, ReplicaState.OFFLINE)
        rsm.handle_state_changes(replicas, ReplicaState.DELETION_STARTED)
        rsm.handle_state_changes(replicas, ReplicaState.DELETION_SUCCESSFUL)
        rsm.handle_state_changes(replicas, ReplicaState.NON_EXISTENT)

    def _write_assignment(self, tp: TopicPartition, a: ReplicaAssignment) -> None:
        ctx = self.ctx
        parts = dict(ctx.assignments.get(tp.topic, {}))
        parts[tp.partition] = a
        self.c.store.set_topic_assignment(
            tp.topic, TopicAssignment(parts, ctx.topic_ids.get(tp.topic)), epoch_zk_version=ctx.epoch_zk_version
        )
        ctx.update_assignment(tp, a)

    def _watch_isr(self, tp: TopicPartition) -> None:
        if tp in self._isr_watches:
            return
        put = self.c.event_manager.put
        self._isr_watches[tp] = self.c.store.watch_data(
            znodes.tp_state_path(tp), lambda *a, **k: put(ev.PartitionReassignmentIsrChange(tp))
        )

    def _finish(self, tp: TopicPartition) -> None:
        h = self._isr_watches.pop(tp, None)
        if h is not None:
            h.cancel()
        self.ctx.partitions_being_reassigned.discard(tp)
        self._remove_from_admin_znode({tp})

    def _remove_from_admin_znode(self, partitions: set[TopicPartition]) -> None:
        try:
            wanted = self.c.store.get_reassignments()
        except Exception:  # noqa: BLE001 - corrupt: on_admin_znode clears it
            return
        remaining = {tp: r for tp, r in wanted.items() if tp not in partitions}
        if len(remaining) != len(wanted):
            self.c.store.set_reassignments(remaining, self.ctx.epoch_zk_version)

