"""A share partition (KIP-932): one share group's view of one topic partition, on its leader.

Pure decisions, no I/O: the broker reads the log and hands the offsets it read here; this
module decides which records a member acquires, what its acknowledgements do, when locks
expire and how far the share-partition start offset (SPSO) advances. Every record in the
in-flight window [start_offset, end_offset) has a state:

    AVAILABLE  -> ACQUIRED (by one member, until its lock expires; delivery count + 1)
    ACQUIRED   -> ACKNOWLEDGED (accept) | AVAILABLE (release, lock expiry, leader failover) | ARCHIVED (reject)
    AVAILABLE  -> ARCHIVED when its delivery count has reached the limit (a poison record)

Records below the start offset are done (acknowledged or archived); the start offset moves
up over every leading done record, which frees room in the window
(`group.share.partition.max.record.locks` records at most between start and end).
"""
from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from praha.errors import ErrorCode, PrahaError
from praha.log.batch import BatchHeader


class RecordState(enum.IntEnum):
    """Kafka's record states (the values of its share-group state records)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """The acknowledge types of ShareFetch and ShareAcknowledge (0 marks a gap: no record there)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


class InvalidRecordState(PrahaError):
    code = ErrorCode.INVALID_RECORD_STATE


@dataclass(frozen=True)
class SharePartitionSettings:
    max_record_locks: int = 2000
    lock_duration_ms: int = 30000
    delivery_count_limit: int = 5


@dataclass
class InFlight:
    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline_ms: int = 0


@dataclass(frozen=True)
class AcquiredRange:
    """Consecutive records acquired together with the same delivery count (ShareFetch's AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True)
class AckBatch:
    """One acknowledgement batch: one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]

    def type_of(self, offset: int) -> int:
        return self.types[0] if len(self.types) == 1 else self.types[offset - self.first_offset]


