"""Transactions in the log: open transactions in the producer table, markers that close
them (and their fencing), the last stable offset, the aborted-transaction index (written
on leader and follower, cut by truncation, rebuilt by recovery, read by
collect_aborted_transactions) and producer snapshots carrying the transaction state."""
from __future__ import annotations

import os

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from praha.log import Log, LogConfig
from praha.log import producer_snapshot as snapshots
from praha.log.control import ControlType, TxnMarker, build_marker_batch, parse_marker
from praha.log.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from praha.log.producer_state import MarkerVerdict, ProducerStateTable
from praha.log.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex

COMMIT, ABORT = TxnMarker(ControlType.COMMIT, 0), TxnMarker(ControlType.ABORT, 0)


def txn_batch(pid: int, seq: int, count: int = 2, epoch: int = 0, tag: bytes = b"t") -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=1, producer_id=pid,
                                  producer_epoch=epoch, base_sequence=seq, batch_size=1 << 20)
    for i in range(count):
        b.append(i, timestamp=1000 + i, key=None, value=b"%s-%d-%d" % (tag, seq, i), headers=[])
    return bytes(b.build())


def plain_batch(pid: int = -1, seq: int = -1, epoch: int = -1) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=pid,
                                  producer_epoch=epoch, base_sequence=seq, batch_size=1 << 20)
    b.append(0, timestamp=1000, key=None, value=b"plain", headers=[])
    return bytes(b.build())


def control_batches(data: bytes) -> list[tuple[int, int, bool]]:
    """(offset, producer id, is commit) of each control batch, as kafka-python reads them."""
    out = []
    mr = MemoryRecords(bytes(data))
    while mr.has_next():
        b = mr.next_batch()
        assert isinstance(b, DefaultRecordBatch)
        assert b.validate_crc()
        if b.is_control_batch:
            out.append((b.base_offset, b.producer_id, parse_marker(b._buffer).is_commit))
    return out


# ------------------------------------------------------------------------------ pure parts
def test_marker_batch_is_kafkas_control_batch():
    raw = build_marker_batch(42, 3, TxnMarker(ControlType.ABORT, 7), 5000)
    b = DefaultRecordBatch(bytearray(raw))
    assert b.validate_crc()
    assert b.is_control_batch
    assert b.is_transactional
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (42, 3, -1)
    (rec,) = list(b)
    assert rec.key == b"\x00\x00\x00\x00"
    assert rec.value == b"\x00\x00\x00\x00\x00\x07"
    assert parse_marker(raw) == TxnMarker(ControlType.ABORT, 7)


def test_table_opens_and_closes_transactions_and_fences_markers():
    t = ProducerStateTable()
    t.record(1, 0, 0, 1, first_offset=10, transactional=True)
    t.record(1, 0, 2, 1, first_offset=12, transactional=True)  # same transaction
    t.record(2, 0, 0, 0, first_offset=14, transactional=True)
    assert t.ongoing == {1: 10, 2: 14}
    assert t.has_ongoing_transaction(1, 0)
    assert t.last_stable_offset(100) == 10
    assert t.last_stable_offset(5) == 5
    done = t.record_marker(1, 0, TxnMarker(ControlType.ABORT, 4), offset=15)
    assert (done.first_offset, done.last_offset, done.aborted) == (10, 15, True)
    assert t.last_stable_offset_after(done) == 14  # producer 2 is still open
    assert t.last_stable_offset(15) == 10  # the marker is not replicated yet
    assert t.last_stable_offset(16) == 14
    assert t.record_marker(1, 0, TxnMarker(ControlType.ABORT, 4), offset=17) is None  # a retry closes nothing
    assert t.check_marker(1, 0, 3) is MarkerVerdict.COORDINATOR_FENCED
    assert t.check_marker(1, 0, 4) is MarkerVerdict.ACCEPT
    t.record(1, 2, 0, 0, first_offset=20)  # a newer epoch
    assert t.check_marker(1, 1, 9) is MarkerVerdict.FENCED_EPOCH
    done2 = t.record_marker(2, 0, TxnMarker(ControlType.COMMIT, 0), offset=21)
    assert not done2.aborted
    assert t.last_stable_offset_after(done2) == 22
    assert t.last_stable_offset(22) == 22
    assert not t.ongoing


