"""Log compaction: Kafka's LogCleaner for logs whose `cleanup.policy` holds `compact`.

One cleaning pass (`LogCleaner.clean_once`, on a cleaner thread):
1. Choose (`cleaner_manager.py`, pure `choose_log`): for each compacted log not being cleaned, the dirty
   section runs from its cleaned-up-to offset (`cleaner-offset-checkpoint`, or the log
   start) to the first uncleanable offset: the lowest of the active segment's base (the
   last non-empty segment's base, if the active one is empty), the last stable offset
   (the high watermark, or an open transaction's first offset below it), and
   the base of the first segment newer than `min.compaction.lag.ms`. Its dirty ratio is
   dirty bytes / (clean + dirty bytes). The log with the largest ratio above
   `min.cleanable.dirty.ratio` wins; a log whose oldest dirty batch is older than
   `max.compaction.lag.ms` qualifies whatever its ratio.
2. Map: decode the dirty section's records into key → last offset (`OffsetMap`, at most
   dedupe buffer / 24 B entries); if the map fills, the pass ends where it filled.
   Records of aborted transactions (the aborted-transaction index) are not mapped: they
   must not hide a committed record with the same key.
3. Group every segment below that end (clean ones too: new keys may supersede them)
   into runs that fit one segment (`group_segments_by_size`).
4. Rewrite each group into `<base>.log.cleaned` (+ indexes), batch by batch
   (`filter_batch`): a record stays if it is the latest for its key in the map (or past
   the map); a tombstone also needs its batch's delete horizon not yet passed; a batch
   that first keeps a tombstone gets its horizon set to now + `delete.retention.ms`
   (Kafka's KIP-534 rule). Offsets stay: kept batches keep their base offset and last
   offset delta, so gaps appear. A batch losing every record goes, unless it is an
   idempotent producer's last batch or the last before the pass's end (kept empty).
   Transactions (Kafka's CleanedTransactionMetadata, `TxnCleaning`): a batch of an aborted
   transaction loses all its records; a marker stays while the pass still met a batch of
   its transaction (an ABORT marker keeps its aborted-index entry in the output), and
   once none is left it gets a delete horizon (now + `delete.retention.ms`) and goes after it.
5. Swap the output in under the log's lock (`Log.replace_segments`: `.cleaned` →
   `.swap`, originals → `.deleted`, `.swap` → final; crash-safe, see `recovery`).
6. Checkpoint the cleaned-up-to offset; log one line with the counts.

I/O is throttled (`log.cleaner.io.max.bytes.per.second`, shared by all threads); the
log's lock is held only for the swap, so produce and fetch never wait on a pass.
Batches whose codec is unavailable here are kept whole and their keys are not mapped
(see `records`).
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import md5
from typing import TYPE_CHECKING, Any

from praha.common import TopicPartition
from praha.config import BROKER_CONFIG_BY_NAME, CLEANER_KEYS, parse_value
from praha.encoding.compression import NONE, codec_available, decompress
from praha.errors import ConfigError, ErrorCode, PrahaError
from praha.log.batch import CONTROL_MASK, HEADER_SIZE, BatchHeader, parse_header
from praha.log.cleaner_manager import CLEANER_OFFSET_CHECKPOINT as CLEANER_OFFSET_CHECKPOINT
from praha.log.cleaner_manager import UNCLEANABLE_SKIP_MS, LogCleanerManager
from praha.log.cleaner_manager import LogToClean as LogToClean
from praha.log.cleaner_manager import SegmentInfo as SegmentInfo
from praha.log.cleaner_manager import choose_log as choose_log
from praha.log.cleaner_manager import cleanable_offsets as cleanable_offsets
from praha.log.cleaner_manager import dirty_split as dirty_split
from praha.log.cleaner_manager import plan_for as plan_for
from praha.log.control import ControlType, parse_marker
from praha.log.errors import CorruptBatchError
from praha.log.offset_map import OffsetMap
from praha.log.records import DELETE_HORIZON_MASK, Record, build_batch, decode_batch, scan_records
from praha.log.segment import CLEANED_SUFFIX, LogSegment
from praha.log.txn_index import AbortedTxn

if TYPE_CHECKING:
    from praha.log.log import Log

log = logging.getLogger(__name__)

_READ_CHUNK = 4 << 20


class CleaningAbortedError(PrahaError):
    """The log changed, closed or the cleaner stopped during a pass; nothing was swapped."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


