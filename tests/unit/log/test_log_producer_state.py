"""Idempotent producers in the log: a retried batch is answered with the first write's
offsets and not appended again; sequence gaps and fenced epochs are refused; the state
survives a reload (rebuilt from the active segment) and is kept by follower appends."""
from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from log_helpers import decode

from praha.errors import ErrorCode
from praha.log.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from praha.log.producer_state import (
    MAX_SEQUENCE,
    ProducerStateTable,
    SequenceVerdict,
    last_sequence,
)


def idem_batch(pid: int, seq: int, count: int = 2, epoch: int = 0, tag: bytes = b"v") -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=pid,
                                  producer_epoch=epoch, base_sequence=seq, batch_size=1 << 20)
    for i in range(count):
        b.append(i, timestamp=1000 + i, key=None, value=b"%s-%d-%d" % (tag, seq, i), headers=[])
    return bytes(b.build())


# ------------------------------------------------------------------------------ pure table
def test_sequence_rules():
    t = ProducerStateTable()
    assert t.check(7, 0, 0, 1).verdict is SequenceVerdict.ACCEPT  # unknown producer
    t.record(7, 0, 0, 1, first_offset=100)  # seqs 0-1 at offsets 100-101
    assert t.check(7, 0, 2, 0).verdict is SequenceVerdict.ACCEPT
    dup = t.check(7, 0, 0, 1)
    assert dup.verdict is SequenceVerdict.DUPLICATE
    assert (dup.duplicate_of.first_offset, dup.duplicate_of.last_offset) == (100, 101)
    gap = t.check(7, 0, 5, 0)
    assert gap.verdict is SequenceVerdict.OUT_OF_ORDER
    assert gap.expected == 2
    t.record(7, 3, 0, 0, first_offset=110)  # a new epoch starts over
    assert t.check(7, 2, 1, 0).verdict is SequenceVerdict.FENCED_EPOCH
    assert t.check(7, 3, 1, 0).verdict is SequenceVerdict.ACCEPT
    t.record(7, 2, 9, 0, first_offset=120)  # a fenced producer's batch changes nothing
    assert t.producers[7].epoch == 3
    assert t.producers[7].last_sequence == 0


def test_only_the_last_five_batches_are_remembered_and_sequences_wrap():
    t = ProducerStateTable()
    for i in range(7):
        t.record(1, 0, i, 0, first_offset=i)
    assert t.check(1, 0, 1, 0).verdict is SequenceVerdict.OUT_OF_ORDER  # too old to be known
    assert t.check(1, 0, 2, 0).verdict is SequenceVerdict.DUPLICATE
    assert last_sequence(MAX_SEQUENCE - 1, 3) == 1
    t.record(2, 0, MAX_SEQUENCE - 1, 1, first_offset=0)  # ends at MAX_SEQUENCE
    assert t.check(2, 0, 0, 4).verdict is SequenceVerdict.ACCEPT


# ------------------------------------------------------------------------------ in the log
def test_retried_batch_is_not_appended_twice(open_log):
    lg = open_log()
    first = lg.append_as_leader(idem_batch(5, 0), 1)
    lg.append_as_leader(idem_batch(5, 2), 1)
    again = lg.append_as_leader(idem_batch(5, 0), 1)  # the response to the first was lost
    assert again.duplicate
    assert again.record_count == 0
    assert (again.first_offset, again.last_offset) == (first.first_offset, first.last_offset)
    assert lg.log_end_offset == 4
    assert [v for _, _, v in decode(lg.read(0, 1 << 20).data)] == [b"v-0-0", b"v-0-1", b"v-2-0", b"v-2-1"]


