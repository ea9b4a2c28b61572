"""The records of `__transaction_state`, in the formats Kafka 3.x writes
(core/src/main/resources/common/message/TransactionLogKey.json and TransactionLogValue.json),
so Kafka's `TransactionLogMessageFormatter` could decode praha's topic and the reverse.

- key: version int16 (0), `TransactionLogKey(transactional_id)`;
- value: version int16 (0 written; 1, flexible, read too), `TransactionLogValue(producer_id,
  producer_epoch, timeout_ms, state id, partitions[topic, partition ids] (null when Empty),
  last_update_ms, start_ms)`.
A null value is a tombstone: the transactional id expired.

The transactional id of a record decides its partition exactly as a group id decides
its `__consumer_offsets` partition (`abs(javaStringHash(id)) % partitions`).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from praha.common import by_topic
from praha.coordinator.group.records import partition_for
from praha.encoding.varint import read_uvarint
from praha.errors import CorruptLogError

TRANSACTION_STATE_TOPIC = "__transaction_state"  # one of topic_rules.INTERNAL_TOPICS

KEY_VERSION = 0
VALUE_VERSION = 0

__all__ = ["TRANSACTION_STATE_TOPIC", "TxnLogValue", "decode_key", "decode_value", "encode_key", "encode_value",
           "partition_for"]


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state_id: int
    #: (topic, partition) pairs, sorted; empty for an Empty transaction (written as null)
    partitions: tuple[tuple[str, int], ...]
    last_update_ms: int
    start_ms: int


def encode_key(transactional_id: str) -> bytes:
    b = transactional_id.encode()
    return struct.pack(">hh", KEY_VERSION, len(b)) + b


def encode_value(v: TxnLogValue) -> bytes:
    parts = [struct.pack(">hqhib", VALUE_VERSION, v.producer_id, v.producer_epoch, v.timeout_ms, v.state_id)]
    if not v.partitions:
        parts.append(struct.pack(">i", -1))
    else:
        topics = by_topic(v.partitions)
        parts.append(struct.pack(">i", len(topics)))
        for topic, ps in topics.items():
            t = topic.encode()
            parts.append(struct.pack(">h", len(t)) + t + struct.pack(f">i{len(ps)}i", len(ps), *ps))
    parts.append(struct.pack(">qq", v.last_update_ms, v.start_ms))
    return b"".join(parts)


class _Reader:
    def __init__(self, data: bytes, flexible: bool = False):
        self.data = memoryview(data)
        self.pos = 0
        self.flexible = flexible

    def take(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptLogError(f"{TRANSACTION_STATE_TOPIC} record truncated at byte {self.pos}")
        out = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return tuple(int(x) for x in out)

    def varint(self) -> int:
        """An unsigned varint (a compact length, a tag); a truncated or overlong one is corrupt."""
        value, self.pos = read_uvarint(self.data, self.pos)
        return value

    def length(self, fmt: str) -> int:
        """An array or string length: int16/int32 before flexible versions, compact (n+1) after."""
        return self.varint() - 1 if self.flexible else self.take(fmt)[0]

    def string(self) -> str:
        n = self.length(">h")
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptLogError(f"{TRANSACTION_STATE_TOPIC} record: bad string length {n}")
        s = bytes(self.data[self.pos:self.pos + n]).decode()
        self.pos += n
        return s

    def skip_tags(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.varint()):
            self.varint()
            n = self.varint()
            self.pos += n


def decode_key(data: bytes) -> str:
    """The transactional id of a key; CorruptLogError for an unknown key version."""
    r = _Reader(data)
    (version,) = r.take(">h")
    if version != KEY_VERSION:
        raise CorruptLogError(f"unknown {TRANSACTION_STATE_TOPIC} key version {version}")
    return r.string()


def decode_value(data: bytes) -> TxnLogValue:
    r = _Reader(data)
    (version,) = r.take(">h")
    if version not in (0, 1):
        raise CorruptLogError(f"unknown {TRANSACTION_STATE_TOPIC} value version {version}")
    r.flexible = version >= 1
    producer_id, epoch, timeout_ms, state_id = r.take(">qhib")
    partitions: list[tuple[str, int]] = []
    n_topics = r.length(">i")
    for _ in range(max(n_topics, 0)):
        topic = r.string()
        n = r.length(">i")
        partitions += [(topic, r.take(">i")[0]) for _ in range(max(n, 0))]
        r.skip_tags()
    last_update_ms, start_ms = r.take(">qq")
    r.skip_tags()
    return TxnLogValue(producer_id, epoch, timeout_ms, state_id, tuple(sorted(partitions)), last_update_ms, start_ms)