def _cleaner_value(key: str, raw: object | None = None) -> Any:
    """A `log.cleaner.*` setting by the table: `raw` checked (a bad one is logged and the
    default used: a dynamic value must not stop the cleaner), else the table's default;
    Kafka's Double.MAX_VALUE ("no limit") is infinity here."""
    d = BROKER_CONFIG_BY_NAME[key]
    value = None
    if raw is not None:
        try:
            value = parse_value(d, raw)
        except ConfigError as e:
            log.warning("ignoring %s=%r: %s", key, raw, e)
    if value is None:
        value = parse_value(d, d.default)
    return float("inf") if isinstance(value, float) and value >= sys.float_info.max else value


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The broker's `log.cleaner.*` settings (Kafka's names; defaults from the table)."""

    enable: bool = _cleaner_value("log.cleaner.enable")
    threads: int = _cleaner_value("log.cleaner.threads")
    dedupe_buffer_size: int = _cleaner_value("log.cleaner.dedupe.buffer.size")  # all threads
    io_max_bytes_per_second: float = _cleaner_value("log.cleaner.io.max.bytes.per.second")
    backoff_ms: int = _cleaner_value("log.cleaner.backoff.ms")
    io_buffer_load_factor: float = _cleaner_value("log.cleaner.io.buffer.load.factor")  # dedupe map fill

    @classmethod
    def from_broker_config(cls, props: Mapping[str, str | int]) -> CleanerConfig:
        enable, threads, dedupe, io_max, backoff, load_factor = (_cleaner_value(k, props.get(k)) for k in CLEANER_KEYS)
        return cls(enable=enable, threads=max(threads, 1), dedupe_buffer_size=dedupe, io_max_bytes_per_second=io_max,
                   backoff_ms=max(backoff, 1), io_buffer_load_factor=load_factor)


# -- decisions of a pass (pure) ---------------------------------------------------------
def group_segments_by_size(segments: Sequence[tuple[int, int, int]], max_size: int,
                           first_uncleanable: int) -> list[list[int]]:
    """Kafka's groupSegmentsBySize over (base offset, log bytes, index bytes): consecutive
    segments whose total log (and index) size fits one segment and whose offsets fit
    32-bit relative offsets. Returns lists of indexes into `segments`."""
    groups: list[list[int]] = []
    i = 0
    n = len(segments)
    while i < n:
        group = [i]
        log_size = segments[i][1]
        index_size = segments[i][2]
        i += 1
        while i < n:
            base, size, isize = segments[i]
            last = segments[i + 1][0] - 1 if i + 1 < n else first_uncleanable - 1
            if log_size + size > max_size or index_size + isize > 10 * 1024 * 1024:
                break
            if size != 0 and last - segments[group[0]][0] > 2**31 - 1:
                break
            group.append(i)
            log_size += size
            index_size += isize
            i += 1
        groups.append(group)
    return groups


@dataclass(slots=True)
class FilterResult:
    """What to write for one batch: None (drop it), the original bytes, or new bytes."""

    output: bytes | memoryview | None
    records_read: int
    records_kept: int
    rewritten: bool


def filter_batch(data: bytes | memoryview, h: BatchHeader, offset_map: OffsetMap, now_ms: int,
                 delete_retention_ms: int, retain_empty: bool) -> FilterResult:
    """Kafka's cleaner filter for one batch (`data` is exactly the batch). Pure but for decompression."""
    if (h.base_offset > offset_map.latest_offset and not h.attributes & DELETE_HORIZON_MASK) \
            or h.attributes & CONTROL_MASK or (h.compression != NONE and not codec_available(h.compression)):
        return FilterResult(data, h.record_count, h.record_count, False)
    payload = memoryview(data)[HEADER_SIZE:h.size]
    plain = decompress(h.compression, payload) if h.compression != NONE else bytes(payload)
    scanned = scan_records(plain, h.record_count, h.position)
    horizon = h.base_timestamp if h.attributes & DELETE_HORIZON_MASK else None
    deletes_expired = horizon is not None and now_ms >= horizon
    base = h.base_offset
    latest = offset_map.latest_offset - base  # in offset deltas
    lookup = offset_map.raw_map().get
    kept_at: list[int] = []
    tombstones = False
    for i, (od, _tsd, key, null, _s, _e) in enumerate(scanned):
        if od > latest:
            keep = True
        elif key is None:
            keep = False
        else:
            keep = base + od >= lookup(key if len(key) < 16 else md5(key, usedforsecurity=False).digest(), -1) \
                and not (null and deletes_expired)
        if keep:
            kept_at.append(i)
            if null:
                tombstones = True
    set_horizon = tombstones and horizon is None
    n = len(scanned)
    if n and len(kept_at) == n and not set_horizon:
        return FilterResult(data, n, n, False)
    if not kept_at and not retain_empty:
        return FilterResult(None, n, 0, True)
    if not kept_at and not n:  # an empty batch kept again: as it is
        return FilterResult(data, 0, 0, False)
    bts = h.base_timestamp
    kept = [Record(base + od, bts + tsd, key, null, plain[st:en])
            for od, tsd, key, null, st, en in (scanned[i] for i in kept_at)]
    out = build_batch(h, kept, delete_horizon_ms=now_ms + delete_retention_ms if set_horizon else None,
                      original_payload=payload)
    return FilterResult(out, n, len(kept), True)


