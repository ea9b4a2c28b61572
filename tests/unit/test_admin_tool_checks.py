"""Operator tools without a cluster: partition expansion and reassignment checks (every
refusal's exact message), plan generation and Kafka's JSON formats, throttle values,
preferred-election input and output, and the admin API handlers' controller round trip
(a stand-in controller runs the flow entry points on its own thread, as the real one)."""
from __future__ import annotations

import asyncio
import json
import random
import threading
from types import SimpleNamespace

import pytest
from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    DeleteTopicsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)

from praha.admin.leader_election import format_results, parse_election_json
from praha.admin.reassign import (
    ClusterView,
    check_plan,
    format_plan,
    parse_broker_list,
    parse_log_dirs,
    parse_plan,
    parse_topics_to_move,
    propose,
    throttle_settings,
)
from praha.broker.handlers.admin import AdminApis
from praha.broker.handlers.authorization import RequestAuthorizer
from praha.broker.handlers.routes import SERVED_VERSIONS as VERSIONS
from praha.common import ReplicaAssignment, TopicAssignment, TopicPartition
from praha.errors import (
    ControllerMovedError,
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    ReassignmentInProgressError,
    UnknownTopicError,
)
from praha.protocol.controller_requests import PartitionLeaderState
from praha.protocol.framing import DecodedRequest, RequestHeader
from praha.protocol.registry import APIS
from praha.topic_rules import assign_replicas, plan_new_partitions

TP = TopicPartition


def topic(*replicas, adding=None) -> TopicAssignment:
    adding = adding or {}
    return TopicAssignment({p: ReplicaAssignment(tuple(r), tuple(adding.get(p, ()))) for p, r in enumerate(replicas)})


# ------------------------------------------------------------------------------ expansion
class TestPlanNewPartitions:
    current = topic((1, 2), (2, 3), (3, 1))

    def test_continues_kafkas_placement_from_partition_0s_leader(self):
        created = assign_replicas([1, 2, 3, 4], 3, 2, start_index=1)
        current = TopicAssignment({p: ReplicaAssignment(r) for p, r in created.items()})
        got = plan_new_partitions("t", current, 8, {1, 2, 3, 4})
        assert got == {p: r for p, r in assign_replicas([1, 2, 3, 4], 8, 2, start_index=1).items() if p >= 3}

    def test_keeps_the_replication_factor(self):
        got = plan_new_partitions("t", self.current, 5, {1, 2, 3})
        assert sorted(got) == [3, 4]
        assert all(len(r) == 2 and len(set(r)) == 2 for r in got.values())

    @pytest.mark.parametrize("given", [[(1, 2), (2, 3), (3, 1), (1, 3), (2, 1)], [(1, 3), (2, 1)]])
    def test_manual_assignment_of_all_or_only_the_new_partitions(self, given):
        assert plan_new_partitions("t", self.current, 5, {1, 2, 3}, given) == {3: (1, 3), 4: (2, 1)}

    @pytest.mark.parametrize(("kwargs", "error", "message"), [
        (dict(current=None), UnknownTopicError, "Topic 't' does not exist."),
        (dict(marked_for_deletion=True), InvalidTopicError, "Topic 't' is marked for deletion."),
        (dict(reassigning={TP("t", 1)}), ReassignmentInProgressError,
         "A partition reassignment is in progress for the topic 't' (partitions 1)."),
        (dict(current=topic((1, 2), (2, 3), adding={1: (3,)})), ReassignmentInProgressError,
         "A partition reassignment is in progress for the topic 't' (partitions 1)."),
        (dict(total=3), InvalidPartitionsError,
         "The number of partitions for a topic can only be increased. Topic t currently has 3 partitions, "
         "3 would not be an increase."),
        (dict(total=2), InvalidPartitionsError,
         "The number of partitions for a topic can only be increased. Topic t currently has 3 partitions, "
         "2 would not be an increase."),
        (dict(total=6, live={1}), InvalidReplicationFactorError,
         "replication factor: 2 larger than available brokers: 1"),
        (dict(assignment=[(1, 2)]), InvalidReplicaAssignmentError,
         "Increasing the number of partitions by 2 but 1 assignments provided."),
        (dict(assignment=[(1, 2), ()]), InvalidReplicaAssignmentError, "Partition 4 has an empty replica list."),
        (dict(assignment=[(1, 1), (1, 2)]), InvalidReplicaAssignmentError,
         "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 3."),
        (dict(assignment=[(1, 9), (7, 2)]), InvalidReplicaAssignmentError,
         "Unknown broker(s) in replica assignment: 7, 9."),
        (dict(assignment=[(1, 2, 3), (1, 2)]), InvalidReplicaAssignmentError,
         "Inconsistent replication factor between partitions, partition 0 has 2 while partitions [3] have "
         "replication factors [3], respectively."),
    ])
    def test_refusals(self, kwargs, error, message):
        args = dict(topic="t", current=self.current, total=5, live_brokers={1, 2, 3})
        if "live" in kwargs:
            args["live_brokers"] = kwargs.pop("live")
        args.update(kwargs)
        with pytest.raises(error) as e:
            plan_new_partitions(**args)
        assert str(e.value) == message


