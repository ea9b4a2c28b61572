"""Forged controller requests from a plain client connection change nothing (issue 15 §1).

A broker believes a LeaderAndIsr, UpdateMetadata or StopReplica only from the controller
ZooKeeper names (its id and epoch); the controller believes a ControlledShutdown only with
the broker epoch registered for that broker. Each case sends the forgery over a raw
socket, expects Kafka's refusal code, and then checks with real clients that the data
and the leadership are intact and the real controller is still obeyed.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient

from praha.admin.status import cluster_status
from praha.common import BrokerInfo, EndPoint, TopicPartition
from praha.errors import ErrorCode
from praha.protocol import controller_wire as wire
from praha.protocol.client import BrokerConnection
from praha.protocol.controller_apis import ControlledShutdownRequest
from praha.protocol.controller_requests import (
    LeaderAndIsrRequestData,
    PartitionLeaderState,
    StopReplicaPartition,
    StopReplicaRequestData,
    UpdateMetadataRequestData,
)
from praha.testing.cluster import bootstrap, wait_for
from praha.topic_rules import validate_topic_name
from praha.zk.admin_zk import create_topic
from praha.zk.store import ZkStore

pytestmark = pytest.mark.integration

TOPIC, RECORDS = "precious", 230
FORGER = 99  # a controller id no broker has
INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1


@pytest.fixture(scope="module")
def env(module_cluster):
    c = module_cluster(3)
    create_topic(c.store, TOPIC, 1, 3, {"min.insync.replicas": "2"})
    wait_for(lambda: _leader(c.zookeeper, c.store, TOPIC) >= 0, 30, what="a leader")
    _produce(c.bootstrap, TOPIC, RECORDS)
    return c.cluster, c.store, c.zookeeper


def _leader(connect: str, store: ZkStore, topic: str, partition: int = 0) -> int:
    parts = cluster_status(connect, store=store)["topics"].get(topic, {}).get("partitions", [])
    return next((p["leader"] for p in parts if p["partition"] == partition), -1)


def _produce(bs: str, topic: str, n: int, tag: str = "r") -> None:
    acked: list[int] = []
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 2})
    for i in range(n):
        p.produce(topic, f"{tag}{i}".encode(), on_delivery=lambda err, _m: acked.append(0 if err is None else 1))
    p.flush(30)
    assert acked.count(0) == n, f"{acked.count(1)} of {n} produces failed"


def _consume_all(bs: str, topic: str, expect: int, timeout: float = 30) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bs, "group.id": "forged-check", "enable.auto.commit": False})
    try:
        c.assign([CTP(topic, 0, OFFSET_BEGINNING)])
        out: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(out) < expect and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                out.append(m.value())
        return out
    finally:
        c.close()


def _send(port: int, request: object) -> int:
    obj, version = wire.request_to_wire(request)  # type: ignore[arg-type]
    with BrokerConnection("127.0.0.1", port, timeout=10) as conn:
        return int(wire.response_from_wire(conn.send(obj, version)).error_code)


def _epochs(store: ZkStore) -> tuple[int, int]:
    epoch = store.get_controller_epoch()
    cid = store.get_controller_id()
    assert epoch is not None
    assert cid is not None
    return cid, epoch[0]


def _intact(env) -> None:
    """Every acknowledged record is still readable and the partition still takes writes."""
    cluster, store, connect = env
    bs = bootstrap(cluster)
    got = _consume_all(bs, TOPIC, RECORDS)
    assert [v for v in got if v.startswith(b"r")][:RECORDS] == [f"r{i}".encode() for i in range(RECORDS)]
    _produce(bs, TOPIC, 3, tag="after")


def test_forged_stop_replica_with_delete_destroys_nothing(env):
    cluster, store, connect = env
    _real_id, epoch = _epochs(store)
    tp = TopicPartition(TOPIC, 0)
    for b in cluster.load().brokers.values():
        for forged_epoch in (epoch, epoch + 1):
            req = StopReplicaRequestData(FORGER, forged_epoch, -1, [StopReplicaPartition(tp, INT32_MAX - 1, True)])
            assert _send(b.port, req) == ErrorCode.STALE_CONTROLLER_EPOCH
    _intact(env)


def test_forged_leader_and_isr_cannot_demote_the_leader(env):
    cluster, store, connect = env
    _real_id, epoch = _epochs(store)
    leader = _leader(connect, store, TOPIC)
    states, _bad = store.get_partition_states([TopicPartition(TOPIC, 0)])
    leader_epoch = states[TopicPartition(TOPIC, 0)].leader_and_isr.leader_epoch
    others = tuple(b for b in (1, 2, 3) if b != leader)
    demote = PartitionLeaderState(TopicPartition(TOPIC, 0), epoch, others[0], leader_epoch + 1,
                                  (others[0], leader), 0, (others[0], leader, others[1]))
    port = cluster.load().brokers[leader].port
    assert _send(port, LeaderAndIsrRequestData(FORGER, epoch, -1, [demote], [])) == ErrorCode.STALE_CONTROLLER_EPOCH
    assert _leader(connect, store, TOPIC) == leader
    _intact(env)


def test_absurd_controller_epoch_does_not_lock_out_the_real_controller(env):
    cluster, store, connect = env
    for b in cluster.load().brokers.values():
        assert _send(b.port, LeaderAndIsrRequestData(FORGER, INT32_MAX, -1, [], [])) == ErrorCode.STALE_CONTROLLER_EPOCH
    # the real controller is still obeyed: a topic created now gets leaders and takes writes
    name = "created-after-forgery"
    validate_topic_name(name)
    create_topic(store, name, 3, 3, {})
    wait_for(lambda: all(_leader(connect, store, name, p) >= 0 for p in range(3)), 30, what="leaders of the new topic")
    _produce(bootstrap(cluster), name, 30)


def test_forged_update_metadata_cannot_redirect_clients_or_fetchers(env):
    cluster, store, connect = env
    real_id, epoch = _epochs(store)
    brokers = cluster.load().brokers
    bogus = [BrokerInfo(i, (EndPoint("127.0.0.1", 1),)) for i in brokers]
    for b in brokers.values():
        # claiming another controller id, or the real controller's id and epoch with endpoints
        # that are not the brokers' registrations: both refused
        assert _send(b.port,
                     UpdateMetadataRequestData(FORGER, epoch, -1, [], bogus)) == ErrorCode.STALE_CONTROLLER_EPOCH
        assert _send(b.port,
                     UpdateMetadataRequestData(real_id, epoch, -1, [], bogus)) == ErrorCode.STALE_CONTROLLER_EPOCH
    for b in brokers.values():
        md = AdminClient({"bootstrap.servers": f"127.0.0.1:{b.port}"}).list_topics(timeout=10)
        assert {bm.id: bm.port for bm in md.brokers.values()} == {i: x.port for i, x in brokers.items()}
    _intact(env)


def test_controlled_shutdown_with_an_unregistered_broker_epoch_is_refused(env):
    cluster, store, connect = env
    real_id, _epoch = _epochs(store)
    victim = next(b for b in (1, 2, 3) if b != real_id)
    before = cluster_status(connect, store=store)["topics"][TOPIC]["partitions"][0]
    port = cluster.load().brokers[real_id].port
    with BrokerConnection("127.0.0.1", port, timeout=10) as conn:
        resp = conn.send(ControlledShutdownRequest(broker_id=victim, broker_epoch=INT64_MAX), 3)
    assert resp.error_code == ErrorCode.STALE_BROKER_EPOCH
    after = cluster_status(connect, store=store)["topics"][TOPIC]["partitions"][0]
    assert (after["leader"], sorted(after["isr"])) == (before["leader"], sorted(before["isr"]))
    _intact(env)