class TxnCleaning:
    """What one pass knows of transactions (Kafka's CleanedTransactionMetadata): the
    aborted ones overlapping what it cleans, and, per producer, whether it met a batch of
    the transaction the next marker ends. Pure."""

    def __init__(self, aborted: Iterable[AbortedTxn]):
        self.aborted: dict[int, list[AbortedTxn]] = {}
        for t in aborted:
            self.aborted.setdefault(t.producer_id, []).append(t)
        self._met: dict[int, bool] = {}  # producer id -> met a batch of its current transaction

    def is_aborted(self, h: BatchHeader) -> bool:
        """A transactional data batch inside one of its producer's aborted transactions."""
        if not h.is_transactional or h.attributes & CONTROL_MASK:
            return False
        return any(t.first_offset <= h.base_offset <= t.last_offset for t in self.aborted.get(h.producer_id, ()))

    def on_data_batch(self, h: BatchHeader) -> None:
        if h.is_transactional and not h.attributes & CONTROL_MASK:
            self._met[h.producer_id] = True

    def on_marker(self, h: BatchHeader) -> bool:
        """Whether a batch of the transaction this marker ends was met (keep the marker)."""
        return self._met.pop(h.producer_id, False)

    def index_entry(self, h: BatchHeader) -> AbortedTxn | None:
        """The aborted-index entry of the ABORT marker `h`."""
        return next((t for t in self.aborted.get(h.producer_id, ()) if t.last_offset == h.base_offset), None)


def filter_marker(data: bytes | memoryview, h: BatchHeader, still_needed: bool, now_ms: int,
                  delete_retention_ms: int) -> FilterResult:
    """A transaction marker: kept as it is while its transaction still has batches; then
    given a delete horizon, and dropped once the horizon passed (Kafka's rule)."""
    if still_needed:
        return FilterResult(data, h.record_count, h.record_count, False)
    if h.attributes & DELETE_HORIZON_MASK:
        if now_ms >= h.base_timestamp:
            return FilterResult(None, h.record_count, 0, True)
        return FilterResult(data, h.record_count, h.record_count, False)
    records = decode_batch(data).records
    out = build_batch(h, records, delete_horizon_ms=now_ms + delete_retention_ms)
    return FilterResult(out, h.record_count, len(records), True)


# -- statistics ---------------------------------------------------------------------------
@dataclass(slots=True)
class CleanerStats:
    """One pass's counts (Kafka's CleanerStats)."""

    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_records_read: int = 0
    records_read: int = 0
    records_kept: int = 0
    segments_cleaned: int = 0
    groups_swapped: int = 0
    elapsed_s: float = 0.0


@dataclass(slots=True)
class CleanerTotals:
    """Since start: what `figures` reports (Kafka's LogCleaner metrics)."""

    passes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    segments_cleaned: int = 0
    time_s: float = 0.0
    aborted: int = 0
    errors: int = 0
    max_clean_time_s: float = 0.0  # max-clean-time-secs: of the last pass
    max_buffer_utilization: float = 0.0  # max-buffer-utilization-percent / 100
    max_dirty_ratio: float = 0.0  # max-dirty-percent / 100 (of the last choice)
    last_pass: CleanerStats = field(default_factory=CleanerStats)


