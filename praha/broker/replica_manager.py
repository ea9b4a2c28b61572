"""Replicas hosted by this broker, driven by the controller's LeaderAndIsr and StopReplica.

LeaderAndIsr, per partition: ignore it unless its leader epoch is newer than ours (a
stale epoch gets STALE_CONTROLLER_EPOCH for that partition, as Kafka 2.x answers); then
become leader or follower. StopReplica: stop the partition, delete its data if asked;
a leader epoch older than ours is FENCED_LEADER_EPOCH (-1 and -2 — "during delete" —
always apply). The controller-epoch and broker-epoch checks happen before, in the
handler, through `ControllerFence`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum

from praha.common import TopicPartition
from praha.controller.messages import (
    ControllerResponseData,
    LeaderAndIsrRequestData,
    PartitionLeaderState,
    StopReplicaRequestData,
)
from praha.errors import ErrorCode

log = logging.getLogger(__name__)


class Role(Enum):
    LEADER = "leader"
    FOLLOWER = "follower"


@dataclass
class Partition:
    tp: TopicPartition
    state: PartitionLeaderState
    role: Role
    follower_log_end: dict[int, int] = field(default_factory=dict)

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch


class ReplicaManager:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.partitions: dict[TopicPartition, Partition] = {}

    def become_leader_or_follower(self, req: LeaderAndIsrRequestData) -> ControllerResponseData:
        errors: dict[TopicPartition, int] = {}
        became_leader, became_follower = [], []
        for s in req.partitions:
            if self.broker_id not in s.replicas:
                errors[s.tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            cur = self.partitions.get(s.tp)
            if cur is not None and s.leader_epoch <= cur.leader_epoch:
                errors[s.tp] = ErrorCode.STALE_CONTROLLER_EPOCH
                continue
            role = Role.LEADER if s.leader == self.broker_id else Role.FOLLOWER
            self.partitions[s.tp] = Partition(s.tp, s, role)
            (became_leader if role is Role.LEADER else became_follower).append(s.tp)
            errors[s.tp] = ErrorCode.NONE
        stale = sum(1 for c in errors.values() if c == ErrorCode.STALE_CONTROLLER_EPOCH)
        log.info(
            "LeaderAndIsr from controller %d epoch %d: %d leaders, %d followers, %d stale",
            req.controller_id, req.controller_epoch, len(became_leader), len(became_follower), stale,
        )
        return ControllerResponseData(ErrorCode.NONE, errors)

    def stop_replicas(self, req: StopReplicaRequestData) -> ControllerResponseData:
        errors: dict[TopicPartition, int] = {}
        stopped = deleted = 0
        for p in req.partitions:
            cur = self.partitions.get(p.tp)
            if cur is not None and p.leader_epoch >= 0 and p.leader_epoch < cur.leader_epoch:
                errors[p.tp] = ErrorCode.FENCED_LEADER_EPOCH
                continue
            self.partitions.pop(p.tp, None)
            stopped += 1
            deleted += int(p.delete)
            errors[p.tp] = ErrorCode.NONE
        log.info("StopReplica from controller %d: %d stopped, %d deleted", req.controller_id, stopped, deleted)
        return ControllerResponseData(ErrorCode.NONE, errors)

    def leader_count(self) -> int:
        return sum(1 for p in self.partitions.values() if p.role is Role.LEADER)