def test_gaps_and_fenced_epochs_are_refused_and_change_nothing(open_log):
    lg = open_log()
    lg.append_as_leader(idem_batch(5, 0, epoch=1), 1)
    with pytest.raises(OutOfOrderSequenceError) as e:
        lg.append_as_leader(idem_batch(5, 4, epoch=1), 1)
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(InvalidProducerEpochError) as e:
        lg.append_as_leader(idem_batch(5, 2, epoch=0), 1)
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert lg.log_end_offset == 2
    plain = lg.append_as_leader(idem_batch(-1, -1), 1)  # non-idempotent data is never checked
    assert plain.record_count == 2


def test_state_is_rebuilt_after_reload_and_truncation(open_log):
    lg = open_log("p-0")
    lg.append_as_leader(idem_batch(9, 0), 1)
    lg.append_as_leader(idem_batch(9, 2), 1)
    lg.close()
    lg = open_log("p-0")
    assert lg.append_as_leader(idem_batch(9, 2), 1).duplicate
    assert lg.append_as_leader(idem_batch(9, 4), 1).record_count == 2
    lg.truncate_to(4)  # the batch of seqs 4-5 is gone: its retry must be appended
    retry = lg.append_as_leader(idem_batch(9, 4), 1)
    assert not retry.duplicate
    assert retry.first_offset == 4


def test_followers_keep_the_state_a_new_leader_needs(open_log):
    leader, follower = open_log("a-0"), open_log("b-0")
    leader.append_as_leader(idem_batch(3, 0), 1)
    follower.append_as_follower(leader.read(0, 1 << 20).data)
    follower.append_as_leader(idem_batch(3, 2), 2)  # the follower became leader
    assert follower.append_as_leader(idem_batch(3, 0), 2).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        follower.append_as_leader(idem_batch(3, 9), 2)


def test_batches_of_one_append_continue_each_other(open_log):
    """Two batches of the same producer in one produce request: the second continues the
    first (it is not checked against the log alone)."""
    lg = open_log()
    lg.append_as_leader(idem_batch(8, 0), 1)
    info = lg.append_as_leader(idem_batch(8, 2) + idem_batch(8, 4), 1)
    assert info.record_count == 4
    assert lg.log_end_offset == 6
    with pytest.raises(OutOfOrderSequenceError):
        lg.append_as_leader(idem_batch(8, 6) + idem_batch(8, 9), 1)
    assert lg.log_end_offset == 6
    assert lg.append_as_leader(idem_batch(8, 4), 1).duplicate


# ------------------------------------------------------------------------------ snapshots
def test_snapshot_file_round_trip_and_corruption(tmp_path):
    from praha.log import producer_snapshot as ps
    from praha.log.errors import CorruptCheckpointError
    t = ProducerStateTable()
    t.record(5, 2, MAX_SEQUENCE - 1, 3, first_offset=40)  # a batch wrapping past 2^31 - 1
    t.record(6, 0, 10, 0, first_offset=44)
    ps.write(str(tmp_path), 45, t.snapshot())
    assert ps.list_snapshots(str(tmp_path)) == [45]
    back = ProducerStateTable.from_snapshot(ps.read(str(tmp_path), 45))
    assert back.check(5, 2, MAX_SEQUENCE - 1, 3).verdict is SequenceVerdict.DUPLICATE
    assert back.check(5, 2, 2, 0).verdict is SequenceVerdict.ACCEPT  # after sequences MAX-1, MAX, 0, 1
    assert back.check(6, 0, 11, 0).verdict is SequenceVerdict.ACCEPT
    data = bytearray(ps.encode(t.snapshot()))
    data[-1] ^= 1
    with pytest.raises(CorruptCheckpointError, match="CRC"):
        ps.decode(bytes(data))


