"""The partition state machine (docs/controller.md §5): NonExistent → New → Online ⇄ Offline → NonExistent.

`handle_state_changes(partitions, target, election)` refuses (and counts, and logs once)
every transition whose current state is not a valid previous state of the target, then
applies the valid ones:
  → New: nothing but the state (the assignment is already in the context);
  New → Online: leader = first live replica, ISR = live replicas, create the state znode,
     LeaderAndIsr (is_new) to the live replicas;
  Online/Offline → Online: elect with `election` (offline, reassignment, preferred,
     controlled shutdown), write the state znode conditionally, LeaderAndIsr to the
     election's recipients; no leader found → the partition stays where it was;
  → Offline, Offline → NonExistent: the state only.
Every LeaderAndIsr also puts the partition in the UpdateMetadata to all brokers (the
request batch does that). Requests go into the caller's batch; the caller sends it once
per event.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from praha.common import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from praha.controller.context import ControllerContext
from praha.controller.election import Election, ElectionKind, elect
from praha.controller.leadership import update_leader_and_isr
from praha.controller.request_batch import ControllerRequestBatch
from praha.controller.states import (
    PARTITION_VALID_PREVIOUS,
    PartitionState,
    split_valid_transitions,
)
from praha.controller.store_api import PartitionStateStore
from praha.statelog import StateChangeLog
from praha.zk.ops import WriteOutcome

log = logging.getLogger(__name__)


class PartitionStateMachine:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        store: PartitionStateStore,
        batch: ControllerRequestBatch,
        state_log: StateChangeLog,
        unclean_default: bool = False,
    ):
        self.controller_id = controller_id
        self.context = context
        self.store = store
        self.batch = batch
        self.state_log = state_log
        self.unclean_default = unclean_default
        self.invalid_transitions = 0

    # ---- start-up ------------------------------------------------------------------
    def startup(self) -> dict[TopicPartition, object]:
        self.initialize_partition_state()
        return self.trigger_online_partition_state_change()

    def initialize_partition_state(self) -> None:
        ctx = self.context
        live = ctx.live_broker_ids
        leadership = ctx.leadership
        states = ctx.partition_states
        stale = ctx.stale_leadership
        new, online, offline = PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE
        for tp in ctx.all_partitions():
            li = leadership.get(tp)
            if li is None:
                states[tp] = new
            elif li.leader_and_isr.leader in live and tp not in stale:
                states[tp] = online
            else:
                states[tp] = offline
        stale.clear()
        ctx.update_offline_partition_count()

    def trigger_online_partition_state_change(self, topic: str | None = None) -> dict[TopicPartition, object]:
        """Elect leaders for every New or Offline partition not queued for deletion."""
        ctx = self.context
        candidates = [
            tp
            for tp in ctx.partitions_in_states({PartitionState.NEW, PartitionState.OFFLINE})
            if not ctx.is_topic_queued_for_deletion(tp.topic) and (topic is None or tp.topic == topic)
        ]
        if not candidates:
            return {}
        return self.handle_state_changes(candidates, PartitionState.ONLINE, ElectionKind.OFFLINE)

    # ---- transitions -----------------------------------------------------------------
    def unclean_enabled(self, topic: str) -> bool:
        v = self.context.topic_configs.get(topic, {}).get("unclean.leader.election.enable")
        if v is None:
            return self.unclean_default
        return v.strip().lower() == "true"

    def _valid(self, partitions: Iterable[TopicPartition], target: PartitionState) -> list[TopicPartition]:
        ctx = self.context
        valid, refused = split_valid_transitions(
            partitions, target, ctx.partition_states, PartitionState.NON_EXISTENT, PARTITION_VALID_PREVIOUS,
            "partition", self.state_log, self.controller_id, ctx.epoch,
        )
        self.invalid_transitions += refused
        return valid

    def handle_state_changes(
        self,
        partitions: Iterable[TopicPartition],
        target: PartitionState,
        election: ElectionKind | None = None,
        target_replicas: dict[TopicPartition, tuple[int, ...]] | None = None,
    ) -> dict[TopicPartition, object]:
        """Returns, for partitions moved to Online, their Election or a failure reason."""
        ctx = self.context
        valid = self._valid(partitions, target)
        results: dict[TopicPartition, object] = {}
        if not valid:
            return results
        if target is PartitionState.NEW:
            for tp in valid:
                ctx.partition_states[tp] = PartitionState.NEW
        elif target is PartitionState.ONLINE:
            new = [tp for tp in valid if ctx.partition_states.get(tp) is PartitionState.NEW]
            existing = [tp for tp in valid if ctx.partition_states.get(tp) is not PartitionState.NEW]
            results.update(self._initialize_leader_and_isr(new))
            if existing:
                results.update(self._elect_leaders(existing, election or ElectionKind.OFFLINE, target_replicas or {}))
        elif target is PartitionState.OFFLINE:
            for tp in valid:
                ctx.partition_states[tp] = PartitionState.OFFLINE
        elif target is PartitionState.NON_EXISTENT:
            for tp in valid:
                ctx.partition_states.pop(tp, None)
        if target is not PartitionState.ONLINE:
            self.state_log.record(
                "PartitionStateChange", self.controller_id, ctx.epoch, target=target.value, count=len(valid)
            )
        ctx.update_offline_partition_count()
        return results

    def _initialize_leader_and_isr(self, partitions: list[TopicPartition]) -> dict[TopicPartition, object]:
        ctx = self.context
        live = ctx.live_broker_ids
        results: dict[TopicPartition, object] = {}
        to_create: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        # a topic re-created under an old name starts above the old one's leader epochs
        retired = self.store.get_retired_leader_epochs({tp.topic for tp in partitions}) if partitions else {}
        for tp in partitions:
            live_replicas = tuple(r for r in ctx.partition_replicas(tp) if r in live)
            if not live_replicas:
                results[tp] = "no live replica to lead a new partition"
                continue
            first_epoch = retired[tp.topic] + 1 if tp.topic in retired else 0
            to_create[tp] = LeaderIsrAndControllerEpoch(
                LeaderAndIsr(live_replicas[0], live_replicas, leader_epoch=first_epoch), ctx.epoch)
        if to_create:
            written = self.store.create_partition_states(to_create, ctx.epoch_zk_version)
            requests = []
            for tp, res in written.items():
                if res.outcome is not WriteOutcome.OK:
                    results[tp] = f"creating the state znode failed: {res.outcome.name}"
                    continue
                state = to_create[tp]
                ctx.leadership[tp] = state
                ctx.partition_states[tp] = PartitionState.ONLINE
                recipients = state.leader_and_isr.isr
                requests.append((recipients, tp, state, ctx.known_assignment(tp)))
                results[tp] = Election(tp, state.leader_and_isr, recipients)
            self.batch.add_leader_and_isr_many(requests, is_new=True)
        failed = {tp: r for tp, r in results.items() if isinstance(r, str)}
        self.state_log.record(
            "PartitionStateChange", self.controller_id, ctx.epoch, target="OnlinePartition", election="new",
            count=len(partitions), elected=len(results) - len(failed),
            leaders={str(tp): [r.leader_and_isr.leader, r.leader_and_isr.leader_epoch]
                     for tp, r in results.items() if isinstance(r, Election)},
            failed={str(tp): r for tp, r in failed.items()},
        )
        if failed:
            log.warning("%d new partitions could not be brought online (e.g. %s)", len(failed), next(iter(failed)))
        return results

    def _elect_leaders(
        self, partitions: list[TopicPartition], kind: ElectionKind,
        target_replicas: Mapping[TopicPartition, Sequence[int]],
    ) -> dict[TopicPartition, object]:
        ctx = self.context
        live = ctx.live_broker_ids
        live_or_shutting = ctx.live_or_shutting_down_broker_ids
        elections: dict[TopicPartition, Election] = {}

        def decide(tp: TopicPartition, current: LeaderAndIsr) -> LeaderAndIsr | None | str:
            assignment = ctx.partition_replicas(tp)
            # a replica in a failed log dir of a live broker is no candidate (Kafka's isReplicaOnline)
            failed_dirs = ctx.offline_dir_brokers(tp) if ctx.replicas_on_offline_dirs else None
            if kind is ElectionKind.CONTROLLED_SHUTDOWN:
                e = elect(kind, tp, current, assignment,
                          live_or_shutting - failed_dirs if failed_dirs else live_or_shutting,
                          shutting_down=ctx.shutting_down_broker_ids)
            elif kind is ElectionKind.PREFERRED and assignment and current.leader == assignment[0]:
                return None  # already led by its preferred replica
            else:
                e = elect(
                    kind, tp, current, assignment, live - failed_dirs if failed_dirs else live,
                    unclean_enabled=self.unclean_enabled(tp.topic),
                    target_replicas=target_replicas.get(tp, ()),
                )
            if e is None:
                return f"no eligible leader for {kind.value} election (isr {list(current.isr)})"
            elections[tp] = e
            return e.leader_and_isr

        outcome = update_leader_and_isr(self.store, ctx, partitions, decide)
        results: dict[TopicPartition, object] = dict(outcome.failed)
        unclean = []
        states = ctx.partition_states
        online = PartitionState.ONLINE
        assignment_of = ctx.known_assignment
        requests = []
        for tp, state in outcome.updated.items():
            e = elections[tp]
            states[tp] = online
            requests.append((e.recipients, tp, state, assignment_of(tp)))
            results[tp] = Election(tp, state.leader_and_isr, e.recipients, e.unclean)
            if e.unclean:
                unclean.append(tp)
        self.batch.add_leader_and_isr_many(requests)
        for tp in outcome.skipped:
            states[tp] = online
        if unclean:
            ctx.unclean_elections += len(unclean)
            log.warning(
                "UNCLEAN leader election for %d partitions (possible data loss): %s",
                len(unclean), ", ".join(map(str, unclean[:10])),
            )
        if outcome.failed:
            log.warning(
                "%s election failed for %d partitions (e.g. %s: %s)",
                kind.value, len(outcome.failed), *next(iter(outcome.failed.items())),
            )
        self.state_log.record(
            "PartitionStateChange", self.controller_id, ctx.epoch, target="OnlinePartition", election=kind.value,
            count=len(partitions), elected=len(outcome.updated), unclean=[str(tp) for tp in unclean],
            leaders={str(tp): [s.leader_and_isr.leader, s.leader_and_isr.leader_epoch, list(s.leader_and_isr.isr)]
                     for tp, s in outcome.updated.items()},
            failed={str(tp): r for tp, r in outcome.failed.items()},
        )
        return results
