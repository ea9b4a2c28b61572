"""The controller: election, failover, resignation, and the flows of SPEC §8.

Every broker runs one `Controller`; at most one is active. Start-up (`startup`):
register the session listener, put `Startup` on the event queue, start the event thread.
`Startup` watches `/controller` and calls `_elect`.

`_elect`: if `/controller` names a broker, remember it and stop. Otherwise create it and
bump `/controller_epoch` in one multi-op (`ZkStore.register_controller_and_increment_epoch`);
on success run `_on_controller_failover`; if another broker won, `_maybe_resign`; on any
other error delete `/controller` and resign (a new election follows).

`_on_controller_failover` (the new controller): register the controller watches; delete
stale ISR-change notifications; load the context from ZooKeeper with pipelined reads;
start the channel manager; initialise topic deletion; UpdateMetadata to every live
broker; start the replica then the partition state machine; resume reassignments and
deletions; run pending preferred elections; schedule the auto leader rebalance.

Session handling: SUSPENDED → stop acting as controller at once (a cut-off controller
cannot know it lost its seat); reconnected with the same session → if `/controller`
still names us, delete it so a clean election with a new epoch follows; expired → clear
the queue and resign; new session → register the broker znode again, re-elect.

All state is touched by the event thread only; watch callbacks only enqueue events.
"""
from __future__ import annotations

import gc
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from praha.common import BrokerInfo, TopicPartition
from praha.controller import events as ev
from praha.controller.channel_manager import ControllerChannelManager, TransportFactory
from praha.controller.context import ControllerContext
from praha.controller.event_manager import ControllerEventManager
from praha.controller.messages import ControllerResponseData
from praha.controller.request_batch import ControllerRequestBatch
from praha.errors import ControllerMovedError, ErrorCode, ZNodeDecodeError
from praha.statelog import StateChangeLog
from praha.zk import znodes

if TYPE_CHECKING:
    from praha.config import BrokerConfig
    from praha.zk.store import ZkStore

log = logging.getLogger(__name__)