# ------------------------------------------------------------------------------ reassignment input
def test_topics_to_move_and_broker_list():
    assert parse_topics_to_move('{"version":1,"topics":[{"topic":"a"},{"topic":"b"}]}') == ["a", "b"]
    assert parse_broker_list("3,1,2") == [3, 1, 2]


@pytest.mark.parametrize(("text", "message"), [
    ("nope", "the topics-to-move file is not valid JSON"),
    ('{"topics":"a"}', 'invalid topics-to-move JSON: expected {"version":1,"topics":[{"topic":"foo"},...]}'),
    ('{"version":2,"topics":[{"topic":"a"}]}', "Not supported version field value 2"),
    ('{"topics":[{"name":"a"}]}', "invalid topics-to-move entry {'name': 'a'}"),
    ('{"topics":[]}', "List of topics to reassign is empty."),
    ('{"topics":[{"topic":"a"},{"topic":"b"},{"topic":"a"}]}',
     "List of topics to reassign contains duplicate entries: a"),
])
def test_topics_to_move_refusals(text, message):
    with pytest.raises(InvalidRequestError) as e:
        parse_topics_to_move(text)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize(("text", "message"), [
    ("1,x", "invalid broker list '1,x': expected broker ids separated by ',' (e.g. 1,2,3)"),
    ("", "invalid broker list '': expected broker ids separated by ',' (e.g. 1,2,3)"),
    ("1,2,1,2", "Broker list contains duplicate entries: 1,2"),
])
def test_broker_list_refusals(text, message):
    with pytest.raises(InvalidRequestError) as e:
        parse_broker_list(text)
    assert str(e.value) == message


def test_plan_parses_kafkas_format():
    text = ('{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[2,3],"log_dirs":["any","any"]},'
            '{"topic":"t","partition":0,"replicas":[3,1]}]}')
    plan = parse_plan(text)
    assert plan == {TP("t", 1): (2, 3), TP("t", 0): (3, 1)}
    assert format_plan(plan) == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,1],"log_dirs":["any","any"]},'
        '{"topic":"t","partition":1,"replicas":[2,3],"log_dirs":["any","any"]}]}')
    assert parse_plan(format_plan(plan)) == plan


def _entry(topic="t", partition=0, replicas=(1, 2), **extra):
    return {"topic": topic, "partition": partition, "replicas": list(replicas), **extra}


