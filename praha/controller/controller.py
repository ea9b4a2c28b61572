"""The controller seat: election, session, failover, resignation.

Every broker runs one `Controller`; at most one is active. The flows of docs/controller.md §8 (broker
changes, topics, ISR changes, deletion, reassignment, elections) are `ControllerFlows`
(flows.py), which this module builds from a `ControllerServices` bundle and which never
sees the `Controller`. Start-up (`startup`):
register the session listener, put `Startup` on the event queue, start the event thread.
`Startup` watches `/controller` and calls `_elect`.

`_elect`: if `/controller` names a broker, remember it and stop. Otherwise create it and
bump `/controller_epoch` in one multi-op (`ZkStore.register_controller_and_increment_epoch`);
on success run `_on_controller_failover`; if another broker won, `_maybe_resign`; on any
other error delete `/controller` and resign (a new election follows).

`_on_controller_failover` (the new controller): register the controller watches; delete
stale log-dir event and ISR-change notifications; load the context from ZooKeeper with pipelined reads
(`ControllerFlows.load_context`); start the channel manager; then the flows' failover
(`ControllerFlows.on_failover`): initialise topic deletion; UpdateMetadata to every live
broker; start the replica then the partition state machine; resume reassignments and
deletions; run pending preferred elections; schedule the auto leader rebalance.

Resignation (`_on_controller_resignation`): cancel the controller watches; the flows drop
their watches and timers; stop the channel manager; forget the pending requests and the
context.

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
from collections.abc import Callable
from typing import Any

from praha.common import TopicPartition
from praha.config import BrokerConfig
from praha.controller import events as ev
from praha.controller.channel_manager import ControllerChannelManager, TransportFactory
from praha.controller.context import ControllerContext
from praha.controller.event_manager import ControllerEventManager
from praha.controller.flows import ControllerFlows, Handler
from praha.controller.services import ControllerServices
from praha.controller.store_api import ControllerSeatStore, Watch
from praha.errors import ControllerMovedError, ZNodeDecodeError
from praha.statelog import StateChangeLog
from praha.zk import znodes

log = logging.getLogger(__name__)


class Controller:
    def __init__(
        self,
        config: BrokerConfig,
        store: ControllerSeatStore,
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
        self._services = ControllerServices.create(
            config, self.context, store, self.state_log, self.event_manager.put, self.channel_manager, seat=self
        )
        self._flows = ControllerFlows(self._services)
        self._controller_watch: Watch | None = None
        self._watches: list[Watch] = []
        self._resigned_while_suspended = False
        #: set by the session listener the moment ZooKeeper is unreachable, without waiting
        #: for the event thread (which may be blocked in a ZooKeeper call right then)
        self._suspended = threading.Event()
        self.failovers = 0
        self.last_failover_s = 0.0
        self.resignations = 0
        self._handlers: dict[type[ev.ControllerEvent], Handler] = {
            ev.Startup: self._process_startup,
            ev.ControllerChange: self._process_controller_znode,
            ev.Reelect: self._process_controller_znode,
            ev.Expire: self._process_expire,
            ev.SessionSuspended: self._process_suspended,
            ev.SessionReconnected: self._process_reconnected,
            ev.RegisterBrokerAndReelect: self._process_register_broker_and_reelect,
            ev.AdminCall: self._process_admin_call,
            **self._flows.handlers(),
        }

    # ------------------------------------------------------------------ lifecycle
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
    def flows(self) -> ControllerFlows:
        """The flows of docs/controller.md §8 and their admin entry points (`api_*`)."""
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
            znodes.CONTROLLER_PATH, self._services.on_watch(ev.ControllerChange)
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
        highest epoch this broker has seen nor below its own data version (which every election
        raises with the value): a corrupt, negative or reset epoch would otherwise give the new
        controller an epoch every broker refuses as stale."""
        seen = max(self._last_seen_controller_epoch(), 0)
        try:
            current = self.store.get_controller_epoch()
            broken = current is not None and current[0] < max(seen, current[1])
            why = (f"/controller_epoch is {current[0] if current else None}, below the epoch {seen} brokers "
                   f"have seen or its version {current[1] if current else None}")
        except ZNodeDecodeError as e:
            broken, why = True, str(e)
        if broken:
            repaired = self.store.repair_controller_epoch(seen)
            log.error("%s; repaired /controller_epoch to %s before electing", why, repaired)
            self.state_log.record("ControllerEpochRepaired", repaired_to=repaired, reason=why)
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
        # the event thread's own CPU per step beside them: wall time well above it is time spent
        # waiting (ZooKeeper, or the interpreter held by other threads), not computing
        phases_cpu: dict[str, float] = {}
        mark, cpu_mark = start, time.thread_time()

        def lap(name: str) -> None:
            nonlocal mark, cpu_mark
            now, cpu = time.monotonic(), time.thread_time()
            phases[name] = round((now - mark) * 1000, 1)
            phases_cpu[name] = round((cpu - cpu_mark) * 1000, 1)
            mark, cpu_mark = now, cpu

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
            self._flows.delete_stale_log_dir_notifications()  # Kafka's order: log-dir events, then ISR changes
            self._flows.delete_stale_isr_notifications()
            lap("watches")
            self._flows.load_context(lap)
            stale = len(ctx.stale_leadership)  # re-elected below (leaders that restarted unseen)
            self.channel_manager.startup([ctx.live_brokers[b] for b in sorted(ctx.live_brokers)])
            self._flows.on_failover(lap)
            self.failovers += 1
            self.last_failover_s = time.monotonic() - start
            log.info(
                "controller failover done in %.3fs: epoch %d, %d live brokers, %d topics, %d partitions",
                self.last_failover_s, ctx.epoch, len(ctx.live_brokers), len(ctx.all_topics), len(ctx.leadership),
            )
            self.state_log.record(
                "ControllerFailover", self.broker_id, ctx.epoch,
                duration_ms=round(self.last_failover_s * 1000, 1), phases_ms=phases, phases_cpu_ms=phases_cpu,
                live_brokers=sorted(ctx.live_brokers), topics=len(ctx.all_topics), partitions=len(ctx.leadership),
                stale_leaderships=stale,
            )
        finally:
            if gc_was_enabled:
                gc.enable()

    def _register_controller_watches(self) -> None:
        """The watches whose events the flows handle, for as long as this broker holds the seat."""
        on_watch = self._services.on_watch
        children, data = self.store.watch_children, self.store.watch_data
        self._watches = [
            children(znodes.BROKER_IDS_PATH, on_watch(ev.BrokerChange)),
            children(znodes.TOPICS_PATH, on_watch(ev.TopicChange)),
            children(znodes.DELETE_TOPICS_PATH, on_watch(ev.TopicDeletion)),
            children(znodes.ISR_CHANGE_NOTIFICATION_PATH, on_watch(ev.IsrChangeNotification)),
            children(znodes.LOG_DIR_EVENT_NOTIFICATION_PATH, on_watch(ev.LogDirEventNotification)),
            data(znodes.REASSIGN_PARTITIONS_PATH, on_watch(ev.PartitionReassignment)),
            data(znodes.PREFERRED_REPLICA_ELECTION_PATH, on_watch(ev.PreferredReplicaLeaderElection)),
        ]

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
        self._flows.on_resignation()
        self.channel_manager.shutdown()
        self._services.request_batch.clear()
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

    # ------------------------------------------------------------------ requests from brokers
    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int, callback: Callable[[int, set[TopicPartition]], None]
    ) -> None:
        """Called by the network layer; `callback(error_code, remaining)` runs on the event thread."""
        self.event_manager.put(ev.ControlledShutdown(broker_id, broker_epoch, callback))

    def run_on_controller(
        self, fn: Callable[[Controller], Any], callback: Callable[[Any, BaseException | None], None]
    ) -> None:
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

