"""Opening a log after crashes: torn tails, corrupt batches, lost or garbage indexes and checkpoints."""
from __future__ import annotations

import logging
import os
import random

import pytest
from log_helpers import batch_meta, decode, make_batch

from praha.log import Log, LogConfig, OffsetOutOfRangeError
from praha.log.batch import iter_batches

CFG = LogConfig(file_delete_delay_ms=0, index_interval_bytes=200)
BATCH = make_batch(3, value_size=60)


def build(path, batches=12, per_segment=4, epochs=(0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 3)) -> Log:
    """12 batches of 3 records, 4 per segment: segments at 0, 12, 24; epoch changes at 9, 21, 30."""
    cfg = LogConfig(segment_bytes=per_segment * len(BATCH), file_delete_delay_ms=0, index_interval_bytes=200)
    lg = Log(str(path), cfg)
    for i in range(batches):
        lg.append_as_leader(make_batch(3, value_size=60, ts=10_000 + 10 * i), epochs[i])
    return lg


def all_data(lg):
    out, pos = [], lg.log_start_offset
    while pos < lg.log_end_offset:
        r = lg.read(pos, 1 << 20)
        out += decode(r.data)
        pos = r.next_offset
    return out


def seg_path(lg_dir, base, suffix=".log"):
    return os.path.join(lg_dir, f"{base:020d}{suffix}")


def epochs(lg):
    return [(e.epoch, e.start_offset) for e in lg.epoch_cache.entries]


@pytest.fixture
def closed_log(tmp_path):
    lg = build(tmp_path / "t-0")
    expected = all_data(lg)
    lg.close()
    return str(tmp_path / "t-0"), expected


@pytest.mark.parametrize("cut", [1, 20, 60, len(BATCH) - 1])
def test_torn_tail_is_truncated(closed_log, cut, caplog):
    d, expected = closed_log
    p = seg_path(d, 24)
    size = os.path.getsize(p)
    os.truncate(p, size - cut)
    with caplog.at_level(logging.WARNING, logger="praha.log"):
        lg = Log(d, CFG)
    assert lg.log_end_offset == 33
    assert lg.last_recovery.truncated_bytes == len(BATCH) - cut
    assert "truncated" in lg.last_recovery.reason
    assert len([r for r in caplog.records if "Recovered log" in r.message]) == 1
    assert all_data(lg) == expected[:33]
    assert epochs(lg) == [(0, 0), (1, 9), (2, 21), (3, 30)]
    info = lg.append_as_leader(make_batch(2), 4)
    assert info.first_offset == 33
    assert [o for o, _, _ in all_data(lg)] == list(range(35))
    lg.close()


def test_torn_tail_in_header_only(closed_log):
    d, expected = closed_log
    with open(seg_path(d, 24), "ab") as f:
        f.write(b"\x00" * 7)  # a partial next header
    lg = Log(d, CFG)
    assert lg.log_end_offset == 36
    assert lg.last_recovery.truncated_bytes == 7
    assert all_data(lg) == expected
    lg.close()


def test_flipped_byte_in_middle_batch_drops_everything_after(closed_log):
    d, expected = closed_log
    p = seg_path(d, 12)  # batches at offsets 12, 15, 18, 21
    with open(p, "r+b") as f:
        data = bytearray(f.read())
        third = list(iter_batches(data))[2]
        data[third.position + 70] ^= 0x01
        f.seek(0)
        f.write(data)
    lg = Log(d, CFG)
    assert lg.log_end_offset == 18
    assert [s.base_offset for s in lg.segments] == [0, 12]
    assert not os.path.exists(seg_path(d, 24))
    assert lg.last_recovery.deleted_segments == 1
    assert "CRC" in lg.last_recovery.reason
    assert all_data(lg) == expected[:18]
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(19, 100)
    assert epochs(lg) == [(0, 0), (1, 9)]
    assert lg.end_offset_for_epoch(1) == (1, 18)
    lg.close()


def test_recovery_point_limits_checking(closed_log):
    d, expected = closed_log
    lg = Log(d, CFG, recovery_point=30)
    assert lg.last_recovery.checked_segments == 1
    assert lg.log_end_offset == 36
    lg.close()
    lg = Log(d, CFG, recovery_point=5)
    assert lg.last_recovery.checked_segments == 3
    assert all_data(lg) == expected
    lg.close()


def test_clean_shutdown_skips_checks_but_knows_its_end(closed_log):
    d, expected = closed_log
    lg = Log(d, CFG, clean_shutdown=True)
    assert lg.last_recovery.checked_segments == 0
    assert lg.log_end_offset == 36
    assert lg.recovery_point == 36
    assert lg.active_segment.max_timestamp == 10_000 + 110 + 2
    assert all_data(lg) == expected
    lg.append_as_leader(make_batch(3, value_size=60, ts=20_000), 3)
    assert lg.offset_for_timestamp(20_001) == (37, 20_001)
    lg.close()
    lg = Log(d, CFG)  # full check agrees with what the fast path wrote
    assert lg.log_end_offset == 39
    assert not lg.last_recovery.eventful
    lg.close()


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_deleted_index_is_rebuilt(closed_log, suffix):
    d, expected = closed_log
    original = open(seg_path(d, 0, suffix), "rb").read()
    assert original  # interval 200 bytes: several entries
    os.unlink(seg_path(d, 0, suffix))
    lg = Log(d, CFG, recovery_point=36)
    assert lg.last_recovery.index_rebuilds == 1
    assert open(seg_path(d, 0, suffix), "rb").read() == original
    assert all_data(lg) == expected
    lg.close()


