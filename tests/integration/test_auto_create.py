"""Auto topic creation (Kafka's `auto.create.topics.enable`, default true): a producer to an
unknown topic creates it with `num.partitions` and `default.replication.factor`; a broker with
it off answers UNKNOWN_TOPIC_OR_PARTITION and creates nothing; internal and invalid names
are never created. One 2-broker cluster: broker 1 has it off, broker 2 the default; then broker 1
is restarted with it on (a static setting, as in Kafka), because librdkafka asks any broker it
knows for a topic's metadata: with one broker off, a producer whose requests all went there
never saw its topic created (a CI failure)."""
from __future__ import annotations

import logging

import pytest
from confluent_kafka import Producer
from kafka.protocol.metadata import MetadataRequest

from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration


def metadata(port: int, topic: str, allow: bool = True, version: int = 9):
    with BrokerConnection("127.0.0.1", port) as conn:
        r = conn.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic, topic_id=None)],
                                      allow_auto_topic_creation=allow, include_cluster_authorized_operations=False,
                                      include_topic_authorized_operations=False), version)
    return r.topics[0]


def test_auto_creation_on_and_off(make_cluster, zk_store):
    cluster = make_cluster(2, overrides={"num.partitions": "3", "default.replication.factor": "2"},
                           per_broker={1: {"auto.create.topics.enable": "false"}})
    brokers = cluster.load().brokers
    off, on = brokers[1].port, brokers[2].port

    assert metadata(off, "nope").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert metadata(on, "nope", allow=False).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert metadata(on, "__transaction_state").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert metadata(on, "bad name!").error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert zk_store.get_all_topics() == []

    cluster.stop_broker(1)
    state = cluster.load()
    state.brokers[1].overrides["auto.create.topics.enable"] = "true"
    cluster.save(state)
    cluster.start_broker(1)
    assert zk_store.get_all_topics() == []  # a restart creates nothing

    trace = _Trace()  # librdkafka's own account of the topic, printed only if delivery fails
    p = Producer({"bootstrap.servers": f"127.0.0.1:{on}", "acks": "all", "debug": "topic,metadata,msg"},
                 logger=trace.logger)
    delivered = []
    p.produce("made-by-a-producer", value=b"hello", on_delivery=lambda err, msg: delivered.append(err))
    assert p.flush(30) == 0, trace.tail()
    assert delivered == [None], trace.tail()
    parts = wait_for(lambda: metadata(off, "made-by-a-producer").partitions, 30, what="the new topic's metadata")
    assert len(parts) == 3
    assert all(len(part.replica_nodes) == 2 for part in parts)
    assert sorted(zk_store.get_all_topics()) == ["made-by-a-producer"]


class _Trace(logging.Handler):
    """Keeps librdkafka's debug lines in memory (a failing delivery is explained by them)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.logger = logging.getLogger(f"rdkafka-trace-{id(self)}")
        self.logger.propagate = False
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.created:.3f} {record.getMessage()}")

    def tail(self, n: int = 120) -> str:
        return "librdkafka's trace (last lines):\n" + "\n".join(self.lines[-n:])
