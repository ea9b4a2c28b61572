"""Records inside a v2 batch: decode (with decompression) and re-encode, for the cleaner
for the produce path's record checks (`validator.py`). The fetch path never comes here.

Decode: 1. take the batch header (`batch.parse_header`), 2. decompress the records
section if the batch is compressed, 3. walk the records: each is a varint length, then
attributes, timestamp delta, offset delta, key, value and headers. We parse only what
the cleaner needs (offset, timestamp, key, whether the value is null) and keep each
record's raw bytes, so a rewritten batch is the retained records' bytes concatenated.

Encode: 1. concatenate the retained raw records (their offset and timestamp deltas stay
valid: the base offset is kept, and the base timestamp too unless a delete horizon is
set, in which case the records are re-encoded against it), 2. compress with the batch's
codec, 3. write the 61-byte header with the original last offset delta (so an
idempotent producer's last sequence survives) and 4. the CRC32C over attributes..end.

Codecs (gzip, snappy, lz4, zstd) are `praha.encoding.compression`'s. If one is not
available here (`codec_available` is False), batches using it are never decoded: the
cleaner keeps them whole and the produce path stores them unread.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from crc32c import crc32c

from praha.encoding.compression import NONE, compress, decompress
from praha.encoding.varint import MalformedVarintError, append_varint, read_uvarlong, unzigzag
from praha.log.batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_MASK,
    CURRENT_MAGIC,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    OFFSET_AND_LENGTH,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    Buffer,
    parse_header,
)
from praha.log.errors import CorruptBatchError

#: attributes bit 6: baseTimestamp holds the delete horizon of the batch's tombstones (KIP-534)
DELETE_HORIZON_MASK = 0x40

class Record(NamedTuple):
    """One record as the cleaner sees it; `raw` is its whole encoding (length prefix included)."""

    offset: int
    timestamp: int
    key: bytes | None
    value_is_null: bool
    raw: Buffer


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    header: BatchHeader
    records: list[Record]

    @property
    def delete_horizon_ms(self) -> int | None:
        h = self.header
        return h.base_timestamp if h.attributes & DELETE_HORIZON_MASK else None


# -- decoding ----------------------------------------------------------------------------
def scan_records(buf: bytes, count: int, position: int = 0) -> list[tuple[int, int, bytes | None, bool, int, int]]:
    """(offset delta, timestamp delta, key, value is null, start, end) of the first `count`
    records of `buf` (a decompressed records section): the cleaner's hot loop, with the
    one- and two-byte varints inlined. `position` only names the batch in errors."""
    out: list[tuple[int, int, bytes | None, bool, int, int]] = []
    append = out.append
    uvarint = read_uvarlong
    pos = 0
    end = len(buf)
    try:
        for _ in range(count):
            start = pos
            b = buf[pos]
            if b < 0x80:
                length = b
                pos += 1
            else:
                b2 = buf[pos + 1]
                if b2 < 0x80:
                    length = (b & 0x7F) | (b2 << 7)
                    pos += 2
                else:
                    length, pos = uvarint(buf, pos)
            length = (length >> 1) ^ -(length & 1)
            rec_end = pos + length
            if length <= 0 or rec_end > end:
                raise CorruptBatchError(position, "record length out of range")
            pos += 1  # attributes
            b = buf[pos]
            if b < 0x80:
                ts = b
                pos += 1
            else:  # a timestamp delta of 64 ms or more: two bytes up to 8 s
                b2 = buf[pos + 1]
                if b2 < 0x80:
                    ts = (b & 0x7F) | (b2 << 7)
                    pos += 2
                else:
                    ts, pos = uvarint(buf, pos)
            b = buf[pos]
            if b < 0x80:
                od = b
                pos += 1
            else:
                od, pos = uvarint(buf, pos)
            b = buf[pos]
            if b < 0x80:
                klen = b
                pos += 1
            else:
                klen, pos = uvarint(buf, pos)
            if klen == 1:  # zigzag(-1): no key
                key = None
            else:
                klen = (klen >> 1) ^ -(klen & 1)
                key = buf[pos:pos + klen]
                pos += klen
            append(((od >> 1) ^ -(od & 1), (ts >> 1) ^ -(ts & 1), key, buf[pos] == 1, start, rec_end))
            pos = rec_end
    except (IndexError, MalformedVarintError):
        raise CorruptBatchError(position, "record runs past the batch") from None
    return out


def iter_raw_records(payload: Buffer, count: int, base_offset: int, base_timestamp: int,
                     position: int = 0) -> list[Record]:
    """Parse `count` records from `payload` (the records section, decompressed)."""
    buf = payload if isinstance(payload, bytes) else bytes(payload)
    return [Record(base_offset + od, base_timestamp + tsd, key, null, buf[start:end])
            for od, tsd, key, null, start, end in scan_records(buf, count, position)]


def decode_batch(data: Buffer, position: int = 0) -> DecodedBatch:
    """Decode one whole batch (`data` holds exactly it)."""
    view = memoryview(data)
    h = parse_header(view, 0, position, position + len(view))
    payload: Buffer = view[HEADER_SIZE:h.size]
    if h.compression != NONE:
        payload = decompress(h.compression, payload)
    base_ts = h.base_timestamp
    return DecodedBatch(h, iter_raw_records(payload, h.record_count, h.base_offset, base_ts, position))


class ReadRecord(NamedTuple):
    """One record as a reader of the log sees it (the batch's timestamp for LogAppendTime)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def complete_batches(data: Buffer) -> Iterator[tuple[BatchHeader, list[ReadRecord]]]:
    """Each whole batch in `data` with its records. A batch cut short at the end (a read that
    stopped at a size limit, a torn tail after a crash) ends the walk, as a client's does;
    a malformed batch raises `CorruptBatchError`."""
    view = memoryview(data)
    end, pos = len(view), 0
    while end - pos >= LOG_OVERHEAD:
        _, length = OFFSET_AND_LENGTH.unpack_from(view, pos)
        if pos + LOG_OVERHEAD + length > end:
            return
        decoded = decode_batch(view[pos:pos + LOG_OVERHEAD + length], pos)
        h = decoded.header
        log_append = bool(h.attributes & TIMESTAMP_TYPE_MASK)
        yield h, [ReadRecord(r.offset, h.max_timestamp if log_append else r.timestamp, *record_key_value(r.raw))
                  for r in decoded.records]
        pos += h.size


# -- encoding ----------------------------------------------------------------------------
def rebase_record(raw: Buffer, new_timestamp_delta: int) -> bytes:
    """`raw` (one encoded record) with its timestamp delta replaced."""
    buf = memoryview(raw)
    _, pos = read_uvarlong(buf, 0)
    attrs = buf[pos]
    _, after_ts = read_uvarlong(buf, pos + 1)
    body = bytearray()
    body.append(attrs)
    append_varint(body, new_timestamp_delta)
    body += buf[after_ts:]
    out = bytearray()
    append_varint(out, len(body))
    out += body
    return bytes(out)


def build_batch(h: BatchHeader, records: list[Record], *, compression: int | None = None,
                delete_horizon_ms: int | None = None, original_payload: Buffer | None = None) -> bytes:
    """A v2 batch with `h`'s base offset, last offset delta, producer fields and epoch,
    holding `records` (a subset of `h`'s, in order). With `delete_horizon_ms` the base
    timestamp becomes the horizon (attribute bit 6) and records are re-encoded against it."""
    codec = h.compression if compression is None else compression
    attrs = h.attributes & ~COMPRESSION_MASK & ~DELETE_HORIZON_MASK | codec
    if not records:
        attrs = h.attributes & (TIMESTAMP_TYPE_MASK | 0x10 | CONTROL_MASK)
        body = b""
        base_ts = max_ts = h.max_timestamp
    else:
        log_append = bool(h.attributes & TIMESTAMP_TYPE_MASK)
        max_ts = h.max_timestamp if log_append else max(r.timestamp for r in records)
        if delete_horizon_ms is not None:
            base_ts = delete_horizon_ms
            attrs |= DELETE_HORIZON_MASK
            plain = b"".join(rebase_record(r.raw, r.timestamp - base_ts) for r in records)
        else:
            base_ts = h.base_timestamp
            if h.attributes & DELETE_HORIZON_MASK:
                attrs |= DELETE_HORIZON_MASK
            plain = b"".join(records[i].raw for i in range(len(records)))
        body = compress(codec, plain, original_payload) if codec != NONE else plain
    length = HEADER_SIZE - LOG_OVERHEAD + len(body)
    out = bytearray(HEADER.pack(h.base_offset, length, h.leader_epoch, CURRENT_MAGIC, 0, attrs,
                                h.last_offset_delta, base_ts, max_ts, h.producer_id, h.producer_epoch,
                                h.base_sequence, len(records)))
    out += body
    crc = crc32c(memoryview(out)[ATTRIBUTES_OFFSET:])
    struct.pack_into(">I", out, 17, crc)
    return bytes(out)


def record_key_value(raw: Buffer) -> tuple[bytes | None, bytes | None]:
    """Key and value of one encoded record (`Record.raw`)."""
    buf = memoryview(raw)
    try:
        _, pos = read_uvarlong(buf, 0)
        _, pos = read_uvarlong(buf, pos + 1)  # after attributes: timestamp delta
        _, pos = read_uvarlong(buf, pos)  # offset delta
        fields: list[bytes | None] = []
        for _ in range(2):
            n, pos = read_uvarlong(buf, pos)
            n = unzigzag(n)
            fields.append(None if n < 0 else bytes(buf[pos:pos + n]))
            pos += max(n, 0)
    except (IndexError, MalformedVarintError):
        raise CorruptBatchError(0, "record runs past its end") from None
    return fields[0], fields[1]


def encode_records(base_offset: int, records: list[tuple[bytes | None, bytes | None, int]], *,
                   compression: int = NONE, producer_id: int = -1, producer_epoch: int = -1,
                   base_sequence: int = -1, leader_epoch: int = 0, attributes: int = 0) -> bytes:
    """A fresh batch of (key, value, timestamp) records at consecutive offsets (for tests,
    benchmarks and transaction markers; producers normally build batches). `attributes`
    adds flag bits (transactional 0x10, control 0x20) to the codec."""
    raws: list[Record] = []
    base_ts = records[0][2] if records else 0
    for i, (key, value, ts) in enumerate(records):
        body = bytearray([0])
        append_varint(body, ts - base_ts)
        append_varint(body, i)
        if key is None:
            append_varint(body, -1)
        else:
            append_varint(body, len(key))
            body += key
        if value is None:
            append_varint(body, -1)
        else:
            append_varint(body, len(value))
            body += value
        append_varint(body, 0)
        raw = bytearray()
        append_varint(raw, len(body))
        raw += body
        raws.append(Record(base_offset + i, ts, key, value is None, bytes(raw)))
    max_ts = max((r[2] for r in records), default=NO_TIMESTAMP)
    h = BatchHeader(0, 0, base_offset, 0, leader_epoch, CURRENT_MAGIC, 0, compression | attributes, len(records) - 1,
                    base_ts, max_ts, producer_id, producer_epoch, base_sequence, len(records))
    return build_batch(h, raws)
