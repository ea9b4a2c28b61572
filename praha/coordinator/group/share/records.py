"""A share group's record in `__consumer_offsets`, in Kafka 4's format (KIP-932):

    key v11  ShareGroupMetadata   group -> Epoch (value version 0, flexible)

It says the group exists and its epoch, so a coordinator that loads the partition knows an
empty share group as its predecessor did; a null value (DeleteGroups) removes it. Members stay
soft state (they join again after a move); each share partition's start offset and in-flight
records are the durable share state the partition leaders keep (`praha.zk.share_state`).
`KEY_VERSIONS` is the one table of kinds; a test round-trips every kind through bytes.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from praha.coordinator.group.consumer.records import _In, _Out
from praha.errors import CorruptLogError


@dataclass(frozen=True, slots=True)
class ShareGroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupValue:
    epoch: int


#: every share-group record kind and its key version (Kafka's CoordinatorRecordType ids)
KEY_VERSIONS: dict[type, int] = {ShareGroupKey: 11}
_BY_VERSION = {v: k for k, v in KEY_VERSIONS.items()}


@dataclass(frozen=True, slots=True)
class ShareRecord:
    """One record of a share group; `value` None is a tombstone."""

    key: ShareGroupKey
    value: ShareGroupValue | None


def encode(record: ShareRecord) -> tuple[bytes, bytes | None]:
    key = _Out().int16(KEY_VERSIONS[type(record.key)]).string(record.key.group).done()
    if record.value is None:
        return key, None
    return key, _Out().int16(0).int32(record.value.epoch).no_tags().done()


def is_share_group_key(data: bytes) -> bool:
    return len(data) >= 2 and struct.unpack(">h", data[:2])[0] in _BY_VERSION


def decode(key: bytes, value: bytes | None) -> ShareRecord:
    r = _In(key)
    version = r.int16()
    if version not in _BY_VERSION:
        raise CorruptLogError(f"not a share group key version: {version}")
    k = ShareGroupKey(r.text())
    if value is None:
        return ShareRecord(k, None)
    v = _In(value)
    if (value_version := v.int16()) != 0:
        raise CorruptLogError(f"unknown value version {value_version} for ShareGroupKey")
    epoch = v.int32()
    v.tags()
    return ShareRecord(k, ShareGroupValue(epoch))