@dataclass(frozen=True)
class StateBatch:
    """A run of in-flight records with one durable state and delivery count (what survives a failover)."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


@dataclass
class SharePartition:
    """The in-flight window of one (group, topic partition); see the module docstring."""

    settings: SharePartitionSettings
    start_offset: int
    records: dict[int, InFlight] = field(default_factory=dict)
    end_offset: int = -1

    def __post_init__(self) -> None:
        if self.end_offset < self.start_offset:
            self.end_offset = self.start_offset

    # -- reading ---------------------------------------------------------------------------------
    def fetch_offset(self) -> int:
        """Where the broker's next read should start: the first available in-flight record, else the end."""
        avail = [o for o, r in self.records.items() if r.state is RecordState.AVAILABLE]
        return min(avail) if avail else self.end_offset

    def acquirable(self, first: int, last: int) -> int:
        """How many offsets of [first, last] a member could acquire now: new ones past the end
        (within the window) and available ones inside it (lets a reader stop early)."""
        hi = min(last, self.start_offset + self.settings.max_record_locks - 1)
        lo = max(first, self.start_offset)
        if hi < lo:
            return 0
        new = max(0, hi - max(lo, self.end_offset) + 1)
        inside = sum(1 for o in range(lo, min(hi + 1, self.end_offset))
                     if (r := self.records.get(o)) is not None and r.state is RecordState.AVAILABLE)
        return new + inside

    def window_full(self) -> bool:
        return self.end_offset - self.start_offset >= self.settings.max_record_locks

    def in_flight_count(self) -> int:
        """Records between the start offset and the end that are not yet done."""
        return sum(1 for r in self.records.values() if r.state in (RecordState.AVAILABLE, RecordState.ACQUIRED))

    def acquired_by(self, member_id: str) -> list[int]:
        return sorted(o for o, r in self.records.items()
                      if r.state is RecordState.ACQUIRED and r.member_id == member_id)

    # -- acquiring -------------------------------------------------------------------------------
    def acquire(self, member_id: str, offsets: Iterable[int], read_end: int, now_ms: int,
                max_records: int | None = None) -> list[AcquiredRange]:
        """Lock for `member_id` the deliverable records among `offsets` (read from the log up to,
        not including, `read_end`); new offsets in the read range that hold no deliverable record
        (control records, aborted transactions, compacted away) are archived as gaps."""
        deliverable = sorted(set(offsets))
        deadline = now_ms + self.settings.lock_duration_ms
        taken: list[tuple[int, int]] = []
        limit = max_records if max_records and max_records > 0 else None
        for o in deliverable:
            if limit is not None and len(taken) >= limit:
                break
            if o < self.start_offset:
                continue
            r = self.records.get(o)
            if r is None:
                if o < self.end_offset:
                    continue  # already done and dropped below a gap we archived
                if o - self.start_offset >= self.settings.max_record_locks:
                    break
                self._archive_gaps(self.end_offset, o)
                r = self.records[o] = InFlight(RecordState.AVAILABLE)
                self.end_offset = o + 1
            if r.state is not RecordState.AVAILABLE:
                continue
            r.state, r.member_id, r.lock_deadline_ms = RecordState.ACQUIRED, member_id, deadline
            r.delivery_count += 1
            taken.append((o, r.delivery_count))
        if limit is None or len(taken) < limit:
            stop = min(read_end, self.start_offset + self.settings.max_record_locks)
            if stop > self.end_offset:
                self._archive_gaps(self.end_offset, stop)
                self.end_offset = stop
        self._advance()
        return _ranges(taken)

    def _archive_gaps(self, first: int, end: int) -> None:
        for o in range(max(first, self.start_offset), end):
            self.records.setdefault(o, InFlight(RecordState.ARCHIVED))

    # -- acknowledging ---------------------------------------------------------------------------
    def acknowledge(self, member_id: str, batches: Sequence[AckBatch]) -> None:
        """Apply a member's acknowledgements, all or nothing: every offset named must be a record
        this member holds (a gap may name an offset already archived as one); else
        INVALID_RECORD_STATE and nothing changes."""
        plan: list[tuple[int, int]] = []
        for b in batches:
            if b.last_offset < b.first_offset or not b.types or (
                    len(b.types) != 1 and len(b.types) != b.last_offset - b.first_offset + 1):
                raise InvalidRecordState(f"malformed acknowledgement batch {b.first_offset}-{b.last_offset}")
            for o in range(b.first_offset, b.last_offset + 1):
                t = b.type_of(o)
                if t not in AcknowledgeType.__members__.values():
                    raise InvalidRecordState(f"unknown acknowledge type {t}")
                r = self.records.get(o)
                if t == AcknowledgeType.GAP and (r is None or r.state is RecordState.ARCHIVED):
                    continue
                if r is None or r.state is not RecordState.ACQUIRED or r.member_id != member_id:
                    state = "done" if r is None else r.state.name
                    raise InvalidRecordState(f"offset {o} is {state}, not acquired by this member")
                plan.append((o, t))
        for o, t in plan:
            r = self.records[o]
            if t == AcknowledgeType.ACCEPT:
                self._finish(r, RecordState.ACKNOWLEDGED)
            elif t in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
                self._finish(r, RecordState.ARCHIVED)
            else:
                self._make_available(r)
        self._advance()

    def release_member(self, member_id: str) -> int:
        """Give back every record `member_id` holds (it left, or its share session closed)."""
        held = [r for r in self.records.values() if r.state is RecordState.ACQUIRED and r.member_id == member_id]
        for r in held:
            self._make_available(r)
        self._advance()
        return len(held)

    def expire_locks(self, now_ms: int) -> int:
        """Records whose acquisition lock has run out go back to Available (or are archived at the limit)."""
        due = [r for r in self.records.values()
               if r.state is RecordState.ACQUIRED and r.lock_deadline_ms <= now_ms]
        for r in due:
            self._make_available(r)
        self._advance()
        return len(due)

    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self.records.values() if r.state is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def _make_available(self, r: InFlight) -> None:
        if self._after_lock(r) is RecordState.ARCHIVED:
            self._finish(r, RecordState.ARCHIVED)
        else:
            r.state, r.member_id, r.lock_deadline_ms = RecordState.AVAILABLE, None, 0

    def _after_lock(self, r: InFlight) -> RecordState:
        """Where a record goes when its acquisition ends unacknowledged (release, lock expiry,
        member gone, leader gone): available, or archived once its deliveries reached the limit."""
        return RecordState.ARCHIVED if r.delivery_count >= self.settings.delivery_count_limit \
            else RecordState.AVAILABLE

    @staticmethod
    def _finish(r: InFlight, state: RecordState) -> None:
        r.state, r.member_id, r.lock_deadline_ms = state, None, 0

    def _advance(self) -> None:
        s = self.start_offset
        while s < self.end_offset:
            r = self.records.get(s)
            if r is None or r.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del self.records[s]
            s += 1
        self.start_offset = s

    # -- moving the window -----------------------------------------------------------------------
    def move_start(self, offset: int) -> None:
        """The start offset jumps to `offset` (the log's start moved past it, or an operator reset
        the group's offsets): records below it are forgotten, the window begins there."""
        for o in [o for o in self.records if o < offset]:
            del self.records[o]
        self.start_offset = offset
        self.end_offset = max(self.end_offset, offset)
        self._advance()

    # -- durable state ---------------------------------------------------------------------------
    def state_batches(self) -> list[StateBatch]:
        """The in-flight window as it should survive the leader: an acquired record counts as
        its lock expired (the lock dies with the leader): available, or archived when that
        delivery was its last (chaos seed 502: written as available at the limit, the next
        leader delivered it once more than the limit allows). Delivery counts kept."""
        out: list[StateBatch] = []
        for o in sorted(self.records):
            r = self.records[o]
            state = self._after_lock(r) if r.state is RecordState.ACQUIRED else r.state
            last = out[-1] if out else None
            if last and last.last_offset == o - 1 and last.state is state and last.delivery_count == r.delivery_count:
                out[-1] = StateBatch(last.first_offset, o, state, r.delivery_count)
            else:
                out.append(StateBatch(o, o, state, r.delivery_count))
        return out

    @classmethod
    def restore(cls, settings: SharePartitionSettings, start_offset: int,
                batches: Iterable[StateBatch]) -> SharePartition:
        sp = cls(settings, start_offset)
        for b in batches:
            for o in range(max(b.first_offset, start_offset), b.last_offset + 1):
                r = InFlight(b.state, b.delivery_count)
                if r.state in (RecordState.ACQUIRED, RecordState.AVAILABLE):  # no delivery past the limit
                    r.state = sp._after_lock(r)
                sp.records[o] = r
                sp.end_offset = max(sp.end_offset, o + 1)
        sp._advance()
        return sp