class Throttler:
    """Keeps the cleaner's I/O at or below `rate` bytes/s (shared by all threads)."""

    def __init__(self, rate: float, stop: threading.Event):
        self.rate = rate
        self._stop = stop
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._bytes = 0.0

    def throttle(self, nbytes: int) -> None:
        if self.rate == float("inf") or self.rate <= 0:
            return
        with self._lock:
            self._bytes += nbytes
            elapsed = time.monotonic() - self._start
            wait = self._bytes / self.rate - elapsed
            if elapsed > 1.0 and wait <= 0:  # a new window once we are under the rate
                self._start, self._bytes = time.monotonic(), 0.0
        if wait > 0:
            self._stop.wait(wait)


# -- one log ------------------------------------------------------------------------------
def _read_batches(seg: LogSegment, start_pos: int, end_pos: int, throttler: Throttler | None,
                  check: Callable[[], None]) -> Iterable[tuple[memoryview, BatchHeader]]:
    """(batch bytes, header) of the batches of `seg` in [start_pos, end_pos), read in large chunks."""
    pos = start_pos
    while pos < end_pos:
        check()
        chunk = seg.read_bytes(pos, min(_READ_CHUNK, end_pos - pos))
        if throttler is not None:
            throttler.throttle(len(chunk))
        view = memoryview(chunk)
        off = 0
        while off < len(view):
            remaining = len(view) - off
            if remaining < HEADER_SIZE and off > 0:
                break
            h = parse_header(view, off, pos + off, end_pos)
            if h.size > remaining:
                if off == 0:  # a batch bigger than the chunk
                    big = seg.read_bytes(pos, h.size)
                    yield memoryview(big), h
                    off = h.size
                break
            yield view[off:off + h.size], h
            off += h.size
        pos += off


