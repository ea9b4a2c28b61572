"""Compaction of transactional data (Kafka's cleaner rules): aborted records are removed
and never hide a committed record with the same key; a marker stays while its
transaction still has batches, then gets a delete horizon (delete.retention.ms) and goes;
a kept ABORT marker keeps its aborted-transaction index entry; an open transaction
bounds what is cleanable (the last stable offset)."""
from __future__ import annotations

import os

import pytest
from cleaner_helpers import records_of
from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.common import TopicPartition
from praha.log import Log, LogConfig
from praha.log.batch import CONTROL_MASK, iter_batches
from praha.log.cleaner import CleaningAbortedError, LogCleaningPass, clean_log, plan_for
from praha.log.offset_map import OffsetMap
from praha.log.recovery import complete_swaps

TP = TopicPartition("t", 0)
CONFIG = LogConfig(cleanup_policy="compact", file_delete_delay_ms=0, segment_bytes=1 << 20, delete_retention_ms=1_000)


def txn(pid: int, pairs: list[tuple[bytes, bytes]], seq: int = 0) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=1, producer_id=pid,
                                  producer_epoch=0, base_sequence=seq, batch_size=1 << 20)
    for i, (k, v) in enumerate(pairs):
        b.append(i, timestamp=1000 + i, key=k, value=v, headers=[])
    return bytes(b.build())


def plain(pairs: list[tuple[bytes, bytes]]) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, (k, v) in enumerate(pairs):
        b.append(i, timestamp=1000 + i, key=k, value=v, headers=[])
    return bytes(b.build())


def markers(lg: Log) -> list[tuple[int, int]]:
    """(offset, producer id) of each control batch."""
    out = []
    for seg in lg.segments:
        data = seg.read_bytes(0, seg.size)
        out += [(h.base_offset, h.producer_id) for h in iter_batches(data) if h.attributes & CONTROL_MASK]
    return out


def data_records(lg: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    ctrl = {o for o, _ in markers(lg)}
    return [r for r in records_of(lg) if r[0] not in ctrl]


def clean(lg: Log, now_ms: int) -> None:
    plan = plan_for(TP, lg, None, None, now_ms)
    clean_log(lg, OffsetMap(1 << 20), plan.first_dirty_offset, plan.first_uncleanable_offset, now_ms)


def test_aborted_records_go_and_markers_follow_after_delete_retention(tmp_path):
    lg = Log(str(tmp_path / "t-0"), CONFIG)
    try:
        lg.append_as_leader(plain([(b"k1", b"v0")]), 0)                          # 0
        lg.append_as_leader(txn(1, [(b"k1", b"aborted"), (b"k2", b"aborted")]), 0)  # 1-2
        lg.append_as_leader(txn(2, [(b"k2", b"committed")]), 0)                  # 3
        lg.append_marker_as_leader(1, 0, False, 0, 0)                            # 4
        lg.append_marker_as_leader(2, 0, True, 0, 0)                             # 5
        lg.append_as_leader(plain([(b"k3", b"x")]), 0)                           # 6
        lg.roll()
        lg.append_as_leader(plain([(b"k4", b"y")]), 0)                           # 7, active
        entry = lg.segments[0].txn_index.entries
        assert [(e.producer_id, e.first_offset, e.last_offset) for e in entry] == [(1, 1, 4)]

        clean(lg, now_ms=10_000)
        # the aborted k1 did not hide the committed v0; both markers stay (their batches were met)
        assert data_records(lg)[:3] == [(0, b"k1", b"v0"), (3, b"k2", b"committed"), (6, b"k3", b"x")]
        assert markers(lg) == [(4, 1), (5, 2)]
        assert lg.segments[0].txn_index.entries == entry
        assert [(t.producer_id, t.first_offset) for t in lg.collect_aborted_transactions(0, 7)] == [(1, 1)]

        clean(lg, now_ms=10_000)  # no aborted batch left: the ABORT marker gets a horizon
        assert markers(lg) == [(4, 1), (5, 2)]
        clean(lg, now_ms=10_999)
        assert markers(lg) == [(4, 1), (5, 2)]
        clean(lg, now_ms=11_000)  # horizon passed: the ABORT marker and its index entry go
        assert markers(lg) == [(5, 2)]  # the committed transaction's batch is still there
        assert lg.segments[0].txn_index.entries == []
        assert data_records(lg)[:3] == [(0, b"k1", b"v0"), (3, b"k2", b"committed"), (6, b"k3", b"x")]
    finally:
        lg.close()


def test_an_open_transaction_bounds_what_is_cleaned(tmp_path):
    lg = Log(str(tmp_path / "t-0"), CONFIG)
    try:
        lg.append_as_leader(plain([(b"k", b"1")]), 0)     # 0
        lg.append_as_leader(txn(1, [(b"k", b"2")]), 0)    # 1, open
        lg.roll()
        lg.append_as_leader(plain([(b"k", b"3")]), 0)     # 2
        lg.roll()
        lg.append_as_leader(plain([(b"z", b"0")]), 0)     # 3, active
        assert plan_for(TP, lg, None, None, 10_000).first_uncleanable_offset == 1
        clean(lg, now_ms=10_000)
        assert [r[2] for r in data_records(lg)] == [b"1", b"2", b"3", b"0"]
    finally:
        lg.close()


@pytest.mark.parametrize("step", ["swap", "deleted"])
def test_a_crash_during_the_swap_keeps_the_aborted_index(tmp_path, step):
    """The cleaned segment's `.txnindex` goes through `.cleaned` → `.swap` → final with its
    log; a crash in between completes the swap with it. (Opening the log then also
    rebuilds that segment's indexes, the offset index having gone with the swap: the
    rebuilt aborted index is empty, as in Kafka, since the cleaner removed the aborted
    records it was for.)"""
    path = str(tmp_path / "t-0")
    lg = Log(path, CONFIG)
    lg.append_as_leader(plain([(b"k", b"1")]), 0)
    lg.append_as_leader(plain([(b"k", b"2")]), 0)
    lg.append_as_leader(txn(1, [(b"a", b"x")]), 0)  # 2
    lg.append_marker_as_leader(1, 0, False, 0, 0)  # 3
    lg.roll()
    lg.append_as_leader(plain([(b"z", b"0")]), 0)
    lg.flush()
    index = lg.segments[0].txn_index.path
    with open(index, "rb") as f:
        entry = f.read()
    assert len(entry) == 34
    p = LogCleaningPass(lg, OffsetMap(1 << 20), 10_000, crash_after=step)
    with pytest.raises(CleaningAbortedError, match="simulated crash"):
        p.clean(0, lg.active_segment.base_offset)
    assert os.path.exists(index + ".swap")  # the abandoned `lg` is as a killed process left it
    complete_swaps(path)
    with open(index, "rb") as f:
        assert f.read() == entry
    reopened = Log(path, CONFIG, clean_shutdown=True)
    try:
        assert [r[2] for r in data_records(reopened)] == [b"2", b"0"]
        assert markers(reopened) == [(3, 1)]
        assert not [n for n in os.listdir(path) if n.endswith((".cleaned", ".swap", ".deleted"))]
    finally:
        reopened.close()
