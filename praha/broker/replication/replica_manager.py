"""Replicas hosted by this broker: roles from the controller, ISR upkeep, parked requests.

LeaderAndIsr, per partition (controller epoch already checked by the handler):
1. refuse it unless its leader epoch is newer than ours (STALE_CONTROLLER_EPOCH for that
   partition, as Kafka 2.x answers) or this broker is not among its replicas;
2. read the topic's config overrides from ZooKeeper (off the loop), create the logs of
   new partitions (off the loop, several at a time), open the others;
3. leader: stop fetching it, `Partition.make_leader`; follower: drop leader state and
   hand it to the fetcher of the leader's broker, which truncates first then fetches
   (no live leader: just stop);
4. wake parked produce/fetch requests of the partitions that changed (they answer
   NOT_LEADER_OR_FOLLOWER now).
StopReplica: stop fetching and serving, delete the log if asked; a leader epoch older
than ours is FENCED_LEADER_EPOCH (-1 and -2 always apply); a replica in a failed log dir
answers KAFKA_STORAGE_ERROR (also to LeaderAndIsr, as does a partition with no log here
while a dir is offline, unless the request says it is new).

A log directory failure (an I/O error reported to the log manager's failure channel, on any
thread) is handled on the loop (Kafka's ReplicaManager.handleLogDirFailure): 1. the log
manager drops the dir's logs; 2. their partitions stop being fetched and served and are
remembered as offline (Produce/Fetch answer KAFKA_STORAGE_ERROR); 3. parked requests and the
leadership listeners are told; 4. if no dir is left, the broker halts (exit code 1, as
Kafka); else 5. `/log_dir_event_notification/log_dir_event_<seq>` is written, and the
controller asks this broker with a LeaderAndIsr which replicas are offline. UpdateMetadata dropping a
partition (topic deleted) stops serving it too.

Running as leader:
- every `replica.lag.time.max.ms`/2 each led partition drops ISR members that have not
  caught up, and a follower fetch that catches up adds it back: conditional writes of
  the partition state znode and batched `/isr_change_notification` nodes (`isr.py`);
- high watermarks are checkpointed to `replication-offset-checkpoint` every
  `replica.high.watermark.checkpoint.interval.ms` (and at shutdown), recovery points
  every minute, retention every `log.retention.check.interval.ms`.
Everything but the ZooKeeper calls and checkpoint files runs on the network loop.
"""
from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from praha.broker.quotas.replication_quota import (
    NO_THROTTLED_REPLICAS,
    ReplicationQuota,
    ThrottledReplicas,
    parse_rate,
    parse_throttled_replicas,
)
from praha.broker.replication.delayed import DelayedFetch, DelayedProduce, ProduceWait, Purgatory
from praha.broker.replication.fetcher import FetcherSettings, ReplicaFetcherManager
from praha.broker.replication.isr import IsrUpkeep
from praha.broker.replication.log_dir_mover import LogDirMover
from praha.broker.replication.partition import Partition
from praha.common import BrokerInfo, TopicPartition, now_ms
from praha.config import DYNAMIC_LOG_KEYS, FOLLOWER_THROTTLED_RATE, FOLLOWER_THROTTLED_REPLICAS, BrokerConfig
from praha.errors import ConfigError, ErrorCode
from praha.log import LogConfig, LogManager
from praha.log.cleaner import CleanerConfig
from praha.log.log import parse_log_dir_name
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.protocol.controller_requests import (
    ControllerResponseData,
    LeaderAndIsrRequestData,
    PartitionLeaderState,
    StopReplicaRequestData,
)

if TYPE_CHECKING:
    from praha.broker.replication.metadata_cache import MetadataCache
    from praha.zk.store import ZkStore

log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT_INTERVAL_MS = 60_000
CONFIG_READ_TIMEOUT_S = 5.0



def log_config_of(cfg: BrokerConfig) -> LogConfig:
    return LogConfig.from_broker_config(cfg.passed_on_properties())


def cleaner_config_of(cfg: BrokerConfig) -> CleanerConfig:
    return CleanerConfig.from_broker_config(cfg.passed_on_properties())


@dataclass
class ReplicaStats:
    isr_shrinks: int = 0
    isr_expands: int = 0
    isr_write_failures: int = 0
    isr_notifications: int = 0
    bytes_in: int = 0
    messages_in: int = 0
    bytes_out: int = 0


