"""Producer-state snapshots: Kafka's `<offset>.snapshot` files in a partition directory.

A snapshot at offset N holds, for each idempotent producer, its epoch and its last batch
written below N. A log writes one when it rolls a segment (N = the new segment's base) and
when it closes (N = the log end), and rebuilds its producer table from the newest snapshot
at or below its log end plus the batches from N on, so a producer's state survives a
restart however long ago it last wrote. Snapshots above the log end are deleted when the
log is truncated or recovered; those below the oldest segment, when segments are deleted
(the newest is always kept).

Format (Kafka's ProducerSnapshot v1, big-endian): version int16 = 1, CRC32C uint32 of the
rest, entry count int32, then per producer: producer id int64, epoch int16, last sequence
int32, last offset int64, offset delta int32 (last - first sequence of its last batch),
timestamp int64, coordinator epoch int32, current transaction's first offset int64 (-1).
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass

from crc32c import crc32c

from praha.log.checkpoints import fsync_dir
from praha.log.errors import CorruptCheckpointError

SNAPSHOT_SUFFIX = ".snapshot"
VERSION = 1
_HEAD = struct.Struct(">hIi")  # version, crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_FROM = 6  # the CRC covers everything after version and CRC
_NAME = re.compile(r"^(\d{20})\.snapshot$")


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1


def encode(entries: list[SnapshotEntry]) -> bytes:
    out = bytearray(_HEAD.pack(VERSION, 0, len(entries)))
    for e in entries:
        out += _ENTRY.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
                           e.coordinator_epoch, e.current_txn_first_offset)
    struct.pack_into(">I", out, 2, crc32c(bytes(out[_CRC_FROM:])))
    return bytes(out)


def decode(data: bytes, name: str = "snapshot") -> list[SnapshotEntry]:
    """The entries of a snapshot; CorruptCheckpointError for a bad version, CRC or length."""
    if len(data) < _HEAD.size:
        raise CorruptCheckpointError(name, f"{len(data)} bytes, shorter than a snapshot header")
    version, crc, count = _HEAD.unpack_from(data)
    if version != VERSION:
        raise CorruptCheckpointError(name, f"unknown snapshot version {version}")
    if crc32c(data[_CRC_FROM:]) != crc:
        raise CorruptCheckpointError(name, "CRC mismatch")
    if count < 0 or len(data) != _HEAD.size + count * _ENTRY.size:
        raise CorruptCheckpointError(name, f"{count} entries do not fill {len(data)} bytes")
    return [SnapshotEntry(*_ENTRY.unpack_from(data, _HEAD.size + i * _ENTRY.size)) for i in range(count)]


def snapshot_path(directory: str, offset: int) -> str:
    return os.path.join(directory, f"{offset:020d}{SNAPSHOT_SUFFIX}")


def list_snapshots(directory: str) -> list[int]:
    """Offsets of the snapshots in `directory`, ascending."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for m in map(_NAME.match, names) if m is not None)


def write(directory: str, offset: int, entries: list[SnapshotEntry]) -> None:
    """Write atomically (a temporary file renamed into place), durably."""
    path = snapshot_path(directory, offset)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(encode(entries))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(directory)


def read(directory: str, offset: int) -> list[SnapshotEntry]:
    path = snapshot_path(directory, offset)
    with open(path, "rb") as f:
        return decode(f.read(), path)


def delete(directory: str, offsets: list[int]) -> None:
    for offset in offsets:
        try:
            os.unlink(snapshot_path(directory, offset))
        except FileNotFoundError:
            pass