def test_snapshot_round_trip_keeps_transaction_state(tmp_path):
    t = ProducerStateTable()
    t.record(1, 0, 0, 1, first_offset=10, transactional=True)
    t.record_marker(2, 5, TxnMarker(ControlType.COMMIT, 3), offset=12)  # known from a marker only
    snapshots.write(str(tmp_path), 13, t.snapshot())
    back = ProducerStateTable.from_snapshot(snapshots.read(str(tmp_path), 13))
    assert back.ongoing == {1: 10}
    assert back.producers[1].current_txn_first_offset == 10
    assert (back.producers[2].epoch, back.producers[2].coordinator_epoch, len(back.producers[2].batches)) == (5, 3, 0)
    assert back.check(1, 0, 2, 0).verdict.value == "accept"


def test_transaction_index_file_and_collect(tmp_path):
    ix = TransactionIndex(str(tmp_path / "00000000000000000000.txnindex"))
    assert ix.collect(0, 100) == ([], False)
    assert not os.path.exists(ix.path)  # created lazily
    a, b = AbortedTxn(1, 0, 5, 3), AbortedTxn(2, 3, 9, 20)  # b was open when a ended
    ix.append(a)
    ix.append(b)
    assert os.path.getsize(ix.path) == 2 * ENTRY_SIZE == 68
    assert TransactionIndex(ix.path).entries == [a, b]
    assert ix.collect(6, 8) == ([b], True)  # a ended before the fetch; b's LSO passes 8
    assert ix.collect(6, 30) == ([b], False)  # no entry reached 30: later segments may hold more
    assert ix.collect(0, 4) == ([a, b], True)  # b's last stable offset is past 4
    ix.truncate_to(9)
    assert TransactionIndex(ix.path).entries == [a]
    ix.truncate_to(0)
    assert not os.path.exists(ix.path)


# ------------------------------------------------------------------------------ in the log
def test_plain_batch_inside_open_transaction_is_refused(open_log):
    lg = open_log()
    lg.append_as_leader(txn_batch(3, 0), 0)
    with pytest.raises(InvalidTxnStateError) as e:
        lg.append_as_leader(plain_batch(3, 2, 0), 0)
    assert e.value.code == 48
    lg.append_as_leader(plain_batch(), 0)  # other writers are not affected
    lg.append_marker_as_leader(3, 0, True, 0, 0)
    lg.append_as_leader(plain_batch(3, 2, 0), 0)  # closed: fine again


def test_markers_are_fenced_and_nothing_is_appended(open_log):
    lg = open_log()
    lg.append_as_leader(txn_batch(3, 0, epoch=2), 0)
    lg.append_marker_as_leader(3, 2, False, 5, 0)
    end = lg.log_end_offset
    with pytest.raises(TransactionCoordinatorFencedError) as e:
        lg.append_marker_as_leader(3, 2, True, 4, 0)
    assert e.value.code == 52
    with pytest.raises(InvalidProducerEpochError):
        lg.append_marker_as_leader(3, 1, True, 9, 0)
    assert lg.log_end_offset == end


def test_lso_aborted_index_and_collect(open_log):
    lg = open_log()
    lg.append_as_leader(plain_batch(), 0)                       # 0
    lg.append_as_leader(txn_batch(1, 0, tag=b"a"), 0)           # 1-2   producer 1 (aborted)
    lg.append_as_leader(txn_batch(2, 0, tag=b"c"), 0)           # 3-4   producer 2 (committed)
    assert lg.last_stable_offset(lg.log_end_offset) == 1
    abort = lg.append_marker_as_leader(1, 0, False, 0, 0)       # 5
    assert abort.first_offset == 5
    assert lg.last_stable_offset(5) == 1
    assert lg.last_stable_offset(6) == 3
    lg.append_marker_as_leader(2, 0, True, 0, 0)                # 6
    assert lg.last_stable_offset(7) == 7
    assert lg.active_segment.txn_index.entries == [AbortedTxn(1, 1, 5, 3)]
    assert [(t.producer_id, t.first_offset) for t in lg.collect_aborted_transactions(0, 7)] == [(1, 1)]
    assert lg.collect_aborted_transactions(6, 7) == []  # the abort ended before
    assert control_batches(lg.read(0, 1 << 20).data) == [(5, 1, False), (6, 2, True)]