@pytest.mark.parametrize(("obj", "error", "message"), [
    ("{", InvalidRequestError, "the reassignment file is not valid JSON"),
    ({"version": 1}, InvalidRequestError, "invalid reassignment JSON: expected"),
    ({"version": 3, "partitions": [_entry()]}, InvalidRequestError, "Not supported version field value 3"),
    ({"partitions": [{"topic": "t", "partition": "0", "replicas": [1]}]}, InvalidRequestError,
     'invalid reassignment entry {"topic": "t", "partition": "0", "replicas": [1]}'),
    ({"partitions": []}, InvalidRequestError, "Partition reassignment list cannot be empty."),
    ({"partitions": [_entry(replicas=())]}, InvalidReplicaAssignmentError,
     "Empty replica list specified for partition t-0"),
    ({"partitions": [_entry(), _entry(partition=1), _entry(replicas=(2, 3))]}, InvalidRequestError,
     "Partition reassignment contains duplicate topic partitions: t-0"),
    ({"partitions": [_entry(replicas=(1, 2, 1)), _entry(partition=1, replicas=(3, 3))]},
     InvalidReplicaAssignmentError,
     "Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1. "
     "t-1 contains multiple entries for 3"),
    ({"partitions": [_entry(log_dirs=["any"])]}, InvalidRequestError,
     "Size of replicas list [1, 2] is different from size of log dirs list ['any'] for partition t-0"),
    ({"partitions": [_entry(log_dirs=["any", "data"])]}, InvalidRequestError,
     "invalid log dirs list ['any', 'data'] for partition t-0: each entry is \"any\" or an absolute path"),
    ({"partitions": [_entry(log_dirs=["any", 7])]}, InvalidRequestError, "invalid log dirs list ['any', 7]"),
])
def test_plan_refusals(obj, error, message):
    with pytest.raises(error) as e:
        parse_plan(obj if isinstance(obj, str) else json.dumps(obj))
    assert str(e.value).startswith(message)


def test_named_log_dirs_are_read_per_replica():
    text = json.dumps({"version": 1, "partitions": [
        _entry(replicas=(1, 2), log_dirs=["any", "/data/b"]), _entry(partition=1, replicas=(2, 3))]})
    assert parse_plan(text) == {TP("t", 0): (1, 2), TP("t", 1): (2, 3)}
    assert parse_log_dirs(text) == {(TP("t", 0), 2): "/data/b"}


# ------------------------------------------------------------------------------ generate
def test_propose_keeps_partition_counts_and_replication_factors():
    assignments = {"a": topic((1, 2), (2, 3), (3, 1)), "b": topic((1,), (2,))}
    current, proposed = propose(assignments, ["b", "a"], [4, 5, 6], {1, 2, 3, 4, 5, 6}, random.Random(1))
    assert current == {TP("a", 0): (1, 2), TP("a", 1): (2, 3), TP("a", 2): (3, 1), TP("b", 0): (1,), TP("b", 1): (2,)}
    assert set(proposed) == set(current)
    assert all(len(proposed[tp]) == len(current[tp]) and set(proposed[tp]) <= {4, 5, 6} for tp in current)
    assert sorted(proposed[TP("a", p)][0] for p in range(3)) == [4, 5, 6]  # leaders spread


@pytest.mark.parametrize(("topics", "brokers", "error", "message"), [
    (["a", "x", "y"], [1, 2], UnknownTopicError, "Topics x, y not found."),
    (["a"], [1, 9], InvalidReplicaAssignmentError, "Unknown broker id 9 (live brokers: 1,2,3)"),
    (["a"], [1], InvalidReplicationFactorError, "replication factor: 2 larger than available brokers: 1"),
])
def test_propose_refusals(topics, brokers, error, message):
    with pytest.raises(error) as e:
        propose({"a": topic((1, 2))}, topics, brokers, {1, 2, 3})
    assert str(e.value) == message


# ------------------------------------------------------------------------------ execute checks
def view(**kw) -> ClusterView:
    base = dict(assignments={"t": topic((1, 2), (2, 3), (3, 1)), "u": topic((1, 2), adding={0: (2,)})},
                live={1, 2, 3, 4}, marked=set(), in_znode={})
    base.update(kw)
    return ClusterView(**base)


def test_check_plan_returns_the_current_replicas():
    assert check_plan({TP("t", 0): (2, 4), TP("t", 2): (1, 3)}, view()) == {TP("t", 0): (1, 2), TP("t", 2): (3, 1)}
    assert check_plan({TP("t", 0): (2, 1)}, view()) == {TP("t", 0): (1, 2)}  # a new preferred leader is a change


