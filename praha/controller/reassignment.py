"""Partition reassignment (docs/controller.md §8; Kafka 2.4+ with adding/removing replicas in the topic znode).

AR → RAR, e.g. {1,2,3} → {2,3,4}: OAR = {1,2,3}; full set RS = RAR ∪ OAR with
adding = RAR − OAR = {4}, removing = OAR − RAR = {1}. For each partition (`_on_reassignments`):
  U.  the topic is ineligible for deletion; if RS changed, write it with adding/removing to
      /brokers/topics/<t> (fenced) and into the context;
  A.  not complete (some of RAR not in the ISR): bump the leader epoch and send LeaderAndIsr
      to all of RS; adding replicas → NewReplica (they start fetching and catch up); the
      next event watches the partition's state znode, then checks for completion once more
      (a change made before the watch); the watch is armed after this event's own write and
      requests, so fires only for others' changes;
  B.  complete (RAR ⊆ ISR): its watch cancelled (before this event's own writes); adding →
      OnlineReplica; AR := RAR in memory; if the leader is not in RAR or not alive, elect
      with the reassignment algorithm, else bump the leader epoch and resend LeaderAndIsr;
      removing → Offline → DeletionStarted → DeletionSuccessful → NonExistent; AR := RAR in
      ZooKeeper; drop the partition from /admin/reassign_partitions (delete the znode when
      empty); UpdateMetadata to all; resume a deletion of the topic that waited.
Triggers: /admin/reassign_partitions (validated; refused partitions are dropped from the
znode with a logged reason), the AlterPartitionReassignments API (None = cancel: go back
to OAR), ISR changes of a reassigning partition, a target broker starting, failover.

Completion is linear in the number of partitions: the watches of partitions that catch up
together fire back to back, and their `PartitionReassignmentIsrChange` events, queued one
behind the other, are one event (`ControllerEvent.absorb`); ISR-change notifications name
many partitions too. Such an event completes all its complete partitions at once: one bulk
read of their states, grouped fenced multi-ops (topic znodes, state znodes), one request
batch (at most one LeaderAndIsr, UpdateMetadata, StopReplica per broker) and ONE rewrite
(or deletion) of /admin/reassign_partitions, where Kafka rewrites it once per partition.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from praha.common import (
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from praha.controller import events as ev
from praha.controller.election import ElectionKind
from praha.controller.leadership import update_leader_and_isr
from praha.controller.partition_state_machine import PartitionStateMachine
from praha.controller.replica_state_machine import ReplicaStateMachine
from praha.controller.services import ControllerServices
from praha.controller.states import PartitionAndReplica, PartitionState, ReplicaState
from praha.controller.store_api import Watch, WatchCallback
from praha.controller.topic_deletion import TopicDeletionManager
from praha.errors import ErrorCode
from praha.zk import znodes

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
    def __init__(self, services: ControllerServices, replica_sm: ReplicaStateMachine,
                 partition_sm: PartitionStateMachine, deletion: TopicDeletionManager):
        self.services = services
        self.ctx = services.context
        self.store = services.store
        self.request_batch = services.request_batch
        self.state_log = services.state_log
        self.controller_id = services.controller_id
        self.enqueue = services.enqueue
        self.replica_sm = replica_sm
        self.partition_sm = partition_sm
        self.deletion = deletion
        self._isr_watches: dict[TopicPartition, Watch] = {}
        #: partition → (its assignment object, that assignment's target replicas)
        self._targets: dict[TopicPartition, tuple[ReplicaAssignment, tuple[int, ...]]] = {}

    # ---- validation ----------------------------------------------------------------------------
    def validate(self, tp: TopicPartition, target: tuple[int, ...] | None,
                 require_live_targets: bool = False) -> tuple[int, str | None]:
        """Kafka's checks. The API path (`require_live_targets`) also refuses new replicas on
        brokers that are not alive, as Kafka's AlterPartitionReassignments does; the znode path
        accepts them and waits for the broker to start (docs/controller.md §8)."""
        ctx = self.ctx
        current = ctx.partition_assignment(tp)
        if tp.topic not in ctx.all_topics or current is None:
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
        if tuple(target) == current.replicas and not current.is_being_reassigned:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"target {list(target)} equals the current assignment"
        if require_live_targets:
            dead = [b for b in reassign_to(current, tuple(target)).adding if b not in ctx.live_broker_ids]
            if dead:
                return (
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"replica assignment has brokers that are not alive: {dead}",
                )
        return ErrorCode.NONE, None

    # ---- triggers ------------------------------------------------------------------------------
    def on_admin_znode(self) -> None:
        """`/admin/reassign_partitions` created or changed."""
        ctx = self.ctx
        try:
            wanted = self.store.get_reassignments()
        except Exception as e:  # noqa: BLE001 - a corrupt request must not wedge the controller
            log.error("ignoring /admin/reassign_partitions: %s", e)
            self.state_log.record("ReassignmentRefused", self.controller_id, ctx.epoch, reason=str(e))
            self.store.set_reassignments({}, ctx.epoch_zk_version)
            return
        refused: dict[TopicPartition, str] = {}
        items: list[tuple[TopicPartition, ReplicaAssignment]] = []
        # the znode changes after every completed partition (the controller's own rewrite): the
        # entries already moving to their target are skipped first, cheaply, then the rest sorted
        todo = [(tp, target) for tp, target in wanted.items() if not self._already_moving(tp, tuple(target))]
        for tp, target in sorted(todo):
            code, why = self.validate(tp, tuple(target))
            if code != ErrorCode.NONE:
                refused[tp] = why or f"error code {code}"
                continue
            items.append((tp, reassign_to(ctx.known_assignment(tp), tuple(target))))
        self._on_reassignments(items)
        if refused:
            reasons = {str(tp): why for tp, why in refused.items()}
            log.warning("refused reassignment of %d partitions: %s", len(refused), reasons)
            self.state_log.record("ReassignmentRefused", self.controller_id, ctx.epoch, partitions=reasons)
            self._remove_from_admin_znode(set(refused))

    def _already_moving(self, tp: TopicPartition, target: tuple[int, ...]) -> bool:
        """`tp` is being reassigned to `target` (its assignment's target replicas are computed
        once per assignment object, not at every rewrite of the admin znode)."""
        ctx = self.ctx
        current = ctx.partition_assignment(tp)
        if current is None or tp not in ctx.partitions_being_reassigned:
            return False
        known = self._targets.get(tp)
        if known is None or known[0] is not current:
            known = self._targets[tp] = (current, current.target_replicas)
        return known[1] == target

    def api_alter(
        self, targets: dict[TopicPartition, tuple[int, ...] | None]
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        out = {}
        items: list[tuple[TopicPartition, ReplicaAssignment]] = []
        for tp, target in targets.items():
            code, why = self.validate(tp, None if target is None else tuple(target), require_live_targets=True)
            if code == ErrorCode.NONE:
                current = self.ctx.known_assignment(tp)
                if target is None:
                    items.append((tp, reassign_to(current, current.origin_replicas)))
                else:
                    items.append((tp, reassign_to(current, tuple(target))))
            out[tp] = (code, why)
        self._on_reassignments(items)
        return out

    def api_list(
        self, partitions: set[TopicPartition] | None
    ) -> dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        ctx = self.ctx
        return {
            tp: (a.replicas, a.adding, a.removing)
            for tp in sorted(ctx.partitions_being_reassigned)
            if (partitions is None or tp in partitions) and (a := ctx.partition_assignment(tp)) is not None
        }

    def on_isr_change(self, partitions: Iterable[TopicPartition],
                      states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch] | None = None
                      ) -> None:
        """The state znodes of `partitions` changed (their watches, coalesced into one event, or
        ISR-change notifications): those being reassigned whose targets are all in the ISR now
        complete, together. `states`: their states as this event has just read them (not read
        again)."""
        candidates = []
        for tp in sorted(set(partitions) & self.ctx.partitions_being_reassigned):
            a = self.ctx.partition_assignment(tp)
            if a is not None:
                candidates.append((tp, a))
        # partitions whose reassignment started in an earlier event are watched from now on
        # (see `_on_reassignments`); their states are read after the watches are armed
        if self._watch_isr_many([tp for tp, _ in candidates]):
            states = None
        complete = self._complete_many(candidates, states)
        # these partitions' states were just read (and found complete) in this event: no
        # second read of them in the same event
        self._on_reassignments([(tp, a) for tp, a in candidates if tp in complete], known_complete=complete)

    def resume_for_brokers(self, broker_ids: set[int]) -> None:
        items = []
        for tp in sorted(self.ctx.partitions_being_reassigned):
            a = self.ctx.partition_assignment(tp)
            if a is not None and set(a.target_replicas) & broker_ids:
                items.append((tp, a))
        self._on_reassignments(items)

    def on_failover(self) -> None:
        """Resume reassignments found in topic znodes, then those requested in the admin znode."""
        items = []
        for tp in sorted(self.ctx.partitions_being_reassigned):
            a = self.ctx.partition_assignment(tp)
            if a is not None:
                items.append((tp, a))
        self._on_reassignments(items)
        if self.store.exists(znodes.REASSIGN_PARTITIONS_PATH):
            self.on_admin_znode()

    def on_resignation(self) -> None:
        for h in self._isr_watches.values():
            h.cancel()
        self._isr_watches.clear()
        self._targets.clear()

    # ---- the flow --------------------------------------------------------------------------------
    # Partitions are taken in batches (all those an event names): every step below runs for
    # the whole batch before the next one, in the order the single-partition flow takes them
    # (U, then A or B). Each partition sees the same reads, decisions, znode contents and
    # requests as if it went through alone; the batch only groups ZooKeeper round trips
    # (one multi-read instead of one read per partition, one write per topic znode, one
    # rewrite of the admin znode) and state-machine calls.
    def _complete_many(self, items: list[tuple[TopicPartition, ReplicaAssignment]],
                       known: Mapping[TopicPartition, LeaderIsrAndControllerEpoch] | None = None
                       ) -> set[TopicPartition]:
        """The partitions whose target replicas are all in the ISR (read now, in one bulk read,
        unless `known` has their state as just read in this event), or that are not being
        reassigned at all."""
        done = {tp for tp, a in items if not a.is_being_reassigned}
        need = [tp for tp, a in items if a.is_being_reassigned]
        if not need:
            return done
        if known is not None and all(tp in known for tp in need):
            states = known
        else:
            states, _ = self.store.get_partition_states(need)
        ctx = self.ctx
        for tp, a in items:
            if tp in done:
                continue
            st = states.get(tp)
            if st is None:
                continue
            ctx.leadership[tp] = st
            if set(a.target_replicas) <= set(st.leader_and_isr.isr):
                done.add(tp)
        return done

    def _on_reassignments(self, items: list[tuple[TopicPartition, ReplicaAssignment]],
                          known_complete: set[TopicPartition] | None = None) -> None:
        """U, then A or B, for each partition. `known_complete`: partitions of `items` whose state
        this event has just read and found complete (their assignment unchanged since)."""
        if not items:
            return
        ctx = self.ctx
        self.deletion.mark_ineligible({tp.topic for tp, _ in items}, "a partition reassignment is in progress")
        changed = []
        removed_early = []
        for tp, target in items:
            current = ctx.known_assignment(tp)
            if current != target:
                changed.append((tp, target))
                removed = [r for r in current.replicas if r not in target.replicas]
                if removed:
                    removed_early.append((tp, removed))
        if changed:
            self._write_assignments(changed)
            self._stop_removed_many(removed_early)
        ctx.partitions_being_reassigned.update(tp for tp, _ in items)
        if known_complete is not None and not changed and all(tp in known_complete for tp, _ in items):
            complete = known_complete
        else:
            complete = self._complete_many(items)
        started = [(tp, target) for tp, target in items if tp not in complete]
        if started:
            self._start(started)
        finished = [(tp, target) for tp, target in items if tp in complete]
        if finished:
            self._finish_reassignments(finished)
        unwatched = {tp for tp, _ in started if tp not in self._isr_watches}
        if unwatched:
            # their state znodes are watched from the next event on, which arms the watches and
            # then checks them for completion, as if the watches had fired (a change made in
            # between is seen): armed after this event's own writes (the epoch bumps), which
            # would otherwise fire each watch once for nothing (a notification, a re-arm, a
            # completion check), and after its LeaderAndIsr went out (arming is a round trip
            # per znode: not in the way of the new replicas starting)
            self.enqueue(ev.PartitionReassignmentIsrChange(unwatched))

    def _start(self, items: list[tuple[TopicPartition, ReplicaAssignment]]) -> None:
        """A: not complete yet: new leader epoch and LeaderAndIsr to the full set; adding replicas
        become NewReplica (they start fetching)."""
        ctx = self.ctx
        self._bump_epochs_and_send(items)
        missing = ReplicaState.NON_EXISTENT
        states = ctx.replica_states
        self.replica_sm.handle_state_changes(
            [pr for tp, target in items for r in target.adding
             if states.get(pr := PartitionAndReplica(tp, r), missing) is missing],
            ReplicaState.NEW,
        )
        record = self.state_log.record
        for tp, target in items:
            record("ReassignmentStarted", self.controller_id, ctx.epoch, partition=str(tp),
                   target=list(target.target_replicas), adding=list(target.adding), removing=list(target.removing))
        if len(items) == 1:
            tp, target = items[0]
            log.info("reassignment of %s to %s started: waiting for %s to join the ISR",
                     tp, list(target.target_replicas), list(target.adding))
        else:
            log.info("reassignment of %d partitions started (e.g. %s to %s): waiting for the new replicas to join "
                     "the ISR", len(items), items[0][0], list(items[0][1].target_replicas))

    def _finish_reassignments(self, items: list[tuple[TopicPartition, ReplicaAssignment]]) -> None:
        """B: complete: adding replicas online, AR := RAR, leader moved or its epoch bumped,
        removed replicas stopped and deleted, AR written, the partitions dropped from the admin
        znode, UpdateMetadata to all; deletions that waited for these topics resume."""
        ctx = self.ctx
        tps = [tp for tp, _ in items]
        # complete: no more completion checks for them. Their watches go before this event
        # writes their state znodes (new leader or epoch, removed replicas out of the ISR), so
        # those writes fire none; if the completion fails, they are watched again.
        self._unwatch_isr(tps)
        try:
            self._finish_reassignments_unwatched(items, tps)
        except Exception:
            try:
                self._watch_isr_many([tp for tp in tps if tp in ctx.partitions_being_reassigned])
            except Exception:  # noqa: BLE001 - the first error is the one to report
                log.exception("cannot watch the state znodes of %d partitions again", len(tps))
            raise

    def _finish_reassignments_unwatched(self, items: list[tuple[TopicPartition, ReplicaAssignment]],
                                        tps: list[TopicPartition]) -> None:
        ctx = self.ctx
        self.replica_sm.handle_state_changes(
            [PartitionAndReplica(tp, r) for tp, target in items for r in target.adding], ReplicaState.ONLINE)
        done: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in items:
            done[tp] = ReplicaAssignment(target.target_replicas)
            ctx.update_assignment(tp, done[tp])
        self._move_leaders_if_required(done)
        self._stop_removed_many([(tp, list(target.removing)) for tp, target in items])
        self._write_assignments(list(done.items()))
        self._finish_many(tps)
        self.request_batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, tps)
        record = self.state_log.record
        for tp, a in done.items():
            record("ReassignmentCompleted", self.controller_id, ctx.epoch, partition=str(tp), replicas=list(a.replicas))
        if len(done) == 1:
            tp, a = next(iter(done.items()))
            log.info("reassignment of %s to %s completed", tp, list(a.replicas))
        else:
            log.info("reassignment of %d partitions completed", len(done))
        resume = [t for t in dict.fromkeys(tp.topic for tp in tps) if not self._topic_being_reassigned(t)]
        for t in resume:
            self.deletion.resume_for_topics({t})

    def _topic_being_reassigned(self, topic: str) -> bool:
        """Some partition of `topic` is still being reassigned. Those are always partitions of
        the topic's assignment, so only its partitions are looked at (not every partition being
        reassigned, for each partition completed)."""
        ctx = self.ctx
        being = ctx.partitions_being_reassigned
        parts = ctx.assignments.get(topic)
        if parts is None:
            return any(p.topic == topic for p in being)
        return any(TopicPartition(topic, p) in being for p in parts)

    def _move_leaders_if_required(self, done: dict[TopicPartition, ReplicaAssignment]) -> None:
        ctx = self.ctx
        live = ctx.live_broker_ids
        elect: list[TopicPartition] = []
        bump: list[TopicPartition] = []
        for tp, a in done.items():
            li = ctx.leadership.get(tp)
            leader = li.leader_and_isr.leader if li else -1
            (elect if leader not in a.replicas or leader not in live else bump).append(tp)
        if elect:
            self.partition_sm.handle_state_changes(
                elect, PartitionState.ONLINE, ElectionKind.REASSIGNMENT,
                target_replicas={tp: done[tp].replicas for tp in elect},
            )
        if bump:
            self._bump_epochs_and_send([(tp, done[tp]) for tp in bump])

    def _bump_epochs_and_send(self, items: list[tuple[TopicPartition, ReplicaAssignment]]) -> None:
        """New leader epoch, same leader and ISR, so every replica of RS learns the new RS."""
        outcome = update_leader_and_isr(self.store, self.ctx, [tp for tp, _ in items],
                                        lambda _tp, cur: cur.new_leader(cur.leader))
        updated = outcome.updated
        self.request_batch.add_leader_and_isr_many(
            [(a.replicas, tp, updated[tp], a) for tp, a in items if tp in updated])

    def _stop_removed_many(self, removed: list[tuple[TopicPartition, list[int]]]) -> None:
        rsm = self.replica_sm
        replicas = [PartitionAndReplica(tp, r) for tp, rs in removed for r in rs]
        # Offline takes each replica out of the ISR (one state write each, grouped per broker
        # across partitions): in rounds — every partition's first removed replica, then its
        # second... — so each partition's ISR loses them in its own order, as when alone.
        for rank in range(max((len(rs) for _tp, rs in removed), default=0)):
            rsm.handle_state_changes([PartitionAndReplica(tp, rs[rank]) for tp, rs in removed if rank < len(rs)],
                                     ReplicaState.OFFLINE)
        rsm.handle_state_changes(replicas, ReplicaState.DELETION_STARTED)
        rsm.handle_state_changes(replicas, ReplicaState.DELETION_SUCCESSFUL)
        rsm.handle_state_changes(replicas, ReplicaState.NON_EXISTENT)

    def _write_assignments(self, items: list[tuple[TopicPartition, ReplicaAssignment]]) -> None:
        """Write each touched topic's znode once (fenced), with these partitions' new assignments
        and the others' as the context has them; then update the context."""
        ctx = self.ctx
        parts_of: dict[str, dict[int, ReplicaAssignment]] = {}
        for tp, a in items:
            parts = parts_of.get(tp.topic)
            if parts is None:
                parts = parts_of[tp.topic] = dict(ctx.assignments.get(tp.topic, {}))
            parts[tp.partition] = a
        assignments = {t: TopicAssignment(parts, ctx.topic_ids.get(t)) for t, parts in parts_of.items()}
        self.store.set_topic_assignments(assignments, ctx.epoch_zk_version)
        for tp, a in items:
            ctx.update_assignment(tp, a)

    def _watch_isr_many(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        """Watch each partition's state znode (armed together, not one round trip each); returns
        the partitions that were not watched yet."""
        new = {znodes.tp_state_path(tp): tp for tp in tps if tp not in self._isr_watches}
        if not new:
            return []
        on_watch = self.services.on_watch

        def callback_for(path: str) -> WatchCallback:
            tp = new[path]
            return on_watch(lambda: ev.PartitionReassignmentIsrChange({tp}))

        for path, handle in self.store.watch_data_many(list(new), callback_for).items():
            self._isr_watches[new[path]] = handle
        return list(new.values())

    def _unwatch_isr(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            h = self._isr_watches.pop(tp, None)
            if h is not None:
                h.cancel()

    def _finish_many(self, tps: list[TopicPartition]) -> None:
        self._unwatch_isr(tps)
        for tp in tps:
            self.ctx.partitions_being_reassigned.discard(tp)
            self._targets.pop(tp, None)
        self._remove_from_admin_znode(set(tps))

    def _remove_from_admin_znode(self, partitions: set[TopicPartition]) -> None:
        try:
            wanted = self.store.get_reassignments()
        except Exception:  # noqa: BLE001 - corrupt: on_admin_znode clears it
            return
        remaining = {tp: r for tp, r in wanted.items() if tp not in partitions}
        if len(remaining) != len(wanted):
            self.store.set_reassignments(remaining, self.ctx.epoch_zk_version)

