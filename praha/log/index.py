"""Kafka's sparse segment indexes, kept in memory as compact arrays and appended to disk
in small batches (one write per ~1000 entries, and at flush, seal, truncate, close).

- `.index` (OffsetIndex): 8-byte big-endian entries (relative offset u32, position
  u32). The offset is the *last* offset of the batch starting at that position (as in
  Kafka), so the floor entry for an offset is a safe place to start scanning.
- `.timeindex` (TimeIndex): 12-byte entries (timestamp i64, relative offset u32): the
  largest timestamp seen so far and the batch it was in. Timestamps strictly increase.

Entries are loaded lazily (a broker with thousands of old segments reads an index only
when someone reads that segment), then checked; a bad file raises `CorruptIndexError`
and the segment rebuilds it from the log. Only the active segment holds a file
descriptor for appends; sealed segments' index files stay closed.
"""
from __future__ import annotations

import bisect
import os
import struct
import sys
import threading
from array import array
from collections.abc import Callable

from praha.log.checkpoints import atomic_write
from praha.log.errors import CorruptIndexError

_OFFSET_ENTRY = struct.Struct(">II")
_TIME_ENTRY = struct.Struct(">qI")
_BIG_ENDIAN = sys.byteorder == "big"
_PENDING_LIMIT = 8192


