"""Pure parts of the praha data source, without Spark or a cluster: the record-batch
decoder, range splitting, rate limiting, option parsing."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.common import TopicPartition
from praha.errors import CorruptLogError
from praha.spark.options import OptionError, parse_read_options, parse_write_options
from praha.spark.planning import OffsetRange, from_json, rate_limit, split_ranges, to_json
from praha.spark.records import Columns, decode_into, scan_next_offset
from praha.testing.fuzz import examples

TP = TopicPartition("t", 0)


def batch(base: int, values: list[bytes | None], keys: list[bytes | None] | None = None, ts: int = 1000,
          compression: int = 0, headers: bool = False, control: bool = False, producer_id: int = -1) -> bytes:
    transactional = control or producer_id >= 0
    b = DefaultRecordBatchBuilder(2, compression, transactional, producer_id, 0 if producer_id >= 0 else -1,
                                  0 if producer_id >= 0 else -1, 1 << 30)
    for i, v in enumerate(values):
        b.append(i, timestamp=ts + i, key=(keys or [None] * len(values))[i], value=v,
                 headers=[("h", b"x%d" % i), ("n", None)] if headers else [])
    raw = bytearray(b.build())
    raw[0:8] = base.to_bytes(8, "big")
    if control:  # turn it into a control batch (attributes bit 5); fix the CRC
        import crc32c

        attrs = int.from_bytes(raw[21:23], "big") | 0x20
        raw[21:23] = attrs.to_bytes(2, "big")
        raw[17:21] = crc32c.crc32c(bytes(raw[21:])).to_bytes(4, "big")
    return bytes(raw)


def test_decode_keys_values_headers_offsets_and_timestamps():
    buf = batch(10, [b"a", None, b"c"], keys=[b"k0", None, b"k2"], headers=True) + batch(13, [b"d"], ts=5000)
    cols = Columns(with_headers=True)
    assert decode_into(buf, 10, 100, cols) == 14
    assert cols.offsets == [10, 11, 12, 13]
    assert cols.values == [b"a", None, b"c", b"d"]
    assert cols.keys == [b"k0", None, b"k2", None]
    assert cols.timestamps_ms == [1000, 1001, 1002, 5000]
    assert cols.timestamp_types == [0, 0, 0, 0]
    assert cols.headers[0] == [("h", b"x0"), ("n", None)]


def test_decode_respects_the_range_and_a_partial_trailing_batch():
    full = batch(0, [b"v%d" % i for i in range(5)]) + batch(5, [b"v%d" % i for i in range(5, 10)])
    cols = Columns()
    assert decode_into(full, 2, 7, cols) == 7
    assert cols.offsets == [2, 3, 4, 5, 6]
    cut = full[:-3]  # the second batch is incomplete: left for the next fetch
    cols = Columns()
    assert decode_into(cut, 0, 100, cols) == 5 == scan_next_offset(cut, 0, 100)
    assert cols.offsets == [0, 1, 2, 3, 4]


def test_control_batches_advance_without_rows_and_compressed_batches_decode():
    buf = batch(0, [b"a"]) + batch(1, [b"marker"], control=True) + batch(2, [b"z" * 100] * 3, compression=1)
    cols = Columns()
    assert decode_into(buf, 0, 100, cols) == 5 == scan_next_offset(buf, 0, 100)
    assert cols.offsets == [0, 2, 3, 4]
    assert cols.values[1:] == [b"z" * 100] * 3


def marker(base: int, producer_id: int, commit: bool) -> bytes:
    """A transaction marker: a control batch whose one record's key is (version 0, type)."""
    import struct

    return batch(base, [struct.pack(">hi", 0, 3)], keys=[struct.pack(">hh", 0, 1 if commit else 0)],
                 control=True, producer_id=producer_id)


def test_read_committed_skips_aborted_transactions_until_their_marker():
    # producer 7 aborts [0, 2) then commits [3, 5); producer 8 commits [2, 3) in between;
    # a non-transactional batch at 6 is always read
    buf = (batch(0, [b"a0", b"a1"], producer_id=7) + batch(2, [b"c8"], producer_id=8) + marker(3, 7, commit=False)
           + batch(4, [b"c0", b"c1"], producer_id=7) + marker(6, 7, commit=True) + marker(7, 8, commit=True)
           + batch(8, [b"plain"]))
    committed = Columns()
    assert decode_into(buf, 0, 100, committed, aborted=[(7, 0)]) == 9
    assert committed.values == [b"c8", b"c0", b"c1", b"plain"]
    everything = Columns()
    decode_into(buf, 0, 100, everything)  # read_uncommitted: aborted records too, markers never
    assert everything.values == [b"a0", b"a1", b"c8", b"c0", b"c1", b"plain"]
    # a fetch that starts inside the aborted transaction still skips its rest
    tail = Columns()
    decode_into(buf, 1, 100, tail, aborted=[(7, 0)])
    assert tail.values == [b"c8", b"c0", b"c1", b"plain"]


