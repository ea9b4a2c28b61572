"""The praha sink with `exactlyOnce=true` (issue 13): each task writes in a transaction with
a marker of its batch, so a task retried after it committed, or a micro-batch run again
after the driver failed to record it, writes nothing twice. Checked with read_committed
reads (Spark's own, through `kafka.isolation.level`), and with read_uncommitted reads that
show what the transactions hid."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def _read(spark, pipeline, topic: str, committed: bool):
    return [r.value.decode() for r in (
        spark.read.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap).option("subscribe", topic)
        .option("kafka.isolation.level", "read_committed" if committed else "read_uncommitted").load().collect())]


def _write(df, pipeline, topic: str, **options: str) -> None:
    w = df.write.format("praha").mode("append").option("kafka.bootstrap.servers", pipeline.bootstrap) \
        .option("topic", topic).option("exactlyOnce", "true")
    for k, v in options.items():
        w = w.option(k, v)
    w.save()


@pytest.mark.parametrize("failure", ["beforeCommit", "afterCommit"])
def test_batch_write_retried_tasks_write_each_row_once(spark, pipeline, topic_name, failure):
    pipeline.create_topic(topic_name, 3, 3, {"min.insync.replicas": "2"})
    want = sorted(f"row-{i}" for i in range(600))
    df = spark.createDataFrame([(v,) for v in want], "value string").repartition(3)
    # every task's first attempt fails: before its commit (its transaction is aborted by the
    # retry) or after it (the retry finds its marker and writes nothing)
    _write(df, pipeline, topic_name, **{"praha.test.failFirstAttempt": failure})
    assert sorted(_read(spark, pipeline, topic_name, committed=True)) == want
    uncommitted = _read(spark, pipeline, topic_name, committed=False)
    if failure == "beforeCommit":  # the aborted attempts' records are in the log, hidden by read_committed
        assert len(uncommitted) > len(want)
        assert set(uncommitted) == set(want)
    else:  # the retries wrote nothing at all
        assert sorted(uncommitted) == want


def test_streaming_query_replayed_after_a_failed_commit_writes_each_record_once(spark, pipeline, topic_name, tmp_path):
    src, dst = f"{topic_name}-in", f"{topic_name}-out"
    pipeline.create_topic(src, 2, 3)
    pipeline.create_topic(dst, 2, 3, {"min.insync.replicas": "2"})
    pipeline.produce(src, [{"value": b"m-%d" % i, "key": b"k%d" % (i % 5)} for i in range(400)])
    checkpoint = str(tmp_path / "ck")

    def start(**hooks: str):
        w = (spark.readStream.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap)
             .option("subscribe", src).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "100")
             .load().selectExpr("key", "upper(cast(value as string)) as value")
             .writeStream.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap).option("topic", dst)
             .option("exactlyOnce", "true").option("checkpointLocation", checkpoint).trigger(availableNow=True))
        for k, v in hooks.items():
            w = w.option(k, v)
        return w.start()

    # first run: task attempts fail after committing; the driver then fails to record batch 1
    # (its tasks' transactions are committed), as if it crashed there
    q = start(**{"praha.test.failFirstAttempt": "afterCommit", "praha.test.failCommitOfBatch": "1"})
    with pytest.raises(Exception, match="test hook"):
        q.awaitTermination(180)
    assert q.exception() is not None
    # restart from the checkpoint: Spark runs batch 1 again, then the rest
    q = start()
    assert q.awaitTermination(180)
    assert q.exception() is None
    want = sorted(f"M-{i}" for i in range(400))
    assert sorted(_read(spark, pipeline, dst, committed=True)) == want
    assert sorted(_read(spark, pipeline, dst, committed=False)) == want  # nothing was written twice
