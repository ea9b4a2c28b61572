"""Log append (leader and follower) and reads by offset: offsets, bounds, error codes."""
from __future__ import annotations

import pytest
from log_helpers import batch_meta, decode, make_batch, make_batches

from praha.errors import ErrorCode
from praha.log import (
    InvalidRecordError,
    LogConfig,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    UnexpectedAppendOffsetError,
)
from praha.log.errors import CorruptBatchError, UnsupportedMagicError


def test_leader_assigns_contiguous_offsets_over_appends(open_log):
    lg = open_log()
    info = lg.append_as_leader(make_batches([3, 2]), leader_epoch=0)
    assert (info.first_offset, info.last_offset, info.record_count, info.batch_count) == (0, 4, 5, 2)
    assert info.max_timestamp == 1_101
    assert info.offset_of_max_timestamp == 4
    info = lg.append_as_leader(make_batches([1, 4, 2]), leader_epoch=0)
    assert (info.first_offset, info.last_offset) == (5, 11)
    assert lg.log_end_offset == 12
    r = lg.read(0, 1 << 20)
    assert [o for o, _, _ in decode(r.data)] == list(range(12))  # CRCs valid after patching
    assert batch_meta(r.data) == [(0, 2, 0), (3, 4, 0), (5, 5, 0), (6, 9, 0), (10, 11, 0)]
    assert (r.first_offset, r.next_offset, r.log_end_offset, r.log_start_offset) == (0, 12, 12, 0)


def test_values_survive(open_log):
    lg = open_log()
    lg.append_as_leader(make_batch(2, value=b"hello"), 0)
    assert [v for _, _, v in decode(lg.read(0, 1000).data)] == [b"hello", b"hello"]


def test_leader_epoch_stamped_and_cached(open_log):
    lg = open_log()
    lg.append_as_leader(make_batch(2), 3)
    lg.append_as_leader(make_batch(2), 3)
    lg.append_as_leader(make_batch(1), 5)
    assert [(e.epoch, e.start_offset) for e in lg.epoch_cache.entries] == [(3, 0), (5, 4)]
    assert [m[2] for m in batch_meta(lg.read(0, 1 << 20).data)] == [3, 3, 5]
    assert lg.end_offset_for_epoch(3) == (3, 4)
    assert lg.end_offset_for_epoch(5) == (5, 5)


def test_read_from_middle_of_batch_returns_whole_batch(open_log):
    lg = open_log()
    lg.append_as_leader(make_batches([5, 5]), 0)
    r = lg.read(7, 1 << 20)
    assert r.first_offset == 5
    assert batch_meta(r.data) == [(5, 9, 0)]


def test_read_respects_max_bytes_with_whole_batches(open_log):
    lg = open_log()
    batch = make_batch(4, value_size=50)
    for _ in range(10):
        lg.append_as_leader(batch, 0)
    r = lg.read(0, 3 * len(batch) + 10)
    assert len(r.data) == 3 * len(batch)
    assert r.next_offset == 12
    r = lg.read(12, 3 * len(batch))
    assert len(r.data) == 3 * len(batch)
    assert r.first_offset == 12


def test_at_least_one_batch_even_if_larger_than_max_bytes(open_log):
    lg = open_log()
    big = make_batch(20, value_size=500)
    lg.append_as_leader(big, 0)
    lg.append_as_leader(make_batch(1), 0)
    r = lg.read(0, 100)
    assert len(r.data) == len(big)
    assert (r.first_offset, r.next_offset) == (0, 20)
    assert lg.read(0, 100, min_one_batch=False).data == b""


def test_read_bounded_by_max_offset(open_log):
    lg = open_log()
    lg.append_as_leader(make_batches([3, 3, 3]), 0)  # batches 0-2, 3-5, 6-8
    r = lg.read(0, 1 << 20, max_offset=6)
    assert batch_meta(r.data) == [(0, 2, 0), (3, 5, 0)]
    assert r.next_offset == 6
    # a batch straddling max_offset is withheld (its tail is not committed)
    assert batch_meta(lg.read(0, 1 << 20, max_offset=5).data) == [(0, 2, 0)]
    assert lg.read(6, 1 << 20, max_offset=6).data == b""
    assert lg.read(3, 1 << 20, max_offset=4).data == b""
    # at-least-one never overrides max_offset
    assert lg.read(3, 1, max_offset=5).data == b""
    assert batch_meta(lg.read(3, 1, max_offset=6).data) == [(3, 5, 0)]