def test_exactly_once_write_options():
    o = parse_write_options({**BS, "topic": "t", "exactlyOnce": "true", "transactionalIdPrefix": "orders-sink"})
    assert o.exactly_once
    assert o.transactional_id_prefix == "orders-sink"
    assert not parse_write_options({**BS, "topic": "t"}).exactly_once
    for bad, named in (({"kafka.transactional.id": "x"}, "kafka.transactional.id"),
                       ({"kafka.acks": "1"}, "kafka.acks"),
                       ({"kafka.enable.idempotence": "false"}, "kafka.enable.idempotence"),
                       ({"transactionalIdPrefix": "a b"}, "transactionalIdPrefix")):
        with pytest.raises(OptionError) as info:
            parse_write_options({**BS, "topic": "t", "exactlyOnce": "true", **bad})
        assert info.value.option == named
    assert parse_read_options({**BS, "subscribe": "a", "kafka.isolation.level": "read_committed"}).read_committed
    with pytest.raises(OptionError, match="kafka.isolation.level"):
        parse_read_options({**BS, "subscribe": "a", "kafka.isolation.level": "serializable"})


def test_a_corrupt_batch_fails_its_crc_check():
    raw = bytearray(batch(0, [b"hello"]))
    raw[-2] ^= 0xFF
    with pytest.raises(CorruptLogError):
        decode_into(bytes(raw), 0, 100, Columns())


@settings(max_examples=examples(200), deadline=None)
@given(sizes=st.lists(st.integers(0, 10_000), min_size=1, max_size=8), min_parts=st.integers(1, 40),
       max_records=st.one_of(st.none(), st.integers(1, 5000)))
def test_split_ranges_cover_every_offset_once(sizes, min_parts, max_records):
    ranges = [OffsetRange(TopicPartition("t", i), 100 * i, 100 * i + s) for i, s in enumerate(sizes)]
    pieces = split_ranges(ranges, min_parts, max_records)
    for r in ranges:
        mine = sorted((p.start, p.end) for p in pieces if p.tp == r.tp)
        covered = [o for s, e in mine for o in range(s, e)] if r.size < 50_000 else []
        assert covered == list(range(r.start, r.end))
        assert all(e > s for s, e in mine)
        if max_records:
            assert all(e - s <= max_records for s, e in mine)
    nonempty = sum(min(r.size, 1) for r in ranges)
    total = sum(r.size for r in ranges)
    if nonempty:
        assert len(pieces) >= min(min_parts, total)


@settings(max_examples=examples(200), deadline=None)
@given(avail=st.lists(st.integers(0, 1000), min_size=1, max_size=8), limit=st.integers(1, 3000))
def test_rate_limit_admits_exactly_min_of_limit_and_available(avail, limit):
    start = {TopicPartition("t", i): 50 for i in range(len(avail))}
    latest = {tp: 50 + a for tp, a in zip(start, avail)}
    end = rate_limit(start, latest, limit)
    assert sum(end[tp] - start[tp] for tp in start) == min(limit, sum(avail))
    assert all(start[tp] <= end[tp] <= latest[tp] for tp in start)


def test_offsets_json_round_trips_in_sparks_format():
    offsets = {TopicPartition("a", 0): 5, TopicPartition("a", 1): 7, TopicPartition("b", 0): 0}
    assert to_json(offsets) == {"a": {"0": 5, "1": 7}, "b": {"0": 0}}
    assert from_json(to_json(offsets)) == offsets


BS = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


@pytest.mark.parametrize(("options", "streaming", "named"), [
    ({}, None, "kafka.bootstrap.servers"),
    ({"kafka.bootstrap.servers": "nohost"}, None, "kafka.bootstrap.servers"),
    ({**BS}, None, "subscribe"),
    ({**BS, "subscribe": "a", "assign": '{"a":[0]}'}, None, "subscribe"),
    ({**BS, "assign": "[1]"}, None, "assign"),
    ({**BS, "assign": '{"a": ["x"]}'}, None, "assign"),
    ({**BS, "subscribePattern": "("}, None, "subscribePattern"),
    ({**BS, "subscribe": "a", "startingOffsets": '{"a": {"0": 1.5}}'}, None, "startingOffsets"),
    ({**BS, "subscribe": "a", "startingOffsets": '{"b": {"0": 1}}'}, None, "startingOffsets"),
    ({**BS, "assign": '{"a": [0, 1]}', "startingOffsets": '{"a": {"0": 1}}'}, None, "startingOffsets"),
    ({**BS, "subscribe": "a", "startingOffsets": "latest"}, False, "startingOffsets"),
    ({**BS, "subscribe": "a", "endingOffsets": "latest"}, True, "endingOffsets"),
    ({**BS, "subscribe": "a", "startingOffsetsByTimestamp": '{"a": {"0": -5}}'}, None, "startingOffsetsByTimestamp"),
    ({**BS, "subscribe": "a", "startingOffsetsByTimestampStrategy": "maybe"}, None,
     "startingOffsetsByTimestampStrategy"),
    ({**BS, "subscribe": "a", "maxOffsetsPerTrigger": "-1"}, True, "maxOffsetsPerTrigger"),
    ({**BS, "subscribe": "a", "includeHeaders": "yes"}, None, "includeHeaders"),
    ({**BS, "subscribe": "a", "kafka.value.deserializer": "x"}, None, "kafka.value.deserializer"),
])
def test_bad_read_options_name_the_option(options, streaming, named):
    with pytest.raises(OptionError) as info:
        parse_read_options(options, streaming=streaming)
    assert info.value.option == named
    assert f"option '{named}'" in str(info.value)


