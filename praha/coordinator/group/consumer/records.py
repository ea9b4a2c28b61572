"""A consumer group's records in `__consumer_offsets`, in Kafka 4's formats (KIP-848).

Keys keep the classic layout (int16 version, then the fields), one version per record kind;
values are flexible (compact strings and arrays, tagged fields), value version 0:

    key v3  ConsumerGroupMetadata            group           -> Epoch
    key v4  ConsumerGroupPartitionMetadata   group           -> Topics[id, name, partitions, racks]
    key v5  ConsumerGroupMemberMetadata      group, member   -> instance, rack, client, host, topics, regex, ...
    key v6  ConsumerGroupTargetAssignmentMetadata group      -> AssignmentEpoch
    key v7  ConsumerGroupTargetAssignmentMember   group, member -> TopicPartitions
    key v8  ConsumerGroupCurrentMemberAssignment  group, member -> epochs, state, assigned, pending revocation
    key v16 ConsumerGroupRegularExpression   group, regex    -> Topics, Version, Timestamp

A null value is a tombstone. `KEY_VERSIONS` is the one table of kinds; a test round-trips
every kind through bytes.
"""
from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from praha.coordinator.group.consumer.model import Assignment, ClassicMetadata, MemberState, TopicInfo, assignment_of
from praha.coordinator.group.records import _Reader, _Writer
from praha.encoding.varint import read_uvarint, skip_tagged_fields, write_uvarint
from praha.errors import CorruptLogError


# ---------------------------------------------------------------- keys
@dataclass(frozen=True, slots=True)
class GroupEpochKey:
    group: str


@dataclass(frozen=True, slots=True)
class PartitionMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class MemberMetadataKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class TargetEpochKey:
    group: str


@dataclass(frozen=True, slots=True)
class TargetMemberKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class CurrentAssignmentKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class RegexKey:
    group: str
    regex: str


Key = (GroupEpochKey | PartitionMetadataKey | MemberMetadataKey | TargetEpochKey | TargetMemberKey
       | CurrentAssignmentKey | RegexKey)

#: every record kind of the protocol and its key version (Kafka's CoordinatorRecordType ids)
KEY_VERSIONS: dict[type, int] = {
    GroupEpochKey: 3,
    PartitionMetadataKey: 4,
    MemberMetadataKey: 5,
    TargetEpochKey: 6,
    TargetMemberKey: 7,
    CurrentAssignmentKey: 8,
    RegexKey: 16,
}
_BY_VERSION = {v: k for k, v in KEY_VERSIONS.items()}


# ---------------------------------------------------------------- values
@dataclass(frozen=True, slots=True)
class GroupEpochValue:
    epoch: int


@dataclass(frozen=True, slots=True)
class PartitionMetadataValue:
    topics: tuple[TopicInfo, ...]


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    #: tagged field 0: set for a member of the classic protocol
    classic: ClassicMetadata | None = None


@dataclass(frozen=True, slots=True)
class TargetEpochValue:
    epoch: int


@dataclass(frozen=True, slots=True)
class TargetMemberValue:
    assignment: Assignment


@dataclass(frozen=True, slots=True)
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: Assignment
    pending_revocation: Assignment


@dataclass(frozen=True, slots=True)
class RegexValue:
    topics: tuple[str, ...]
    version: int
    timestamp: int


Value = (GroupEpochValue | PartitionMetadataValue | MemberMetadataValue | TargetEpochValue | TargetMemberValue
         | CurrentAssignmentValue | RegexValue)


@dataclass(frozen=True, slots=True)
class Record:
    """One record of the group; `value` None is a tombstone."""

    key: Key
    value: Value | None


