"""Decode fetched Kafka record batches (magic v2) straight into columns.

Why not `kafka.record.MemoryRecords`: it builds one Python object per record and per
header; a Spark read wants columns (then one Arrow batch per fetch), so this decoder
walks the bytes once and appends to plain lists. The loop is the hot path of a praha
read, hence the inlined one-byte varint fast paths.

Framing rules followed (Kafka's `DefaultRecordBatch`):
- a fetch answer may end in a partial batch: it is ignored (the next fetch starts there);
- a batch may begin before the offset asked for: records below it are skipped;
- control batches (transaction markers) produce no rows but advance the position;
- read_committed: the fetch names the aborted transactions (producer id, first offset) in
  its range; a transactional batch of a producer whose aborted transaction has begun by
  then is skipped, until that producer's ABORT marker (the Java consumer's rule);
- compacted batches have offset gaps: the position after a batch is its last offset + 1;
- LOG_APPEND_TIME batches give every record the batch's max timestamp;
- the CRC-32C (attributes .. end of batch) is checked, as Kafka's Java consumer does.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import crc32c

from praha.encoding.compression import NONE, decompress
from praha.encoding.varint import read_varint
from praha.errors import CorruptLogError

#: offsets in the v2 batch header: base, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid,
#: pepoch, seq, count
_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61
_LOG_OVERHEAD = 12  # base offset + batch length
_MAGIC_AT = 16
#: magic v0/v1 message sets predate Kafka 0.11; praha's brokers neither accept nor store them
_OLD_MAGIC = ("message set at offset {base} has magic {magic}: praha reads only v2 record batches "
              "(Kafka 0.11 and later)")
_CRC_DATA_AT = 21

TIMESTAMP_CREATE, TIMESTAMP_LOG_APPEND = 0, 1


@dataclass(slots=True)
class Columns:
    """Decoded rows of one partition range, column by column (Spark's Kafka schema order)."""

    with_headers: bool = False
    keys: list[bytes | None] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    timestamps_ms: list[int] = field(default_factory=list)
    timestamp_types: list[int] = field(default_factory=list)
    headers: list[list[tuple[str, bytes | None]]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.offsets)

    def clear(self) -> None:
        self.keys.clear()
        self.values.clear()
        self.offsets.clear()
        self.timestamps_ms.clear()
        self.timestamp_types.clear()
        self.headers.clear()


class AbortedFilter:
    """Which batches of a read_committed fetch belong to aborted transactions."""

    def __init__(self, aborted: list[tuple[int, int]]):
        self._pending = sorted(aborted, key=lambda a: a[1], reverse=True)  # popped by first offset
        self._aborting: set[int] = set()

    def skip(self, last_offset: int, attrs: int, producer_id: int, buf: bytes, records_at: int) -> bool:
        """True if the batch's records must not be read. Call for every batch, in order."""
        if producer_id < 0:
            return False
        while self._pending and self._pending[-1][1] <= last_offset:
            self._aborting.add(self._pending.pop()[0])
        if attrs & 0x20:  # a control batch: an ABORT marker (key type 0) ends the producer's aborted txn
            if _control_type(buf, records_at) == 0:
                self._aborting.discard(producer_id)
            return False
        return bool(attrs & 0x10) and producer_id in self._aborting


def _control_type(buf: bytes, at: int) -> int:
    """The type of a control record (0 abort, 1 commit): its key is version int16, type int16."""
    pos = at
    _, pos = read_varint(buf, pos)  # record length
    pos += 1  # attributes
    _, pos = read_varint(buf, pos)  # timestamp delta
    _, pos = read_varint(buf, pos)  # offset delta
    key_len, pos = read_varint(buf, pos)
    if key_len < 4:
        return -1
    return int(struct.unpack_from(">h", buf, pos + 2)[0])


def decode_into(buf: bytes, start: int, end: int, out: Columns, check_crc: bool = True,
                aborted: list[tuple[int, int]] | None = None) -> int:
    """Append the records of `buf` with `start <= offset < end` to `out`; with `aborted`
    (a read_committed fetch's list), without those of aborted transactions.

    Returns the next offset to fetch: just past the last complete batch read (at least
    `start`, at most `end`). A trailing partial batch is left for the next fetch."""
    n = len(buf)
    pos = 0
    next_offset = start
    aborted_filter = AbortedFilter(aborted) if aborted else None
    while pos + _LOG_OVERHEAD <= n and next_offset < end:
        base, length = struct.unpack_from(">qi", buf, pos)
        batch_end = pos + _LOG_OVERHEAD + length
        if not _whole_v2_batch(buf, pos, base, length, batch_end):
            break  # partial batch at the end of the answer (or too short to be one)
        (_, _, _, _, crc, attrs, last_delta, base_ts, max_ts, pid, _, _, count) = _HEADER.unpack_from(buf, pos)
        if check_crc and crc32c.crc32c(memoryview(buf)[pos + _CRC_DATA_AT:batch_end]) != crc:
            raise CorruptLogError(f"record batch at offset {base} failed its CRC check")
        batch_next = base + last_delta + 1
        skip = aborted_filter is not None and aborted_filter.skip(batch_next - 1, attrs, pid, buf, pos + HEADER_SIZE)
        if batch_next <= next_offset or attrs & 0x20 or skip:  # before start, a control batch, or aborted
            next_offset = max(next_offset, min(batch_next, end))
            pos = batch_end
            continue
        compression = attrs & 0x07
        if compression == NONE:
            records, rpos = buf, pos + HEADER_SIZE
        else:
            records, rpos = decompress(compression, memoryview(buf)[pos + HEADER_SIZE:batch_end]), 0
        log_append = bool(attrs & 0x08)
        _decode_records(records, rpos, count, base, base_ts, max_ts if log_append else None,
                        TIMESTAMP_LOG_APPEND if log_append else TIMESTAMP_CREATE, next_offset, end, out)
        next_offset = min(batch_next, end)
        pos = batch_end
    return next_offset


def _whole_v2_batch(buf: bytes, pos: int, base: int, length: int, batch_end: int) -> bool:
    """Whether a whole v2 batch lies at `pos` (False: cut short by the end of the answer, or
    too short to be one); a whole message set of another magic is refused by name."""
    if batch_end > len(buf):
        return False
    if length > _MAGIC_AT - _LOG_OVERHEAD and buf[pos + _MAGIC_AT] != 2:
        raise CorruptLogError(_OLD_MAGIC.format(base=base, magic=buf[pos + _MAGIC_AT]))
    return length >= HEADER_SIZE - _LOG_OVERHEAD


def scan_next_offset(buf: bytes, start: int, end: int) -> int:
    """Where the fetch after `buf` starts: past its last complete batch (headers only,
    no record decoding), clamped to [start, end]. Agrees with `decode_into`'s result."""
    n = len(buf)
    pos = 0
    nxt = start
    while pos + _LOG_OVERHEAD <= n:
        base, length = struct.unpack_from(">qi", buf, pos)
        batch_end = pos + _LOG_OVERHEAD + length
        if not _whole_v2_batch(buf, pos, base, length, batch_end):
            break
        (last_delta,) = struct.unpack_from(">i", buf, pos + 23)
        nxt = max(nxt, base + last_delta + 1)
        pos = batch_end
    return min(nxt, end)


def _decode_records(buf: Any, pos: int, count: int, base: int, base_ts: int, append_ts: int | None,
                    ts_type: int, start: int, end: int, out: Columns) -> None:
    keys, values, offsets = out.keys, out.values, out.offsets
    stamps, types, headers = out.timestamps_ms, out.timestamp_types, out.headers
    with_headers = out.with_headers
    # Runs once per record: each field's one-byte varint case is written out in place (the
    # repetition below is deliberate), longer varints go through `_varint`.
    for _ in range(count):
        # length (zigzag varint); the record ends there whatever its fields say
        b = buf[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            length, pos = _varint(buf, pos)
        rec_end = pos + length
        pos += 1  # record attributes: unused by Kafka today
        b = buf[pos]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            ts_delta, pos = _varint(buf, pos)
        b = buf[pos]
        if b < 0x80:
            off_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            off_delta, pos = _varint(buf, pos)
        offset = base + off_delta
        if offset < start:
            pos = rec_end
            continue
        if offset >= end:
            return
        b = buf[pos]
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            klen, pos = _varint(buf, pos)
        if klen < 0:
            key = None
        else:
            key = bytes(buf[pos:pos + klen])
            pos += klen
        b = buf[pos]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            vlen, pos = _varint(buf, pos)
        if vlen < 0:
            value = None
        else:
            value = bytes(buf[pos:pos + vlen])
            pos += vlen
        keys.append(key)
        values.append(value)
        offsets.append(offset)
        stamps.append(base_ts + ts_delta if append_ts is None else append_ts)
        types.append(ts_type)
        if with_headers:
            headers.append(_headers(buf, pos))
        pos = rec_end


def _headers(buf: Any, pos: int) -> list[tuple[str, bytes | None]]:
    count, pos = _varint(buf, pos)
    out = []
    for _ in range(count):
        klen, pos = _varint(buf, pos)
        key = bytes(buf[pos:pos + klen]).decode("utf-8", "replace")
        pos += klen
        vlen, pos = _varint(buf, pos)
        if vlen < 0:
            value = None
        else:
            value = bytes(buf[pos:pos + vlen])
            pos += vlen
        out.append((key, value))
    return out


_varint = read_varint


