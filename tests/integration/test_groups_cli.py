"""`praha groups` (issue 11 §3) against a real 3-broker cluster with the group coordinator.

One cluster for the module. A confluent-kafka group consumer (subscribe) reads a topic,
commits and closes; then the command lists the group (ListGroups merged from every
broker), describes it with the right lag, resets it to the earliest offsets (a new member
of the group then starts at 0), is refused while a member is active, deletes offsets and
deletes groups; each step is checked in text and in --json. Every process is stopped by
PID at the end. Skipped (cleanly) when the brokers do not advertise the group APIs."""
from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTP

from praha.cli.main import main
from praha.common import ReplicaAssignment, TopicAssignment
from praha.protocol.api_keys import ApiKey
from praha.protocol.client import api_versions
from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration

OVERRIDES = {
    "offsets.topic.num.partitions": "6",
    "offsets.topic.replication.factor": "3",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "replica.fetch.backoff.ms": "100",
}
TOPIC, PARTITIONS, RECORDS = "orders", 3, 30


@pytest.fixture(scope="module")
def env(module_cluster):
    c = module_cluster(3, OVERRIDES)
    ranges = api_versions("127.0.0.1", next(iter(c.brokers.values())).port)
    if ApiKey.FIND_COORDINATOR not in ranges or ApiKey.JOIN_GROUP not in ranges:
        pytest.skip("the brokers do not serve FindCoordinator/JoinGroup (no group coordinator in this build)")
    c.store.create_topic(TOPIC, TopicAssignment({p: ReplicaAssignment(((p % 3) + 1, ((p + 1) % 3) + 1))
                                                 for p in range(PARTITIONS)}), {})
    bs = c.bootstrap
    wait_for(lambda: _all_led(bs), 30, what=f"leaders of {TOPIC}")
    producer = Producer({"bootstrap.servers": bs, "acks": "all", "log_level": 3})
    for i in range(RECORDS):
        producer.produce(TOPIC, value=b"v%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    del producer  # its threads stop with it
    return bs, str(c.root), c.zookeeper


def _all_led(bs: str) -> bool:
    from praha.admin.groups import GroupAdmin

    with GroupAdmin(bs, timeout=5, retries=1) as a:
        view = a.cluster([TOPIC])
        return len(view.leaders.get(TOPIC, {})) == PARTITIONS and all(
            leader in view.brokers for leader in view.leaders[TOPIC].values())


def groups(capsys, bs: str, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        rc = main(["groups", *args, "--bootstrap-server", bs])
    except SystemExit as e:
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def consumer(bs: str, group: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 200,
                  "log_level": 3})
    c.subscribe([TOPIC])
    return c


def consume(c: Consumer, n: int, timeout: float = 30.0) -> list[tuple[int, int]]:
    """(partition, offset) of the next `n` records."""
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append((m.partition(), m.offset()))
    assert len(got) == n, f"consumed {len(got)} of {n}"
    return got


def test_list_describe_reset_and_delete_a_group(env, capsys):
    bs, _, _ = env
    c = consumer(bs, "billing")
    consume(c, RECORDS)
    # commit as a member of the group (its generation): 3, 4 and 5, so the lags are 7, 6 and 5
    c.commit(offsets=[CTP(TOPIC, p, 3 + p) for p in range(PARTITIONS)], asynchronous=False)
    # describing a group with an active member: every partition has an owner
    rc, out, err = groups(capsys, bs, "--describe", "--group", "billing", "--json")
    assert rc == 0, err
    live = json.loads(out)
    assert rc == 0
    assert live["state"] == "Stable"
    assert {p["partition"] for p in live["partitions"]} == set(range(PARTITIONS))
    assert all(p["consumer_id"] and p["client_id"] == "rdkafka" for p in live["partitions"])
    rc, out, _ = groups(capsys, bs, "--describe", "--group", "billing", "--members", "--verbose")
    assert rc == 0
    assert out.splitlines()[2].split()[-1] == f"{TOPIC}(0,1,2)"

    # reset refused while the member is there; nothing changes
    rc, _, err = groups(capsys, bs, "--reset-offsets", "--group", "billing", "--topic", TOPIC, "--to-earliest",
                        "--execute")
    assert (rc, err.splitlines()[-1]) == (1, "error: Assignments can only be reset if the group 'billing' is "
                                             "inactive, but the current state is Stable.")
    c.close()

    # a second group that commits on one partition only, for the listing
    solo = Consumer({"bootstrap.servers": bs, "group.id": "audit", "enable.auto.commit": False, "log_level": 3})
    solo.commit(offsets=[CTP(TOPIC, 1, 4)], asynchronous=False)  # a standalone commit (generation -1)
    solo.close()

    rc, out, _ = groups(capsys, bs, "--list")
    assert rc == 0
    assert out.splitlines() == ["audit", "billing"]
    rc, out, _ = groups(capsys, bs, "--list", "--state", "Empty", "--json")
    # a group that only ever committed (no member joined) has no protocol type, as on Kafka
    assert json.loads(out) == {"groups": [{"group": "audit", "state": "Empty", "protocol_type": ""},
                                          {"group": "billing", "state": "Empty", "protocol_type": "consumer"}]}
    rc, out, _ = groups(capsys, bs, "--list", "--state", "Stable")
    assert (rc, out) == (0, "GROUP                     STATE\n")

    # --describe --offsets: lag = log end - committed, per partition
    rc, out, err = groups(capsys, bs, "--describe", "--group", "billing", "--offsets", "--json")
    desc = json.loads(out)
    assert rc == 0
    assert desc["state"] == "Empty"
    rows = {p["partition"]: p for p in desc["partitions"]}
    assert sorted(rows) == list(range(PARTITIONS))
    assert [(r["current_offset"], r["log_end_offset"], r["lag"], r["consumer_id"]) for r in rows.values()] == [
        (3, 10, 7, None), (4, 10, 6, None), (5, 10, 5, None)]
    rc, out, err = groups(capsys, bs, "--describe", "--group", "billing")
    assert err == "\nConsumer group 'billing' has no active members.\n"
    assert out.splitlines()[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                           "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert [line.split()[:6] for line in out.splitlines()[2:]] == [
        ["billing", TOPIC, str(p), str(rows[p]["current_offset"]), "10", str(rows[p]["lag"])] for p in range(3)]
    rc, out, _ = groups(capsys, bs, "--describe", "--group", "billing", "--state", "--json")
    assert json.loads(out)["members"] == 0
    assert json.loads(out)["state"] == "Empty"

    # dry run, then execute; a new member of the group starts at 0
    rc, out, _ = groups(capsys, bs, "--reset-offsets", "--group", "billing", "--topic", TOPIC, "--to-earliest",
                        "--dry-run", "--json")
    plan = json.loads(out)
    assert rc == 0
    assert plan["executed"] is False
    assert [p["new_offset"] for p in plan["partitions"]] == [0, 0, 0]
    rc, out, _ = groups(capsys, bs, "--reset-offsets", "--group", "billing", "--topic", TOPIC, "--to-earliest",
                        "--execute")
    assert rc == 0
    assert [line.split() for line in out.splitlines()[2:]] == [
        ["billing", TOPIC, str(p), "0"] for p in range(PARTITIONS)]
    again = consumer(bs, "billing")
    try:
        got = consume(again, RECORDS)  # all of it again: every partition from offset 0
        assert sorted(got) == [(p, o) for p in range(PARTITIONS) for o in range(RECORDS // PARTITIONS)]
    finally:
        again.close()

    # --to-offset beyond the log end is clamped; --shift-by from there
    rc, _, err = groups(capsys, bs, "--reset-offsets", "--group", "audit", "--topic", f"{TOPIC}:1", "--to-offset",
                        "99", "--execute")
    assert rc == 0
    assert f"Value will be set to {RECORDS // PARTITIONS}" in err
    rc, out, _ = groups(capsys, bs, "--reset-offsets", "--group", "audit", "--all-topics", "--shift-by", "-3",
                        "--execute", "--json")
    assert [(p["partition"], p["current_offset"], p["new_offset"]) for p in json.loads(out)["partitions"]] == [
        (1, 10, 7)]

    # --delete-offsets, then --delete
    rc, out, _ = groups(capsys, bs, "--delete-offsets", "--group", "billing", "--topic", f"{TOPIC}:0", "--json")
    assert rc == 0
    assert json.loads(out)["partitions"] == [{"topic": TOPIC, "partition": 0, "error": None}]
    rc, out, _ = groups(capsys, bs, "--describe", "--group", "billing", "--json")
    assert sorted(p["partition"] for p in json.loads(out)["partitions"]) == [1, 2]

    rc, out, _ = groups(capsys, bs, "--delete", "--group", "billing", "--group", "audit")
    assert (rc, out) == (0, "Deletion of requested consumer groups ('billing', 'audit') was successful.\n")
    rc, _, err = groups(capsys, bs, "--describe", "--group", "billing")
    assert (rc, err) == (1, "error: Consumer group 'billing' does not exist.\n")
    rc, out, _ = groups(capsys, bs, "--list", "--json")
    assert json.loads(out) == {"groups": []}
    rc, out, err = groups(capsys, bs, "--delete", "--group", "billing", "--json")
    assert rc == 1
    assert json.loads(out)["failed"] == {"billing": "The group id does not exist."}


def test_a_group_with_a_member_cannot_be_deleted_or_lose_offsets(env, capsys):
    bs, _, _ = env
    c = consumer(bs, "busy")
    try:
        consume(c, 1)
        c.commit(asynchronous=False)
        rc, out, err = groups(capsys, bs, "--delete", "--group", "busy", "--json")
        assert rc == 1
        assert json.loads(out) == {"deleted": [], "failed": {"busy": "The group is not empty."}}
        assert err == "error: Group 'busy' could not be deleted: The group is not empty.\n"
        rc, out, err = groups(capsys, bs, "--delete-offsets", "--group", "busy", "--topic", TOPIC)
        assert rc == 1
        assert "Error: The consumer group is actively subscribed to the topic" in out
    finally:
        c.close()
    rc, _, _ = groups(capsys, bs, "--delete", "--group", "busy")
    assert rc == 0


def test_a_kafka_python_member_is_described_with_its_partitions(env, capsys):
    """Another client's assignment bytes (kafka-python's consumer protocol) decode the same way."""
    from kafka import KafkaConsumer

    bs, _, _ = env
    kc = KafkaConsumer(bootstrap_servers=bs, group_id="kp", auto_offset_reset="earliest",
                       enable_auto_commit=False, client_id="kp-client", session_timeout_ms=6000,
                       heartbeat_interval_ms=200)
    try:
        assert TOPIC in kc.topics()  # metadata first, so the leader's assignor sees the partitions
        kc.subscribe([TOPIC])
        wait_for(lambda: kc.poll(timeout_ms=200) is not None and len(kc.assignment()) == PARTITIONS, 30,
                 what="kafka-python assignment")
        rc, out, err = groups(capsys, bs, "--describe", "--group", "kp", "--members", "--verbose", "--json")
        assert rc == 0, err
        (member,) = json.loads(out)["members"]
        assert member["client_id"] == "kp-client"
        assert member["partitions"] == PARTITIONS
        assert member["assignment"] == [{"topic": TOPIC, "partition": p} for p in range(PARTITIONS)]
        rc, out, _ = groups(capsys, bs, "--describe", "--group", "kp", "--state", "--json")
        assert json.loads(out)["assignment_strategy"] in ("range", "roundrobin", "sticky")
    finally:
        kc.close()
    rc, _, err = groups(capsys, bs, "--delete", "--group", "kp")
    assert rc == 0, err

def test_topics_list_and_describe_show_internal_topics_unless_excluded(env, capsys):
    """As kafka-topics: __consumer_offsets is listed by default, --exclude-internal leaves it out."""
    bs, cluster_dir, connect = env
    rc, out, err = groups(capsys, bs, "--list")  # the first FindCoordinator has created __consumer_offsets
    assert rc == 0, err
    # the brokers can be named by ZooKeeper or by the cluster directory too
    for where in (["--zookeeper", connect], ["--dir", cluster_dir]):
        capsys.readouterr()
        assert main(["groups", "--list", *where]) == 0
        assert capsys.readouterr().out == out
    capsys.readouterr()
    assert main(["topics", "list", "--dir", cluster_dir]) == 0
    assert capsys.readouterr().out.splitlines() == ["__consumer_offsets", TOPIC]
    assert main(["topics", "list", "--exclude-internal", "--dir", cluster_dir]) == 0
    assert capsys.readouterr().out.splitlines() == [TOPIC]
    assert main(["topics", "describe", "--json", "--dir", cluster_dir]) == 0
    topics = json.loads(capsys.readouterr().out)["topics"]
    assert {name: t["internal"] for name, t in topics.items()} == {"__consumer_offsets": True, TOPIC: False}
    assert len(topics["__consumer_offsets"]["partitions"]) == 6
    assert main(["topics", "describe", "--exclude-internal", "--dir", cluster_dir]) == 0
    assert "__consumer_offsets" not in capsys.readouterr().out


def test_the_command_follows_the_coordinator_when_its_broker_dies(env, capsys):
    """Runs last: SIGKILL the broker coordinating a group; the command looks the
    coordinator up again (NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / refused
    connections are retried) and finds the offsets, replicated acks=all, on the new one."""
    from praha.admin.groups import GroupAdmin
    from praha.cluster.local import LocalCluster

    bs, cluster_dir, _ = env
    solo = Consumer({"bootstrap.servers": bs, "group.id": "failover", "enable.auto.commit": False, "log_level": 3})
    solo.commit(offsets=[CTP(TOPIC, 0, 6), CTP(TOPIC, 2, 8)], asynchronous=False)
    solo.close()
    with GroupAdmin(bs, timeout=5) as a:
        old = a.find_coordinator("failover")
    LocalCluster(cluster_dir).kill_broker(old.id)
    survivors = ",".join(a for a in bs.split(",") if not a.endswith(f":{old.port}"))
    t0 = time.monotonic()
    rc, out, err = groups(capsys, survivors, "--describe", "--group", "failover", "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert got["coordinator"]["id"] != old.id
    assert time.monotonic() - t0 < 20
    assert [(p["partition"], p["current_offset"]) for p in got["partitions"]] == [(0, 6), (2, 8)]
    rc, out, _ = groups(capsys, survivors, "--list")
    assert rc == 0
    assert "failover" in out.splitlines()