def test_collect_spans_segments_and_stops_when_complete(open_log):
    lg = open_log()
    lg.append_as_leader(txn_batch(1, 0), 0)       # 0-1
    lg.roll()
    lg.append_marker_as_leader(1, 0, False, 0, 0)  # 2, in the second segment
    lg.roll()
    lg.append_as_leader(txn_batch(2, 0), 0)       # 3-4
    lg.append_marker_as_leader(2, 0, False, 0, 0)  # 5
    got = lg.collect_aborted_transactions(0, 6)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in got] == [(1, 0, 2), (2, 3, 5)]
    assert [t.producer_id for t in lg.collect_aborted_transactions(0, 2)] == [1]


def test_follower_builds_the_same_index_and_truncation_cuts_it(open_log):
    leader, follower = open_log("t-0"), open_log("f/t-0")
    leader.append_as_leader(txn_batch(1, 0), 0)
    leader.append_as_leader(txn_batch(2, 0), 0)
    leader.append_marker_as_leader(1, 0, False, 0, 0)
    leader.append_marker_as_leader(2, 0, False, 0, 0)
    follower.append_as_follower(leader.read(0, 1 << 20).data)
    assert follower.active_segment.txn_index.entries == leader.active_segment.txn_index.entries
    assert len(follower.active_segment.txn_index) == 2
    follower.truncate_to(5)
    assert [t.producer_id for t in follower.active_segment.txn_index.entries] == [1]
    assert follower.last_stable_offset(5) == 2  # producer 2's transaction is open again


def test_restart_keeps_and_recovery_rebuilds_the_index(tmp_path):
    cfg = LogConfig(file_delete_delay_ms=0)
    d = str(tmp_path / "t-0")
    lg = Log(d, cfg)
    lg.append_as_leader(txn_batch(1, 0), 0)
    lg.roll()
    lg.append_as_leader(txn_batch(2, 0), 0)
    lg.append_marker_as_leader(1, 0, False, 0, 0)
    entries = lg.active_segment.txn_index.entries
    lg.close()
    lg = Log(d, cfg, clean_shutdown=True)
    assert lg.active_segment.txn_index.entries == entries
    assert lg.last_stable_offset(100) == 2  # producer 2 still open, from the snapshot
    lg.close()
    os.unlink(lg.active_segment.txn_index.path)  # lost in a crash
    lg = Log(d, cfg, recovery_point=0)
    assert lg.active_segment.txn_index.entries == entries
    assert lg.last_stable_offset(100) == 2
    lg.close()


def test_verification_token_is_cancelled_by_a_marker(open_log):
    lg = open_log()
    token = lg.begin_verification(4, 0)
    assert token is not None
    with pytest.raises(InvalidTxnStateError):
        lg.append_as_leader(txn_batch(4, 0), 0, verified={})
    lg.append_marker_as_leader(4, 0, False, 0, 0)  # e.g. the coordinator aborted meanwhile
    with pytest.raises(InvalidTxnStateError):
        lg.append_as_leader(txn_batch(4, 0), 0, verified={4: token})
    token = lg.begin_verification(4, 0)
    lg.append_as_leader(txn_batch(4, 0), 0, verified={4: token})
    assert lg.begin_verification(4, 0) is None  # open now: no verification needed


def test_followers_forget_closed_transactions_once_replicated(open_log):
    lg = open_log()
    lg.append_as_leader(txn_batch(1, 0), 0)
    lg.append_marker_as_leader(1, 0, True, 0, 0)  # marker at 2
    table = lg._producer_table()
    assert len(table.unreplicated) == 1
    lg.on_high_watermark(2)
    assert len(table.unreplicated) == 1  # the marker itself is not below 2
    lg.on_high_watermark(3)
    assert table.unreplicated == []


def test_lso_is_never_below_the_log_start(open_log):
    lg = open_log()
    lg.append_as_leader(txn_batch(1, 0), 0)  # 0-1, open
    lg.append_as_leader(plain_batch(), 0)    # 2
    assert lg.last_stable_offset(3) == 0
    lg.increment_log_start_offset(1)  # DeleteRecords
    assert lg.last_stable_offset(3) == 1
