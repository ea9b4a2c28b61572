"""The log of one partition: a directory `<topic>-<partition>/` of segments.

Appends (leader, follower, transaction marker) run through one function, `_append`, in one
pass as Kafka's `UnifiedLog.append`: validate, one producer-state analysis, offsets from the
log end (leader), write with rolls, each batch's producer state recorded as it lands, new
leader epochs noted (its docstring lists the steps).

Read: find the segment by base offset, the first batch holding the start offset, then
whole batches up to `max_bytes` that end below `max_offset` (the high watermark; the
partition owns it), at least one batch if asked. Reads take no lock: structural
changes replace the segment list, and removed segments are renamed `*.deleted` and
closed only after `file_delete_delay_ms`, so an in-flight read still works.

Transactions: every append feeds transactional batches and markers to the producer table
(`producer_state`; built, snapshotted and replayed by `producer_state_manager`), which knows
each open transaction's first offset; an ABORT marker adds an entry to the aborted-transaction
index of the segment it lands in (`txn_index`), on the leader and on followers alike.
`last_stable_offset(hw)` bounds read_committed reads and `collect_aborted_transactions`
answers their `aborted_transactions`. Recovery that checks segments rebuilds their
aborted-transaction indexes by replaying producer state from the newest snapshot before them.
What a read hands out (`LogSlice`, `FileRegion`, `ReadResult`) is `slices`.

Writes (appends, truncation, rolls, retention, the cleaner's swap) hold the log's lock.
The cleaner (`cleaner`) reads sealed segments without it and swaps its output in with
`replace_segments`; a truncation bumps `generation`, which makes a pending swap abort. When a segment
rolls, its fsync runs on a background thread; the recovery point then advances to
the new segment's base.
"""
from __future__ import annotations

import bisect
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from praha.common import TopicPartition
from praha.common import now_ms as wall_clock_ms
from praha.log.batch import (
    CONTROL_MASK,
    MAX_RELATIVE_OFFSET,
    NO_TIMESTAMP,
    TRANSACTIONAL_MASK,
    BatchHeader,
    Buffer,
    assign_offsets,
    stamp_log_append_time,
    validate,
)
from praha.log.checkpoints import fsync_dir
from praha.log.config import LogConfig
from praha.log.control import ControlType, TxnMarker, build_marker_batch
from praha.log.errors import (
    LogStorageError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    UnexpectedAppendOffsetError,
)
from praha.log.leader_epoch import LEADER_EPOCH_CHECKPOINT, LeaderEpochCache
from praha.log.producer_snapshot import SnapshotEntry
from praha.log.producer_state import AppendOrigin, ProducerAppendInfo, ProducerStateTable
from praha.log.producer_state_manager import ProducerStateManager, aborted_entry
from praha.log.recovery import load_segments
from praha.log.segment import CLEANED_SUFFIX, SWAP_SUFFIX, LogSegment
from praha.log.slices import FileRegion as FileRegion
from praha.log.slices import LogSlice, ReadResult
from praha.log.txn_index import AbortedTxn
from praha.log.validator import RecordRules, validate_records

log = logging.getLogger(__name__)

_flusher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="praha-log-flush")
_TXN_BITS = TRANSACTIONAL_MASK | CONTROL_MASK



def _append_info(batches: Sequence[BatchHeader]) -> AppendInfo:
    """Where appended batches landed (their headers as written)."""
    best = max(batches, key=lambda h: h.max_timestamp)  # the first of equals
    return AppendInfo(batches[0].base_offset, batches[-1].last_offset, best.max_timestamp,
                      best.last_offset if best.max_timestamp >= 0 else -1, sum(h.record_count for h in batches),
                      len(batches), sum(h.size for h in batches))


def parse_log_dir_name(name: str) -> TopicPartition | None:
    """`<topic>-<partition>` → TopicPartition; None for anything else (e.g. `-delete` dirs)."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        return None
    return TopicPartition(topic, int(part))


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """Where an append landed; offsets are -1 when no batches were given."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    batch_count: int = 0
    size_bytes: int = 0
    #: an idempotent producer's retry of a batch already in the log (nothing appended)
    duplicate: bool = False
    #: the leader's clock stamped on the batches (LogAppendTime topics), else -1
    log_append_time: int = -1


