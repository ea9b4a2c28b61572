"""Batch reads through the praha source: every record once, Spark's Kafka schema, exact
offset bounds (JSON offsets, timestamps), task splitting, and clear analysis-time errors."""
from __future__ import annotations

import datetime as dt
import json
import time

import pytest

from praha.spark.schema import kafka_schema

pytestmark = pytest.mark.integration

#: recent timestamps: older ones would be deleted by time-based retention (7 days)
BASE_TS = int(time.time() * 1000) - 3_600_000


def _records(n: int, partitions: int) -> list[dict]:
    return [{
        "key": b"key-%d" % i if i % 7 else None,
        "value": b"value-%d" % i,
        "partition": i % partitions,
        "timestamp": BASE_TS + i,
        "headers": [("source", b"test"), ("i", str(i).encode())],
    } for i in range(n)]


def _read(spark, pipeline, **options):
    r = spark.read.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


@pytest.fixture(scope="module")
def written(spark, pipeline):
    """A 3-partition RF 3 topic with 1500 records written by confluent-kafka."""
    topic = "read-batch"
    pipeline.create_topic(topic, 3, 3, {"min.insync.replicas": "2"})
    recs = _records(1500, 3)
    pipeline.produce(topic, recs)
    return topic, recs


def test_batch_read_returns_every_record_once_with_kafka_schema(spark, pipeline, written):
    topic, recs = written
    df = _read(spark, pipeline, subscribe=topic, includeHeaders="true")
    assert df.schema == kafka_schema(include_headers=True)
    assert _read(spark, pipeline, subscribe=topic).schema == kafka_schema(include_headers=False)
    rows = df.collect()
    assert len(rows) == len(recs)
    assert len({(r.partition, r.offset) for r in rows}) == len(recs)
    got = {r.value: r for r in rows}
    for rec in recs:
        row = got[rec["value"]]
        assert row.key == rec["key"]
        assert row.topic == topic
        assert row.partition == rec["partition"]
        assert row.timestamp == dt.datetime.fromtimestamp(rec["timestamp"] / 1000, dt.UTC).replace(tzinfo=None)
        assert row.timestampType == 0
        assert [(h.key, h.value) for h in row.headers] == rec["headers"]
    # offsets per partition are 0..n-1 and follow the produce order
    for p in range(3):
        offs = sorted((r.offset, int(r.value.split(b"-")[1])) for r in rows if r.partition == p)
        assert [o for o, _ in offs] == list(range(len(offs)))
        assert [i for _, i in offs] == sorted(i for _, i in offs)


def test_starting_and_ending_offsets_json_bound_the_read_exactly(spark, pipeline, written):
    topic, _ = written
    starting = {topic: {"0": 10, "1": -2, "2": 480}}
    ending = {topic: {"0": 25, "1": 3, "2": -1}}
    rows = _read(spark, pipeline, subscribe=topic, startingOffsets=json.dumps(starting),
                 endingOffsets=json.dumps(ending)).select("partition", "offset").collect()
    got = sorted((r.partition, r.offset) for r in rows)
    expect = [(0, o) for o in range(10, 25)] + [(1, o) for o in range(0, 3)] + [(2, o) for o in range(480, 500)]
    assert got == expect

    rows = _read(spark, pipeline, assign=json.dumps({topic: [1]}),
                 startingOffsets=json.dumps({topic: {"1": 100}}),
                 endingOffsets=json.dumps({topic: {"1": 101}})).collect()
    assert [(r.partition, r.offset) for r in rows] == [(1, 100)]


def test_starting_offsets_by_timestamp_and_min_partitions(spark, pipeline, written):
    topic, recs = written
    # record i has timestamp BASE_TS + i and sits in partition i % 3
    df = _read(spark, pipeline, subscribe=topic, minPartitions="7",
               startingOffsetsByTimestamp=json.dumps({topic: {"0": BASE_TS + 300, "1": BASE_TS + 1,
                                                              "2": BASE_TS + 1499}}))
    assert df.rdd.getNumPartitions() >= 7
    values = sorted(int(r.value.split(b"-")[1]) for r in df.select("value").collect())
    expect = sorted(
        i for i in range(1500) if (i % 3 == 0 and i >= 300) or (i % 3 == 1 and i >= 1) or (i % 3 == 2 and i >= 1499)
    )
    assert values == expect

    # a timestamp after every record: 'error' strategy (default) fails naming the option, 'latest' reads nothing
    late = json.dumps({topic: {"0": BASE_TS + 10**9, "1": BASE_TS + 10**9, "2": BASE_TS + 10**9}})
    with pytest.raises(Exception, match="startingOffsetsByTimestamp"):
        _read(spark, pipeline, subscribe=topic, startingOffsetsByTimestamp=late).count()
    assert _read(spark, pipeline, subscribe=topic, startingOffsetsByTimestamp=late,
                 startingOffsetsByTimestampStrategy="latest").count() == 0


def test_pattern_subscription_and_max_records_per_partition(spark, pipeline, written):
    topic, recs = written
    df = _read(spark, pipeline, subscribePattern="read-b.*", maxRecordsPerPartition="200")
    assert df.rdd.getNumPartitions() >= len(recs) // 200
    assert df.count() == len(recs)


@pytest.mark.parametrize(("options", "named"), [
    ({"subscribe": "a", "assign": '{"a": [0]}'}, "assign"),
    ({"subscribe": "a", "subscribePattern": "a.*"}, "subscribePattern"),
    ({}, "subscribe"),
    ({"assign": '{"a": [0'}, "assign"),
    ({"subscribe": "read-batch", "startingOffsets": '{"read-batch": {"0": "x"}}'}, "startingOffsets"),
    ({"subscribe": "read-batch", "startingOffsets": "{not json"}, "startingOffsets"),
    ({"subscribe": "read-batch", "endingOffsets": '{"read-batch": {"0": -2}}'}, "endingOffsets"),
    ({"subscribe": "read-batch", "startingOffsets": "latest"}, "startingOffsets"),
    ({"subscribe": "read-batch", "failOnDataLoss": "maybe"}, "failOnDataLoss"),
    ({"subscribe": "read-batch", "minPartitions": "0"}, "minPartitions"),
    ({"subscribe": "read-batch", "kafka.auto.offset.reset": "earliest"}, "kafka.auto.offset.reset"),
    ({"subscribe": "no-such-topic"}, "subscribe"),
    ({"assign": '{"no-such-topic": [0]}'}, "assign"),
])
def test_bad_read_options_fail_at_analysis_naming_the_option(spark, pipeline, written, options, named):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as info:
        _read(spark, pipeline, **options).collect()
    message = str(info.value)
    assert "praha data source option" in message, message
    assert f"'{named}'" in message, message


def test_unknown_topic_without_fail_on_data_loss_reads_nothing(spark, pipeline, written):
    assert _read(spark, pipeline, subscribe="no-such-topic", failOnDataLoss="false").count() == 0


def test_compressed_batches_are_decoded(spark, pipeline, topic_name):
    pipeline.create_topic(topic_name, 1, 3)
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        pipeline.produce(topic_name, [{"value": f"{codec}-{i}".encode() * 5, "key": b"k"} for i in range(200)],
                         **{"compression.type": codec})
    values = [r.value for r in _read(spark, pipeline, subscribe=topic_name).orderBy("offset").collect()]
    assert values == [f"{c}-{i}".encode() * 5 for c in ("gzip", "snappy", "lz4", "zstd") for i in range(200)]
