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
    with pytest.raises(LogStorageError):
        m.get_or_create(tp("many", 5))  # retried; an I/O error there takes the dir offline (as Kafka)
    assert m.offline_log_dirs() == [m.log_dirs[1]]
    m.get_or_create(tp("many", 9))
    assert m.log_dir_of(tp("many", 9)) == m.log_dirs[0]
    m.shutdown()


# ---------------------------------------------------------------- several dirs, failed dirs
def test_new_logs_go_to_the_live_dir_with_fewest_logs_first_listed_on_a_tie():
    from praha.log.manager import least_loaded_dir

    assert least_loaded_dir(["a", "b", "c"], {"a": 2, "b": 1, "c": 1}) == "b"
    assert least_loaded_dir(["a", "b"], {}) == "a"


def test_an_io_error_takes_only_its_dir_offline(dirs):
    m = LogManager(dirs, LogConfig(file_delete_delay_ms=0))
    reported = []
    m.failure_channel.add_listener(lambda d, why: reported.append(d))
    m.startup()
    logs = {i: m.get_or_create(tp("t", i)) for i in range(4)}
    for lg in logs.values():
        lg.append_as_leader(make_batch(1), 0)
    failing = [i for i in logs if m.log_dir_of(tp("t", i)) == os.path.abspath(dirs[0])]
    os.rename(dirs[0], dirs[0] + "-gone")  # the disk vanishes under the broker
    with pytest.raises(LogStorageError):
        logs[failing[0]].roll()  # a new segment file cannot be created: ENOENT
    assert reported == [os.path.abspath(dirs[0])]
    assert m.live_log_dirs == [os.path.abspath(dirs[1])]
    assert sorted(m.handle_dir_failure(os.path.abspath(dirs[0]))) == sorted(tp("t", i) for i in failing)
    assert all(logs[i].closed for i in failing)
    assert len(m) == 4 - len(failing)
    # a second error in the same dir is not news
    assert not m.failure_channel.report(os.path.abspath(dirs[0]), "again")
    # new partitions only go to the live dir; its checkpoints and marker are still written
    assert m.log_dir_of(m.get_or_create(tp("u")).topic_partition) == os.path.abspath(dirs[1])
    m.shutdown()
    assert os.path.exists(os.path.join(dirs[1], ".kafka_cleanshutdown"))
    assert not os.path.exists(dirs[0])


def test_a_dir_unusable_at_start_up_is_offline_and_all_unusable_fails(dirs, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    m = LogManager([str(blocker), dirs[0]], LogConfig(file_delete_delay_ms=0))
    m.startup()
    assert m.offline_log_dirs() == [str(blocker)]
    assert m.live_log_dirs == [os.path.abspath(dirs[0])]
    assert m.log_dir_of(m.get_or_create(tp("t")).topic_partition) == os.path.abspath(dirs[0])
    m.shutdown()
    with pytest.raises(LogStorageError, match="every log directory failed"):
        LogManager([str(blocker)], LogConfig()).startup()
