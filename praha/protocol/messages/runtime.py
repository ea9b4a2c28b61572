"""What the generated codecs (`gen/`) share: the base class, packers and the few readers
too long to inline. Kept small on purpose: each version's encoder and decoder is straight
code in `gen/`, so the per-field decisions (compact or not, nullable or not, present or
not) are made once, by the generator, never per message.
"""
from __future__ import annotations

import struct
import uuid
from typing import Any, ClassVar, Self

from praha.encoding.varint import MalformedVarintError, skip_tagged_fields, write_uvarint
from praha.encoding.varint import read_uvarint as _read_uvarint
from praha.protocol.errors import MalformedRequestError

Buffer = bytes | bytearray | memoryview
ZERO_UUID = uuid.UUID(int=0)

I8, I16, I32, I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class WireFormatError(MalformedRequestError):
    """Bytes that do not decode as the message at that version (Kafka: INVALID_REQUEST)."""


#: Kafka's unsigned varint (flexible lengths, tags): the one writer, in praha.encoding.varint
uvarint = write_uvarint


def read_uvarint(b: Buffer, p: int) -> tuple[int, int]:
    x = b[p]
    if x < 128:
        return x, p + 1
    try:
        return _read_uvarint(b, p)
    except MalformedVarintError as e:
        raise WireFormatError(str(e)) from None


def uuid_bytes(value: uuid.UUID | str | None) -> bytes:
    """A uuid field's 16 bytes; None is the zero id (kafka-python's leniency, which callers use)."""
    if value.__class__ is uuid.UUID:
        return value.bytes
    if value is None:
        return ZERO_UUID.bytes
    return uuid.UUID(str(value)).bytes


def _slice(b: Buffer, p: int, n: int) -> int:
    end = p + n
    if end > len(b):
        raise WireFormatError(f"{n} bytes claimed, {len(b) - p} left")
    return end


def read_string(b: Buffer, p: int) -> tuple[str | None, int]:
    (n,) = I16.unpack_from(b, p)
    p += 2
    if n < 0:
        return None, p
    end = _slice(b, p, n)
    return str(b[p:end], "utf-8"), end


def read_compact_string(b: Buffer, p: int) -> tuple[str | None, int]:
    n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    end = _slice(b, p, n - 1)
    return str(b[p:end], "utf-8"), end


def read_bytes(b: Buffer, p: int) -> tuple[bytes | None, int]:
    (n,) = I32.unpack_from(b, p)
    p += 4
    if n < 0:
        return None, p
    end = _slice(b, p, n)
    return bytes(b[p:end]), end


def read_compact_bytes(b: Buffer, p: int) -> tuple[bytes | None, int]:
    n, p = read_uvarint(b, p)
    if n == 0:
        return None, p
    end = _slice(b, p, n - 1)
    return bytes(b[p:end]), end


def read_count(b: Buffer, p: int) -> tuple[int, int]:
    """An array's length (-1: null); more elements than bytes left is malformed."""
    (n,) = I32.unpack_from(b, p)
    if n > len(b) - p:
        raise WireFormatError(f"array of {n} elements in {len(b) - p} bytes")
    return n, p + 4


def read_compact_count(b: Buffer, p: int) -> tuple[int, int]:
    n, p = read_uvarint(b, p)
    if n - 1 > len(b) - p:
        raise WireFormatError(f"array of {n - 1} elements in {len(b) - p} bytes")
    return n - 1, p


