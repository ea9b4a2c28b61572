"""Kafka v2 RecordBatch headers, read and patched in place; records are never decoded.

The produce and replication paths move batches as bytes:

1. `validate(buf)` walks the batch headers (`struct.unpack_from`), checks framing,
   magic 2 and the CRC32C over attributes..end, and returns a `BatchSummary` that
   includes every header (so nobody walks the buffer twice).
2. `assign_offsets(buf, base_offset, leader_epoch)` overwrites baseOffset and
   partitionLeaderEpoch of each batch. Both fields sit before the CRC'd range, so no
   CRC is recomputed; `rebase_headers` gives the matching header views.
3. The segment appends the bytes and indexes them from the headers.

Layout (big-endian, 61-byte header): baseOffset i64, batchLength i32,
partitionLeaderEpoch i32, magic i8, crc u32, attributes i16, lastOffsetDelta i32,
baseTimestamp i64, maxTimestamp i64, producerId i64, producerEpoch i16,
baseSequence i32, recordCount i32, then the records. batchLength counts the bytes
after itself, so a batch is batchLength + 12 bytes long.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

from crc32c import crc32c

from praha.log.errors import (
    CorruptBatchError,
    InvalidRecordError,
    MessageTooLargeError,
    UnsupportedMagicError,
)

Buffer = bytes | bytearray | memoryview

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: bytes not counted by batchLength
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
CURRENT_MAGIC = 2

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_TIMESTAMP = -1
MAX_RELATIVE_OFFSET = 2**31 - 1

OFFSET_AND_LENGTH = struct.Struct(">qi")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")


class BatchHeader(NamedTuple):
    """One batch's header plus where it lies in the buffer it was read from."""

    position: int
    size: int
    base_offset: int
    batch_length: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

@dataclass(frozen=True, slots=True)
class BatchSummary:
    """What `validate` learned; offsets are as found in the buffer (a client sends 0s)."""

    batches: list[BatchHeader]
    record_count: int
    size_bytes: int
    max_timestamp: int
    #: last offset of the batch holding `max_timestamp` (Kafka's shallow offset)
    offset_of_max_timestamp: int

    @property
    def batch_count(self) -> int:
        return len(self.batches)

    @property
    def first_offset(self) -> int:
        return self.batches[0].base_offset if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def offset_span(self) -> int:
        """Offsets the batches occupy once made contiguous (sum of lastOffsetDelta + 1)."""
        return sum(b.last_offset_delta + 1 for b in self.batches)


def parse_header(buf: Buffer, off: int, position: int, limit: int) -> BatchHeader:
    """Parse the header at buf[off], which is the batch starting at byte `position` of data
    that ends at `limit` (a file, or the buffer itself). Checks framing and magic, not CRC.

    `buf` must hold at least min(HEADER_SIZE, limit - position) bytes from `off`. Raises
    `CorruptBatchError` if the batch is cut short by `limit` or malformed, and
    `UnsupportedMagicError` for magic 0/1 message sets."""
    remaining = limit - position
    if remaining < LOG_OVERHEAD:
        raise CorruptBatchError(position, f"truncated: {remaining} bytes left, header needs {HEADER_SIZE}")
    base_offset, length = OFFSET_AND_LENGTH.unpack_from(buf, off)
    if remaining > MAGIC_OFFSET and length > MAGIC_OFFSET - LOG_OVERHEAD:
        magic = buf[off + MAGIC_OFFSET]
        if magic != CURRENT_MAGIC:
            if magic in (0, 1):
                raise UnsupportedMagicError(position, f"magic {magic} message sets are not supported, only v2 batches")
            raise CorruptBatchError(position, f"unknown magic {magic}")
    if length < MIN_BATCH_LENGTH:
        raise CorruptBatchError(position, f"batch length {length} below the minimum {MIN_BATCH_LENGTH}")
    size = length + LOG_OVERHEAD
    if size > remaining:
        raise CorruptBatchError(position, f"truncated: batch of {size} bytes, only {remaining} left")
    header = BatchHeader(position, size, *HEADER.unpack_from(buf, off))
    if header.last_offset_delta < 0 or header.record_count < 0:
        raise CorruptBatchError(position, "negative lastOffsetDelta or record count")
    return header


def read_header(buf: Buffer, pos: int, end: int) -> BatchHeader:
    """Header of the batch at buf[pos], which must end by `end` (see `parse_header`)."""
    return parse_header(buf, pos, pos, end)


def check_crc(buf: Buffer, header: BatchHeader, off: int | None = None) -> None:
    """Raise `CorruptBatchError` unless the CRC32C of attributes..end matches.

    `off` is where the batch starts in `buf` (default: `header.position`); pass a
    memoryview to avoid copying the batch."""
    start = header.position if off is None else off
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    actual = crc32c(view[start + ATTRIBUTES_OFFSET : start + header.size])
    if actual != header.crc:
        raise CorruptBatchError(header.position, f"CRC mismatch (stored {header.crc:#010x}, computed {actual:#010x})")