# ---------------------------------------------------------------- encoding
class _Out(_Writer):
    """The classic writer (int16-length strings, as keys use) plus flexible values' types."""

    def int8(self, v: int) -> _Out:
        self.parts.append(struct.pack(">b", v))
        return self

    def cstring(self, v: str | None) -> _Out:
        """A compact (uvarint length + 1, 0 = null) string, as flexible values use."""
        if v is None:
            self.parts.append(b"\x00")
            return self
        b = v.encode()
        self.parts.append(write_uvarint(len(b) + 1))
        self.parts.append(b)
        return self

    def count(self, n: int) -> _Out:
        self.parts.append(write_uvarint(n + 1))
        return self

    def uuid_(self, v: uuid.UUID) -> _Out:
        self.parts.append(v.bytes)
        return self

    def no_tags(self) -> _Out:
        self.parts.append(b"\x00")
        return self

    def cbytes(self, v: bytes) -> _Out:
        self.parts.append(write_uvarint(len(v) + 1))
        self.parts.append(v)
        return self

    def classic_tag(self, c: ClassicMetadata) -> _Out:
        """The tagged-field section holding tag 0, ClassicMemberMetadata (a flexible struct)."""
        body = _Out().int32(c.session_timeout_ms).count(len(c.protocols))
        for name, meta in c.protocols:
            body.cstring(name).cbytes(meta).no_tags()
        data = body.no_tags().done()
        self.parts += [write_uvarint(1), write_uvarint(0), write_uvarint(len(data)), data]
        return self

    def assignment(self, a: Assignment) -> _Out:
        self.count(len(a))
        for tid in sorted(a, key=lambda t: t.bytes):
            parts = sorted(a[tid])
            self.uuid_(tid).count(len(parts))
            for p in parts:
                self.int32(p)
            self.no_tags()
        return self



def encode_key(key: Key) -> bytes:
    out = _Out().int16(KEY_VERSIONS[type(key)]).string(key.group)
    if isinstance(key, (MemberMetadataKey, TargetMemberKey, CurrentAssignmentKey)):
        out.string(key.member_id)
    elif isinstance(key, RegexKey):
        out.string(key.regex)
    return out.done()


def encode_value(v: Value) -> bytes:
    out = _Out().int16(0)
    if isinstance(v, (GroupEpochValue, TargetEpochValue)):
        out.int32(v.epoch)
    elif isinstance(v, PartitionMetadataValue):
        out.count(len(v.topics))
        for t in v.topics:
            out.uuid_(t.topic_id).cstring(t.name).int32(t.partitions).count(0).no_tags()
    elif isinstance(v, MemberMetadataValue):
        out.cstring(v.instance_id).cstring(v.rack_id).cstring(v.client_id).cstring(v.client_host)
        out.count(len(v.subscribed_topic_names))
        for name in v.subscribed_topic_names:
            out.cstring(name)
        out.cstring(v.subscribed_topic_regex).int32(v.rebalance_timeout_ms).cstring(v.server_assignor)
        if v.classic is not None:
            return out.classic_tag(v.classic).done()
    elif isinstance(v, TargetMemberValue):
        out.assignment(v.assignment)
    elif isinstance(v, CurrentAssignmentValue):
        out.int32(v.member_epoch).int32(v.previous_member_epoch).int8(v.state.value)
        out.assignment(v.assigned).assignment(v.pending_revocation)
    elif isinstance(v, RegexValue):
        out.count(len(v.topics))
        for name in v.topics:
            out.cstring(name)
        out.int64(v.version).int64(v.timestamp)
    return out.no_tags().done()


def encode(record: Record) -> tuple[bytes, bytes | None]:
    return encode_key(record.key), None if record.value is None else encode_value(record.value)


