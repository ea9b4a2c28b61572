"""A partition leader is killed (SIGKILL) in the middle of a batch read and of a streaming
query: the read follows the new leader and the results are complete, with no row lost
and none repeated. The killed broker is restarted and ISRs are full again afterwards."""
from __future__ import annotations

import json
import threading
import time

import pytest

from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration


def _restore(pipeline, broker: int, topic: str, partitions: int) -> None:
    pipeline.restart(broker)
    pipeline.wait_ready(topic, partitions, full_isr=True, timeout=90)


def test_leader_killed_in_the_middle_of_a_batch_read(spark, pipeline, topic_name):
    pipeline.create_topic(topic_name, 2, 3, {"min.insync.replicas": "2"})
    n = 20_000
    pipeline.produce(topic_name, [{"value": b"r-%06d" % i, "partition": i % 2} for i in range(n)],
                     **{"batch.num.messages": 50})
    victim = pipeline.leader(topic_name, 0)
    # explicit offsets: planning needs no answer from the leader; 16 tasks read partition 0
    df = (spark.read.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap)
          .option("subscribe", topic_name).option("minPartitions", "18")
          .option("kafka.max.partition.fetch.bytes", "4096")
          .option("startingOffsets", json.dumps({topic_name: {"0": 0, "1": 0}}))
          .option("endingOffsets", json.dumps({topic_name: {"0": n // 2, "1": n // 2}}))
          .load().selectExpr("partition", "offset", "cast(value as string) as value"))
    sc = spark.sparkContext
    group = f"kill-{topic_name}"
    result: dict = {}

    def run() -> None:
        sc.setJobGroup(group, "batch read with a leader kill")
        try:
            result["rows"] = df.collect()
        except Exception as e:  # noqa: BLE001 - reported below
            result["error"] = e

    t = threading.Thread(target=run)
    t.start()
    tracker = sc.statusTracker()

    def first_task_done():
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for sid in info.stageIds if info else []:
                st = tracker.getStageInfo(sid)
                if st and st.numCompletedTasks >= 1:
                    return st
        return None

    stage = wait_for(first_task_done, 120, interval=0.02, what="the first read task to finish")
    pipeline.cluster.kill_broker(victim)
    stage = tracker.getStageInfo(stage.stageId)
    assert stage.numCompletedTasks < stage.numTasks, "the read finished before the leader was killed"
    t.join(180)
    try:
        assert not t.is_alive(), "the read did not finish"
        assert "error" not in result, result.get("error")
        rows = result["rows"]
        assert len(rows) == n
        assert len({(r.partition, r.offset) for r in rows}) == n
        assert {r.value for r in rows} == {f"r-{i:06d}" for i in range(n)}
        assert pipeline.leader(topic_name, 0) != victim
    finally:
        _restore(pipeline, victim, topic_name, 2)


def test_leader_killed_in_the_middle_of_a_streaming_query(spark, pipeline, topic_name, tmp_path):
    pipeline.create_topic(topic_name, 3, 3, {"min.insync.replicas": "2"})
    out, ck = tmp_path / "out", tmp_path / "ck"
    total = 3000
    produced = threading.Event()

    def producer() -> None:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": pipeline.bootstrap, "acks": "all", "linger.ms": 5})
        for i in range(total):
            p.produce(topic_name, value=b"s-%05d" % i, key=b"k%d" % (i % 13))
            p.poll(0)
            time.sleep(0.004)
        assert p.flush(120) == 0
        produced.set()

    q = (spark.readStream.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap)
         .option("subscribe", topic_name).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "300")
         .load().selectExpr("partition", "offset", "cast(value as string) as value")
         .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ck))
         .trigger(processingTime="300 milliseconds").start())
    pt = threading.Thread(target=producer)
    pt.start()
    victim = -1
    try:
        wait_for(lambda: sum(p["numInputRows"] for p in q.recentProgress) >= 600, 120,
                 what="the query to read 600 rows")
        victim = pipeline.leader(topic_name, 0)
        pipeline.cluster.kill_broker(victim)
        pt.join(180)
        assert produced.is_set(), "the producer did not finish"
        # the topic's final content, read in batch; the stream must produce exactly this
        topic = (spark.read.format("praha").option("kafka.bootstrap.servers", pipeline.bootstrap)
                 .option("subscribe", topic_name).load()
                 .selectExpr("partition", "offset", "cast(value as string) as value").collect())
        expect = {(r.partition, r.offset, r.value) for r in topic}
        assert {v for _, _, v in expect} >= {f"s-{i:05d}" for i in range(total)}
        wait_for(lambda: sum(p["numInputRows"] for p in q.recentProgress) >= len(topic), 120,
                 what="the query to catch up")
        assert q.isActive
        assert q.exception() is None
    finally:
        q.stop()
        if victim >= 0:
            _restore(pipeline, victim, topic_name, 3)
    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == len(expect)
    assert {(r.partition, r.offset, r.value) for r in rows} == expect
