"""The log cleaner on real logs in a tmp dir: what survives a pass, offsets and gaps,
tombstones and delete.retention.ms, the active segment, min.compaction.lag.ms, a small
dedupe map over several passes, idempotent producers' last batches, the checkpoint and
the cleaner threads; plus the pure decisions (choice, grouping, offsets) and the records
codec round trips."""
from __future__ import annotations

import os
import time

import pytest
from cleaner_helpers import fill, keyed, records_of

from praha.common import TopicPartition
from praha.encoding.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, codec_available, compress, decompress
from praha.errors import ErrorCode
from praha.log import Log, LogConfig, LogManager
from praha.log.batch import iter_batches
from praha.log.checkpoints import read_entries
from praha.log.cleaner import (
    CLEANER_OFFSET_CHECKPOINT,
    CleanerConfig,
    LogToClean,
    SegmentInfo,
    choose_log,
    clean_log,
    cleanable_offsets,
    group_segments_by_size,
    plan_for,
)
from praha.log.errors import InvalidRecordError
from praha.log.offset_map import OffsetMap
from praha.log.records import build_batch, decode_batch, encode_records

TP = TopicPartition("t", 0)
COMPACT = dict(cleanup_policy="compact", file_delete_delay_ms=0)


def clean_fully(lg: Log, map_bytes: int = 1 << 20, now_ms: int = 10_000, hw: int | None = None) -> int:
    """Clean passes until the checkpoint reaches the first uncleanable offset; returns passes."""
    checkpoint = None
    passes = 0
    while True:
        plan = plan_for(TP, lg, checkpoint, hw, now_ms)
        if plan.first_dirty_offset >= plan.first_uncleanable_offset:
            return passes
        end, _ = clean_log(lg, OffsetMap(map_bytes), plan.first_dirty_offset, plan.first_uncleanable_offset, now_ms)
        passes += 1
        checkpoint = end
        assert passes < 100


# -- pure decisions ---------------------------------------------------------------------
def test_offset_map_is_bounded_by_the_dedupe_buffer():
    m = OffsetMap(24 * 10, load_factor=1.0)
    assert m.slots == 10
    assert m.max_entries == 10
    for i in range(10):
        assert m.put(b"k%d" % i, i)
    assert m.full
    assert not m.put(b"new", 50)  # a new key does not fit
    assert m.put(b"k3", 60)  # an existing key is updated
    assert m.get(b"k3") == 60
    assert m.get(b"new") == -1
    assert m.latest_offset == 60
    assert OffsetMap(24 * 100).max_entries == 90  # Kafka's 0.9 load factor
    with pytest.raises(ValueError, match="cannot hold a single entry"):
        OffsetMap(10)


def test_choose_log_takes_the_filthiest_above_its_ratio():
    a = LogToClean(TopicPartition("a", 0), 0, 10, clean_bytes=90, cleanable_bytes=10)
    b = LogToClean(TopicPartition("b", 0), 0, 10, clean_bytes=40, cleanable_bytes=60)
    c = LogToClean(TopicPartition("c", 0), 0, 10, clean_bytes=20, cleanable_bytes=80)
    assert choose_log([a, b, c], lambda tp: 0.5) == c
    assert choose_log([a, b], lambda tp: 0.7) is None
    late = LogToClean(TopicPartition("d", 0), 0, 10, clean_bytes=99, cleanable_bytes=1, needs_compaction_now=True)
    assert choose_log([a, b, late], lambda tp: 0.5) == late  # max.compaction.lag.ms passed
    empty = LogToClean(TopicPartition("e", 0), 5, 5, 0, 0, needs_compaction_now=True)
    assert choose_log([empty], lambda tp: 0.0) is None


