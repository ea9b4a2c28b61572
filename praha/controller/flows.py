"""The controller's flows (docs/controller.md §8) on top of the two state machines.

Each event handler runs inside `self.batch()`: a fresh request batch at the start, one
send at the end, so an event sends at most one LeaderAndIsr, one UpdateMetadata and one
StopReplica per broker, whatever the state machines decided along the way.

  failover            stale ISR-change notifications deleted; the context loaded
                      (context_loader.py) and every topic watched; deletion initialised;
                      then in one batch: UpdateMetadata to every live broker, replica then
                      partition state machine started, reassignments and deletions resumed,
                      pending preferred elections run, the auto rebalance scheduled
  topic creation      new children of /brokers/topics → partitions New, replicas New,
                      partitions Online (first live replica leads), replicas Online
  broker change       re-read /brokers/ids; new, dead and bounced brokers (a newer epoch)
                      in one batch: a bounced broker is a failure then a start-up
  broker start-up     brokers-only UpdateMetadata to the others, full to the new ones;
                      their replicas → Online; elections for New/Offline partitions
  broker failure      partitions they led → Offline, then offline elections; their
                      replicas → Offline (ISR shrinks); no leader lost → brokers-only UpdateMetadata
  broker endpoints    a broker's registration changed its endpoints → UpdateMetadata to all
  ISR change          re-read the notified partitions' state, UpdateMetadata for them to all,
                      delete the notification znodes
  log-dir failure     a broker wrote /log_dir_event_notification/log_dir_event_<seq>: its
                      replicas → Online again, i.e. a LeaderAndIsr asking about each; the
                      notifications deleted (also at failover). Its answer (below) says which
                      replicas sit in the failed directory
  LeaderAndIsr answer KAFKA_STORAGE_ERROR for a replica: remember it as on an offline dir (until
                      the broker restarts or dies); for the newly offline ones: partitions they
                      led → Offline, offline elections (from the ISR, never such a replica),
                      the replicas → Offline (out of the ISR); no leader lost → UpdateMetadata
  controlled shutdown refused unless acting, the broker alive and its epoch current; mark it
                      shutting down; move leadership away (controlled-shutdown election);
                      stop and take out of the ISR the replicas it follows
  partition expansion new partition ids in /brokers/topics/<t> → created as above (ignored
                      while the topic is queued for deletion)
  deletion, reassignment, preferred elections: topic_deletion.py, reassignment.py,
                      leader_balance.py
"""
from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from praha.common import LeaderIsrAndControllerEpoch, TopicPartition
from praha.controller import events as ev
from praha.controller.context_loader import Lap, load_context
from praha.controller.election import ElectionKind
from praha.controller.leader_balance import LeaderBalancer
from praha.controller.partition_state_machine import PartitionStateMachine
from praha.controller.reassignment import ReassignmentManager
from praha.controller.replica_state_machine import ReplicaStateMachine
from praha.controller.request_batch import ControllerRequestBatch
from praha.controller.services import ControllerServices
from praha.controller.states import PartitionAndReplica, PartitionState, ReplicaState
from praha.controller.topic_deletion import TopicDeletionManager
from praha.controller.topic_ids import assign_missing_ids
from praha.controller.topic_watches import TopicWatches
from praha.controller.unclean_election import elect_unclean
from praha.errors import ControllerMovedError, ErrorCode

log = logging.getLogger(__name__)

#: handles one controller event (of the type it is registered for)
Handler = Callable[[Any], None]