@pytest.mark.parametrize(("plan", "kw", "error", "message"), [
    ({TP("x", 0): (1,), TP("t", 0): (1,)}, {}, UnknownTopicError, "Topic x not found."),
    ({TP("t", 7): (1, 2), TP("t", 9): (1, 2)}, {}, UnknownTopicError, "Unable to find partitions: t-7, t-9"),
    ({TP("t", 0): (1, 9)}, {}, InvalidReplicaAssignmentError, "Unknown broker id 9 (live brokers: 1,2,3,4)"),
    ({TP("t", 0): (7, 9)}, {}, InvalidReplicaAssignmentError, "Unknown broker ids 7,9 (live brokers: 1,2,3,4)"),
    ({TP("t", 0): (1, 4)}, dict(marked={"t"}), InvalidRequestError,
     "Topic t is marked for deletion; its partitions cannot be reassigned."),
    ({TP("t", 1): (1, 4)}, dict(in_znode={TP("t", 1): (4, 1)}), ReassignmentInProgressError,
     "Partition t-1 is already being reassigned."),
    ({TP("u", 0): (3, 4)}, {}, ReassignmentInProgressError, "Partition u-0 is already being reassigned."),
    ({TP("t", 0): (1, 2), TP("t", 1): (3, 4), TP("t", 2): (3, 1)}, {}, InvalidReplicaAssignmentError,
     "Partition t-0 is already assigned to replicas 1,2; Partition t-2 is already assigned to replicas 3,1 "
     "(a reassignment must change the replica list)."),
])
def test_check_plan_refusals(plan, kw, error, message):
    with pytest.raises(error) as e:
        check_plan(plan, view(**kw))
    assert str(e.value) == message


def test_throttle_values_name_old_replicas_for_leaders_and_new_ones_for_followers():
    current = {TP("t", 0): (1, 2), TP("t", 1): (2, 3), TP("u", 0): (1,)}
    plan = {TP("t", 0): (3, 4), TP("t", 1): (2, 3, 4), TP("u", 0): (2,)}
    topics, brokers = throttle_settings(current, plan)
    assert topics == {"t": ("0:1,0:2,1:2,1:3", "0:3,0:4,1:4"), "u": ("0:1", "0:2")}
    assert brokers == [1, 2, 3, 4]


# ------------------------------------------------------------------------------ elect-leaders
def test_election_json():
    assert parse_election_json('{"partitions":[{"topic":"a","partition":1},{"topic":"b","partition":0}]}') == {
        TP("a", 1), TP("b", 0)}


@pytest.mark.parametrize(("text", "message"), [
    ("[", "the election file is not valid JSON"),
    ('{"partition":[]}', 'invalid election JSON: expected {"partitions":[{"topic":"foo","partition":1},...]}'),
    ('{"partitions":[{"topic":"a","partition":true}]}', 'invalid election entry {"topic": "a", "partition": true}'),
    ('{"partitions":[]}', "the election file lists no partitions"),
    ('{"partitions":[{"topic":"a","partition":1},{"topic":"a","partition":1}]}',
     "Replica election data contains duplicate partitions: a-1"),
])
def test_election_json_refusals(text, message):
    with pytest.raises(InvalidRequestError) as e:
        parse_election_json(text)
    assert str(e.value).startswith(message)


