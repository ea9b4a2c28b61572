"""Catalogue: garbage or wrong-version JSON in every znode kind a praha cluster reads.

Expected, as Kafka: the controller deletes what it owns and can do without (/controller,
admin requests, ISR notifications, deletion markers of unknown topics), repairs what it
must have (/controller_epoch), and ignores what it cannot interpret (a broker
registration, a topic, a partition state, a topic config) while reporting it in
`cluster status` — never electing from, or serving, what it could not read. After every
case the rest of the cluster is healthy: one controller, every broker registered, the
untouched topic fully led.
"""
from __future__ import annotations

import json

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as CTP
from misuse_env import create_and_wait

from praha.admin.client_status import fetch_metadata
from praha.admin.status import cluster_status
from praha.common import TopicPartition
from praha.testing.cluster import bootstrap as bootstrap_servers
from praha.testing.cluster import wait_for
from praha.zk import znodes as zn

pytestmark = pytest.mark.integration

GARBAGE = [b"\x00\xffnot json", b"{", b"[]", b"null", b"12"]
FEW = [b"\x00\xffnot json", b"[]"]  # where each case costs a controller failover


@pytest.fixture(scope="module")
def env(misuse_cluster):
    return misuse_cluster


def status(env) -> dict:
    return cluster_status(env.connect, store=env.store)


def healthy(env) -> bool:
    st = status(env)
    live = {b["id"] for b in st["brokers"]}
    parts = st["topics"]["orders"]["partitions"]
    return (live == {1, 2, 3} and st["controller"]["id"] in live
            and all(p["leader"] in live and set(p["isr"]) == set(p["replicas"]) for p in parts))


def wait_healthy(env) -> None:
    wait_for(lambda: healthy(env), 60, what="a healthy cluster")
    for b in env.cluster.load().brokers.values():
        assert env.cluster.broker_running(b), f"broker {b.id} died"


def problems(env) -> list[str]:
    return status(env).get("problems", [])


def restart_controller(env) -> int:
    """SIGKILL the controller's broker, restart it, wait for a new controller: a fresh failover."""
    old_epoch = status(env)["controller"]["epoch"]
    cid = env.store.get_controller_id()
    env.cluster.kill_broker(cid)
    env.cluster.start_broker(cid, wait=True)
    wait_for(lambda: status(env)["controller"]["epoch"] > old_epoch, 60, what="a new controller epoch")
    wait_healthy(env)
    return cid


@pytest.mark.parametrize("data", [g for g in GARBAGE if g != b"12"] + [
    json.dumps({"version": 1}).encode(), json.dumps({"version": 1, "brokerid": "one"}).encode()])
def test_controller_znode(env, data):
    """(A bare integer is Kafka's legacy format of /controller, not garbage: not in this list.)"""
    epoch = status(env)["controller"]["epoch"]
    env.store.client.set(zn.CONTROLLER_PATH, data)
    wait_for(lambda: status(env)["controller"]["epoch"] > epoch, 30, what="a re-election")
    wait_healthy(env)


@pytest.mark.parametrize("data", [b"banana", b"", b"-3", b"0"])
def test_controller_epoch_znode_is_repaired_at_the_next_election(env, data):
    epoch = status(env)["controller"]["epoch"]
    env.store.client.set(zn.CONTROLLER_EPOCH_PATH, data)
    if data in (b"banana", b""):
        assert any("controller_epoch" in p for p in problems(env))
    cid = env.store.get_controller_id()
    env.cluster.kill_broker(cid)
    try:
        # above every epoch used before: the highest a live broker has seen, or the znode's data
        # version when that is higher (every earlier write here bumped it)
        wait_for(lambda: status(env)["controller"]["epoch"] > epoch, 60,
                 what="an election that repairs the epoch from what brokers have seen")
    finally:
        if status(env)["controller"]["epoch"] <= epoch:  # wedged: put a usable epoch back, re-elect
            env.store.client.set(zn.CONTROLLER_EPOCH_PATH, str(epoch + 10).encode())
            if env.store.client.exists(zn.CONTROLLER_PATH):
                env.store.client.delete(zn.CONTROLLER_PATH)
        env.cluster.start_broker(cid, wait=True)
        wait_healthy(env)