class LogCleaningPass:
    """One pass over one log (steps 2-5 of the module doc)."""

    def __init__(self, lg: Log, offset_map: OffsetMap, now_ms: int, throttler: Throttler | None = None,
                 check: Callable[[], None] | None = None, crash_after: str | None = None):
        self.log = lg
        self.map = offset_map
        self.now = now_ms
        self.throttler = throttler
        self._check_stop = check or (lambda: None)
        self.stats = CleanerStats()
        self.generation = lg.generation
        self.txns = TxnCleaning(())
        self._producer_last: dict[int, int] | None = None
        self._crash_after = crash_after

    def _check(self) -> None:
        self._check_stop()
        lg = self.log
        if lg.closed or lg.generation != self.generation:
            raise CleaningAbortedError(f"{lg.dir} changed during cleaning")

    def build_map(self, segments: Sequence[LogSegment], start: int, end: int) -> int:
        """Map keys of records in [start, end); returns the offset the pass cleans up to."""
        m = self.map
        m.clear()
        dirty = [(i, s) for i, s in enumerate(segments[:-1])
                 if segments[i + 1].base_offset > start and s.base_offset < end]
        raw = m.raw_map()
        max_entries = m.max_entries
        for i, seg in dirty:
            nxt = segments[i + 1].base_offset
            seg.ensure_indexes()
            _, pos = seg.offset_index.lookup(start)
            full = False
            for data, h in _read_batches(seg, pos, seg.size, self.throttler, self._check):
                self.stats.map_bytes_read += h.size
                if h.last_offset < start:
                    continue
                if h.base_offset >= end:
                    break
                if not (h.attributes & CONTROL_MASK) and not self.txns.is_aborted(h) \
                        and (h.compression == NONE or codec_available(h.compression)):
                    payload = memoryview(data)[HEADER_SIZE:h.size]
                    plain = decompress(h.compression, payload) if h.compression != NONE else bytes(payload)
                    scanned = scan_records(plain, h.record_count, h.position)
                    self.stats.map_records_read += len(scanned)
                    base = h.base_offset
                    lo, hi = start - base, end - base
                    if h.last_offset < end and len(raw) + len(scanned) <= max_entries:
                        for od, _t, key, _n, _s, _e in scanned:  # fast path: the whole batch fits
                            if key is not None and od >= lo:
                                raw[key if len(key) < 16 else md5(key, usedforsecurity=False).digest()] = base + od
                    else:
                        for od, _t, key, _n, _s, _e in scanned:
                            if key is not None and lo <= od < hi:
                                if m.full:
                                    full = True
                                    break
                                m.put(key, base + od)
                if full:
                    break
                m.update_latest_offset(min(h.last_offset, end - 1))
            if full:
                break
            m.update_latest_offset(min(nxt, end) - 1)
        return m.latest_offset + 1

    def _producer_last_batches(self) -> dict[int, int]:
        """producer id → last offset of its last batch in the whole log (header scan)."""
        if self._producer_last is None:
            last: dict[int, int] = {}
            for seg in self.log.segments:
                for h in seg.scan_headers(0, seg.size):
                    if h.producer_id >= 0:
                        last[h.producer_id] = h.last_offset
            self._producer_last = last
        return self._producer_last

    def clean(self, first_dirty: int, first_uncleanable: int) -> int:
        """Steps 2-5; returns the offset cleaned up to (the new checkpoint)."""
        t0 = time.monotonic()
        lg = self.log
        segments = list(lg.segments)
        self.txns = TxnCleaning(lg.collect_aborted_transactions(segments[0].base_offset, first_uncleanable))
        end = self.build_map(segments, first_dirty, first_uncleanable)
        if end <= first_dirty:
            return first_dirty
        cfg = lg.config
        to_clean = [s for s in segments[:-1] if s.base_offset < end]
        infos = [(s.base_offset, s.size, len(s.offset_index) * 8 + len(s.time_index) * 12) for s in to_clean]
        for group in group_segments_by_size(infos, cfg.segment_bytes, first_uncleanable):
            self._clean_group([to_clean[i] for i in group], segments, first_uncleanable)
        self.stats.elapsed_s = time.monotonic() - t0
        return end

    def _filter(self, data: memoryview, h: BatchHeader, upper_bound: int, cleaned: LogSegment) -> FilterResult:
        """One batch through the transaction rules, then the key rules (`filter_batch`)."""
        cfg = self.log.config
        txns = self.txns
        if h.attributes & CONTROL_MASK and h.producer_id >= 0:
            try:
                marker = parse_marker(data)
            except CorruptBatchError:
                marker = None
            if marker is None:  # not a readable marker: kept as it is
                return FilterResult(data, h.record_count, h.record_count, False)
            result = filter_marker(data, h, txns.on_marker(h), self.now, cfg.delete_retention_ms)
            entry = txns.index_entry(h) if marker.control_type is ControlType.ABORT else None
            if result.output is not None and entry is not None:
                cleaned.txn_index.append(entry)
            return result
        retain_empty = h.next_offset == upper_bound
        if not retain_empty and h.producer_id >= 0:
            retain_empty = self._producer_last_batches().get(h.producer_id) == h.last_offset
        txns.on_data_batch(h)
        if txns.is_aborted(h):
            if not retain_empty:
                return FilterResult(None, h.record_count, 0, True)
            return FilterResult(build_batch(h, []), h.record_count, 0, True)
        return filter_batch(data, h, self.map, self.now, cfg.delete_retention_ms, retain_empty)

    def _clean_group(self, group: list[LogSegment], segments: list[LogSegment], upper_bound: int) -> None:
        lg = self.log
        cfg = lg.config
        cleaned = LogSegment.create_with_suffix(lg.dir, group[0].base_offset, cfg.index_interval_bytes, CLEANED_SUFFIX)
        changed = len(group) > 1
        try:
            pending: list[bytes | memoryview] = []
            pending_headers: list[BatchHeader] = []
            pending_size = 0

            def flush() -> None:
                nonlocal pending, pending_headers, pending_size
                if pending:
                    cleaned.append(b"".join(pending), pending_headers, 0, self.now)
                    self.stats.bytes_written += pending_size
                    if self.throttler is not None:
                        self.throttler.throttle(pending_size)
                pending, pending_headers, pending_size = [], [], 0

            for seg in group:
                self.stats.segments_cleaned += 1
                for data, h in _read_batches(seg, 0, seg.size, self.throttler, self._check):
                    self.stats.bytes_read += h.size
                    result = self._filter(data, h, upper_bound, cleaned)
                    self.stats.records_read += result.records_read
                    self.stats.records_kept += result.records_kept
                    changed |= result.rewritten
                    out = result.output
                    if out is None:
                        continue
                    oh = h if out is data else parse_header(out, 0, 0, len(out))
                    pending_headers.append(oh._replace(position=pending_size))
                    pending.append(out)
                    pending_size += len(out)
                    if pending_size >= _READ_CHUNK:
                        flush()
            flush()
            self._check()
            if not changed:
                cleaned.delete_files()
                return
            cleaned.seal(flush_log=True)
            mtime = os.stat(group[-1].path).st_mtime
            os.utime(cleaned.path, (mtime, mtime))
            if self._crash_after == "cleaned":
                raise CleaningAbortedError("simulated crash after writing the cleaned segment")
            if not lg.replace_segments(cleaned, group, self.generation, crash_after=self._crash_after):
                raise CleaningAbortedError(f"{lg.dir} changed before the swap")
            if self._crash_after is not None:
                raise CleaningAbortedError(f"simulated crash after the {self._crash_after} step")
            self.stats.groups_swapped += 1
        except BaseException as e:
            if not (isinstance(e, CleaningAbortedError) and self._crash_after is not None):
                try:
                    cleaned.delete_files()
                    if lg.closed:  # deleted meanwhile: do not leave its directory behind
                        os.rmdir(lg.dir)  # only succeeds if our files were all that was left
                except OSError:
                    pass
            raise


