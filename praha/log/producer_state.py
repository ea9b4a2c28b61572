"""Idempotent producers: per partition, the last batches each producer id wrote.

A producer with `enable.idempotence` numbers its batches per partition (base sequence,
wrapping at 2^31) under a producer id and epoch from InitProducerId. When a produce is
retried after a lost response, the leader must answer with the first write's offsets
instead of appending the batch again. For each batch (Kafka's rules, checked in order):
1. an unknown producer id: accepted (its state may predate what was kept);
2. an epoch older than the producer's: INVALID_PRODUCER_EPOCH (a fenced zombie);
3. a newer epoch: accepted, the producer's history starts again;
4. the same (first, last) sequence as one of its last 5 batches: a duplicate, answered
   with that batch's offsets and not appended;
5. the sequence right after its last batch: accepted; anything else:
   OUT_OF_ORDER_SEQUENCE_NUMBER.
Followers and recovery `record` batches without checks, so a new leader knows the state.
The table is rebuilt when the log is loaded or truncated from the newest snapshot
(`producer_snapshot`, each producer's last batch) and the batches after it (see `Log`).
No I/O here.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from praha.log.producer_snapshot import SnapshotEntry

MAX_SEQUENCE = 2**31 - 1
BATCHES_KEPT = 5  # Kafka's max.in.flight.requests.per.connection bound for idempotence


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """The last record's sequence of a batch (sequences wrap to 0 after 2^31 - 1)."""
    if base_sequence > MAX_SEQUENCE - last_offset_delta:
        return last_offset_delta - (MAX_SEQUENCE - base_sequence) - 1
    return base_sequence + last_offset_delta


def next_sequence(sequence: int) -> int:
    return 0 if sequence == MAX_SEQUENCE else sequence + 1


@dataclass(frozen=True, slots=True)
class WrittenBatch:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[WrittenBatch] = field(default_factory=lambda: deque(maxlen=BATCHES_KEPT))

    @property
    def last_sequence(self) -> int | None:
        return self.batches[-1].last_sequence if self.batches else None


class SequenceVerdict(Enum):
    ACCEPT = "accept"
    DUPLICATE = "duplicate"
    FENCED_EPOCH = "fenced epoch"
    OUT_OF_ORDER = "out of order"


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    verdict: SequenceVerdict
    #: for DUPLICATE: the earlier write's offsets
    duplicate_of: WrittenBatch | None = None
    expected: int | None = None


class ProducerStateTable:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self.producers)

    def check(self, producer_id: int, epoch: int, base_sequence: int, last_offset_delta: int) -> SequenceCheck:
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            return SequenceCheck(SequenceVerdict.ACCEPT)
        if epoch < entry.epoch:
            return SequenceCheck(SequenceVerdict.FENCED_EPOCH)
        last = last_sequence(base_sequence, last_offset_delta)
        for b in entry.batches:
            if b.first_sequence == base_sequence and b.last_sequence == last:
                return SequenceCheck(SequenceVerdict.DUPLICATE, duplicate_of=b)
        expected = next_sequence(entry.last_sequence) if entry.last_sequence is not None else base_sequence
        if base_sequence != expected:
            return SequenceCheck(SequenceVerdict.OUT_OF_ORDER, expected=expected)
        return SequenceCheck(SequenceVerdict.ACCEPT)

    def check_append(self, batches: Iterable[Any]) -> tuple[Any, SequenceCheck] | None:
        """`check` for every idempotent batch of one append (headers with producer_id,
        producer_epoch, base_sequence, last_offset_delta); a batch continues the one before
        it in the same append from the same producer and epoch. The first batch that is
        not accepted, with its verdict, or None."""
        staged: dict[int, tuple[int, int]] = {}  # producer id -> (epoch, last sequence) so far
        for h in batches:
            pid = h.producer_id
            if pid < 0:
                continue
            before = staged.get(pid)
            if before is not None and before[0] == h.producer_epoch:
                expected = next_sequence(before[1])
                if h.base_sequence != expected:
                    return h, SequenceCheck(SequenceVerdict.OUT_OF_ORDER, expected=expected)
            else:
                check = self.check(pid, h.producer_epoch, h.base_sequence, h.last_offset_delta)
                if check.verdict is not SequenceVerdict.ACCEPT:
                    return h, check
            staged[pid] = (h.producer_epoch, last_sequence(h.base_sequence, h.last_offset_delta))
        return None

    def snapshot(self) -> list[SnapshotEntry]:
        """Each producer's epoch and last batch, as Kafka's snapshot keeps them."""
        out = []
        for pid, entry in self.producers.items():
            if entry.batches:
                b = entry.batches[-1]
                out.append(SnapshotEntry(pid, entry.epoch, b.last_sequence, b.last_offset, b.last_offset - b.first_offset))
        return out

    @classmethod
    def from_snapshot(cls, entries: Iterable[SnapshotEntry]) -> "ProducerStateTable":
        table = cls()
        for e in entries:
            first_sequence = e.last_sequence - e.offset_delta
            if first_sequence < 0:  # the batch wrapped past 2^31 - 1
                first_sequence += MAX_SEQUENCE + 1
            entry = table.producers[e.producer_id] = ProducerEntry(e.epoch)
            entry.batches.append(WrittenBatch(first_sequence, e.last_sequence, e.last_offset - e.offset_delta,
                                              e.last_offset))
        return table

    def record(self, producer_id: int, epoch: int, base_sequence: int, last_offset_delta: int,
               first_offset: int) -> None:
        """A batch now in the log (leader append, follower append or recovery scan)."""
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = self.producers[producer_id] = ProducerEntry(epoch)
        elif epoch < entry.epoch:
            return  # a fenced producer's batch cannot change the state
        entry.batches.append(WrittenBatch(base_sequence, last_sequence(base_sequence, last_offset_delta),
                                          first_offset, first_offset + last_offset_delta))
