"""Which compacted log to clean next (Kafka's LogCleanerManager), apart from the cleaner
threads that clean it (`cleaner.py`).

The choice is pure (`cleanable_offsets`, `dirty_split`, `choose_log`: step 1 of the cleaner's
module doc); the manager holds what it rests on: each log dir's cleaned-up-to offsets
(`cleaner-offset-checkpoint`), the logs being cleaned now, the logs skipped after a failed pass,
and each compacted log's dirty ratio at the last choice.
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from praha.common import TopicPartition
from praha.log.checkpoints import OffsetCheckpointFile
from praha.log.errors import CorruptBatchError, LogStorageError
from praha.log.segment import LogSegment

if TYPE_CHECKING:
    from praha.log.log import Log

log = logging.getLogger(__name__)

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
UNCLEANABLE_SKIP_MS = 300_000


# -- the choice (pure) ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What the choice needs of a segment: base offset, size, and timestamps."""

    base_offset: int
    size: int
    largest_timestamp: int
    first_batch_timestamp: int  # -1 if unknown or empty


@dataclass(frozen=True, slots=True)
class LogToClean:
    """A compacted log's clean/dirty split (Kafka's LogToClean)."""

    tp: TopicPartition
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def cleanable_offsets(segments: Sequence[SegmentInfo], checkpoint: int | None, log_start: int,
                      log_end: int, high_watermark: int | None, now_ms: int,
                      min_lag_ms: int, max_lag_ms: int) -> tuple[int, int, bool]:
    """(first dirty offset, first uncleanable offset, needs compaction now) of one log.
    `segments` are in order, the last one active (never cleaned)."""
    first_dirty = checkpoint if checkpoint is not None and log_start <= checkpoint <= log_end else log_start
    # the active segment, or the last non-empty one if the active segment is empty
    last = len(segments) - 1
    while last > 0 and segments[last].size == 0:
        last -= 1
    uncleanable = segments[last].base_offset if segments else log_end
    if high_watermark is not None:
        uncleanable = min(uncleanable, high_watermark)
    dirty = [s for i, s in enumerate(segments[:last])
             if (segments[i + 1].base_offset > first_dirty) and s.base_offset < uncleanable]
    if min_lag_ms > 0:
        for s in dirty:
            if s.largest_timestamp > now_ms - min_lag_ms:
                uncleanable = min(uncleanable, s.base_offset)
                break
    uncleanable = max(uncleanable, first_dirty)
    needs_now = False
    if max_lag_ms < 2**63 - 1:
        firsts = [s.first_batch_timestamp for s in dirty if s.first_batch_timestamp > 0]
        needs_now = bool(firsts) and min(firsts) < now_ms - max(max_lag_ms, 0)
    return first_dirty, uncleanable, needs_now


def dirty_split(tp: TopicPartition, segments: Sequence[SegmentInfo], first_dirty: int, uncleanable: int,
                needs_now: bool) -> LogToClean:
    """Bytes below the first dirty offset vs. bytes of segments in [first dirty, uncleanable)."""
    clean = dirty = 0
    for i, s in enumerate(segments):
        nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if nxt is not None and nxt <= first_dirty:
            clean += s.size
        elif s.base_offset < uncleanable and nxt is not None and nxt <= uncleanable:
            dirty += s.size
    return LogToClean(tp, first_dirty, uncleanable, clean, dirty, needs_now)


def choose_log(candidates: Iterable[LogToClean], min_ratio: Callable[[TopicPartition], float]) -> LogToClean | None:
    """The filthiest log worth cleaning: ratio above its `min.cleanable.dirty.ratio`, or
    past `max.compaction.lag.ms` with anything cleanable (Kafka's grabFilthiestCompactedLog)."""
    ok = [c for c in candidates
          if c.cleanable_bytes > 0 and (c.needs_compaction_now or c.cleanable_ratio > min_ratio(c.tp))]
    if not ok:
        return None
    return max(ok, key=lambda c: (c.needs_compaction_now, c.cleanable_ratio))


def segment_infos(lg: Log) -> tuple[list[LogSegment], list[SegmentInfo]]:
    segs = list(lg.segments)
    infos = []
    for s in segs:
        first_ts = -1
        if s.size:
            try:
                first = next(iter(s.scan_headers(0, s.size)), None)
                first_ts = first.max_timestamp if first is not None else -1
            except (CorruptBatchError, OSError):
                first_ts = -1
        infos.append(SegmentInfo(s.base_offset, s.size, s.largest_timestamp(), first_ts))
    return segs, infos


