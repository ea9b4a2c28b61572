"""ProduceRequest v3-v11, parsed by hand so that the record bytes are never copied.

kafka-python's decoder copies every `records` field into a new `bytes`; on a broker that
is a copy of every produced byte. Here each partition's records come back as a
`memoryview` of the request frame: writable when the frame is (the socket server reads
frames into a `bytearray`), so the log can stamp offsets and leader epoch into the
batches where they lie and write them from there.

Layout (Kafka's schema): transactional_id nullable string, acks int16, timeout_ms int32,
then topics [name string, partitions [index int32, records nullable bytes]]. v9 is
flexible: compact strings, arrays and bytes (unsigned varint length + 1, 0 for null)
and a tagged-field section after each structure. Every length is checked against the
frame: a cut or lying frame raises `MalformedProduceError` (never an IndexError, never
a silently shortened view).
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, NamedTuple

from praha.encoding.varint import MalformedVarintError, read_uvarint
from praha.errors import InvalidRequestError
from praha.protocol.errors import MalformedRequestError

if TYPE_CHECKING:
    from praha.protocol.header import RequestHeader

FLEXIBLE_FROM = 9
MIN_VERSION, MAX_VERSION = 3, 11  # v10 and v11 read as v9 (they change only the response and its errors)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")


class MalformedProduceError(InvalidRequestError, ValueError):
    """The body does not hold a well-formed ProduceRequest (the caller adds the header)."""


class PartitionProduceData(NamedTuple):
    index: int  # type: ignore[assignment]  # Kafka's field name; it shadows tuple.index
    #: the partition's record batches, a view of the request frame, or None (null)
    records: memoryview | None


class TopicProduceData(NamedTuple):
    name: str
    partition_data: list[PartitionProduceData]


class ProduceRequestView(NamedTuple):
    """The fields a broker reads from a ProduceRequest, named as in kafka-python."""

    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: list[TopicProduceData]

    def expect_response(self) -> bool:
        return self.acks != 0


class _Cursor:
    """Reads fields from `view[pos:end]`, checking every length against `end`."""

    __slots__ = ("view", "pos", "end")

    def __init__(self, view: memoryview, pos: int):
        self.view = view
        self.pos = pos
        self.end = len(view)

    def take(self, n: int) -> int:
        """Advance over n bytes; the position they start at."""
        start = self.pos
        if n < 0 or start + n > self.end:
            raise MalformedProduceError(f"field of {n} bytes at byte {start} runs past the end ({self.end})")
        self.pos = start + n
        return start

    def int16(self) -> int:
        value: int = _I16.unpack_from(self.view, self.take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _I32.unpack_from(self.view, self.take(4))[0]
        return value

    def uvarint(self) -> int:
        try:
            value, self.pos = read_uvarint(self.view, self.pos, self.end)
        except MalformedVarintError as e:
            raise MalformedProduceError(str(e)) from None
        return value

    def length(self, flexible: bool, wide: bool) -> int:
        """A length prefix: -1 for null. Classic strings use int16, bytes int32 (`wide`)."""
        if flexible:
            return self.uvarint() - 1
        return self.int32() if wide else self.int16()

    def string(self, flexible: bool, nullable: bool = False) -> str | None:
        n = self.length(flexible, wide=False)
        if n < 0:
            if nullable and n == -1:
                return None
            raise MalformedProduceError(f"string length {n}")
        start = self.take(n)
        try:
            return str(self.view[start:start + n], "utf-8")
        except UnicodeDecodeError as e:
            raise MalformedProduceError(f"string is not UTF-8: {e}") from e

    def records(self, flexible: bool) -> memoryview | None:
        n = self.length(flexible, wide=True)
        if n == -1:
            return None
        start = self.take(n)
        return self.view[start:start + n]

    def count(self, flexible: bool) -> int:
        n = self.length(flexible, wide=True)
        if n < 0:
            raise MalformedProduceError(f"array length {n}")
        return n

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())


def parse_produce_request(body: bytes | bytearray | memoryview, offset: int, version: int) -> ProduceRequestView:
    """The ProduceRequest at `body[offset:]` (after the request header). Raises
    `MalformedProduceError`; trailing bytes are tolerated, as Kafka does."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise MalformedProduceError(f"ProduceRequest v{version} is not parsed here")
    flexible = version >= FLEXIBLE_FROM
    c = _Cursor(body if isinstance(body, memoryview) else memoryview(body), offset)
    transactional_id = c.string(flexible, nullable=True)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(c.view, c.take(_ACKS_TIMEOUT.size))
    topics = []
    for _ in range(c.count(flexible)):
        name = c.string(flexible)
        assert name is not None
        partitions = []
        for _ in range(c.count(flexible)):
            index = c.int32()
            partitions.append(PartitionProduceData(index, c.records(flexible)))
            if flexible:
                c.skip_tags()
        topics.append(TopicProduceData(name, partitions))
        if flexible:
            c.skip_tags()
    if flexible:
        c.skip_tags()
    return ProduceRequestView(transactional_id, acks, timeout_ms, topics)


def produce_fields(request: Any) -> tuple[Any, ...]:
    """A ProduceRequest's fields as plain values, records as bytes: the same for a view and
    for kafka-python's object of the same bytes (what the tests compare)."""
    return (request.transactional_id, request.acks, request.timeout_ms,
            [(t.name, [(p.index, None if p.records is None else bytes(p.records)) for p in t.partition_data])
             for t in request.topic_data])


def decode_produce(body: bytes | bytearray | memoryview, header: RequestHeader) -> ProduceRequestView:
    """`parse_produce_request` for a framed body whose header is parsed already; errors
    become `MalformedRequestError` carrying the header (so the answer can be addressed)."""
    try:
        return parse_produce_request(body, header.size, header.api_version)
    except (MalformedProduceError, struct.error) as e:
        raise MalformedRequestError(f"malformed Produce v{header.api_version} body: {e}", header) from e