def clean_log(lg: Log, offset_map: OffsetMap, first_dirty: int, first_uncleanable: int,
              now_ms: int | None = None, throttler: Throttler | None = None,
              check: Callable[[], None] | None = None) -> tuple[int, CleanerStats]:
    """Clean `lg` from `first_dirty` up to at most `first_uncleanable`; returns the offset
    cleaned up to and the pass's counts. Raises CleaningAbortedError if the log changed."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    p = LogCleaningPass(lg, offset_map, now, throttler, check)
    end = p.clean(first_dirty, first_uncleanable)
    return end, p.stats


# -- the cleaner threads --------------------------------------------------------------------
class LogCleaner:
    """Cleaner threads over the logs a `LogManager` owns (Kafka's LogCleaner + manager).

    `logs()` lists (tp, log, log dir); `high_watermark(tp)` bounds cleaning (None: no bound)."""

    def __init__(self, config: CleanerConfig,
                 logs: Callable[[], list[tuple[TopicPartition, Log, str]]],
                 high_watermark: Callable[[TopicPartition], int | None] | None = None,
                 on_io_error: Callable[[str, OSError], object] | None = None):
        self.config = config
        #: an I/O error while cleaning a log of dir d: `on_io_error(d, error)` takes d offline
        self._on_io_error = on_io_error or (lambda d, e: None)
        self._stop = threading.Event()
        #: which log to clean next, which are being cleaned, and how far each is cleaned
        self.manager = LogCleanerManager(logs, high_watermark)
        self._lock = self.manager.lock  # the totals are counted under the manager's lock
        self.throttler = Throttler(config.io_max_bytes_per_second, self._stop)
        self.totals = CleanerTotals()
        self._threads: list[threading.Thread] = []
        per_thread = max(config.dedupe_buffer_size // max(config.threads, 1), 1)
        self._map_bytes = per_thread

    @property
    def dirty_ratios(self) -> dict[TopicPartition, float]:
        """Each compacted log's dirty ratio at the last choice (the broker's metrics)."""
        return self.manager.dirty_ratios

    def checkpoint_of(self, log_dir: str) -> dict[TopicPartition, int]:
        return self.manager.checkpoint_of(log_dir)

    # -- lifecycle
    def start(self) -> None:
        for i in range(self.config.threads):
            t = threading.Thread(target=self._run, name=f"kafka-log-cleaner-thread-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        log.info("Log cleaner started (%d threads, %d byte dedupe buffer each)", self.config.threads, self._map_bytes)

    def shutdown(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)
        self._threads = []

    def _run(self) -> None:
        offset_map = OffsetMap(self._map_bytes, self.config.io_buffer_load_factor)
        while not self._stop.is_set():
            try:
                cleaned = self.clean_once(offset_map)
            except Exception:  # noqa: BLE001 - a bad log must not stop the cleaner
                log.exception("log cleaner pass failed")
                self.totals.errors += 1
                cleaned = False
            if not cleaned:
                self._stop.wait(self.config.backoff_ms / 1000.0)

    def _stopping(self) -> None:
        if self._stop.is_set():
            raise CleaningAbortedError("log cleaner shutting down")

    # -- one pass
    def clean_once(self, offset_map: OffsetMap, now_ms: int | None = None) -> bool:
        """Choose the filthiest log and clean it; False if none needed cleaning."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        grabbed = self.manager.grab_filthiest(now)
        if grabbed is None:
            return False
        chosen, lg, d, live = grabbed
        self.totals.max_dirty_ratio = chosen.cleanable_ratio
        try:
            p = LogCleaningPass(lg, offset_map, now, self.throttler, self._stopping)
            try:
                end = p.clean(chosen.first_dirty_offset, chosen.first_uncleanable_offset)
            except CleaningAbortedError as e:
                with self._lock:
                    self.totals.aborted += 1
                log.info("Cleaning of %s aborted: %s", chosen.tp, e)
                return False
            except OSError as e:  # the disk failed (full, read-only): its dir goes offline, as Kafka's
                log.warning("Cleaning of %s failed: %s", chosen.tp, e)
                self._on_io_error(d, e)
                return False
            except Exception:  # noqa: BLE001 - one bad log must not stop the others
                log.exception("Cleaning of %s failed; skipping it for %d s", chosen.tp, UNCLEANABLE_SKIP_MS // 1000)
                with self._lock:
                    self.totals.errors += 1
                self.manager.skip(chosen.tp, now + UNCLEANABLE_SKIP_MS)
                return False
            try:
                self.manager.update_checkpoint(d, chosen.tp, end, live)
            except OSError as e:
                self._on_io_error(d, e)
            s = p.stats
            with self._lock:
                t = self.totals
                t.passes += 1
                t.bytes_read += s.bytes_read
                t.bytes_written += s.bytes_written
                t.segments_cleaned += s.segments_cleaned
                t.time_s += s.elapsed_s
                t.max_clean_time_s = s.elapsed_s
                t.max_buffer_utilization = offset_map.utilization
                t.last_pass = s
            mb = 1024 * 1024
            log.info("Cleaned %s: offsets [%d, %d), dirty ratio %.2f, %d segments (%d swapped groups), "
                     "%.1f MB read, %.1f MB written, %d/%d records kept, map %d keys (%.0f%% full), %.2f s",
                     chosen.tp, chosen.first_dirty_offset, end, chosen.cleanable_ratio, s.segments_cleaned,
                     s.groups_swapped, s.bytes_read / mb, s.bytes_written / mb, s.records_kept, s.records_read,
                     len(offset_map), offset_map.utilization * 100, s.elapsed_s)
            return True
        finally:
            self.manager.done_cleaning(chosen.tp)

    # -- figures
    def figures(self) -> list[tuple[str, float, str]]:
        t = self.totals
        ratios = list(self.manager.dirty_ratios.values())
        return [
            ("log_cleaner_max_dirty_percent", 100.0 * t.max_dirty_ratio,
             "max-dirty-percent: dirty ratio of the last log chosen"),
            ("log_cleaner_max_clean_time_secs", t.max_clean_time_s, "max-clean-time-secs: duration of the last pass"),
            ("log_cleaner_max_buffer_utilization_percent", 100.0 * t.max_buffer_utilization,
             "max-buffer-utilization-percent: dedupe map fill of the last pass"),
            ("log_cleaner_passes", float(t.passes), "cleaning passes completed"),
            ("log_cleaner_passes_aborted", float(t.aborted), "passes aborted (log changed, shutdown)"),
            ("log_cleaner_errors", float(t.errors), "passes failed with an error"),
            ("log_cleaner_bytes_read", float(t.bytes_read), "bytes read by the cleaner (rewrite phase)"),
            ("log_cleaner_bytes_written", float(t.bytes_written), "bytes written by the cleaner"),
            ("log_cleaner_segments_cleaned", float(t.segments_cleaned), "segments rewritten"),
            ("log_cleaner_time_secs", t.time_s, "time spent cleaning"),
            ("log_cleaner_max_log_dirty_percent", 100.0 * max(ratios, default=0.0),
             "largest dirty ratio among compacted logs now"),
        ]