def test_cleanable_offsets_respect_active_segment_hw_and_lags():
    segs = [SegmentInfo(0, 100, 1_000, 900), SegmentInfo(10, 100, 2_000, 1_900),
            SegmentInfo(20, 100, 3_000, 2_900), SegmentInfo(30, 50, 4_000, 3_900)]
    assert cleanable_offsets(segs, None, 0, 35, None, 10_000, 0, 2**63 - 1) == (0, 30, False)
    assert cleanable_offsets(segs, 10, 0, 35, None, 10_000, 0, 2**63 - 1) == (10, 30, False)
    assert cleanable_offsets(segs, 99, 0, 35, None, 10_000, 0, 2**63 - 1)[0] == 0  # bad checkpoint: log start
    assert cleanable_offsets(segs, None, 0, 35, 15, 10_000, 0, 2**63 - 1)[1] == 15  # high watermark
    # min.compaction.lag.ms: segment 20 (largest ts 3000) is newer than now - lag
    assert cleanable_offsets(segs, None, 0, 35, None, 10_000, 7_500, 2**63 - 1)[1] == 20
    # max.compaction.lag.ms: first dirty batch at 1900 is older than now - lag
    assert cleanable_offsets(segs, 10, 0, 35, None, 10_000, 0, 5_000)[2] is True
    assert cleanable_offsets(segs, 10, 0, 35, None, 10_000, 0, 9_000)[2] is False
    # an empty active segment: the last non-empty one is not cleaned either
    with_empty = segs + [SegmentInfo(35, 0, -1, -1)]
    assert cleanable_offsets(with_empty, None, 0, 35, None, 10_000, 0, 2**63 - 1)[1] == 30


def test_group_segments_by_size():
    segs = [(0, 40, 8), (10, 30, 8), (20, 50, 8), (30, 10, 8), (40, 100, 8)]
    assert group_segments_by_size(segs, 100, 50) == [[0, 1], [2, 3], [4]]
    assert group_segments_by_size(segs, 1000, 50) == [[0, 1, 2, 3, 4]]
    # offsets of a group must fit 32-bit relative offsets
    far = [(0, 1, 8), (2**31, 1, 8)]
    assert group_segments_by_size(far, 1000, 2**31 + 5) == [[0], [1]]


# -- records -------------------------------------------------------------------------------
@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
def test_records_round_trip_every_codec(codec):
    if not codec_available(codec):
        pytest.skip("codec not available")
    recs = [(b"k%d" % i, None if i == 3 else b"value-%d" % i * 5, 1_000 + i) for i in range(8)]
    data = encode_records(100, recs, compression=codec, producer_id=7, producer_epoch=1, base_sequence=5)
    d = decode_batch(data)
    assert d.header.compression == codec
    assert d.header.record_count == 8
    assert [(r.offset, r.key, r.value_is_null, r.timestamp) for r in d.records] == [
        (100 + i, b"k%d" % i, i == 3, 1_000 + i) for i in range(8)]
    # a subset keeps base offset, last offset delta and producer fields; the CRC is right
    kept = [d.records[1], d.records[3], d.records[6]]
    sub = build_batch(d.header, kept, original_payload=memoryview(data)[61:])
    d2 = decode_batch(sub)
    h = d2.header
    assert (h.base_offset, h.last_offset, h.producer_id, h.base_sequence, h.record_count) == (100, 107, 7, 5, 3)
    assert [r.offset for r in d2.records] == [101, 103, 106]
    assert h.max_timestamp == 1_006
    list(iter_batches(sub))
    from praha.log.batch import validate

    validate(sub)  # CRC32C checked
    # with a delete horizon the base timestamp is the horizon and timestamps still decode
    hz = decode_batch(build_batch(d.header, kept, delete_horizon_ms=99_999, original_payload=memoryview(data)[61:]))
    assert hz.delete_horizon_ms == 99_999
    assert [r.timestamp for r in hz.records] == [1_001, 1_003, 1_006]


def test_snappy_xerial_framing_round_trip():
    if not codec_available(SNAPPY):
        pytest.skip("snappy not available")
    framed_like = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
    payload = b"abc" * 50_000
    framed = compress(SNAPPY, payload, like=framed_like)
    assert framed.startswith(b"\x82SNAPPY\x00")
    assert decompress(SNAPPY, framed) == payload
    assert decompress(SNAPPY, compress(SNAPPY, payload)) == payload


