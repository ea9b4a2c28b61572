"""DeleteRecords (issue 12, part) on a 3-broker RF 3 topic: the log start moves on the leader
and on every follower (their fetches carry it), ListOffsets earliest and consumers see it,
the answer's low watermark is the lowest log start of the in-sync replicas, offsets above
the high watermark are OFFSET_OUT_OF_RANGE and change nothing; kafka-python's and
confluent-kafka's admin clients."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer import ListOffsetsRequest

from praha.protocol.client import BrokerConnection
from praha.testing.cluster import bootstrap, wait_for

pytestmark = pytest.mark.integration


def test_delete_records_moves_every_replicas_log_start(make_cluster):
    cluster = make_cluster(3)
    brokers = cluster.load().brokers
    bs = bootstrap(cluster)
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("dr", 2, 3)])["dr"].result(30)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(100):
        p.produce("dr", value=str(i).encode(), partition=i % 2)
    assert p.flush(30) == 0

    got = admin.delete_records([CkTopicPartition("dr", 0, 30)])
    low = next(iter(got.values())).result(30)
    assert low.low_watermark == 30  # every in-sync replica is there before the answer

    c = Consumer({"bootstrap.servers": bs, "group.id": "dr-reader", "auto.offset.reset": "earliest"})
    try:
        assert c.get_watermark_offsets(CkTopicPartition("dr", 0), timeout=10) == (30, 50)
        c.assign([CkTopicPartition("dr", 0)])
        first = wait_for(lambda: (m := c.poll(0.5)) is not None and m.error() is None and m, 30, what="a record")
        assert first.offset() == 30
    finally:
        c.close()

    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpTopicPartition
    kp = KafkaAdminClient(bootstrap_servers=bs)
    try:
        dirs = kp.describe_log_dirs({"dr": [0, 1]})
        assert sorted(d["broker"] for d in dirs) == [1, 2, 3]
        for d in dirs:
            (ld,) = d["log_dirs"]
            assert ld["error_code"] == 0
            assert ld["log_dir"].endswith(f"broker-{d['broker']}/data")
            assert 0 < ld["usable_bytes"] <= ld["total_bytes"]
            (t,) = ld["topics"]
            sizes = {p["partition_index"]: (p["partition_size"], p["offset_lag"]) for p in t["partitions"]}
            assert t["name"] == "dr"
            assert sizes.keys() == {0, 1}
            assert all(sz > 0 and lag == 0 for sz, lag in sizes.values())
        out = kp.delete_records({KpTopicPartition("dr", 1): 10})
        assert out[KpTopicPartition("dr", 1)]["low_watermark"] == 10
        with pytest.raises(Exception, match="OffsetOutOfRange"):
            kp.delete_records({KpTopicPartition("dr", 1): 51})
    finally:
        kp.close()
    with pytest.raises(Exception, match="OFFSET_OUT_OF_RANGE|out of range"):
        next(iter(admin.delete_records([CkTopicPartition("dr", 0, 1000)]).values())).result(30)

    # every replica's own log starts there too (Kafka's debugging replica id reads a follower's log)
    def own_log_start(port: int) -> int:
        T = ListOffsetsRequest.ListOffsetsTopic
        req = ListOffsetsRequest(replica_id=-2, isolation_level=0, topics=[T(name="dr", partitions=[
            T.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-2)])])
        with BrokerConnection("127.0.0.1", port) as conn:
            part = conn.send(req, 4).topics[0].partitions[0]
        assert part.error_code == 0, part
        return part.offset
    assert [own_log_start(b.port) for b in brokers.values()] == [30, 30, 30]


def test_delete_records_log_dirs_and_describe_producers_tools(make_cluster, cli, tmp_path):
    """`praha delete-records` and `praha log-dirs` as kafka-delete-records and kafka-log-dirs
    print them, and DescribeProducers (kafka-python's describe_producers) for the idempotent
    producer that wrote the records."""
    import json

    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpTopicPartition

    cluster = make_cluster(2, overrides={"offsets.topic.replication.factor": "1"})
    bs = bootstrap(cluster)
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("tools", 2, 2)])["tools"].result(30)
    p = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True})
    for i in range(40):
        p.produce("tools", value=b"%d" % i, partition=i % 2)
    assert p.flush(30) == 0

    plan = tmp_path / "offsets.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "tools", "partition": 0, "offset": 5},
                                               {"topic": "tools", "partition": 1, "offset": -1},
                                               {"topic": "nope", "partition": 0, "offset": 1}], "version": 1}))
    rc, out, _ = cli("delete-records", "--offset-json-file", plan, "--bootstrap-server", bs.split(",")[0])
    assert rc == 1, out  # the unknown topic fails, the others are done
    assert out.splitlines() == ["Executing records delete operation", "Records delete operation completed:",
                                "partition: nope-0\terror: UNKNOWN_TOPIC_OR_PARTITION",
                                "partition: tools-0\tlow_watermark: 5", "partition: tools-1\tlow_watermark: 20"]
    plan.write_text(json.dumps({"partitions": [{"topic": "tools", "partition": 0, "offset": 999}], "version": 1}))
    rc, out, _ = cli("delete-records", "--offset-json-file", plan, "--bootstrap-server", bs.split(",")[0])
    assert rc == 1
    assert "partition: tools-0\terror: OFFSET_OUT_OF_RANGE" in out
    plan.write_text('{"partitions": [{"topic": "tools", "partition": 0}], "version": 1}')
    rc, _, err = cli("delete-records", "--offset-json-file", plan, "--bootstrap-server", bs.split(",")[0])
    assert rc == 1
    assert "partitions[0]: expected topic (string), partition and offset (integers)" in err

    rc, out, err = cli("log-dirs", "--describe", "--bootstrap-server", bs.split(",")[0], "--topic-list", "tools")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[:2] == ["Querying brokers for log directories information",
                         "Received log directory information from brokers 1,2"]
    doc = json.loads(lines[2])
    assert doc["version"] == 1
    assert [b["broker"] for b in doc["brokers"]] == [1, 2]
    for b in doc["brokers"]:
        (d,) = b["logDirs"]
        assert d["error"] is None
        assert d["logDir"].endswith(f"broker-{b['broker']}/data")
        assert [x["partition"] for x in d["partitions"]] == ["tools-0", "tools-1"]
        assert all(x["size"] > 0 and x["offsetLag"] == 0 and x["isFuture"] is False for x in d["partitions"])
    rc, _, err = cli("log-dirs", "--describe", "--bootstrap-server", bs.split(",")[0], "--broker-list", "1,7")
    assert rc == 1
    assert "broker 7: broker 7 is not alive" in err

    kp = KafkaAdminClient(bootstrap_servers=bs)
    try:
        states = kp.describe_producers([KpTopicPartition("tools", 0), KpTopicPartition("tools", 1)])
        assert len(states) == 2
        for tp, state in states.items():
            (producer,) = state.active_producers  # the one idempotent producer, its 20th record last
            assert producer.producer_id >= 0, (tp, producer)
            assert producer.last_sequence == 19, (tp, producer)
            assert (producer.coordinator_epoch, producer.current_transaction_start_offset) == (-1, -1)
    finally:
        kp.close()
