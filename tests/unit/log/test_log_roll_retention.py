"""Segment rolls (size, time) and retention (time, size, high watermark, deferred file deletion)."""
from __future__ import annotations

import os

from log_helpers import batch_meta, decode, make_batch

from praha.log import LogConfig

DAY = 24 * 3600 * 1000


def seg_files(lg):
    return sorted(n for n in os.listdir(lg.dir) if n.endswith((".log", ".index", ".timeindex")))


def test_roll_by_size(open_log):
    batch = make_batch(4, value_size=100)
    lg = open_log(config=LogConfig(segment_bytes=3 * len(batch), file_delete_delay_ms=0))
    for _ in range(10):
        lg.append_as_leader(batch, 0)
    assert [s.base_offset for s in lg.segments] == [0, 12, 24, 36]
    assert all(s.size <= 3 * len(batch) for s in lg.segments)
    assert seg_files(lg)[:3] == ["00000000000000000000.index", "00000000000000000000.log",
                                 "00000000000000000000.timeindex"]
    assert "00000000000000000036.log" in seg_files(lg)
    # reads cross segment boundaries one segment at a time
    offsets = []
    pos = 0
    while pos < lg.log_end_offset:
        r = lg.read(pos, 1 << 20)
        offsets += [o for o, _, _ in decode(r.data)]
        pos = r.next_offset
    assert offsets == list(range(40))
    lg.flush()
    assert lg.recovery_point == 40


def test_roll_flushes_and_advances_recovery_point(open_log):
    batch = make_batch(4, value_size=100)
    lg = open_log(config=LogConfig(segment_bytes=2 * len(batch), file_delete_delay_ms=0))
    for _ in range(5):
        lg.append_as_leader(batch, 0)
    lg._wait_background_flush()
    assert lg.recovery_point == 16  # base of the active segment


def test_roll_by_time(open_log):
    lg = open_log(config=LogConfig(segment_ms=1000, file_delete_delay_ms=0))
    lg.append_as_leader(make_batch(1), 0, now_ms=10_000)
    lg.append_as_leader(make_batch(1), 0, now_ms=10_500)
    assert len(lg.segments) == 1
    lg.append_as_leader(make_batch(1), 0, now_ms=11_000)
    assert [s.base_offset for s in lg.segments] == [0, 2]
    lg.append_as_leader(make_batch(1), 0, now_ms=11_999)
    assert len(lg.segments) == 2


def test_explicit_roll_is_noop_when_active_empty(open_log):
    lg = open_log()
    lg.roll()
    assert len(lg.segments) == 1
    lg.append_as_leader(make_batch(2), 0)
    lg.roll()
    lg.roll()
    assert [s.base_offset for s in lg.segments] == [0, 2]


def test_retention_by_time(open_log):
    now = 1_000 * DAY
    lg = open_log(config=LogConfig(retention_ms=DAY, file_delete_delay_ms=0))
    for age_days in (5, 3, 0.5):
        ts = int(now - age_days * DAY)
        lg.append_as_leader(make_batch(2, ts=ts), 0)
        lg.roll()
    lg.append_as_leader(make_batch(2, ts=now), 0)
    assert len(lg.segments) == 4
    assert lg.delete_retention_segments(now) == 2
    assert [s.base_offset for s in lg.segments] == [4, 6]
    assert lg.log_start_offset == 4
    assert "00000000000000000000.log" not in seg_files(lg)
    assert lg.delete_retention_segments(now) == 0
    assert batch_meta(lg.read(4, 1 << 20).data) == [(4, 5, 0)]


def test_retention_by_size(open_log):
    batch = make_batch(4, value_size=100)
    lg = open_log(config=LogConfig(segment_bytes=2 * len(batch), retention_ms=-1,
                                   retention_bytes=5 * len(batch), file_delete_delay_ms=0))
    for _ in range(9):
        lg.append_as_leader(batch, 0)
    # segments of 2,2,2,2,1 batches = 9 batches; keep at most 5 batches' worth
    assert lg.delete_retention_segments() == 2
    assert lg.size_bytes == 5 * len(batch)
    assert lg.log_start_offset == 16


