"""All partition logs of a broker, across its `log.dirs`.

Start-up, per log dir (one that fails with an I/O error is offline from the start, as
Kafka; if every dir fails, start-up fails): 1. take `.lock` (flock) so two brokers never share a dir,
2. read `recovery-point-offset-checkpoint` and `log-start-offset-checkpoint`, 3. note
and remove `.kafka_cleanshutdown` (present only if the last stop was clean),
4. remove `*-delete` directories left by an interrupted delete, 5. open every
`<topic>-<partition>` directory with its recovery point (recovery work is skipped
after a clean shutdown).

Running: `get_or_create` puts new partitions in the live dir holding the fewest logs
(Kafka's nextLogDirs); an I/O error of a dir (in a log, a checkpoint) reports it to
`failure_channel`, and `handle_dir_failure(dir)` then drops its logs (their replicas are
offline until a restart);
`start_cleaner()` starts the log cleaner threads (`praha.log.cleaner`) for compacted logs;
`checkpoint()` writes the recovery points and log start offsets (call it periodically,
Kafka does every 60 s); `retention_pass(now)` applies retention to every log.

Moves between dirs (AlterReplicaLogDirs, driven by praha/broker/replication/log_dir_mover.py):
`create_future_log(tp, dir)` makes `<topic>-<p>.<uuid>-future` there (not served, not in the
checkpoints; one left by a crash is removed at start-up and the move must be asked again);
`replace_current_with_future(tp)` swaps it in once caught up: the future dir takes the
partition's name (as Kafka, before the old dir is renamed `<topic>-<p>.<uuid>-delete`),
and the old log is deleted later (`delete_replaced`), so in-flight reads finish. A partition
not hosted yet may be given a preferred dir for when it is created.

Shutdown: close (flush) every log, write the checkpoints, write the clean-shutdown
marker, release the locks. `replication-offset-checkpoint` (high watermarks) belongs to
the replica manager; `high_watermark_file(dir)` hands out the file to write.
"""
from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor

from praha.common import TopicPartition
from praha.log.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    fsync_dir,
)
from praha.log.cleaner import CleanerConfig, LogCleaner
from praha.log.config import LogConfig
from praha.log.dir_failure import LogDirFailureChannel
from praha.log.errors import CorruptCheckpointError, LogStorageError
from praha.log.log import Log, parse_log_dir_name

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"

log = logging.getLogger(__name__)


