"""What the active controller knows about the cluster. Pure state: no I/O, no threads.

Only the controller's event thread reads or writes a ControllerContext. It is rebuilt
from ZooKeeper at every failover and cleared at resignation.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from praha.common import (
    BrokerInfo,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from praha.controller.states import PartitionAndReplica, PartitionState, ReplicaState
from praha.errors import ErrorCode


@dataclass
class ControllerContext:
    epoch: int = 0
    epoch_zk_version: int = -1

    live_brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    shutting_down_broker_ids: set[int] = field(default_factory=set)
    #: broker → its replicas in a failed log directory (its LeaderAndIsr answers said
    #: KAFKA_STORAGE_ERROR); forgotten when the broker restarts or dies (Kafka's replicasOnOfflineDirs)
    replicas_on_offline_dirs: dict[int, set[TopicPartition]] = field(default_factory=dict)

    all_topics: set[str] = field(default_factory=set)
    topic_ids: dict[str, str] = field(default_factory=dict)
    #: topic → partition → assignment
    assignments: dict[str, dict[int, ReplicaAssignment]] = field(default_factory=dict)
    leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    #: partitions whose leader restarted unseen (found at failover): treated as offline once
    stale_leadership: set[TopicPartition] = field(default_factory=set)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)

    partition_states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    replica_states: dict[PartitionAndReplica, ReplicaState] = field(default_factory=dict)

    partitions_being_reassigned: set[TopicPartition] = field(default_factory=set)
    topics_to_be_deleted: set[str] = field(default_factory=set)
    topics_with_deletion_started: set[str] = field(default_factory=set)
    topics_ineligible_for_deletion: set[str] = field(default_factory=set)

    #: counters the figures expose
    offline_partition_count: int = 0
    unclean_elections: int = 0

    # ---- brokers -------------------------------------------------------------------
    @property
    def live_broker_ids(self) -> set[int]:
        """Live and not shutting down: eligible to become leader."""
        return set(self.live_brokers) - self.shutting_down_broker_ids

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.live_brokers)

    def broker_epoch(self, broker_id: int) -> int:
        b = self.live_brokers.get(broker_id)
        return b.epoch if b else -1

    def add_live_brokers(self, brokers: Iterable[BrokerInfo]) -> None:
        for b in brokers:
            self.live_brokers[b.id] = b

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for bid in broker_ids:
            self.live_brokers.pop(bid, None)
            self.shutting_down_broker_ids.discard(bid)

    def is_replica_online(self, broker_id: int, tp: TopicPartition) -> bool:
        """Its broker is alive and the replica is not in one of that broker's failed log dirs."""
        return broker_id in self.live_brokers and tp not in self.replicas_on_offline_dirs.get(broker_id, ())

    def offline_dir_brokers(self, tp: TopicPartition) -> set[int]:
        """Live brokers whose replica of `tp` sits in a failed log directory (usually none)."""
        if not self.replicas_on_offline_dirs:
            return set()
        return {b for b, tps in self.replicas_on_offline_dirs.items() if tp in tps}

    # ---- topics and partitions ---------------------------------------------------------
    def partition_replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        a = self.assignments.get(tp.topic, {}).get(tp.partition)
        return a.replicas if a else ()

    def partition_assignment(self, tp: TopicPartition) -> ReplicaAssignment | None:
        return self.assignments.get(tp.topic, {}).get(tp.partition)

    def known_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        """The assignment of a partition the controller knows (KeyError if it does not): for
        partitions an event has already checked, or that it is electing or moving."""
        return self.assignments[tp.topic][tp.partition]

    def update_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        self.assignments.setdefault(tp.topic, {})[tp.partition] = assignment

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self.assignments.get(topic, {}))]

    def all_partitions(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, parts in self.assignments.items() for p in parts]

    def partitions_on_broker(self, broker_id: int) -> set[TopicPartition]:
        return {
            TopicPartition(t, p)
            for t, parts in self.assignments.items()
            for p, a in parts.items()
            if broker_id in a.replicas
        }

    def partitions_led_by(self, broker_id: int) -> set[TopicPartition]:
        return {tp for tp, li in self.leadership.items() if li.leader_and_isr.leader == broker_id}

    def replicas_on_brokers(self, broker_ids: set[int]) -> set[PartitionAndReplica]:
        return {
            PartitionAndReplica(TopicPartition(t, p), r)
            for t, parts in self.assignments.items()
            for p, a in parts.items()
            for r in a.replicas
            if r in broker_ids
        }

    def replicas_for_topic(self, topic: str) -> set[PartitionAndReplica]:
        return {
            PartitionAndReplica(TopicPartition(topic, p), r)
            for p, a in self.assignments.get(topic, {}).items()
            for r in a.replicas
        }

    def remove_topic(self, topic: str) -> None:
        for tp in self.partitions_for_topic(topic):
            self.leadership.pop(tp, None)
            self.partition_states.pop(tp, None)
            self.partitions_being_reassigned.discard(tp)
        for pr in self.replicas_for_topic(topic):
            self.replica_states.pop(pr, None)
        self.assignments.pop(topic, None)
        self.all_topics.discard(topic)
        self.topic_ids.pop(topic, None)
        self.topic_configs.pop(topic, None)

    # ---- deletion queue state --------------------------------------------------------
    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def election_refusal(self, tp: TopicPartition) -> tuple[int, str] | None:
        """Why an election asked for by name (ElectLeaders, the admin znode) cannot run: an
        unknown partition, or a topic queued for deletion; None when it may."""
        if tp.topic not in self.all_topics or self.partition_assignment(tp) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {tp}"
        if self.is_topic_queued_for_deletion(tp.topic):
            return ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic {tp.topic} is being deleted"
        return None

    # ---- states ---------------------------------------------------------------------
    def partitions_in_states(self, states: set[PartitionState]) -> list[TopicPartition]:
        wanted = tuple(states)  # `in` a tuple compares by identity in C; a set would call Enum.__hash__
        return [tp for tp, s in self.partition_states.items() if s in wanted]

    def replicas_in_state(self, topic: str, state: ReplicaState) -> set[PartitionAndReplica]:
        return {pr for pr in self.replicas_for_topic(topic) if self.replica_states.get(pr) == state}

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        return all(self.replica_states.get(pr) == state for pr in self.replicas_for_topic(topic))

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(self.replica_states.get(pr) == state for pr in self.replicas_for_topic(topic))

    def update_offline_partition_count(self) -> int:
        """Offline partitions, not counting those of topics being deleted (as Kafka's gauge)."""
        offline = PartitionState.OFFLINE
        deleting = self.topics_to_be_deleted
        self.offline_partition_count = sum(
            1 for tp, s in self.partition_states.items() if s is offline and tp.topic not in deleting
        )
        return self.offline_partition_count

    def preferred_replica_imbalance_count(self) -> int:
        """Partitions whose leader is not their preferred (first assigned) replica."""
        count = 0
        for t, parts in self.assignments.items():
            if t in self.topics_to_be_deleted:
                continue
            for p, a in parts.items():
                li = self.leadership.get(TopicPartition(t, p))
                if li and a.replicas and li.leader_and_isr.leader != a.replicas[0]:
                    count += 1
        return count

    def clear(self) -> None:
        """Forget everything: called at resignation."""
        fresh = ControllerContext()
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(fresh, name))