def test_kafka_python_batches_decode_including_gzip():
    for codec in (0, 1):
        data = keyed([(b"a", b"1"), (None, b"2"), (b"c", None)], compression=codec)
        d = decode_batch(data)
        assert [(r.key, r.value_is_null) for r in d.records] == [(b"a", False), (None, False), (b"c", True)]


# -- cleaning a real log ------------------------------------------------------------------
def test_last_value_per_key_survives_with_offset_gaps(open_log):
    lg = open_log(config=LogConfig(segment_bytes=600, **COMPACT))
    last = fill(lg, rounds=10, keys=7)
    lg.append_as_leader(keyed([(b"tail", b"x")]), 0)
    lg.roll()
    lg.append_as_leader(keyed([(b"k0", b"active")]), 0)
    active = lg.active_segment
    active_bytes = active.read_bytes(0, active.size)
    leo = lg.log_end_offset
    before = len(lg.segments)
    clean_fully(lg)
    got = records_of(lg)
    below_active = [r for r in got if r[0] < active.base_offset]
    assert {k: (o, v) for o, k, v in below_active} == {**last, b"tail": (active.base_offset - 1, b"x")}
    offsets = [o for o, _, _ in below_active]
    assert offsets == sorted(offsets)
    assert len(offsets) == 8
    assert offsets[-1] == active.base_offset - 1  # gaps
    assert lg.active_segment is active
    assert active.read_bytes(0, active.size) == active_bytes
    assert lg.log_end_offset == leo
    assert len(lg.segments) < before  # small segments grouped
    # reads and reopening see the same
    first = lg.read(0, 1 << 20)
    assert first.first_offset <= offsets[0] < first.next_offset  # the batch holding the first survivor
    lg.close()
    again = Log(lg.dir, lg.config)
    assert records_of(again) == got
    assert again.log_end_offset == leo
    again.close()


def test_tombstones_go_only_after_delete_retention(open_log):
    lg = open_log(config=LogConfig(segment_bytes=1 << 20, delete_retention_ms=1_000, **COMPACT))
    lg.append_as_leader(keyed([(b"a", b"1"), (b"b", b"1")]), 0)
    lg.append_as_leader(keyed([(b"a", None)]), 0)  # tombstone for a at offset 2
    lg.append_as_leader(keyed([(b"c", b"1")]), 0)
    lg.roll()
    lg.append_as_leader(keyed([(b"d", b"1")]), 0)
    clean_log(lg, OffsetMap(1 << 20), 0, 4, now_ms=50_000)
    assert records_of(lg, 4) == [(1, b"b", b"1"), (2, b"a", None), (3, b"c", b"1")]
    clean_log(lg, OffsetMap(1 << 20), 0, 4, now_ms=50_999)  # horizon is 51_000
    assert (2, b"a", None) in records_of(lg, 4)
    clean_log(lg, OffsetMap(1 << 20), 0, 4, now_ms=51_000)
    assert records_of(lg, 4) == [(1, b"b", b"1"), (3, b"c", b"1")]


def test_min_compaction_lag_keeps_recent_segments_dirty(open_log):
    lg = open_log(config=LogConfig(segment_bytes=300, min_compaction_lag_ms=5_000, **COMPACT))
    fill(lg, rounds=3, keys=3, ts=1_000)  # old
    old_end = lg.log_end_offset
    lg.roll()
    fill(lg, rounds=3, keys=3, ts=100_000)  # recent at now=102_000
    lg.roll()
    lg.append_as_leader(keyed([(b"z", b"z")]), 0)
    plan = plan_for(TP, lg, None, None, 102_000)
    assert plan.first_uncleanable_offset == old_end
    clean_log(lg, OffsetMap(1 << 20), plan.first_dirty_offset, plan.first_uncleanable_offset, 102_000)
    recs = records_of(lg)
    assert len([r for r in recs if r[0] < old_end]) == 3  # old section compacted to one per key
    assert len([r for r in recs if old_end <= r[0] < lg.active_segment.base_offset]) == 9  # recent untouched


