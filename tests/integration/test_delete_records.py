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
from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration


def test_delete_records_moves_every_replicas_log_start(make_cluster):
    cluster = make_cluster(3)
    brokers = cluster.load().brokers
    bs = ",".join(f"127.0.0.1:{b.port}" for b in brokers.values())
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
            assert ld["error_code"] == 0 and ld["log_dir"].endswith(f"broker-{d['broker']}/data")
            assert 0 < ld["usable_bytes"] <= ld["total_bytes"]
            (t,) = ld["topics"]
            sizes = {p["partition_index"]: (p["partition_size"], p["offset_lag"]) for p in t["partitions"]}
            assert t["name"] == "dr" and sizes.keys() == {0, 1} and all(sz > 0 and lag == 0 for sz, lag in sizes.values())
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