class LogManager:
    """Owns every `Log` of the broker; thread-safe for create/delete/lookup."""

    def __init__(
        self,
        log_dirs: list[str],
        default_config: LogConfig | None = None,
        topic_config: Callable[[str], Mapping[str, str | int]] | None = None,
        cleaner_config: CleanerConfig | None = None,
    ):
        if not log_dirs:
            raise LogStorageError("no log directories configured")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.default_config = default_config or LogConfig()
        self._topic_config = topic_config
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        self._logs_in_dir: dict[str, int] = {d: 0 for d in self.log_dirs}
        self._lock = threading.RLock()
        self._lock_fds: list[int] = []
        self._started = False
        self.cleaner_config = cleaner_config
        self.cleaner: LogCleaner | None = None
        self.failure_channel = LogDirFailureChannel()
        #: partition → (its future log, that log's dir): a move between dirs in progress
        self._futures: dict[TopicPartition, tuple[Log, str]] = {}
        #: partition not hosted yet → the dir it should be created in (AlterReplicaLogDirs)
        self._preferred_dirs: dict[TopicPartition, str] = {}

    # -- start-up ----------------------------------------------------------------------
    def startup(self) -> None:
        """Lock the dirs and open (recovering as needed) every partition log in them."""
        t0 = time.monotonic()
        for d in self.log_dirs:
            try:
                os.makedirs(d, exist_ok=True)
                self._lock_dir(d)
            except OSError as e:
                self.failure_channel.report(d, e)
        for d in self.live_log_dirs:
            try:
                self._load_dir(d)
            except OSError as e:
                self.failure_channel.report(d, e)
                self._forget_dir(d)
        if not self.live_log_dirs:
            self._unlock_dirs()
            raise LogStorageError(f"every log directory failed: {self.failure_channel.offline_dirs()}")
        self._started = True
        log.info("Loaded %d logs from %d dirs in %.2f s", len(self._logs), len(self.log_dirs), time.monotonic() - t0)

    def _lock_dir(self, d: str) -> None:
        fd = os.open(os.path.join(d, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            self._unlock_dirs()
            raise LogStorageError(f"log dir {d} is locked by another process") from None
        self._lock_fds.append(fd)

    def _unlock_dirs(self) -> None:
        for fd in self._lock_fds:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._lock_fds = []

    def _read_checkpoint(self, d: str, name: str) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(os.path.join(d, name)).read()
        except CorruptCheckpointError as e:
            log.warning("%s; recovering every log in %s", e, d)
            return {}

    def _load_dir(self, d: str) -> None:
        recovery_points = self._read_checkpoint(d, RECOVERY_POINT_CHECKPOINT)
        log_starts = self._read_checkpoint(d, LOG_START_OFFSET_CHECKPOINT)
        marker = os.path.join(d, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if not os.path.isdir(path):
                continue
            if name.endswith(DELETE_DIR_SUFFIX) or name.endswith(FUTURE_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)  # an interrupted delete, or move
                continue
            tp = parse_log_dir_name(name)
            if tp is None:
                continue
            if tp in self._logs:
                raise LogStorageError(f"{tp} exists in both {self._dir_of[tp]} and {d}")
            self._logs[tp] = Log(
                path,
                self._config_for(tp.topic),
                recovery_point=recovery_points.get(tp),
                log_start_offset=log_starts.get(tp),
                clean_shutdown=clean,
                on_io_error=self._io_error_reporter(d),
            )
            self._dir_of[tp] = d
            self._logs_in_dir[d] += 1
        if clean:
            os.unlink(marker)  # from now on a crash is an unclean shutdown
            fsync_dir(d)

    def _io_error_reporter(self, d: str) -> Callable[[OSError], None]:
        channel = self.failure_channel

        def report(e: OSError) -> None:
            channel.report(d, e)

        return report

    def _config_for(self, topic: str) -> LogConfig:
        if self._topic_config is None:
            return self.default_config
        return self.default_config.with_overrides(self._topic_config(topic))

    # -- lookup and lifecycle of logs --------------------------------------------------
    def get(self, tp: TopicPartition) -> Log | None:
        return self._logs.get(tp)

    def get_or_create(self, tp: TopicPartition, config: LogConfig | None = None) -> Log:
        with self._lock:
            existing = self._logs.get(tp)
            if existing is not None:
                return existing
            d = self._preferred_or_least_loaded_dir(tp)
            path = os.path.join(d, f"{tp.topic}-{tp.partition}")
            try:
                lg = Log(path, config or self._config_for(tp.topic), on_io_error=self._io_error_reporter(d))
                fsync_dir(d)
            except OSError as e:
                self.failure_channel.report(d, e)
                raise LogStorageError(f"creating the log of {tp} in {d} failed: {e}") from e
            self._logs[tp] = lg
            self._dir_of[tp] = d
            self._logs_in_dir[d] += 1
            log.debug("Created log for %s in %s", tp, d)
            return lg

    def create_many(self, tps: list[TopicPartition], threads: int = 4) -> int:
        """Create the logs of `tps` that do not exist yet, `threads` at a time (a new log is
        a directory and four files: file-system calls, which run in parallel), then make the
        new directories durable with one fsync per log dir. For a LeaderAndIsr that brings
        thousands of new partitions. Returns how many were created; a log that fails is
        left for `get_or_create` to retry (and report)."""
        with self._lock:
            todo = []
            for tp in dict.fromkeys(tps):
                if tp not in self._logs:
                    d = self._preferred_or_least_loaded_dir(tp)
                    self._logs_in_dir[d] += 1  # reserved, so the spread stays even
                    todo.append((tp, d))
        if not todo:
            return 0

        def create(item: tuple[TopicPartition, str]) -> Log | None:
            tp, d = item
            try:
                return Log(os.path.join(d, f"{tp.topic}-{tp.partition}"), self._config_for(tp.topic),
                           on_io_error=self._io_error_reporter(d))
            except Exception as e:  # noqa: BLE001 - get_or_create tries again and reports
                log.warning("creating the log of %s failed: %s", tp, e)
                return None

        if len(todo) == 1 or threads <= 1:
            made = [create(item) for item in todo]
        else:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="log-create") as pool:
                made = list(pool.map(create, todo))
        for d in {d for (_, d), lg in zip(todo, made) if lg is not None}:
            try:
                fsync_dir(d)
            except OSError as e:
                self.failure_channel.report(d, e)
        created = 0
        with self._lock:
            for (tp, d), lg in zip(todo, made):
                self._logs_in_dir[d] = max(self._logs_in_dir[d] - 1, 0)
                if lg is None:
                    continue
                if self.failure_channel.is_offline(d):  # failed meanwhile: not a log to serve
                    lg.abandon()
                    continue
                self._logs[tp] = lg
                self._dir_of[tp] = d
                self._logs_in_dir[d] += 1
                created += 1
        log.info("created %d logs (%d threads)", created, threads)
        return created

    def _least_loaded_dir(self) -> str:
        """The live dir holding the fewest logs; ties go to the first listed (Kafka's nextLogDirs)."""
        live = self.live_log_dirs
        if not live:
            raise LogStorageError("no live log directory")
        return least_loaded_dir(live, self._logs_in_dir)

    def _preferred_or_least_loaded_dir(self, tp: TopicPartition) -> str:
        preferred = self._preferred_dirs.pop(tp, None)
        if preferred is not None and not self.failure_channel.is_offline(preferred):
            return preferred
        return self._least_loaded_dir()

    def prefer_dir(self, tp: TopicPartition, d: str) -> None:
        """Create `tp` in `d` when it comes (Kafka's maybeUpdatePreferredLogDir)."""
        with self._lock:
            if tp not in self._logs:
                self._preferred_dirs[tp] = d

    # -- moves between dirs ------------------------------------------------------------
    def future_log(self, tp: TopicPartition) -> tuple[Log, str] | None:
        return self._futures.get(tp)

    def future_logs(self) -> list[tuple[TopicPartition, Log, str]]:
        with self._lock:
            return [(tp, lg, d) for tp, (lg, d) in self._futures.items()]

    def create_future_log(self, tp: TopicPartition, d: str) -> Log:
        """An empty log for `tp` in dir `d` that nobody serves: the copy target of a move."""
        with self._lock:
            if tp not in self._logs:
                raise LogStorageError(f"{tp} has no log to move")
            path = os.path.join(d, f"{tp.topic}-{tp.partition}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}")
            try:
                lg = Log(path, self._config_for(tp.topic), on_io_error=self._io_error_reporter(d))
                fsync_dir(d)
            except OSError as e:
                self.failure_channel.report(d, e)
                raise LogStorageError(f"creating the future log of {tp} in {d} failed: {e}") from e
            self._futures[tp] = (lg, d)
        log.info("Created future log of %s in %s", tp, d)
        return lg

    def drop_future_log(self, tp: TopicPartition) -> bool:
        """Abandon a move: the future log and its directory go."""
        with self._lock:
            entry = self._futures.pop(tp, None)
        if entry is None:
            return False
        entry[0].delete()
        return True

    def replace_current_with_future(self, tp: TopicPartition) -> tuple[Log, Log, str]:
        """Swap in the caught-up future log of `tp`; the caller makes sure nothing appends to
        either meanwhile. Returns (the new current log, the replaced one, where the replaced
        one's files now are): pass the last two to `delete_replaced` once reads are done."""
        name = f"{tp.topic}-{tp.partition}"
        with self._lock:
            future, d = self._futures.pop(tp)
            current, old_dir = self._logs[tp], self._dir_of[tp]
            if future.log_end_offset != current.log_end_offset:
                raise LogStorageError(f"future log of {tp} is not caught up")
            future.close()
            try:
                os.rename(future.dir, os.path.join(d, name))
                doomed = os.path.join(old_dir, f"{name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
                os.rename(current.dir, doomed)
                fsync_dir(d)
                fsync_dir(old_dir)
                new = Log(os.path.join(d, name), current.config, recovery_point=future.log_end_offset,
                          log_start_offset=current.log_start_offset, clean_shutdown=True,
                          on_io_error=self._io_error_reporter(d))
            except OSError as e:
                self.failure_channel.report(d, e)
                raise LogStorageError(f"swapping in the future log of {tp} failed: {e}") from e
            for entry in current.epoch_cache.entries:  # epochs begun at the log end, with no batch yet
                if entry.epoch > new.latest_epoch:
                    new.epoch_cache.assign(entry.epoch, entry.start_offset)
            self._logs[tp] = new
            self._dir_of[tp] = d
            self._logs_in_dir[old_dir] = max(self._logs_in_dir[old_dir] - 1, 0)
            self._logs_in_dir[d] += 1
        log.info("Moved %s from %s to %s (log end %d)", tp, old_dir, d, new.log_end_offset)
        return new, current, doomed

    @staticmethod
    def delete_replaced(old: Log, doomed: str) -> None:
        """Close and remove a log replaced by its future log."""
        old.abandon()
        shutil.rmtree(doomed, ignore_errors=True)

    @property
    def live_log_dirs(self) -> list[str]:
        """`log.dirs` that have not failed, in their configured order."""
        channel = self.failure_channel
        return [d for d in self.log_dirs if not channel.is_offline(d)]

    def offline_log_dirs(self) -> list[str]:
        channel = self.failure_channel
        return [d for d in self.log_dirs if channel.is_offline(d)]

    def handle_dir_failure(self, d: str) -> list[TopicPartition]:
        """Forget the logs of failed dir `d` (closing their files without writing) and return
        their partitions: they are offline on this broker until it restarts."""
        return self._forget_dir(d)

    def _forget_dir(self, d: str) -> list[TopicPartition]:
        with self._lock:
            gone = [tp for tp, dd in self._dir_of.items() if dd == d]
            logs = [self._logs.pop(tp) for tp in gone]
            for tp in gone:
                del self._dir_of[tp]
            self._logs_in_dir[d] = 0
            for tp in [tp for tp, (_, fd) in self._futures.items() if fd == d or tp in gone]:
                logs.append(self._futures.pop(tp)[0])  # a move into, or of a log in, the failed dir
        for lg in logs:
            try:
                lg.abandon()
            except Exception as e:  # noqa: BLE001 - the disk is gone; nothing more to save
                log.debug("closing %s after its dir failed: %s", lg.dir, e)
        return gone

    def delete(self, tp: TopicPartition) -> bool:
        """Remove the partition's log and its files (StopReplica with delete)."""
        with self._lock:
            lg = self._logs.pop(tp, None)
            d = self._dir_of.pop(tp, None)
            if d is not None:
                self._logs_in_dir[d] -= 1
        if lg is None:
            return False
        lg.delete()
        return True

    def log_dir_of(self, tp: TopicPartition) -> str | None:
        return self._dir_of.get(tp)

    def __iter__(self) -> Iterator[tuple[TopicPartition, Log]]:
        return iter(list(self._logs.items()))

    def __len__(self) -> int:
        return len(self._logs)

    # -- periodic work -----------------------------------------------------------------
    def checkpoint(self) -> None:
        """Write each dir's recovery points and log start offsets."""
        with self._lock:
            by_dir: dict[str, dict[TopicPartition, Log]] = {d: {} for d in self.live_log_dirs}
            for tp, lg in self._logs.items():
                logs = by_dir.get(self._dir_of[tp])
                if logs is not None:  # a failed dir's logs are being dropped
                    logs[tp] = lg
        for d, logs in by_dir.items():
            if self.failure_channel.is_offline(d):
                continue
            try:
                OffsetCheckpointFile(os.path.join(d, RECOVERY_POINT_CHECKPOINT)).write(
                    {tp: lg.recovery_point for tp, lg in logs.items()})
                OffsetCheckpointFile(os.path.join(d, LOG_START_OFFSET_CHECKPOINT)).write(
                    {tp: lg.log_start_offset for tp, lg in logs.items()})
            except OSError as e:
                self.failure_channel.report(d, e)

    def start_cleaner(self, high_watermark: Callable[[TopicPartition], int | None] | None = None) -> None:
        """Start the log cleaner threads (if `log.cleaner.enable`); cleaning stays below
        `high_watermark(tp)` when that is given."""
        cfg = self.cleaner_config
        if cfg is None or not cfg.enable or self.cleaner is not None:
            return
        self.cleaner = LogCleaner(cfg, self._cleanable_logs, high_watermark, self.failure_channel.report)
        self.cleaner.start()

    def _cleanable_logs(self) -> list[tuple[TopicPartition, Log, str]]:
        with self._lock:
            return [(tp, lg, self._dir_of[tp]) for tp, lg in self._logs.items() if tp in self._dir_of]

    def high_watermark_file(self, d: str) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(os.path.join(d, REPLICATION_OFFSET_CHECKPOINT))

    def retention_pass(self, now_ms: int | None = None,
                       high_watermarks: Mapping[TopicPartition, int] | None = None) -> int:
        """Apply retention to every log; returns the number of segments deleted."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        deleted = 0
        for tp, lg in self:
            hw = high_watermarks.get(tp) if high_watermarks is not None else None
            try:
                deleted += lg.delete_retention_segments(now, hw)
            except LogStorageError:
                continue  # deleted or closed meanwhile
            except OSError as e:
                d = self._dir_of.get(tp)
                if d is not None:
                    self.failure_channel.report(d, e)
        return deleted

    def shutdown(self) -> None:
        """Stop the cleaner; close every log, write checkpoints and the clean-shutdown marker, unlock."""
        if self.cleaner is not None:
            self.cleaner.shutdown()
            self.cleaner = None
        for tp in list(self._futures):  # an unfinished move starts over when asked again
            self.drop_future_log(tp)
        for tp, lg in self:
            try:
                lg.close()
            except (OSError, LogStorageError) as e:
                d = self._dir_of.get(tp)
                if d is not None:
                    self.failure_channel.report(d, e)
        self.checkpoint()
        for d in self.live_log_dirs:  # a dir that failed gets no marker: it is recovered at the next start
            try:
                with open(os.path.join(d, CLEAN_SHUTDOWN_FILE), "wb") as f:
                    os.fsync(f.fileno())
                fsync_dir(d)
            except OSError as e:
                self.failure_channel.report(d, e)
        self._unlock_dirs()
        log.info("Log manager shut down cleanly (%d logs)", len(self._logs))


def least_loaded_dir(dirs: list[str], logs_in_dir: Mapping[str, int]) -> str:
    """Of `dirs`, the one holding the fewest logs; the first listed on a tie."""
    return min(dirs, key=lambda d: logs_in_dir.get(d, 0))