def _ranges(taken: list[tuple[int, int]]) -> list[AcquiredRange]:
    out: list[AcquiredRange] = []
    for o, dc in taken:
        last = out[-1] if out else None
        if last and last.last_offset == o - 1 and last.delivery_count == dc:
            out[-1] = AcquiredRange(last.first_offset, o, dc)
        else:
            out.append(AcquiredRange(o, o, dc))
    return out


@dataclass(frozen=True)
class LogRecord:
    """What the committed-read filter needs of one record read from the log."""

    offset: int
    producer_id: int
    transactional: bool
    control: bool


def committed_offsets(records: Sequence[LogRecord], aborted: Sequence[tuple[int, int]]) -> list[int]:
    """Offsets a read_committed share group may deliver: data records, minus those of aborted
    transactions (`aborted`: (producer id, first offset) pairs, as Fetch reports them), walking
    the records in order the way a consumer does (a producer's abort marker ends its aborted span)."""
    starts = sorted(aborted, key=lambda a: a[1])
    i = 0
    aborting: set[int] = set()
    out: list[int] = []
    for r in sorted(records, key=lambda r: r.offset):
        while i < len(starts) and starts[i][1] <= r.offset:
            aborting.add(starts[i][0])
            i += 1
        if r.control:
            aborting.discard(r.producer_id)
            continue
        if r.transactional and r.producer_id in aborting:
            continue
        out.append(r.offset)
    return out


def initial_start_offset(reset: str, log_start: int, high_watermark: int) -> int:
    """`share.auto.offset.reset` for a share partition with no state yet: latest (Kafka's default) or earliest."""
    if reset == "earliest":
        return log_start
    if reset == "latest":
        return high_watermark
    raise PrahaError(f"share.auto.offset.reset must be earliest or latest, not {reset!r}", ErrorCode.INVALID_CONFIG)


def covering(data: bytes, headers: list[BatchHeader], ranges: list[AcquiredRange]) -> bytes:
    """The bytes of the batches from the first to the last holding an acquired offset: what the
    member needs, not the whole read (a fetch of 50 records must not ship megabytes)."""
    if not ranges:
        return b""
    first, last = ranges[0].first_offset, ranges[-1].last_offset
    held = [h for h in headers if h.last_offset >= first and h.base_offset <= last]
    if not held:
        return b""
    return data[held[0].position:held[-1].position + held[-1].size]
