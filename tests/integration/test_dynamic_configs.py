"""`praha configs` (kafka-configs): topic and broker configs changed while the cluster
runs take effect at once (brokers watch `/config/changes`), and bad input changes nothing."""
from __future__ import annotations

import pytest
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.common import ReplicaAssignment, TopicAssignment
from praha.common import TopicPartition as TP
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.testing.cluster import scrape_metrics, wait_for
from praha.zk import znodes as zn

pytestmark = pytest.mark.integration


def produce_code(port: int, tp: TP) -> int:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    b.append(0, timestamp=1000, key=None, value=b"x", headers=[])
    with BrokerConnection("127.0.0.1", port, timeout=10) as conn:
        resp = conn.send(ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(name=tp.topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=tp.partition,
                                                                     records=bytes(b.build()))])]), 9)
    return resp.responses[0].partition_responses[0].error_code


def test_configs_take_effect_while_running_and_bad_input_changes_nothing(make_cluster, zk_store, cli):
    cluster = make_cluster(1)
    d = ["--dir", cluster.root]
    port = cluster.load().brokers[1].port
    tp = TP("cfg", 0)
    zk_store.create_topic(tp.topic, TopicAssignment({0: ReplicaAssignment((1,))}), {"retention.ms": "600000"})
    wait_for(lambda: produce_code(port, tp) == ErrorCode.NONE, 30, what="topic writable")

    rc, out, _ = cli("configs", "--entity-type", "topics", "--entity-name", "cfg", "--describe", *d)
    assert rc == 0
    assert out == "Dynamic configs for topic cfg are:\n  retention.ms=600000\n"

    # max.message.bytes below one batch: the next produce is refused at once, no LeaderAndIsr needed
    # (min.insync.replicas=2 served here before issue 15; above the replication factor it is now refused)
    rc, out, err = cli("configs", "--entity-type", "topics", "--entity-name", "cfg", "--alter",
                       "--add-config", "max.message.bytes=10", *d)
    assert rc == 0, err
    assert out == "Completed updating config for topic cfg.\n", err
    wait_for(lambda: produce_code(port, tp) == ErrorCode.MESSAGE_TOO_LARGE, 30, what="new max.message.bytes")
    rc, _, err = cli("configs", "--entity-type", "topics", "--entity-name", "cfg", "--alter",
                     "--delete-config", "max.message.bytes", *d)
    assert rc == 0, err
    wait_for(lambda: produce_code(port, tp) == ErrorCode.NONE, 30, what="max.message.bytes removed")
    rc, _, err = cli("configs", "--entity-type", "topics", "--entity-name", "cfg", "--alter",
                     "--add-config", "min.insync.replicas=2", *d)
    assert rc == 1, err
    assert "larger than the replication factor 1" in err, err
    assert zk_store.get_topic_configs(["cfg"])[0]["cfg"] == {"retention.ms": "600000"}

    # broker default: the follower throttle rate reaches the running broker
    rc, _, err = cli("configs", "--entity-type", "brokers", "--entity-default", "--alter",
                     "--add-config", "follower.replication.throttled.rate=12345", *d)
    assert rc == 0, err
    metrics_port = cluster.load().brokers[1].actual_metrics_port
    wait_for(lambda: scrape_metrics(metrics_port).get("praha_broker_follower_throttle_rate") == 12345, 30,
             what="throttle rate applied")
    rc, out, _ = cli("configs", "--entity-type", "brokers", "--entity-default", "--describe", *d)
    assert out == "Dynamic configs for the default of every broker are:\n  follower.replication.throttled.rate=12345\n"

    def state():
        return (zk_store.get_children(zn.CONFIG_CHANGES_PATH), zk_store.get_topic_configs(["cfg"])[0],
                zk_store.get_data(zn.config_broker_path("<default>"))[0])

    before = state()
    refusals = [
        (["topics", "--entity-name", "cfg", "--alter", "--add-config", "no.such.config=1"], "unknown topic config"),
        (["topics", "--entity-name", "cfg", "--alter", "--add-config", "retention.ms=soon"], "expected a number"),
        (["topics", "--entity-name", "cfg", "--alter", "--add-config", "retention.ms"], "expected key=value"),
        (["topics", "--entity-name", "cfg", "--alter", "--delete-config", "segment.ms"], "not set"),
        (["topics", "--entity-name", "cfg", "--alter"], "nothing to alter"),
        (["topics", "--entity-name", "nope", "--alter", "--add-config", "retention.ms=1"], "does not exist"),
        (["topics", "--entity-default", "--describe"], "--entity-default is for"),
        (["brokers", "--entity-name", "1", "--alter", "--add-config", "num.partitions=3"],
         "Cannot update these configs dynamically"),
        (["brokers", "--entity-name", "x", "--describe"], "non-negative id"),
        (["brokers", "--entity-name", "1", "--alter", "--add-config", "follower.replication.throttled.rate=-1"],
         "positive number"),
    ]
    for args, message in refusals:
        rc, _, err = cli("configs", "--entity-type", *args, *d)
        assert rc == 1, (args, err)
        assert message in err, (args, err)
    assert state() == before