def test_read_options_defaults_and_precedence():
    batch_opts = parse_read_options({**BS, "subscribe": "a, b"}, streaming=False)
    assert batch_opts.subscription.topics == ("a", "b")
    assert (batch_opts.starting.kind, batch_opts.ending.kind) == ("earliest", "latest")
    assert parse_read_options({**BS, "subscribe": "a"}, streaming=True).starting.kind == "latest"
    o = parse_read_options({**BS, "subscribe": "a", "startingOffsets": "earliest",
                            "startingOffsetsByTimestamp": '{"a": {"0": 5}}', "startingTimestamp": "9"})
    assert (o.starting.kind, o.starting.timestamp) == ("timestamp", 9)
    assert parse_read_options({**BS, "subscribePattern": "a.*"}).subscription.matches("abc")
    assert not parse_read_options({**BS, "subscribePattern": "a.*"}).subscription.matches("xabc")


def test_write_options_pass_producer_settings_and_default_to_acks_all():
    o = parse_write_options({**BS, "topic": "t", "kafka.linger.ms": "7"})
    assert o.producer_config["acks"] == "all"
    assert o.producer_config["linger.ms"] == "7"
    assert o.producer_config["bootstrap.servers"] == "127.0.0.1:9092"
    with pytest.raises(OptionError, match="kafka.key.serializer"):
        parse_write_options({**BS, "kafka.key.serializer": "x"})


def test_a_pre_0_11_message_set_is_refused_by_name():
    """praha stores only v2 batches; an older message set is named, never misread."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    old = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    old.append(0, timestamp=1, key=None, value=b"hello")
    for read in (lambda buf: decode_into(buf, 0, 100, Columns()), lambda buf: scan_next_offset(buf, 0, 100)):
        with pytest.raises(CorruptLogError, match="has magic 1: praha reads only v2 record batches"):
            read(batch(0, [b"new"]) + bytes(old.build()))


def test_worker_python_drops_the_uncompiled_zips_and_raises_the_planners_priority(tmp_path):
    """The PYSPARK_PYTHON launcher: the wheel's pyspark.zip and py4j zip leave the path
    (the installed, compiled pyspark is imported instead), everything else on it stays;
    Spark's planner workers (the modules Spark gives a fixed 10 s to connect back) run at
    PLANNER_NICENESS, every other Python command at the caller's priority."""
    import os
    import subprocess
    import sys

    import pyspark

    from praha.spark import PLANNER_MODULES, PLANNER_NICENESS, worker_python

    launcher = worker_python(sys.executable)
    probe = "import os, sys; print(os.nice(0), os.environ['PYTHONPATH'], sys.argv[1:])"
    stand_ins = ["pyspark.sql.worker.probe", "pyspark.sql.streaming.python_streaming_probe"]  # named as Spark's
    assert all(any(m.startswith(p) for p in PLANNER_MODULES) for m in stand_ins)
    for module in stand_ins:
        *packages, name = module.split(".")
        for i in range(1, len(packages) + 1):
            tmp_path.joinpath(*packages[:i]).mkdir(exist_ok=True)
            tmp_path.joinpath(*packages[:i], "__init__.py").touch()
        tmp_path.joinpath(*packages, f"{name}.py").write_text(probe)
    lib = os.path.realpath(os.path.join(os.path.dirname(pyspark.__file__), "python", "lib"))
    zips = [os.path.join(lib, z) for z in sorted(os.listdir(lib)) if z.endswith(".zip")]
    assert len(zips) == 2  # pyspark.zip and py4j's
    env = {**os.environ, "PYTHONPATH": ":".join([*zips, str(tmp_path)])}  # as Spark sets it: its zips first
    base = os.nice(0)
    boosted = max(-20, base + PLANNER_NICENESS) if os.geteuid() == 0 else base
    for command, niceness in [(["-m", stand_ins[0]], boosted), (["-m", stand_ins[1]], boosted),
                              (["-c", probe], base)]:
        out = subprocess.run([launcher, *command, "arg"], env=env, capture_output=True, text=True, timeout=60,
                             check=True)
        nice, path, args = out.stdout.split(maxsplit=2)
        assert (int(nice), path, args.strip()) == (niceness, str(tmp_path), "['arg']"), out
