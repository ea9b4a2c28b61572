"""Streaming reads: availableNow, restart from a checkpoint, maxOffsetsPerTrigger,
minOffsetsPerTrigger with maxTriggerDelay, new partitions picked up, and data loss (retention,
topic deletion) with failOnDataLoss."""
from __future__ import annotations

import json
import time

import pytest

from praha.common import TopicPartition
from praha.spark.kafka import ClusterClient
from praha.spark.options import parse_bootstrap
from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration


def _stream(spark, pipeline, **options):
    r = spark.readStream.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def _values(n0: int, n1: int, partitions: int) -> list[dict]:
    return [{"value": b"v-%d" % i, "key": b"k-%d" % (i % 11), "partition": i % partitions} for i in range(n0, n1)]


def _run_available_now(spark, pipeline, topic, out, checkpoint, **options) -> list[int]:
    """One availableNow run into a parquet sink; returns the rows of each micro-batch."""
    q = (_stream(spark, pipeline, subscribe=topic, startingOffsets="earliest", **options)
         .selectExpr("partition", "offset", "cast(value as string) as value")
         .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    assert q.awaitTermination(120), "availableNow query did not finish"
    assert q.exception() is None
    return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]


def test_available_now_reads_everything_then_restart_reads_exactly_the_new_records(spark, pipeline, topic_name,
                                                                                   tmp_path):
    pipeline.create_topic(topic_name, 3, 3, {"min.insync.replicas": "2"})
    pipeline.produce(topic_name, _values(0, 600, 3))
    out, ck = tmp_path / "out", tmp_path / "checkpoint"

    first = _run_available_now(spark, pipeline, topic_name, out, ck)
    assert sum(first) == 600
    pipeline.produce(topic_name, _values(600, 850, 3))
    second = _run_available_now(spark, pipeline, topic_name, out, ck)
    assert sum(second) == 250

    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == 850
    assert len({(r.partition, r.offset) for r in rows}) == 850
    assert {r.value for r in rows} == {f"v-{i}" for i in range(850)}
    # offsets in the checkpoint are per topic-partition, in Spark's Kafka JSON
    last = sorted((ck / "offsets").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1)[-1]
    offsets = json.loads(last.read_text().strip().splitlines()[-1])
    assert offsets == {topic_name: {"0": 284, "1": 283, "2": 283}}
    # a third run with nothing new reads nothing
    assert sum(_run_available_now(spark, pipeline, topic_name, out, ck)) == 0


def test_max_offsets_per_trigger_caps_every_micro_batch(spark, pipeline, topic_name, tmp_path):
    pipeline.create_topic(topic_name, 2, 3)
    pipeline.produce(topic_name, _values(0, 250, 2))
    batches = _run_available_now(spark, pipeline, topic_name, tmp_path / "out", tmp_path / "ck",
                                 maxOffsetsPerTrigger="100")
    assert batches == [100, 100, 50]


def test_new_partitions_of_a_subscribed_topic_are_picked_up(spark, pipeline, topic_name):
    from confluent_kafka.admin import AdminClient, NewPartitions

    pipeline.create_topic(topic_name, 2, 3)
    pipeline.produce(topic_name, _values(0, 100, 2))
    name = topic_name.replace("-", "_")
    q = (_stream(spark, pipeline, subscribe=topic_name, startingOffsets="earliest")
         .selectExpr("partition", "cast(value as string) as value")
         .writeStream.format("memory").queryName(name).trigger(processingTime="500 milliseconds").start())
    try:
        wait_for(lambda name=name: spark.sql(f"select count(*) c from {name}").first().c == 100, 60,
                 what="first 100 rows")
        admin = AdminClient({"bootstrap.servers": pipeline.bootstrap})
        admin.create_partitions([NewPartitions(topic_name, 4)])[topic_name].result(timeout=60)
        pipeline.wait_ready(topic_name, 4)
        pipeline.produce(topic_name, _values(100, 200, 4))
        wait_for(lambda: spark.sql(f"select count(*) c from {name}").first().c >= 200, 60,
                 what="rows of new partitions")
        rows = spark.sql(f"select partition, value from {name}").collect()
        assert len(rows) == 200
        assert {r.partition for r in rows} == {0, 1, 2, 3}
        assert {r.value for r in rows} == {f"v-{i}" for i in range(200)}
    finally:
        q.stop()