@pytest.mark.parametrize("seed", range(5))
def test_garbage_index_is_rebuilt(closed_log, seed):
    d, expected = closed_log
    rnd = random.Random(seed)
    original = open(seg_path(d, 12), "rb").read()
    size = len(original) + rnd.choice([0, 3, 8, 16])
    with open(seg_path(d, 12, ".index"), "wb") as f:
        f.write(bytes(rnd.getrandbits(8) for _ in range(size)))
    with open(seg_path(d, 12, ".timeindex"), "wb") as f:
        f.write(bytes(rnd.getrandbits(8) for _ in range(24)))
    lg = Log(d, CFG, clean_shutdown=True)
    assert all_data(lg) == expected
    for start in range(12, 24):
        assert lg.read(start, 1).first_offset == start - start % 3
    assert lg.offset_for_timestamp(10_041) == (13, 10_041)
    lg.close()


def test_plausible_but_wrong_index_is_caught_on_load(closed_log):
    """An index that passes the cheap open-time checks but is not increasing."""
    import struct
    d, expected = closed_log
    with open(seg_path(d, 0, ".index"), "wb") as f:
        f.write(struct.pack(">II", 5, 300) + struct.pack(">II", 2, 100))
    lg = Log(d, CFG, clean_shutdown=True)
    assert all_data(lg) == expected
    assert lg.read(4, 1).first_offset == 3
    lg.close()


@pytest.mark.parametrize("damage", ["missing", "garbage", "truncated"])
def test_epoch_checkpoint_rebuilt(closed_log, damage, caplog):
    d, _ = closed_log
    p = os.path.join(d, "leader-epoch-checkpoint")
    assert open(p).read() == "0\n4\n0 0\n1 9\n2 21\n3 30\n"
    if damage == "missing":
        os.unlink(p)
    elif damage == "garbage":
        open(p, "wb").write(b"\x00\x01garbage")
    else:
        open(p, "w").write("0\n4\n0 0\n1 9\n")
    with caplog.at_level(logging.WARNING, logger="praha.log"):
        lg = Log(d, CFG, clean_shutdown=True)
    assert lg.last_recovery.epoch_cache_rebuilt
    assert epochs(lg) == [(0, 0), (1, 9), (2, 21), (3, 30)]
    assert open(p).read() == "0\n4\n0 0\n1 9\n2 21\n3 30\n"
    assert any("epoch cache rebuilt" in r.message for r in caplog.records)
    lg.close()


def test_stale_epoch_checkpoint_completed_from_recovered_batches(tmp_path):
    lg = build(tmp_path / "t-0")
    lg.close()
    p = os.path.join(lg.dir, "leader-epoch-checkpoint")
    open(p, "w").write("0\n2\n0 0\n1 9\n")  # crash before the checkpoint caught up
    lg = Log(lg.dir, CFG)  # full check sees epochs 2 and 3 in the batches
    assert epochs(lg) == [(0, 0), (1, 9), (2, 21), (3, 30)]
    lg.close()


def test_leftovers_removed(closed_log):
    d, expected = closed_log
    for name in ["00000000000000000099.log.deleted", "leader-epoch-checkpoint.tmp",
                 "00000000000000000077.index", "00000000000000000077.timeindex"]:
        open(os.path.join(d, name), "wb").write(b"junk")
    lg = Log(d, CFG)
    assert lg.last_recovery.leftovers_removed == 4
    assert sorted(os.listdir(d)) == sorted(
        [f"{b:020d}{s}" for b in (0, 12, 24) for s in (".log", ".index", ".timeindex")] + ["leader-epoch-checkpoint"])
    assert all_data(lg) == expected
    lg.close()


def test_empty_active_segment_after_roll(tmp_path):
    lg = build(tmp_path / "t-0")
    lg.roll()
    lg.close()
    for kwargs in ({}, {"clean_shutdown": True}):
        again = Log(lg.dir, CFG, **kwargs)
        assert again.log_end_offset == 36
        assert [s.base_offset for s in again.segments] == [0, 12, 24, 36]
        again.append_as_leader(make_batch(1), 4)
        assert batch_meta(again.read(36, 100).data) == [(36, 36, 4)]
        again.truncate_to(36)
        again.close()


def test_garbage_whole_segment(closed_log):
    d, expected = closed_log
    with open(seg_path(d, 24), "r+b") as f:
        f.write(os.urandom(100))
    lg = Log(d, CFG)
    assert lg.log_end_offset == 24
    assert [s.base_offset for s in lg.segments] == [0, 12, 24]
    assert lg.active_segment.size == 0
    assert all_data(lg) == expected[:24]
    lg.append_as_leader(make_batch(1), 4)
    lg.close()


def test_unclean_stop_recovers_from_recovery_point(tmp_path):
    """Simulate a crash: no close(), files as the page cache left them."""
    lg = build(tmp_path / "t-0")
    lg.flush()
    rp = lg.recovery_point
    lg.append_as_leader(make_batch(3, value_size=60), 3)
    expected = all_data(lg)
    # abandon without close; reopen from the checkpointed recovery point
    again = Log(lg.dir, CFG, recovery_point=rp)
    assert all_data(again) == expected
    assert again.log_end_offset == 39
    again.close()
    lg.close()
