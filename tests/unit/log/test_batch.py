"""Batch header helpers: framing, CRC, magic, offset patching without record decoding."""
from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from log_helpers import batch_meta, decode, fix_crc, make_batch, make_batches

from praha.errors import CorruptLogError, ErrorCode
from praha.log.batch import (
    HEADER_SIZE,
    assign_offsets,
    iter_batches,
    rebase_headers,
    validate,
)
from praha.log.errors import CorruptBatchError, InvalidRecordError, MessageTooLargeError, UnsupportedMagicError
from praha.log.records import ReadRecord, complete_batches


def test_iter_batches_reads_headers_only():
    buf = make_batches([3, 1, 5])
    headers = list(iter_batches(buf))
    assert [h.record_count for h in headers] == [3, 1, 5]
    assert [h.last_offset_delta for h in headers] == [2, 0, 4]
    assert headers[0].position == 0
    assert headers[1].position == headers[0].size
    assert sum(h.size for h in headers) == len(buf)
    assert all(h.magic == 2 for h in headers)
    assert headers[2].max_timestamp == 1_000 + 200 + 4


def test_validate_summary():
    buf = make_batches([2, 3])
    s = validate(buf, strict=True)
    assert s.batch_count == 2
    assert s.record_count == 5
    assert s.size_bytes == len(buf)
    assert s.max_timestamp == 1_102
    assert s.offset_span == 5
    assert validate(b"").batch_count == 0


def test_crc_mismatch_is_corrupt():
    buf = bytearray(make_batches([2, 2]))
    second = list(iter_batches(buf))[1]
    buf[second.position + HEADER_SIZE + 3] ^= 0xFF  # a record byte
    with pytest.raises(CorruptBatchError) as e:
        validate(buf)
    assert e.value.position == second.position
    assert "CRC" in e.value.reason
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
    assert isinstance(e.value, CorruptLogError)


@pytest.mark.parametrize("cut", [1, 10, 30, 60])
def test_truncated_buffer_is_corrupt(cut):
    buf = make_batches([2, 2])
    with pytest.raises(CorruptBatchError, match="truncated"):
        validate(buf[:-cut])


def test_bad_length_is_corrupt():
    buf = bytearray(make_batch(2))
    struct.pack_into(">i", buf, 8, 20)
    with pytest.raises(CorruptBatchError):
        validate(buf)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_magic_refused(magic):
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    b.append(0, timestamp=1 if magic else None, key=None, value=b"hello")
    with pytest.raises(UnsupportedMagicError) as e:
        validate(bytes(b.build()))
    assert e.value.code == ErrorCode.UNSUPPORTED_VERSION


def test_unknown_magic_is_corrupt():
    buf = bytearray(make_batch(1))
    buf[16] = 7
    with pytest.raises(CorruptBatchError, match="magic"):
        validate(buf)


def test_strict_checks_count_against_offset_delta():
    buf = bytearray(make_batch(3))
    struct.pack_into(">i", buf, 57, 2)  # recordCount
    fix_crc(buf)
    validate(buf)  # fine for a follower (compaction may leave holes)
    with pytest.raises(InvalidRecordError) as e:
        validate(buf, strict=True)
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_strict_refuses_control_batches():
    buf = bytearray(make_batch(1))
    struct.pack_into(">h", buf, 21, 0x20)
    fix_crc(buf)
    with pytest.raises(InvalidRecordError):
        validate(buf, strict=True)


def test_max_batch_bytes():
    buf = make_batch(10, value_size=100)
    with pytest.raises(MessageTooLargeError) as e:
        validate(buf, max_batch_bytes=len(buf) - 1)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
    validate(buf, max_batch_bytes=len(buf))


def test_assign_offsets_patches_without_breaking_crc():
    buf = make_batches([3, 1, 4])
    out = assign_offsets(buf, 100, leader_epoch=7)
    assert bytes(buf) != bytes(out)
    assert batch_meta(out) == [(100, 102, 7), (103, 103, 7), (104, 107, 7)]
    assert [o for o, _, _ in decode(out)] == list(range(100, 108))
    validate(out, strict=True)  # CRCs still valid


def test_assign_offsets_in_place_and_rebase():
    buf = bytearray(make_batches([2, 2]))
    s = validate(buf)
    out = assign_offsets(buf, 5, 1, batches=s.batches, in_place=True)
    assert out is buf
    hs = rebase_headers(s.batches, 5, 1)
    assert [(h.base_offset, h.last_offset, h.leader_epoch) for h in hs] == [(5, 6, 1), (7, 8, 1)]
    assert [(h.base_offset, h.last_offset, h.leader_epoch) for h in iter_batches(buf)] == [(5, 6, 1), (7, 8, 1)]


def test_complete_batches_reads_keys_values_and_stops_at_a_torn_tail():
    """praha's own reader of stored batches (kafka-python builds the reference batches)."""
    first = DefaultRecordBatchBuilder(magic=2, compression_type=1, is_transactional=0, producer_id=-1,
                                      producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i in range(3):
        first.append(i, timestamp=5_000 + i, key=b"k%d" % i if i else None, value=None if i == 2 else b"v%d" % i,
                     headers=[])
    second = bytearray(make_batch(2, ts=9_000))
    struct.pack_into(">q", second, 0, 3)  # base offset 3
    struct.pack_into(">h", second, 21, struct.unpack_from(">h", second, 21)[0] | 0x08)  # LogAppendTime
    fix_crc(second)
    data = bytes(first.build()) + bytes(second)
    got = [(h.base_offset, records) for h, records in complete_batches(data + data[:30])]
    assert got == [(0, [ReadRecord(0, 5_000, None, b"v0"), ReadRecord(1, 5_001, b"k1", b"v1"),
                        ReadRecord(2, 5_002, b"k2", None)]),
                   # LogAppendTime: every record carries the batch's max timestamp, as clients read it
                   (3, [ReadRecord(3, 9_001, None, b"v0-xxxxxxx"), ReadRecord(4, 9_001, None, b"v1-xxxxxxx")])]
    corrupt = bytearray(data)
    corrupt[16] = 7  # unknown magic
    with pytest.raises(CorruptBatchError):
        list(complete_batches(bytes(corrupt)))
