"""The praha sink: a DataFrame written and read back gives the same rows; a broker killed
during the write fails tasks, Spark retries them, and no row is missing (at-least-once:
repeats are allowed, losses are not)."""
from __future__ import annotations

import threading

import pytest

from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration


def _read_back(spark, pipeline, topic: str):
    return (spark.read.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap)
            .option("subscribe", topic).option("includeHeaders", "true").load())


def test_sink_writes_a_dataframe_and_reading_it_back_gives_the_same_rows(spark, pipeline, topic_name):
    pipeline.create_topic(topic_name, 3, 3, {"min.insync.replicas": "2"})
    rows = [(f"k{i % 17}", f"value-{i}", i % 3, [("n", str(i).encode())]) for i in range(900)]
    df = spark.createDataFrame(rows, "key string, value string, partition int, "
                                     "headers array<struct<key: string, value: binary>>")
    df.write.format("praha").mode("append").option("kafka.bootstrap.servers",
                                                   pipeline.bootstrap).option("topic", topic_name).save()
    back = _read_back(spark, pipeline, topic_name).collect()
    assert len(back) == 900
    got = {(r.key.decode(), r.value.decode(), r.partition, tuple((h.key, h.value) for h in r.headers)) for r in back}
    assert got == {(k, v, p, tuple(h)) for k, v, p, h in rows}

    # the topic may come from a column instead of the option; binary values are fine too
    spark.createDataFrame([(topic_name, bytearray(b"\x00\x01raw"))], "topic string, value binary") \
        .write.format("praha").mode("append").option("kafka.bootstrap.servers", pipeline.bootstrap).save()
    assert any(r.value == b"\x00\x01raw" for r in _read_back(spark, pipeline, topic_name).collect())


def test_streaming_sink_writes_every_micro_batch(spark, pipeline, topic_name, tmp_path):
    src, dst = f"{topic_name}-in", f"{topic_name}-out"
    pipeline.create_topic(src, 2, 3)
    pipeline.create_topic(dst, 2, 3)
    pipeline.produce(src, [{"value": b"m-%d" % i, "key": b"k%d" % (i % 5)} for i in range(400)])
    q = (spark.readStream.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap)
         .option("subscribe", src).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "150").load()
         .selectExpr("key", "upper(cast(value as string)) as value")
         .writeStream.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap).option("topic", dst)
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    assert q.awaitTermination(120)
    assert q.exception() is None
    values = sorted(r.value.decode() for r in _read_back(spark, pipeline, dst).collect())
    assert values == sorted(f"M-{i}" for i in range(400))


@pytest.mark.parametrize(("options", "schema", "named"), [
    ({"topic": "x"}, "key string", "value"),
    ({}, "value string", "topic"),
    ({"topic": "x"}, "value int", "value"),
    ({"topic": "no-such-topic"}, "value string", "topic"),
    ({"topic": "x", "kafka.value.serializer": "x"}, "value string", "kafka.value.serializer"),
])
def test_bad_write_options_fail_before_any_task(spark, pipeline, options, schema, named):
    from pyspark.errors import AnalysisException

    df = spark.createDataFrame([], schema)
    w = df.write.format("praha").mode("append").option("kafka.bootstrap.servers", pipeline.bootstrap)
    for k, v in options.items():
        w = w.option(k, v)
    with pytest.raises((AnalysisException, Exception)) as info:
        w.save()
    assert f"option '{named}'" in str(info.value)


def test_broker_killed_during_a_write_makes_spark_retry_and_no_row_is_missing(spark, pipeline, topic_name):
    """The leader of a partition is killed while the tasks write. Records waiting for it
    are not acknowledged within `kafka.message.timeout.ms` (shorter than the failover),
    so tasks fail; Spark retries them (local[2,4]) until the new leader takes the records.
    The producer settings (passed through as `kafka.*`) keep few records in flight, so
    the write lasts seconds and the kill lands in its middle."""
    pipeline.create_topic(topic_name, 3, 3, {"min.insync.replicas": "2"})
    n = 3000
    df = spark.range(0, n, 1, 2).selectExpr("cast(id % 31 as string) as key", "concat('w-', id) as value")
    sc = spark.sparkContext
    group = f"sink-{topic_name}"
    victim = pipeline.leader(topic_name, 0)
    result: dict = {}

    def run() -> None:
        sc.setJobGroup(group, "write with a broker kill")
        # the format lookup uses the thread's active session; a new thread has none
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        try:
            (df.write.format("praha").mode("append").option("kafka.bootstrap.servers", pipeline.bootstrap)
             .option("topic", topic_name).option("kafka.message.timeout.ms", "2000")
             .option("kafka.linger.ms", "0").option("kafka.batch.num.messages", "5")
             .option("kafka.max.in.flight.requests.per.connection", "1")
             .option("kafka.queue.buffering.max.messages", "10").save())
        except Exception as e:  # noqa: BLE001 - reported below
            result["error"] = e

    t = threading.Thread(target=run)
    try:
        t.start()
        wait_for(lambda: pipeline.written(topic_name) >= 200, 120, interval=0.05, what="the write to start")
        assert pipeline.written(topic_name) < n // 2, "the write went too fast to be interrupted"
        pipeline.cluster.kill_broker(victim)
        t.join(240)
        assert not t.is_alive(), "the write did not finish"
        assert "error" not in result, result.get("error")
        tracker = sc.statusTracker()
        failed = sum(tracker.getStageInfo(s).numFailedTasks for j in tracker.getJobIdsForGroup(group)
                     for s in tracker.getJobInfo(j).stageIds if tracker.getStageInfo(s))
        assert failed >= 1, "no task failed: the kill did not hit the write"
    finally:
        pipeline.restart(victim)
        pipeline.wait_ready(topic_name, 3, full_isr=True, timeout=90)
    values = [r.value.decode() for r in _read_back(spark, pipeline, topic_name).select("value").collect()]
    assert set(values) == {f"w-{i}" for i in range(n)}  # nothing missing; repeats allowed (at-least-once)
