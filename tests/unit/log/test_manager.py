"""LogManager: start-up over several dirs, checkpoints, clean shutdown marker, locking, deletion."""
from __future__ import annotations

import os

import pytest
from log_helpers import make_batch

from praha.common import TopicPartition
from praha.log import LogConfig, LogManager, LogStorageError
from praha.log.checkpoints import OffsetCheckpointFile
from praha.log.config import DAY_MS


def tp(t, p=0):
    return TopicPartition(t, p)


@pytest.fixture
def dirs(tmp_path):
    return [str(tmp_path / "d1"), str(tmp_path / "d2")]


def test_create_spread_and_reload(dirs):
    m = LogManager(dirs, LogConfig(file_delete_delay_ms=0))
    m.startup()
    for i in range(4):
        m.get_or_create(tp("orders", i)).append_as_leader(make_batch(i + 1), 0)
    assert sorted(m.log_dir_of(tp("orders", i)) for i in range(4)) == sorted(dirs * 2)
    assert m.get_or_create(tp("orders", 0)) is m.get(tp("orders", 0))
    m.shutdown()
    for d in dirs:
        assert os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))
        rp = OffsetCheckpointFile(os.path.join(d, "recovery-point-offset-checkpoint")).read()
        assert all(rp[t] == t.partition + 1 for t in rp)

    m2 = LogManager(dirs, LogConfig(file_delete_delay_ms=0))
    m2.startup()
    assert len(m2) == 4
    for i in range(4):
        lg = m2.get(tp("orders", i))
        assert lg.log_end_offset == i + 1
        assert lg.last_recovery.checked_segments == 0  # clean shutdown: nothing re-read
    assert not any(os.path.exists(os.path.join(d, ".kafka_cleanshutdown")) for d in dirs)
    m2.shutdown()


def test_unclean_start_uses_recovery_points(dirs):
    m = LogManager(dirs[:1], LogConfig(file_delete_delay_ms=0))
    m.startup()
    lg = m.get_or_create(tp("t"))
    lg.append_as_leader(make_batch(2), 0)
    lg.roll()
    lg.append_as_leader(make_batch(2), 0)
    lg.flush()
    m.checkpoint()
    lg.append_as_leader(make_batch(2), 0)
    for _, x in m:  # "crash": release files without the clean-shutdown marker
        x.close()
    m._unlock_dirs()
    m2 = LogManager(dirs[:1])
    m2.startup()
    lg2 = m2.get(tp("t"))
    assert lg2.log_end_offset == 6
    assert lg2.last_recovery.checked_segments == 1  # only the segment holding the recovery point
    m2.shutdown()


def test_dir_lock(dirs):
    m = LogManager(dirs)
    m.startup()
    with pytest.raises(LogStorageError, match="locked"):
        LogManager(dirs).startup()
    m.shutdown()
    again = LogManager(dirs)
    again.startup()  # free again
    again.shutdown()


def test_delete_and_leftover_delete_dirs(dirs):
    m = LogManager(dirs[:1])
    m.startup()
    lg = m.get_or_create(tp("gone", 3))
    lg.append_as_leader(make_batch(1), 0)
    path = lg.dir
    assert m.delete(tp("gone", 3))
    assert not os.path.exists(path)
    assert not m.delete(tp("gone", 3))
    os.makedirs(os.path.join(dirs[0], "old-0.abc123-delete"))
    os.makedirs(os.path.join(dirs[0], "not a partition"))
    m.shutdown()
    m2 = LogManager(dirs[:1])
    m2.startup()
    assert len(m2) == 0
    assert not os.path.exists(os.path.join(dirs[0], "old-0.abc123-delete"))
    m2.shutdown()


def test_retention_pass_and_topic_overrides(dirs):
    overrides = {"short": {"retention.ms": "1000"}}
    m = LogManager(dirs[:1], LogConfig(file_delete_delay_ms=0), topic_config=lambda t: overrides.get(t, {}))
    m.startup()
    now = 100 * DAY_MS
    for topic in ("short", "long"):
        lg = m.get_or_create(tp(topic))
        lg.append_as_leader(make_batch(2, ts=now - 10_000), 0)
        lg.roll()
        lg.append_as_leader(make_batch(2, ts=now), 0)
    assert m.get(tp("short")).config.retention_ms == 1000
    assert m.retention_pass(now) == 1
    assert m.get(tp("short")).log_start_offset == 2
    assert m.get(tp("long")).log_start_offset == 0
    assert m.retention_pass(now, high_watermarks={tp("short"): 2}) == 0
    m.shutdown()


def test_config_parsing():
    from praha.errors import ConfigError
    cfg = LogConfig.from_broker_config({"log.segment.bytes": "1024", "log.retention.hours": "2",
                                        "log.roll.hours": 1, "unrelated.key": "x"})
    assert (cfg.segment_bytes, cfg.retention_ms, cfg.segment_ms) == (1024, 2 * 3600 * 1000, 3600 * 1000)
    assert LogConfig.from_broker_config({"log.retention.ms": "5", "log.retention.hours": "2"}).retention_ms == 5
    assert cfg.with_overrides({"retention.bytes": "10"}).retention_bytes == 10
    with pytest.raises(ConfigError):
        LogConfig.from_broker_config({"log.segment.bytes": "lots"})
    with pytest.raises(ConfigError):
        LogConfig(segment_bytes=2**31)


def test_create_many_in_parallel_spreads_skips_existing_and_leaves_failures(dirs):
    m = LogManager(dirs, LogConfig(file_delete_delay_ms=0))
    m.startup()
    first = m.get_or_create(tp("many", 0))
    # a plain file where one partition's directory must go: that log cannot be created
    bad_dir = os.path.join(m.log_dirs[1], "many-5")
    open(bad_dir, "w").close()
    assert m.create_many([tp("many", i) for i in range(8)] + [tp("many", 1)], threads=4) == 6
    assert m.get(tp("many", 0)) is first  # existing logs are kept
    assert m.get(tp("many", 5)) is None
    made = [tp("many", i) for i in range(8) if i != 5]
    assert all(m.get(t).log_end_offset == 0 for t in made)
    per_dir = [sum(1 for t in made if m.log_dir_of(t) == d) for d in m.log_dirs]
    assert per_dir == [4, 3]  # spread as one at a time would have; the failed slot is given back
    with pytest.raises(FileExistsError):
        m.get_or_create(tp("many", 5))  # retried, and the failure reported
    m.get_or_create(tp("many", 9))
    assert m.log_dir_of(tp("many", 9)) == m.log_dirs[1]
    m.shutdown()
