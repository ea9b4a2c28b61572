"""One log segment: `<base_offset:020d>.log` plus its `.index`, `.timeindex` and, once a
transaction aborts in it, `.txnindex` (`txn_index`).

Append: 1. pwrite the bytes of whole batches at the end of the file, 2. every
`index.interval.bytes` of log add an offset-index entry (batch last offset, position)
and, if the running max timestamp grew, a time-index entry, 3. publish the new size
(readers never look past the size they saw, so they never see a half-written append).

Read: 1. floor the offset in the index, 2. scan batch headers (small preads) to the
first batch whose last offset is ≥ the wanted offset, 3. pick the end of the slice by
jumping through the index and scanning a few more headers, 4. pread the range (or
hand the (fd, position, size) to a zero-copy sender).

Recover: read the whole file in large chunks, check framing, magic, CRC and offset
order of every batch, rebuild both indexes, and cut the file at the first bad byte.

Durability: writes go to the page cache; `flush()` fsyncs. The log flushes a segment
when it rolls and when it closes; otherwise the OS decides (Kafka's default).
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from praha.log.batch import (
    HEADER_SIZE,
    MAX_RELATIVE_OFFSET,
    NO_TIMESTAMP,
    BatchHeader,
    Buffer,
    check_crc,
    parse_header,
)
from praha.log.errors import CorruptBatchError, CorruptIndexError, LogStorageError
from praha.log.index import OffsetIndex, TimeIndex
from praha.log.records import complete_batches
from praha.log.txn_index import TXN_INDEX_SUFFIX, TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"  # the cleaner's output while it is written
SWAP_SUFFIX = ".swap"  # the cleaner's output, complete, replacing the originals

_SCAN_BLOCK = 8192
_RECOVER_CHUNK = 4 << 20


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


@dataclass(slots=True)
class RecoveryResult:
    """What `LogSegment.recover` found."""

    valid_bytes: int
    truncated_bytes: int
    batches: int
    reason: str | None = None  # why the tail was cut, if it was


class _IndexState:
    """Running state that decides when to add index entries (shared by append and recover)."""

    __slots__ = ("base", "interval", "bytes_since", "max_ts", "offset_of_max", "last_time_ts")

    def __init__(self, base: int, interval: int):
        self.base = base
        self.interval = interval
        self.bytes_since = 0
        self.max_ts = NO_TIMESTAMP
        self.offset_of_max = -1
        self.last_time_ts = NO_TIMESTAMP

    def add(self, h: BatchHeader, position: int, offsets: list[tuple[int, int]], times: list[tuple[int, int]]) -> None:
        last = h.base_offset + h.last_offset_delta
        if h.max_timestamp > self.max_ts:
            self.max_ts = h.max_timestamp
            self.offset_of_max = last
        if self.bytes_since > self.interval:
            offsets.append((last - self.base, position))
            if self.max_ts > self.last_time_ts:
                times.append((self.max_ts, self.offset_of_max - self.base))
                self.last_time_ts = self.max_ts
            self.bytes_since = 0
        self.bytes_since += h.size

    def final_time_entry(self) -> tuple[int, int] | None:
        """Entry making the time index end on the segment's max timestamp (at seal time)."""
        if self.max_ts > self.last_time_ts:
            self.last_time_ts = self.max_ts
            return self.max_ts, self.offset_of_max - self.base
        return None