def _utf8(s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except AttributeError:
        raise WireFormatError(f"a string field holds {type(s).__name__} {s!r}") from None


def write_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += b"\xff\xff"
        return
    raw = _utf8(s)
    out += I16.pack(len(raw))
    out += raw


def write_compact_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += b"\x00"
        return
    raw = _utf8(s)
    out += uvarint(len(raw) + 1)
    out += raw


def write_bytes(out: bytearray, v: Buffer | None) -> None:
    if v is None:
        out += b"\xff\xff\xff\xff"
        return
    out += I32.pack(len(v))
    out += v


def write_compact_bytes(out: bytearray, v: Buffer | None) -> None:
    if v is None:
        out += b"\x00"
        return
    out += uvarint(len(v) + 1)
    out += v


def write_tagged(out: bytearray, tagged: list[tuple[int, bytearray]]) -> None:
    out += uvarint(len(tagged))
    for tag, raw in tagged:
        out += uvarint(tag)
        out += uvarint(len(raw))
        out += raw


def skip_tagged(b: Buffer, p: int) -> int:
    try:
        return skip_tagged_fields(b, p)
    except MalformedVarintError as e:
        raise WireFormatError(str(e)) from None


def null_field(name: str) -> WireFormatError:
    return WireFormatError(f"non-nullable field {name} was null")


_DECODE_ERRORS = (struct.error, IndexError, UnicodeDecodeError, ValueError, RecursionError)


#: the default of a list or struct field in a generated `__init__`: a fresh value per instance
FACTORY: Any = object()


class WireStruct:
    """A generated message or struct: its fields are its `__slots__`, set by a generated
    `__init__`; equality and repr as a dataclass's (written once here, not per class)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._fields())

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq

    def _fields(self) -> tuple[str, ...]:
        names: tuple[str, ...] = self.__slots__  # generated classes always give a tuple
        return names

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields())
        return f"{self.__class__.__qualname__}({shown})"


class WireMessage(WireStruct):
    """A request or response: `encode(version)` and `decode(data, version)`, one compiled
    function per version (indexed by `version - MIN_VERSION`)."""

    __slots__ = ()
    API_KEY: ClassVar[int]
    MIN_VERSION: ClassVar[int]
    MAX_VERSION: ClassVar[int]
    FLEXIBLE_FROM: ClassVar[int]  # first flexible version (above MAX_VERSION: none)
    _ENCODERS: ClassVar[tuple[Any, ...]]
    _DECODERS: ClassVar[tuple[Any, ...]]

    def expect_response(self) -> bool:
        """False only for a Produce with acks=0 (answered with silence)."""
        return self.API_KEY != 0 or getattr(self, "acks", -1) != 0

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return version >= cls.FLEXIBLE_FROM

    @classmethod
    def _check_version(cls, version: int) -> int:
        if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
            raise WireFormatError(f"{cls.__name__} has no version {version} "
                                  f"({cls.MIN_VERSION}-{cls.MAX_VERSION})")
        return version - cls.MIN_VERSION

    def encode_into(self, out: bytearray, version: int) -> None:
        self._ENCODERS[self._check_version(version)](self, out)

    def encode(self, version: int) -> bytearray:
        out = bytearray()
        self._ENCODERS[self._check_version(version)](self, out)
        return out

    @classmethod
    def decode_from(cls, data: Buffer, version: int, pos: int = 0) -> tuple[Self, int]:
        """The message at `pos` and the position after it."""
        fn = cls._DECODERS[cls._check_version(version)]
        try:
            msg, end = fn(data, pos)
        except WireFormatError:
            raise
        except _DECODE_ERRORS as e:
            raise WireFormatError(f"{cls.__name__} v{version}: {e}") from None
        return msg, end

    @classmethod
    def decode(cls, data: Buffer, version: int) -> Self:
        """The message filling all of `data` (bytes left over are malformed)."""
        msg, end = cls.decode_from(data, version)
        if end != len(data):
            raise WireFormatError(f"{cls.__name__} v{version}: {len(data) - end} bytes after the message")
        return msg


__all__ = [
    "WireMessage", "WireStruct", "WireFormatError", "ZERO_UUID", "I8", "I16", "I32", "I64", "uvarint", "read_uvarint",
    "read_string", "read_compact_string", "read_bytes", "read_compact_bytes", "read_count",
    "read_compact_count", "write_string", "write_compact_string", "write_bytes", "write_compact_bytes",
    "write_tagged", "skip_tagged", "null_field", "uuid_bytes",
]
