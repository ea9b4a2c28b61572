"""Operator tools against real clusters: `praha topics delete|alter`, `praha reassign ...`,
`praha elect-leaders` (through the controller and through ZooKeeper), and the admin APIs
from kafka-python's and confluent-kafka's admin clients. Each tool must write the right
znodes, refuse bad input without changing anything, and the controller must carry the
change through (topic gone, partitions led, replicas moved, preferred leaders back)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from confluent_kafka import ElectionType
from confluent_kafka import TopicPartition as CfTP
from confluent_kafka.admin import AdminClient, NewPartitions
from confluent_kafka.admin import NewTopic as CfNewTopic
from kafka.admin import KafkaAdminClient
from kafka.errors import (
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    TopicDeletionDisabledError,
    UnknownTopicOrPartitionError,
)
from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    CreatePartitionsRequest,
    DeleteTopicsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)
from kafka.structs import TopicPartition as KTP

from praha.admin.reassign import execute
from praha.cluster.local import ClusterState, LocalCluster
from praha.common import ReplicaAssignment, TopicAssignment
from praha.common import TopicPartition as TP
from praha.errors import (
    ErrorCode,
    InvalidTopicError,
    ReassignmentInProgressError,
    TopicAlreadyMarkedForDeletionError,
    UnknownTopicError,
)
from praha.protocol.client import BrokerConnection
from praha.testing.cluster import bootstrap, wait_for
from praha.zk import znodes as zn
from praha.zk.admin_zk import add_partitions, delete_topic

pytestmark = pytest.mark.integration


# ------------------------------------------------------------------------------ helpers
def praha_process(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "praha", *map(str, args)], capture_output=True, text=True, timeout=90)


def create(store, name: str, assignment: dict[int, tuple[int, ...]], config=None) -> None:
    store.create_topic(name, TopicAssignment({p: ReplicaAssignment(r) for p, r in assignment.items()}), config or {})


def replicas(store, name: str) -> dict[int, tuple[int, ...]]:
    a, _ = store.get_topic_assignments([name])
    return {p: r.replicas for p, r in a[name].partitions.items()} if name in a else {}


def leaders(store, name: str) -> dict[int, int]:
    states, _ = store.get_partition_states([TP(name, p) for p in replicas(store, name)])
    return {tp.partition: s.leader_and_isr.leader for tp, s in states.items()}


def led(store, name: str, n: int) -> bool:
    live = set(store.get_live_brokers()[0])
    got = leaders(store, name)
    return len(got) == n and all(leader in live for leader in got.values())


def snapshot(store, *paths: str):
    """Data and version of znodes, to prove a refusal wrote nothing."""
    out = {}
    for path in paths:
        got = store.get_data(path)
        out[path] = None if got is None else (got[0], got[1].version)
    out["children"] = {p: store.get_children(p) for p in (zn.DELETE_TOPICS_PATH, zn.CONFIG_CHANGES_PATH)}
    return out


def not_the_controller(cluster, store):
    cid = store.get_controller_id()
    return next(b for i, b in cluster.load().brokers.items() if i != cid)


# ------------------------------------------------------------------------------ ZooKeeper only
def test_znode_writes_and_refusals_that_need_no_broker(zk_store, zk_connect, cli, tmp_path):
    """Without brokers nothing acts on the znodes, so what the tools wrote stays visible."""
    # a cluster directory naming the test's chroot (`--zookeeper` takes HOST:PORT only)
    LocalCluster(tmp_path).save(ClusterState(zookeeper=zk_connect, zookeeper_embedded=False))
    d = ["--dir", tmp_path]
    create(zk_store, "a", {0: (1, 2), 1: (2, 1)})
    before = snapshot(zk_store, zn.topic_path("a"))
    with pytest.raises(UnknownTopicError, match="Topic 'nope' does not exist."):
        delete_topic(zk_store, "nope")
    rc, out, err = cli("topics", "delete", "--topic", "a", *d)
    assert rc == 0
    assert out == ("Topic a is marked for deletion.\n"
                               "Note: This will have no impact if delete.topic.enable is not set to true.\n")
    assert zk_store.get_topics_marked_for_deletion() == ["a"]
    rc, _, err = cli("topics", "delete", "--topic", "a", *d)
    assert rc == 1
    assert err == "error: Topic 'a' is already marked for deletion.\n"
    with pytest.raises(TopicAlreadyMarkedForDeletionError):
        delete_topic(zk_store, "a")
    with pytest.raises(InvalidTopicError, match="Topic 'a' is marked for deletion."):
        add_partitions(zk_store, "a", 4)
    assert snapshot(zk_store, zn.topic_path("a"))[zn.topic_path("a")] == before[zn.topic_path("a")]

    create(zk_store, "b", {0: (1, 2)})
    zk_store.create_reassignment({TP("b", 0): (2, 1)})
    with pytest.raises(ReassignmentInProgressError, match="reassignment is in progress for the topic 'b'"):
        add_partitions(zk_store, "b", 2)
    with pytest.raises(ReassignmentInProgressError, match="existing partition reassignment"):
        execute(zk_store, {TP("a", 0): (2, 1)})
    rc, out, _ = cli("reassign", "list", *d)
    assert rc == 0
    assert out == "Current partition reassignments:\nb-0: replicas: 2,1. adding: . removing: . " \
                              "not yet in the ISR: 2,1.\n"
    zk_store.delete_recursive([zn.REASSIGN_PARTITIONS_PATH])
    zk_store.create_preferred_election([TP("b", 0)])
    rc, _, err = cli("elect-leaders", "--election-type", "preferred", "--topic", "b", "--via-zookeeper", *d)
    assert rc == 1
    assert "A preferred replica election is already in progress" in err


# ------------------------------------------------------------------------------ topics delete / alter
def test_topics_alter_and_delete(make_cluster, zk_store, zk_connect, cli):
    cluster = make_cluster(3)
    d = ["--dir", cluster.root]
    create(zk_store, "a", {0: (1, 2), 1: (2, 3)})
    wait_for(lambda: led(zk_store, "a", 2), 20, what="a online")

    r = praha_process("topics", "alter", "--topic", "a", "--partitions", "4", *d)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the "
        "messages will be affected",
        "Adding partitions succeeded!",
        "Topic a now has 4 partitions, all with leaders.",
    ]
    got = replicas(zk_store, "a")
    assert sorted(got) == [0, 1, 2, 3]
    assert all(len(r) == 2 and len(set(r)) == 2 for r in got.values())
    assert got[0] == (1, 2)
    assert got[1] == (2, 3)

    before = snapshot(zk_store, zn.topic_path("a"))
    refusals = [
        (["--partitions", "4"], "Topic a currently has 4 partitions, 4 would not be an increase."),
        (["--partitions", "2"], "Topic a currently has 4 partitions, 2 would not be an increase."),
        (["--partitions", "6", "--replica-assignment", "1:2"], "Increasing the number of partitions by 2 but 1 "
                                                               "assignments provided."),
        (["--partitions", "5", "--replica-assignment", "1:9"], "Unknown broker(s) in replica assignment: 9."),
        (["--partitions", "5", "--replica-assignment", "3:3"], "Duplicate brokers not allowed"),
        (["--partitions", "5", "--replica-assignment", "1:2:3"], "Inconsistent replication factor"),
        (["--partitions", "5", "--replica-assignment", "1:x"], "invalid replica assignment"),
    ]
    for args, message in refusals:
        rc, out, err = cli("topics", "alter", "--topic", "a", *args, *d)
        assert rc == 1, (args, err)
        assert err.startswith("error: "), (args, err)
        assert message in err, (args, err)
    rc, _, err = cli("topics", "alter", "--topic", "nope", "--partitions", "3", *d)
    assert rc == 1
    assert err == "error: Topic 'nope' does not exist.\n"
    assert cli("topics", "alter", "--topic", "nope", "--partitions", "3", "--if-exists", *d)[0] == 0
    assert snapshot(zk_store, zn.topic_path("a")) == before

    # Kafka 2.x form: the whole list, existing partitions first (ignored)
    rc, out, err = cli("topics", "alter", "--topic", "a", "--partitions", "5",
                       "--replica-assignment", "1:2,2:3,1:3,3:1,3:2", *d)
    assert rc == 0, err
    assert replicas(zk_store, "a")[4] == (3, 2)
    assert leaders(zk_store, "a")[4] == 3

    rc, out, err = cli("topics", "delete", "--topic", "a", "--wait", "--timeout", "30", *d)
    assert rc == 0, err
    assert out.endswith("Topic a is deleted.\n")
    assert "a" not in zk_store.get_all_topics()
    assert zk_store.get_topics_marked_for_deletion() == []
    rc, _, err = cli("topics", "delete", "--topic", "a", *d)
    assert rc == 1
    assert err == "error: Topic 'a' does not exist.\n"
    assert cli("topics", "delete", "--topic", "a", "--if-exists", *d)[0] == 0


# ------------------------------------------------------------------------------ reassign and elect-leaders
def test_reassignment_and_preferred_election_through_the_cli(make_cluster, zk_store, zk_connect, cli, tmp_path):
    cluster = make_cluster(3, overrides={"auto.leader.rebalance.enable": "false"})
    d = ["--dir", cluster.root]
    create(zk_store, "r", {0: (1, 2), 1: (2, 3), 2: (3, 1)}, {"retention.ms": "600000"})
    create(zk_store, "e", {0: (1, 2), 1: (2, 3)})
    wait_for(lambda: led(zk_store, "r", 3) and led(zk_store, "e", 2), 20, what="topics online")

    (tmp_path / "move.json").write_text('{"version":1,"topics":[{"topic":"r"}]}')
    rc, out, err = cli("reassign", "generate", "--topics-to-move-json-file", tmp_path / "move.json",
                       "--broker-list", "2,3", *d)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[3] == "Proposed partition reassignment configuration"
    assert json.loads(lines[1]) == {"version": 1, "partitions": [
        {"topic": "r", "partition": p, "replicas": list(r), "log_dirs": ["any", "any"]}
        for p, r in [(0, (1, 2)), (1, (2, 3)), (2, (3, 1))]]}
    proposed = json.loads(lines[4])["partitions"]
    assert [e["partition"] for e in proposed] == [0, 1, 2]
    assert all(sorted(e["replicas"]) == [2, 3] for e in proposed)

    # refusals: nothing written (no znode, no config, no change notice)
    watched = (zn.REASSIGN_PARTITIONS_PATH, zn.config_topic_path("r"), zn.config_broker_path(1), zn.topic_path("r"))
    before = snapshot(zk_store, *watched)

    def plan(*entries, **extra):
        path = tmp_path / f"plan{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": list(r)} for t, p, r in entries], **extra}))
        return path

    refusals = [
        (plan(("r", 0, (1, 9))), "Unknown broker id 9 (live brokers: 1,2,3)"),
        (plan(("r", 7, (1, 2))), "Unable to find partition: r-7"),
        (plan(("x", 0, (1, 2))), "Topic x not found."),
        (plan(("r", 0, (1, 2)), ("r", 1, (3, 2))), "Partition r-0 is already assigned to replicas 1,2"),
        (plan(("r", 0, (2, 3)), ("r", 0, (3, 1))), "duplicate topic partitions: r-0"),
        (plan(("r", 0, (2, 2))), "r-0 contains multiple entries for 2"),
        (plan(("r", 0, ())), "Empty replica list specified for partition r-0"),
        (plan(), "Partition reassignment list cannot be empty."),
    ]
    for path, message in refusals:
        rc, _, err = cli("reassign", "execute", "--reassignment-json-file", path, "--throttle", "1000000", *d)
        assert rc == 1, (path.read_text(), err)
        assert message in err, (path.read_text(), err)
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    rc, _, err = cli("reassign", "execute", "--reassignment-json-file", bad, *d)
    assert rc == 1
    assert "not valid JSON" in err
    assert snapshot(zk_store, *watched) == before

    # r-0 moves off broker 1 (new leader 2), e-0 only swaps its order: leader 1 stays, preferred is now 2
    moves = plan(("r", 0, (2, 3)), ("r", 1, (3, 2)), ("r", 2, (3, 2)), ("e", 0, (2, 1)))
    rc, out, err = cli("reassign", "execute", "--reassignment-json-file", moves, "--throttle", "50000000", *d)
    assert rc == 0, err
    assert "Save this to use as the --reassignment-json-file option during rollback" in out
    assert "The inter-broker throttle limit was set to 50000000 B/s" in out
    assert out.endswith("Successfully started partition reassignments for e-0,r-0,r-1,r-2\n")

    def verified():
        rc, out, err = cli("reassign", "verify", "--reassignment-json-file", moves, *d)
        assert rc == 0, err
        return out if "in progress" not in out else None

    out = wait_for(verified, 30, interval=0.3, what="reassignment complete")
    assert out.splitlines()[:5] == ["Status of partition reassignment:"] + [
        f"Reassignment of partition {tp} is complete." for tp in ("e-0", "r-0", "r-1", "r-2")]
    assert "Clearing broker-level throttles on brokers 1,2,3" in out
    assert "Clearing topic-level throttles on topics e,r" in out
    assert replicas(zk_store, "r") == {0: (2, 3), 1: (3, 2), 2: (3, 2)}
    assert replicas(zk_store, "e")[0] == (2, 1)
    assert zk_store.get_topic_configs(["r"])[0]["r"] == {"retention.ms": "600000"}  # throttles gone, rest kept
    assert zk_store.get_data(zn.config_broker_path(1)) is None or zn.decode_config(
        zk_store.get_data(zn.config_broker_path(1))[0]) == {}
    assert cli("reassign", "list", *d)[1] == "No partition reassignments found.\n"
    assert leaders(zk_store, "e")[0] == 1

    # preferred election through the controller's ElectLeaders
    rc, out, err = cli("elect-leaders", "--election-type", "preferred", "--topic", "e", *d)
    assert rc == 0, err
    assert out.splitlines() == ["Successfully completed leader election (PREFERRED) for partitions e-0",
                                "Valid replica already elected for partitions e-1"]
    assert leaders(zk_store, "e") == {0: 2, 1: 2}
    for args, message in [
        (["--topic", "e", "--partition", "5"], "Unknown partition: e-5"),
        (["--topic", "nope"], "Topic 'nope' does not exist."),
        (["--all-topic-partitions", "--partition", "1"], "--partition needs --topic"),
    ]:
        rc, _, err = cli("elect-leaders", "--election-type", "preferred", *args, *d)
        assert rc == 1, (args, err)
        assert message in err, (args, err)

    # ... and through /admin/preferred_replica_election (e-1 swapped: leader 2 stays, preferred 3)
    rc, _, err = cli("reassign", "execute", "--reassignment-json-file", plan(("e", 1, (3, 2))), *d)
    assert rc == 0, err
    wait_for(lambda: replicas(zk_store, "e")[1] == (3, 2) and not zk_store.get_reassignments(), 20, what="e-1 moved")
    election = tmp_path / "elect.json"
    election.write_text('{"partitions":[{"topic":"e","partition":1},{"topic":"e","partition":0}]}')
    r = praha_process("elect-leaders", "--election-type", "preferred", "--path-to-json-file", election,
                      "--via-zookeeper", *d)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["Successfully completed leader election (PREFERRED) for partitions e-1",
                                     "Valid replica already elected for partitions e-0"]
    assert leaders(zk_store, "e") == {0: 2, 1: 3}
    assert zk_store.exists(zn.PREFERRED_REPLICA_ELECTION_PATH) is None


# ------------------------------------------------------------------------------ a reassignment that waits
def test_stuck_reassignment_listed_verified_and_cancelled(make_cluster, zk_store, zk_connect, cli, tmp_path):
    cluster = make_cluster(3, overrides={"auto.leader.rebalance.enable": "false"})
    d = ["--dir", cluster.root]
    create(zk_store, "m", {0: (1, 2), 1: (2, 1)})
    wait_for(lambda: led(zk_store, "m", 2), 20, what="m online")
    plan_path = tmp_path / "plan.json"
    plan_path.write_text('{"version":1,"partitions":[{"topic":"m","partition":0,"replicas":[1,3]}]}')
    cluster.pause_broker(3)  # still registered for a session timeout: execute accepts it, it never catches up
    try:
        rc, out, err = cli("reassign", "execute", "--reassignment-json-file", plan_path, "--throttle", "1000", *d)
        assert rc == 0, err
        assert zn.decode_reassignment(zk_store.get_data(zn.REASSIGN_PARTITIONS_PATH)[0]) == {TP("m", 0): (1, 3)}
        assert zk_store.get_topic_configs(["m"])[0]["m"] == {
            "leader.replication.throttled.replicas": "0:1,0:2", "follower.replication.throttled.replicas": "0:3"}
        for b in (1, 2, 3):
            assert zn.decode_config(zk_store.get_data(zn.config_broker_path(b))[0]) == {
                "leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "1000"}
        notices = [json.loads(zk_store.get_data(f"{zn.CONFIG_CHANGES_PATH}/{c}")[0])
                   for c in sorted(zk_store.get_children(zn.CONFIG_CHANGES_PATH))]
        assert {n["entity_path"] for n in notices} == {"topics/m", "brokers/1", "brokers/2", "brokers/3"}
        assert all(n["version"] == 2 for n in notices)

        wait_for(lambda: replicas(zk_store, "m")[0] == (1, 3, 2), 10, what="AR = OAR + RAR")
        rc, out, _ = cli("reassign", "list", *d)
        assert out == ("Current partition reassignments:\n"
                       "m-0: replicas: 1,3,2. adding: 3. removing: 2. not yet in the ISR: 3.\n")
        rc, out, _ = cli("reassign", "verify", "--reassignment-json-file", plan_path, *d)
        assert out.startswith("Status of partition reassignment:\n"
                              "Reassignment of partition m-0 is still in progress. Not yet in the ISR: 3 (leader 1")
        assert "Clearing" not in out
        assert zk_store.get_topic_configs(["m"])[0]["m"]  # throttles kept meanwhile

        other = tmp_path / "other.json"
        other.write_text('{"version":1,"partitions":[{"topic":"m","partition":1,"replicas":[1,2]}]}')
        rc, _, err = cli("reassign", "execute", "--reassignment-json-file", other, *d)
        assert rc == 1
        assert "Cannot execute because there is an existing partition reassignment" in err
        rc, _, err = cli("topics", "alter", "--topic", "m", "--partitions", "3", *d)
        assert rc == 1
        assert "A partition reassignment is in progress for the topic 'm' (partitions 0)" in err

        rc, out, err = cli("reassign", "cancel", "--reassignment-json-file", plan_path, *d)
        assert rc == 0, err
        assert out.splitlines() == ["Successfully cancelled partition reassignments for: m-0",
                                    "Clearing broker-level throttles on brokers 1,2,3",
                                    "Clearing topic-level throttles on topic m"]
        wait_for(lambda: replicas(zk_store, "m")[0] == (1, 2) and not zk_store.get_reassignments(), 20,
                 what="reassignment reverted")
        assert zk_store.get_topic_configs(["m"])[0]["m"] == {}
        assert cli("reassign", "cancel", *d)[1] == "No partition reassignments found.\n"
        assert cli("reassign", "cancel", "--reassignment-json-file", plan_path, *d)[1] == (
            "None of the specified partition reassignments are active.\n")
    finally:
        cluster.resume_broker(3)


# ------------------------------------------------------------------------------ admin APIs from real clients
def test_admin_apis_from_kafka_python_and_confluent(make_cluster, zk_store, zk_connect):
    cluster = make_cluster(3, overrides={"auto.leader.rebalance.enable": "false"})
    create(zk_store, "k", {0: (1, 2), 1: (2, 3)})
    create(zk_store, "c", {0: (3, 1)})
    wait_for(lambda: led(zk_store, "k", 2) and led(zk_store, "c", 1), 20, what="topics online")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster))
    try:
        admin.create_partitions({"k": 3})
        assert len(replicas(zk_store, "k")) == 3
        assert led(zk_store, "k", 3)
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({"k": 2})
        with pytest.raises(InvalidReplicationAssignmentError):
            admin.create_partitions({"k": {"count": 4, "assignments": [[1, 9]]}})
        admin.create_partitions({"k": {"count": 4, "assignments": [[3, 1]]}})
        assert replicas(zk_store, "k")[3] == (3, 1)

        assert admin.alter_partition_reassignments({KTP("k", 0): [2, 1]}) == {KTP("k", 0): None}
        assert admin.alter_partition_reassignments({KTP("k", 1): None}) == {KTP("k", 1): NoReassignmentInProgressError}
        wait_for(lambda: admin.list_partition_reassignments() == {} and replicas(zk_store, "k")[0] == (2, 1), 20,
                 what="k-0 reassigned")
        assert leaders(zk_store, "k")[0] == 1
        response = admin.elect_leaders(0, {"k": [0, 1]})
        codes = {(p.partition_id, p.error_code) for t in response.replica_election_results for p in t.partition_result}
        assert codes == {(0, 0), (1, ErrorCode.ELECTION_NOT_NEEDED)}
        assert leaders(zk_store, "k")[0] == 2

        result = admin.delete_topics(["k"], timeout_ms=20000)
        assert result["topics"] == [{"name": "k", "topic_id": None, "error_code": 0, "error_message": None}]
        # clients stop seeing it first (UpdateMetadata at the start of the deletion), the znodes go at its end
        wait_for(lambda: "k" not in zk_store.get_all_topics(), 20, what="k deleted")
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_topics(["k"], timeout_ms=5000)
    finally:
        admin.close()

    cf = AdminClient({"bootstrap.servers": bootstrap(cluster)})
    assert cf.create_partitions([NewPartitions("c", 2)])["c"].result(15) is None
    assert len(replicas(zk_store, "c")) == 2
    assert cf.create_topics([CfNewTopic("c2", 1, 1)])["c2"].result(15) is None
    elected = cf.elect_leaders(ElectionType.PREFERRED, [CfTP("c", 0)]).result(15)
    assert [tp.partition for tp in elected] == [0]  # already preferred: ELECTION_NOT_NEEDED, not a failure
    assert cf.delete_topics(["c", "c2"], operation_timeout=15)["c"].result(20) is None
    wait_for(lambda: not {"c", "c2"} & set(zk_store.get_all_topics()), 20, what="c, c2 deleted")

    # a broker that is not the controller refuses every admin API, so clients retry the controller
    other = not_the_controller(cluster, zk_store)
    requests = [
        (DeleteTopicsRequest(topic_names=["x"], timeout_ms=100), 5,
         lambda r: r.responses[0].error_code),
        (CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(name="x", count=2)],
                                 timeout_ms=100, validate_only=False), 3, lambda r: r.results[0].error_code),
        (ElectLeadersRequest(election_type=0, topic_partitions=None, timeout_ms=100), 2, lambda r: r.error_code),
        (AlterPartitionReassignmentsRequest(timeout_ms=100, topics=[]), 0, lambda r: r.error_code),
        (ListPartitionReassignmentsRequest(timeout_ms=100), 0, lambda r: r.error_code),
    ]
    with BrokerConnection("127.0.0.1", other.port, timeout=10) as conn:
        for request, version, code_of in requests:
            assert code_of(conn.send(request, version)) == ErrorCode.NOT_CONTROLLER, type(request).__name__


def test_delete_topics_api_when_deletion_is_disabled(make_cluster, zk_store):
    cluster = make_cluster(1, overrides={"delete.topic.enable": "false"})
    create(zk_store, "keep", {0: (1,)})
    wait_for(lambda: led(zk_store, "keep", 1), 20, what="keep online")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster))
    try:
        with pytest.raises(TopicDeletionDisabledError):
            admin.delete_topics(["keep"], timeout_ms=2000)
    finally:
        admin.close()
    assert "keep" in zk_store.get_all_topics()
    assert zk_store.get_topics_marked_for_deletion() == []
