"""Catalogue: the admin APIs (CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders,
AlterPartitionReassignments, ListPartitionReassignments, AlterClientQuotas,
DescribeClientQuotas) given invalid arguments, with
the exact error code and message each answers — as Kafka's AdminClient would see them.

Requests go to the active controller of the shared misuse cluster (and once each to a
broker that is not, for NOT_CONTROLLER). Validate-only where the API has it, so a case
that wrongly succeeded would not change the cluster for the next one.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.admin import AlterClientQuotasRequest as AQ
from kafka.protocol.admin import AlterPartitionReassignmentsRequest as AR
from kafka.protocol.admin import CreatePartitionsRequest as CP
from kafka.protocol.admin import CreateTopicsRequest as CT
from kafka.protocol.admin import DeleteTopicsRequest as DT
from kafka.protocol.admin import DescribeClientQuotasRequest as DQ
from kafka.protocol.admin import ElectLeadersRequest as EL
from kafka.protocol.admin import ListPartitionReassignmentsRequest as LR

from praha.errors import ErrorCode as E
from praha.protocol.client import BrokerConnection

pytestmark = pytest.mark.integration

LIVE = "(live: [1, 2, 3])"


def create(name: str, partitions: int = 1, rf: int = 1, assignment: dict[int, list[int]] | None = None,
           configs: dict[str, str] | None = None):
    return CT(topics=[CT.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf,
        assignments=[CT.CreatableTopic.CreatableReplicaAssignment(partition_index=p, broker_ids=b)
                     for p, b in (assignment or {}).items()],
        configs=[CT.CreatableTopic.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])],
        timeout_ms=5000, validate_only=True)


def grow(topic: str, count: int, assignment: list[list[int]] | None = None):
    return CP(topics=[CP.CreatePartitionsTopic(
        name=topic, count=count,
        assignments=None if assignment is None else [CP.CreatePartitionsTopic.CreatePartitionsAssignment(broker_ids=a)
                                                     for a in assignment])],
        timeout_ms=5000, validate_only=True)


def elect(topic: str, partition: int, election_type: int = 0):
    return EL(election_type=election_type, topic_partitions=[EL.TopicPartitions(topic=topic, partitions=[partition])],
              timeout_ms=5000)


def move(topic: str, partition: int, replicas: list[int] | None):
    return AR(timeout_ms=5000, topics=[AR.ReassignableTopic(name=topic, partitions=[
        AR.ReassignableTopic.ReassignablePartition(partition_index=partition, replicas=replicas)])])


def quota(entity: dict[str, str | None], key: str, value: float):
    """AlterClientQuotas, validate-only: a case that wrongly succeeded changes nothing."""
    return AQ(validate_only=True, entries=[AQ.EntryData(
        entity=[AQ.EntryData.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
        ops=[AQ.EntryData.OpData(key=key, value=value, remove=False)])])


def quota_filter(*components: tuple[str, int, str | None]):
    return DQ(components=[DQ.ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in components],
              strict=False)


def quota_altered(r) -> tuple[int, Any]:
    e = r.entries[0]
    return e.error_code, e.error_message


def quotas_described(r) -> tuple[int, Any]:
    return r.error_code, r.error_message


def created(r) -> tuple[int, Any]:
    t = r.topics[0]
    return t.error_code, t.error_message


def grown(r) -> tuple[int, Any]:
    t = r.results[0]
    return t.error_code, t.error_message


def elected(r) -> tuple[int, Any]:
    p = r.replica_election_results[0].partition_result[0]
    return p.error_code, p.error_message


def moved(r) -> tuple[int, Any]:
    if r.error_code:  # request-level (NOT_CONTROLLER), as Kafka answers it
        return r.error_code, r.error_message
    p = r.responses[0].partitions[0]
    return p.error_code, p.error_message


def deleted(r) -> tuple[int, Any]:
    return r.responses[0].error_code, None


KNOWN = ("cleanup.policy, compression.type, delete.retention.ms, file.delete.delay.ms, flush.messages, flush.ms, "
         "follower.replication.throttled.replicas, index.interval.bytes, leader.replication.throttled.replicas, "
         "max.compaction.lag.ms, max.message.bytes, message.downconversion.enable, message.format.version, "
         "message.timestamp.after.max.ms, message.timestamp.before.max.ms, "
         "message.timestamp.difference.max.ms, message.timestamp.type, min.cleanable.dirty.ratio, "
         "min.compaction.lag.ms, min.insync.replicas, preallocate, retention.bytes, retention.ms, segment.bytes, "
         "segment.index.bytes, segment.jitter.ms, segment.ms, unclean.leader.election.enable")

# (id, request, version, how to read the answer, (error code, error message))
CATALOGUE: list[tuple[str, Any, int, Callable[[Any], tuple[int, Any]], tuple[int, Any]]] = [
    ("create-illegal-chars", create("bad name!"), 5, created,
     (E.INVALID_TOPIC_EXCEPTION, "topic name 'bad name!' contains illegal characters [' ', '!']; use only ASCII "
                                 "letters, digits, '.', '_' and '-'")),
    ("create-too-long", create("x" * 250), 5, created,
     (E.INVALID_TOPIC_EXCEPTION, "topic name is 250 characters long; the limit is 249")),
    ("create-empty-name", create(""), 5, created, (E.INVALID_TOPIC_EXCEPTION, "topic name is empty")),
    ("create-dot", create("."), 5, created, (E.INVALID_TOPIC_EXCEPTION, "topic name cannot be '.'")),
    ("create-zero-partitions", create("t1", 0), 5, created,
     (E.INVALID_PARTITIONS, "number of partitions must be larger than 0, got 0")),
    ("create-negative-partitions", create("t1", -5), 5, created,
     (E.INVALID_PARTITIONS, "number of partitions must be larger than 0, got -5")),
    ("create-zero-rf", create("t1", 1, 0), 5, created,
     (E.INVALID_REPLICATION_FACTOR, "replication factor must be larger than 0, got 0")),
    ("create-negative-rf", create("t1", 1, -2), 5, created,
     (E.INVALID_REPLICATION_FACTOR, "replication factor must be larger than 0, got -2")),
    ("create-rf-above-brokers", create("t1", 1, 4), 5, created,
     (E.INVALID_REPLICATION_FACTOR, "replication factor: 4 larger than available brokers: 3")),
    ("create-exists", create("orders"), 5, created, (E.TOPIC_ALREADY_EXISTS, "topic 'orders' already exists")),
    ("create-collides", create("orders.x"), 5, created,
     (E.INVALID_TOPIC_EXCEPTION, "topic 'orders.x' collides with existing topic 'orders_x' ('.' and '_' are "
                                 "equivalent)")),
    ("create-config-not-a-number", create("t1", configs={"min.insync.replicas": "abc"}), 5, created,
     (E.INVALID_CONFIG, "invalid value 'abc' for topic config min.insync.replicas: expected a number")),
    ("create-config-unknown", create("t1", configs={"no.such": "1"}), 5, created,
     (E.INVALID_CONFIG, f"unknown topic config 'no.such' (known: {KNOWN})")),
    ("create-assignment-unknown-broker", create("t1", -1, -1, {0: [1, 9]}), 5, created,
     (E.INVALID_REPLICA_ASSIGNMENT, f"partition 0 is assigned to unknown or dead brokers [9] {LIVE}")),
    ("create-assignment-dup-broker", create("t1", -1, -1, {0: [1, 1]}), 5, created,
     (E.INVALID_REPLICA_ASSIGNMENT, "partition 0 lists a broker twice: [1, 1]")),
    ("create-assignment-and-counts", create("t1", 1, 1, {0: [1]}), 5, created,
     (E.INVALID_REPLICA_ASSIGNMENT, "give either a replica assignment or partitions and replication factor, "
                                    "not both")),
    ("create-assignment-gap", create("t1", -1, -1, {1: [1]}), 5, created,
     (E.INVALID_REPLICA_ASSIGNMENT, "partitions must be numbered 0..0, got [1]")),
    ("delete-unknown", DT(topic_names=["nosuch"], timeout_ms=5000), 4, deleted,
     (E.UNKNOWN_TOPIC_OR_PARTITION, None)),
    ("delete-illegal-name", DT(topic_names=["bad name!"], timeout_ms=5000), 4, deleted,
     (E.UNKNOWN_TOPIC_OR_PARTITION, None)),
    ("grow-unknown", grow("nosuch", 5), 2, grown, (E.UNKNOWN_TOPIC_OR_PARTITION, "Topic 'nosuch' does not exist.")),
    ("grow-decrease", grow("orders", 2), 2, grown,
     (E.INVALID_PARTITIONS, "The number of partitions for a topic can only be increased. Topic orders currently "
                            "has 3 partitions, 2 would not be an increase.")),
    ("grow-negative", grow("orders", -1), 2, grown,
     (E.INVALID_PARTITIONS, "The number of partitions for a topic can only be increased. Topic orders currently "
                            "has 3 partitions, -1 would not be an increase.")),
    ("grow-unknown-broker", grow("orders", 4, [[1, 9]]), 2, grown,
     (E.INVALID_REPLICA_ASSIGNMENT, "Unknown broker(s) in replica assignment: 9.")),
    ("grow-dup-broker", grow("orders", 4, [[1, 1]]), 2, grown,
     (E.INVALID_REPLICA_ASSIGNMENT, "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 3.")),
    ("grow-assignment-count", grow("orders", 5, [[1, 2]]), 2, grown,
     (E.INVALID_REPLICA_ASSIGNMENT, "Increasing the number of partitions by 2 but 1 assignments provided.")),
    ("grow-assignment-rf", grow("orders", 4, [[1]]), 2, grown,
     (E.INVALID_REPLICA_ASSIGNMENT, "Inconsistent replication factor between partitions, partition 0 has 2 while "
                                    "partitions [3] have replication factors [1], respectively.")),
    ("elect-unknown-topic", elect("nosuch", 0), 2, elected,
     (E.UNKNOWN_TOPIC_OR_PARTITION, "unknown partition nosuch-0")),
    ("elect-unknown-partition", elect("orders", 99), 2, elected,
     (E.UNKNOWN_TOPIC_OR_PARTITION, "unknown partition orders-99")),
    ("elect-unclean-with-a-leader", elect("orders", 1, 1), 2, elected,
     (E.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")),
    ("elect-unclean-unknown-partition", elect("orders", 99, 1), 2, elected,
     (E.UNKNOWN_TOPIC_OR_PARTITION, "unknown partition orders-99")),
    ("elect-bad-type", elect("orders", 1, 7), 2, elected,
     (E.INVALID_REQUEST, "Unknown election type 7.")),
    ("move-unknown-topic", move("nosuch", 0, [1, 2]), 0, moved,
     (E.UNKNOWN_TOPIC_OR_PARTITION, "unknown partition nosuch-0")),
    ("move-unknown-partition", move("orders", 99, [1, 2]), 0, moved,
     (E.UNKNOWN_TOPIC_OR_PARTITION, "unknown partition orders-99")),
    ("move-dup-broker", move("orders", 0, [2, 2]), 0, moved,
     (E.INVALID_REPLICA_ASSIGNMENT, "The replica list [2, 2] contains a broker twice.")),
    ("move-empty", move("orders", 0, []), 0, moved, (E.INVALID_REPLICA_ASSIGNMENT, "The replica list is empty.")),
    ("move-negative-broker", move("orders", 0, [-1, 2]), 0, moved,
     (E.INVALID_REPLICA_ASSIGNMENT, "The replica list [-1, 2] contains a negative broker id.")),
    ("quota-negative", quota({"client-id": "c"}, "producer_byte_rate", -1.0), 1, quota_altered,
     (E.INVALID_REQUEST, "Quota producer_byte_rate must be greater than 0")),
    ("quota-zero", quota({"user": "u"}, "request_percentage", 0.0), 0, quota_altered,
     (E.INVALID_REQUEST, "Quota request_percentage must be greater than 0")),
    ("quota-unknown-key", quota({"client-id": "c"}, "retention.ms", 1.0), 1, quota_altered,
     (E.INVALID_REQUEST, "Invalid configuration key retention.ms")),
    ("quota-fractional-long", quota({"client-id": "c"}, "consumer_byte_rate", 0.5), 1, quota_altered,
     (E.INVALID_REQUEST, "Configuration consumer_byte_rate must be a LONG value")),
    ("quota-bad-entity-type", quota({"topic": "orders"}, "producer_byte_rate", 1.0), 1, quota_altered,
     (E.INVALID_REQUEST, "Unhandled client quota entity type: topic")),
    ("quota-empty-entity", quota({}, "producer_byte_rate", 1.0), 1, quota_altered,
     (E.INVALID_REQUEST, "Invalid empty client quota entity")),
    ("quota-empty-name", quota({"client-id": ""}, "producer_byte_rate", 1.0), 1, quota_altered,
     (E.INVALID_REQUEST, "Empty client-id not supported")),
    ("quota-ip-with-user", quota({"user": "u", "ip": "127.0.0.1"}, "producer_byte_rate", 1.0), 1, quota_altered,
     (E.INVALID_REQUEST, "Invalid quota entity combination, IP entity should not be used with user/client ID "
                         "entity.")),
    ("quota-filter-custom-type", quota_filter(("topic", 0, "orders")), 1, quotas_described,
     (E.UNSUPPORTED_VERSION, "Custom entity type 'topic' not supported")),
    ("quota-filter-empty-type", quota_filter(("", 2, None)), 1, quotas_described,
     (E.INVALID_REQUEST, "Unexpected empty filter component entity type")),
    ("quota-filter-duplicate", quota_filter(("client-id", 2, None), ("client-id", 1, None)), 1, quotas_described,
     (E.INVALID_REQUEST, "Duplicate client filter component entity type")),
    ("quota-filter-ip-and-user", quota_filter(("ip", 2, None), ("user", 2, None)), 1, quotas_described,
     (E.INVALID_REQUEST, "Invalid entity filter component combination, IP filter component should not be used "
                         "with user or clientId filter component.")),
    ("quota-filter-bad-match-type", quota_filter(("user", 7, None)), 1, quotas_described,
     (E.INVALID_REQUEST, "Unexpected match type: 7")),
]


def send(port: int, request, version: int):
    with BrokerConnection("127.0.0.1", port, timeout=30) as c:
        return c.send(request, version)


@pytest.fixture(scope="module")
def ports(misuse_cluster):
    ctrl = misuse_cluster.store.get_controller_id()
    other = next(b for b in (1, 2, 3) if b != ctrl)
    return misuse_cluster.port(ctrl), misuse_cluster.port(other)


@pytest.mark.parametrize(("case_id", "request_", "version", "read", "expected"), CATALOGUE,
                         ids=[c[0] for c in CATALOGUE])
def test_admin_misuse(ports, case_id, request_, version, read, expected):
    assert read(send(ports[0], request_, version)) == expected


def test_elect_when_the_preferred_replica_already_leads(ports):
    assert elected(send(ports[0], elect("orders", 1), 2)) == (E.ELECTION_NOT_NEEDED,
                                                            "already led by its preferred replica")


def test_list_reassignments_of_an_unknown_topic_lists_nothing(ports):
    r = send(ports[0], LR(timeout_ms=5000, topics=[LR.ListPartitionReassignmentsTopics(name="nosuch",
                                                                                      partition_indexes=[0])]), 0)
    assert (r.error_code, r.topics) == (0, [])


@pytest.mark.parametrize(("request_", "version", "read"), [
    (create("t1"), 5, created), (DT(topic_names=["orders"], timeout_ms=5000), 4, deleted),
    (grow("orders", 4), 2, grown), (elect("orders", 0), 2, elected), (move("orders", 0, [2, 1]), 0, moved)],
    ids=["create", "delete", "grow", "elect", "move"])
def test_a_broker_that_is_not_the_controller_says_so(ports, request_, version, read):
    code, _ = read(send(ports[1], request_, version))
    assert code == E.NOT_CONTROLLER


def test_move_to_a_broker_that_does_not_exist_is_refused(ports):
    try:
        code, _ = moved(send(ports[0], move("orders", 2, [1, 9]), 0))
        assert code == E.INVALID_REPLICA_ASSIGNMENT
    finally:
        send(ports[0], move("orders", 2, None), 0)  # cancel, if it was accepted