def test_read_with_many_index_entries(open_log):
    """Reads that jump through the offset index land on exact batch boundaries."""
    lg = open_log(config=LogConfig(index_interval_bytes=256, file_delete_delay_ms=0))
    batch = make_batch(2, value_size=40)
    for _ in range(200):
        lg.append_as_leader(batch, 0)
    assert len(lg.active_segment.offset_index) > 50
    for start in (0, 1, 57, 200, 399):
        for max_bytes in (1, 300, 1000, 5000):
            for hw in (None, 100, 250, 400):
                if hw is not None and start >= hw:
                    continue
                r = lg.read(start, max_bytes, max_offset=hw)
                meta = batch_meta(r.data)
                assert meta, (start, max_bytes, hw)
                assert meta[0][0] <= start <= meta[0][1]
                assert all(b[1] < (hw or 10**9) for b in meta)
                assert len(r.data) <= max(max_bytes, len(batch))
                assert len(r.data) % len(batch) == 0
                assert r.next_offset == meta[-1][1] + 1
                # maximal: one more batch would break a bound
                more = len(r.data) + len(batch)
                nxt = r.next_offset
                assert more > max_bytes or nxt >= lg.log_end_offset or (hw is not None and nxt + 1 >= hw)


def test_read_out_of_range(open_log):
    lg = open_log()
    lg.append_as_leader(make_batch(3), 0)
    assert lg.read(3, 100).data == b""  # at the log end: empty, not an error
    with pytest.raises(OffsetOutOfRangeError) as e:
        lg.read(4, 100)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(-1, 100)


def test_read_slice_for_zero_copy(open_log):
    lg = open_log()
    lg.append_as_leader(make_batches([2, 2]), 0)
    sl = lg.read_slice(2, 1 << 20)
    assert sl.segment is lg.active_segment
    assert sl.position > 0
    assert sl.size > 0
    import os
    assert os.pread(sl.segment.fd, sl.size, sl.position) == sl.read()
    assert batch_meta(sl.read()) == [(2, 3, 0)]


def test_oversized_batch_and_append(open_log):
    lg = open_log(config=LogConfig(max_message_bytes=500, segment_bytes=2000, file_delete_delay_ms=0))
    with pytest.raises(MessageTooLargeError) as e:
        lg.append_as_leader(make_batch(10, value_size=100), 0)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
    small = make_batch(1, value_size=100)
    with pytest.raises(RecordListTooLargeError) as e:
        lg.append_as_leader(small * 20, 0)
    assert e.value.code == ErrorCode.RECORD_LIST_TOO_LARGE
    assert lg.log_end_offset == 0


def test_bad_producer_data_leaves_log_untouched(open_log):
    lg = open_log()
    lg.append_as_leader(make_batch(1), 0)
    bad = bytearray(make_batch(2))
    bad[-1] ^= 1
    with pytest.raises(CorruptBatchError):
        lg.append_as_leader(bytes(bad), 0)
    with pytest.raises(CorruptBatchError):
        lg.append_as_leader(make_batch(2)[:-5], 0)
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    b = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    b.append(0, timestamp=1, key=None, value=b"x")
    with pytest.raises(UnsupportedMagicError):
        lg.append_as_leader(bytes(b.build()), 0)
    import struct

    from log_helpers import fix_crc
    inconsistent = bytearray(make_batch(3))
    struct.pack_into(">i", inconsistent, 57, 1)
    fix_crc(inconsistent)
    with pytest.raises(InvalidRecordError):
        lg.append_as_leader(bytes(inconsistent), 0)
    assert lg.log_end_offset == 1
    assert lg.append_as_leader(b"", 0).first_offset == -1


