"""One log's producer state and its snapshots on disk (Kafka's ProducerStateManager).

The table (`producer_state.ProducerStateTable`: each producer's last batches and open
transaction) is built when first needed after a load or a truncation: from the newest
snapshot at or below the log end and the batches from its offset on; with no snapshot (a
log written before they existed), from the tail of the active segment (at most
PRODUCER_SCAN_BYTES). The log writes a snapshot at every roll, at close and below its
first producer batch, and deletes those its truncation or retention passes. Recovery that
checked segments rewrites their aborted-transaction indexes by replaying from the newest
snapshot before them. The log calls in under its lock.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence

from praha.log import producer_snapshot
from praha.log.batch import CONTROL_MASK, BatchHeader
from praha.log.errors import CorruptCheckpointError
from praha.log.producer_state import CompletedTxn, ProducerStateTable, marker_of
from praha.log.segment import LogSegment
from praha.log.txn_index import AbortedTxn

log = logging.getLogger(__name__)

#: how much of the active segment's tail rebuilds the idempotent producers' state
PRODUCER_SCAN_BYTES = 64 << 20


def aborted_entry(table: ProducerStateTable, done: CompletedTxn) -> AbortedTxn:
    """The aborted-transaction index entry of a transaction its marker just closed."""
    return AbortedTxn(done.producer_id, done.first_offset, done.last_offset, table.last_stable_offset_after(done))


class ProducerStateManager:
    """The producer table of the log in `directory`, built on first use, and its snapshots."""

    def __init__(self, directory: str):
        self.dir = directory
        #: built on first use, dropped by truncation (`forget`)
        self.table: ProducerStateTable | None = None
        self._has_snapshot: bool | None = None  # any producer snapshot on disk? (None: look)

    def get(self, segments: Sequence[LogSegment], log_end: int) -> ProducerStateTable:
        """The table, rebuilt from the newest snapshot and the log if it is not built."""
        table = self.table
        if table is None:
            table, since = self.load_snapshot(log_end)
            if since is None:
                seg = segments[-1]
                start = 0
                if seg.size > PRODUCER_SCAN_BYTES:
                    seg.ensure_indexes()
                    start = seg.offset_index.floor_position_for_limits(seg.size - PRODUCER_SCAN_BYTES, None)[1]
                for h in seg.scan_headers(start, seg.size):
                    self._replay_batch(table, seg, h)
            else:
                self._replay(table, segments, log_end, since)
            self.table = table
        return table

    def forget(self) -> None:
        """The log was truncated: the table is rebuilt when next needed."""
        self.table = None

    def _replay(self, table: ProducerStateTable, segments: Sequence[LogSegment], log_end: int,
                since: int) -> dict[LogSegment, list[AbortedTxn]]:
        """Feed every batch from offset `since` on to `table`; the aborted transactions
        they close, by the segment holding their marker."""
        aborted: dict[LogSegment, list[AbortedTxn]] = {}
        for seg in segments:
            if (seg.next_offset if seg.next_offset is not None else log_end) <= since:
                continue
            for h in seg.scan_headers(0, seg.size):
                if h.base_offset < since:
                    continue
                done = self._replay_batch(table, seg, h)
                if done is not None and done.aborted:
                    aborted.setdefault(seg, []).append(aborted_entry(table, done))
        return aborted

    def _replay_batch(self, table: ProducerStateTable, seg: LogSegment, h: BatchHeader) -> CompletedTxn | None:
        """Recovery's record of one batch already in the log (no checks)."""
        if h.producer_id < 0:
            return None
        if h.attributes & CONTROL_MASK:
            marker = marker_of(seg.read_bytes(h.position, h.size), h.base_offset, self.dir)
            return table.record_marker(h.producer_id, h.producer_epoch, marker, h.base_offset) if marker else None
        table.record(h.producer_id, h.producer_epoch, h.base_sequence, h.last_offset_delta, h.base_offset,
                     h.is_transactional)
        return None

    def rebuild_txn_indexes(self, segments: Sequence[LogSegment], log_end: int, from_base: int) -> None:
        """Recovery checked the segments from `from_base` on: rewrite their aborted-
        transaction indexes by replaying producer state from the newest snapshot at or
        below `from_base` (the whole log without one); the table is kept."""
        table, since = self.load_snapshot(from_base)
        if since is None:
            since = segments[0].base_offset
        aborted = self._replay(table, segments, log_end, since)
        rewritten = 0
        for seg in segments:
            if seg.base_offset >= from_base:
                entries = aborted.get(seg, [])
                if entries or len(seg.txn_index):
                    seg.txn_index.reset(entries)
                    rewritten += 1
        self.table = table
        if rewritten:
            log.info("Rebuilt the aborted-transaction indexes of %d segments of %s from offset %d",
                     rewritten, self.dir, since)

    def load_snapshot(self, upto: int) -> tuple[ProducerStateTable, int | None]:
        """The newest readable snapshot at or below `upto` (corrupt ones are deleted),
        and its offset; an empty table and None if there is none."""
        for offset in reversed(producer_snapshot.list_snapshots(self.dir)):
            if offset > upto:
                continue
            try:
                return ProducerStateTable.from_snapshot(producer_snapshot.read(self.dir, offset)), offset
            except (CorruptCheckpointError, OSError) as e:
                log.warning("Deleting unreadable producer snapshot of %s at %d: %s", self.dir, offset, e)
                self.delete_snapshots([offset])
        return ProducerStateTable(), None

    def snapshots(self) -> list[int]:
        """The offsets of the snapshots on disk, ascending."""
        return producer_snapshot.list_snapshots(self.dir)

    def delete_snapshots(self, offsets: list[int]) -> None:
        producer_snapshot.delete(self.dir, offsets)
        self._has_snapshot = None

    def take_snapshot(self, offset: int) -> None:
        """Write the producer table as the snapshot at `offset` (if the table is built: an
        unbuilt one has not changed since the snapshot it would be rebuilt from)."""
        table = self.table
        if table is None:
            return
        try:
            producer_snapshot.write(self.dir, offset, table.snapshot())
            self._has_snapshot = True
        except OSError as e:  # the log stays correct; only a longer rebuild after a restart
            log.warning("Could not write the producer snapshot of %s at %d: %s", self.dir, offset, e)

    def snapshot_before_first_producer(self, offset: int) -> None:
        """An append brings producer batches from `offset` on: if the log has no snapshot
        yet, one below them, so that recovery after a crash rebuilds from there (every
        batch since), not from a bounded tail of the log."""
        if self._has_snapshot:
            return
        if self._has_snapshot is None:
            self._has_snapshot = bool(producer_snapshot.list_snapshots(self.dir))
        if not self._has_snapshot:
            self.take_snapshot(offset)