def iter_batches(buf: Buffer, start: int = 0, end: int | None = None) -> Iterator[BatchHeader]:
    """Yield the header of each batch in buf[start:end]; framing only, no CRC, no records."""
    end = len(buf) if end is None else end
    pos = start
    while pos < end:
        header = read_header(buf, pos, end)
        yield header
        pos += header.size


def validate(buf: Buffer, *, strict: bool = False, max_batch_bytes: int | None = None) -> BatchSummary:
    """Check framing, magic and CRC of every batch in `buf` (which must hold whole batches).

    `strict` adds the checks a leader applies to producer data: recordCount equals
    lastOffsetDelta + 1 (and is positive) and no control batches. `max_batch_bytes`
    bounds each batch (`MessageTooLargeError`). Raises `CorruptBatchError`,
    `UnsupportedMagicError` or `InvalidRecordError`."""
    end = len(buf)
    view = memoryview(buf)
    batches: list[BatchHeader] = []
    records = 0
    max_ts = NO_TIMESTAMP
    offset_of_max = -1
    pos = 0
    while pos < end:
        h = read_header(buf, pos, end)
        check_crc(view, h)
        if strict:
            if h.record_count != h.last_offset_delta + 1 or h.record_count <= 0:
                raise InvalidRecordError(
                    f"batch at byte {pos}: record count {h.record_count} does not match "
                    f"lastOffsetDelta {h.last_offset_delta}")
            if h.attributes & CONTROL_MASK:
                raise InvalidRecordError("clients may not write control batches")
        if max_batch_bytes is not None and h.size > max_batch_bytes:
            raise MessageTooLargeError(f"batch of {h.size} bytes exceeds max.message.bytes {max_batch_bytes}")
        batches.append(h)
        records += h.record_count
        if h.max_timestamp > max_ts:
            max_ts = h.max_timestamp
            offset_of_max = h.base_offset + h.last_offset_delta
        pos += h.size
    return BatchSummary(batches, records, end, max_ts, offset_of_max)


def assign_offsets(
    buf: Buffer,
    base_offset: int,
    leader_epoch: int,
    *,
    batches: Sequence[BatchHeader] | None = None,
    in_place: bool = False,
    headers_out: list[BatchHeader] | None = None,
) -> bytearray | memoryview:
    """Give the batches contiguous offsets from `base_offset` and stamp the leader epoch.

    Only baseOffset and partitionLeaderEpoch change; both lie outside the CRC'd range, so
    every CRC stays valid. With `in_place` a writable `buf` is patched and returned
    (saves a copy on the produce path); otherwise a patched bytearray copy is returned.
    `batches` (from `validate`) avoids walking the headers again; `headers_out` receives
    the patched headers in the same walk (what `rebase_headers` gives)."""
    out = (
        cast("bytearray | memoryview", buf) if in_place else bytearray(buf)
    )  # in place: the caller passes a writable buffer
    if batches is None:
        batches = list(iter_batches(out))
    nxt = base_offset
    pack_i64 = _I64.pack_into
    pack_i32 = _I32.pack_into
    for h in batches:
        pack_i64(out, h.position, nxt)
        pack_i32(out, h.position + LEADER_EPOCH_OFFSET, leader_epoch)
        if headers_out is not None:
            headers_out.append(h._replace(base_offset=nxt, leader_epoch=leader_epoch))
        nxt += h.last_offset_delta + 1
    return out


def stamp_log_append_time(buf: bytearray | memoryview, batches: Sequence[BatchHeader], now_ms: int
                          ) -> list[BatchHeader]:
    """LogAppendTime (Kafka's LogValidator): every batch's max timestamp becomes the
    leader's clock and its timestamp-type bit is set, in the writable `buf`; both lie in
    the CRC'd range, so the CRC is computed again. The records' own deltas stay: readers
    give every record of such a batch its max timestamp. Returns the new headers."""
    out = []
    view = memoryview(buf)  # the CRC reads the batch in place (a bytearray slice would copy it)
    for h in batches:
        attributes = h.attributes | TIMESTAMP_TYPE_MASK
        _I16.pack_into(buf, h.position + ATTRIBUTES_OFFSET, attributes)
        _I64.pack_into(buf, h.position + MAX_TIMESTAMP_OFFSET, now_ms)
        crc = crc32c(view[h.position + ATTRIBUTES_OFFSET:h.position + h.size])
        _U32.pack_into(buf, h.position + CRC_OFFSET, crc)
        out.append(h._replace(attributes=attributes, max_timestamp=now_ms, crc=crc))
    return out


def rebase_headers(batches: Sequence[BatchHeader], base_offset: int, leader_epoch: int) -> list[BatchHeader]:
    """The headers `assign_offsets` produces, without touching any buffer."""
    out = []
    nxt = base_offset
    for h in batches:
        out.append(h._replace(base_offset=nxt, leader_epoch=leader_epoch))
        nxt += h.last_offset_delta + 1
    return out
