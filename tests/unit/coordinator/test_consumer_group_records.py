"""KIP-848 group records in `__consumer_offsets`: Kafka's key versions and flexible value layouts,
byte for byte where the layout is simple, and every kind round-tripped through bytes."""
from __future__ import annotations

import struct
import uuid

import pytest

from praha.coordinator.group.consumer.model import MemberState, TopicInfo
from praha.coordinator.group.consumer.records import (
    KEY_VERSIONS,
    CurrentAssignmentKey,
    CurrentAssignmentValue,
    GroupEpochKey,
    GroupEpochValue,
    MemberMetadataKey,
    MemberMetadataValue,
    PartitionMetadataKey,
    PartitionMetadataValue,
    Record,
    RegexKey,
    RegexValue,
    TargetEpochKey,
    TargetEpochValue,
    TargetMemberKey,
    TargetMemberValue,
    decode,
    encode,
    is_consumer_group_key,
)
from praha.coordinator.group.records import decode_key as classic_decode_key
from praha.errors import CorruptLogError

T1 = uuid.UUID("00000000-0000-0000-0000-000000000001")
T2 = uuid.UUID("ffffffff-0000-0000-0000-000000000002")


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


EVERY_KIND = [
    Record(GroupEpochKey("g"), GroupEpochValue(7)),
    Record(PartitionMetadataKey("g"), PartitionMetadataValue((TopicInfo("a", T1, 6), TopicInfo("b", T2, 1)))),
    Record(MemberMetadataKey("g", "m1"), MemberMetadataValue("i-1", None, "cl", "/127.0.0.1", ("a", "b"), "b.*",
                                                             30000, "range")),
    Record(TargetEpochKey("g"), TargetEpochValue(7)),
    Record(TargetMemberKey("g", "m1"), TargetMemberValue({T1: frozenset({0, 2}), T2: frozenset({0})})),
    Record(CurrentAssignmentKey("g", "m1"), CurrentAssignmentValue(7, 6, MemberState.UNREVOKED_PARTITIONS,
                                                                   {T1: frozenset({0})}, {T1: frozenset({2})})),
    Record(RegexKey("g", "b.*"), RegexValue(("b", "bb"), 3, 1700000000000)),
]


def test_the_table_names_kafkas_key_versions_and_every_kind_is_exercised():
    assert sorted(KEY_VERSIONS.values()) == [3, 4, 5, 6, 7, 8, 16]
    assert {type(r.key) for r in EVERY_KIND} == set(KEY_VERSIONS)


@pytest.mark.parametrize("record", EVERY_KIND, ids=lambda r: type(r.key).__name__)
def test_every_kind_round_trips_and_its_tombstone_too(record):
    key, value = encode(record)
    assert struct.unpack(">h", key[:2])[0] == KEY_VERSIONS[type(record.key)]
    assert decode(key, value) == record
    assert decode(key, None) == Record(record.key, None)
    assert is_consumer_group_key(key)


def test_group_epoch_record_byte_for_byte():
    key, value = encode(Record(GroupEpochKey("grp"), GroupEpochValue(5)))
    assert key == struct.pack(">h", 3) + _s("grp")
    assert value == struct.pack(">hi", 0, 5) + b"\x00"  # version 0, epoch, no tagged fields


def test_current_assignment_value_byte_for_byte():
    _, value = encode(Record(CurrentAssignmentKey("g", "m"), CurrentAssignmentValue(
        4, 3, MemberState.STABLE, {T1: frozenset({1, 0})}, {})))
    assert value == (struct.pack(">hiib", 0, 4, 3, 1)
                     + b"\x02" + T1.bytes + b"\x03" + struct.pack(">ii", 0, 1) + b"\x00"  # one topic, two partitions
                     + b"\x01"  # no partitions pending revocation
                     + b"\x00")


def test_member_key_byte_for_byte_and_classic_keys_are_not_taken_for_consumer_ones():
    key, _ = encode(Record(MemberMetadataKey("g", "m"), None))
    assert key == struct.pack(">h", 5) + _s("g") + _s("m")
    assert not is_consumer_group_key(struct.pack(">h", 2) + _s("g"))
    assert not is_consumer_group_key(struct.pack(">h", 1) + _s("g") + _s("t") + struct.pack(">i", 0))
    with pytest.raises(CorruptLogError):
        classic_decode_key(key)  # the classic decoder refuses it instead of misreading it


def test_truncated_and_unknown_records_are_refused():
    key, value = encode(EVERY_KIND[4])
    with pytest.raises(CorruptLogError):
        decode(key, value[:-3])
    with pytest.raises(CorruptLogError):
        decode(struct.pack(">h", 9) + _s("g"), None)
    with pytest.raises(CorruptLogError):
        decode(key, struct.pack(">h", 1) + value[2:])
