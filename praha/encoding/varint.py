"""Kafka's variable-length integers, read and written in one place.

Two kinds: unsigned varints (flexible-version lengths and tagged fields; at most 5 bytes
for an int32) and zigzag varints (record fields; at most 10 bytes for an int64). Readers
take any indexable buffer (bytes, bytearray, memoryview) and a position, and return the
value and the position after it; they raise `MalformedVarintError` for a varint that runs
past `end` or is longer than its type allows, so a caller can turn that into the error
its own layer answers with. Writers either return bytes or append to a bytearray (the
record encoders build a batch in one).

Hot loops that cannot afford a call per byte (the log cleaner's and the Spark reader's
record scans, the generated codecs) inline the one-byte case and call these for the rest.
"""
from __future__ import annotations

from typing import Protocol

from praha.errors import CorruptLogError

UVARINT_MAX_BYTES = 5  # an int32
VARLONG_MAX_BYTES = 10  # an int64
_SMALL = [bytes((i,)) for i in range(128)]

#: what the readers take (indexing gives an int)
Buffer = bytes | bytearray | memoryview


class MalformedVarintError(CorruptLogError):
    """A varint that is truncated or longer than its type allows (CORRUPT_MESSAGE)."""


class UnsignedReader(Protocol):
    """`(buf, pos, end=None, max_bytes=...)` → (value, position after it); raises
    MalformedVarintError past `end` (default: the buffer's end) or beyond `max_bytes`."""

    def __call__(self, buf: Buffer, pos: int, end: int | None = None, max_bytes: int = ...) -> tuple[int, int]: ...


def _unsigned_reader(max_bytes_default: int) -> UnsignedReader:
    """The unsigned varint reader, with its type's longest encoding as the default bound: one
    loop for both kinds, and no extra call on the record scans' hot path."""

    def read(buf: Buffer, pos: int, end: int | None = None, max_bytes: int = max_bytes_default) -> tuple[int, int]:
        limit = len(buf) if end is None else end
        stop = pos + max_bytes
        value = shift = 0
        while pos < limit:
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value, pos
            shift += 7
            if pos >= stop:
                raise MalformedVarintError(f"varint longer than {max_bytes} bytes")
        raise MalformedVarintError("truncated varint")

    return read


#: `read_uvarint(buf, pos, end=None, max_bytes=5)`: the unsigned varint (an int32's) at `pos`
#: and the position after it
read_uvarint = _unsigned_reader(UVARINT_MAX_BYTES)
#: the same for up to 64 bits (a zigzag varint before `unzigzag`)
read_uvarlong = _unsigned_reader(VARLONG_MAX_BYTES)


def read_varint(buf: Buffer, pos: int, end: int | None = None) -> tuple[int, int]:
    """The zigzag varint (up to an int64) at `pos` and the position after it."""
    raw, pos = read_uvarlong(buf, pos, end)
    return (raw >> 1) ^ -(raw & 1), pos


def unzigzag(raw: int) -> int:
    """The signed value of a zigzag-encoded one (`read_uvarlong`'s result)."""
    return (raw >> 1) ^ -(raw & 1)


def write_uvarint(value: int) -> bytes:
    """`value` (0 ≤ value < 2**32) as an unsigned varint."""
    if 0 <= value < 128:
        return _SMALL[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"{value} does not fit an unsigned varint")
    out = bytearray()
    append_uvarint(out, value)
    return bytes(out)


def append_uvarint(out: bytearray, n: int) -> None:
    """Append `n` (≥ 0) to `out` as an unsigned varint."""
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def append_varint(out: bytearray, n: int) -> None:
    """Append `n` (an int64) to `out` as a zigzag varint."""
    append_uvarint(out, (n << 1) ^ (n >> 63))


def write_varint(n: int) -> bytes:
    """`n` (an int64) as a zigzag varint."""
    out = bytearray()
    append_varint(out, n)
    return bytes(out)


def skip_tagged_fields(buf: Buffer, pos: int, end: int | None = None) -> int:
    """The position after a tagged-field section (count, then tag, size, bytes each)."""
    limit = len(buf) if end is None else end
    count, pos = read_uvarint(buf, pos, limit)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos, limit)
        size, pos = read_uvarint(buf, pos, limit)
        pos += size
        if pos > limit:
            raise MalformedVarintError("truncated tagged field")
    return pos
