"""The records of a producer's batches, checked on the leader before the append (Kafka's
`LogValidator`), so that no batch a consumer cannot read ever reaches the log.

`batch.validate(strict=True)` has already checked each batch's framing, CRC, magic, record
count against lastOffsetDelta and size. Here, for each batch:
1. a compressed batch is decompressed with its codec; a payload that does not decompress is
   CORRUPT_MESSAGE;
2. its records are walked: exactly `recordCount` records that fill the records section to
   the byte, each record's length matching its fields, header counts and lengths in bounds
   (INVALID_RECORD otherwise, as Kafka's DefaultRecord does);
3. each record is checked: offset deltas 0, 1, 2… (consumers compute offsets from them),
   a key when the topic is compacted, the timestamp within `message.timestamp.before.max.ms`
   / `after.max.ms` of the broker's clock for CreateTime. These failures name the record
   (Produce v8+ `record_errors`).

The walk is aiokafka's record reader: compiled (Cython) in its wheels, about 0.2 µs per
record, where a Python walk costs 1.1 µs; with the pure-Python fallback it is slower but
as strict. aiokafka is imported on the first validation (its package imports its whole
client, about 0.3 CPU-seconds): a broker that leads no produced partition never pays for it.
"""
from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from praha.encoding.compression import codec_available, decompress
from praha.log.batch import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    Buffer,
)
from praha.log.errors import CorruptBatchError, InvalidRecordError

if TYPE_CHECKING:
    from aiokafka.record.default_records import DefaultRecordBatch

_BATCH_LENGTH = struct.Struct(">i")
_ATTRIBUTES = struct.Struct(">h")
NONE = 0
LONG_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class RecordRules:
    """What a topic asks of each record (from its log config)."""

    compact: bool = False
    timestamp_before_max_ms: int = LONG_MAX
    timestamp_after_max_ms: int = LONG_MAX


class RecordValidationError(InvalidRecordError):
    """Records broke a rule: Produce v8+ reports each as (index in its batch, message)
    (KIP-467), and the batch is refused whole."""

    def __init__(self, message: str, batch_index: int, more: list[tuple[int, str]] | None = None):
        self.record_errors = [(batch_index, message), *(more or [])]
        if more:
            first = "; ".join(f"record {i}: {m}" for i, m in self.record_errors[:3])
            message = f"{len(self.record_errors)} records of the batch were rejected (the first: {first})"
        super().__init__(message)


def validate_records(data: Buffer, batches: list[BatchHeader], rules: RecordRules, now_ms: int) -> None:
    """Walk and check every record of `batches` (headers from `batch.validate` of `data`).
    A malformed batch is refused at its first bad record; records that break a topic's
    rules (a key on a compacted topic, a timestamp range) are all named (KIP-467)."""
    view = memoryview(data)
    check_time = rules.timestamp_before_max_ms != LONG_MAX or rules.timestamp_after_max_ms != LONG_MAX
    for h in batches:
        batch = _plain_batch(view, h)
        if batch is None:
            continue  # a codec this broker lacks: the batch is stored as sent, unread
        expected = h.base_offset  # what the client sent: 0 from every producer
        if not rules.compact and not check_time:
            if _offsets_in_order(batch, expected):
                continue  # the usual topic: structure and offset deltas are all there is to check
            batch = _plain_batch(view, h)  # read again from the start, record by record
            assert batch is not None
        broken: list[tuple[int, str]] = []
        try:
            for index, record in enumerate(batch):
                if record.offset != expected:
                    raise RecordValidationError(f"record {index} has offset delta {record.offset - h.base_offset}, "
                                                f"expected {index}", index)
                expected += 1
                if rules.compact and record.key is None:
                    broken.append((index, "Compacted topic cannot accept message without key"))
                elif check_time:
                    problem = _timestamp_problem(record.timestamp, h, rules, now_ms, index)
                    if problem is not None:
                        broken.append((index, problem))
        except _aiokafka_records().CorruptRecordException as e:
            raise InvalidRecordError(f"batch at byte {h.position}: {e}") from None
        if broken:
            raise RecordValidationError(broken[0][1], broken[0][0], broken[1:])


def _offsets_in_order(batch: DefaultRecordBatch, base: int) -> bool:
    """The walk without the per-record Python loop: True if every record reads and the
    offsets run base, base+1, ...; False sends the batch through the record-by-record walk,
    which names the first problem exactly as before."""
    try:
        offsets = [r.offset for r in batch]
    except _aiokafka_records().CorruptRecordException:
        return False
    return offsets == list(range(base, base + len(offsets)))


def _plain_batch(view: memoryview, h: BatchHeader) -> DefaultRecordBatch | None:
    """The batch as aiokafka reads it, uncompressed (read where it lies when it was not
    compressed); None when its codec is unavailable."""
    start = h.position
    codec = h.attributes & COMPRESSION_MASK
    if codec == NONE:
        return _aiokafka_records().DefaultRecordBatch(view[start:start + h.size])
    if not codec_available(codec):
        return None
    try:
        records = decompress(codec, view[start + HEADER_SIZE:start + h.size])
    except Exception as e:  # noqa: BLE001 - whatever the codec raises, the payload is corrupt
        raise CorruptBatchError(start, f"records do not decompress with codec {codec}: {e}") from None
    raw = bytearray(view[start:start + HEADER_SIZE])
    raw += records
    _BATCH_LENGTH.pack_into(raw, 8, len(raw) - LOG_OVERHEAD)
    _ATTRIBUTES.pack_into(raw, 21, h.attributes & ~COMPRESSION_MASK)
    return _aiokafka_records().DefaultRecordBatch(raw)


@functools.cache
def _aiokafka_records() -> Any:
    """aiokafka's record reader (`DefaultRecordBatch`, `CorruptRecordException`), imported once."""
    from aiokafka.record import default_records

    return default_records


def _timestamp_problem(ts: int, h: BatchHeader, rules: RecordRules, now_ms: int, index: int) -> str | None:
    if h.attributes & TIMESTAMP_TYPE_MASK:
        return None  # LogAppendTime: the broker's clock decides
    if now_ms - ts > rules.timestamp_before_max_ms or ts - now_ms > rules.timestamp_after_max_ms:
        return (f"Timestamp {ts} of message with offset {index} is out of range. The timestamp should be within "
                f"[{now_ms - rules.timestamp_before_max_ms}, {_after(now_ms, rules)}]")
    return None


def _after(now_ms: int, rules: RecordRules) -> int:
    return min(LONG_MAX, now_ms + rules.timestamp_after_max_ms)