class LogSegment:
    """A segment file and its indexes. Not thread-safe for writers; readers may run
    concurrently with one writer (they only look below the size published before)."""

    def __init__(self, directory: str, base_offset: int, index_interval_bytes: int, fd: int, size: int):
        self.dir = directory
        self.base_offset = base_offset
        self.path = os.path.join(directory, segment_file_name(base_offset, LOG_SUFFIX))
        self._fd = fd
        self._size = size
        self.offset_index = OffsetIndex(os.path.join(directory,
                                                     segment_file_name(base_offset, INDEX_SUFFIX)), base_offset)
        self.time_index = TimeIndex(os.path.join(directory,
                                                 segment_file_name(base_offset, TIME_INDEX_SUFFIX)), base_offset)
        self.txn_index = TransactionIndex(os.path.join(directory, segment_file_name(base_offset, TXN_INDEX_SUFFIX)))
        self._ix = _IndexState(base_offset, index_interval_bytes)
        #: offset after the last batch; None until known (sealed segments learn it from the log)
        self.next_offset: int | None = base_offset if size == 0 else None
        #: wall-clock ms the segment's time-based roll counts from (None while empty)
        self.roll_base_ms: int | None = None
        self._dirty = False
        self._closed = False
        self._load_lock = threading.Lock()
        #: set by `open` when the index files look wrong; the segment must be recovered
        self.index_suspect = False

    # -- creation ----------------------------------------------------------------------
    @classmethod
    def create(cls, directory: str, base_offset: int, index_interval_bytes: int) -> LogSegment:
        """A new empty segment (any stale files with the same name are emptied)."""
        path = os.path.join(directory, segment_file_name(base_offset, LOG_SUFFIX))
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        seg = cls(directory, base_offset, index_interval_bytes, fd, 0)
        seg.offset_index.create_empty()
        seg.time_index.create_empty()
        seg.txn_index.delete_file()
        return seg

    @classmethod
    def create_with_suffix(cls, directory: str, base_offset: int, index_interval_bytes: int,
                           suffix: str) -> LogSegment:
        """A new empty segment whose three files carry `suffix` (the cleaner's `.cleaned`)."""
        path = os.path.join(directory, segment_file_name(base_offset, LOG_SUFFIX)) + suffix
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        seg = cls(directory, base_offset, index_interval_bytes, fd, 0)
        seg.path = path
        seg.offset_index.path += suffix
        seg.time_index.path += suffix
        seg.txn_index.path += suffix
        seg.offset_index.create_empty()
        seg.time_index.create_empty()
        seg.txn_index.delete_file()
        return seg

    def rename_suffix(self, old: str, new: str) -> None:
        """Rename the files from `<name><old>` to `<name><new>`: indexes first, the log
        last (recovery looks at the log file's name)."""
        for ix in (self.offset_index, self.time_index, self.txn_index):
            if ix.path.endswith(old):
                ix.rename(ix.path[: len(ix.path) - len(old)] + new)
        if self.path.endswith(old):
            target = self.path[: len(self.path) - len(old)] + new
            os.rename(self.path, target)
            self.path = target

    @classmethod
    def open(cls, directory: str, base_offset: int, index_interval_bytes: int) -> LogSegment:
        """Open existing files. Index problems found cheaply here (missing file, torn size,
        last entry beyond the log) set `index_suspect`; the log then recovers the segment."""
        path = os.path.join(directory, segment_file_name(base_offset, LOG_SUFFIX))
        fd = os.open(path, os.O_RDWR)
        size = os.fstat(fd).st_size
        seg = cls(directory, base_offset, index_interval_bytes, fd, size)
        try:
            seg.offset_index.open_existing()
            seg.time_index.open_existing()
            last = seg.offset_index.last_entry()
            if last is not None and (last[1] >= size or last[0] < base_offset):
                raise CorruptIndexError("offset index points beyond the log")
        except CorruptIndexError:
            seg.index_suspect = True
        return seg

    # -- properties --------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self._size

    @property
    def fd(self) -> int:
        """File descriptor of the .log file (for sendfile); valid until the segment closes."""
        return self._fd

    @property
    def max_timestamp(self) -> int:
        return self._ix.max_ts

    @property
    def offset_of_max_timestamp(self) -> int:
        return self._ix.offset_of_max

    def largest_timestamp(self) -> int:
        """For time retention: the largest record timestamp, or the file's mtime if none."""
        if self._ix.max_ts > 0:
            return self._ix.max_ts
        try:
            return int(os.fstat(self._fd).st_mtime * 1000)
        except OSError:
            return 0

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self._size}, next={self.next_offset})"

    # -- loading -----------------------------------------------------------------------
    def load_sealed(self, next_offset: int) -> None:
        """A segment that is not the last one: its end is the next segment's base and its
        max timestamp is the last time-index entry (written when it was sealed)."""
        self.next_offset = next_offset
        last_time = self.time_index.last_entry()
        if last_time is not None:
            if not self.base_offset <= last_time[1] < next_offset:
                raise CorruptIndexError(f"{self.time_index.path}: last entry outside the segment")
            self._ix.max_ts, self._ix.offset_of_max = last_time
            self._ix.last_time_ts = last_time[0]

    def load_tail(self) -> None:
        """Learn next offset and max timestamp of a cleanly closed segment cheaply: start
        from the last index entries and scan only the batch headers after them."""
        last_time = self.time_index.last_entry()
        if last_time is not None:
            self._ix.max_ts, self._ix.offset_of_max = last_time
            self._ix.last_time_ts = last_time[0]
        last = self.offset_index.last_entry()
        start = last[1] if last is not None else 0
        nxt = self.base_offset if last is None else last[0] + 1
        first = True
        for h in self.scan_headers(start, self._size):
            if first and last is not None and h.last_offset != last[0]:
                raise CorruptIndexError(f"{self.offset_index.path}: last entry does not match the log")
            first = False
            nxt = h.next_offset
            if h.max_timestamp > self._ix.max_ts:
                self._ix.max_ts = h.max_timestamp
                self._ix.offset_of_max = h.last_offset
        if last_time is not None and not self.base_offset <= last_time[1] < nxt:
            raise CorruptIndexError(f"{self.time_index.path}: last entry outside the segment")
        self.next_offset = nxt
        self._ix.bytes_since = self._size - start
        self._init_roll_base()

    def _init_roll_base(self) -> None:
        """After a restart count the roll age from the first batch's timestamp (as Kafka
        does), so restarts do not keep postponing time-based rolls."""
        now = int(time.time() * 1000)
        if self._size == 0:
            self.roll_base_ms = None
            return
        first = next(self.scan_headers(0, self._size), None)
        ts = first.max_timestamp if first is not None else NO_TIMESTAMP
        self.roll_base_ms = min(ts, now) if ts > 0 else now

    def recover(self, epochs_out: list[tuple[int, int]] | None = None) -> RecoveryResult:
        """Validate every batch, rebuild both indexes and cut the file at the first bad batch.

        `epochs_out` receives (leader epoch, base offset) whenever the epoch changes."""
        fd = self._fd
        size = os.fstat(fd).st_size
        ix = _IndexState(self.base_offset, self._ix.interval)
        offsets: list[tuple[int, int]] = []
        times: list[tuple[int, int]] = []
        chunk = memoryview(b"")
        cstart = 0
        pos = 0
        nxt = self.base_offset
        batches = 0
        last_epoch = None
        reason = None
        while pos < size:
            off = pos - cstart
            if off + HEADER_SIZE > len(chunk):
                chunk = memoryview(os.pread(fd, min(_RECOVER_CHUNK, size - pos), pos))
                cstart, off = pos, 0
            try:
                h = parse_header(chunk, off, pos, size)
                if off + h.size > len(chunk):
                    chunk = memoryview(os.pread(fd, max(_RECOVER_CHUNK, h.size), pos))
                    cstart, off = pos, 0
                    if len(chunk) < h.size:
                        raise CorruptBatchError(pos, "short read")
                check_crc(chunk, h, off)
                if h.base_offset < nxt:
                    raise CorruptBatchError(pos, f"base offset {h.base_offset} goes back (expected ≥ {nxt})")
                if h.last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
                    raise CorruptBatchError(pos, "offset too far from the segment base")
            except CorruptBatchError as e:
                reason = e.reason
                break
            ix.add(h, pos, offsets, times)
            if epochs_out is not None and h.leader_epoch != last_epoch:
                epochs_out.append((h.leader_epoch, h.base_offset))
                last_epoch = h.leader_epoch
            nxt = h.next_offset
            pos += h.size
            batches += 1
        truncated = size - pos
        if truncated:
            os.ftruncate(fd, pos)
        final = ix.final_time_entry()
        if final is not None:
            times.append(final)
        self.offset_index.reset(offsets)
        self.time_index.reset(times)
        self._ix = ix
        self._size = pos
        self.next_offset = nxt
        self.index_suspect = False
        self._init_roll_base()
        return RecoveryResult(pos, truncated, batches, reason)

    def _rebuild_indexes(self) -> None:
        """Rebuild the indexes from batch headers alone (a bad index found on the read
        path; the data itself was validated when the segment was written or recovered)."""
        ix = _IndexState(self.base_offset, self._ix.interval)
        offsets: list[tuple[int, int]] = []
        times: list[tuple[int, int]] = []
        nxt = self.base_offset
        for h in self.scan_headers(0, self._size):
            ix.add(h, h.position, offsets, times)
            nxt = h.next_offset
        final = ix.final_time_entry()
        if final is not None:
            times.append(final)
        self.offset_index.reset(offsets)
        self.time_index.reset(times)
        ix.bytes_since = self._ix.bytes_since
        self._ix = ix
        if self.next_offset is None:
            self.next_offset = nxt

    def ensure_indexes(self) -> None:
        """Load both indexes, rebuilding them if their content is bad. Readers of sealed
        segments may race here, hence the lock; the writer loads the active segment's
        indexes before its first append."""
        if self.offset_index.loaded and self.time_index.loaded:
            return
        with self._load_lock:
            try:
                self.offset_index.ensure_loaded(self._size)
                self.time_index.ensure_loaded(self.next_offset if self.next_offset is not None else 2**63 - 1)
            except CorruptIndexError:
                self._rebuild_indexes()

    # -- writing -----------------------------------------------------------------------
    def append(self, data: Buffer, batches: Sequence[BatchHeader], data_start: int = 0,
               now_ms: int | None = None) -> None:
        """Append whole batches. `batches` describe `data` with their final offsets;
        `batch.position - data_start` is where each starts inside `data`."""
        if self._closed:
            raise LogStorageError(f"segment {self.path} is closed")
        pos = self._size
        view = memoryview(data)
        written = 0
        while written < len(view):
            written += os.pwrite(self._fd, view[written:], pos + written)
        if self.roll_base_ms is None:
            self.roll_base_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        offsets: list[tuple[int, int]] = []
        times: list[tuple[int, int]] = []
        shift = pos - data_start
        add = self._ix.add
        for h in batches:
            add(h, h.position + shift, offsets, times)
        if offsets:
            self.offset_index.append_entries(offsets)
        if times:
            self.time_index.append_entries(times)
        self._dirty = True
        self.next_offset = batches[-1].next_offset
        self._size = pos + len(view)  # publish last: readers stay below it

    def seal(self, flush_log: bool = True) -> None:
        """This segment stops being the active one: finish the time index, fsync the
        indexes and drop their append descriptors. The (possibly large) log fsync can be
        left to the caller (`flush_log=False`) so it need not block appends."""
        final = self._ix.final_time_entry()
        if final is not None:
            self.time_index.append_entries([final])
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()
        self.offset_index.close()
        self.time_index.close()
        if flush_log:
            self.flush()

    def flush(self) -> None:
        """fsync the log file (if written since the last flush) and open index files."""
        if self._dirty:
            self._dirty = False
            try:
                os.fsync(self._fd)
            except BaseException:
                self._dirty = True
                raise
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def truncate_to(self, offset: int) -> int:
        """Drop the batch holding `offset` and everything after it; returns bytes removed.
        The new next offset is min(offset, base of the dropped batch)."""
        self.ensure_indexes()
        first = self.find_batch(offset)
        if first is None:
            return 0
        cut = first.position
        removed = self._size - cut
        os.ftruncate(self._fd, cut)
        self._size = cut
        self.next_offset = min(offset, first.base_offset)
        self.offset_index.truncate_to_position(cut)
        self.time_index.truncate_to_offset(self.next_offset)
        self.txn_index.truncate_to(self.next_offset)
        self._reset_tail_state()
        if cut == 0:
            self.roll_base_ms = None
        elif self.roll_base_ms is None:
            self._init_roll_base()  # a sealed segment becoming active again
        self._dirty = True
        return removed

    def _reset_tail_state(self) -> None:
        """Recompute max timestamp and index spacing after a truncation: the last time
        entry covers everything up to the last offset entry, so scan only after it."""
        ix = _IndexState(self.base_offset, self._ix.interval)
        last_time = self.time_index.last_entry()
        if last_time is not None:
            ix.max_ts, ix.offset_of_max = last_time
            ix.last_time_ts = last_time[0]
        last = self.offset_index.last_entry()
        start = last[1] if last is not None else 0
        for h in self.scan_headers(start, self._size):
            if h.max_timestamp > ix.max_ts:
                ix.max_ts, ix.offset_of_max = h.max_timestamp, h.last_offset
        ix.bytes_since = self._size - start
        self._ix = ix

    # -- reading -----------------------------------------------------------------------
    def scan_headers(self, position: int, end: int) -> Iterator[BatchHeader]:
        """Headers of the batches in [position, end), read in small blocks (no CRC)."""
        fd = self._fd
        block = b""
        bstart = position
        pos = position
        while pos < end:
            off = pos - bstart
            if off + HEADER_SIZE > len(block):
                block = os.pread(fd, min(end - pos, _SCAN_BLOCK), pos)
                bstart, off = pos, 0
                if len(block) < min(end - pos, HEADER_SIZE):
                    raise CorruptBatchError(pos, "short read (file shrank?)")
            h = parse_header(block, off, pos, end)
            yield h
            pos += h.size

    def find_batch(self, offset: int, size: int | None = None) -> BatchHeader | None:
        """The first batch whose last offset is ≥ `offset`, or None if there is none
        below `size` (default: the current size)."""
        end = self._size if size is None else size
        self.ensure_indexes()
        _, pos = self.offset_index.lookup(offset)
        for h in self.scan_headers(pos, end):
            if h.base_offset + h.last_offset_delta >= offset:
                return h
        return None

    def slice_end(self, first: BatchHeader, max_bytes: int, max_offset: int | None, size: int) -> tuple[int, int]:
        """(end position, next offset) of the whole batches from `first` that fit in
        `max_bytes` and whose last offsets are below `max_offset`. The end equals
        `first.position` if not even `first` fits."""
        limit = min(first.position + max_bytes, size)
        end, nxt = first.position, first.base_offset
        i, pos = self.offset_index.floor_position_for_limits(limit, max_offset)
        if i >= 0 and first.position < pos < size:
            end = pos  # every batch before an indexed one ends before it and is older
            jumped = True
        else:
            pos = first.position
            jumped = False
        for h in self.scan_headers(pos, size):
            if h.position + h.size > limit or (
                max_offset is not None and h.base_offset + h.last_offset_delta >= max_offset
            ):
                if jumped:
                    nxt = h.base_offset
                break
            end, nxt = h.position + h.size, h.base_offset + h.last_offset_delta + 1
            jumped = False
        return end, nxt

    def read_bytes(self, position: int, size: int) -> bytes:
        data = os.pread(self._fd, size, position)
        if len(data) < size:
            chunks = [data]
            got = len(data)
            while got < size:
                more = os.pread(self._fd, size - got, position + got)
                if not more:
                    raise LogStorageError(f"{self.path}: short read at {position + got}")
                chunks.append(more)
                got += len(more)
            data = b"".join(chunks)
        return data

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `timestamp` with offset ≥
        `start_offset`. Decodes the one batch that holds it (ListOffsets only)."""
        self.ensure_indexes()
        from_offset = max(self.time_index.lookup_before(timestamp), start_offset)
        first = self.find_batch(from_offset)
        if first is None:
            return None
        for h in self.scan_headers(first.position, self._size):
            if h.max_timestamp < timestamp or h.last_offset < start_offset:
                continue
            found = _first_record_at_or_after(self.read_bytes(h.position, h.size), h, timestamp, start_offset)
            if found is not None:
                return found
        return None

    # -- closing and deleting ----------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        try:
            self.seal()
        finally:
            self._closed = True
            os.close(self._fd)

    def close_without_flush(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.offset_index.close()
        self.time_index.close()
        os.close(self._fd)

    def rename_for_delete(self) -> None:
        """Mark the files for deletion; open descriptors keep working for in-flight reads."""
        new = self.path + DELETED_SUFFIX
        try:
            os.rename(self.path, new)
        except FileNotFoundError:
            pass
        self.path = new
        self.offset_index.rename(self.offset_index.path + DELETED_SUFFIX)
        self.time_index.rename(self.time_index.path + DELETED_SUFFIX)
        self.txn_index.rename(self.txn_index.path + DELETED_SUFFIX)

    def delete_files(self) -> None:
        self.close_without_flush()
        for p in (self.path, self.offset_index.path, self.time_index.path, self.txn_index.path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


def _first_record_at_or_after(data: bytes, h: BatchHeader, timestamp: int, start_offset: int) -> tuple[int, int] | None:
    try:
        for _, records in complete_batches(data):
            for rec in records:
                if rec.timestamp >= timestamp and rec.offset >= start_offset:
                    return rec.offset, rec.timestamp
        return None
    except Exception:  # codec missing or undecodable: answer at batch granularity
        return max(h.base_offset, start_offset), h.max_timestamp
