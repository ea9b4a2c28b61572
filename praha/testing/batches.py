"""Record batches built byte by byte for hostile-input tests: any record count, offset
delta, attributes or record body, with a valid CRC, so that what a broker must refuse is
refused for its content, not for a checksum."""
from __future__ import annotations

import struct
import time

from crc32c import crc32c

from praha.encoding.varint import write_varint

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_AT, _ATTRIBUTES_AT = 17, 21


def record(key: bytes | None, value: bytes | None, offset_delta: int, timestamp_delta: int = 0) -> bytes:
    """One v2 record (length prefix included), no headers."""
    body = b"\0" + write_varint(timestamp_delta) + write_varint(offset_delta)
    body += write_varint(-1) if key is None else write_varint(len(key)) + key
    body += write_varint(-1) if value is None else write_varint(len(value)) + value
    body += write_varint(0)
    return write_varint(len(body)) + body


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
