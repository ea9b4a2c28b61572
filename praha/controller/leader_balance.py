"""Preferred-replica elections: on request and by the auto leader rebalance.

On request (`/admin/preferred_replica_election` or the ElectLeaders API): for each named
partition — unknown or being deleted → an error; already led by its preferred replica →
ELECTION_NOT_NEEDED; otherwise elect with the preferred algorithm (the preferred replica
must be alive and in the ISR, else PREFERRED_LEADER_NOT_AVAILABLE and the leader stays).
The admin znode is deleted when done, whatever the outcome.

Auto rebalance, every `leader.imbalance.check.interval.seconds`: for each broker, the
imbalance ratio = partitions whose preferred replica it is but which another broker leads
÷ partitions whose preferred replica it is; above `leader.imbalance.per.broker.percentage`
(strictly), run preferred elections for those partitions whose preferred replica can lead,
skipping each partition being reassigned or deleted (a stuck reassignment elsewhere does
not block the rest).
"""
from __future__ import annotations

import logging
import threading
from collections import defaultdict

from praha.common import TopicPartition
from praha.controller import events as ev
from praha.controller.election import Election, ElectionKind
from praha.controller.partition_state_machine import PartitionStateMachine
from praha.controller.services import ControllerServices
from praha.controller.states import PartitionState
from praha.errors import ErrorCode

log = logging.getLogger(__name__)


class LeaderBalancer:
    def __init__(self, services: ControllerServices, partition_sm: PartitionStateMachine):
        self.ctx = services.context
        self.store = services.store
        self.state_log = services.state_log
        self.controller_id = services.controller_id
        self.config = services.config
        self.enqueue = services.enqueue
        self.partition_sm = partition_sm
        self._timer: threading.Timer | None = None
        self._stopped = threading.Event()

    # ---- requested elections --------------------------------------------------------------
    def elect_preferred(
        self, partitions: set[TopicPartition] | None, trigger: str
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        ctx = self.ctx
        wanted = set(ctx.all_partitions()) if partitions is None else set(partitions)
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        candidates = []
        for tp in sorted(wanted):
            refusal = ctx.election_refusal(tp)
            li = ctx.leadership.get(tp)
            if refusal is not None:
                results[tp] = refusal
            elif li is not None and li.leader_and_isr.leader == ctx.known_assignment(tp).replicas[0]:
                results[tp] = (ErrorCode.ELECTION_NOT_NEEDED, "already led by its preferred replica")
            elif ctx.partition_states.get(tp) not in (PartitionState.ONLINE, PartitionState.OFFLINE):
                results[tp] = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "partition is not online")
            else:
                candidates.append(tp)
        if candidates:
            outcome = self.partition_sm.handle_state_changes(
                candidates, PartitionState.ONLINE, ElectionKind.PREFERRED
            )
            for tp in candidates:
                r = outcome.get(tp)
                if isinstance(r, Election):
                    results[tp] = (ErrorCode.NONE, None)
                else:
                    results[tp] = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                   r if isinstance(r, str) else "preferred replica is not alive or not in the ISR")
        moved = sum(1 for code, _ in results.values() if code == ErrorCode.NONE)
        log.info("preferred election (%s): %d partitions asked, %d moved", trigger, len(wanted), moved)
        self.state_log.record(
            "PreferredReplicaElection", self.controller_id, ctx.epoch, trigger=trigger, asked=len(wanted), moved=moved,
            failed={str(tp): why for tp, (code, why) in results.items()
                    if code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)},
        )
        return results

    def on_admin_znode(self) -> None:
        """`/admin/preferred_replica_election` appeared: elect, then delete it."""
        store = self.store
        try:
            partitions = store.get_preferred_election()
        except Exception as e:  # noqa: BLE001 - garbage: drop the request, keep going
            log.error("ignoring corrupt /admin/preferred_replica_election: %s", e)
            partitions = set()
        if partitions:
            self.elect_preferred(partitions, "admin znode")
        if store.exists("/admin/preferred_replica_election"):
            store.delete_preferred_election(self.ctx.epoch_zk_version)

    # ---- auto rebalance -----------------------------------------------------------------------
    def imbalance(self) -> dict[int, tuple[float, list[TopicPartition]]]:
        """Per preferred broker: (imbalance ratio, partitions it should lead but does not)."""
        ctx = self.ctx
        by_preferred: dict[int, list[TopicPartition]] = defaultdict(list)
        for t, parts in ctx.assignments.items():
            if ctx.is_topic_queued_for_deletion(t):
                continue
            for p, a in parts.items():
                if a.replicas:
                    by_preferred[a.replicas[0]].append(TopicPartition(t, p))
        out = {}
        for broker, tps in by_preferred.items():
            not_led = [
                tp for tp in tps if (li := ctx.leadership.get(tp)) is not None and li.leader_and_isr.leader != broker
            ]
            out[broker] = (len(not_led) / len(tps), not_led)
        return out

    def check_and_rebalance(self) -> None:
        ctx = self.ctx
        threshold = self.config.leader_imbalance_per_broker_percentage / 100.0
        candidates: list[TopicPartition] = []
        for broker, (ratio, not_led) in sorted(self.imbalance().items()):
            if ratio <= threshold or broker not in ctx.live_broker_ids:
                continue
            for tp in not_led:
                li = ctx.leadership[tp]
                if tp in ctx.partitions_being_reassigned or ctx.is_topic_queued_for_deletion(tp.topic):
                    continue
                if broker in li.leader_and_isr.isr:
                    candidates.append(tp)
        if candidates:
            self.elect_preferred(set(candidates), "auto rebalance")

    def schedule(self) -> None:
        if not self.config.auto_leader_rebalance_enable:
            return
        self._stopped.clear()
        self._arm()

    def _arm(self) -> None:
        interval = self.config.leader_imbalance_check_interval_seconds

        def fire() -> None:
            if not self._stopped.is_set():
                self.enqueue(ev.AutoPreferredReplicaLeaderElection())
                self._arm()

        self._timer = threading.Timer(interval, fire)
        self._timer.daemon = True
        self._timer.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
