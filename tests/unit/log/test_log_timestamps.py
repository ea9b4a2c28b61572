"""ListOffsets by time: first record with timestamp ≥ target, via the time index."""
from __future__ import annotations

from log_helpers import make_batch

from praha.log import LogConfig


def test_offset_for_timestamp_across_segments(open_log):
    batch = make_batch(5, value_size=50)
    lg = open_log(config=LogConfig(segment_bytes=3 * len(batch), index_interval_bytes=100, file_delete_delay_ms=0))
    for i in range(10):  # batch i: offsets 5i..5i+4, timestamps 1000+100i .. +4
        lg.append_as_leader(make_batch(5, value_size=50, ts=1_000 + 100 * i), 0)
    assert len(lg.segments) == 4
    assert lg.offset_for_timestamp(0) == (0, 1_000)
    assert lg.offset_for_timestamp(1_000) == (0, 1_000)
    assert lg.offset_for_timestamp(1_002) == (2, 1_002)
    assert lg.offset_for_timestamp(1_005) == (5, 1_100)
    assert lg.offset_for_timestamp(1_503) == (28, 1_503)
    assert lg.offset_for_timestamp(1_904) == (49, 1_904)
    assert lg.offset_for_timestamp(1_905) is None
    assert lg.offset_of_max_timestamp() == (49, 1_904)


def test_out_of_order_timestamps(open_log):
    lg = open_log(config=LogConfig(index_interval_bytes=0, file_delete_delay_ms=0))
    for ts in (5_000, 3_000, 7_000, 6_000):
        lg.append_as_leader(make_batch(1, ts=ts), 0)
    assert lg.offset_for_timestamp(4_000) == (0, 5_000)
    assert lg.offset_for_timestamp(5_500) == (2, 7_000)
    assert lg.offset_for_timestamp(2_000) == (0, 5_000)
    assert lg.offset_of_max_timestamp() == (2, 7_000)


def test_timestamp_lookup_respects_log_start(open_log):
    lg = open_log(config=LogConfig(retention_ms=-1, file_delete_delay_ms=0))
    lg.append_as_leader(make_batch(4, ts=1_000), 0)
    lg.increment_log_start_offset(2)
    assert lg.offset_for_timestamp(0) == (2, 1_002)


def test_empty_log(open_log):
    lg = open_log()
    assert lg.offset_for_timestamp(0) is None
    assert lg.offset_of_max_timestamp() is None


def test_log_append_time_stamps_the_batch_with_the_leaders_clock(open_log):
    """LogAppendTime: the stored batch carries the leader's clock as its max timestamp and
    the timestamp-type bit, with a CRC that still checks; the time index and the append
    answer use that time; a CreateTime log keeps the producer's."""
    from praha.log.batch import TIMESTAMP_TYPE_MASK, iter_batches, validate

    lg = open_log(config=LogConfig(timestamp_type="LogAppendTime", file_delete_delay_ms=0))
    info = lg.append_as_leader(make_batch(3, ts=1_000), 0, now_ms=50_000)
    assert (info.max_timestamp, info.log_append_time) == (50_000, 50_000)
    stored = bytes(lg.read(0, 1 << 20).data)
    validate(stored, strict=True)  # the CRC was computed again
    [h] = list(iter_batches(stored))
    assert h.attributes & TIMESTAMP_TYPE_MASK
    assert h.max_timestamp == 50_000
    assert lg.offset_for_timestamp(40_000) == (0, 50_000)

    plain = open_log("plain-0", config=LogConfig(file_delete_delay_ms=0))
    info = plain.append_as_leader(make_batch(3, ts=1_000), 0, now_ms=50_000)
    assert (info.max_timestamp, info.log_append_time) == (1_002, -1)