def test_small_map_cleans_in_several_passes_and_ends_right(open_log):
    lg = open_log(config=LogConfig(segment_bytes=400, **COMPACT))
    last = fill(lg, rounds=4, keys=20)
    lg.roll()
    lg.append_as_leader(keyed([(b"zz", b"z")]), 0)
    passes = clean_fully(lg, map_bytes=24 * 8)  # at most 7 keys per pass
    assert passes > 2
    below = {k: (o, v) for o, k, v in records_of(lg) if o < lg.active_segment.base_offset}
    assert below == last


def test_idempotent_producer_last_batch_kept_empty(open_log):
    lg = open_log(config=LogConfig(segment_bytes=1 << 20, **COMPACT))
    lg.append_as_leader(keyed([(b"a", b"1"), (b"b", b"1")], producer_id=7, producer_epoch=0, base_sequence=0), 0)
    lg.append_as_leader(keyed([(b"a", b"2"), (b"b", b"2")]), 0)  # supersedes both of producer 7's
    lg.append_as_leader(keyed([(b"c", b"1")], producer_id=8, producer_epoch=0, base_sequence=0), 0)
    lg.append_as_leader(keyed([(b"c", b"2")], producer_id=8, producer_epoch=0, base_sequence=1), 0)
    lg.append_as_leader(keyed([(b"x", b"1")]), 0)
    lg.roll()
    lg.append_as_leader(keyed([(b"y", b"1")]), 0)
    clean_log(lg, OffsetMap(1 << 20), 0, 7, now_ms=10_000)
    seg = lg.segments[0]
    headers = list(seg.scan_headers(0, seg.size))
    by_pid = {h.producer_id: h for h in headers if h.producer_id >= 0}
    # producer 7's only batch lost every record but stays, empty, with its sequence range
    h7 = by_pid[7]
    assert (h7.record_count, h7.base_offset, h7.last_offset, h7.base_sequence) == (0, 0, 1, 0)
    # producer 8's first batch went (superseded, not its last); its last is whole
    assert [h.base_sequence for h in headers if h.producer_id == 8] == [1]
    assert records_of(lg, 7) == [(2, b"a", b"2"), (3, b"b", b"2"), (5, b"c", b"2"), (6, b"x", b"1")]
    # after a reopen the headers still give each producer's last sequence
    lg.close()
    again = Log(lg.dir, lg.config)
    last_seq = {h.producer_id: h.base_sequence + h.last_offset_delta
                for s in again.segments for h in s.scan_headers(0, s.size) if h.producer_id >= 0}
    assert last_seq == {7: 1, 8: 1}
    again.close()


def test_keyless_records_refused_on_compacted_topics(open_log):
    lg = open_log(config=LogConfig(**COMPACT))
    with pytest.raises(InvalidRecordError, match="Compacted topic cannot accept message without key") as e:
        lg.append_as_leader(keyed([(b"a", b"1"), (None, b"2")]), 0)
    assert e.value.code == ErrorCode.INVALID_RECORD
    assert lg.log_end_offset == 0
    with pytest.raises(InvalidRecordError):
        lg.append_as_leader(keyed([(None, b"2")], compression=1), 0)
    lg.append_as_leader(keyed([(b"a", b"1")], compression=1), 0)
    plain = open_log("plain-0")
    plain.append_as_leader(keyed([(None, b"2")]), 0)  # delete policy: fine


def test_compact_only_retention_keeps_old_segments(open_log):
    lg = open_log(config=LogConfig(segment_bytes=200, retention_ms=1, retention_bytes=10, **COMPACT))
    fill(lg, rounds=6, keys=3, per_batch=3)
    n = len(lg.segments)
    assert n > 2
    assert lg.delete_retention_segments(now_ms=10**12) == 0
    assert len(lg.segments) == n
    both = open_log("both-0", config=LogConfig(segment_bytes=200, retention_ms=1, cleanup_policy="compact,delete",
                                               file_delete_delay_ms=0))
    fill(both, rounds=3, keys=3)
    assert both.delete_retention_segments(now_ms=10**12) > 0