@pytest.mark.parametrize("data", FEW + [json.dumps({"version": 99, "host": "x", "port": 1}).encode(),
                                             json.dumps({"version": 4, "host": "x"}).encode()])
def test_broker_registration(env, data):
    env.store.client.create(zn.broker_path(77), data, ephemeral=True)
    try:
        assert any("/brokers/ids/77" in p for p in problems(env))
        restart_controller(env)  # a failover reads every registration
        assert 77 not in {b["id"] for b in status(env)["brokers"]}
    finally:
        env.store.client.delete(zn.broker_path(77))
    wait_healthy(env)


@pytest.mark.parametrize("data", FEW + [
    json.dumps({"version": 99, "partitions": {"0": [1]}}).encode(),
    json.dumps({"version": 2, "partitions": {"0": "1,2"}}).encode(),
    json.dumps({"version": 2, "partitions": {"x": [1]}}).encode(),
])
def test_topic_assignment(env, data):
    env.store.client.create(zn.topic_path("broken"), data)
    try:
        assert any("/brokers/topics/broken" in p for p in problems(env))
        restart_controller(env)
        assert "broken" not in status(env)["topics"]
        for b in env.cluster.load().brokers.values():  # no broker serves a topic it cannot read
            md = fetch_metadata(f"127.0.0.1:{b.port}", topics=["broken"], timeout=5)
            assert md.topics[0].error_code != 0
    finally:
        env.store.client.delete(zn.topic_path("broken"), recursive=True)
    wait_healthy(env)


def produce_and_read(env, topic: str, partition: int, n: int) -> list[bytes]:
    bootstrap = bootstrap_servers(env.cluster)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    for i in range(n):
        p.produce(topic, value=b"%d" % i, partition=partition)
    assert p.flush(30) == 0
    del p
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "badinput", "enable.auto.commit": False,
                  "log_level": 0})
    c.assign([CTP(topic, partition, OFFSET_BEGINNING)])
    got: list[bytes] = []
    for _ in range(40):
        got += [m.value() for m in c.consume(100, 0.5) if not m.error()]
        if len(got) >= n:
            break
    c.close()
    return got


def test_partition_state_goes_offline_with_a_clear_message_and_comes_back_when_repaired(env):
    create_and_wait(env.store, env.connect, "stateful", {0: (1, 2, 3)})
    values = produce_and_read(env, "stateful", 0, 20)
    assert values == [b"%d" % i for i in range(20)]
    path = zn.partition_state_path("stateful", 0)
    original, _ = env.store.client.get(path)
    env.store.client.set(path, b"\xff\xfegarbage")
    assert any(path in p for p in problems(env))
    restart_controller(env)
    # the controller could not read it: no leader is elected from it, and the state stays as it was
    assert status(env)["topics"]["stateful"]["partitions"][0]["leader"] == -1
    assert env.store.client.get(path)[0] == b"\xff\xfegarbage"
    env.store.client.set(path, original)
    restart_controller(env)
    wait_for(lambda: status(env)["topics"]["stateful"]["partitions"][0]["leader"] >= 0, 30, what="a leader")
    assert produce_and_read(env, "stateful", 0, 25)[:20] == values


def test_deletion_marker_of_an_unknown_topic_is_dropped(env):
    env.store.client.create(zn.delete_topic_path("never-existed"), b"", makepath=True)
    wait_for(lambda: env.store.get_topics_marked_for_deletion() == [], 30, what="the marker to go")
    wait_healthy(env)


@pytest.mark.parametrize("path", [zn.REASSIGN_PARTITIONS_PATH, zn.PREFERRED_REPLICA_ELECTION_PATH])
@pytest.mark.parametrize("data", GARBAGE + [json.dumps({"version": 9, "partitions": []}).encode(),
                                             json.dumps({"version": 1, "partitions": "all"}).encode()])
