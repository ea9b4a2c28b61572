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

Transactions (Kafka's ProducerAppendInfo): a transactional batch (attribute 0x10) of a
producer with no open transaction opens one at its first offset; until it closes, a
non-transactional batch from that producer is INVALID_TXN_STATE. A marker (`record_marker`)
closes it: refused on the leader when its producer epoch is older than the producer's
(INVALID_PRODUCER_EPOCH) or its coordinator epoch older than the last marker's
(TRANSACTION_COORDINATOR_FENCED); it returns the `CompletedTxn` (first offset, marker
offset, aborted or not) for the aborted-transaction index. The last stable offset is the
high watermark, or below it the first offset of a transaction still open or whose marker
is not yet replicated (`last_stable_offset`): a read_committed consumer reads up to it.
The table is rebuilt when the log is loaded or truncated from the newest snapshot
(`producer_snapshot`, each producer's last batch) and the batches after it (see `Log`).
No I/O here.
"""
from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple, NoReturn

from praha.log.batch import CONTROL_MASK, BatchHeader, Buffer
from praha.log.control import TxnMarker, parse_marker
from praha.log.errors import (
    CorruptBatchError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from praha.log.producer_snapshot import SnapshotEntry

log = logging.getLogger(__name__)

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
    #: epoch of the transaction coordinator that wrote this producer's last marker
    coordinator_epoch: int = -1
    #: first offset of the producer's open transaction in this partition, or -1
    current_txn_first_offset: int = -1

    @property
    def last_sequence(self) -> int | None:
        return self.batches[-1].last_sequence if self.batches else None


class SequenceVerdict(Enum):
    ACCEPT = "accept"
    DUPLICATE = "duplicate"
    FENCED_EPOCH = "fenced epoch"
    OUT_OF_ORDER = "out of order"
    #: a non-transactional batch while the producer's transaction is open
    INVALID_TXN_STATE = "invalid transaction state"


class MarkerVerdict(Enum):
    ACCEPT = "accept"
    FENCED_EPOCH = "fenced epoch"
    COORDINATOR_FENCED = "coordinator fenced"


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by a marker: its first offset and the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    verdict: SequenceVerdict
    #: for DUPLICATE: the earlier write's offsets
    duplicate_of: WrittenBatch | None = None
    expected: int | None = None


class AppendOrigin(Enum):
    """Who appends, which decides the checks (Kafka's AppendOrigin)."""

    #: a producer's Produce on the leader: every idempotence and transaction rule
    CLIENT = "client"
    #: a transaction marker the leader writes for the coordinator (WriteTxnMarkers)
    COORDINATOR = "coordinator"
    #: a follower copying its leader's batches: no checks, the state only follows
    REPLICATION = "replication"


class BatchEffect(NamedTuple):
    """What one batch does to its producer's state once it is in the log (a tuple: one is
    made per producer batch on the produce path)."""

    producer_id: int
    epoch: int
    base_sequence: int
    last_offset_delta: int
    transactional: bool
    #: a control batch's marker (it closes the producer's transaction)
    marker: TxnMarker | None


@dataclass(slots=True)
class ProducerAppendInfo:
    """The outcome of `ProducerStateTable.analyze` for one append (Kafka's ProducerAppendInfo)."""

    #: by the batch's position in the appended buffer: what the log records once it lands
    effects: dict[int, BatchEffect]
    #: an idempotent producer's retry: the earlier write, answered instead of appending
    duplicate: WrittenBatch | None = None


#: the verdict of every accepted batch (one object: none is made per batch)
ACCEPTED = SequenceCheck(SequenceVerdict.ACCEPT)


class ProducerStateTable:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        #: producer id -> first offset of its open transaction
        self.ongoing: dict[int, int] = {}
        #: closed transactions whose marker may still be above the high watermark
        self.unreplicated: list[CompletedTxn] = []
        #: producer id -> token of a KIP-890 verification in flight (a marker cancels it)
        self.verifying: dict[int, object] = {}

    def __len__(self) -> int:
        return len(self.producers)

    def check(self, producer_id: int, epoch: int, base_sequence: int, last_offset_delta: int) -> SequenceCheck:
        return _sequence_check(self.producers.get(producer_id), epoch, base_sequence, last_offset_delta)

    def analyze(self, batches: Sequence[BatchHeader], origin: AppendOrigin, data: Buffer, *,
                verified: dict[int, object] | None = None, where: str = "") -> ProducerAppendInfo:
        """The one producer-state pass of an append (Kafka's analyzeAndValidateProducerState),
        before anything is written: each batch's producer entry is read once, checked as its
        origin asks, and its effect kept for the log to record once the batch is written.

        CLIENT (a Produce on the leader): Kafka's idempotence and transaction rules, in order
        per batch (a batch continues the one before it from the same producer and epoch in
        this append); the first sequence refusal raises; a duplicate stops the checks and is
        returned; with `verified` (KIP-890) a transactional batch of a producer with no open
        transaction here needs its still-current token, else INVALID_TXN_STATE (raised
        after every sequence check, as before). COORDINATOR (a marker the leader writes):
        an older producer epoch or coordinator epoch raises. REPLICATION (a follower): no
        checks. Raises InvalidProducerEpochError, OutOfOrderSequenceError,
        InvalidTxnStateError or TransactionCoordinatorFencedError; `where` names the log."""
        effects: dict[int, BatchEffect] = {}
        info = ProducerAppendInfo(effects)
        staged: dict[int, tuple[int, int]] = {}  # producer id -> (epoch, last sequence) so far
        opened: set[int] = set()  # producers whose transaction this append opens
        unverified = -1  # the first producer whose transactional batch lacks its token
        entries: dict[int, ProducerEntry | None] = {}  # each producer's state, read once per append
        client = origin is AppendOrigin.CLIENT
        for h in batches:
            pid = h.producer_id
            if pid < 0:
                continue
            if h.attributes & CONTROL_MASK:
                marker = marker_of(memoryview(data)[h.position:h.position + h.size], h.base_offset, where)
                if marker is None:
                    continue
                if origin is AppendOrigin.COORDINATOR:
                    _check_marker_entry(self.producers.get(pid), h, marker, where)
                effects[h.position] = BatchEffect(pid, h.producer_epoch, h.base_sequence, h.last_offset_delta,
                                                  True, marker)
                continue
            if client:
                if pid in entries:
                    entry = entries[pid]
                else:
                    entry = entries[pid] = self.producers.get(pid)
                if info.duplicate is None:
                    check = self._check_in_append(entry, h, staged, opened)
                    if check.verdict is SequenceVerdict.DUPLICATE:
                        info.duplicate = check.duplicate_of
                    elif check.verdict is not SequenceVerdict.ACCEPT:
                        _refuse(h, check, where)
                if (verified is not None and unverified < 0 and h.is_transactional
                        and not _txn_open(entry, h.producer_epoch)):
                    token = verified.get(pid)
                    if token is None or self.verifying.get(pid) is not token:
                        unverified = pid
                if info.duplicate is not None:
                    continue
            effects[h.position] = BatchEffect(pid, h.producer_epoch, h.base_sequence, h.last_offset_delta,
                                              h.is_transactional, None)
        if unverified >= 0:
            raise InvalidTxnStateError(f"producer {unverified}: {where} is not verified to be in its transaction")
        return info

    @staticmethod
    def _check_in_append(entry: ProducerEntry | None, h: BatchHeader, staged: dict[int, tuple[int, int]],
                         opened: set[int]) -> SequenceCheck:
        """One client batch's verdict against its producer's entry and the batches before it
        in the same append (`staged`, `opened` are updated for an accepted batch)."""
        pid = h.producer_id
        if h.is_transactional:
            opened.add(pid)
        elif (entry is not None and entry.current_txn_first_offset >= 0) or pid in opened:
            return SequenceCheck(SequenceVerdict.INVALID_TXN_STATE)
        before = staged.get(pid)
        if before is not None and before[0] == h.producer_epoch:
            expected = next_sequence(before[1])
            if h.base_sequence != expected:
                return SequenceCheck(SequenceVerdict.OUT_OF_ORDER, expected=expected)
        else:
            check = _sequence_check(entry, h.producer_epoch, h.base_sequence, h.last_offset_delta)
            if check.verdict is not SequenceVerdict.ACCEPT:
                return check
        staged[pid] = (h.producer_epoch, last_sequence(h.base_sequence, h.last_offset_delta))
        return ACCEPTED

    def snapshot(self) -> list[SnapshotEntry]:
        """Each producer's epoch, last batch and transaction state, as Kafka's snapshot
        keeps them (a producer known only from markers has no batch: sequence -1)."""
        out = []
        for pid, entry in self.producers.items():
            if entry.batches:
                b = entry.batches[-1]
                out.append(SnapshotEntry(pid, entry.epoch, b.last_sequence, b.last_offset,
                                         b.last_offset - b.first_offset,
                                         coordinator_epoch=entry.coordinator_epoch,
                                         current_txn_first_offset=entry.current_txn_first_offset))
            elif entry.coordinator_epoch >= 0 or entry.current_txn_first_offset >= 0:
                out.append(SnapshotEntry(pid, entry.epoch, -1, -1, 0, coordinator_epoch=entry.coordinator_epoch,
                                         current_txn_first_offset=entry.current_txn_first_offset))
        return out

    @classmethod
    def from_snapshot(cls, entries: Iterable[SnapshotEntry]) -> ProducerStateTable:
        table = cls()
        for e in entries:
            entry = table.producers[e.producer_id] = ProducerEntry(e.epoch, coordinator_epoch=e.coordinator_epoch,
                                                                   current_txn_first_offset=e.current_txn_first_offset)
            if e.current_txn_first_offset >= 0:
                table.ongoing[e.producer_id] = e.current_txn_first_offset
            if e.last_sequence < 0:
                continue  # known from markers only
            first_sequence = e.last_sequence - e.offset_delta
            if first_sequence < 0:  # the batch wrapped past 2^31 - 1
                first_sequence += MAX_SEQUENCE + 1
            entry.batches.append(WrittenBatch(first_sequence, e.last_sequence, e.last_offset - e.offset_delta,
                                              e.last_offset))
        return table

    def record(self, producer_id: int, epoch: int, base_sequence: int, last_offset_delta: int,
               first_offset: int, transactional: bool = False) -> None:
        """A batch now in the log (leader append, follower append or recovery scan); a
        transactional one opens the producer's transaction if none is open."""
        entry = self._entry_for_epoch(producer_id, epoch)
        if entry is None:
            return  # a fenced producer's batch cannot change the state
        entry.batches.append(WrittenBatch(base_sequence, last_sequence(base_sequence, last_offset_delta),
                                          first_offset, first_offset + last_offset_delta))
        if transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = first_offset
            self.ongoing[producer_id] = first_offset

    def _entry_for_epoch(self, producer_id: int, epoch: int) -> ProducerEntry | None:
        """The producer's entry, started afresh (keeping its transaction state) for a newer
        epoch; None for an older epoch."""
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            old = entry
            entry = self.producers[producer_id] = ProducerEntry(epoch)
            if old is not None:
                entry.coordinator_epoch = old.coordinator_epoch
                entry.current_txn_first_offset = old.current_txn_first_offset
        elif epoch < entry.epoch:
            return None
        return entry

    # -- transactions --------------------------------------------------------------------
    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> MarkerVerdict:
        """The leader's checks of a marker before it is appended (Kafka's for a
        coordinator's append): an older producer epoch, an older coordinator epoch."""
        return _marker_verdict(self.producers.get(producer_id), epoch, coordinator_epoch)

    def record_marker(self, producer_id: int, epoch: int, marker: TxnMarker, offset: int) -> CompletedTxn | None:
        """A marker now in the log at `offset`: closes the producer's open transaction
        (returned) and remembers the coordinator epoch; a marker with no open
        transaction (a retry, or one for a partition the producer never wrote) closes
        nothing."""
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = self._entry_for_epoch(producer_id, epoch)
        assert entry is not None
        entry.coordinator_epoch = marker.coordinator_epoch
        self.verifying.pop(producer_id, None)
        first = entry.current_txn_first_offset
        if first < 0:
            return None
        entry.current_txn_first_offset = -1
        self.ongoing.pop(producer_id, None)
        done = CompletedTxn(producer_id, first, offset, not marker.is_commit)
        self.unreplicated.append(done)
        return done

    def last_stable_offset_after(self, done: CompletedTxn) -> int:
        """The last stable offset right after `done` closed (its aborted-index entry): the
        first offset of another open transaction, or the offset after the marker."""
        others = [first for pid, first in self.ongoing.items() if pid != done.producer_id]
        return min(others) if others else done.last_offset + 1

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of a transaction still open or whose marker is not yet below
        the high watermark; None if there is none."""
        if self.unreplicated:
            self.unreplicated = [t for t in self.unreplicated if t.last_offset >= high_watermark]
        firsts = list(self.ongoing.values())
        firsts.extend(t.first_offset for t in self.unreplicated)
        return min(firsts) if firsts else None

    def last_stable_offset(self, high_watermark: int) -> int:
        first = self.first_unstable_offset(high_watermark) if self.ongoing or self.unreplicated else None
        return high_watermark if first is None else min(first, high_watermark)

    def has_ongoing_transaction(self, producer_id: int, epoch: int) -> bool:
        """Whether the producer has an open transaction here under this epoch (then a
        transactional produce needs no KIP-890 verification)."""
        return _txn_open(self.producers.get(producer_id), epoch)


def marker_of(batch: Buffer, offset: int, where: str) -> TxnMarker | None:
    """The marker of one whole control batch; None if the cleaner emptied it or it cannot
    be read (a replica's or a recovered copy is kept as the leader wrote it)."""
    try:
        return parse_marker(batch)
    except CorruptBatchError as e:
        log.warning("Unreadable transaction marker in %s at offset %d: %s", where, offset, e)
        return None


def _sequence_check(entry: ProducerEntry | None, epoch: int, base_sequence: int, last_offset_delta: int
                    ) -> SequenceCheck:
    """Kafka's idempotence rules for one batch against its producer's entry (see module doc)."""
    if entry is None or epoch > entry.epoch:
        return ACCEPTED
    if epoch < entry.epoch:
        return SequenceCheck(SequenceVerdict.FENCED_EPOCH)
    last = last_sequence(base_sequence, last_offset_delta)
    for b in entry.batches:
        if b.first_sequence == base_sequence and b.last_sequence == last:
            return SequenceCheck(SequenceVerdict.DUPLICATE, duplicate_of=b)
    expected = next_sequence(entry.last_sequence) if entry.last_sequence is not None else base_sequence
    if base_sequence != expected:
        return SequenceCheck(SequenceVerdict.OUT_OF_ORDER, expected=expected)
    return ACCEPTED


def _marker_verdict(entry: ProducerEntry | None, epoch: int, coordinator_epoch: int) -> MarkerVerdict:
    if entry is None:
        return MarkerVerdict.ACCEPT
    if epoch < entry.epoch:
        return MarkerVerdict.FENCED_EPOCH
    if entry.coordinator_epoch > coordinator_epoch:
        return MarkerVerdict.COORDINATOR_FENCED
    return MarkerVerdict.ACCEPT


def _txn_open(entry: ProducerEntry | None, epoch: int) -> bool:
    return entry is not None and entry.epoch == epoch and entry.current_txn_first_offset >= 0


def _check_marker_entry(entry: ProducerEntry | None, h: BatchHeader, marker: TxnMarker, where: str) -> None:
    verdict = _marker_verdict(entry, h.producer_epoch, marker.coordinator_epoch)
    if verdict is MarkerVerdict.FENCED_EPOCH:
        raise InvalidProducerEpochError(f"marker for producer {h.producer_id} with epoch {h.producer_epoch}, "
                                        "older than the one this log knows")
    if verdict is MarkerVerdict.COORDINATOR_FENCED:
        raise TransactionCoordinatorFencedError(
            f"marker for producer {h.producer_id} from coordinator epoch {marker.coordinator_epoch}, older than "
            f"the last one in {where}")


def _refuse(h: BatchHeader, check: SequenceCheck, where: str) -> NoReturn:
    """The error a refused client batch gets (Kafka's codes)."""
    if check.verdict is SequenceVerdict.FENCED_EPOCH:
        raise InvalidProducerEpochError(
            f"producer {h.producer_id} epoch {h.producer_epoch} is older than the one this log knows")
    if check.verdict is SequenceVerdict.INVALID_TXN_STATE:
        raise InvalidTxnStateError(f"expected a transactional write from producer {h.producer_id} "
                                   f"in {where}: its transaction is open")
    raise OutOfOrderSequenceError(f"producer {h.producer_id}: sequence {h.base_sequence}, expected {check.expected}")