class _Index:
    entry_size: int

    def __init__(self, path: str, base_offset: int):
        self.path = path
        self.base_offset = base_offset
        self._dirty = False  # written since the last fsync
        self._loaded = False
        self._count = 0  # entries, including those not yet written
        self._file_count = 0  # entries in the file
        self._pending = bytearray()  # appended entries not yet written (see write_pending)
        #: a rolled segment's background flush may write its index while a truncation has
        #: made that segment active again and the log appends to or seals it
        self._write_lock = threading.RLock()

    def __len__(self) -> int:
        return self._count

    @property
    def loaded(self) -> bool:
        return self._loaded

    def file_entry_count(self) -> int:
        """Entry count from the file size; raises CorruptIndexError on a torn size."""
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            raise CorruptIndexError(f"{self.path} is missing") from None
        if size % self.entry_size:
            raise CorruptIndexError(f"{self.path} has size {size}, not a multiple of {self.entry_size}")
        return size // self.entry_size

    def open_existing(self) -> None:
        """Attach to a file that is believed good; entries are read on first use."""
        self._count = self._file_count = self.file_entry_count()
        self._drop_pending()
        self._loaded = False

    def read_last_entry_bytes(self) -> bytes | None:
        if self._count == 0:
            return None
        if self._pending:
            return bytes(self._pending[-self.entry_size:])
        with open(self.path, "rb") as f:
            f.seek((self._count - 1) * self.entry_size)
            raw = f.read(self.entry_size)
        if len(raw) != self.entry_size:
            raise CorruptIndexError(f"{self.path} shrank while reading")
        return raw

    def _read_all(self) -> bytes:
        self.write_pending()
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise CorruptIndexError(f"{self.path} is missing") from None
        if len(raw) % self.entry_size:
            raise CorruptIndexError(f"{self.path} has size {len(raw)}, not a multiple of {self.entry_size}")
        return raw

    def _append_to_file(self, raw: bytes, n: int) -> None:
        """Queue entries; they reach the file in batches (one pwrite per ~8 KiB of index)
        and at flush, seal, truncate and close. Entries lost in a crash only shorten the
        index of a segment that recovery re-checks anyway (it is past the recovery point)."""
        with self._write_lock:
            self._pending += raw
            self._count += n
            if len(self._pending) >= _PENDING_LIMIT:
                self.write_pending()

    def _with_file(self, action: Callable[[int], object], flags: int = 0) -> None:
        """Open the file for one action and close it again: an index holds no descriptor
        between writes (they come once per ~8 KiB of entries), so a broker hosting 10k
        partitions needs one descriptor per partition (its active segment), not three."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | flags, 0o644)
        try:
            action(fd)
        finally:
            os.close(fd)
        self._dirty = True

    def write_pending(self) -> None:
        with self._write_lock:
            pending = self._pending
            if not pending:
                return
            at = self._file_count * self.entry_size
            self._with_file(lambda fd: os.pwrite(fd, pending, at))
            self._pending = bytearray()
            self._file_count = self._count

    def _drop_pending(self) -> None:
        with self._write_lock:
            self._pending = bytearray()

    def _truncate_file(self, count: int) -> None:
        with self._write_lock:
            self.write_pending()
            self._with_file(lambda fd: os.ftruncate(fd, count * self.entry_size))
            self._file_count = count

    def flush(self) -> None:
        self.write_pending()
        if self._dirty:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self._dirty = False

    def close(self) -> None:
        """Write queued entries (sealed segment or closing)."""
        self.write_pending()

    def create_empty(self) -> None:
        """Start an empty index for a new segment. No fsync: if a crash loses the file the
        segment is past the recovery point, and recovery rebuilds it."""
        self._drop_pending()
        self._with_file(lambda fd: None, os.O_TRUNC)
        self._count = self._file_count = 0
        self._clear_entries()
        self._loaded = True

    def _clear_entries(self) -> None:
        raise NotImplementedError

    def rename(self, path: str) -> None:
        try:
            os.rename(self.path, path)
        except FileNotFoundError:
            pass
        self.path = path

    def delete_file(self) -> None:
        self._drop_pending()
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class OffsetIndex(_Index):
    entry_size = _OFFSET_ENTRY.size

    def __init__(self, path: str, base_offset: int):
        super().__init__(path, base_offset)
        self._offsets = array("I")  # relative last offsets
        self._positions = array("I")
        self._loaded = True

    def _clear_entries(self) -> None:
        self._offsets = array("I")
        self._positions = array("I")

    def ensure_loaded(self, log_size: int) -> None:
        """Read and check the entries; CorruptIndexError if they cannot describe the log."""
        if self._loaded:
            return
        raw = self._read_all()
        flat = array("I")
        flat.frombytes(raw)
        if not _BIG_ENDIAN:
            flat.byteswap()
        offsets, positions = flat[0::2], flat[1::2]
        for i in range(1, len(offsets)):
            if offsets[i] <= offsets[i - 1] or positions[i] <= positions[i - 1]:
                raise CorruptIndexError(f"{self.path}: entry {i} is not increasing")
        if positions and positions[-1] >= log_size:
            raise CorruptIndexError(f"{self.path}: position {positions[-1]} beyond log size {log_size}")
        self._offsets, self._positions = offsets, positions
        self._count = self._file_count = len(offsets)
        self._loaded = True

    def last_entry(self) -> tuple[int, int] | None:
        """(absolute offset, position) of the last entry, read without loading the rest."""
        if self._loaded:
            if not self._offsets:
                return None
            return self.base_offset + self._offsets[-1], self._positions[-1]
        raw = self.read_last_entry_bytes()
        if raw is None:
            return None
        rel, pos = _OFFSET_ENTRY.unpack(raw)
        return self.base_offset + rel, pos

    def append_entries(self, entries: list[tuple[int, int]]) -> None:
        """Append (relative offset, position) pairs (already increasing)."""
        raw = b"".join(_OFFSET_ENTRY.pack(o, p) for o, p in entries)
        if self._loaded:
            for o, p in entries:
                self._offsets.append(o)
                self._positions.append(p)
        self._append_to_file(raw, len(entries))

    def lookup(self, offset: int) -> tuple[int, int]:
        """Floor entry for `offset`: (entry's relative offset or -1, position or 0). Loaded only."""
        i = bisect.bisect_right(self._offsets, offset - self.base_offset) - 1
        if i < 0:
            return -1, 0
        return self._offsets[i], self._positions[i]

    def floor_position_for_limits(self, max_position: int, max_offset: int | None) -> tuple[int, int]:
        """Largest entry with position ≤ max_position and offset < max_offset: (index, position)."""
        i = bisect.bisect_right(self._positions, max_position) - 1
        if max_offset is not None:
            j = bisect.bisect_left(self._offsets, max_offset - self.base_offset) - 1
            i = min(i, j)
        return (i, self._positions[i]) if i >= 0 else (-1, 0)

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or after `position` (the log was cut there). Loaded only."""
        keep = bisect.bisect_left(self._positions, position)
        if keep < len(self._positions):
            del self._offsets[keep:], self._positions[keep:]
            self._truncate_file(keep)
            self._count = keep

    def reset(self, entries: list[tuple[int, int]]) -> None:
        """Replace the whole index (rebuild) and write it atomically."""
        self._drop_pending()
        self.close()
        self._offsets = array("I", (o for o, _ in entries))
        self._positions = array("I", (p for _, p in entries))
        atomic_write(self.path, b"".join(_OFFSET_ENTRY.pack(o, p) for o, p in entries))
        self._count = self._file_count = len(entries)
        self._loaded = True


class TimeIndex(_Index):
    entry_size = _TIME_ENTRY.size

    def __init__(self, path: str, base_offset: int):
        super().__init__(path, base_offset)
        self._timestamps = array("q")
        self._offsets = array("I")
        self._loaded = True

    def _clear_entries(self) -> None:
        self._timestamps = array("q")
        self._offsets = array("I")

    def ensure_loaded(self, next_offset: int) -> None:
        if self._loaded:
            return
        raw = self._read_all()
        ts = array("q")
        offs = array("I")
        for t, o in _TIME_ENTRY.iter_unpack(raw):
            ts.append(t)
            offs.append(o)
        for i in range(1, len(ts)):
            if ts[i] <= ts[i - 1] or offs[i] < offs[i - 1]:
                raise CorruptIndexError(f"{self.path}: entry {i} is not increasing")
        if offs and self.base_offset + offs[-1] >= next_offset:
            raise CorruptIndexError(f"{self.path}: offset beyond the segment end {next_offset}")
        self._timestamps, self._offsets = ts, offs
        self._count = self._file_count = len(ts)
        self._loaded = True

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, absolute offset) of the last entry."""
        if self._loaded:
            if not self._timestamps:
                return None
            return self._timestamps[-1], self.base_offset + self._offsets[-1]
        raw = self.read_last_entry_bytes()
        if raw is None:
            return None
        ts, rel = _TIME_ENTRY.unpack(raw)
        return ts, self.base_offset + rel

    def append_entries(self, entries: list[tuple[int, int]]) -> None:
        """Append (timestamp, relative offset) pairs whose timestamps increase."""
        raw = b"".join(_TIME_ENTRY.pack(t, o) for t, o in entries)
        if self._loaded:
            for t, o in entries:
                self._timestamps.append(t)
                self._offsets.append(o)
        self._append_to_file(raw, len(entries))

    def lookup_before(self, timestamp: int) -> int:
        """Absolute offset of the last entry whose timestamp is < `timestamp`, or the base.

        Every record before that offset has a smaller timestamp, so a search for the
        first record ≥ `timestamp` can start there. Loaded only."""
        i = bisect.bisect_left(self._timestamps, timestamp) - 1
        return self.base_offset + (self._offsets[i] if i >= 0 else 0)

    def truncate_to_offset(self, next_offset: int) -> None:
        """Drop entries at or after `next_offset`. Loaded only."""
        keep = bisect.bisect_left(self._offsets, next_offset - self.base_offset)
        if keep < len(self._offsets):
            del self._timestamps[keep:], self._offsets[keep:]
            self._truncate_file(keep)
            self._count = keep

    def reset(self, entries: list[tuple[int, int]]) -> None:
        self._drop_pending()
        self.close()
        self._timestamps = array("q", (t for t, _ in entries))
        self._offsets = array("I", (o for _, o in entries))
        atomic_write(self.path, b"".join(_TIME_ENTRY.pack(t, o) for t, o in entries))
        self._count = self._file_count = len(entries)
        self._loaded = True
