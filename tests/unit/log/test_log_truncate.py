"""Truncation (follower reconciliation) and full reset; the epoch cache follows."""
from __future__ import annotations

import os

from log_helpers import batch_meta, make_batch

from praha.log import Log, LogConfig


def entries(lg):
    return [(e.epoch, e.start_offset) for e in lg.epoch_cache.entries]


def build(open_log, **cfg):
    batch = make_batch(3, value_size=50)
    lg = open_log(config=LogConfig(segment_bytes=2 * len(batch), file_delete_delay_ms=0, **cfg))
    for epoch in (0, 0, 1, 1, 2, 2, 3):
        lg.append_as_leader(batch, epoch)
    return lg  # offsets 0..20; segments at 0, 6, 12, 18; epochs 0@0 1@6 2@12 3@18


def test_truncate_within_active_segment(open_log):
    lg = build(open_log)
    assert lg.truncate_to(20) == 18  # batch 18-20 straddles 20: dropped whole
    assert lg.log_end_offset == 18
    assert entries(lg) == [(0, 0), (1, 6), (2, 12)]
    assert lg.truncate_to(50) == 18  # beyond the end: nothing


def test_truncate_across_segments(open_log):
    lg = build(open_log)
    assert lg.truncate_to(9) == 9
    assert [s.base_offset for s in lg.segments] == [0, 6]
    assert entries(lg) == [(0, 0), (1, 6)]
    assert batch_meta(lg.read(6, 1 << 20).data) == [(6, 8, 1)]
    assert not os.path.exists(os.path.join(lg.dir, "00000000000000000012.log"))
    # the truncated segment is active again and takes appends
    info = lg.append_as_leader(make_batch(2), 5)
    assert (info.first_offset, info.last_offset) == (9, 10)
    assert entries(lg) == [(0, 0), (1, 6), (5, 9)]
    assert [m[0] for m in batch_meta(lg.read(0, 1 << 20).data)] == [0, 3]
    metas = []
    pos = 0
    while pos < lg.log_end_offset:
        r = lg.read(pos, 1 << 20)
        metas += batch_meta(r.data)
        pos = r.next_offset
    assert metas == [(0, 2, 0), (3, 5, 0), (6, 8, 1), (9, 10, 5)]


def test_truncate_to_segment_base_keeps_empty_segment(open_log):
    lg = build(open_log)
    assert lg.truncate_to(12) == 12
    assert [s.base_offset for s in lg.segments] == [0, 6, 12]
    assert lg.active_segment.size == 0
    lg.append_as_leader(make_batch(1), 4)
    assert batch_meta(lg.read(12, 100).data) == [(12, 12, 4)]


def test_truncate_survives_reopen(open_log, tmp_path):
    lg = build(open_log)
    lg.truncate_to(9)
    lg.append_as_leader(make_batch(2), 5)
    lg.close()
    again = Log(lg.dir, LogConfig(file_delete_delay_ms=0))
    assert again.log_end_offset == 11
    assert entries(again) == [(0, 0), (1, 6), (5, 9)]
    assert not again.last_recovery.truncated_bytes
    again.close()


def test_truncate_fully_and_start_at(open_log):
    lg = build(open_log)
    lg.truncate_fully_and_start_at(100)
    assert (lg.log_start_offset, lg.log_end_offset, lg.recovery_point) == (100, 100, 100)
    assert [s.base_offset for s in lg.segments] == [100]
    assert entries(lg) == []
    assert sorted(n for n in os.listdir(lg.dir) if n.endswith(".log")) == ["00000000000000000100.log"]
    lg.append_as_follower(_batch_at(100, epoch=7))
    assert lg.log_end_offset == 102
    assert entries(lg) == [(7, 100)]


def test_truncate_fully_same_base(open_log):
    lg = build(open_log)
    lg.truncate_fully_and_start_at(0)
    assert lg.log_end_offset == 0
    assert lg.read(0, 100).data == b""
    lg.append_as_leader(make_batch(1), 9)
    assert batch_meta(lg.read(0, 100).data) == [(0, 0, 9)]


def test_truncate_below_first_segment_resets(open_log):
    lg = build(open_log, retention_ms=-1, retention_bytes=0)
    lg.delete_retention_segments()
    first = lg.segments[0].base_offset
    assert first > 0
    lg.truncate_to(first - 1)
    assert lg.log_start_offset == lg.log_end_offset == first - 1


def _batch_at(offset: int, epoch: int) -> bytes:
    from praha.log.batch import assign_offsets
    return bytes(assign_offsets(make_batch(2), offset, epoch))
