"""A blocking transactions admin client over the Kafka wire protocol (what Kafka's `Admin`
does for kafka-transactions), used by `praha transactions`. It shares `GroupAdmin`'s
plumbing (connections, version negotiation, coordinator lookup and retries).

Where each request goes, as Kafka's admin sends it:
- ListTransactions to every broker (each lists the ids it coordinates; merged);
- DescribeTransactions to the id's coordinator (FindCoordinator key type 1);
- DescribeProducers to the partition's leader;
- aborting a hanging transaction: WriteTxnMarkers (ABORT) straight to the partition's
  leader, with the producer id, epoch and coordinator epoch the operator names, exactly
  as `kafka-transactions abort` does;
- find-hanging: DescribeProducers for every partition a broker leads; a producer with an
  open transaction there (older than the maximum transaction timeout, when the leader
  knows its last write's time) is hanging unless its coordinator still has that
  transaction open, or being ended, with that partition in it.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from praha.admin.groups import GroupAdmin, GroupAdminError, Node, error_message, group_error
from praha.common import TopicPartition, partitions_by_topic
from praha.errors import ErrorCode
from praha.protocol.api_keys import ApiKey
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.protocol.messages.gen.admin import DescribeProducersRequest
from praha.protocol.messages.gen.txn import DescribeTransactionsRequest, ListTransactionsRequest, WriteTxnMarkersRequest

KEY_TYPE_TRANSACTION = 1
#: states in which the coordinator still ends a transaction by itself (markers sent or to come)
LIVE_STATES = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    coordinator: int
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    coordinator: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_ms: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    last_sequence: int
    last_timestamp: int
    current_txn_start_offset: int


@dataclass(frozen=True)
class HangingTransaction:
    partition: TopicPartition
    producer: ProducerState
    transactional_id: str | None
    duration_ms: int


class TransactionAdmin(GroupAdmin):
    def __init__(self, bootstrap: str | Sequence[str], timeout: float = 10.0, retries: int = 10,
                 client_id: str = "praha-transactions", security: ClientSecurity = PLAINTEXT):
        super().__init__(bootstrap, timeout=timeout, retries=retries, client_id=client_id, security=security)

    def __enter__(self) -> TransactionAdmin:
        return self

    def list_transactions(self, states: Sequence[str] = (), producer_ids: Sequence[int] = (),
                          duration_ms: int = -1) -> list[TransactionListing]:
        out: dict[str, TransactionListing] = {}
        for node in sorted(self.cluster(()).brokers.values()):
            resp = self._list_on_broker(node, states, producer_ids, duration_ms)
            for t in resp.transaction_states:
                out.setdefault(t.transactional_id, TransactionListing(t.transactional_id, node.id, t.producer_id,
                                                                      t.transaction_state))
        return [out[k] for k in sorted(out)]

    def _list_on_broker(self, node: Node, states: Sequence[str], producer_ids: Sequence[int], duration_ms: int) -> Any:
        return self.listing_on(node, ApiKey.LIST_TRANSACTIONS, lambda v: ListTransactionsRequest(
            state_filters=list(states), producer_id_filters=list(producer_ids), duration_filter=duration_ms),
            "list its transactions")

    def describe_transaction(self, transactional_id: str) -> TransactionDescription:
        def send(node: Node, ids: list[str]) -> dict[str, tuple[int, TransactionDescription]]:
            resp = self._send(node.host, node.port, ApiKey.DESCRIBE_TRANSACTIONS,
                              lambda v: DescribeTransactionsRequest(transactional_ids=ids))
            return {s.transactional_id: (s.error_code, TransactionDescription(
                node.id, s.transactional_id, s.producer_id, s.producer_epoch, s.transaction_state,
                s.transaction_timeout_ms, s.transaction_start_time_ms,
                tuple(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions)))
                for s in resp.transaction_states}

        try:
            return self._per_group([transactional_id], send, KEY_TYPE_TRANSACTION)[transactional_id]
        except GroupAdminError as e:
            if e.code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                raise GroupAdminError(f"Transactional id '{transactional_id}' not found: The transactionalId could "
                                      "not be found.", code=ErrorCode.TRANSACTIONAL_ID_NOT_FOUND) from None
            raise

    def _leader_node(self, tp: TopicPartition) -> Node:
        """The partition's leader; Kafka's refusal for a partition that does not exist."""
        view = self.cluster([tp.topic])
        parts = view.leaders.get(tp.topic)
        if parts is None:
            raise group_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{tp.topic}' does not exist.")
        if tp.partition not in parts:
            raise group_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              f"Partition {tp} does not exist (topic {tp.topic} has {len(parts)} partitions)")
        leader = parts[tp.partition]
        if leader not in view.brokers:
            raise group_error(ErrorCode.LEADER_NOT_AVAILABLE, f"{tp} has no leader")
        return view.brokers[leader]

    def describe_producers(self, tp: TopicPartition, broker_id: int | None = None) -> list[ProducerState]:
        """The partition's active producers as its leader (or the replica on `broker_id`) has them."""
        if broker_id is None:
            return self._producers_on(self._leader_node(tp), [tp])[tp]
        self._leader_node(tp)  # the partition exists
        node = self.cluster(()).brokers.get(broker_id)
        if node is None:
            raise GroupAdminError(f"broker {broker_id} is not alive", code=ErrorCode.BROKER_NOT_AVAILABLE)
        return self._producers_on(node, [tp])[tp]

    def _producers_on(self, node: Node, tps: Sequence[TopicPartition]) -> dict[TopicPartition, list[ProducerState]]:
        by_topic = partitions_by_topic(tps)
        resp = self._send(node.host, node.port, ApiKey.DESCRIBE_PRODUCERS, lambda v: DescribeProducersRequest(
            topics=[DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps) for t, ps in by_topic.items()]))
        out: dict[TopicPartition, list[ProducerState]] = {}
        for t in resp.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if p.error_code != ErrorCode.NONE:
                    raise group_error(p.error_code, f"DescribeProducers {tp} on broker {node}: "
                                                    f"{error_message(p.error_code)}")
                out[tp] = [ProducerState(a.producer_id, a.producer_epoch, a.coordinator_epoch, a.last_sequence,
                                         a.last_timestamp, a.current_txn_start_offset) for a in p.active_producers]
        return out

    def abort_transaction(self, tp: TopicPartition, producer_id: int, producer_epoch: int,
                          coordinator_epoch: int) -> None:
        """Write an ABORT marker for the producer's open transaction in `tp` (a hanging one)."""
        node = self._leader_node(tp)
        marker = WriteTxnMarkersRequest.WritableTxnMarker
        resp = self._send(node.host, node.port, ApiKey.WRITE_TXN_MARKERS, lambda v: WriteTxnMarkersRequest(markers=[
            marker(producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=False,
                   topics=[marker.WritableTxnMarkerTopic(name=tp.topic, partition_indexes=[tp.partition])],
                   coordinator_epoch=coordinator_epoch)]))
        for m in resp.markers:
            for t in m.topics:
                for p in t.partitions:
                    if p.error_code != ErrorCode.NONE:
                        raise group_error(p.error_code, f"aborting producer {producer_id} in {tp}: "
                                                        f"{error_message(p.error_code)}")

    def find_hanging(self, broker_id: int | None, max_timeout_ms: int = 15 * 60 * 1000, topic: str | None = None,
                     partition: int | None = None) -> list[HangingTransaction]:
        """Open transactions no coordinator will end, in the partitions `broker_id` leads or
        (with `topic`) in that topic's partitions (or its one `partition`), each asked of its leader."""
        view = self.cluster(None if topic is None else [topic])
        if broker_id is not None and broker_id not in view.brokers:
            raise GroupAdminError(f"broker {broker_id} is not alive", code=ErrorCode.BROKER_NOT_AVAILABLE)
        if topic is not None and topic not in view.leaders:
            raise group_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic}' does not exist.")
        if topic is not None and partition is not None and partition not in view.leaders[topic]:
            raise group_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Partition {topic}-{partition} does not exist")
        by_leader: dict[int, list[TopicPartition]] = {}
        for t, parts in sorted(view.leaders.items()):
            for p, leader in sorted(parts.items()):
                if (broker_id is None or leader == broker_id) and (topic is None or t == topic) \
                        and (partition is None or p == partition) and leader in view.brokers:
                    by_leader.setdefault(leader, []).append(TopicPartition(t, p))
        if not by_leader:
            return []
        now = int(time.time() * 1000)
        # an open transaction; when its last write's time is known, one older than any timeout
        candidates = [(tp, s) for leader, led in sorted(by_leader.items())
                      for tp, states in self._producers_on(view.brokers[leader], led).items() for s in states
                      if s.current_txn_start_offset >= 0
                      and (s.last_timestamp < 0 or now - s.last_timestamp > max_timeout_ms)]
        if not candidates:
            return []
        pids = sorted({s.producer_id for _, s in candidates})
        listed = {t.producer_id: t.transactional_id for t in self.list_transactions(producer_ids=pids)}
        out = []
        for tp, s in candidates:
            tid = listed.get(s.producer_id)
            if tid is not None:
                d = self.describe_transaction(tid)
                if d.state in LIVE_STATES and d.producer_id == s.producer_id and tp in d.partitions:
                    continue  # the coordinator still owns it: it will end, or time out and be aborted
            out.append(HangingTransaction(tp, s, tid, now - s.last_timestamp if s.last_timestamp >= 0 else -1))
        return out