def test_reader_keeps_working_while_segments_are_swapped(open_log):
    lg = open_log(config=LogConfig(segment_bytes=400, cleanup_policy="compact", file_delete_delay_ms=60_000))
    fill(lg, rounds=5, keys=4)
    lg.roll()
    lg.append_as_leader(keyed([(b"z", b"z")]), 0)
    sl = lg.read_slice(0, 1 << 20)
    region = sl.region()
    expected = sl.read()
    clean_fully(lg)
    assert sl.read() == expected  # the old segment's descriptor is still open
    assert region is not None
    assert region.read() == expected
    region.close()
    assert any(name.endswith(".deleted") for name in os.listdir(lg.dir))
    lg.delete_expired_files(now_ms=int(time.time() * 1000) + 120_000)
    assert not any(name.endswith(".deleted") for name in os.listdir(lg.dir))


def test_swap_aborts_if_the_log_was_truncated(open_log):
    from praha.log.cleaner import CleaningAbortedError, LogCleaningPass

    lg = open_log(config=LogConfig(segment_bytes=300, **COMPACT))
    fill(lg, rounds=4, keys=3)
    lg.roll()
    lg.append_as_leader(keyed([(b"z", b"z")]), 0)
    before = records_of(lg)
    p = LogCleaningPass(lg, OffsetMap(1 << 20), 10_000)
    end = lg.active_segment.base_offset
    p.generation -= 1  # as if a truncation happened after the pass started
    with pytest.raises(CleaningAbortedError):
        p.clean(0, end)
    assert records_of(lg) == before
    assert not any(n.endswith((".cleaned", ".swap")) for n in os.listdir(lg.dir))


def test_log_manager_runs_the_cleaner_and_checkpoints(tmp_path):
    d = str(tmp_path / "logs")
    cfg = LogConfig(segment_bytes=400, cleanup_policy="compact", min_cleanable_dirty_ratio=0.01,
                    file_delete_delay_ms=0)
    lm = LogManager([d], cfg, cleaner_config=CleanerConfig(backoff_ms=20))
    lm.startup()
    lg = lm.get_or_create(TP)
    last = fill(lg, rounds=6, keys=5)
    lg.roll()
    lg.append_as_leader(keyed([(b"z", b"z")]), 0)
    lm.start_cleaner()
    assert lm.cleaner is not None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and lm.cleaner.totals.passes == 0:
        time.sleep(0.02)
    assert lm.cleaner.totals.passes >= 1
    below = {k: (o, v) for o, k, v in records_of(lg) if o < lg.active_segment.base_offset}
    assert below == last
    entries = read_entries(os.path.join(d, CLEANER_OFFSET_CHECKPOINT), 3)
    assert entries == [["t", "0", str(lg.active_segment.base_offset)]]
    figures = dict((n, v) for n, v, _ in lm.cleaner.figures())
    assert figures["log_cleaner_passes"] >= 1
    assert figures["log_cleaner_bytes_read"] > 0
    lm.shutdown()


def test_cleaner_disabled(tmp_path):
    lm = LogManager([str(tmp_path / "l")], LogConfig(), cleaner_config=CleanerConfig.from_broker_config(
        {"log.cleaner.enable": "false"}))
    lm.startup()
    lm.start_cleaner()
    assert lm.cleaner is None
    lm.shutdown()