def test_retention_respects_high_watermark(open_log):
    now = 1_000 * DAY
    lg = open_log(config=LogConfig(retention_ms=DAY, file_delete_delay_ms=0))
    for _ in range(3):
        lg.append_as_leader(make_batch(2, ts=now - 5 * DAY), 0)
        lg.roll()
    assert lg.delete_retention_segments(now, high_watermark=3) == 1  # second segment ends at 4 > hw
    assert lg.log_start_offset == 2


def test_expired_active_segment_is_rolled_then_deleted(open_log):
    now = 1_000 * DAY
    lg = open_log(config=LogConfig(retention_ms=DAY, file_delete_delay_ms=0))
    lg.append_as_leader(make_batch(3, ts=now - 2 * DAY), 2)
    assert lg.delete_retention_segments(now) == 1
    assert [s.base_offset for s in lg.segments] == [3]
    assert lg.log_start_offset == lg.log_end_offset == 3
    assert lg.read(3, 100).data == b""
    assert [(e.epoch, e.start_offset) for e in lg.epoch_cache.entries] == [(2, 3)]
    info = lg.append_as_leader(make_batch(1, ts=now), 2)
    assert info.first_offset == 3


def test_retention_moves_epoch_cache_start(open_log):
    batch = make_batch(2, value_size=100)
    lg = open_log(config=LogConfig(segment_bytes=2 * len(batch), retention_ms=-1,
                                   retention_bytes=2 * len(batch), file_delete_delay_ms=0))
    for epoch in (1, 1, 2, 2, 3):
        lg.append_as_leader(batch, epoch)
    # segments [0-3 epoch 1] [4-7 epoch 2] [8-9 epoch 3]: keeping ≥ 2 batches drops only the first
    assert lg.delete_retention_segments() == 1
    assert lg.log_start_offset == 4
    assert [(e.epoch, e.start_offset) for e in lg.epoch_cache.entries] == [(2, 4), (3, 8)]
    lg.increment_log_start_offset(5)
    assert [(e.epoch, e.start_offset) for e in lg.epoch_cache.entries] == [(2, 5), (3, 8)]


def test_deleted_files_linger_until_delay(open_log):
    now = 1_000 * DAY
    lg = open_log(config=LogConfig(retention_ms=DAY, file_delete_delay_ms=60_000))
    lg.append_as_leader(make_batch(2, ts=now - 2 * DAY), 0)
    lg.roll()
    lg.append_as_leader(make_batch(2, ts=now), 0)
    old = lg.segments[0]
    sl = lg.read_slice(0, 1 << 20)  # an in-flight read of the doomed segment
    assert lg.delete_retention_segments(now) == 1
    assert "00000000000000000000.log.deleted" in os.listdir(lg.dir)
    assert batch_meta(sl.read()) == [(0, 1, 0)]  # still readable
    lg.delete_retention_segments(now + 30_000)
    assert "00000000000000000000.log.deleted" in os.listdir(lg.dir)
    lg.delete_retention_segments(now + 60_000)
    assert not any(n.endswith(".deleted") for n in os.listdir(lg.dir))
    assert old.path.endswith(".deleted")


def test_increment_log_start_then_retention_drops_segments_below(open_log):
    lg = open_log(config=LogConfig(retention_ms=-1, file_delete_delay_ms=0))
    for _ in range(3):
        lg.append_as_leader(make_batch(2), 0)
        lg.roll()
    assert lg.increment_log_start_offset(3)
    assert lg.log_start_offset == 3
    assert lg.delete_retention_segments() == 1  # [0,2) lies wholly below 3
    assert [s.base_offset for s in lg.segments] == [2, 4, 6]
    import pytest

    from praha.log import OffsetOutOfRangeError
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(2, 100)
    assert batch_meta(lg.read(3, 100).data) == [(2, 3, 0)]