def test_election_output_is_kafkas():
    lines, failed = format_results({
        TP("a", 1): (ErrorCode.NONE, None), TP("a", 0): (ErrorCode.NONE, None),
        TP("b", 0): (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed"),
        TP("c", 2): (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "Preferred replica 3 is not alive."),
    })
    assert lines == [
        "Successfully completed leader election (PREFERRED) for partitions a-0, a-1",
        "Valid replica already elected for partitions b-0",
        "Error completing leader election (PREFERRED) for partition: c-2: PREFERRED_LEADER_NOT_AVAILABLE: "
        "Preferred replica 3 is not alive.",
    ]
    assert failed == 1


# ------------------------------------------------------------------------------ admin API handlers
class FakeFlows:
    def __init__(self):
        self.calls = []

    def api_elect_preferred(self, partitions):
        self.calls.append(("elect", partitions))
        assert threading.current_thread().name == "controller-event-thread"
        return {TP("t", 0): (ErrorCode.NONE, None), TP("t", 1): (ErrorCode.ELECTION_NOT_NEEDED, "not needed"),
                TP("x", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")}

    def api_alter_reassignments(self, targets):
        self.calls.append(("alter", targets))
        return {tp: (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "none") if t is None else (ErrorCode.NONE, None)
                for tp, t in targets.items()}

    def api_list_reassignments(self, partitions):
        self.calls.append(("list", partitions))
        return {TP("t", 0): ((1, 2, 3, 4), (4,), (1,))}


class FakeController:
    """Runs admin calls on its own thread, like the event thread; may have lost its seat."""

    def __init__(self, acting=True, seat_lost_in_queue=False):
        self.is_acting = acting
        self.seat_lost_in_queue = seat_lost_in_queue
        self.flows = FakeFlows()

    def run_on_controller(self, fn, callback):
        def run():
            if self.seat_lost_in_queue:
                callback(None, ControllerMovedError("moved"))
                return
            try:
                callback(fn(self), None)
            except Exception as e:  # noqa: BLE001
                callback(None, e)

        threading.Thread(target=run, name="controller-event-thread").start()


def fake_broker(controller, partitions=()):
    cache = SimpleNamespace(
        partition=lambda tp: {s.tp: s for s in partitions}.get(tp),
        contains_topic=lambda t: False, topic_partitions=lambda t: {}, topic_ids={})
    return SimpleNamespace(controller=controller, metadata_cache=cache,
                           config=SimpleNamespace(delete_topic_enable=True), store=None,
                           authz=RequestAuthorizer())  # no authoriser: every request allowed


def leader_state(tp, leader, replicas):
    return PartitionLeaderState(tp, 1, leader, 1, tuple(replicas), 0, tuple(replicas))


def call(apis, handler, request, version):
    # encoded by kafka-python, decoded as the broker decodes it off the wire
    request, _ = APIS[request.API_KEY].request.decode_from(bytes(request.encode(version=version)), version)
    header = RequestHeader(request.API_KEY, version, 7)
    response = asyncio.run(getattr(apis, handler)(DecodedRequest(header, request)))
    return type(response).decode(response.encode(version=version), version=version)


def elect_request(topics=((("t", [0, 1]), ("x", [0])))):
    parts = None if topics is None else [
        ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps) for t, ps in topics]
    return ElectLeadersRequest(election_type=0, topic_partitions=parts, timeout_ms=2000)


def results_of(response):
    return {(t.topic, p.partition_id): p.error_code for t in response.replica_election_results
            for p in t.partition_result}


@pytest.mark.parametrize("version", range(VERSIONS[43][0], VERSIONS[43][1] + 1))
def test_elect_leaders_runs_the_flow_on_the_controller_thread_and_waits_for_the_new_leader(version):
    controller = FakeController()
    apis = AdminApis(fake_broker(controller, [leader_state(TP("t", 0), 1, (1, 2))]))
    response = call(apis, "handle_elect_leaders", elect_request(), version)
    assert results_of(response) == {("t", 0): 0, ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
                                    ("x", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert controller.flows.calls == [("elect", {TP("t", 0), TP("t", 1), TP("x", 0)})]


def test_elect_leaders_times_out_when_the_new_leader_never_shows():
    apis = AdminApis(fake_broker(FakeController(), [leader_state(TP("t", 0), 2, (1, 2))]))
    request = elect_request()
    request.timeout_ms = 200
    assert results_of(call(apis, "handle_elect_leaders", request, 2))[("t", 0)] == ErrorCode.REQUEST_TIMED_OUT


@pytest.mark.parametrize("controller", [FakeController(acting=False), FakeController(seat_lost_in_queue=True)])
def test_elect_leaders_on_a_non_controller(controller):
    response = call(AdminApis(fake_broker(controller)), "handle_elect_leaders", elect_request(), 2)
    assert response.error_code == ErrorCode.NOT_CONTROLLER
    assert set(results_of(response).values()) == {ErrorCode.NOT_CONTROLLER}
    response = call(AdminApis(fake_broker(controller)), "handle_elect_leaders", elect_request(None), 2)
    assert response.error_code == ErrorCode.NOT_CONTROLLER


def test_elect_leaders_refuses_an_unknown_type_and_reports_a_missing_flow():
    request = elect_request()
    request.election_type = 7
    response = call(AdminApis(fake_broker(FakeController())), "handle_elect_leaders", request, 1)
    assert response.error_code == ErrorCode.INVALID_REQUEST
    assert set(results_of(response).values()) == {ErrorCode.INVALID_REQUEST}
    controller = FakeController()
    controller.flows = object()
    response = call(AdminApis(fake_broker(controller)), "handle_elect_leaders", elect_request(), 2)
    assert response.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    message = response.replica_election_results[0].partition_result[0].error_message
    assert "does not implement api_elect_preferred" in message


def alter_request(entries, allow_rf_change=True):
    cls = AlterPartitionReassignmentsRequest
    by_topic = {}
    for (t, p), replicas in entries.items():
        by_topic.setdefault(t, []).append(
            cls.ReassignableTopic.ReassignablePartition(partition_index=p, replicas=replicas))
    return cls(timeout_ms=2000, allow_replication_factor_change=allow_rf_change,
               topics=[cls.ReassignableTopic(name=t, partitions=ps) for t, ps in by_topic.items()])


@pytest.mark.parametrize("version", [0, 1])
def test_alter_reassignments_checks_then_calls_the_flow(version):
    controller = FakeController()
    apis = AdminApis(fake_broker(controller, [leader_state(TP("t", 3), 1, (1, 2))]))
    request = alter_request({("t", 0): [2, 3], ("t", 1): None, ("t", 2): [], ("t", 4): [1, 1], ("t", 3): [1, 2, 3]},
                            allow_rf_change=False)
    response = call(apis, "handle_alter_partition_reassignments", request, version)
    got = {(t.name, p.partition_index): p.error_code for t in response.responses for p in t.partitions}
    assert got == {("t", 0): 0, ("t", 1): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                   ("t", 2): ErrorCode.INVALID_REPLICA_ASSIGNMENT, ("t", 4): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                   ("t", 3): ErrorCode.INVALID_REPLICATION_FACTOR if version >= 1 else 0}
    sent = {TP("t", 0): (2, 3), TP("t", 1): None}
    if version == 0:
        sent[TP("t", 3)] = (1, 2, 3)
    assert controller.flows.calls == [("alter", sent)]


def test_alter_and_list_reassignments_on_a_non_controller():
    apis = AdminApis(fake_broker(FakeController(acting=False)))
    response = call(apis, "handle_alter_partition_reassignments", alter_request({("t", 0): [1]}), 0)
    assert response.error_code == ErrorCode.NOT_CONTROLLER
    assert response.responses == []
    response = call(apis, "handle_list_partition_reassignments", ListPartitionReassignmentsRequest(timeout_ms=100), 0)
    assert response.error_code == ErrorCode.NOT_CONTROLLER


def test_list_reassignments():
    controller = FakeController()
    request = ListPartitionReassignmentsRequest(timeout_ms=1000, topics=[
        ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(name="t", partition_indexes=[0, 5])])
    response = call(AdminApis(fake_broker(controller)), "handle_list_partition_reassignments", request, 0)
    assert response.error_code == 0
    [t] = response.topics
    [p] = t.partitions
    assert (t.name, p.partition_index) == ("t", 0)
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ([1, 2, 3, 4], [4], [1])
    assert controller.flows.calls == [("list", {TP("t", 0), TP("t", 5)})]


@pytest.mark.parametrize("version", range(VERSIONS[20][0], VERSIONS[20][1] + 1))
def test_delete_topics_refused_when_disabled_or_not_controller(version):
    if version >= 6:
        request = DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name="a")], timeout_ms=100)
    else:
        request = DeleteTopicsRequest(topic_names=["a"], timeout_ms=100)
    broker = fake_broker(FakeController())
    broker.config.delete_topic_enable = False
    [r] = call(AdminApis(broker), "handle_delete_topics", request, version).responses
    assert r.error_code == (ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST)
    [r] = call(AdminApis(fake_broker(FakeController(acting=False))), "handle_delete_topics", request, version).responses
    assert (r.name, r.error_code) == ("a", ErrorCode.NOT_CONTROLLER)


def test_config_lists_as_kafka_configs_reads_them():
    from praha.admin.configs import parse_config_list

    assert parse_config_list("retention.ms=1000, cleanup.policy=[compact,delete]") == {
        "retention.ms": "1000", "cleanup.policy": "compact,delete"}
    assert parse_config_list("follower.replication.throttled.replicas=[0:1,1:2]") == {
        "follower.replication.throttled.replicas": "0:1,1:2"}
    assert parse_config_list("") == {}
    with pytest.raises(InvalidRequestError):
        parse_config_list("retention.ms")
    with pytest.raises(InvalidRequestError):
        parse_config_list("=5")
