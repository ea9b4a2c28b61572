"""Kafka's topic rules, with no I/O: names, topic configs, replica placement, and the
checks a topic creation or a partition expansion makes before anything is written.

Used by `praha.zk.admin_zk` (which does the reads and writes) for both the admin tools and
the broker's CreateTopics/CreatePartitions APIs, so every check happens before any write
and a refused request changes nothing.

Replica placement is Kafka's rack-unaware spread: partition p's first replica is broker
(p + start) mod n, the followers are shifted by an amount that grows every n partitions,
so preferred leaders and followers are both balanced across brokers. An expansion
continues where partition 0's first replica starts, as Kafka's AdminZkClient.addPartitions.
"""
from __future__ import annotations

import random
import re
from collections.abc import Collection, Mapping, Sequence

from praha.common import ReplicaAssignment, TopicAssignment, TopicPartition
from praha.config import TOPIC_CONFIG_DEFS, ConfigDef, ConfigType
from praha.config.model import KafkaVersion, OneOf, Range, ValidList
from praha.errors import (
    ConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    ReassignmentInProgressError,
    TopicExistsError,
    UnknownTopicError,
)

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")



CLEANUP_POLICIES = ("compact", "delete")

#: how `validate_topic_config` reads each kind of value
_INT = int
_BOOL = {"true", "false"}


def _kind(d: ConfigDef) -> object:
    if isinstance(d.validator, ValidList):
        return "list"
    if isinstance(d.validator, KafkaVersion):
        return "version"
    if isinstance(d.validator, OneOf):
        return set(d.validator.choices)
    return {ConfigType.BOOLEAN: _BOOL, ConfigType.INT: _INT, ConfigType.SHORT: _INT, ConfigType.LONG: _INT,
            ConfigType.DOUBLE: float}.get(d.type, str)


#: the topic settings CreateTopics and AlterConfigs accept (the table's, less those praha
#: does not serve: tiered storage, codec levels), each with the kind of its value
TOPIC_CONFIGS: dict[str, object] = {d.name: _kind(d) for d in TOPIC_CONFIG_DEFS if d.applied}

#: Kafka's bounds of the numeric topic configs (LogConfig's `atLeast` / `between`), inclusive: the table's
TOPIC_CONFIG_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    d.name: (d.validator.low, d.validator.high) for d in TOPIC_CONFIG_DEFS if isinstance(d.validator, Range)}


#: Kafka's internal topics: flagged internal in Metadata, written only by their coordinators
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def is_internal_topic(name: str) -> bool:
    """Kafka's `Topic.isInternal`; tools list internal topics unless told to leave them out."""
    return name in INTERNAL_TOPICS


def validate_topic_name(name: str) -> None:
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(f"topic name is {len(name)} characters long; the limit is {MAX_TOPIC_NAME_LENGTH}")
    if not _LEGAL_NAME.match(name):
        bad = sorted({c for c in name if not re.match(r"[a-zA-Z0-9._-]", c)})
        raise InvalidTopicError(
            f"topic name {name!r} contains illegal characters {bad}; use only ASCII letters, digits, '.', '_' and '-'"
        )


def collision_name(name: str) -> str:
    """Kafka's metric names map '.' to '_', so topics differing only there would collide."""
    return name.replace(".", "_")