def test_follower_append_continuity(open_log):
    leader = open_log("leader-0")
    for epoch, n in [(1, 3), (1, 2), (2, 4), (4, 1)]:
        leader.append_as_leader(make_batch(n), epoch)
    data = leader.read(0, 1 << 20).data
    follower = open_log("follower-0")
    info = follower.append_as_follower(data[: len(make_batch(3)) + len(make_batch(2))])
    assert (info.first_offset, info.last_offset) == (0, 4)
    # a refetch that repeats what we already have: duplicates skipped
    info = follower.append_as_follower(data)
    assert (info.first_offset, info.last_offset, info.batch_count) == (5, 9, 2)
    assert follower.read(0, 1 << 20).data == data
    assert follower.epoch_cache.entries == leader.epoch_cache.entries
    assert [(e.epoch, e.start_offset) for e in follower.epoch_cache.entries] == [(1, 0), (2, 5), (4, 9)]
    assert follower.append_as_follower(data).first_offset == -1  # everything duplicate


def test_follower_accepts_gaps_refuses_overlap(open_log):
    """A compacted leader log has offset gaps, so (as Kafka's followers) a follower takes
    batches starting above its log end; an overlap or offsets going back are refused."""
    leader = open_log("leader-0")
    leader.append_as_leader(make_batches([2, 2, 2]), 0)
    follower = open_log("follower-0")
    later = leader.read(2, 1 << 20).data
    gapped = open_log("gapped-0")
    gapped.append_as_follower(later)  # starts at 2, above its log end 0: a gap
    assert gapped.log_end_offset == 6
    follower.append_as_follower(leader.read(0, 1).data)  # offsets 0-1
    follower.truncate_to(1)  # straddling batch dropped: follower now ends at 0
    assert follower.log_end_offset == 0
    follower.append_as_follower(leader.read(0, 1).data)
    # a batch that starts below our end but ends above it
    other = open_log("other-0")
    other.append_as_leader(make_batch(3), 0)  # 0-2
    with pytest.raises(UnexpectedAppendOffsetError, match="overlap"):
        follower.append_as_follower(other.read(0, 100).data)
    bad = bytearray(later)
    bad[-1] ^= 0xFF  # inside the CRC'd range
    with pytest.raises(CorruptBatchError):
        follower.append_as_follower(bytes(bad))
    back = bytearray(later)
    back[len(make_batch(2)) + 7] -= 1  # second batch's baseOffset goes back: outside the CRC
    with pytest.raises(UnexpectedAppendOffsetError, match="does not follow"):
        follower.append_as_follower(bytes(back))
    assert follower.log_end_offset == 2


def test_follower_big_fetch_spreads_over_segments(open_log):
    leader = open_log("leader-0")
    batch = make_batch(5, value_size=100)
    for _ in range(30):
        leader.append_as_leader(batch, 0)
    data = leader.read(0, 1 << 20).data
    follower = open_log("follower-0", config=LogConfig(segment_bytes=len(batch) * 7, file_delete_delay_ms=0))
    follower.append_as_follower(data)
    assert len(follower.segments) == 5
    assert all(s.size <= len(batch) * 7 for s in follower.segments)
    out = b"".join(follower.read(o, 1 << 20).data for o in range(0, 150, 35))
    assert out == data


def test_accepts_any_buffer_type(open_log):
    lg = open_log()
    raw = make_batches([2, 1])
    lg.append_as_leader(memoryview(raw), 0)
    lg.append_as_leader(bytearray(raw), 0)
    assert [o for o, _, _ in decode(lg.read(0, 1 << 20).data)] == list(range(6))
    assert raw == make_batches([2, 1])  # the caller's buffer is not patched


def test_logs_hold_one_descriptor_each(open_log):
    """Indexes open their files only to write: a broker hosting 10k partitions must fit
    in an open-file limit of 20k (it was three descriptors per partition)."""
    import os

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = open_fds()
    logs = []
    for i in range(20):
        lg = open_log(f"many-{i}", config=LogConfig(index_interval_bytes=64))
        for _ in range(300):  # enough index entries to write them out
            lg.append_as_leader(make_batch(1, value_size=40), 0)
        logs.append(lg)
    assert all(len(lg.active_segment.offset_index) > 100 for lg in logs)
    assert open_fds() - before <= 20
    lg = logs[0]
    lg.flush()
    assert lg.read(150, 100).data  # reads go through the index still
