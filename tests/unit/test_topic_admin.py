"""Topic validation and Kafka's rack-unaware replica placement (pure logic)."""
import random
from collections import Counter

import pytest

from praha.errors import (
    ConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicExistsError,
)
from praha.topic_rules import (
    assign_replicas,
    parse_replica_assignment,
    plan_topic,
    validate_topic_config,
    validate_topic_name,
)


def test_placement_matches_kafkas_rack_unaware_algorithm_for_a_fixed_start():
    # Kafka's AdminUtils example: 5 brokers, 10 partitions, RF 3, start index 0
    got = assign_replicas([0, 1, 2, 3, 4], 10, 3, start_index=0)
    assert got[0] == (0, 1, 2)
    assert got[1] == (1, 2, 3)
    assert got[4] == (4, 0, 1)
    assert got[5] == (0, 2, 3)  # second round: followers shifted by one more
    assert got[9] == (4, 1, 2)


@pytest.mark.parametrize(("brokers", "partitions", "rf"), [(3, 6, 3), (6, 60, 3), (5, 100, 2)])
def test_preferred_leaders_and_replicas_are_balanced(brokers, partitions, rf):
    got = assign_replicas(list(range(1, brokers + 1)), partitions, rf, rng=random.Random(7))
    leaders = Counter(r[0] for r in got.values())
    assert max(leaders.values()) - min(leaders.values()) <= 1
    load = Counter(b for r in got.values() for b in r)
    assert max(load.values()) - min(load.values()) <= 1
    assert all(len(set(r)) == rf for r in got.values())


def test_placement_errors():
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 3"):
        assign_replicas([1, 2, 3], 1, 4)
    with pytest.raises(InvalidPartitionsError):
        assign_replicas([1, 2, 3], 0, 1)
    with pytest.raises(InvalidPartitionsError):
        assign_replicas([1, 2, 3], -3, 1)
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas([1, 2, 3], 1, 0)


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "has space", "sl/ash", "ünicode", "star*"])
def test_illegal_topic_names(name):
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)


def test_legal_names_and_collisions():
    validate_topic_name("a" * 249)
    validate_topic_name("Orders_v2.eu-west")
    with pytest.raises(InvalidTopicError, match="collides"):
        plan_topic("metrics.cpu", 1, 1, {1}, {"metrics_cpu"})
    with pytest.raises(TopicExistsError):
        plan_topic("t", 1, 1, {1}, {"t"})


def test_topic_configs_are_validated():
    assert validate_topic_config({"min.insync.replicas": "2", "unclean.leader.election.enable": "TRUE"}) == {
        "min.insync.replicas": "2", "unclean.leader.election.enable": "true"}
    with pytest.raises(ConfigError, match="unknown topic config 'retention.mss'"):
        validate_topic_config({"retention.mss": "1"})
    with pytest.raises(ConfigError, match="expected a number"):
        validate_topic_config({"retention.ms": "soon"})
    with pytest.raises(ConfigError, match="cleanup.policy"):
        validate_topic_config({"cleanup.policy": "shred"})
    with pytest.raises(ConfigError, match="larger than the replication factor"):
        plan_topic("t", 1, 2, {1, 2, 3}, set(), {"min.insync.replicas": "3"})


def test_manual_assignment():
    assert parse_replica_assignment("1:2:3,2:3:1") == {0: (1, 2, 3), 1: (2, 3, 1)}
    with pytest.raises(InvalidReplicaAssignmentError, match="partition 1"):
        parse_replica_assignment("1:2,x:3")
    plan, _ = plan_topic("t", None, None, {1, 2, 3}, set(), assignment={0: (3, 1), 1: (1, 2)})
    assert plan.partitions[0].replicas == (3, 1)
    with pytest.raises(InvalidReplicaAssignmentError, match="twice"):
        plan_topic("t", None, None, {1, 2, 3}, set(), assignment={0: (1, 1)})
    with pytest.raises(InvalidReplicaAssignmentError, match="unknown or dead brokers \\[7\\]"):
        plan_topic("t", None, None, {1, 2, 3}, set(), assignment={0: (1, 7)})
    with pytest.raises(InvalidReplicaAssignmentError, match="same number"):
        plan_topic("t", None, None, {1, 2, 3}, set(), assignment={0: (1, 2), 1: (3,)})
    with pytest.raises(InvalidReplicaAssignmentError, match="not both"):
        plan_topic("t", 2, 2, {1, 2, 3}, set(), assignment={0: (1, 2)})


@pytest.mark.parametrize(("key", "value", "message"), [
    ("segment.bytes", "1", "Invalid value 1 for configuration segment.bytes: Value must be at least 14"),
    ("retention.ms", "-5", "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
    ("min.cleanable.dirty.ratio", "1.5",
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ("segment.ms", "0", "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
])
def test_topic_configs_outside_kafkas_bounds_are_refused_naming_the_key(key, value, message):
    with pytest.raises(ConfigError) as e:
        validate_topic_config({key: value})
    assert str(e.value) == message


def test_kafkas_boundary_values_are_accepted():
    assert validate_topic_config({"segment.bytes": "14", "retention.ms": "-1", "min.cleanable.dirty.ratio": "0"})