def validate_topic_config(config: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for key, value in config.items():
        kind = TOPIC_CONFIGS.get(key)
        if kind is None:
            raise ConfigError(f"unknown topic config {key!r} (known: {', '.join(sorted(TOPIC_CONFIGS))})")
        value = str(value).strip()
        if kind == "list":  # cleanup.policy: a list of compact / delete, as Kafka's ValidList
            parts = [p.strip() for p in value.split(",")]
            if not value or any(p not in CLEANUP_POLICIES for p in parts):
                raise ConfigError(f"Invalid value {value} for configuration {key}: "
                                  f"String must be one of: {', '.join(CLEANUP_POLICIES)}")
            value = ",".join(dict.fromkeys(parts))
        elif kind == "version":
            KafkaVersion().check(key, value)
        elif isinstance(kind, set):
            if value not in kind and not (kind is _BOOL and value.lower() in _BOOL):
                raise ConfigError(f"invalid value {value!r} for topic config {key}: expected one of {sorted(kind)}")
            if kind is _BOOL:
                value = value.lower()
        elif kind in (int, float):
            try:
                number = kind(value)
            except ValueError:
                raise ConfigError(f"invalid value {value!r} for topic config {key}: expected a number") from None
            if key == "min.insync.replicas" and number < 1:
                raise ConfigError("min.insync.replicas must be at least 1")
            low, high = TOPIC_CONFIG_BOUNDS.get(key, (None, None))
            if low is not None and number < low:
                raise ConfigError(f"Invalid value {value} for configuration {key}: Value must be at least {low}")
            if high is not None and number > high:
                raise ConfigError(f"Invalid value {value} for configuration {key}: Value must be no more than {high}")
        out[key] = value
    check_compaction_lags(out)
    return out


def check_compaction_lags(config: Mapping[str, str]) -> None:
    """Kafka's LogConfig check: min.compaction.lag.ms may not exceed max.compaction.lag.ms
    (of the whole topic config: an alter checks the merged result)."""
    lag_min, lag_max = config.get("min.compaction.lag.ms"), config.get("max.compaction.lag.ms")
    try:
        conflict = lag_min is not None and lag_max is not None and int(lag_min) > int(lag_max)
    except ValueError:
        return  # a bad number is refused by its own check
    if conflict:
        raise ConfigError(f"conflict topic config setting min.compaction.lag.ms ({lag_min}) > "
                          f"max.compaction.lag.ms ({lag_max})")


def assign_replicas(
    brokers: Sequence[int], partitions: int, replication_factor: int,
    start_index: int = -1, start_partition: int = 0, rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Kafka's rack-unaware replica assignment over `brokers` (sorted first)."""
    if partitions <= 0:
        raise InvalidPartitionsError(f"number of partitions must be larger than 0, got {partitions}")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(f"replication factor must be larger than 0, got {replication_factor}")
    ids = sorted(brokers)
    n = len(ids)
    if replication_factor > n:
        raise InvalidReplicationFactorError(
            f"replication factor: {replication_factor} larger than available brokers: {n}"
        )
    rng = rng or random.Random()
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    out: dict[int, tuple[int, ...]] = {}
    for pid in range(start_partition, start_partition + partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        replicas = [ids[first]]
        for j in range(replication_factor - 1):
            offset = 1 + (shift + j) % (n - 1)
            replicas.append(ids[(first + offset) % n])
        out[pid] = tuple(replicas)
    return out


def parse_replica_assignment(text: str) -> dict[int, tuple[int, ...]]:
    """Kafka's `--replica-assignment` syntax: `1:2:3,2:3:1` (partition order, colon-separated replicas)."""
    out = {}
    for p, part in enumerate(text.split(",")):
        try:
            out[p] = tuple(int(b) for b in part.strip().split(":"))
        except ValueError:
            raise InvalidReplicaAssignmentError(
                f"invalid replica assignment {text!r}: partition {p} is {part!r}, expected broker ids joined by ':'"
            ) from None
    return out


def validate_assignment(assignment: Mapping[int, Sequence[int]], live_brokers: set[int],
                        start_partition: int = 0) -> None:
    if not assignment:
        raise InvalidReplicaAssignmentError("replica assignment is empty")
    expected = list(range(start_partition, start_partition + len(assignment)))
    if sorted(assignment) != expected:
        raise InvalidReplicaAssignmentError(
            f"partitions must be numbered {expected[0]}..{expected[-1]}, got {sorted(assignment)}"
        )
    sizes = {len(r) for r in assignment.values()}
    if len(sizes) != 1:
        raise InvalidReplicaAssignmentError("every partition must have the same number of replicas")
    for p, replicas in assignment.items():
        if not replicas:
            raise InvalidReplicaAssignmentError(f"partition {p} has no replicas")
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(f"partition {p} lists a broker twice: {list(replicas)}")
        unknown = [b for b in replicas if b not in live_brokers]
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"partition {p} is assigned to unknown or dead brokers {unknown} (live: {sorted(live_brokers)})"
            )


def plan_topic(
    name: str,
    partitions: int | None,
    replication_factor: int | None,
    live_brokers: set[int],
    existing_topics: set[str],
    config: Mapping[str, str] | None = None,
    assignment: Mapping[int, Sequence[int]] | None = None,
    default_partitions: int = 1,
    default_replication_factor: int = 1,
) -> tuple[TopicAssignment, dict[str, str]]:
    """Everything a creation checks, with no I/O: returns what to write, or raises."""
    validate_topic_name(name)
    if name in existing_topics:
        raise TopicExistsError(f"topic {name!r} already exists")
    clash = [t for t in existing_topics if collision_name(t) == collision_name(name)]
    if clash:
        raise InvalidTopicError(
            f"topic {name!r} collides with existing topic {clash[0]!r} ('.' and '_' are equivalent)"
        )
    cfg = validate_topic_config(config or {})
    if assignment:
        if partitions not in (None, -1) or replication_factor not in (None, -1):
            raise InvalidReplicaAssignmentError(
                "give either a replica assignment or partitions and replication factor, not both"
            )
        validate_assignment(assignment, live_brokers)
        replicas = {p: tuple(r) for p, r in assignment.items()}
    else:
        if not live_brokers:
            raise InvalidReplicationFactorError("no live brokers to place replicas on")
        p = default_partitions if partitions in (None, -1) else partitions
        rf = default_replication_factor if replication_factor in (None, -1) else replication_factor
        replicas = assign_replicas(sorted(live_brokers), p, rf)
    check_min_insync_replicas(cfg, len(next(iter(replicas.values()))))
    return TopicAssignment({p: ReplicaAssignment(r) for p, r in replicas.items()}), cfg


def check_min_insync_replicas(config: Mapping[str, str], replication_factor: int) -> None:
    """A topic whose min.insync.replicas exceeds its replication factor takes no acks=all
    write: refused at creation and at every config change alike."""
    min_isr = int(config.get("min.insync.replicas", "1"))
    if min_isr > replication_factor:
        raise ConfigError(f"min.insync.replicas={min_isr} is larger than the replication factor "
                          f"{replication_factor}: no write could succeed")


# ------------------------------------------------------------------------------- expansion
def new_partition_replicas(current_count: int, total: int,
                           given: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """The replica lists of the new partitions from a manual assignment, which lists either
    every partition (Kafka 2.x's `--replica-assignment`: the existing ones are ignored) or
    only the new ones (the CreatePartitions API, older tools)."""
    adding = total - current_count
    lists = [tuple(r) for r in given]
    if len(lists) == total and total != adding:
        lists = lists[current_count:]
    if len(lists) != adding:
        raise InvalidReplicaAssignmentError(
            f"Increasing the number of partitions by {adding} but {len(lists)} assignments provided.")
    return lists


def plan_new_partitions(
    topic: str,
    current: TopicAssignment | None,
    total: int,
    live_brokers: Collection[int],
    assignment: Sequence[Sequence[int]] | None = None,
    marked_for_deletion: bool = False,
    reassigning: Collection[TopicPartition] = (),
    start_index: int | None = None,
) -> dict[int, tuple[int, ...]]:
    """Everything an expansion checks, with no I/O: the new partitions' replicas, or raises.

    `start_index` overrides Kafka's choice (partition 0's first replica) in tests."""
    if current is None or not current.partitions:
        raise UnknownTopicError(f"Topic '{topic}' does not exist.")
    if marked_for_deletion:
        raise InvalidTopicError(f"Topic '{topic}' is marked for deletion.")
    moving = sorted(p for p, a in current.partitions.items() if a.is_being_reassigned)
    moving += sorted(tp.partition for tp in reassigning if tp.topic == topic and tp.partition not in moving)
    if moving:
        raise ReassignmentInProgressError(
            f"A partition reassignment is in progress for the topic '{topic}' "
            f"(partitions {','.join(map(str, moving))}).")
    count = len(current.partitions)
    if total <= count:
        raise InvalidPartitionsError(
            f"The number of partitions for a topic can only be increased. Topic {topic} currently has "
            f"{count} partitions, {total} would not be an increase.")
    first = current.partitions[min(current.partitions)]
    rf = len(first.replicas)
    live = sorted(set(live_brokers))
    if assignment is None:
        if start_index is None:  # Kafka: continue from partition 0's preferred leader
            start_index = next((i for i, b in enumerate(live) if b >= first.replicas[0]), 0) if first.replicas else 0
        return assign_replicas(live, total - count, rf, start_index=start_index, start_partition=count)
    lists = new_partition_replicas(count, total, assignment)
    out: dict[int, tuple[int, ...]] = {}
    for i, replicas in enumerate(lists):
        pid = count + i
        if not replicas:
            raise InvalidReplicaAssignmentError(f"Partition {pid} has an empty replica list.")
        dupes = sorted({b for b in replicas if replicas.count(b) > 1})
        if dupes:
            raise InvalidReplicaAssignmentError(
                f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, replicas))} "
                f"for partition id {pid}.")
        out[pid] = replicas
    unknown = sorted({b for r in out.values() for b in r} - set(live))
    if unknown:
        raise InvalidReplicaAssignmentError(
            f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.")
    odd = {p: len(r) for p, r in out.items() if len(r) != rf}
    if odd:
        raise InvalidReplicaAssignmentError(
            f"Inconsistent replication factor between partitions, partition {min(current.partitions)} has {rf} "
            f"while partitions [{', '.join(map(str, odd))}] have replication factors "
            f"[{', '.join(map(str, odd.values()))}], respectively.")
    return out