def test_configs_parse_kafka_names():
    cfg = LogConfig.from_broker_config({"log.cleanup.policy": "compact", "log.cleaner.min.cleanable.ratio": "0.2",
                                        "log.cleaner.delete.retention.ms": "5"})
    assert cfg.compact
    assert not cfg.delete
    assert cfg.min_cleanable_dirty_ratio == 0.2
    assert cfg.delete_retention_ms == 5
    t = cfg.with_overrides({"cleanup.policy": "delete, compact", "min.compaction.lag.ms": "7",
                            "max.compaction.lag.ms": "9"})
    assert t.compact
    assert t.delete
    assert t.min_compaction_lag_ms == 7
    assert t.max_compaction_lag_ms == 9
    from praha.errors import ConfigError

    with pytest.raises(ConfigError, match="String must be one of: compact, delete"):
        LogConfig(cleanup_policy="shred")
    with pytest.raises(ConfigError, match="conflict"):
        cfg.with_overrides({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "9"})
    cc = CleanerConfig.from_broker_config({"log.cleaner.threads": "2", "log.cleaner.dedupe.buffer.size": "1000",
                                           "log.cleaner.io.max.bytes.per.second": "5e6", "log.cleaner.backoff.ms": "7"})
    assert (cc.threads, cc.dedupe_buffer_size, cc.io_max_bytes_per_second, cc.backoff_ms) == (2, 1000, 5e6, 7)
    assert CleanerConfig().io_max_bytes_per_second == float("inf")
    assert CleanerConfig().enable


def test_topic_rules_accept_compaction_configs_and_refuse_bad_values():
    from praha.errors import ConfigError
    from praha.topic_rules import validate_topic_config

    ok = validate_topic_config({"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.01",
                                "min.compaction.lag.ms": "0", "max.compaction.lag.ms": "1000",
                                "delete.retention.ms": "0"})
    assert ok["cleanup.policy"] == "compact,delete"
    with pytest.raises(ConfigError, match="Invalid value shred for configuration cleanup.policy: "
                                          "String must be one of: compact, delete"):
        validate_topic_config({"cleanup.policy": "shred"})
    with pytest.raises(ConfigError, match="Value must be no more than 1"):
        validate_topic_config({"min.cleanable.dirty.ratio": "1.5"})
    with pytest.raises(ConfigError, match="Value must be at least 1"):
        validate_topic_config({"max.compaction.lag.ms": "0"})
    with pytest.raises(ConfigError, match="conflict topic config setting min.compaction.lag.ms"):
        validate_topic_config({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})


def test_dirty_split_and_throttler():
    import threading

    from praha.log.cleaner import Throttler, dirty_split

    segs = [SegmentInfo(0, 100, 0, 0), SegmentInfo(10, 200, 0, 0), SegmentInfo(20, 300, 0, 0), SegmentInfo(30, 7, 0, 0)]
    split = dirty_split(TP, segs, 10, 30, False)
    assert (split.clean_bytes, split.cleanable_bytes) == (100, 500)
    assert split.cleanable_ratio == 500 / 600
    stop = threading.Event()
    t = Throttler(1_000_000, stop)
    start = time.monotonic()
    for _ in range(4):
        t.throttle(50_000)
    assert time.monotonic() - start >= 0.15  # 200 kB at 1 MB/s
    stop.set()
    start = time.monotonic()
    t.throttle(10_000_000)  # a stopping cleaner does not wait
    assert time.monotonic() - start < 1


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_compressed_batches_are_cleaned_in_their_codec(open_log, codec):
    if not codec_available(codec):
        pytest.skip("codec not available")
    lg = open_log(config=LogConfig(segment_bytes=1 << 20, **COMPACT))
    for r in range(3):
        recs = [(b"k%d" % k, b"v%d-%d" % (k, r) * 20, 1_000 + k) for k in range(6)]
        lg.append_as_leader(encode_records(0, recs, compression=codec), 0)
    lg.roll()
    lg.append_as_leader(keyed([(b"z", b"z")]), 0)
    clean_log(lg, OffsetMap(1 << 20), 0, 18, now_ms=10_000)
    seg = lg.segments[0]
    headers = list(seg.scan_headers(0, seg.size))
    assert [h.compression for h in headers] == [codec]  # the first two batches went whole
    got = records_of(lg, 18)
    assert [(o, k) for o, k, _ in got] == [(12 + k, b"k%d" % k) for k in range(6)]
    assert got[0][2] == b"v0-2" * 20