class Controller:
    def __init__(
        self,
        config: "BrokerConfig",
        store: "ZkStore",
        register_broker: Callable[[], int],
        transport_factory: TransportFactory,
        state_change_log: StateChangeLog | None = None,
        broker_epoch: int = -1,
        last_seen_controller_epoch: Callable[[], int] = lambda: 0,
    ):
        self.config = config
        self.broker_id = config.broker_id
        self.store = store
        self._register_broker = register_broker
        self.broker_epoch = broker_epoch
        self._last_seen_controller_epoch = last_seen_controller_epoch
        self.state_log = state_change_log or StateChangeLog(None, config.broker_id)
        self.context = ControllerContext()
        self.active_controller_id = -1
        self.event_manager = ControllerEventManager(self)
        self.channel_manager = ControllerChannelManager(
            transport_factory, timeout_s=config.controller_socket_timeout_ms / 1000.0
        )
        self.request_batch = ControllerRequestBatch(
            self.broker_id,
            self.context,
            self.channel_manager,
            on_leader_and_isr_response=self._on_leader_and_isr_response,
            on_deletion_stop_replica_response=self._on_deletion_stop_replica_response,
        )
        self._controller_watch = None
        self._watches: list[Any] = []
        self._topic_watches: dict[str, Any] = {}
        self._resigned_while_suspended = False
        #: set by the session listener the moment ZooKeeper is unreachable, without waiting
        #: for the event thread (which may be blocked in a ZooKeeper call right then)
        self._suspended = threading.Event()
        self._rebalance_timer: threading.Timer | None = None
        self.failovers = 0
        self.last_failover_s = 0.0
        self.resignations = 0
        self._flows = None  # set by _build_flows(); state machines and managers
        self._handlers: dict[type, Callable[[Any], None]] = {
            ev.Startup: self._process_startup,
            ev.ControllerChange: self._process_controller_znode,
            ev.Reelect: self._process_controller_znode,
            ev.Expire: self._process_expire,
            ev.SessionSuspended: self._process_suspended,
            ev.SessionReconnected: self._process_reconnected,
            ev.RegisterBrokerAndReelect: self._process_register_broker_and_reelect,
            ev.BrokerChange: self._process_broker_change,
            ev.BrokerModifications: self._process_broker_modifications,
            ev.ControlledShutdown: self._process_controlled_shutdown,
            ev.AdminCall: self._process_admin_call,
        }
        self._build_flows()

    # ------------------------------------------------------------------ lifecycle
    def _build_flows(self) -> None:
        """Hook for the partition/replica state machines and the managers built on them."""
        from praha.controller.flows import ControllerFlows

        self._flows = ControllerFlows(self)
        self._handlers.update(self._flows.handlers())

    def startup(self) -> None:
        self.store.add_session_listener(self)
        self.event_manager.put(ev.Startup())
        self.event_manager.start()

    def shutdown(self) -> None:
        self.event_manager.close()
        self._cancel_controller_watch()
        if self.is_active:
            self._on_controller_resignation()
        self.channel_manager.shutdown()

    @property
    def is_active(self) -> bool:
        """This broker holds the controller seat (as far as the event thread knows)."""
        return self.active_controller_id == self.broker_id

    @property
    def is_acting(self) -> bool:
        """Holds the seat and is connected to ZooKeeper: only then may it act as controller."""
        return self.is_active and not self._suspended.is_set()

    @property
    def suspended(self) -> bool:
        return self._suspended.is_set()

    @property
    def flows(self):
        """The flows of SPEC §8 and their admin entry points (`api_*`)."""
        return self._flows

    @property
    def epoch(self) -> int:
        return self.context.epoch

    # ------------------------------------------------------ session listener (kazoo thread)
    def on_suspended(self) -> None:
        self._suspended.set()
        self.event_manager.clear_and_put(ev.SessionSuspended())

    def on_reconnected(self) -> None:
        self._suspended.clear()
        self.event_manager.put(ev.SessionReconnected())

    def on_session_expired(self) -> None:
        self._suspended.set()
        self.event_manager.clear_and_put(ev.Expire())

    def on_new_session(self) -> None:
        self._suspended.clear()
        self.event_manager.put(ev.RegisterBrokerAndReelect())

    # ------------------------------------------------------------------ dispatch
    def process(self, event: ev.ControllerEvent) -> None:
        handler = self._handlers.get(type(event))
        if handler is None:
            log.warning("no handler for controller event %s", event.name)
            return
        try:
            handler(event)
        except ControllerMovedError:
            log.info("controller moved to another broker while processing %s; resigning", event.name)
            self._maybe_resign()
        except Exception:
            log.exception("error processing controller event %s", event.name)
            raise

    # ------------------------------------------------------------------ election
    def _watch_controller(self) -> None:
        self._cancel_controller_watch()
        self._controller_watch = self.store.watch_data(
            znodes.CONTROLLER_PATH, lambda *a, **k: self.event_manager.put(ev.ControllerChange())
        )

    def _cancel_controller_watch(self) -> None:
        if self._controller_watch is not None:
            try:
                self._controller_watch.cancel()
            except Exception:  # noqa: BLE001
                pass
            self._controller_watch = None

    def _process_startup(self, _event: ev.Startup) -> None:
        self._watch_controller()
        self._elect()

    def _read_controller_id(self) -> int:
        """`/controller`'s broker id, -1 if absent. A corrupt znode is deleted (conditionally),
        which makes every broker re-elect, so a garbage write cannot wedge the cluster."""
        try:
            cid = self.store.get_controller_id()
        except ZNodeDecodeError as e:
            log.error("%s; deleting it so that a new controller is elected", e)
            self.state_log.record("CorruptControllerZNode", reason=e.reason)
            self._delete_corrupt(znodes.CONTROLLER_PATH)
            return -1
        if cid == self.broker_id and not self.is_active and self.store.delete_stale_controller(self.broker_id):
            # it names us, but this process never won it: the seat of our previous incarnation
            # (killed and restarted before its session expired); freed, a new election follows
            self.state_log.record("StaleControllerSeatFreed")
            return -1
        return -1 if cid is None else cid

    def _delete_corrupt(self, path: str) -> None:
        try:
            self.store.delete_if_unchanged_corrupt(path)
        except Exception as e:  # noqa: BLE001
            log.warning("could not delete corrupt %s: %s", path, e)

    def _process_controller_znode(self, _event: ev.ControllerEvent) -> None:
        """ControllerChange / Reelect: resign if we lost the seat; elect if the seat is empty."""
        self._maybe_resign()
        if self.active_controller_id == -1:
            self._elect()

    def _maybe_resign(self) -> None:
        was_active = self.is_active
        self._watch_controller()
        self.active_controller_id = self._read_controller_id()
        if was_active and not self.is_active:
            self._on_controller_resignation()

    def _elect(self) -> None:
        self.active_controller_id = self._read_controller_id()
        if self.active_controller_id != -1:
            log.debug("broker %d has already been elected controller", self.active_controller_id)
            return
        try:
            epoch, epoch_zk_version = self._register_controller()
        except ControllerMovedError:
            self._maybe_resign()
            if self.active_controller_id == -1:
                # /controller vanished between our attempt and the re-read: its watch brings a new round
                log.info("controller election lost to a broker that already left; waiting for the next round")
            else:
                log.info("broker %d won the controller election", self.active_controller_id)
            return
        except Exception:
            log.exception("controller election failed on broker %d; deleting /controller and resigning", self.broker_id)
            self._trigger_controller_move()
            return
        self.active_controller_id = self.broker_id
        self.context.epoch = epoch
        self.context.epoch_zk_version = epoch_zk_version
        log.info("broker %d elected controller with epoch %d", self.broker_id, epoch)
        self.state_log.record("ControllerElected", self.broker_id, epoch)
        try:
            self._on_controller_failover()
        except ControllerMovedError:
            raise
        except Exception:
            log.exception("controller failover failed; deleting /controller and resigning")
            self._trigger_controller_move()

    def _register_controller(self) -> tuple[int, int]:
        """Kafka's election multi-op, after making sure `/controller_epoch` is not below the
        highest epoch this broker has seen: a corrupt, negative or reset epoch would otherwise
        give the new controller an epoch every broker refuses as stale."""
        seen = max(self._last_seen_controller_epoch(), 0)
        try:
            current = self.store.get_controller_epoch()
            broken = current is not None and current[0] < seen
            why = f"/controller_epoch is {current[0] if current else None}, below the epoch {seen} brokers have seen"
        except ZNodeDecodeError as e:
            broken, why = True, str(e)
        if broken:
            log.error("%s; repairing /controller_epoch to %d before electing", why, seen)
            self.state_log.record("ControllerEpochRepaired", repaired_to=seen, reason=why)
            self.store.repair_controller_epoch(seen)
        return self.store.register_controller_and_increment_epoch(self.broker_id)

    def _trigger_controller_move(self) -> None:
        was_active = self.is_active
        self.active_controller_id = -1
        try:
            self.store.delete_controller()
        except Exception as e:  # noqa: BLE001
            log.warning("could not delete /controller: %s", e)
        if was_active:
            self._on_controller_resignation()

    # ------------------------------------------------------------------ failover
    def _on_controller_failover(self) -> None:
        start = time.monotonic()
        ctx = self.context
        phases: dict[str, float] = {}  # milliseconds per step, in the ControllerFailover line
        mark = start

        def lap(name: str) -> None:
            nonlocal mark
            now = time.monotonic()
            phases[name] = round((now - mark) * 1000, 1)
            mark = now

        # Building the context allocates millions of small containers (300k replica states at
        # 100k partitions): the cyclic GC would re-scan the growing heap again and again, about
        # half of the state machines' time. Reference counting still frees everything; only
        # cycles wait. It is switched back on once the failover is done and recorded: its first
        # pass over the new objects (~0.2 s at 100k) then runs while the requests are on their
        # way. Left alone if someone else disabled it.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            self._register_controller_watches()
            names, _ = self.store.get_isr_change_notifications()
            if names:
                self.store.delete_isr_change_notifications(names, ctx.epoch_zk_version)
            lap("watches")
            self._initialize_controller_context(lap)
            self.channel_manager.startup([ctx.live_brokers[b] for b in sorted(ctx.live_brokers)])
            self._flows.on_failover_before_metadata()
            with self._flows.batch() as batch:
                batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, None)
                self._flows.on_failover()
                lap("state_machines")
            lap("send")
            self.failovers += 1
            self.last_failover_s = time.monotonic() - start
            log.info(
                "controller failover done in %.3fs: epoch %d, %d live brokers, %d topics, %d partitions",
                self.last_failover_s, ctx.epoch, len(ctx.live_brokers), len(ctx.all_topics), len(ctx.leadership),
            )
            self.state_log.record(
                "ControllerFailover", self.broker_id, ctx.epoch,
                duration_ms=round(self.last_failover_s * 1000, 1), phases_ms=phases,
                live_brokers=sorted(ctx.live_brokers), topics=len(ctx.all_topics), partitions=len(ctx.leadership),
            )
        finally:
            if gc_was_enabled:
                gc.enable()

    def _register_controller_watches(self) -> None:
        put = self.event_manager.put
        w = self.store.watch_children
        self._watches = [
            w(znodes.BROKER_IDS_PATH, lambda *a, **k: put(ev.BrokerChange())),
            w(znodes.TOPICS_PATH, lambda *a, **k: put(ev.TopicChange())),
            w(znodes.DELETE_TOPICS_PATH, lambda *a, **k: put(ev.TopicDeletion())),
            w(znodes.ISR_CHANGE_NOTIFICATION_PATH, lambda *a, **k: put(ev.IsrChangeNotification())),
            self.store.watch_data(znodes.REASSIGN_PARTITIONS_PATH, lambda *a, **k: put(ev.PartitionReassignment())),
            self.store.watch_data(
                znodes.PREFERRED_REPLICA_ELECTION_PATH, lambda *a, **k: put(ev.PreferredReplicaLeaderElection())
            ),
        ]

    def watch_topic(self, topic: str) -> None:
        """Watch `/brokers/topics/<t>` for partition expansion."""
        if topic in self._topic_watches:
            return
        put = self.event_manager.put
        self._topic_watches[topic] = self.store.watch_data(
            znodes.topic_path(topic), lambda *a, **k: put(ev.PartitionModifications(topic))
        )

    def unwatch_topic(self, topic: str) -> None:
        h = self._topic_watches.pop(topic, None)
        if h is not None:
            h.cancel()

    def _initialize_controller_context(self, lap: Callable[[str], None] = lambda _name: None) -> None:
        ctx = self.context
        brokers, corrupt = self.store.get_live_brokers()
        for bid, err in corrupt.items():
            log.error("ignoring broker %d: %s", bid, err)
        ctx.live_brokers = dict(brokers)
        lap("brokers")
        topics = self.store.get_all_topics()
        assignments, bad = self.store.get_topic_assignments(topics)
        for t, err in bad.items():
            log.error("ignoring topic %s: %s", t, err)
        lap("assignments_read")
        ctx.all_topics = set(assignments)
        for t, ta in assignments.items():
            ctx.assignments[t] = dict(ta.partitions)
            if ta.topic_id:
                ctx.topic_ids[t] = ta.topic_id
            for p, a in ta.partitions.items():
                if a.is_being_reassigned:
                    ctx.partitions_being_reassigned.add(TopicPartition(t, p))
        lap("assignments")
        ctx.topic_configs, bad_configs = self.store.get_topic_configs(sorted(ctx.all_topics))
        for t, err in bad_configs.items():
            log.error("topic %s has a corrupt config znode, broker defaults apply: %s", t, err)
        lap("configs")
        mzxids: dict[TopicPartition, int] = {}
        states, bad_states = self.store.get_partition_states(ctx.all_partitions(), mzxids=mzxids)
        for tp, err in bad_states.items():
            log.error("partition %s has a corrupt state znode (%s); it will be treated as having no leader", tp, err)
        ctx.leadership = dict(states)
        ctx.stale_leadership = stale_leaderships(states, mzxids, ctx.live_brokers)
        if ctx.stale_leadership:
            log.warning(
                "%d partitions are led by a broker that restarted since it was elected (unseen bounce); "
                "they get a new election", len(ctx.stale_leadership),
            )
        lap("states")
        self.watch_topics(sorted(ctx.all_topics))
        lap("topic_watches")

    def watch_topics(self, topics: list[str]) -> None:
        """Watch each topic's znode; armed together (one round trip, not one per topic)."""
        new = {znodes.topic_path(t): t for t in topics if t not in self._topic_watches}
        if not new:
            return
        put = self.event_manager.put

        def callback_for(path: str):
            topic = new[path]
            return lambda *a, **k: put(ev.PartitionModifications(topic))

        for path, handle in self.store.watch_data_many(list(new), callback_for).items():
            self._topic_watches[new[path]] = handle

    # ------------------------------------------------------------------ resignation
    def _on_controller_resignation(self) -> None:
        log.info("broker %d resigning as controller (epoch %d)", self.broker_id, self.context.epoch)
        self.state_log.record("ControllerResigned", self.broker_id, self.context.epoch)
        for h in self._watches:
            try:
                h.cancel()
            except Exception:  # noqa: BLE001
                pass
        self._watches = []
        for t in list(self._topic_watches):
            self.unwatch_topic(t)
        self._flows.on_resignation()
        self.channel_manager.shutdown()
        self.request_batch.clear()
        self.context.clear()
        self.resignations += 1

    def _process_suspended(self, _event: ev.SessionSuspended) -> None:
        if not self._suspended.is_set():
            return  # already reconnected by the time we got here
        if self.is_active:
            log.warning("ZooKeeper connection suspended: broker %d stops acting as controller", self.broker_id)
            self._resigned_while_suspended = True
            self.active_controller_id = -1
            self._on_controller_resignation()
        else:
            self.active_controller_id = -1

    def _process_reconnected(self, _event: ev.SessionReconnected) -> None:
        if self._resigned_while_suspended:
            self._resigned_while_suspended = False
            if self._read_controller_id() == self.broker_id:
                # we still hold /controller but dropped our state: hand the seat back to a
                # clean election (a new epoch), which may well choose us again
                log.info("reconnected with the same session; giving up /controller for a fresh election")
                self.store.delete_controller()
        self._maybe_resign()
        if self.active_controller_id == -1:
            self._elect()

    def _process_expire(self, _event: ev.Expire) -> None:
        was_active = self.is_active
        self.active_controller_id = -1
        self._resigned_while_suspended = False
        if was_active:
            self._on_controller_resignation()

    def _process_register_broker_and_reelect(self, _event: ev.RegisterBrokerAndReelect) -> None:
        self.broker_epoch = self._register_broker()
        log.info("broker %d registered again with epoch %d after session expiry", self.broker_id, self.broker_epoch)
        self.state_log.record("BrokerReregistered", broker_epoch=self.broker_epoch)
        self._watch_controller()
        self._maybe_resign()
        if self.active_controller_id == -1:
            self._elect()

    # ------------------------------------------------------------------ brokers
    def _process_broker_change(self, _event: ev.BrokerChange) -> None:
        if not self.is_active:
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
            "BrokerChange", self.broker_id, ctx.epoch,
            new=sorted(new_ids), dead=sorted(dead_ids), bounced=sorted(bounced_ids),
            epochs={b: current[b].epoch for b in sorted(new_ids | bounced_ids)},
        )
        # One batch for the whole event. A bounced broker is handled as a failure then a
        # start-up; requests addressed to it while it is out of the live set are dropped
        # when added, so it never receives the failure half (e.g. a StopReplica).
        with self._flows.batch():
            for b in new_ids:
                self.channel_manager.add_broker(current[b])
            for b in bounced_ids | dead_ids:
                self.channel_manager.remove_broker(b)
            if new_ids:
                ctx.add_live_brokers(current[b] for b in new_ids)
                self._flows.on_broker_startup(new_ids)
            if bounced_ids:
                ctx.remove_live_brokers(bounced_ids)
                self._flows.on_broker_failure(bounced_ids)
                ctx.add_live_brokers(current[b] for b in bounced_ids)
                for b in bounced_ids:
                    self.channel_manager.add_broker(current[b])
                self._flows.on_broker_startup(bounced_ids)
            if dead_ids:
                ctx.remove_live_brokers(dead_ids)
                self._flows.on_broker_failure(dead_ids)

    def _process_broker_modifications(self, event: ev.BrokerModifications) -> None:
        if not self.is_active:
            return
        current, _ = self.store.get_live_brokers()
        new = current.get(event.broker_id)
        old = self.context.live_brokers.get(event.broker_id)
        if new and old and new.endpoints != old.endpoints:
            self.context.live_brokers[event.broker_id] = new
            self.send_update_metadata(self.context.live_or_shutting_down_broker_ids, [])

    def send_update_metadata(self, broker_ids, partitions) -> None:
        with self._flows.batch() as batch:
            batch.add_update_metadata(broker_ids, partitions)

    # ------------------------------------------------------------------ requests from brokers
    def controlled_shutdown(self, broker_id: int, broker_epoch: int, callback) -> None:
        """Called by the network layer; `callback(error_code, remaining)` runs on the event thread."""
        self.event_manager.put(ev.ControlledShutdown(broker_id, broker_epoch, callback))

    def _process_controlled_shutdown(self, event: ev.ControlledShutdown) -> None:
        if not self.is_acting:
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
        remaining = self._flows.on_controlled_shutdown(event.broker_id)
        event.callback(ErrorCode.NONE, remaining)

    def run_on_controller(self, fn: Callable[["Controller"], Any], callback) -> None:
        """Run `fn(controller)` on the event thread (for admin APIs); `callback(result, error)`."""
        self.event_manager.put(ev.AdminCall(fn, callback))

    def _process_admin_call(self, event: ev.AdminCall) -> None:
        if not self.is_acting:
            event.callback(None, ControllerMovedError(f"broker {self.broker_id} is not the controller"))
            return
        try:
            result = event.fn(self)
        except Exception as e:  # noqa: BLE001 - the caller gets the error
            event.callback(None, e)
            return
        event.callback(result, None)

    # ------------------------------------------------------------------ responses
    def _on_leader_and_isr_response(self, broker_id: int, response: ControllerResponseData) -> None:
        if response.error_code or any(response.partition_errors.values()):
            self.event_manager.put(ev.LeaderAndIsrResponseReceived(broker_id, response))

    def _on_deletion_stop_replica_response(self, broker_id: int, response: ControllerResponseData) -> None:
        self.event_manager.put(
            ev.TopicDeletionStopReplicaResponseReceived(broker_id, response.error_code, dict(response.partition_errors))
        )

    # ------------------------------------------------------------------ figures
    def figures(self) -> dict[str, float]:
        ctx = self.context
        active = self.is_acting
        return {
            "active_controller": 1.0 if active else 0.0,
            "controller_epoch": float(ctx.epoch if active else self._last_seen_controller_epoch()),
            "event_queue_size": float(self.event_manager.queue_size),
            "event_queue_time_last_s": self.event_manager.last_queue_time_s,
            "event_queue_time_max_s": self.event_manager.max_queue_time_s,
            "events_processed": float(self.event_manager.events_processed),
            "offline_partitions": float(ctx.offline_partition_count if active else 0),
            "preferred_replica_imbalance": float(ctx.preferred_replica_imbalance_count() if active else 0),
            "partitions_being_reassigned": float(len(ctx.partitions_being_reassigned) if active else 0),
            "topics_to_delete": float(len(ctx.topics_to_be_deleted) if active else 0),
            "topics_ineligible_to_delete": float(len(ctx.topics_ineligible_for_deletion) if active else 0),
            "unclean_leader_elections": float(ctx.unclean_elections),
            "failovers": float(self.failovers),
            "last_failover_seconds": self.last_failover_s,
            "global_partition_count": float(len(ctx.leadership) if active else 0),
        }


def stale_leaderships(states, mzxids, live_brokers) -> set[TopicPartition]:
    """Partitions whose leader registered (its broker epoch, the czxid of its znode) after the
    partition's state znode was last written: the leader elected there was an earlier
    incarnation of that broker, which restarted without any controller seeing it. Treating
    them as offline gives them a new leader epoch, as if the bounce had been seen."""
    out = set()
    for tp, st in states.items():
        b = live_brokers.get(st.leader_and_isr.leader)
        if b is not None and tp in mzxids and b.epoch > mzxids[tp]:
            out.add(tp)
    return out