def test_data_removed_by_retention_fails_or_is_skipped(spark, pipeline, topic_name):
    # small segments and a byte limit: the broker deletes old segments within seconds
    pipeline.create_topic(topic_name, 1, 3, {"segment.bytes": "4096", "retention.bytes": "8192"})
    pipeline.produce(topic_name, [{"value": b"x" * 200} for _ in range(300)],
                     **{"linger.ms": 0, "batch.num.messages": 5})

    def log_start() -> int:
        with ClusterClient(parse_bootstrap({"kafka.bootstrap.servers": pipeline.bootstrap})) as c:
            return c.list_offsets({TopicPartition(topic_name, 0): -2}, 10, 200)[TopicPartition(topic_name, 0)]

    start = wait_for(lambda: log_start() or None, 60, what="retention to delete the first segments")
    read = (spark.read.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap)
            .option("subscribe", topic_name).option("startingOffsets", json.dumps({topic_name: {"0": 0}})))
    with pytest.raises(Exception, match="failOnDataLoss"):
        read.load().count()
    rows = read.option("failOnDataLoss", "false").load().select("offset").collect()
    assert rows
    assert min(r.offset for r in rows) >= start
    assert max(r.offset for r in rows) == 299


def test_deleted_topic_fails_the_query_or_is_skipped(spark, pipeline, topic_name):
    from confluent_kafka.admin import AdminClient

    pipeline.create_topic(topic_name, 1, 3)
    pipeline.produce(topic_name, _values(0, 50, 1))
    queries = {}
    for fail in ("true", "false"):
        name = f"{topic_name.replace('-', '_')}_{fail}"
        queries[fail] = (_stream(spark, pipeline, subscribe=topic_name, failOnDataLoss=fail, startingOffsets="earliest")
                         .select("offset").writeStream.format("memory").queryName(name)
                         .trigger(processingTime="500 milliseconds").start())
        wait_for(lambda name=name: spark.sql(f"select count(*) c from {name}").first().c == 50, 60,
                 what=f"rows ({fail})")
    try:
        admin = AdminClient({"bootstrap.servers": pipeline.bootstrap})
        admin.delete_topics([topic_name])[topic_name].result(timeout=60)
        wait_for(lambda: topic_name not in pipeline.status()["topics"], 60, what="topic deletion")
        wait_for(lambda: not queries["true"].isActive, 60, what="the failOnDataLoss=true query to fail")
        assert "failOnDataLoss" in str(queries["true"].exception())
        time.sleep(2)
        assert queries["false"].isActive
        assert queries["false"].exception() is None
    finally:
        for q in queries.values():
            q.stop()


def test_min_offsets_per_trigger_holds_a_batch_back_until_enough_or_the_delay(pipeline, topic_name):
    """The source's answer to Spark's `latestOffset` call, on a real cluster (what Spark's
    engine then does with an unchanged offset is: run no batch)."""
    from praha.spark.options import parse_read_options
    from praha.spark.schema import kafka_schema
    from praha.spark.stream import PrahaStreamReader

    pipeline.create_topic(topic_name, 2, 3)
    opts = parse_read_options({"kafka.bootstrap.servers": pipeline.bootstrap, "subscribe": topic_name,
                               "startingOffsets": "earliest", "minOffsetsPerTrigger": "100",
                               "maxTriggerDelay": "4s"}, streaming=True)
    reader = PrahaStreamReader(opts, kafka_schema())
    limit = reader.getDefaultReadLimit()

    def total(offsets: dict) -> int:
        return sum(o for parts in offsets.values() for o in parts.values())

    try:
        start = reader.initialOffset()
        pipeline.produce(topic_name, _values(0, 10, 2))
        first_at = time.monotonic()
        first = reader.latestOffset(start, limit)
        assert total(first) == 10  # the first batch is never held back
        pipeline.produce(topic_name, _values(10, 30, 2))
        assert reader.latestOffset(first, limit) == first  # 20 new < 100: no batch yet
        released = wait_for(lambda: (o := reader.latestOffset(first, limit)) != first and o, 60, interval=0.2,
                            what="maxTriggerDelay to release the batch")
        # never before maxTriggerDelay after the last batch (a semantic bound, not a speed check)
        assert time.monotonic() - first_at >= 4.0
        assert total(released) == 30
        pipeline.produce(topic_name, _values(30, 140, 2))
        assert total(reader.latestOffset(released, limit)) == 140  # 110 new >= 100: at once
    finally:
        reader.stop()