def test_leader_and_follower_roll_at_the_same_batches(open_log):
    """Appends roll at the batch that would overflow, however they are grouped, so a
    follower fetching many batches at once ends with the leader's segments."""
    cfg = LogConfig(segment_bytes=2_000, **COMPACT)
    leader = open_log("leader-0", config=cfg)
    for i in range(60):
        leader.append_as_leader(keyed([(b"k%d" % (i % 7), b"v" * (30 + i % 11))] * (1 + i % 3)), 0)
    follower = open_log("follower-0", config=cfg)
    pos = 0
    while pos < leader.log_end_offset:
        r = leader.read(pos, 3_000)  # several batches per fetch
        follower.append_as_follower(r.data)
        pos = r.next_offset
    assert [s.base_offset for s in follower.segments] == [s.base_offset for s in leader.segments]
    assert len(leader.segments) >= 4
    clean_fully(leader)
    clean_fully(follower)
    assert [s.read_bytes(0, s.size) for s in follower.segments] == [s.read_bytes(0, s.size) for s in leader.segments]


def test_filter_batch_decisions():
    from praha.log.cleaner import filter_batch
    from praha.log.records import decode_batch as dec

    data = encode_records(10, [(b"a", b"1", 1), (b"b", None, 2), (None, b"x", 3), (b"c", b"1", 4)],
                          producer_id=3, producer_epoch=0, base_sequence=0)
    h = dec(data).header
    m = OffsetMap(1 << 16)
    for k, o in ((b"a", 10), (b"b", 11), (b"c", 20)):
        m.put(k, o)
    # c is superseded, the keyless record goes, a stays, b's tombstone stays and gets a horizon
    r = filter_batch(data, h, m, now_ms=1_000, delete_retention_ms=500, retain_empty=False)
    out = dec(r.output)
    assert [(x.offset, x.key) for x in out.records] == [(10, b"a"), (11, b"b")]
    assert out.delete_horizon_ms == 1_500
    assert out.header.last_offset == 13
    assert out.header.producer_id == 3
    # past the horizon the tombstone goes too
    r2 = filter_batch(r.output, out.header, m, now_ms=1_500, delete_retention_ms=500, retain_empty=False)
    assert [x.key for x in dec(r2.output).records] == [b"a"]
    # everything superseded: dropped, or kept empty when asked
    m.put(b"a", 30)
    assert filter_batch(r2.output, dec(r2.output).header, m, 1_500, 500, retain_empty=False).output is None
    empty = filter_batch(r2.output, dec(r2.output).header, m, 1_500, 500, retain_empty=True).output
    eh = dec(empty).header
    assert (eh.record_count, eh.base_offset, eh.last_offset, eh.base_sequence) == (0, 10, 13, 0)
    # a batch past the map's end is kept byte for byte
    later = encode_records(40, [(b"a", b"2", 5)])
    assert filter_batch(later, dec(later).header, m, 1_500, 500, False).output is later


def test_log_deleted_during_a_pass_leaves_nothing(open_log):
    from praha.log.cleaner import CleaningAbortedError, LogCleaningPass

    lg = open_log(config=LogConfig(segment_bytes=300, **COMPACT))
    fill(lg, rounds=4, keys=3)
    lg.roll()
    lg.append_as_leader(keyed([(b"z", b"z")]), 0)
    calls = []

    def delete_midway() -> None:  # once the pass is writing its output
        if not calls and os.path.isdir(lg.dir) and any(n.endswith(".cleaned") for n in os.listdir(lg.dir)):
            calls.append(1)
            lg.delete()

    p = LogCleaningPass(lg, OffsetMap(1 << 20), 10_000, check=delete_midway)
    with pytest.raises((CleaningAbortedError, OSError)):
        p.clean(0, lg.active_segment.base_offset)
    assert calls
    assert not os.path.exists(lg.dir)
