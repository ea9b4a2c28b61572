"""Record batches built byte by byte for hostile-input tests: any record count, offset
delta, attributes or record body, with a valid CRC, so that what a broker must refuse is
refused for its content, not for a checksum."""
from __future__ import annotations

import struct
import time

from crc32c import crc32c

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_AT, _ATTRIBUTES_AT = 17, 21


def _varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def record(key: bytes | None, value: bytes | None, offset_delta: int, timestamp_delta: int = 0) -> bytes:
    """One v2 record (length prefix included), no headers."""
    body = b"\0" + _varint(timestamp_delta) + _varint(offset_delta)
    body += _varint(-1) if key is None else _varint(len(key)) + key
    body += _varint(-1) if value is None else _varint(len(value)) + value
    body += _varint(0)
    return _varint(len(body)) + body


def forge_batch(records: bytes, *, record_count: int, last_offset_delta: int | None = None, attributes: int = 0,
                base_timestamp: int | None = None) -> bytes:
    """A magic-2 batch around `records` (already compressed if `attributes` says so), with
    the header claiming `record_count` records and a correct CRC32C."""
    ts = int(time.time() * 1000) if base_timestamp is None else base_timestamp
    delta = record_count - 1 if last_offset_delta is None else last_offset_delta
    out = bytearray(_HEADER.pack(0, 49 + len(records), 0, 2, 0, attributes, delta, ts, ts, -1, -1, -1, record_count))
    out += records
    struct.pack_into(">I", out, _CRC_AT, crc32c(bytes(out[_ATTRIBUTES_AT:])))
    return bytes(out)
