"""Leader epoch → start offset map of one partition (Kafka's LeaderEpochFileCache).

Followers use it (through OffsetsForLeaderEpoch) to truncate to exactly what the leader
has for an epoch instead of to the high watermark (KIP-101/279). The file is Kafka's
`leader-epoch-checkpoint`: version `0`, entry count, then `epoch startOffset` lines.

Every change rewrites the file atomically; changes are rare (a new leader epoch, a
truncation, retention moving the log start). A new epoch assigned with
`durable=False` is only noted (a broker taking over 10k leaderships would otherwise spend
over a second per 1000 writing and fsyncing files on its network loop) and written by
`sync()`, which the log calls before its recovery point moves and when it closes. That is
enough: after a crash, the epochs of batches above the recovery point are read back from
the batch headers by recovery.
A missing or unreadable file leaves the cache empty with `needs_rebuild` set; the log
then refills it from the batches' partitionLeaderEpoch during recovery.
"""
from __future__ import annotations

import bisect
import logging
import os
import threading
from dataclasses import dataclass

from praha.log.checkpoints import read_entries, write_entries
from praha.log.errors import CorruptCheckpointError

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Epochs with the first offset written in each; epochs and offsets strictly increase."""

    def __init__(self, path: str, *, load: bool = True):
        self.path = path
        self._epochs: list[int] = []
        self._starts: list[int] = []
        #: True when the file was missing or corrupt and the log must refill the cache
        self.needs_rebuild = False
        self._unsynced = False  # changed since the file was last written durably
        #: the file write and `_unsynced` together: writes (any thread), sync (the log's flusher)
        self._io_lock = threading.Lock()
        if load:
            self._load()

    def _load(self) -> None:
        try:
            entries = read_entries(self.path, 2)
        except CorruptCheckpointError as e:
            log.warning("%s; it will be rebuilt from the log", e)
            self.needs_rebuild = True
            return
        if entries is None:
            self.needs_rebuild = True
            return
        try:
            pairs = [(int(e), int(o)) for e, o in entries]
        except ValueError:
            log.warning("corrupt leader epoch checkpoint %s: non-integer entry; it will be rebuilt", self.path)
            self.needs_rebuild = True
            return
        for (e1, o1), (e2, o2) in zip(pairs, pairs[1:]):
            if e2 <= e1 or o2 < o1:
                log.warning("leader epoch checkpoint %s is not monotonic; it will be rebuilt", self.path)
                self.needs_rebuild = True
                return
        self._epochs = [e for e, _ in pairs]
        self._starts = [o for _, o in pairs]

    def _persist(self, durable: bool = True) -> None:
        with self._io_lock:
            write_entries(self.path, list(zip(self._epochs, self._starts)), durable)
            self._unsynced = not durable

    def sync(self) -> None:
        """Write the file durably if a change was only noted (`durable=False`)."""
        if not self._unsynced:
            return
        try:
            self._persist(durable=True)
        except FileNotFoundError:  # the log directory was deleted meanwhile
            self._unsynced = False

    # -- queries ---------------------------------------------------------------------
    @property
    def entries(self) -> list[EpochEntry]:
        return [EpochEntry(e, o) for e, o in zip(self._epochs, self._starts)]

    @property
    def latest_epoch(self) -> int:
        """Highest epoch known, or -1 (UNDEFINED_EPOCH) when empty."""
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as OffsetsForLeaderEpoch answers it.

        The epoch is the largest known epoch ≤ requested; the end offset is the start of
        the next higher epoch, or `log_end_offset` when the requested epoch is the
        latest. Unknown (undefined request, empty cache, or above the latest epoch) →
        (-1, -1). Below the earliest epoch → (requested, start of the earliest epoch)."""
        if requested_epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._epochs[-1]:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch in which `offset` was written (by start offsets), or -1."""
        i = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[i] if i >= 0 else UNDEFINED_EPOCH

    # -- changes ---------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int, *, persist: bool = True, durable: bool = True) -> bool:
        """Record that `epoch` starts at `start_offset`; returns whether anything changed.

        Lower epochs than the latest are ignored (a stale writer cannot rewrite history).
        The latest epoch may move its start earlier. A new epoch drops any entries
        starting at or after `start_offset`, keeping offsets monotonic (Kafka does the
        same; normally truncation has already removed them)."""
        if epoch < 0:
            return False
        if self._epochs:
            latest, latest_start = self._epochs[-1], self._starts[-1]
            if epoch < latest or (epoch == latest and start_offset >= latest_start):
                return False
            if epoch == latest:
                self._starts[-1] = start_offset
                self._drop_non_monotonic_before(len(self._epochs) - 1, start_offset)
            else:
                keep = bisect.bisect_left(self._starts, start_offset)
                del self._epochs[keep:], self._starts[keep:]
                self._epochs.append(epoch)
                self._starts.append(start_offset)
        else:
            self._epochs.append(epoch)
            self._starts.append(start_offset)
        if persist and durable:
            self._persist()
        elif persist:
            with self._io_lock:  # after the change: a write in progress on the flusher cannot clear it
                self._unsynced = True
        return True

    def _drop_non_monotonic_before(self, idx: int, start_offset: int) -> None:
        keep = bisect.bisect_left(self._starts, start_offset, 0, idx)
        if keep < idx:
            del self._epochs[keep:idx], self._starts[keep:idx]

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after `end_offset` (the log was truncated there)."""
        if end_offset < 0 or not self._starts or self._starts[-1] < end_offset:
            return
        keep = bisect.bisect_left(self._starts, end_offset)
        del self._epochs[keep:], self._starts[keep:]
        self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: drop epochs wholly before it and move the
        start of the epoch covering it up to `start_offset`."""
        i = bisect.bisect_right(self._starts, start_offset) - 1
        if i < 0 or (i == 0 and self._starts[0] == start_offset):
            return
        del self._epochs[:i], self._starts[:i]
        self._starts[0] = start_offset
        self._persist()

    def rebuild(self, pairs: list[tuple[int, int]]) -> None:
        """Refill from (epoch, first offset) pairs in log order, then write the file."""
        self._epochs.clear()
        self._starts.clear()
        for epoch, offset in pairs:
            self.assign(epoch, offset, persist=False)
        self.flush()

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()
        self._persist()

    def flush(self, durable: bool = True) -> None:
        """Write the file even if nothing changed (after a rebuild). `durable=False` for an
        empty cache of a new log: if a crash loses that file, an empty log rebuilds the same."""
        self._persist(durable)
        self.needs_rebuild = False

    def delete_file(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