def test_state_older_than_the_active_segment_survives_a_restart(open_log, monkeypatch):
    """Before snapshots, a producer whose last write lay before the active segment (or more
    than 64 MiB back in it) was unknown after a restart: its retry was appended twice and a
    zombie's older epoch accepted. Now the snapshot written at each roll keeps it."""
    from praha.log import LogConfig
    from praha.log import producer_snapshot as ps
    monkeypatch.setattr("praha.log.producer_state_manager.PRODUCER_SCAN_BYTES", 1 << 10)
    config = LogConfig(segment_bytes=1024, file_delete_delay_ms=0)
    lg = open_log("s-0", config=config)
    lg.append_as_leader(idem_batch(9, 0, epoch=1), 1)
    first = lg.append_as_leader(idem_batch(9, 2, epoch=1), 1)
    for i in range(20):  # other producers' data: several segments roll
        lg.append_as_leader(idem_batch(100 + i, 0, count=5, tag=b"x" * 40), 1)
    assert len(lg.segments) > 3
    assert ps.list_snapshots(lg.dir)
    lg.close()
    lg = open_log("s-0", config=config)
    retry = lg.append_as_leader(idem_batch(9, 2, epoch=1), 1)
    assert retry.duplicate
    assert retry.first_offset == first.first_offset
    with pytest.raises(InvalidProducerEpochError):
        lg.append_as_leader(idem_batch(9, 4, epoch=0), 1)  # the zombie of epoch 0
    assert lg.append_as_leader(idem_batch(9, 4, epoch=1), 1).record_count == 2


def test_snapshots_follow_truncation_and_a_crash(open_log):
    from praha.log import Log, LogConfig
    from praha.log import producer_snapshot as ps
    config = LogConfig(segment_bytes=2048, file_delete_delay_ms=0)
    lg = open_log("t-0", config=config)
    for seq in range(0, 60, 2):
        lg.append_as_leader(idem_batch(3, seq, tag=b"y" * 60), 1)
    snaps = ps.list_snapshots(lg.dir)
    assert len(snaps) >= 3
    lg.truncate_to(snaps[1])
    assert ps.list_snapshots(lg.dir) == [o for o in snaps if o <= snaps[1]]
    retry_from = lg.log_end_offset  # batches from here on are gone: their retry is appended
    assert not lg.append_as_leader(idem_batch(3, retry_from, tag=b"y" * 60), 1).duplicate
    directory = lg.dir
    # a crash: the log is never closed; the next open recovers from the snapshots on disk
    crashed = Log(directory, config, clean_shutdown=False)
    try:
        assert crashed.append_as_leader(idem_batch(3, retry_from, tag=b"y" * 60), 1).duplicate
    finally:
        crashed.close()


def test_after_an_io_error_the_next_batch_is_a_storage_error_not_out_of_order_seed_210(open_log, monkeypatch):
    """Seed 210: a full disk failed a producer's batch; its next pipelined batch reached the
    same log before the broker's loop took the dir offline and was judged against a state
    lacking the failed one: OUT_OF_ORDER_SEQUENCE_NUMBER, on which librdkafka bumps its epoch
    and re-sends every unacknowledged record (some already appended elsewhere) under new
    sequence numbers. Kafka refuses every operation of a failed dir's log before any
    producer check: KAFKA_STORAGE_ERROR, which librdkafka retries with the same sequences."""
    import errno

    from praha.log import LogStorageError
    from praha.log.segment import LogSegment

    told: list[OSError] = []
    lg = open_log("full-0", on_io_error=told.append)
    assert lg.append_as_leader(idem_batch(4, 0), 1).record_count == 2  # sequences 0-1
    real_append = LogSegment.append

    def disk_full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(LogSegment, "append", disk_full)
    with pytest.raises(LogStorageError) as first:
        lg.append_as_leader(idem_batch(4, 2), 1)  # sequences 2-3: the write fails
    assert first.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert len(told) == 1
    monkeypatch.setattr(LogSegment, "append", real_append)  # even if the disk had room again
    with pytest.raises(LogStorageError) as second:
        lg.append_as_leader(idem_batch(4, 4), 1)  # the next pipelined batch, sequences 4-5
    assert second.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    with pytest.raises(LogStorageError):
        lg.read_slice(0, 1 << 20)  # reads too, as for a log of an offline dir
    assert lg.log_end_offset == 2
