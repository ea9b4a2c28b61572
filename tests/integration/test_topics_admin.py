"""Topic creation through `praha topics`, kafka-python's and confluent-kafka's admin clients:
leaders elected by the controller, the right errors for bad input, nothing written then."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient
from confluent_kafka.admin import NewTopic as CfNewTopic
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import InvalidReplicationFactorError, TopicAlreadyExistsError

from praha.testing.cluster import bootstrap, wait_for

pytestmark = pytest.mark.integration


def praha(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "praha", *args], capture_output=True, text=True, timeout=90)


def test_cli_creates_describes_and_refuses_bad_input(make_cluster, zk_connect, zk_store):
    cluster = make_cluster(3)
    d = ["--dir", str(cluster.root)]
    r = praha("topics", "create", "--topic", "orders", "--partitions", "6", "--replication-factor", "3",
              "--config", "min.insync.replicas=2", *d)
    assert r.returncode == 0, r.stderr
    assert "all with leaders" in r.stdout
    st = json.loads(praha("cluster", "status", "--json", *d).stdout)
    parts = st["topics"]["orders"]["partitions"]
    assert [p["partition"] for p in parts] == list(range(6))
    assert all(p["leader"] == p["replicas"][0] and p["leader_epoch"] == 0 and sorted(p["isr"]) == [1, 2, 3]
               for p in parts)
    assert sorted(p["replicas"][0] for p in parts) == [1, 1, 2, 2, 3, 3]  # preferred leaders balanced
    assert zk_store.get_topic_configs(["orders"])[0]["orders"] == {"min.insync.replicas": "2"}
    desc = json.loads(praha("topics", "describe", "--topic", "orders", "--json", *d).stdout)
    assert desc["topics"]["orders"]["partitions"] == parts

    before = zk_store.get_all_topics()
    cases = [
        (["--topic", "orders", "--partitions", "1"], "already exists"),
        (["--topic", "bad name", "--partitions", "1"], "illegal characters"),
        (["--topic", "x" * 250, "--partitions", "1"], "limit is 249"),
        (["--topic", "t", "--partitions", "0"], "larger than 0"),
        (["--topic", "t", "--partitions", "-2"], "larger than 0"),
        (["--topic", "t", "--partitions", "1", "--replication-factor", "4"], "larger than available brokers: 3"),
        (["--topic", "t", "--partitions", "1", "--config", "retention.mss=5"], "unknown topic config"),
        (["--topic", "t", "--replica-assignment", "1:9"], "unknown or dead brokers [9]"),
        (["--topic", "t", "--replica-assignment", "1:1"], "twice"),
    ]
    for args, message in cases:
        r = praha("topics", "create", *args, *d)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert message in r.stderr, (args, r.stderr)
    assert zk_store.get_all_topics() == before
    r = praha("topics", "create", "--topic", "orders", "--partitions", "1", "--if-not-exists", *d)
    assert r.returncode == 0
    r = praha("topics", "describe", "--topic", "nope", *d)
    assert r.returncode == 1
    assert "unknown topic 'nope'" in r.stderr


def test_create_topics_api_from_real_clients(make_cluster, zk_store):
    cluster = make_cluster(3)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster))
    try:
        admin.create_topics([NewTopic("kp", 4, 2)])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("kp", 4, 2)])
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics([NewTopic("too-many", 1, 5)])
    finally:
        admin.close()
    cf = AdminClient({"bootstrap.servers": bootstrap(cluster)})
    futures = cf.create_topics([CfNewTopic("cf", 3, 3, config={"retention.ms": "60000"}), CfNewTopic("cf bad", 1, 1)])
    assert futures["cf"].result(15) is None
    with pytest.raises(Exception, match="illegal characters"):
        futures["cf bad"].result(15)
    md = wait_for(lambda: (m := cf.list_topics(timeout=5)) and {"kp", "cf"} <= set(m.topics) and m, 20,
                  what="metadata for the new topics")
    assert len(md.topics["kp"].partitions) == 4
    assert len(md.topics["cf"].partitions) == 3
    assert all(p.leader in (1, 2, 3) for p in md.topics["cf"].partitions.values())
    assert set(zk_store.get_all_topics()) == {"kp", "cf"}
    # authorised operations (KIP-430) as Kafka fills them with no authoriser: every operation
    # the resource type supports when asked, none reported when not
    cluster_ops = cf.describe_cluster(include_authorized_operations=True).result(15).authorized_operations
    assert set(cluster_ops) == {AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                                AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                                AclOperation.DESCRIBE}
    assert not cf.describe_cluster().result(15).authorized_operations
    topic = cf.describe_topics(TopicCollection(["cf"]), include_authorized_operations=True)["cf"].result(15)
    assert set(topic.authorized_operations) == {
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE, AclOperation.DELETE,
        AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
