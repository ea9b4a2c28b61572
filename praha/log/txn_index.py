"""The aborted-transaction index of one segment: Kafka's `<base>.txnindex` file.

When an ABORT marker lands in a segment, the log appends one entry to that segment's
index: version int16 (0), producer id int64, the transaction's first offset int64, the
marker's offset (its last offset) int64 and the partition's last stable offset once the
transaction was complete int64 (34 bytes, big-endian). A read_committed fetch asks each
segment from the one holding its start offset for the aborted transactions that overlap
the fetched range (`collect`) and stops at the first entry whose last stable offset is
past the range: no later segment can hold an abort that started earlier. The consumer
then drops those producers' records from the transaction's first offset to its marker.

The file is created on the first entry (most segments never have one), appended to with
one write per abort, cut by truncation, rewritten whole by recovery and by the cleaner.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from praha.log.errors import CorruptIndexError

TXN_INDEX_SUFFIX = ".txnindex"
VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


def decode_entries(data: bytes, path: str = "txnindex") -> list[AbortedTxn]:
    """Whole entries of a file (a torn last entry from a crash is ignored)."""
    out = []
    for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != VERSION:
            raise CorruptIndexError(f"{path}: unknown entry version {version}")
        out.append(AbortedTxn(pid, first, last, lso))
    return out


class TransactionIndex:
    """One segment's aborted transactions, in marker-offset order (read once, kept)."""

    def __init__(self, path: str):
        self.path = path
        self._entries: list[AbortedTxn] | None = None
        self._dirty = False

    def _load(self) -> list[AbortedTxn]:
        entries = self._entries
        if entries is None:
            try:
                with open(self.path, "rb") as f:
                    entries = decode_entries(f.read(), self.path)
            except FileNotFoundError:
                entries = []
            self._entries = entries
        return entries

    @property
    def entries(self) -> list[AbortedTxn]:
        return list(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def append(self, entry: AbortedTxn) -> None:
        entries = self._load()
        if entries and entry.last_offset < entries[-1].last_offset:
            raise CorruptIndexError(f"{self.path}: aborted transaction at {entry.last_offset} appended after "
                                    f"one at {entries[-1].last_offset}")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, entry.encode())
        finally:
            os.close(fd)
        entries.append(entry)
        self._dirty = True

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset), and whether
        the search is complete (an entry's last stable offset reached the upper bound)."""
        out = []
        for e in self._load():
            if e.last_offset >= fetch_offset and e.first_offset < upper_bound_offset:
                out.append(e)
            if e.last_stable_offset >= upper_bound_offset:
                return out, True
        return out, False

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after `offset`."""
        entries = self._load()
        keep = [e for e in entries if e.last_offset < offset]
        if len(keep) != len(entries):
            self.reset(keep)

    def reset(self, entries: list[AbortedTxn]) -> None:
        """Replace the whole index (recovery, the cleaner); no file when empty."""
        self._entries = list(entries)
        if not entries:
            self.delete_file()
            return
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(b"".join(e.encode() for e in entries))
        os.replace(tmp, self.path)
        self._dirty = True

    def flush(self) -> None:
        if not self._dirty:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._dirty = False
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._dirty = False

    def rename(self, path: str) -> None:
        try:
            os.rename(self.path, path)
        except FileNotFoundError:
            pass
        self.path = path

    def delete_file(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