def test_delete_records_between_planning_and_reading_fails_or_is_skipped(pipeline, topic_name):
    """A micro-batch planned over [0, 100) whose first 40 offsets DeleteRecords removes before
    its task reads them: Spark's outcome, data loss (or, failOnDataLoss=false, the rest)."""
    from confluent_kafka import TopicPartition as CkTopicPartition
    from confluent_kafka.admin import AdminClient

    from praha.spark.kafka import DataLossError
    from praha.spark.options import parse_read_options
    from praha.spark.schema import kafka_schema
    from praha.spark.stream import PrahaStreamReader

    pipeline.create_topic(topic_name, 1, 3)
    pipeline.produce(topic_name, _values(0, 100, 1))
    readers = {fail: PrahaStreamReader(parse_read_options(
        {"kafka.bootstrap.servers": pipeline.bootstrap, "subscribe": topic_name, "startingOffsets": "earliest",
         "failOnDataLoss": fail}, streaming=True), kafka_schema()) for fail in ("true", "false")}
    planned = {}
    for fail, r in readers.items():
        start = r.initialOffset()
        planned[fail] = r.partitions(start, r.latestOffset(start, r.getDefaultReadLimit()))
        assert [(p.start, p.end) for p in planned[fail]] == [(0, 100)]
    admin = AdminClient({"bootstrap.servers": pipeline.bootstrap})
    deleted = next(iter(admin.delete_records([CkTopicPartition(topic_name, 0, 40)]).values())).result(60)
    assert deleted.low_watermark == 40
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        for _ in readers["true"].read(planned["true"][0]):
            pass
    offsets = [o for b in readers["false"].read(planned["false"][0]) for o in b.column("offset").to_pylist()]
    assert offsets == list(range(40, 100))
    for r in readers.values():
        r.stop()


def test_micro_batches_read_and_write_with_the_python_workers_kept_clients(spark, pipeline, topic_name, tmp_path):
    """Spark reuses its Python workers, and their tasks borrow the worker's cluster client and
    producer (`praha.spark.pool`); the micro-batch's commit (a new Python process each time) does
    not check the topic again. So once a query runs, its micro-batches of two read and two write
    tasks open (next to) no connections: counted from the brokers' accepted connections between
    its third and its ninth micro-batch. Tasks that connected anew opened about ten per
    micro-batch; with the clients kept but the topic checked at every commit, one."""
    from praha.testing.cluster import scrape_metrics

    out_topic = f"{topic_name}-out"
    pipeline.create_topic(topic_name, 2, 3)
    pipeline.create_topic(out_topic, 2, 3)
    pipeline.produce(topic_name, _values(0, 600, 2))

    def accepted() -> float:
        return sum(scrape_metrics(b.actual_metrics_port)["praha_broker_connections_accepted"]
                   for b in pipeline.cluster.load().brokers.values())

    def batches_read() -> int:
        return sum(1 for p in q.recentProgress if p["numInputRows"])

    q = (_stream(spark, pipeline, subscribe=topic_name, startingOffsets="earliest", maxOffsetsPerTrigger="60")
         .selectExpr("key", "value")
         .writeStream.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap)
         .option("topic", out_topic).option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(processingTime="200 milliseconds").start())
    try:
        wait_for(lambda: batches_read() >= 3, 180, what="three micro-batches")
        before, first = accepted(), batches_read()
        wait_for(lambda: batches_read() >= 9, 180, what="nine micro-batches")
        opened, between = accepted() - before, batches_read() - first
        wait_for(lambda: batches_read() >= 10, 180, what="all ten micro-batches")
        assert q.exception() is None
    finally:
        q.stop()
    assert between >= 6
    # a Python worker Spark replaced makes its clients again: two to spare, not one per micro-batch
    assert opened <= 2, f"{opened:.0f} connections opened over {between} micro-batches"
    assert len(pipeline.values(out_topic, 600)) == 600
