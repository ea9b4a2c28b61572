"""LeaderEpochCache: Kafka's leader-epoch-checkpoint format and OffsetsForLeaderEpoch semantics."""
from __future__ import annotations

import pytest

from praha.log.leader_epoch import EpochEntry, LeaderEpochCache


@pytest.fixture
def cache(tmp_path):
    c = LeaderEpochCache(str(tmp_path / "leader-epoch-checkpoint"))
    assert c.needs_rebuild  # no file yet
    return c


def entries(c):
    return [(e.epoch, e.start_offset) for e in c.entries]


def test_assign_and_file_format(cache):
    assert cache.assign(0, 0)
    assert cache.assign(2, 150)
    assert not cache.assign(1, 200)  # lower epoch: ignored
    assert not cache.assign(2, 160)  # same epoch, later start: ignored
    assert cache.latest_epoch == 2
    with open(cache.path) as f:
        assert f.read() == "0\n2\n0 0\n2 150\n"
    again = LeaderEpochCache(cache.path)
    assert not again.needs_rebuild
    assert entries(again) == [(0, 0), (2, 150)]


def test_same_epoch_earlier_start_moves_start(cache):
    cache.assign(3, 100)
    cache.assign(3, 90)
    assert entries(cache) == [(3, 90)]


def test_new_epoch_drops_entries_at_or_after_its_start(cache):
    cache.assign(1, 0)
    cache.assign(2, 50)
    cache.assign(4, 40)
    assert entries(cache) == [(1, 0), (4, 40)]


def test_negative_epoch_ignored(cache):
    assert not cache.assign(-1, 0)
    assert cache.latest_epoch == -1


def test_end_offset_for_semantics(cache):
    assert cache.end_offset_for(0, 10) == (-1, -1)  # empty
    cache.assign(1, 0)
    cache.assign(3, 100)
    cache.assign(6, 250)
    leo = 300
    assert cache.end_offset_for(-1, leo) == (-1, -1)  # undefined
    assert cache.end_offset_for(6, leo) == (6, leo)  # latest → log end
    assert cache.end_offset_for(3, leo) == (3, 250)
    assert cache.end_offset_for(4, leo) == (3, 250)  # largest ≤ 4 is 3, ends where 6 starts
    assert cache.end_offset_for(5, leo) == (3, 250)
    assert cache.end_offset_for(1, leo) == (1, 100)
    assert cache.end_offset_for(2, leo) == (1, 100)
    assert cache.end_offset_for(0, leo) == (0, 0)  # below the earliest: its start
    assert cache.end_offset_for(7, leo) == (-1, -1)  # above the latest


def test_truncate_from_end(cache):
    for e, o in [(1, 0), (2, 10), (3, 20)]:
        cache.assign(e, o)
    cache.truncate_from_end(25)
    assert entries(cache) == [(1, 0), (2, 10), (3, 20)]
    cache.truncate_from_end(20)
    assert entries(cache) == [(1, 0), (2, 10)]
    cache.truncate_from_end(5)
    assert entries(cache) == [(1, 0)]
    assert entries(LeaderEpochCache(cache.path)) == [(1, 0)]


def test_truncate_from_start(cache):
    for e, o in [(1, 0), (2, 10), (3, 20)]:
        cache.assign(e, o)
    cache.truncate_from_start(5)
    assert entries(cache) == [(1, 5), (2, 10), (3, 20)]
    cache.truncate_from_start(15)
    assert entries(cache) == [(2, 15), (3, 20)]
    cache.truncate_from_start(20)
    assert entries(cache) == [(3, 20)]
    cache.truncate_from_start(100)
    assert entries(cache) == [(3, 100)]
    assert entries(LeaderEpochCache(cache.path)) == [(3, 100)]


def test_epoch_for_offset(cache):
    cache.assign(1, 10)
    cache.assign(4, 30)
    assert cache.epoch_for_offset(5) == -1
    assert cache.epoch_for_offset(10) == 1
    assert cache.epoch_for_offset(29) == 1
    assert cache.epoch_for_offset(31) == 4


@pytest.mark.parametrize("content", [b"garbage", b"0\n3\n1 0\n", b"1\n1\n0 0\n", b"0\n1\nx y\n", b"0\n2\n5 10\n3 20\n",
                                     b"\xff\xfe"])
def test_corrupt_file_needs_rebuild(tmp_path, content):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(content)
    c = LeaderEpochCache(str(path))
    assert c.needs_rebuild
    assert c.entries == []
    c.rebuild([(0, 0), (0, 5), (2, 9)])
    assert c.entries == [EpochEntry(0, 0), EpochEntry(2, 9)]
    assert not LeaderEpochCache(str(path)).needs_rebuild


def test_a_new_leader_epoch_is_written_when_the_log_syncs_and_recovered_after_a_crash(tmp_path):
    """Becoming leader notes the epoch without file I/O; flush/close write it durably, and a
    crash before that loses nothing: recovery reads the epoch from the batches."""
    from log_helpers import make_batch

    from praha.log import Log, LogConfig

    path = tmp_path / "t-0"
    lg = Log(str(path), LogConfig(file_delete_delay_ms=0))
    lg.epoch_cache.assign(3, 0, durable=False)  # as Partition.make_leader does
    assert LeaderEpochCache(str(path / "leader-epoch-checkpoint")).entries == []  # not written yet
    lg.append_as_leader(make_batch(2), 3)
    # crash: nothing flushed; an unclean start recovers the epoch from the batch headers
    again = Log(str(path), LogConfig(file_delete_delay_ms=0), recovery_point=0, clean_shutdown=False)
    assert again.epoch_cache.entries == [EpochEntry(3, 0)]
    lg.epoch_cache.assign(4, 2, durable=False)
    lg.flush()  # the recovery point moves past the epoch's start: the file must have it first
    assert LeaderEpochCache(str(path / "leader-epoch-checkpoint")).entries == [EpochEntry(3, 0), EpochEntry(4, 2)]
    lg.close()
    again.close()
