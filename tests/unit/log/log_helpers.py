"""Builders for real v2 batches (kafka-python's own encoder) and decoders for checks."""
from __future__ import annotations

import struct

from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from praha.log.batch import ATTRIBUTES_OFFSET, CRC_OFFSET


def make_batch(count: int = 1, ts: int = 1_000, value_size: int = 10, value: bytes | None = None,
               key: bytes | None = None) -> bytes:
    """One v2 batch of `count` records with timestamps ts, ts+1, ... (base offset 0)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i in range(count):
        v = value if value is not None else (b"v%d-" % i).ljust(value_size, b"x")
        b.append(i, timestamp=ts + i, key=key, value=v, headers=[])
    return bytes(b.build())


def make_batches(sizes: list[int], ts: int = 1_000) -> bytes:
    return b"".join(make_batch(n, ts=ts + 100 * i) for i, n in enumerate(sizes))


def decode(data: bytes | memoryview) -> list[tuple[int, int, bytes]]:
    """(offset, timestamp, value) of every record; asserts every batch CRC is valid."""
    out = []
    mr = MemoryRecords(bytes(data))
    while mr.has_next():
        batch = mr.next_batch()
        assert isinstance(batch, DefaultRecordBatch)
        assert batch.validate_crc(), f"bad CRC in batch at offset {batch.base_offset}"
        for rec in batch:
            out.append((rec.offset, rec.timestamp, rec.value))
    return out


def batch_meta(data: bytes | memoryview) -> list[tuple[int, int, int]]:
    """(base offset, last offset, leader epoch) of each batch."""
    out = []
    mr = MemoryRecords(bytes(data))
    while mr.has_next():
        b = mr.next_batch()
        out.append((b.base_offset, b.last_offset, b.leader_epoch))
    return out


def fix_crc(buf: bytearray, pos: int = 0) -> None:
    """Recompute the CRC of the batch at `pos` after a deliberate header edit."""
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    end = pos + 12 + length
    struct.pack_into(">I", buf, pos + CRC_OFFSET, crc32c(bytes(buf[pos + ATTRIBUTES_OFFSET:end])))