def test_admin_request_znodes_are_deleted(env, path, data):
    before = {p["partition"]: p["replicas"] for p in status(env)["topics"]["orders"]["partitions"]}
    env.store.client.create(path, data, makepath=True)
    wait_for(lambda: env.store.client.exists(path) is None, 30, what=f"{path} to be deleted")
    after = {p["partition"]: p["replicas"] for p in status(env)["topics"]["orders"]["partitions"]}
    assert after == before
    wait_healthy(env)


def test_reassignment_of_an_unknown_topic_is_dropped(env):
    env.store.create_reassignment({TopicPartition("nosuch", 0): (1, 2)})
    wait_for(lambda: env.store.client.exists(zn.REASSIGN_PARTITIONS_PATH) is None, 30, what="the request to go")
    wait_healthy(env)


@pytest.mark.parametrize("data", GARBAGE + [json.dumps({"version": 1, "partitions": [{"topic": "orders"}]}).encode()])
def test_isr_change_notification_is_deleted(env, data):
    name = "isr_change_0000099999"
    env.store.client.create(f"{zn.ISR_CHANGE_NOTIFICATION_PATH}/{name}", data, makepath=True)
    wait_for(lambda: name not in (env.store.client.get_children(zn.ISR_CHANGE_NOTIFICATION_PATH) or []), 30,
             what="the notification to be consumed")
    wait_healthy(env)


@pytest.mark.parametrize("data", FEW + [json.dumps({"version": 1, "config": {"min.insync.replicas": "x"}}).encode()])
def test_topic_config_falls_back_to_broker_defaults(env, data):
    create_and_wait(env.store, env.connect, "configured", {0: (2, 3)})
    try:
        env.store.client.set(zn.config_topic_path("configured"), data)
        restart_controller(env)
        assert produce_and_read(env, "configured", 0, 5) == [b"%d" % i for i in range(5)]
    finally:
        env.store.client.set(zn.config_topic_path("configured"), json.dumps({"version": 1, "config": {}}).encode())
        env.store.mark_topic_for_deletion("configured")
        wait_for(lambda: "configured" not in env.store.get_all_topics(), 60, what="cleanup")


@pytest.mark.parametrize("data", FEW + [json.dumps({"version": 1, "config": {"producer_byte_rate": "fast"}}).encode()])
def test_a_client_quota_znode_that_does_not_decode_is_ignored(env, data):
    """Its notice is skipped (logged) and the next entity's quota still applies; describing
    quotas leaves it out instead of failing."""
    from kafka.protocol.admin import DescribeClientQuotasRequest as DQ

    from praha.protocol.client import BrokerConnection
    from praha.testing.cluster import scrape_metrics
    from praha.zk.admin_zk import notify_config_change

    def entities(broker: int) -> float | None:
        port = env.cluster.load().brokers[broker].actual_metrics_port
        return scrape_metrics(port).get("praha_broker_client_quota_entities")

    before = {b: entities(b) for b in (1, 2, 3)}
    bad, good = "/config/clients/garbled-client", "/config/clients/quota-good-client"
    env.store.client.create(bad, data, makepath=True)
    notify_config_change(env.store, "clients", "garbled-client")
    env.store.client.create(good, zn.encode_config({"producer_byte_rate": "1000"}), makepath=True)
    notify_config_change(env.store, "clients", "quota-good-client")
    try:
        wait_for(lambda: all(entities(b) == before[b] + 1 for b in (1, 2, 3)), 30, what="the good quota applied")
        with BrokerConnection("127.0.0.1", env.port(1)) as conn:
            resp = conn.send(DQ(components=[DQ.ComponentData(entity_type="client-id", match_type=2, match=None)],
                                strict=True), 1)
        names = {e.entity_name for entry in resp.entries for e in entry.entity}
        assert resp.error_code == 0
        assert "quota-good-client" in names
        assert "garbled-client" not in names
    finally:
        env.store.client.delete(bad)
        env.store.client.delete(good)
        notify_config_change(env.store, "clients", "quota-good-client")
        wait_for(lambda: all(entities(b) == before[b] for b in (1, 2, 3)), 30, what="the quota removed")
    wait_healthy(env)