def plan_for(tp: TopicPartition, lg: Log, checkpoint: int | None, high_watermark: int | None,
             now_ms: int) -> LogToClean:
    _, infos = segment_infos(lg)
    cfg = lg.config
    stable = lg.last_stable_offset(lg.log_end_offset if high_watermark is None else high_watermark)
    first_dirty, uncleanable, needs_now = cleanable_offsets(
        infos, checkpoint, lg.log_start_offset, lg.log_end_offset, stable, now_ms,
        cfg.min_compaction_lag_ms, cfg.max_compaction_lag_ms)
    return dirty_split(tp, infos, first_dirty, uncleanable, needs_now)


class LogCleanerManager:
    """The cleaner's bookkeeping, shared by its threads under one lock.

    `logs()` lists (tp, log, log dir); `high_watermark(tp)` bounds cleaning (None: no bound)."""

    def __init__(self, logs: Callable[[], list[tuple[TopicPartition, Log, str]]],
                 high_watermark: Callable[[TopicPartition], int | None] | None = None):
        self._logs = logs
        self._hw = high_watermark or (lambda tp: None)
        self.lock = threading.Lock()
        self._in_progress: set[TopicPartition] = set()
        self._checkpoints: dict[str, dict[TopicPartition, int]] = {}
        #: logs whose last pass failed unexpectedly, skipped until the given wall-clock ms
        self._skip_until: dict[TopicPartition, int] = {}
        self.dirty_ratios: dict[TopicPartition, float] = {}

    # -- checkpoints
    def _checkpoint_file(self, log_dir: str) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT))

    def checkpoint_of(self, log_dir: str) -> dict[TopicPartition, int]:
        with self.lock:
            cp = self._checkpoints.get(log_dir)
            if cp is None:
                try:
                    cp = self._checkpoint_file(log_dir).read()
                except LogStorageError as e:
                    log.warning("%s; cleaning from the log start", e)
                    cp = {}
                self._checkpoints[log_dir] = cp
            return dict(cp)

    def update_checkpoint(self, log_dir: str, tp: TopicPartition, offset: int, live: set[TopicPartition]) -> None:
        with self.lock:
            cp = self._checkpoints.setdefault(log_dir, {})
            cp[tp] = offset
            for gone in [t for t in cp if t not in live]:
                del cp[gone]
            self._checkpoint_file(log_dir).write(cp)  # under the lock: threads write in order

    # -- the choice
    def grab_filthiest(self, now: int) -> tuple[LogToClean, Log, str, set[TopicPartition]] | None:
        """Choose the filthiest compacted log not being cleaned nor skipped and mark it in
        progress: (its plan, the log, its dir, every live partition), or None. Each compacted
        log's expired files are deleted on the way, and its dirty ratio noted."""
        entries = self._logs()
        live = {tp for tp, _, _ in entries}
        plans: list[LogToClean] = []
        by_tp: dict[TopicPartition, tuple[Log, str]] = {}
        ratios: dict[TopicPartition, float] = {}
        for tp, lg, d in entries:
            if not lg.config.compact or lg.closed:
                continue
            try:
                lg.delete_expired_files(now)
                plan = plan_for(tp, lg, self.checkpoint_of(d).get(tp), self._hw(tp), now)
            except (LogStorageError, OSError, CorruptBatchError):
                continue
            ratios[tp] = plan.cleanable_ratio
            with self.lock:
                if tp in self._in_progress or self._skip_until.get(tp, 0) > now:
                    continue
            plans.append(plan)
            by_tp[tp] = (lg, d)
        self.dirty_ratios = ratios
        with self.lock:
            chosen = choose_log([p for p in plans if p.tp not in self._in_progress],
                                lambda tp: by_tp[tp][0].config.min_cleanable_dirty_ratio)
            if chosen is None:
                return None
            self._in_progress.add(chosen.tp)
        lg, d = by_tp[chosen.tp]
        return chosen, lg, d, live

    def done_cleaning(self, tp: TopicPartition) -> None:
        with self.lock:
            self._in_progress.discard(tp)

    def skip(self, tp: TopicPartition, until_ms: int) -> None:
        """Leave the log out of the choice until `until_ms` (its pass failed unexpectedly)."""
        with self.lock:
            self._skip_until[tp] = until_ms
