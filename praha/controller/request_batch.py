"""Gathers the requests one controller event decides, and sends them per broker.

Steps: `new_batch()` (must be empty); the state machines call `add_leader_and_isr`,
`add_stop_replica` and `add_update_metadata`; `send_requests_to_brokers()` builds at most
one LeaderAndIsr, one StopReplica and one UpdateMetadata per broker and hands them to
the sender (the channel manager), then clears itself.

Rules from Kafka: every LeaderAndIsr for a partition also puts that partition in the
UpdateMetadata to every live broker; UpdateMetadata marks partitions of topics queued for
deletion with leader -2 (LeaderDuringDelete); an UpdateMetadata with no partitions still
carries the live broker list.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from typing import Callable, Iterable, Protocol

from dataclasses import replace

from praha.common import (
    EPOCH_DURING_DELETE,
    LEADER_DURING_DELETE,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from praha.controller.context import ControllerContext
from praha.controller.messages import (
    ControllerRequest,
    ControllerResponseData,
    LeaderAndIsrRequestData,
    PartitionLeaderState,
    StopReplicaPartition,
    StopReplicaRequestData,
    UpdateMetadataRequestData,
)

log = logging.getLogger(__name__)

ResponseCallback = Callable[[int, ControllerResponseData], None]


class RequestSender(Protocol):
    def send_request(self, broker_id: int, request: ControllerRequest, callback: ResponseCallback | None) -> None: ...


class IllegalBatchState(Exception):
    pass


class ControllerRequestBatch:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        sender: RequestSender,
        on_leader_and_isr_response: ResponseCallback | None = None,
        on_deletion_stop_replica_response: ResponseCallback | None = None,
    ):
        self.controller_id = controller_id
        self.context = context
        self.sender = sender
        self.on_leader_and_isr_response = on_leader_and_isr_response
        self.on_deletion_stop_replica_response = on_deletion_stop_replica_response
        self._leader_and_isr: dict[int, dict[TopicPartition, PartitionLeaderState]] = defaultdict(dict)
        self._stop_replica: dict[int, dict[TopicPartition, StopReplicaPartition]] = defaultdict(dict)
        self._update_metadata_brokers: set[int] = set()
        self._update_metadata_partitions: set[TopicPartition] = set()
        self._update_metadata_all_partitions_brokers: set[int] = set()
        #: counts of what the last send carried, for the one-line event log
        self.last_sent: dict[str, int] = {}

    # ---- building ---------------------------------------------------------------
    def new_batch(self) -> None:
        if self._leader_and_isr or self._stop_replica or self._update_metadata_brokers:
            pending = (len(self._leader_and_isr), len(self._stop_replica), len(self._update_metadata_brokers))
            self.clear()
            raise IllegalBatchState(f"request batch not empty at new_batch: {pending} (cleared)")

    def clear(self) -> None:
        self._leader_and_isr.clear()
        self._stop_replica.clear()
        self._update_metadata_brokers.clear()
        self._update_metadata_partitions.clear()
        self._update_metadata_all_partitions_brokers.clear()

    def add_leader_and_isr(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartition,
        leadership: LeaderIsrAndControllerEpoch,
        assignment: ReplicaAssignment,
        is_new: bool = False,
    ) -> None:
        li = leadership.leader_and_isr
        state = PartitionLeaderState(
            tp=tp,
            controller_epoch=leadership.controller_epoch,
            leader=li.leader,
            leader_epoch=li.leader_epoch,
            isr=tuple(li.isr),
            zk_version=li.zk_version,
            replicas=tuple(assignment.replicas),
            adding_replicas=tuple(assignment.adding),
            removing_replicas=tuple(assignment.removing),
            is_new=is_new,
        )
        live = self.context.live_or_shutting_down_broker_ids
        for b in broker_ids:
            if b not in live:
                continue  # a dead broker cannot act on it; it gets full metadata when it returns
            prev = self._leader_and_isr[b].get(tp)
            # a replica that is new in this batch stays "new" if re-added
            self._leader_and_isr[b][tp] = replace(state, is_new=True) if prev and prev.is_new else state
        self.add_update_metadata(self.context.live_or_shutting_down_broker_ids, [tp])

    def add_stop_replica(self, broker_ids: Iterable[int], tp: TopicPartition, delete: bool) -> None:
        li = self.context.leadership.get(tp)
        if self.context.is_topic_queued_for_deletion(tp.topic):
            epoch = EPOCH_DURING_DELETE
        else:
            epoch = li.leader_and_isr.leader_epoch if li else -1
        live = self.context.live_or_shutting_down_broker_ids
        for b in broker_ids:
            if b not in live:
                continue
            prev = self._stop_replica[b].get(tp)
            # a delete request wins over a plain stop for the same partition
            self._stop_replica[b][tp] = StopReplicaPartition(tp, epoch, delete or bool(prev and prev.delete))

    def add_update_metadata(self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] | None) -> None:
        """`partitions=None` means all partitions (full metadata for a new broker)."""
        ids = [b for b in broker_ids if b >= 0]
        self._update_metadata_brokers.update(ids)
        if partitions is None:
            self._update_metadata_all_partitions_brokers.update(ids)
        else:
            self._update_metadata_partitions.update(partitions)

    # ---- sending ------------------------------------------------------------------
    def _partition_metadata(self, tp: TopicPartition) -> PartitionLeaderState | None:
        ctx = self.context
        leadership = ctx.leadership.get(tp)
        if leadership is None:
            return None
        li = leadership.leader_and_isr
        replicas = ctx.partition_replicas(tp)
        leader = LEADER_DURING_DELETE if ctx.is_topic_queued_for_deletion(tp.topic) else li.leader
        live = ctx.live_or_shutting_down_broker_ids
        return PartitionLeaderState(
            tp=tp,
            controller_epoch=leadership.controller_epoch,
            leader=leader,
            leader_epoch=li.leader_epoch,
            isr=tuple(li.isr),
            zk_version=li.zk_version,
            replicas=tuple(replicas),
            offline_replicas=tuple(r for r in replicas if r not in live),
        )

    def send_requests_to_brokers(self, controller_epoch: int) -> None:
        ctx = self.context
        live = ctx.live_or_shutting_down_broker_ids
        counts = {"leader_and_isr": 0, "update_metadata": 0, "stop_replica": 0, "partitions": 0}
        try:
            for broker_id, states in self._leader_and_isr.items():
                if broker_id not in live:
                    continue
                leader_ids = {s.leader for s in states.values()}
                req = LeaderAndIsrRequestData(
                    controller_id=self.controller_id,
                    controller_epoch=controller_epoch,
                    broker_epoch=ctx.broker_epoch(broker_id),
                    partitions=list(states.values()),
                    live_leaders=[ctx.live_brokers[b] for b in sorted(leader_ids) if b in ctx.live_brokers],
                )
                self.sender.send_request(broker_id, req, self.on_leader_and_isr_response)
                counts["leader_and_isr"] += 1
                counts["partitions"] += len(states)

            if self._update_metadata_brokers:
                partial = [
                    s for s in (self._partition_metadata(tp) for tp in sorted(self._update_metadata_partitions)) if s
                ]
                full: list[PartitionLeaderState] | None = None
                live_brokers = [ctx.live_brokers[b] for b in sorted(ctx.live_brokers)]
                for broker_id in sorted(self._update_metadata_brokers):
                    if broker_id not in live:
                        continue
                    if broker_id in self._update_metadata_all_partitions_brokers:
                        if full is None:
                            full = [s for s in (self._partition_metadata(tp) for tp in ctx.all_partitions()) if s]
                        parts = full
                    else:
                        parts = partial
                    req = UpdateMetadataRequestData(
                        controller_id=self.controller_id,
                        controller_epoch=controller_epoch,
                        broker_epoch=ctx.broker_epoch(broker_id),
                        partitions=parts,
                        live_brokers=live_brokers,
                    )
                    self.sender.send_request(broker_id, req, None)
                    counts["update_metadata"] += 1

            for broker_id, parts in self._stop_replica.items():
                if broker_id not in live:
                    continue
                has_delete = any(p.delete for p in parts.values())
                req = StopReplicaRequestData(
                    controller_id=self.controller_id,
                    controller_epoch=controller_epoch,
                    broker_epoch=ctx.broker_epoch(broker_id),
                    partitions=list(parts.values()),
                )
                cb = self.on_deletion_stop_replica_response if has_delete else None
                self.sender.send_request(broker_id, req, cb)
                counts["stop_replica"] += 1
        finally:
            self.clear()
        self.last_sent = counts

