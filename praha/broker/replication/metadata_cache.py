"""The broker's view of the cluster, replaced piecewise by the controller's UpdateMetadata.

Holds the live brokers, the active controller id, and leader/ISR/replicas per partition.
Clients' Metadata requests are answered from here. Partitions the controller marks with
leader -2 (their topic is being deleted) are dropped, so clients stop seeing them.
Touched on the network loop thread only; readers from other threads take plain snapshots.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from praha.common import LEADER_DURING_DELETE, BrokerInfo, EndPoint, TopicPartition
from praha.protocol.controller_requests import PartitionLeaderState, UpdateMetadataRequestData


@dataclass
class MetadataCache:
    broker_id: int
    controller_id: int = -1
    controller_epoch: int = -1
    live_brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    partitions: dict[str, dict[int, PartitionLeaderState]] = field(default_factory=dict)
    #: topic ids read from the topic znodes (`MetadataApis`); forgotten with the topic, so a
    #: topic deleted and created again under its name is answered with its new id
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    #: the same by id, for requests that name topics by id (Fetch v13+); kept by `set_topic_id`
    names_by_id: dict[uuid.UUID, str] = field(default_factory=dict)
    updates: int = 0

    def set_topic_id(self, name: str, topic_id: uuid.UUID) -> None:
        self._forget_topic_id(name)
        self.topic_ids[name] = topic_id
        self.names_by_id[topic_id] = name

    def _forget_topic_id(self, name: str) -> None:
        old = self.topic_ids.pop(name, None)
        if old is not None:
            self.names_by_id.pop(old, None)

    def update(self, req: UpdateMetadataRequestData) -> list[TopicPartition]:
        """Apply an UpdateMetadata (epoch already checked); returns the partitions deleted."""
        self.controller_id = req.controller_id
        self.controller_epoch = req.controller_epoch
        self.live_brokers = {b.id: b for b in req.live_brokers}
        deleted = []
        for s in req.partitions:
            if s.leader == LEADER_DURING_DELETE:
                parts = self.partitions.get(s.tp.topic)
                if parts is not None:
                    parts.pop(s.tp.partition, None)
                    if not parts:
                        del self.partitions[s.tp.topic]
                        self._forget_topic_id(s.tp.topic)
                deleted.append(s.tp)
            else:
                self.partitions.setdefault(s.tp.topic, {})[s.tp.partition] = s
        self.updates += 1
        return deleted

    # ---- queries -------------------------------------------------------------------
    def topics(self) -> list[str]:
        return sorted(self.partitions)

    def contains_topic(self, topic: str) -> bool:
        return topic in self.partitions

    def partition(self, tp: TopicPartition) -> PartitionLeaderState | None:
        return self.partitions.get(tp.topic, {}).get(tp.partition)

    def topic_partitions(self, topic: str) -> dict[int, PartitionLeaderState]:
        return self.partitions.get(topic, {})

    def endpoints_on(self, listener: str) -> list[tuple[BrokerInfo, EndPoint]]:
        """Live brokers with an endpoint on `listener`, by id, with that endpoint."""
        out = []
        for b in sorted(self.live_brokers.values(), key=lambda b: b.id):
            ep = b.endpoint(listener)
            if ep is not None:
                out.append((b, ep))
        return out

    def leader_of(self, tp: TopicPartition) -> BrokerInfo | None:
        s = self.partition(tp)
        if s is None:
            return None
        return self.live_brokers.get(s.leader)

    def is_alive(self, broker_id: int) -> bool:
        return broker_id in self.live_brokers

    def partition_count(self) -> int:
        return sum(len(p) for p in self.partitions.values())
