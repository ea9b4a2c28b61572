"""The records of `__consumer_offsets`, in the formats Kafka 3.x writes, so Kafka's own
tools (`kafka-console-consumer --formatter ...OffsetsMessageFormatter`) could decode them.

Two kinds of record share the topic, told apart by the key's version:
- key v0/v1 `OffsetCommitKey(group, topic, partition)` → value v3
  `OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp)`;
- key v2 `GroupMetadataKey(group)` → value v3 `GroupMetadataValue(protocol_type,
  generation, protocol, leader, current_state_timestamp, members[...])`.
A null value is a tombstone: the offset, or the whole group, is gone.

The group of a record decides its partition: `abs(javaStringHash(group)) % partitions`,
Kafka's `Utils.abs(groupId.hashCode)`, so clients of any language find the same one.
"""
from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from typing import Self

from praha.errors import CorruptLogError

OFFSETS_TOPIC = "__consumer_offsets"  # one of topic_rules.INTERNAL_TOPICS

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3


def java_string_hash(s: str) -> int:
    """`String.hashCode()` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@functools.lru_cache(maxsize=1 << 16)
def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's `Utils.abs(groupId.hashCode) % partitions` (abs(MIN_VALUE) is 0 there); cached,
    as every heartbeat and commit asks it (a fifth of a steady KIP-848 heartbeat's CPU)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1  # only in value v1


@dataclass(frozen=True, slots=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberRecord, ...] = field(default_factory=tuple)


# ---------------------------------------------------------------- encoding
class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int16(self, v: int) -> Self:
        self.parts.append(struct.pack(">h", v))
        return self

    def int32(self, v: int) -> Self:
        self.parts.append(struct.pack(">i", v))
        return self

    def int64(self, v: int) -> Self:
        self.parts.append(struct.pack(">q", v))
        return self

    def string(self, v: str | None) -> Self:
        if v is None:
            return self.int16(-1)
        b = v.encode()
        self.int16(len(b))
        self.parts.append(b)
        return self

    def bytes_(self, v: bytes | None) -> Self:
        if v is None:
            return self.int32(-1)
        self.int32(len(v))
        self.parts.append(bytes(v))
        return self

    def done(self) -> bytes:
        return b"".join(self.parts)


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _Writer().int16(OFFSET_KEY_VERSION).string(group).string(topic).int32(partition).done()


def group_key(group: str) -> bytes:
    return _Writer().int16(GROUP_KEY_VERSION).string(group).done()


def offset_value(v: OffsetValue) -> bytes:
    return (_Writer().int16(OFFSET_VALUE_VERSION).int64(v.offset).int32(v.leader_epoch)
            .string(v.metadata).int64(v.commit_timestamp).done())


def group_value(v: GroupValue) -> bytes:
    w = (_Writer().int16(GROUP_VALUE_VERSION).string(v.protocol_type).int32(v.generation)
         .string(v.protocol).string(v.leader).int64(v.current_state_timestamp).int32(len(v.members)))
    for m in v.members:
        (w.string(m.member_id).string(m.group_instance_id).string(m.client_id).string(m.client_host)
         .int32(m.rebalance_timeout_ms).int32(m.session_timeout_ms).bytes_(m.subscription).bytes_(m.assignment))
    return w.done()


# ---------------------------------------------------------------- decoding
class _Reader:
    def __init__(self, data: bytes):
        self.data = memoryview(data)
        self.pos = 0

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptLogError(f"{OFFSETS_TOPIC} record truncated at byte {self.pos}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else bytes(self._take(n)).decode()

    def text(self) -> str:
        return self.string() or ""

    def bytes_(self) -> bytes:
        n = self.int32()
        return b"" if n < 0 else bytes(self._take(n))


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    r = _Reader(data)
    version = r.int16()
    if version in (0, 1):
        return OffsetKey(r.text(), r.text(), r.int32())
    if version == 2:
        return GroupKey(r.text())
    raise CorruptLogError(f"unknown {OFFSETS_TOPIC} key version {version}")


def decode_offset_value(data: bytes) -> OffsetValue:
    r = _Reader(data)
    version = r.int16()
    if not 0 <= version <= 4:
        raise CorruptLogError(f"unknown offset commit value version {version}")
    offset = r.int64()
    epoch = r.int32() if version >= 3 else -1
    metadata = r.text()
    commit_ts = r.int64()
    expire_ts = r.int64() if version == 1 else -1
    return OffsetValue(offset, epoch, metadata, commit_ts, expire_ts)


def decode_group_value(data: bytes) -> GroupValue:
    r = _Reader(data)
    version = r.int16()
    if not 0 <= version <= 3:
        raise CorruptLogError(f"unknown group metadata value version {version}")
    protocol_type = r.text()
    generation = r.int32()
    protocol = r.string()
    leader = r.string()
    state_ts = r.int64() if version >= 2 else -1
    members = []
    for _ in range(r.int32()):
        member_id = r.text()
        instance = r.string() if version >= 3 else None
        client_id, host = r.text(), r.text()
        rebalance = r.int32() if version >= 1 else -1
        session = r.int32()
        members.append(MemberRecord(member_id, instance, client_id, host, rebalance if rebalance >= 0 else session,
                                    session, r.bytes_(), r.bytes_()))
    return GroupValue(protocol_type, generation, protocol, leader, state_ts, tuple(members))


def subscribed_topics(protocol_type: str, subscription: bytes) -> set[str]:
    """Topics named in a consumer member's subscription (Kafka's ConsumerProtocolSubscription:
    version, topics[], user data, ...); empty for other protocol types or unreadable bytes."""
    if protocol_type != "consumer" or len(subscription) < 6:
        return set()
    try:
        r = _Reader(subscription)
        r.int16()
        return {r.text() for _ in range(r.int32())}
    except CorruptLogError:
        return set()