class Log:
    """Append, read, truncate and retain the segments of one partition directory."""

    def __init__(
        self,
        directory: str,
        config: LogConfig | None = None,
        *,
        recovery_point: int | None = None,
        log_start_offset: int | None = None,
        clean_shutdown: bool = False,
        on_io_error: Callable[[OSError], None] | None = None,
    ):
        self.dir = directory
        #: told of an I/O error of the disk (append, roll, flush, read, truncate): the log
        #: manager takes the whole log directory offline (Kafka's LogDirFailureChannel)
        self._on_io_error = on_io_error
        self.config = config or LogConfig()
        self.topic_partition = parse_log_dir_name(os.path.basename(os.path.normpath(directory)))
        self._lock = threading.RLock()
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._flush_future: Future[None] | None = None
        self._generation = 0  # bumped by truncations so a late background flush cannot raise the recovery point
        self._closed = False
        #: the first I/O error of this log: every later operation is refused with it (see io_error)
        self._failed: str | None = None
        os.makedirs(directory, exist_ok=True)
        self.epoch_cache = LeaderEpochCache(os.path.join(directory, LEADER_EPOCH_CHECKPOINT))
        self._pstate = ProducerStateManager(directory)
        self._rules: tuple[LogConfig, RecordRules] | None = None
        self._load(recovery_point, log_start_offset, clean_shutdown)

    # -- loading -----------------------------------------------------------------------
    def _load(self, recovery_point: int | None, log_start_offset: int | None, clean_shutdown: bool) -> None:
        epochs: list[tuple[int, int]] = []
        segments, report = load_segments(
            self.dir, self.config, recovery_point=recovery_point, clean_shutdown=clean_shutdown, epochs_out=epochs
        )
        if not segments:
            segments = [LogSegment.create(self.dir, max(log_start_offset or 0, 0), self.config.index_interval_bytes)]
        self._set_segments(segments)
        active = segments[-1]
        active.ensure_indexes()
        self._leo = active.next_offset if active.next_offset is not None else active.base_offset
        start = max(log_start_offset or 0, segments[0].base_offset)
        self._log_start = min(start, self._leo)
        self._recovery_point = self._leo if clean_shutdown else min(max(recovery_point or 0, 0), self._leo)
        stale = [o for o in self._pstate.snapshots() if o > self._leo]
        if stale:  # recovery cut the log below them
            self._pstate.delete_snapshots(stale)

        cache = self.epoch_cache
        if cache.needs_rebuild and report.segments == 0:
            cache.flush(durable=False)  # a new log: nothing to rebuild, just create the file
        elif cache.needs_rebuild:
            report.epoch_cache_rebuilt = True
            self._rebuild_epoch_cache()
        else:
            changed = False
            for epoch, offset in epochs:
                changed |= cache.assign(epoch, offset, persist=False)
            if changed:  # recovery found epochs the checkpoint lacked; else it is already right
                cache.flush()
        cache.truncate_from_end(self._leo)
        cache.truncate_from_start(self._log_start)
        if report.first_checked_base is not None:
            self._pstate.rebuild_txn_indexes(self._segments, self._leo, report.first_checked_base)
        if report.eventful:
            log.warning("Recovered log %s (log end %d): %s", self.dir, self._leo, report.describe())
        elif report.segments:
            log.debug("Loaded log %s (log end %d): %s", self.dir, self._leo, report.describe())
        self.last_recovery = report

    def _rebuild_epoch_cache(self) -> None:
        """Refill the epoch cache from every batch header (its checkpoint was lost)."""
        pairs = []
        last = None
        for seg in self._segments:
            for h in seg.scan_headers(0, seg.size):
                if h.leader_epoch != last:
                    pairs.append((h.leader_epoch, h.base_offset))
                    last = h.leader_epoch
        self.epoch_cache.rebuild(pairs)

    def _set_segments(self, segments: list[LogSegment]) -> None:
        """Publish a new segment list (readers keep using the list they already hold)."""
        self._view = (segments, [s.base_offset for s in segments])  # one attribute: swapped atomically
        self._segments = segments
        self._bases = self._view[1]

    # -- properties --------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def recovery_point(self) -> int:
        """Offsets below this are fsynced; recovery after a crash starts from its segment."""
        return self._recovery_point

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def latest_epoch(self) -> int:
        return self.epoch_cache.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch answer for this log: (epoch, end offset) or (-1, -1)."""
        with self._lock:
            return self.epoch_cache.end_offset_for(epoch, self._leo)

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    def __repr__(self) -> str:
        return f"Log({self.dir}, start={self._log_start}, end={self._leo}, segments={len(self._segments)})"

    # -- appending ---------------------------------------------------------------------
    def append_as_leader(self, records: Buffer, leader_epoch: int, now_ms: int | None = None, *,
                         in_place: bool = False, verified: dict[int, object] | None = None) -> AppendInfo:
        """Validate producer batches, give them offsets from the log end, stamp the epoch and
        append (`_append`). With `in_place`, the (writable) `records` are stamped where they lie
        instead of in a copy: for a buffer nobody reads again, like a request frame.
        With `verified` (KIP-890), a transactional batch of a producer with no open
        transaction here is accepted only under the token `begin_verification` gave
        for it, still current (no marker came meanwhile). Raises CorruptBatchError,
        UnsupportedMagicError, InvalidRecordError, MessageTooLargeError,
        RecordListTooLargeError or InvalidTxnStateError (all PrahaError with a code)."""
        return self._append(records, AppendOrigin.CLIENT, leader_epoch, now_ms, in_place=in_place, verified=verified)

    def append_as_follower(self, records: Buffer, now_ms: int | None = None) -> AppendInfo:
        """Append batches fetched from the leader, offsets and epochs as they are.

        Leading batches wholly below the log end are skipped (a refetch after a retry);
        the first new batch must start exactly at the log end and each batch must follow
        the previous one, else UnexpectedAppendOffsetError. Every new partitionLeaderEpoch is cached."""
        return self._append(records, AppendOrigin.REPLICATION, -1, now_ms)

    def append_marker_as_leader(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                                leader_epoch: int, now_ms: int | None = None) -> AppendInfo:
        """Append the marker ending `producer_id`'s transaction (WriteTxnMarkers). Raises
        InvalidProducerEpochError for an epoch older than the producer's here and
        TransactionCoordinatorFencedError for an older coordinator epoch; nothing is
        appended then."""
        now = wall_clock_ms() if now_ms is None else now_ms
        marker = TxnMarker(ControlType.COMMIT if commit else ControlType.ABORT, coordinator_epoch)
        batch = build_marker_batch(producer_id, producer_epoch, marker, now, leader_epoch)
        return self._append(batch, AppendOrigin.COORDINATOR, leader_epoch, now)

    def _append(self, records: Buffer, origin: AppendOrigin, leader_epoch: int, now_ms: int | None, *,
                in_place: bool = False, verified: dict[int, object] | None = None) -> AppendInfo:
        """Every append, in one pass as Kafka's `UnifiedLog.append` reads: each batch is
        validated once, analysed by producer state once, given offsets once, written once
        and its producer state recorded once.

        1. validate framing, magic 2 and CRC; a producer's batches (CLIENT) also record
           counts, sizes and every record against the topic's rules (`validator`);
        2. a follower (REPLICATION) drops the batches it already holds; the rest must
           follow its log end;
        3. under the lock, one producer-state pass (`ProducerStateTable.analyze`):
           idempotence, transaction state, KIP-890 verification, marker fencing; a
           retried batch returns the earlier write and appends nothing;
        4. the leader (CLIENT, COORDINATOR) assigns offsets from the log end and its
           epoch, and stamps LogAppendTime where the topic asks for it;
        5. write, rolling where a batch would overflow the segment, each chunk's
           producer state recorded as it lands (`_write`);
        6. note new leader epochs.

        Before (issue 21), a produced batch went through `append_as_leader`,
        `_check_sequences` (`check_append`), `_check_verified` (`has_ongoing_transaction`),
        `_append_locked`, `_chunks` and `_record_producers` (`record`): three reads of its
        producer's state, and a marker was parsed back from the bytes just built."""
        cfg = self.config
        client = origin is AppendOrigin.CLIENT
        leader = origin is not AppendOrigin.REPLICATION
        now = wall_clock_ms() if now_ms is None else now_ms
        summary = validate(records, strict=client, max_batch_bytes=cfg.max_message_bytes if client else None)
        batches = summary.batches
        if not batches:
            return AppendInfo(-1, -1, NO_TIMESTAMP, -1, 0)
        if client:
            if summary.size_bytes > cfg.segment_bytes:
                raise RecordListTooLargeError(
                    f"append of {summary.size_bytes} bytes exceeds segment.bytes {cfg.segment_bytes}")
            validate_records(records, batches, self._record_rules(), now)
        with self._lock:
            self._check_open()
            if not leader:
                batches = self._batches_to_copy(batches)
                if not batches:
                    return AppendInfo(-1, -1, NO_TIMESTAMP, -1, 0)
            table = self._table_for(origin, batches)
            state = None
            if table is not None:
                state = table.analyze(batches, origin, records, verified=verified, where=self.dir)
            if state is not None and state.duplicate is not None:
                dup = state.duplicate
                return AppendInfo(dup.first_offset, dup.last_offset, NO_TIMESTAMP, -1, 0, duplicate=True)
            first = self._leo
            data: Buffer = records
            if leader:
                rebased: list[BatchHeader] = []
                data = assign_offsets(records, first, leader_epoch, batches=batches, in_place=in_place,
                                      headers_out=rebased)
                batches = rebased
                if client and cfg.log_append_time:
                    batches = stamp_log_append_time(data, batches, now)
            self._write(data, batches, now, table, state)
            if leader:
                if leader_epoch > self.epoch_cache.latest_epoch:
                    self._assign_epoch(leader_epoch, first)
            else:
                cache = self.epoch_cache
                for h in batches:
                    if h.leader_epoch > cache.latest_epoch:
                        self._assign_epoch(h.leader_epoch, h.base_offset)
        if not leader:
            return _append_info(batches)
        last = batches[-1].last_offset
        if client and cfg.log_append_time:
            return AppendInfo(first, last, now, last, summary.record_count, summary.batch_count, summary.size_bytes,
                              log_append_time=now)
        off_max = -1
        if summary.max_timestamp >= 0:
            for h in batches:
                if h.max_timestamp == summary.max_timestamp:
                    off_max = h.last_offset
                    break
        return AppendInfo(first, last, summary.max_timestamp, off_max, summary.record_count, summary.batch_count,
                          summary.size_bytes)

    def _record_rules(self) -> RecordRules:
        """What the topic asks of each produced record (kept until the config changes)."""
        cfg = self.config
        cached = self._rules
        if cached is not None and cached[0] is cfg:
            return cached[1]
        if cfg.log_append_time:  # the producer's timestamps are replaced, not checked (Kafka)
            rules = RecordRules(cfg.compact)
        else:
            rules = RecordRules(cfg.compact, cfg.timestamp_before_max_ms, cfg.timestamp_after_max_ms)
        self._rules = (cfg, rules)
        return rules

    def _batches_to_copy(self, batches: list[BatchHeader]) -> list[BatchHeader]:
        """A follower's fetched batches without those it holds already; raises
        UnexpectedAppendOffsetError unless the rest start at the log end and grow, and
        RecordListTooLargeError for a batch larger than a segment."""
        leo = self._leo
        skip = 0
        while skip < len(batches) and batches[skip].last_offset < leo:
            skip += 1
        batches = batches[skip:]
        if batches and batches[0].base_offset < leo:
            raise UnexpectedAppendOffsetError(
                f"{self.dir}: follower append starts at {batches[0].base_offset}, log end is {leo} (overlap)",
                batches[0].base_offset, leo)
        prev = None
        for h in batches:
            # a compacted leader log has offset gaps (Kafka's followers accept them); offsets
            # must still grow
            if prev is not None and h.base_offset < prev.next_offset:
                raise UnexpectedAppendOffsetError(
                    f"{self.dir}: batch at offset {h.base_offset} does not follow {prev.last_offset}",
                    h.base_offset, leo)
            if h.size > self.config.segment_bytes:
                raise RecordListTooLargeError(
                    f"batch of {h.size} bytes exceeds segment.bytes {self.config.segment_bytes}")
            prev = h
        return batches

    def _table_for(self, origin: AppendOrigin, batches: Sequence[BatchHeader]) -> ProducerStateTable | None:
        """The producer table an append goes through, None when it has nothing to say: no
        batch has a producer id; or a follower's plain idempotent batches while the table is
        not built (it is rebuilt from the log when needed)."""
        if origin is AppendOrigin.REPLICATION:
            if self._pstate.table is None and not any(h.attributes & _TXN_BITS for h in batches):
                return None
        elif all(h.producer_id < 0 for h in batches):
            return None
        return self._producer_table()

    # -- idempotent and transactional producers ----------------------------------------
    def _producer_table(self) -> ProducerStateTable:
        """The producers' recent batches and open transactions (`producer_state_manager`)."""
        return self._pstate.get(self._segments, self._leo)

    def active_producers(self) -> list[SnapshotEntry]:
        """Each producer this log knows, with its last batch and open transaction
        (DescribeProducers)."""
        with self._lock:
            self._check_open()
            return self._producer_table().snapshot()

    def begin_verification(self, producer_id: int, producer_epoch: int) -> object | None:
        """KIP-890: None if the producer's transaction is already open here (no check
        needed); else a token that a transactional append must present after the
        coordinator confirmed the partition, and that a marker meanwhile cancels."""
        with self._lock:
            self._check_open()
            table = self._producer_table()
            if table.has_ongoing_transaction(producer_id, producer_epoch):
                return None
            token = table.verifying.get(producer_id)
            if token is None:
                token = table.verifying[producer_id] = object()
            return token

    def last_stable_offset(self, high_watermark: int) -> int:
        """Where read_committed reads stop: below `high_watermark`, the first offset of a
        transaction still open or whose marker is not replicated yet — but never below the
        log start (DeleteRecords may have removed a transaction's first batches)."""
        table = self._pstate.table
        if table is not None and not table.ongoing and not table.unreplicated:
            return high_watermark  # the common case, without the lock
        with self._lock:
            if self._closed:
                return high_watermark
            stable = self._producer_table().last_stable_offset(high_watermark)
            return min(max(stable, self._log_start), high_watermark)

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget closed transactions whose marker is now below the high watermark (they
        no longer hold the last stable offset back); leader and followers alike."""
        table = self._pstate.table
        if table is not None and table.unreplicated:
            with self._lock:
                table.first_unstable_offset(high_watermark)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start_offset, upper_bound_offset), from the
        indexes of the segment holding `start_offset` and the later ones (Kafka's
        collectAbortedTransactions)."""
        segments, bases = self._view
        i = max(bisect.bisect_right(bases, start_offset) - 1, 0)
        out: list[AbortedTxn] = []
        for seg in segments[i:]:
            found, complete = seg.txn_index.collect(start_offset, upper_bound_offset)
            out.extend(found)
            if complete:
                break
        return out

    def _write(self, data: Buffer, headers: Sequence[BatchHeader], now: int, table: ProducerStateTable | None,
               state: ProducerAppendInfo | None) -> None:
        """Write the batches; an OSError (disk full, I/O error) becomes LogStorageError and
        leaves the log end where the last complete write put it. Each chunk's batches enter
        the producer table (their `state` effects) as the chunk lands, so a snapshot taken at
        a roll between chunks holds everything below it; an aborted transaction's entry goes
        to the index of the segment its marker landed in."""
        view = memoryview(data)
        effects = state.effects if state is not None else None
        if table is not None and effects:
            self._pstate.snapshot_before_first_producer(headers[0].base_offset)
        try:
            for chunk in self._chunks(headers):
                first, last = chunk[0], chunk[-1]
                start, end = first.position, last.position + last.size
                seg = self._maybe_roll(end - start, first.base_offset, last.last_offset, now)
                seg.append(view[start:end], chunk, start, now)
                self._leo = last.next_offset
                if table is not None and effects:
                    for h in chunk:
                        effect = effects.get(h.position)
                        if effect is None:
                            continue
                        if effect.marker is None:
                            table.record(effect.producer_id, effect.epoch, effect.base_sequence,
                                         effect.last_offset_delta, h.base_offset, effect.transactional)
                            continue
                        done = table.record_marker(effect.producer_id, effect.epoch, effect.marker, h.base_offset)
                        if done is not None and done.aborted:
                            seg.txn_index.append(aborted_entry(table, done))
        except OSError as e:
            raise self.io_error("append to", e) from e

    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        try:
            self.epoch_cache.assign(epoch, start_offset, durable=False)  # synced before the recovery point moves
        except OSError as e:
            raise self.io_error("leader epoch checkpoint of", e) from e

    def io_error(self, what: str, e: OSError) -> LogStorageError:
        """An I/O error of the disk (also one a reader of this log's files hit): the owner hears
        of it first (the dir goes offline); returns the KAFKA_STORAGE_ERROR to raise.

        From then on the log refuses everything with KAFKA_STORAGE_ERROR, at once and before
        any producer check, as Kafka does for a log of an offline dir: the owner takes the
        dir offline only on its loop's next turn, and a producer's next pipelined batch
        must not be judged meanwhile against a state that lacks the failed one (it would be
        OUT_OF_ORDER_SEQUENCE_NUMBER, on which librdkafka bumps its epoch and renumbers every
        unacknowledged record, also records already appended elsewhere: seed 210)."""
        reason = f"{what} {self.dir} failed: {e}"
        if self._failed is None:
            self._failed = reason
        if self._on_io_error is not None:
            self._on_io_error(e)
        return LogStorageError(reason)

    def _chunks(self, headers: Sequence[BatchHeader]) -> list[Sequence[BatchHeader]]:
        """Split an append where a batch would overflow the segment it lands in, so leader
        and follower roll at the same batch however their appends are batched (a compacted
        log's replicas then hold the same segments, and clean to the same bytes)."""
        limit = self.config.segment_bytes
        seg_size = self._segments[-1].size
        total = headers[-1].position + headers[-1].size - headers[0].position
        if seg_size + total <= limit:
            return [headers]
        out: list[Sequence[BatchHeader]] = []
        cur: list[BatchHeader] = []
        for h in headers:
            if seg_size > 0 and seg_size + h.size > limit:
                if cur:
                    out.append(cur)
                    cur = []
                seg_size = 0
            cur.append(h)
            seg_size += h.size
        out.append(cur)
        return out

    def _maybe_roll(self, size: int, first_offset: int, last_offset: int, now: int) -> LogSegment:
        seg = self._segments[-1]
        if seg.size == 0:
            return seg
        cfg = self.config
        if (
            seg.size + size > cfg.segment_bytes
            or (seg.roll_base_ms is not None and now - seg.roll_base_ms >= cfg.segment_ms)
            or last_offset - seg.base_offset > MAX_RELATIVE_OFFSET
        ):
            return self._roll_locked(first_offset)
        return seg

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end (no-op if the active one is empty)."""
        with self._lock:
            self._check_open()
            try:
                return self._roll_locked(self._leo)
            except OSError as e:
                raise self.io_error("roll of", e) from e

    def _roll_locked(self, new_base: int) -> LogSegment:
        old = self._segments[-1]
        if old.size == 0:
            return old
        old.seal(flush_log=False)
        self._pstate.take_snapshot(new_base)
        new = LogSegment.create(self.dir, new_base, self.config.index_interval_bytes)
        self._set_segments(self._segments + [new])
        log.debug("Rolled %s at offset %d", self.dir, new_base)
        self._flush_future = _flusher.submit(self._flush_rolled, old, new_base, self._generation)
        return new

    def _flush_rolled(self, seg: LogSegment, upto: int, generation: int) -> None:
        try:
            self.epoch_cache.sync()
            seg.flush()
        except OSError as e:  # closed or deleted meanwhile: nothing to make durable
            log.debug("Background flush of %s skipped: %s", seg.path, e)
            return
        with self._lock:
            if generation == self._generation and upto > self._recovery_point:
                self._recovery_point = min(upto, self._leo)

    # -- reading -----------------------------------------------------------------------
    def read_slice(
        self, start_offset: int, max_bytes: int, max_offset: int | None = None, min_one_batch: bool = True
    ) -> LogSlice:
        """Locate whole batches from `start_offset` without reading them (see module doc)."""
        self._check_open()
        leo = self._leo  # read before the segment list, so the list covers it
        log_start = self._log_start
        segments, bases = self._view
        if start_offset < log_start or start_offset > leo:
            raise OffsetOutOfRangeError(start_offset, log_start, leo)
        empty = LogSlice(None, 0, 0, start_offset, start_offset)
        if start_offset == leo or (max_offset is not None and start_offset >= max_offset):
            return empty
        i = max(bisect.bisect_right(bases, start_offset) - 1, 0)
        try:
            while i < len(segments):
                seg = segments[i]
                size = seg.size
                first = seg.find_batch(start_offset, size)
                if first is None:
                    i += 1
                    continue
                if max_offset is not None and first.last_offset >= max_offset:
                    return empty
                end, next_offset = seg.slice_end(first, max_bytes, max_offset, size)
                if end == first.position:
                    if not min_one_batch:
                        return empty
                    end, next_offset = first.position + first.size, first.next_offset
                return LogSlice(seg, first.position, end - first.position, first.base_offset, next_offset)
        except OSError as e:  # an index or segment that cannot be read
            raise self.io_error("read from", e) from e
        return empty

    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None = None, min_one_batch: bool = True
    ) -> ReadResult:
        """Whole batches from the segment holding `start_offset`: at most `max_bytes` (but at
        least one batch if `min_one_batch`), none whose last offset is ≥ `max_offset`.
        Raises OffsetOutOfRangeError outside [log start, log end]."""
        try:
            sl = self.read_slice(start_offset, max_bytes, max_offset, min_one_batch)
            data = sl.read()
        except OSError as e:
            raise self.io_error("read from", e) from e
        return ReadResult(data, sl.first_offset, sl.next_offset, self._log_start, self._leo)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is ≥ `timestamp`, or None.
        The special ListOffsets values (-1 latest, -2 earliest) are the caller's."""
        log_start = self._log_start
        for seg in self._segments:
            if seg.max_timestamp >= timestamp and (seg.next_offset or 0) > log_start:
                found = seg.find_offset_by_timestamp(timestamp, log_start)
                if found is not None:
                    return found
        return None

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the batch holding the largest timestamp (ListOffsets -3)."""
        best: LogSegment | None = None
        for seg in self._segments:
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        return best.offset_of_max_timestamp, best.max_timestamp

    # -- cleaning ----------------------------------------------------------------------
    @property
    def generation(self) -> int:
        """Changes whenever truncation rewrites history (the cleaner aborts its swap then)."""
        return self._generation

    def replace_segments(self, cleaned: LogSegment, old: Sequence[LogSegment], generation: int,
                         crash_after: str | None = None) -> bool:
        """Swap the cleaner's output `cleaned` (files `<base>.*.cleaned`, sealed and fsynced)
        in for the consecutive sealed segments `old`. Under the log's lock:
        1. check nothing changed them since the cleaner read them (same generation, same
           segment objects still in the list, none of them the active one), else delete
           the cleaned files and return False;
        2. rename the cleaned files `.cleaned` → `.swap` (log file last), fsync the dir;
        3. rename the old segments' files to `.deleted` (closed and unlinked after
           file.delete.delay.ms, so in-flight reads finish), fsync the dir;
        4. drop the `.swap` suffix (log file last), fsync the dir, publish the new list.
        A crash in between is finished or undone on load (`recovery.remove_leftovers`).
        `crash_after` (tests only) stops after the named step as a crash would."""
        with self._lock:
            segs = self._segments
            i = next((k for k, s in enumerate(segs) if s is old[0]), -1) if old else -1
            ok = (not self._closed and generation == self._generation and i >= 0
                  and i + len(old) < len(segs)
                  and all(segs[i + k] is s for k, s in enumerate(old))
                  and cleaned.base_offset == old[0].base_offset)
            if not ok:
                cleaned.delete_files()
                return False
            cleaned.rename_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)
            fsync_dir(self.dir)
            if crash_after == "swap":
                return True
            for seg in old:
                seg.rename_for_delete()
            fsync_dir(self.dir)
            if crash_after == "deleted":
                return True
            cleaned.rename_suffix(SWAP_SUFFIX, "")
            fsync_dir(self.dir)
            cleaned.next_offset = segs[i + len(old)].base_offset
            self._set_segments(segs[:i] + [cleaned] + segs[i + len(old):])
            self._schedule_renamed_delete(old)
            return True

    def _schedule_renamed_delete(self, segments: Sequence[LogSegment]) -> None:
        delay = self.config.file_delete_delay_ms
        if delay == 0:
            for seg in segments:
                seg.delete_files()
            return
        deadline = int(time.time() * 1000) + delay
        self._pending_deletes.extend((deadline, seg) for seg in segments)

    def delete_expired_files(self, now_ms: int | None = None) -> None:
        """Close and unlink replaced segments whose delay has passed."""
        with self._lock:
            self._delete_expired_files(wall_clock_ms() if now_ms is None else now_ms)

    # -- truncation --------------------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Drop every batch holding an offset ≥ `offset` (a batch straddling it goes
        whole) and the epochs starting there; returns the new log end offset. At or past
        the log end no batch goes, but an epoch starting at the log end does (as in Kafka's
        `UnifiedLog.truncateTo`): a leader that recorded its epoch and appended nothing
        before losing the seat must not keep it, or it answers and asks OffsetsForLeaderEpoch
        about an epoch it holds no record of (seed 216: a follower asked the same question
        for two minutes and never fetched)."""
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        try:
            return self._truncate_to(offset)
        except OSError as e:
            raise self.io_error("truncation of", e) from e

    def _truncate_to(self, offset: int) -> int:
        with self._lock:
            self._check_open()
            if offset >= self._leo:
                self.epoch_cache.truncate_from_end(self._leo)
                return self._leo
            if offset < self._segments[0].base_offset:
                self._truncate_fully_locked(offset)
                return self._leo
            self._generation += 1
            keep = bisect.bisect_right(self._bases, offset)
            removed = self._segments[keep:]
            seg = self._segments[keep - 1]
            seg.ensure_indexes()
            removed_bytes = seg.truncate_to(offset) + sum(s.size for s in removed)
            self._set_segments(self._segments[:keep])
            self._schedule_delete(removed)
            self._pstate.forget()
            old_leo = self._leo
            self._leo = seg.next_offset if seg.next_offset is not None else offset
            self._pstate.delete_snapshots([o for o in self._pstate.snapshots() if o > self._leo])
            self._log_start = min(self._log_start, self._leo)
            self._recovery_point = min(self._recovery_point, self._leo)
            self.epoch_cache.truncate_from_end(self._leo)
            log.info("Truncated %s to offset %d (was %d, %d bytes, %d segments removed)",
                     self.dir, self._leo, old_leo, removed_bytes, len(removed))
            return self._leo

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Discard everything and continue at `offset` (a follower far behind the leader's
        log start)."""
        with self._lock:
            self._check_open()
            try:
                self._truncate_fully_locked(offset)
            except OSError as e:
                raise self.io_error("truncation of", e) from e

    def _truncate_fully_locked(self, offset: int) -> None:
        self._generation += 1
        old = self._segments
        self._schedule_delete(old)
        new = LogSegment.create(self.dir, offset, self.config.index_interval_bytes)
        self._set_segments([new])
        self._pstate.forget()
        self._pstate.delete_snapshots(self._pstate.snapshots())
        self._leo = self._log_start = self._recovery_point = offset
        self.epoch_cache.clear()
        log.info("Truncated %s fully, now starting at offset %d (%d segments removed)", self.dir, offset, len(old))

    def increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start forward (DeleteRecords, or a follower tracking its leader);
        segments wholly below it go at the next retention pass."""
        with self._lock:
            offset = min(offset, self._leo)
            if offset <= self._log_start:
                return False
            self._log_start = offset
            self.epoch_cache.truncate_from_start(offset)
            return True

    # -- retention ---------------------------------------------------------------------
    def delete_retention_segments(self, now_ms: int | None = None, high_watermark: int | None = None) -> int:
        """Delete the oldest segments that break retention.ms or retention.bytes or lie
        below the log start; returns how many. Segments above `high_watermark` (if
        given) are kept. If the active segment itself expires it is rolled first, so
        there is always an active segment."""
        now = wall_clock_ms() if now_ms is None else now_ms
        with self._lock:
            self._check_open()
            self._delete_expired_files(now)
            cfg = self.config
            segs = self._segments
            n = len(segs)

            def deletable(i: int) -> bool:
                seg = segs[i]
                upper = seg.next_offset if seg.next_offset is not None else self._leo
                if i == n - 1 and seg.size == 0:
                    return False
                return high_watermark is None or upper <= high_watermark

            count = 0
            while count < n and deletable(count) and (segs[count].next_offset or 0) <= self._log_start:
                count += 1
            if cfg.retention_ms >= 0 and cfg.delete:
                k = 0
                while k < n and deletable(k) and now - segs[k].largest_timestamp() > cfg.retention_ms:
                    k += 1
                count = max(count, k)
            if cfg.retention_bytes >= 0 and cfg.delete:
                diff = sum(s.size for s in segs) - cfg.retention_bytes
                k = 0
                while k < n and deletable(k) and diff - segs[k].size >= 0:
                    diff -= segs[k].size
                    k += 1
                count = max(count, k)
            if count == 0:
                return 0
            if count == n:
                self._roll_locked(self._leo)
            doomed = self._segments[:count]
            self._set_segments(self._segments[count:])
            new_start = max(self._log_start, self._segments[0].base_offset)
            if new_start != self._log_start:
                self._log_start = new_start
                self.epoch_cache.truncate_from_start(new_start)
            self._schedule_delete(doomed, now)
            snapshots = self._pstate.snapshots()
            self._pstate.delete_snapshots([o for o in snapshots[:-1] if o < self._segments[0].base_offset])
            log.info("Retention deleted %d segments of %s (%d bytes); log start now %d",
                     count, self.dir, sum(s.size for s in doomed), self._log_start)
            return count

    def _schedule_delete(self, segments: Sequence[LogSegment], now_ms: int | None = None) -> None:
        """Rename now, close and unlink after file_delete_delay_ms (in-flight reads finish)."""
        delay = self.config.file_delete_delay_ms
        deadline = (wall_clock_ms() if now_ms is None else now_ms) + delay
        for seg in segments:
            seg.rename_for_delete()
            if delay == 0:
                seg.delete_files()
            else:
                self._pending_deletes.append((deadline, seg))

    def _delete_expired_files(self, now_ms: int) -> None:
        keep = []
        for deadline, seg in self._pending_deletes:
            if deadline <= now_ms:
                seg.delete_files()
            else:
                keep.append((deadline, seg))
        self._pending_deletes = keep

    # -- durability and lifecycle ------------------------------------------------------
    def flush(self) -> None:
        """fsync everything written so far; the recovery point becomes the log end."""
        self._wait_background_flush()
        with self._lock:
            self._check_open()
            try:
                self.epoch_cache.sync()
                for seg in self._segments:
                    seg.flush()
            except OSError as e:
                raise self.io_error("flush of", e) from e
            self._recovery_point = self._leo

    def _wait_background_flush(self) -> None:
        fut = self._flush_future
        if fut is not None:
            fut.result()

    def close(self) -> None:
        """Flush and close every file; the log cannot be used afterwards."""
        self._wait_background_flush()
        with self._lock:
            if self._closed:
                return
            self.epoch_cache.sync()
            if self._leo not in self._pstate.snapshots():
                self._pstate.take_snapshot(self._leo)
            for seg in self._segments:
                seg.close()
            for _, seg in self._pending_deletes:
                seg.delete_files()
            self._pending_deletes = []
            self._recovery_point = self._leo
            self._closed = True

    def abandon(self) -> None:
        """Its log dir failed: close every file without writing anything more; unusable afterwards."""
        with self._lock:
            self._closed = True
            for seg in [*self._segments, *(seg for _, seg in self._pending_deletes)]:
                try:
                    seg.close_without_flush()
                except OSError as e:  # the disk is gone; the descriptor goes with the process
                    log.debug("closing %s: %s", seg.path, e)
            self._pending_deletes = []

    def delete(self) -> None:
        """Close without flushing and remove the whole directory (StopReplica with delete)."""
        self._wait_background_flush()
        with self._lock:
            for seg in self._segments:
                seg.close_without_flush()
            for _, seg in self._pending_deletes:
                seg.close_without_flush()
            self._pending_deletes = []
            self._closed = True
            shutil.rmtree(self.dir, ignore_errors=True)
        log.info("Deleted log %s", self.dir)

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._failed is not None:
            raise LogStorageError(f"log {self.dir} failed earlier: {self._failed}")
        if self._closed:
            raise LogStorageError(f"log {self.dir} is closed")
