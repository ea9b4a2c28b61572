"""Topic deletion and partition expansion, as Kafka's AdminZkClient does them.

Both only write znodes; the controller does the rest (SPEC §8):
  - deletion: 1. the topic must exist and not be marked already; 2. create
    `/admin/delete_topics/<t>` (the controller watches its children);
  - expansion: 1. read `/brokers/topics/<t>` with its zkVersion; 2. check (no I/O, see
    `plan_new_partitions`): the topic is not marked for deletion nor being reassigned, the
    count only grows, a manual assignment names live brokers, no broker twice, the
    topic's replication factor; otherwise place the new partitions with Kafka's
    rack-unaware algorithm, continuing where partition 0's first replica starts; 3. write
    the whole assignment back, conditional on the zkVersion read in step 1, so a
    concurrent change (another expansion, a reassignment finishing) is never lost.
Every check precedes the write: a refused request changes nothing.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

from praha.admin.topics import assign_replicas
from praha.common import ReplicaAssignment, TopicAssignment, TopicPartition
from praha.errors import (
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    PrahaError,
    UnknownTopicError,
)
from praha.zk import znodes as zn
from praha.zk.ops import CreateOp, WriteOutcome

#: Kafka's REASSIGNMENT_IN_PROGRESS wire code (not in praha.errors.ErrorCode yet)
REASSIGNMENT_IN_PROGRESS = 60


class TopicAlreadyMarkedForDeletionError(PrahaError):
    """The deletion marker exists already (the DeleteTopics API treats this as success)."""

    code = ErrorCode.INVALID_REQUEST


class ReassignmentInProgressError(PrahaError):
    """A reassignment touches the topic (or, for `execute`, the cluster) right now."""

    code = REASSIGNMENT_IN_PROGRESS  # type: ignore[assignment]


class ConcurrentModificationError(PrahaError):
    """The znode changed between our read and our conditional write."""

    code = ErrorCode.INVALID_REQUEST


# ------------------------------------------------------------------------------- deletion
def delete_topic(store, topic: str) -> None:
    """Mark `topic` for deletion by creating `/admin/delete_topics/<t>`."""
    if store.exists(zn.topic_path(topic)) is None:
        raise UnknownTopicError(f"Topic '{topic}' does not exist.")
    # a create in a multi tells "already there" apart atomically (no exists-then-create race)
    result = store.multi([CreateOp(zn.delete_topic_path(topic))])[0]
    if result.outcome is WriteOutcome.NODE_EXISTS:
        raise TopicAlreadyMarkedForDeletionError(f"Topic '{topic}' is already marked for deletion.")
    if result.outcome is WriteOutcome.NO_NODE:  # /admin/delete_topics itself is missing
        store.ensure_persistent_paths()
        return delete_topic(store, topic)
    if not result.ok:
        raise PrahaError(f"could not mark topic '{topic}' for deletion: {result.outcome.value} {result.error or ''}")


# ------------------------------------------------------------------------------- expansion
def reassigning_partitions(store) -> set[TopicPartition]:
    """Partitions named in `/admin/reassign_partitions` (an unreadable znode counts as none)."""
    try:
        return set(store.get_reassignments())
    except PrahaError:
        return set()


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


def read_assignment(store, topic: str) -> tuple[TopicAssignment | None, int]:
    """`/brokers/topics/<t>` and its zkVersion ((None, -1) if absent)."""
    got = store.get_data(zn.topic_path(topic))
    if got is None:
        return None, -1
    data, stat = got
    return zn.decode_topic_assignment(data, zn.topic_path(topic)), stat.version


def add_partitions(store, topic: str, total: int, assignment: Sequence[Sequence[int]] | None = None,
                   validate_only: bool = False) -> dict[int, tuple[int, ...]]:
    """Grow `topic` to `total` partitions; returns the new partitions' replicas."""
    current, version = read_assignment(store, topic)
    marked = current is not None and store.exists(zn.delete_topic_path(topic)) is not None
    brokers, _ = store.get_live_brokers()
    added = plan_new_partitions(topic, current, total, set(brokers), assignment, marked,
                                reassigning_partitions(store) if current is not None else ())
    if validate_only:
        return added
    assert current is not None  # plan_new_partitions refuses an absent topic
    partitions: dict[int, ReplicaAssignment] = dict(current.partitions)
    partitions.update({p: ReplicaAssignment(r) for p, r in added.items()})
    result = store.set_topic_assignment(topic, TopicAssignment(partitions, current.topic_id), expected_version=version)
    if result.outcome is WriteOutcome.BAD_VERSION:
        raise ConcurrentModificationError(
            f"Topic '{topic}' was modified while adding partitions; nothing was written, try again.")
    if result.outcome is WriteOutcome.NO_NODE:
        raise UnknownTopicError(f"Topic '{topic}' does not exist.")
    if not result.ok:
        raise PrahaError(f"could not write the assignment of '{topic}': {result.outcome.value} {result.error or ''}")
    return added


def partitions_with_leaders(store, topic: str, partitions: Collection[int]) -> set[int]:
    """Which of `partitions` have a leader on a live broker (for waiting after an expansion)."""
    brokers, _ = store.get_live_brokers()
    states, _ = store.get_partition_states([TopicPartition(topic, p) for p in partitions])
    return {tp.partition for tp, s in states.items() if s.leader_and_isr.leader in brokers}


__all__ = [
    "delete_topic", "add_partitions", "plan_new_partitions", "new_partition_replicas", "read_assignment",
    "partitions_with_leaders", "reassigning_partitions", "TopicAlreadyMarkedForDeletionError",
    "ReassignmentInProgressError", "ConcurrentModificationError", "REASSIGNMENT_IN_PROGRESS",
]
