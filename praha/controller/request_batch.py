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
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Protocol, cast

from praha.common import (
    EPOCH_DURING_DELETE,
    LEADER_DURING_DELETE,
    BrokerInfo,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from praha.controller.context import ControllerContext
from praha.errors import PrahaError
from praha.protocol.controller_requests import (
    ControllerRequest,
    ControllerResponseData,
    LeaderAndIsrRequestData,
    PartitionLeaderState,
    StopReplicaPartition,
    StopReplicaRequestData,
    UpdateMetadataRequestData,
)
from praha.protocol.controller_wire import SharedPartitions

log = logging.getLogger(__name__)

ResponseCallback = Callable[[int, ControllerResponseData], None]


class RequestSender(Protocol):
    def send_request(self, broker_id: int, request: ControllerRequest, callback: ResponseCallback | None) -> None: ...


class IllegalBatchState(PrahaError):
    """A batch was opened while one is open, or sent while none is: a controller bug."""


class ControllerRequestBatch:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        sender: RequestSender,
        on_leader_and_isr_response: ResponseCallback | None = None,
        on_deletion_stop_replica_response: ResponseCallback | None = None,
        inter_broker_listener: str = "PLAINTEXT",
    ):
        self.controller_id = controller_id
        #: LeaderAndIsr names each leader by its endpoint on this listener (followers fetch there)
        self.inter_broker_listener = inter_broker_listener
        self.context = context
        self.sender = sender
        self.on_leader_and_isr_response = on_leader_and_isr_response
        self.on_deletion_stop_replica_response = on_deletion_stop_replica_response
        self._leader_and_isr: dict[int, dict[TopicPartition, PartitionLeaderState]] = defaultdict(dict)
        self._stop_replica: dict[int, dict[TopicPartition, StopReplicaPartition]] = defaultdict(dict)
        self._update_metadata_brokers: set[int] = set()
        self._update_metadata_partitions: set[TopicPartition] = set()
        self._update_metadata_all_partitions_brokers: set[int] = set()
        #: the live-broker set last merged into `_update_metadata_brokers` (see add_leader_and_isr)
        self._merged_live: set[int] | None = None
        #: the last PartitionLeaderState built and what it was built from (see `_leader_state`)
        self._last_state: tuple[Any, ...] | None = None
        #: tp → (leadership, replicas, state) of the plain LeaderAndIsr states added (not new, not
        #: being reassigned): the UpdateMetadata of the same batch reuses them (`_partitions_metadata`)
        self._plain_states: dict[TopicPartition, tuple[LeaderIsrAndControllerEpoch, tuple[int, ...],
                                                       PartitionLeaderState]] = {}
        #: counts of what the last send carried, for the one-line event log
        self.last_sent: dict[str, int] = {}

    def _inter_broker_view(self, broker: BrokerInfo) -> BrokerInfo:
        """`broker` with only its inter-broker endpoint first (as Kafka's LeaderAndIsr
        `live_leaders`, which carry one host and port each)."""
        ep = broker.endpoint(self.inter_broker_listener)
        if ep is None or broker.endpoints[0] == ep:
            return broker
        return BrokerInfo(broker.id, (ep,), broker.rack, broker.epoch)

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
        self._merged_live = None
        self._last_state = None
        self._plain_states.clear()

    def add_leader_and_isr(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartition,
        leadership: LeaderIsrAndControllerEpoch,
        assignment: ReplicaAssignment,
        is_new: bool = False,
    ) -> None:
        self._add_leader_and_isr(self.context.live_or_shutting_down_broker_ids, broker_ids, tp, leadership,
                                 assignment, is_new)

    def add_leader_and_isr_many(
        self, entries: Iterable[tuple[Iterable[int], TopicPartition, LeaderIsrAndControllerEpoch, ReplicaAssignment]],
        is_new: bool = False,
    ) -> None:
        """`add_leader_and_isr(broker_ids, tp, leadership, assignment, is_new)` for each entry, in
        order; the live-broker set (which no add changes) is computed once, not per entry."""
        live = self.context.live_or_shutting_down_broker_ids
        add = self._add_leader_and_isr
        for broker_ids, tp, leadership, assignment in entries:
            add(live, broker_ids, tp, leadership, assignment, is_new)

    def _add_leader_and_isr(
        self,
        live: set[int],
        broker_ids: Iterable[int],
        tp: TopicPartition,
        leadership: LeaderIsrAndControllerEpoch,
        assignment: ReplicaAssignment,
        is_new: bool,
    ) -> None:
        state = self._leader_state(tp, leadership, assignment, is_new)
        requests = self._leader_and_isr
        for b in broker_ids:
            if b not in live:
                continue  # a dead broker cannot act on it; it gets full metadata when it returns
            per_broker = requests[b]
            prev = per_broker.get(tp)
            # a replica that is new in this batch stays "new" if re-added
            per_broker[tp] = replace(state, is_new=True) if prev and prev.is_new else state
        # as add_update_metadata(live, [tp]); the broker part only when the live set changed,
        # since a failover calls this once per replica (300k times at 100k partitions)
        if live is not self._merged_live and live != self._merged_live:
            self._update_metadata_brokers.update(b for b in live if b >= 0)
            self._merged_live = live
        self._update_metadata_partitions.add(tp)
        if not (is_new or assignment.adding or assignment.removing):
            self._plain_states[tp] = (leadership, assignment.replicas, state)

    def _leader_state(
        self, tp: TopicPartition, leadership: LeaderIsrAndControllerEpoch, assignment: ReplicaAssignment, is_new: bool
    ) -> PartitionLeaderState:
        """The state LeaderAndIsr carries for `tp`. The replica state machine asks for the same
        partition once per replica in a row, so the last one built is reused when it came from
        the same (immutable) leadership and replica tuples: one frozen object instead of three."""
        last = self._last_state
        if (
            last is not None
            and last[0] is leadership
            and last[1] is assignment.replicas
            and last[2] is assignment.adding
            and last[3] is assignment.removing
            and last[4] == is_new
            and last[5] == tp
        ):
            return cast(PartitionLeaderState, last[6])
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
        self._last_state = (leadership, assignment.replicas, assignment.adding, assignment.removing, is_new, tp, state)
        return state

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
        self._merged_live = None
        if partitions is None:
            self._update_metadata_all_partitions_brokers.update(ids)
        else:
            self._update_metadata_partitions.update(partitions)

    # ---- sending ------------------------------------------------------------------
    def _partition_metadata(self, tp: TopicPartition) -> PartitionLeaderState | None:
        found = self._partitions_metadata([tp])
        return found[0] if found else None

    def _partitions_metadata(self, tps: Iterable[TopicPartition]) -> list[PartitionLeaderState]:
        """UpdateMetadata states of the partitions that have a leadership (others are skipped);
        the broker and deletion sets are read once for the whole list. A partition whose plain
        LeaderAndIsr state of this batch was built from the same leadership and replicas, with
        no replica offline and its topic not being deleted, has the same UpdateMetadata state:
        that object is reused (at failover, 100k fewer built)."""
        ctx = self.context
        plain = self._plain_states
        leaderships = ctx.leadership
        assignments = ctx.assignments
        deleting = ctx.topics_to_be_deleted
        live = ctx.live_or_shutting_down_broker_ids
        offline_dirs = ctx.replicas_on_offline_dirs
        out: list[PartitionLeaderState] = []
        append = out.append
        for tp in tps:
            leadership = leaderships.get(tp)
            if leadership is None:
                continue
            li = leadership.leader_and_isr
            a = assignments.get(tp.topic, {}).get(tp.partition)
            replicas = tuple(a.replicas) if a else ()
            offline = _offline_replicas(replicas, live, offline_dirs, tp)
            being_deleted = tp.topic in deleting
            if not offline and not being_deleted:
                built = plain.get(tp)
                if built is not None and built[0] is leadership and built[1] is replicas:
                    append(built[2])
                    continue
            append(PartitionLeaderState(
                tp=tp,
                controller_epoch=leadership.controller_epoch,
                leader=LEADER_DURING_DELETE if being_deleted else li.leader,
                leader_epoch=li.leader_epoch,
                isr=tuple(li.isr),
                zk_version=li.zk_version,
                replicas=replicas,
                offline_replicas=offline,
            ))
        return out

    def send_requests_to_brokers(self, controller_epoch: int) -> None:
        """Build every request first, then hand them all to the sender: the sender threads
        start converting what they get at once, and would otherwise compete with the
        building of the rest (a failover's full UpdateMetadata) for the interpreter."""
        ctx = self.context
        live = ctx.live_or_shutting_down_broker_ids
        counts = {"leader_and_isr": 0, "update_metadata": 0, "stop_replica": 0, "partitions": 0}
        outgoing: list[tuple[int, ControllerRequest, ResponseCallback | None]] = []
        encoded_states: dict[int, tuple[Any, bytes]] = {}  # one partition state sent to several brokers is encoded once
        try:
            for broker_id, states in self._leader_and_isr.items():
                if broker_id not in live:
                    continue
                leader_ids = {s.leader for s in states.values()}
                leader_and_isr = LeaderAndIsrRequestData(
                    controller_id=self.controller_id,
                    controller_epoch=controller_epoch,
                    broker_epoch=ctx.broker_epoch(broker_id),
                    partitions=list(states.values()),
                    live_leaders=[self._inter_broker_view(ctx.live_brokers[b]) for b in sorted(leader_ids)
                                  if b in ctx.live_brokers],
                    encoded_states=encoded_states,
                )
                outgoing.append((broker_id, leader_and_isr, self.on_leader_and_isr_response))
                counts["leader_and_isr"] += 1
                counts["partitions"] += len(states)

            if self._update_metadata_brokers:
                # both lists are built at most once and shared by every broker that gets them
                # (also their wire form, see wire.SharedPartitions); the partial one only if
                # some broker does not get everything
                partial: list[PartitionLeaderState] | None = None
                full: list[PartitionLeaderState] | None = None
                live_brokers = [ctx.live_brokers[b] for b in sorted(ctx.live_brokers)]
                for broker_id in sorted(self._update_metadata_brokers):
                    if broker_id not in live:
                        continue
                    if broker_id in self._update_metadata_all_partitions_brokers:
                        if full is None:
                            full = SharedPartitions(self._partitions_metadata(ctx.all_partitions()))
                        metadata = full
                    else:
                        if partial is None:
                            partial = SharedPartitions(
                                self._partitions_metadata(sorted(self._update_metadata_partitions))
                            )
                        metadata = partial
                    update_metadata = UpdateMetadataRequestData(
                        controller_id=self.controller_id,
                        controller_epoch=controller_epoch,
                        broker_epoch=ctx.broker_epoch(broker_id),
                        partitions=metadata,
                        live_brokers=live_brokers,
                    )
                    outgoing.append((broker_id, update_metadata, None))
                    counts["update_metadata"] += 1

            for broker_id, parts in self._stop_replica.items():
                if broker_id not in live:
                    continue
                has_delete = any(p.delete for p in parts.values())
                stop_replica = StopReplicaRequestData(
                    controller_id=self.controller_id,
                    controller_epoch=controller_epoch,
                    broker_epoch=ctx.broker_epoch(broker_id),
                    partitions=list(parts.values()),
                )
                cb = self.on_deletion_stop_replica_response if has_delete else None
                outgoing.append((broker_id, stop_replica, cb))
                counts["stop_replica"] += 1

            for broker_id, req, cb in outgoing:
                self.sender.send_request(broker_id, req, cb)
        finally:
            self.clear()
        self.last_sent = counts


def _offline_replicas(replicas: tuple[int, ...], live: set[int],
                      offline_dirs: dict[int, set[TopicPartition]], tp: TopicPartition) -> tuple[int, ...]:
    """Replicas on dead brokers or in a failed log directory of a live one."""
    if not offline_dirs:
        return () if live.issuperset(replicas) else tuple(r for r in replicas if r not in live)
    return tuple(r for r in replicas if r not in live or tp in offline_dirs.get(r, ()))