def halt_process(code: int) -> None:
    """Kafka's Exit.halt: no shutdown hooks (they would write to the failed disks)."""
    logging.shutdown()
    sys.stderr.flush()
    os._exit(code)


class ReplicaManager:
    def __init__(self, broker_id: int, config: BrokerConfig | None = None,
                 metadata_cache: MetadataCache | None = None):
        self.broker_id = broker_id
        self.config = config or BrokerConfig(broker_id=broker_id)
        self.metadata_cache = metadata_cache
        self.partitions: dict[TopicPartition, Partition] = {}
        self.log_manager: LogManager | None = None
        self.store: ZkStore | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        #: how followers reach leaders (set by the broker from its inter-broker listener)
        self.inter_broker_security: ClientSecurity = PLAINTEXT
        self.produce_purgatory: Purgatory[TopicPartition] | None = None
        self.fetch_purgatory: Purgatory[TopicPartition] | None = None
        self.delete_records_purgatory: Purgatory[TopicPartition] | None = None
        self.topic_configs: dict[str, dict[str, str]] = {}
        #: broker-wide log config defaults set while running (`/config/brokers`, Kafka's names)
        self.dynamic_log_defaults: dict[str, str] = {}
        #: reassignment throttle: the replicas it covers per topic, and this broker's budget
        self.follower_throttled: dict[str, ThrottledReplicas] = {}
        self.follower_quota = ReplicationQuota()
        self.stats = ReplicaStats()
        self._hw_checkpoint: dict[TopicPartition, int] = {}
        self._state_lock: asyncio.Lock | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False
        #: partitions whose log dir failed: KAFKA_STORAGE_ERROR until the broker restarts
        self.offline_partitions: set[TopicPartition] = set()
        self._pending_dir_failures: list[str] = []  # reported before the loop ran
        #: called when every log dir has failed (a test replaces it)
        self.halt: Callable[[int], None] = halt_process
        #: moves of replicas between this broker's log dirs (AlterReplicaLogDirs)
        self.mover = LogDirMover(self)
        #: set when controlled shutdown begins: followers fetch no more (see `stop_following`)
        self.shutting_down = False
        #: told of leadership changes after each LeaderAndIsr / StopReplica: (partitions this
        #: broker now leads and did not before, with their leader epochs; partitions it follows
        #: or stopped serving) — the group coordinator's hook; a new epoch of a partition it
        #: already led (an ISR change) is no change of leadership
        self.leadership_listeners: list[Callable[[list[tuple[TopicPartition, int]], list[TopicPartition]], None]] = []
        self._zk = ThreadPoolExecutor(max_workers=1, thread_name_prefix="replica-zk")  # ISR writes, in order
        self._zk_reads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="replica-zk-read")
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="replica-io")
        cfg = self.config
        self.lag_time_max_ms = cfg.replica_lag_time_max_ms
        self.isr_notification_interval_ms = cfg.isr_change_notification_interval_ms
        #: ISR shrinks and expansions of the led partitions, and their change notifications
        self.isr = IsrUpkeep(self, self._zk, self._partition_changed)
        self.hw_checkpoint_interval_ms = cfg.replica_high_watermark_checkpoint_interval_ms

    # ------------------------------------------------------------------ lifecycle
    def start_logs(self, store: ZkStore | None) -> None:
        """Open every log on disk (recovering after a crash); before the broker registers.

        Topic overrides of the topics found on disk are read first so logs open with them."""
        self.store = store
        cfg = self.config
        dirs = [str(d) for d in cfg.log_dir_list]
        topics = set()
        for d in cfg.log_dir_list:
            if d.is_dir():
                for child in d.iterdir():
                    tp = parse_log_dir_name(child.name) if child.is_dir() else None
                    if tp is not None:
                        topics.add(tp.topic)
        if topics and store is not None:
            configs, _bad = store.get_topic_configs(sorted(topics))
            for t, config in configs.items():
                self._set_topic_config(t, config)
        manager = LogManager(dirs, log_config_of(cfg), lambda t: self.topic_configs.get(t, {}),
                             cleaner_config_of(cfg))
        manager.failure_channel.add_listener(self._on_dir_failure_reported)
        manager.startup()  # a failure here leaves `log_manager` unset: nothing to close
        self.log_manager = manager
        for log_dir in self.log_manager.live_log_dirs:
            try:
                self._hw_checkpoint.update(self.log_manager.high_watermark_file(log_dir).read())
            except Exception as e:  # noqa: BLE001 - a bad checkpoint costs only a lower start HW
                log.warning("ignoring high watermark checkpoint in %s: %s", log_dir, e)

    async def start(self) -> None:
        """On the loop: purgatories, fetchers, periodic tasks."""
        loop = self.loop = asyncio.get_running_loop()
        cfg = self.config
        self._state_lock = asyncio.Lock()
        self.produce_purgatory = Purgatory("produce", loop)
        self.fetch_purgatory = Purgatory("fetch", loop)
        self.delete_records_purgatory = Purgatory("delete-records", loop)
        settings = FetcherSettings(
            broker_id=self.broker_id,
            fetch_max_bytes=cfg.replica_fetch_max_bytes,
            response_max_bytes=cfg.replica_fetch_response_max_bytes,
            wait_max_ms=cfg.replica_fetch_wait_max_ms,
            backoff_ms=cfg.replica_fetch_backoff_ms,
            socket_timeout_ms=cfg.replica_socket_timeout_ms,
            security=self.inter_broker_security,
        )
        self.fetchers = ReplicaFetcherManager(settings, self._followed_partition, self._on_follower_append,
                                              self.follower_quota, self.is_follower_throttled)
        if self.log_manager is not None:
            self.log_manager.start_cleaner(self._cleaner_high_watermark)
        pending, self._pending_dir_failures = self._pending_dir_failures, []
        for d in pending:  # dirs that failed at start-up: the controller must hear of them too
            self.handle_log_dir_failure(d)
        self._tasks = [
            loop.create_task(self._every(max(self.lag_time_max_ms // 2, 10), self.maybe_shrink_isr), name="isr-expiry"),
            loop.create_task(self._every(self.hw_checkpoint_interval_ms, self._checkpoint_hw), name="hw-checkpoint"),
            loop.create_task(self._every(RECOVERY_POINT_CHECKPOINT_INTERVAL_MS, self._checkpoint_recovery_points),
                             name="recovery-checkpoint"),
            loop.create_task(self._every(cfg.log_retention_check_interval_ms, self._retention), name="retention"),
        ]

    async def _every(self, interval_ms: int, fn: Callable[[], object]) -> None:
        while not self._closing:
            await asyncio.sleep(interval_ms / 1000.0)
            try:
                r = fn()
                if asyncio.iscoroutine(r):
                    await r
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - periodic work must keep running
                log.exception("periodic task %s failed", getattr(fn, "__name__", fn))

    async def stop_following(self) -> int:
        """Controlled shutdown begins: stop every follower fetcher, and start none for the
        LeaderAndIsr requests still to come. Otherwise a fetch from this broker could put it
        back into an ISR the controller has just removed it from, right before it exits.
        Led partitions keep being served until they move. Returns how many stopped."""
        self.shutting_down = True
        if self.fetchers is None:
            return 0
        n = self.fetchers.remove_all()
        self.fetchers.shutdown_idle()
        return n

    async def shutdown(self) -> None:
        """On the loop: stop tasks and fetchers, answer parked requests, checkpoint HWs."""
        self._closing = True
        self.mover.shutdown()
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)
        if self.fetchers is not None:
            await self.fetchers.shutdown()
        for p in (self.produce_purgatory, self.fetch_purgatory):
            if p is not None:
                p.expire_all()
        self.isr.flush_pending()
        await self._checkpoint_hw()

    def close_logs(self) -> None:
        """After the loop has stopped: close every log and leave the clean-shutdown marker."""
        if self.log_manager is not None:
            self._write_hw_files(self._hw_snapshot())
            self.log_manager.shutdown()
            self.log_manager = None
        self._zk.shutdown(wait=False, cancel_futures=True)
        self._zk_reads.shutdown(wait=False, cancel_futures=True)
        self._io.shutdown(wait=True)

    # ------------------------------------------------------------------ log dir failures
    def _on_dir_failure_reported(self, log_dir: str, _reason: str) -> None:
        """The failure channel's listener, on whichever thread hit the error: hand over to the loop."""
        loop = self.loop
        if loop is None or loop.is_closed():
            self._pending_dir_failures.append(log_dir)
            return
        try:
            loop.call_soon_threadsafe(self.handle_log_dir_failure, log_dir)
        except RuntimeError:  # the loop is shutting down: the next start-up finds the dir anew
            pass

    def handle_log_dir_failure(self, log_dir: str) -> None:
        """On the loop: take the failed dir's replicas offline (see the module docstring)."""
        lm = self.log_manager
        if lm is None or self._closing:
            return
        gone = lm.handle_dir_failure(log_dir)
        led: list[TopicPartition] = []
        for tp in gone:
            self.offline_partitions.add(tp)
            if self.fetchers is not None:
                self.fetchers.remove(tp)
            p = self.partitions.pop(tp, None)
            if p is not None:
                if p.is_leader:
                    led.append(tp)
                self._partition_changed(tp)
        if self.fetchers is not None:
            self.fetchers.shutdown_idle()
        if led:
            self._tell_leadership([], led)
        live = lm.live_log_dirs
        log.error("log dir %s failed: %d replicas offline (%d led here); %d of %d log dirs left",
                  log_dir, len(gone), len(led), len(live), len(lm.log_dirs))
        if not live:
            log.critical("shutting down broker %d because all log dirs in %s have failed",
                         self.broker_id, ", ".join(lm.log_dirs))
            self.halt(1)
            return
        self._notify_log_dir_event()

    def _notify_log_dir_event(self) -> None:
        """`/log_dir_event_notification/log_dir_event_<seq>` naming this broker, off the loop."""
        store, loop = self.store, self.loop
        if store is None or loop is None:
            return
        broker_id = self.broker_id

        def done(f: asyncio.Future[Any]) -> None:
            try:
                log.info("log dir event notification %s written", f.result())
            except Exception as e:  # noqa: BLE001 - the controller then learns it at the next LeaderAndIsr
                log.warning("log dir event notification not written: %s", e)

        loop.run_in_executor(self._zk, store.create_log_dir_event_notification, broker_id).add_done_callback(done)

    def storage_refusal(self, tp: TopicPartition, is_new: bool = True) -> bool:
        """Whether a controller request for `tp` is answered KAFKA_STORAGE_ERROR: its log dir
        failed, or it has no log here while a dir is offline (the log may be in it) and the
        request does not say it is new (Kafka's getOrCreateLog)."""
        if tp in self.offline_partitions:
            return True
        lm = self.log_manager
        return (not is_new and lm is not None and tp not in self.partitions and lm.get(tp) is None
                and bool(lm.offline_log_dirs()))

    # ------------------------------------------------------------------ queries
    def knows_partition(self, tp: TopicPartition) -> bool:
        cache = self.metadata_cache
        return cache is not None and cache.partition(tp) is not None

    def leader_count(self) -> int:
        return sum(1 for p in list(self.partitions.values()) if p.is_leader)

    def under_replicated_count(self) -> int:
        return sum(1 for p in list(self.partitions.values()) if p.under_replicated)

    def _cleaner_high_watermark(self, tp: TopicPartition) -> int | None:
        """For the cleaner threads: no cleaning at or above the high watermark (dict reads only)."""
        p = self.partitions.get(tp)
        if p is not None:
            return p.high_watermark
        return self._hw_checkpoint.get(tp, 0)

    def figures(self) -> list[tuple[str, float, str]]:
        s = self.stats
        f = self.fetchers
        lm = self.log_manager
        cleaner = lm.cleaner if lm is not None else None
        return [
            *(cleaner.figures() if cleaner is not None else []),
            ("under_replicated_partitions", float(self.under_replicated_count()), "led partitions with ISR < replicas"),
            ("offline_log_directories", float(len(lm.offline_log_dirs()) if lm is not None else 0),
             "log.dirs taken offline by an I/O error"),
            ("offline_replicas", float(len(self.offline_partitions)), "replicas in offline log dirs"),
            ("isr_shrinks", float(s.isr_shrinks), "ISR shrinks written by this leader"),
            ("isr_expands", float(s.isr_expands), "ISR expansions written by this leader"),
            ("isr_write_failures", float(s.isr_write_failures), "ISR writes refused or failed"),
            ("isr_change_notifications", float(s.isr_notifications), "/isr_change_notification nodes written"),
            ("bytes_in", float(s.bytes_in), "bytes appended as leader"),
            ("messages_in", float(s.messages_in), "records appended as leader"),
            ("bytes_out", float(s.bytes_out), "bytes served by Fetch"),
            ("replication_bytes_in", float(f.stats.bytes if f else 0), "bytes appended as follower"),
            ("replica_fetch_requests", float(f.stats.fetches if f else 0), "Fetch requests sent as follower"),
            ("follower_truncations", float(f.stats.truncations if f else 0), "follower log truncations"),
            ("fetcher_partitions", float(f.partition_count() if f else 0), "partitions being fetched"),
            ("follower_throttled_bytes", float(self.follower_quota.throttled_bytes),
             "bytes fetched for replicas under a reassignment throttle"),
            ("follower_throttle_rate", float(self.follower_quota.rate or 0),
             "follower.replication.throttled.rate in force (0: none)"),
            ("delayed_produce", float(len(self.produce_purgatory) if self.produce_purgatory else 0),
             "acks=all produce requests parked"),
            ("delayed_fetch", float(len(self.fetch_purgatory) if self.fetch_purgatory else 0), "fetch requests parked"),
        ]

    # ------------------------------------------------------------------ dynamic config
    def _set_topic_config(self, topic: str, config: dict[str, str]) -> None:
        self.topic_configs[topic] = config
        try:
            throttled = parse_throttled_replicas(config.get(FOLLOWER_THROTTLED_REPLICAS))
        except ValueError as e:
            log.warning("topic %s: ignoring %s: %s", topic, FOLLOWER_THROTTLED_REPLICAS, e)
            throttled = NO_THROTTLED_REPLICAS
        if throttled.empty:
            self.follower_throttled.pop(topic, None)
        else:
            self.follower_throttled[topic] = throttled

    def is_follower_throttled(self, tp: TopicPartition) -> bool:
        """Whether our replica of `tp` is one a reassignment throttle covers."""
        throttled = self.follower_throttled.get(tp.topic)
        return throttled is not None and throttled.covers(tp.partition, self.broker_id)

    def apply_broker_config(self, config: dict[str, str]) -> None:
        """This broker's dynamic config (`/config/brokers/...`): the follower throttle rate
        and the broker-wide defaults of log configs."""
        self._apply_dynamic_log_defaults({k: v for k, v in config.items() if k in DYNAMIC_LOG_KEYS})
        try:
            rate = parse_rate(config.get(FOLLOWER_THROTTLED_RATE))
        except ValueError as e:
            log.warning("ignoring %s: %s", FOLLOWER_THROTTLED_RATE, e)
            rate = None
        if rate != self.follower_quota.rate:
            log.info("follower replication throttle: %s", "off" if rate is None else f"{rate} bytes/s")
        self.follower_quota.set_rate(rate)

    def _apply_dynamic_log_defaults(self, dynamic: dict[str, str]) -> None:
        """New defaults for every log without its own override (Kafka's DynamicLogConfig):
        dynamic values over `server.properties`, then each topic's overrides over both."""
        if dynamic == self.dynamic_log_defaults:
            return
        cfg = self.config
        try:
            default = LogConfig.from_broker_config({**cfg.passed_on_properties(), **dynamic})
        except ConfigError as e:
            log.warning("ignoring the dynamic log defaults %s: %s", dynamic, e)
            return
        self.dynamic_log_defaults = dynamic
        logs = 0
        if self.log_manager is not None:
            self.log_manager.default_config = default
            for tp, lg in self.log_manager:
                lg.update_config(default.with_overrides(self.topic_configs.get(tp.topic, {})))
                logs += 1
        for p in self.partitions.values():
            p.min_insync_replicas = self.min_insync_replicas(p.tp.topic)
        log.info("dynamic log defaults now %s: %d logs reconfigured", dynamic or "none", logs)

    async def on_topic_config_changed(self, topic: str) -> None:
        """A config change notice for `topic`: re-read it if we host any of it."""
        if topic in self.topic_configs or any(tp.topic == topic for tp in self.partitions):
            await self._load_topic_configs({topic})

    def _followed_partition(self, tp: TopicPartition, leader_epoch: int) -> Partition | None:
        p = self.partitions.get(tp)
        if p is None or p.is_leader or p.leader_epoch != leader_epoch:
            return None
        return p

    def min_insync_replicas(self, topic: str) -> int:
        v = self.topic_configs.get(topic, {}).get("min.insync.replicas",
                                                  self.dynamic_log_defaults.get("min.insync.replicas"))
        try:
            return int(v) if v is not None else self.config.min_insync_replicas
        except ValueError:
            return self.config.min_insync_replicas

    # ------------------------------------------------------------------ controller requests
    async def become_leader_or_follower(self, req: LeaderAndIsrRequestData,
                                        still_current: Callable[[], ErrorCode] | None = None) -> ControllerResponseData:
        """Apply a LeaderAndIsr. `still_current` is the fence asked again once the request holds
        the lock and ZooKeeper's topic configs are read (which waits while ZooKeeper is away): a
        request whose broker or controller epoch went stale meanwhile is refused with that error."""
        assert self._state_lock is not None
        async with self._state_lock:
            await self._load_topic_configs({s.tp.topic for s in req.partitions})
            if still_current is not None and (code := still_current()) != ErrorCode.NONE:
                return ControllerResponseData(code)
            await self._create_new_logs(req)
            return self._apply_leader_and_isr(req)

    async def _create_new_logs(self, req: LeaderAndIsrRequestData) -> None:
        """Create the logs of partitions new to this broker off the loop, several at a time,
        so thousands of new partitions neither stall client requests nor take a millisecond
        each in turn (`_apply_leader_and_isr` then finds them)."""
        new = [s.tp for s in req.partitions if s.tp not in self.partitions and self.broker_id in s.replicas
               and not self.storage_refusal(s.tp, s.is_new)]
        if len(new) > 1 and self.log_manager is not None and self.loop is not None:
            await self.loop.run_in_executor(self._io, self.log_manager.create_many, new)

    async def _load_topic_configs(self, topics: set[str]) -> None:
        """Refresh config overrides of these topics (min.insync.replicas, log settings).

        Bounded wait: a LeaderAndIsr must not hang on ZooKeeper; on failure the last
        known (or default) config stays."""
        if self.store is None or not topics:
            return
        store = self.store
        try:
            configs, _bad = await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(
                self._zk_reads, store.get_topic_configs, sorted(topics)), CONFIG_READ_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - keep what we have; ZooKeeper may be away
            log.warning("could not read config of %d topics: %r; keeping the last known", len(topics), e)
            return
        for t in topics:
            self._set_topic_config(t, configs.get(t, {}))
        for p in self.partitions.values():  # a change notice comes without a LeaderAndIsr
            if p.tp.topic in topics:
                p.min_insync_replicas = self.min_insync_replicas(p.tp.topic)
        if self.log_manager is not None:
            for tp, lg in self.log_manager:
                if tp.topic in topics:
                    lg.update_config(self.log_manager.default_config.with_overrides(self.topic_configs[tp.topic]))

    def _apply_leader_and_isr(self, req: LeaderAndIsrRequestData) -> ControllerResponseData:
        assert self.log_manager is not None
        assert self.fetchers is not None
        errors: dict[TopicPartition, int] = {}
        leaders: list[Partition] = []
        became_leader: list[Partition] = []  # not leader before this request (Kafka's makeLeaders result)
        followers: list[tuple[Partition, PartitionLeaderState]] = []
        live = {b.id: b for b in req.live_leaders}
        now = now_ms()
        for s in req.partitions:
            if self.broker_id not in s.replicas:
                errors[s.tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            cur = self.partitions.get(s.tp)
            if cur is not None and s.leader_epoch <= cur.leader_epoch:
                errors[s.tp] = ErrorCode.STALE_CONTROLLER_EPOCH
                continue
            if cur is None and self.storage_refusal(s.tp, s.is_new):
                errors[s.tp] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            try:
                p = cur or self._new_partition(s.tp)
            except Exception as e:  # noqa: BLE001 - one bad log must not fail the others
                log.error("cannot open the log of %s: %s", s.tp, e)
                errors[s.tp] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            p.min_insync_replicas = self.min_insync_replicas(s.tp.topic)
            if s.leader == self.broker_id:
                if not p.is_leader:
                    became_leader.append(p)
                self.fetchers.remove(s.tp)
                p.make_leader(s, now)
                leaders.append(p)
            else:
                p.make_follower(s)
                followers.append((p, s))
            errors[s.tp] = ErrorCode.NONE
        no_leader = 0
        for p, s in followers:
            leader = live.get(s.leader) or (self.metadata_cache.live_brokers.get(s.leader)
                                            if self.metadata_cache else None)
            if leader is None or self.shutting_down:
                self.fetchers.remove(p.tp)
                no_leader += leader is None
            else:
                self.fetchers.add(p.tp, leader, s.leader_epoch)
        self.fetchers.shutdown_idle()
        for p in leaders:
            self._partition_changed(p.tp)
        for p, _ in followers:
            self._partition_changed(p.tp)
        self._tell_leadership([(p.tp, p.leader_epoch) for p in became_leader], [p.tp for p, _ in followers])
        stale = sum(1 for c in errors.values() if c == ErrorCode.STALE_CONTROLLER_EPOCH)
        storage = sum(1 for c in errors.values() if c == ErrorCode.KAFKA_STORAGE_ERROR)
        log.info(
            "LeaderAndIsr from controller %d epoch %d: %d leaders, %d followers (%d without a live leader), "
            "%d stale, %d in offline log dirs",
            req.controller_id, req.controller_epoch, len(leaders), len(followers), no_leader, stale, storage,
        )
        return ControllerResponseData(ErrorCode.NONE, errors)

    def _new_partition(self, tp: TopicPartition) -> Partition:
        assert self.log_manager is not None
        lg = self.log_manager.get_or_create(tp)
        p = Partition(tp, lg, self.broker_id)
        p.high_watermark = min(self._hw_checkpoint.get(tp, 0), lg.log_end_offset)
        self.partitions[tp] = p
        return p

    async def stop_replicas(self, req: StopReplicaRequestData) -> ControllerResponseData:
        assert self._state_lock is not None
        async with self._state_lock:
            return self._apply_stop_replica(req)

    def _apply_stop_replica(self, req: StopReplicaRequestData) -> ControllerResponseData:
        errors: dict[TopicPartition, int] = {}
        stopped = deleted = 0
        for sp in req.partitions:
            if sp.tp in self.offline_partitions:
                errors[sp.tp] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            cur = self.partitions.get(sp.tp)
            if cur is not None and sp.leader_epoch >= 0 and sp.leader_epoch < cur.leader_epoch:
                errors[sp.tp] = ErrorCode.FENCED_LEADER_EPOCH
                continue
            self._stop_serving(sp.tp)
            stopped += 1
            if sp.delete:
                try:
                    if self.log_manager is not None and self.log_manager.delete(sp.tp):
                        deleted += 1
                except Exception as e:  # noqa: BLE001
                    log.error("deleting the log of %s failed: %s", sp.tp, e)
                    errors[sp.tp] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
                self._hw_checkpoint.pop(sp.tp, None)
            errors[sp.tp] = ErrorCode.NONE
        if self.fetchers is not None:
            self.fetchers.shutdown_idle()
        log.info("StopReplica from controller %d: %d stopped, %d logs deleted", req.controller_id, stopped, deleted)
        return ControllerResponseData(ErrorCode.NONE, errors)

    def _stop_serving(self, tp: TopicPartition) -> None:
        self.mover.cancel(tp)
        if self.fetchers is not None:
            self.fetchers.remove(tp)
        p = self.partitions.pop(tp, None)
        if p is not None:
            self._hw_checkpoint[tp] = p.high_watermark
            self._partition_changed(tp)
            if p.is_leader:
                self._tell_leadership([], [tp])

    def _tell_leadership(self, led: list[tuple[TopicPartition, int]], not_led: list[TopicPartition]) -> None:
        for listener in self.leadership_listeners:
            try:
                listener(led, not_led)
            except Exception:  # noqa: BLE001 - a listener's failure must not fail the LeaderAndIsr
                log.exception("leadership listener failed")

    def on_metadata_update(self, live_brokers: Mapping[int, BrokerInfo], deleted: Iterable[TopicPartition]) -> None:
        """UpdateMetadata: stop serving partitions of deleted topics; follow moved endpoints."""
        n = 0
        for tp in deleted:
            if tp in self.partitions:
                self._stop_serving(tp)
                n += 1
        if self.fetchers is not None:
            self.fetchers.update_sources(dict(live_brokers))
            if n:
                self.fetchers.shutdown_idle()
        if n:
            log.info("stopped serving %d partitions of deleted topics", n)

    # ------------------------------------------------------------------ data path hooks
    def _partition_changed(self, tp: TopicPartition) -> None:
        """Leadership, ISR or high watermark changed: re-check parked requests."""
        if self.produce_purgatory is not None:
            self.produce_purgatory.check(tp)
        if self.fetch_purgatory is not None:
            self.fetch_purgatory.check(tp)

    def after_leader_append(self, p: Partition) -> None:
        if p.maybe_increment_high_watermark():
            self.produce_purgatory.check(p.tp)  # type: ignore[union-attr]  # set in start(), before any append
        self.fetch_purgatory.check(p.tp)  # type: ignore[union-attr]  # set in start(), before any append

    def _on_follower_append(self, p: Partition) -> None:
        """Followers serve no clients; nothing is parked on them."""

    def record_follower_fetch(self, p: Partition, replica_id: int, fetch_offset: int,
                              log_start_offset: int = -1) -> None:
        """A follower fetched at `fetch_offset`: its progress, the HW, maybe an ISR expansion."""
        moved, join = p.update_follower(replica_id, fetch_offset, now_ms(), log_start_offset)
        if log_start_offset >= 0 and self.delete_records_purgatory is not None:
            self.delete_records_purgatory.check(p.tp)
        if moved:
            self.produce_purgatory.check(p.tp)  # type: ignore[union-attr]  # set in start(), before any append
            self.fetch_purgatory.check(p.tp)  # type: ignore[union-attr]  # set in start(), before any append
        if join:
            self.isr.maybe_expand(p, replica_id)

    def produce_status(self, tp: TopicPartition, required_offset: int) -> int | None:
        """acks=all: the error code once decided, None while waiting.

        A new leader epoch with us still leader keeps the wait (a leader never truncates,
        so the batch is still there); losing leadership answers at once, because every
        role change re-checks parked requests before any truncation can happen."""
        p = self.partitions.get(tp)
        if p is None or not p.is_leader:
            return ErrorCode.KAFKA_STORAGE_ERROR if tp in self.offline_partitions else ErrorCode.NOT_LEADER_OR_FOLLOWER
        if p.high_watermark >= required_offset:
            if len(p.isr) >= p.min_insync_replicas:
                return ErrorCode.NONE
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return None

    def low_watermark_status(self, tp: TopicPartition, required_offset: int) -> int | None:
        """DeleteRecords: the error code once every in-sync replica's log start reached
        `required_offset`, None while waiting."""
        p = self.partitions.get(tp)
        if p is None or not p.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.NONE if p.low_watermark() >= required_offset else None

    def park_delete_records(self, waits: dict[TopicPartition, ProduceWait], timeout_ms: int) -> asyncio.Future[Any]:
        assert self.delete_records_purgatory is not None
        assert self.loop is not None
        op = DelayedProduce(self.loop, waits, self.low_watermark_status)
        return self.delete_records_purgatory.watch(op, list(waits), timeout_ms)

    def park_produce(self, waits: dict[TopicPartition, ProduceWait], timeout_ms: int) -> asyncio.Future[Any]:
        assert self.produce_purgatory is not None
        assert self.loop is not None
        op = DelayedProduce(self.loop, waits, self.produce_status)
        return self.produce_purgatory.watch(op, list(waits), timeout_ms)

    def park_fetch(self, min_bytes: int, keys: list[TopicPartition], available: Callable[[TopicPartition], int],
                   timeout_ms: int) -> asyncio.Future[Any]:
        assert self.fetch_purgatory is not None
        assert self.loop is not None
        op = DelayedFetch(self.loop, min_bytes, keys, available)
        return self.fetch_purgatory.watch(op, keys, timeout_ms)

    # ------------------------------------------------------------------ ISR upkeep
    def maybe_shrink_isr(self) -> None:
        """Kafka's ReplicaManager.maybeShrinkIsr: every led partition's laggards out (`isr.py`)."""
        self.isr.maybe_shrink()

    # ------------------------------------------------------------------ checkpoints, retention
    def _hw_snapshot(self) -> dict[TopicPartition, int]:
        hws = dict(self._hw_checkpoint)
        for tp, p in self.partitions.items():
            hws[tp] = p.high_watermark
        return hws

    def _write_hw_files(self, hws: dict[TopicPartition, int]) -> None:
        lm = self.log_manager
        if lm is None:
            return
        by_dir: dict[str, dict[TopicPartition, int]] = {d: {} for d in lm.live_log_dirs}
        for tp, hw in hws.items():
            d = lm.log_dir_of(tp)
            if d in by_dir:
                by_dir[d][tp] = hw
        for d, entries in by_dir.items():
            try:
                lm.high_watermark_file(d).write(entries)
            except OSError as e:
                lm.failure_channel.report(d, e)

    async def _checkpoint_hw(self) -> None:
        snap = self._hw_snapshot()
        await asyncio.get_running_loop().run_in_executor(self._io, self._write_hw_files, snap)

    async def _checkpoint_recovery_points(self) -> None:
        if self.log_manager is not None:
            await asyncio.get_running_loop().run_in_executor(self._io, self.log_manager.checkpoint)

    def _retention(self) -> None:
        if self.log_manager is not None:
            self.log_manager.retention_pass(high_watermarks=self._hw_snapshot())