class ControllerFlows:
    def __init__(self, services: ControllerServices):
        self.services = services
        self.context = services.context
        self.store = services.store
        self.request_batch = services.request_batch
        self.state_log = services.state_log
        self.seat = services.seat
        self.controller_id = services.controller_id
        self.partition_sm = PartitionStateMachine(
            services.controller_id, services.context, services.store, services.request_batch,
            services.state_log, unclean_default=services.config.unclean_leader_election_enable,
        )
        self.replica_sm = ReplicaStateMachine(
            services.controller_id, services.context, services.store, services.request_batch, services.state_log
        )
        self.topic_watches = TopicWatches(services)
        self.deletion = TopicDeletionManager(services, self.replica_sm, self.partition_sm, self.topic_watches)
        self.reassignment = ReassignmentManager(services, self.replica_sm, self.partition_sm, self.deletion)
        self.balancer = LeaderBalancer(services, self.partition_sm)

    def handlers(self) -> dict[type[ev.ControllerEvent], Handler]:
        return {
            ev.BrokerChange: self.process_broker_change,
            ev.BrokerModifications: self.process_broker_modifications,
            ev.ControlledShutdown: self.process_controlled_shutdown,
            ev.TopicChange: self._guard(self.process_topic_change),
            ev.IsrChangeNotification: self._guard(self.process_isr_change),
            ev.LogDirEventNotification: self._guard(self.process_log_dir_event),
            ev.LeaderAndIsrResponseReceived: self._guard(self.process_leader_and_isr_response),
            ev.PartitionModifications: self._guard(self.process_partition_modifications),
            ev.TopicDeletion: self._guard(lambda e: self.deletion.on_markers_changed()),
            ev.TopicDeletionStopReplicaResponseReceived: self._guard(
                lambda e: self.deletion.on_stop_replica_response(e.broker_id, e.error_code, e.partition_errors)
            ),
            ev.PartitionReassignment: self._guard(lambda e: self.reassignment.on_admin_znode()),
            ev.PartitionReassignmentIsrChange: self._guard(lambda e: self.reassignment.on_isr_change(e.partitions)),
            ev.PreferredReplicaLeaderElection: self._guard(lambda e: self.balancer.on_admin_znode()),
            ev.AutoPreferredReplicaLeaderElection: self._guard(lambda e: self.balancer.check_and_rebalance()),
        }

    def _guard(self, fn: Handler) -> Handler:
        """Only the active controller processes flow events."""

        def run(event: ev.ControllerEvent) -> None:
            if self.seat.is_acting:
                with self.batch():
                    fn(event)

        return run

    @contextlib.contextmanager
    def batch(self) -> Iterator[ControllerRequestBatch]:
        """One event's requests, sent together at the end. The cyclic GC is paused meanwhile
        (as during a failover): a 10k-partition event allocates a few hundred thousand small
        objects, and the collections they trigger re-scan the whole controller context
        (a third of such an event's CPU time). Reference counting still frees everything;
        cycles wait until the requests are handed over. Left alone if someone else paused it."""
        rb = self.request_batch
        rb.new_batch()
        gc_was_enabled = gc.isenabled()
        gc.disable()
        ok = False
        try:
            yield rb
            ok = not self.seat.suspended
        finally:
            try:
                if ok:
                    rb.send_requests_to_brokers(self.context.epoch)
                else:
                    rb.clear()
            finally:
                if gc_was_enabled:
                    gc.enable()
        if not ok:
            raise ControllerMovedError("ZooKeeper session suspended: requests of this event dropped")

    def send_update_metadata(self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] | None) -> None:
        """UpdateMetadata on its own (`partitions` None: all of them)."""
        with self.batch() as batch:
            batch.add_update_metadata(broker_ids, partitions)

    # ---- failover and resignation ------------------------------------------------------------
    def delete_stale_isr_notifications(self) -> None:
        """Notifications written before this failover: the context load reads every state anyway."""
        names, _ = self.store.get_isr_change_notifications()
        if names:
            self.store.delete_isr_change_notifications(names, self.context.epoch_zk_version)

    def delete_stale_log_dir_notifications(self) -> None:
        """Notifications written before this failover: the failover's LeaderAndIsr to every
        replica asks the brokers again, and their KAFKA_STORAGE_ERROR answers say the same."""
        names, _ = self.store.get_log_dir_event_notifications()
        if names:
            self.store.delete_log_dir_event_notifications(names, self.context.epoch_zk_version)

    def load_context(self, lap: Lap) -> None:
        """Read what the controller knows from ZooKeeper; watch every topic's znode. The topic
        watches are queued as soon as the topics are known and waited for after the partition
        states are read: their round trips overlap the reads (`topic_watches` is the wait left)."""
        queue_watches = lambda topics: self.topic_watches.watch(topics, wait=False)  # noqa: E731
        load_context(self.store, self.context, lap, on_topics=queue_watches)
        self.topic_watches.wait_armed()
        lap("topic_watches")

    def on_failover(self, lap: Lap) -> None:
        """The new controller's first batch, after the context was loaded and the channels
        started: UpdateMetadata to all, the state machines, resumed reassignments and deletions."""
        self._init_deletion()
        ctx = self.context
        with self.batch() as batch:
            batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, None)
            self.replica_sm.startup()
            self.partition_sm.startup()
            self.reassignment.on_failover()
            self.deletion.resume()
            if self.store.exists("/admin/preferred_replica_election"):
                self.balancer.on_admin_znode()
            self.balancer.schedule()
            lap("state_machines")
        lap("send")

    def _init_deletion(self) -> None:
        """Initialise topic deletion: queued topics, and those that must wait (replicas on dead
        brokers, partitions being reassigned)."""
        ctx = self.context
        queued = set(self.store.get_topics_marked_for_deletion()) & ctx.all_topics
        live = ctx.live_broker_ids
        dead_hosted = {
            t for t, parts in ctx.assignments.items() if any(r not in live for a in parts.values() for r in a.replicas)
        }
        reassigning = {tp.topic for tp in ctx.partitions_being_reassigned}
        self.deletion.init(queued, dead_hosted | reassigning)

    def on_resignation(self) -> None:
        self.topic_watches.unwatch_all()
        self.balancer.stop()
        self.reassignment.on_resignation()

    # ---- admin API entry points (run on the event thread via Controller.run_on_controller) ------
    def api_elect_preferred(
        self, partitions: set[TopicPartition] | None
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        with self.batch():
            return self.balancer.elect_preferred(partitions, "ElectLeaders API")

    def api_elect_unclean(
        self, partitions: set[TopicPartition] | None
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        with self.batch():
            return elect_unclean(self.services, self.partition_sm, partitions)

    def api_alter_reassignments(
        self, targets: dict[TopicPartition, tuple[int, ...] | None]
    ) -> dict[TopicPartition, tuple[int, str | None]]:
        with self.batch():
            return self.reassignment.api_alter(targets)

    def api_list_reassignments(
        self, partitions: set[TopicPartition] | None
    ) -> dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        return self.reassignment.api_list(partitions)

    # ---- topics ----------------------------------------------------------------------------
    def process_topic_change(self, _event: ev.TopicChange) -> None:
        ctx = self.context
        topics = set(self.store.get_all_topics())
        new_topics = topics - ctx.all_topics
        deleted = ctx.all_topics - topics
        for t in deleted:
            self.topic_watches.unwatch(t)
            ctx.remove_topic(t)
        if not new_topics:
            return
        assignments, bad = self.store.get_topic_assignments(sorted(new_topics))
        for t, err in bad.items():
            log.error("new topic %s has a corrupt assignment znode, ignored: %s", t, err)
        configs, bad_configs = self.store.get_topic_configs(sorted(assignments))
        for t, err in bad_configs.items():
            log.error("topic %s has a corrupt config znode, broker defaults apply: %s", t, err)
        new_partitions: list[TopicPartition] = []
        for t, ta in assignments.items():
            ctx.all_topics.add(t)
            ctx.assignments[t] = dict(ta.partitions)
            if ta.topic_id:
                ctx.topic_ids[t] = ta.topic_id
            ctx.topic_configs[t] = configs.get(t, {})
            new_partitions.extend(TopicPartition(t, p) for p in sorted(ta.partitions))
        assign_missing_ids(self.store, ctx, assignments)
        self.topic_watches.watch(sorted(assignments))
        log.info("new topics %s with %d partitions", sorted(assignments), len(new_partitions))
        self.on_new_partition_creation(new_partitions)

    def on_new_partition_creation(self, partitions: list[TopicPartition]) -> None:
        ctx = self.context
        replicas = [PartitionAndReplica(tp, r) for tp in partitions for r in ctx.partition_replicas(tp)]
        self.partition_sm.handle_state_changes(partitions, PartitionState.NEW)
        self.replica_sm.handle_state_changes(replicas, ReplicaState.NEW)
        self.partition_sm.handle_state_changes(partitions, PartitionState.ONLINE, ElectionKind.OFFLINE)
        self.replica_sm.handle_state_changes(replicas, ReplicaState.ONLINE)

    # ---- brokers ---------------------------------------------------------------------------
    def process_broker_change(self, _event: ev.BrokerChange) -> None:
        """`/brokers/ids` changed: compare with the live brokers the context knows."""
        if not self.seat.is_active:
            return
        ctx = self.context
        current, corrupt = self.store.get_live_brokers()
        for bid, err in corrupt.items():
            log.error("ignoring broker %d: %s", bid, err)
        cached = {b: info.epoch for b, info in ctx.live_brokers.items()}
        new_ids = set(current) - set(cached)
        dead_ids = set(cached) - set(current)
        bounced_ids = {b for b in set(current) & set(cached) if current[b].epoch > cached[b]}
        if not (new_ids or dead_ids or bounced_ids):
            return
        log.info(
            "broker change: new %s, dead %s, bounced %s; live now %s",
            sorted(new_ids), sorted(dead_ids), sorted(bounced_ids), sorted(current),
        )
        self.state_log.record(
            "BrokerChange", self.controller_id, ctx.epoch,
            new=sorted(new_ids), dead=sorted(dead_ids), bounced=sorted(bounced_ids),
            epochs={b: current[b].epoch for b in sorted(new_ids | bounced_ids)},
        )
        channels = self.services.channels
        # One batch for the whole event. A bounced broker is handled as a failure then a
        # start-up; requests addressed to it while it is out of the live set are dropped
        # when added, so it never receives the failure half (e.g. a StopReplica).
        with self.batch():
            for b in new_ids:
                channels.add_broker(current[b])
            for b in bounced_ids | dead_ids:
                channels.remove_broker(b)
            if new_ids:
                ctx.add_live_brokers(current[b] for b in new_ids)
                self.on_broker_startup(new_ids)
            if bounced_ids:
                ctx.remove_live_brokers(bounced_ids)
                self.on_broker_failure(bounced_ids)
                ctx.add_live_brokers(current[b] for b in bounced_ids)
                for b in bounced_ids:
                    channels.add_broker(current[b])
                self.on_broker_startup(bounced_ids)
            if dead_ids:
                ctx.remove_live_brokers(dead_ids)
                self.on_broker_failure(dead_ids)

    def process_broker_modifications(self, event: ev.BrokerModifications) -> None:
        """A broker's registration changed: new endpoints go to every broker."""
        if not self.seat.is_active:
            return
        current, _ = self.store.get_live_brokers()
        new = current.get(event.broker_id)
        old = self.context.live_brokers.get(event.broker_id)
        if new and old and new.endpoints != old.endpoints:
            self.context.live_brokers[event.broker_id] = new
            self.send_update_metadata(self.context.live_or_shutting_down_broker_ids, [])

    def on_broker_startup(self, new_ids: set[int]) -> None:
        """Runs inside the broker-change event's batch."""
        rb = self.request_batch
        ctx = self.context
        for b in new_ids:  # a restarted broker has opened its directories afresh
            ctx.replicas_on_offline_dirs.pop(b, None)
        existing = ctx.live_or_shutting_down_broker_ids - new_ids
        rb.add_update_metadata(existing, [])
        rb.add_update_metadata(new_ids, None)
        replicas = [
            pr for pr in ctx.replicas_on_brokers(new_ids)
            if not ctx.is_topic_queued_for_deletion(pr.partition.topic)
        ]
        self.replica_sm.handle_state_changes(replicas, ReplicaState.ONLINE)
        self.partition_sm.trigger_online_partition_state_change()
        self.after_broker_startup(new_ids)

    def after_broker_startup(self, new_ids: set[int]) -> None:
        """Resume reassignments and deletions that waited for these brokers."""
        ctx = self.context
        self.reassignment.resume_for_brokers(new_ids)
        waiting = {pr.partition.topic for pr in ctx.replicas_on_brokers(new_ids)} & ctx.topics_to_be_deleted
        self.deletion.resume_for_topics(waiting)

    def on_broker_failure(self, dead_ids: set[int]) -> None:
        """Runs inside the broker-change event's batch."""
        rb = self.request_batch
        ctx = self.context
        for b in dead_ids:
            ctx.replicas_on_offline_dirs.pop(b, None)
        lost_leader = [
            tp for tp, li in ctx.leadership.items()
            if li.leader_and_isr.leader in dead_ids and not ctx.is_topic_queued_for_deletion(tp.topic)
        ]
        self.partition_sm.handle_state_changes(lost_leader, PartitionState.OFFLINE)
        self.partition_sm.trigger_online_partition_state_change()
        replicas = ctx.replicas_on_brokers(dead_ids)
        self.replica_sm.handle_state_changes(
            [pr for pr in replicas if not ctx.is_topic_queued_for_deletion(pr.partition.topic)],
            ReplicaState.OFFLINE,
        )
        self.after_broker_failure(dead_ids,
                                  [pr for pr in replicas if ctx.is_topic_queued_for_deletion(pr.partition.topic)])
        if not lost_leader:
            rb.add_update_metadata(ctx.live_or_shutting_down_broker_ids, [])
        log.info(
            "brokers %s failed: %d partitions lost their leader, %d offline after elections",
            sorted(dead_ids), len(lost_leader), ctx.offline_partition_count,
        )

    def after_broker_failure(self, dead_ids: set[int], replicas_of_deleted_topics: list[PartitionAndReplica]) -> None:
        """Replicas of topics being deleted become DeletionIneligible; their topics wait."""
        self.deletion.fail_replica_deletion(replicas_of_deleted_topics)

    # ---- ISR changes -----------------------------------------------------------------------
    def process_isr_change(self, _event: ev.IsrChangeNotification) -> None:
        ctx = self.context
        names, partitions = self.store.get_isr_change_notifications()
        known = [tp for tp in partitions if tp.topic in ctx.all_topics]
        if known:
            states, _bad = self.store.get_partition_states(known)
            for tp, st in states.items():
                ctx.leadership[tp] = st
            self.request_batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, list(states))
            self.after_isr_change(set(states), states)
        if names:
            self.store.delete_isr_change_notifications(names, ctx.epoch_zk_version)
        self.state_log.record(
            "IsrChange", self.controller_id, ctx.epoch, notifications=len(names), partitions=len(known),
            isr={str(tp): list(ctx.leadership[tp].leader_and_isr.isr) for tp in known if tp in ctx.leadership},
        )

    def after_isr_change(self, partitions: set[TopicPartition],
                         states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch] | None = None) -> None:
        """Reassignments waiting for their targets to join the ISR may complete now (`states`:
        those just read by this event, not read again)."""
        self.reassignment.on_isr_change(partitions, states)

    # ---- partition expansion -------------------------------------------------------------------
    def process_partition_modifications(self, event: ev.PartitionModifications) -> None:
        ctx = self.context
        topic = event.topic
        if topic not in ctx.all_topics:
            return
        assignments, bad = self.store.get_topic_assignments([topic])
        if topic in bad:
            log.error("topic %s has a corrupt assignment znode: %s", topic, bad[topic])
            return
        ta = assignments.get(topic)
        if ta is None:
            return
        new = {p: a for p, a in ta.partitions.items() if p not in ctx.assignments.get(topic, {})}
        if not new:
            return
        if ctx.is_topic_queued_for_deletion(topic):
            log.warning("ignoring %d new partitions of %s: the topic is being deleted", len(new), topic)
            return
        for p, a in new.items():
            ctx.update_assignment(TopicPartition(topic, p), a)
        log.info("topic %s grows by %d partitions", topic, len(new))
        self.state_log.record("PartitionsAdded", self.controller_id, ctx.epoch, topic=topic, partitions=sorted(new))
        self.on_new_partition_creation([TopicPartition(topic, p) for p in sorted(new)])

    # ---- log-dir failures ---------------------------------------------------------------------
    def process_log_dir_event(self, _event: ev.LogDirEventNotification) -> None:
        """Ask each notifying broker about all its replicas (Kafka's onBrokerLogDirFailure):
        their LeaderAndIsr answers name the replicas in the failed directory."""
        ctx = self.context
        names, broker_ids = self.store.get_log_dir_event_notifications()
        try:
            live = broker_ids & set(ctx.live_brokers)
            if live:
                replicas = [pr for pr in ctx.replicas_on_brokers(live)
                            if not ctx.is_topic_queued_for_deletion(pr.partition.topic)]
                log.info("log directory failure on brokers %s: asking about their %d replicas",
                         sorted(live), len(replicas))
                self.replica_sm.handle_state_changes(replicas, ReplicaState.ONLINE)
            self.state_log.record("LogDirFailure", self.controller_id, ctx.epoch,
                                  notifications=len(names), brokers=sorted(broker_ids))
        finally:
            if names:
                self.store.delete_log_dir_event_notifications(names, ctx.epoch_zk_version)

    def process_leader_and_isr_response(self, event: ev.LeaderAndIsrResponseReceived) -> None:
        """KAFKA_STORAGE_ERROR marks a replica as on an offline log dir; NONE clears it."""
        response = event.response
        errors = {tp: code for tp, code in response.partition_errors.items() if code}
        log.warning(
            "broker %d answered LeaderAndIsr with error %d and %d partition errors",
            event.broker_id, response.error_code, len(errors),
        )
        ctx = self.context
        if response.error_code or event.broker_id not in ctx.live_brokers:
            return
        offline, online = split_storage_errors(response.partition_errors)
        before = ctx.replicas_on_offline_dirs.get(event.broker_id, set())
        now = (before - online) | {tp for tp in offline if ctx.partition_assignment(tp) is not None}
        if now:
            ctx.replicas_on_offline_dirs[event.broker_id] = now
        else:
            ctx.replicas_on_offline_dirs.pop(event.broker_id, None)
        newly = now - before
        if newly:
            self.on_replicas_become_offline(event.broker_id, newly)

    def on_replicas_become_offline(self, broker_id: int, partitions: set[TopicPartition]) -> None:
        """Kafka's onReplicasBecomeOffline, for the replicas of one broker in failed log dirs."""
        ctx = self.context
        replicas = [PartitionAndReplica(tp, broker_id) for tp in sorted(partitions)]
        deleting = [pr for pr in replicas if ctx.is_topic_queued_for_deletion(pr.partition.topic)]
        kept = [pr for pr in replicas if not ctx.is_topic_queued_for_deletion(pr.partition.topic)]
        lost_leader = [
            pr.partition for pr in kept
            if pr.partition in ctx.leadership and ctx.leadership[pr.partition].leader_and_isr.leader == broker_id
        ]
        self.partition_sm.handle_state_changes(lost_leader, PartitionState.OFFLINE)
        self.partition_sm.trigger_online_partition_state_change()
        self.replica_sm.handle_state_changes(kept, ReplicaState.OFFLINE)
        self.deletion.fail_replica_deletion(deleting)
        if not lost_leader:
            self.request_batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, [])
        log.info(
            "broker %d: %d replicas in failed log directories went offline, %d partitions lost their leader, "
            "%d offline after elections", broker_id, len(replicas), len(lost_leader), ctx.offline_partition_count,
        )
        self.state_log.record(
            "ReplicasOnOfflineDirs", self.controller_id, ctx.epoch, broker=broker_id,
            replicas=[str(tp) for tp in sorted(partitions)], leaders_lost=len(lost_leader),
        )

    # ---- controlled shutdown ----------------------------------------------------------------
    def process_controlled_shutdown(self, event: ev.ControlledShutdown) -> None:
        """A broker asks to shut down: `event.callback(error_code, partitions it still leads)`."""
        if not self.seat.is_acting:
            event.callback(ErrorCode.NOT_CONTROLLER, set())
            return
        ctx = self.context
        if event.broker_id not in ctx.live_brokers:
            event.callback(ErrorCode.BROKER_NOT_AVAILABLE, set())
            return
        if event.broker_epoch < ctx.broker_epoch(event.broker_id):
            log.info(
                "refusing controlled shutdown of broker %d: stale broker epoch %d < %d",
                event.broker_id, event.broker_epoch, ctx.broker_epoch(event.broker_id),
            )
            event.callback(ErrorCode.STALE_BROKER_EPOCH, set())
            return
        if event.broker_epoch > ctx.broker_epoch(event.broker_id):
            # newer than the registration we know: believe it only if ZooKeeper holds it
            registered = self.store.get_broker(event.broker_id)
            if registered is None or registered.epoch != event.broker_epoch:
                log.warning(
                    "refusing controlled shutdown of broker %d: broker epoch %d is not its registration (%s)",
                    event.broker_id, event.broker_epoch, None if registered is None else registered.epoch,
                )
                event.callback(ErrorCode.STALE_BROKER_EPOCH, set())
                return
        remaining = self.on_controlled_shutdown(event.broker_id)
        event.callback(ErrorCode.NONE, remaining)

    def on_controlled_shutdown(self, broker_id: int) -> set[TopicPartition]:
        ctx = self.context
        with self.batch():
            ctx.shutting_down_broker_ids.add(broker_id)
            partitions = [
                tp for tp in ctx.partitions_on_broker(broker_id)
                if len(ctx.partition_replicas(tp)) > 1 and tp in ctx.leadership
                and not ctx.is_topic_queued_for_deletion(tp.topic)
            ]
            led = [tp for tp in partitions if ctx.leadership[tp].leader_and_isr.leader == broker_id]
            followed = [tp for tp in partitions if ctx.leadership[tp].leader_and_isr.leader != broker_id]
            self.partition_sm.handle_state_changes(led, PartitionState.ONLINE, ElectionKind.CONTROLLED_SHUTDOWN)
            self.replica_sm.handle_state_changes(
                [PartitionAndReplica(tp, broker_id) for tp in followed], ReplicaState.OFFLINE
            )
            # what it still leads, known once the elections are written (before the requests are
            # handed over, so that the answer follows them at once)
            remaining = {
                tp for tp in ctx.partitions_led_by(broker_id) if len(ctx.partition_replicas(tp)) > 1
            }
        log.info(
            "controlled shutdown of broker %d: moved %d leaders, stopped %d followers, %d still led",
            broker_id, len(led) - len(remaining & set(led)), len(followed), len(remaining),
        )
        self.state_log.record(
            "ControlledShutdown", self.controller_id, ctx.epoch, broker=broker_id,
            leaders_to_move=len(led), followers_stopped=len(followed), remaining=[str(tp) for tp in remaining],
        )
        return remaining


def split_storage_errors(
    partition_errors: Mapping[TopicPartition, int],
) -> tuple[set[TopicPartition], set[TopicPartition]]:
    """(replicas answered KAFKA_STORAGE_ERROR, replicas answered NONE) of a LeaderAndIsr answer;
    other errors (a stale epoch) say nothing about the disk."""
    offline = {tp for tp, code in partition_errors.items() if code == ErrorCode.KAFKA_STORAGE_ERROR}
    online = {tp for tp, code in partition_errors.items() if code == ErrorCode.NONE}
    return offline, online