# ---------------------------------------------------------------- decoding
class _In(_Reader):
    """The classic reader plus flexible values' types."""

    def int8(self) -> int:
        return int(struct.unpack(">b", self._take(1))[0])

    def _uvarint(self) -> int:
        value, self.pos = read_uvarint(self.data, self.pos)
        return value

    def cstring(self) -> str | None:
        n = self._uvarint()
        return None if n == 0 else bytes(self._take(n - 1)).decode()

    def ctext(self) -> str:
        return self.cstring() or ""

    def count(self) -> int:
        return max(self._uvarint() - 1, 0)

    def uuid_(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self._take(16)))

    def tags(self) -> None:
        self.pos = skip_tagged_fields(self.data, self.pos)

    def cbytes(self) -> bytes:
        n = self._uvarint()
        return b"" if n == 0 else bytes(self._take(n - 1))

    def classic_tag(self) -> ClassicMetadata | None:
        """The tagged fields of a member metadata value: tag 0 is ClassicMemberMetadata, others skipped."""
        found = None
        for _ in range(self._uvarint()):
            tag, size = self._uvarint(), self._uvarint()
            end = self.pos + size
            if tag == 0:
                session = self.int32()
                protocols = []
                for _ in range(self.count()):
                    protocols.append((self.ctext(), self.cbytes()))
                    self.tags()
                found = ClassicMetadata(session, tuple(protocols))
            self.pos = end
        return found

    def assignment(self) -> dict[uuid.UUID, frozenset[int]]:
        pairs = []
        for _ in range(self.count()):
            tid = self.uuid_()
            pairs.append((tid, [self.int32() for _ in range(self.count())]))
            self.tags()
        return assignment_of(pairs)


def decode_key(data: bytes) -> Key:
    r = _In(data)
    version = r.int16()
    kind = _BY_VERSION.get(version)
    if kind is None:
        raise CorruptLogError(f"not a consumer group key version: {version}")
    group = r.text()
    if kind in (MemberMetadataKey, TargetMemberKey, CurrentAssignmentKey):
        return kind(group, r.text())
    if kind is RegexKey:
        return RegexKey(group, r.text())
    return kind(group)  # type: ignore[no-any-return]


def is_consumer_group_key(data: bytes) -> bool:
    return len(data) >= 2 and struct.unpack(">h", data[:2])[0] in _BY_VERSION


def decode_value(key: Key, data: bytes) -> Value:
    r = _In(data)
    version = r.int16()
    if version != 0:
        raise CorruptLogError(f"unknown value version {version} for {type(key).__name__}")
    v: Value
    if isinstance(key, GroupEpochKey):
        v = GroupEpochValue(r.int32())
    elif isinstance(key, TargetEpochKey):
        v = TargetEpochValue(r.int32())
    elif isinstance(key, PartitionMetadataKey):
        topics = []
        for _ in range(r.count()):
            tid, name, parts = r.uuid_(), r.ctext(), r.int32()
            for _ in range(r.count()):  # racks per partition: not used since Kafka 4.0
                r.int32()
                for _ in range(r.count()):
                    r.cstring()
                r.tags()
            r.tags()
            topics.append(TopicInfo(name, tid, parts))
        v = PartitionMetadataValue(tuple(topics))
    elif isinstance(key, MemberMetadataKey):
        instance, rack, client, host = r.cstring(), r.cstring(), r.ctext(), r.ctext()
        names = tuple(r.ctext() for _ in range(r.count()))
        regex, rebalance, assignor = r.cstring(), r.int32(), r.cstring()
        return MemberMetadataValue(instance, rack, client, host, names, regex, rebalance, assignor, r.classic_tag())
    elif isinstance(key, TargetMemberKey):
        v = TargetMemberValue(r.assignment())
    elif isinstance(key, CurrentAssignmentKey):
        epoch, prev, state = r.int32(), r.int32(), r.int8()
        try:
            member_state = MemberState(state)
        except ValueError:
            raise CorruptLogError(f"unknown member state {state}") from None
        v = CurrentAssignmentValue(epoch, prev, member_state, r.assignment(), r.assignment())
    else:
        topics_ = tuple(r.ctext() for _ in range(r.count()))
        v = RegexValue(topics_, r.int64(), r.int64())
    r.tags()
    return v


def decode(key: bytes, value: bytes | None) -> Record:
    k = decode_key(key)
    return Record(k, None if value is None else decode_value(k, value))
