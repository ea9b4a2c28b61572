"""WriteTxnMarkers (API 27): the transaction coordinator ends a transaction in partitions.

For each marker (producer id and epoch, commit or abort, coordinator epoch, partitions):
1. each partition must be led here (NOT_LEADER_OR_FOLLOWER, or UNKNOWN_TOPIC_OR_PARTITION
   if the cluster does not know it) with an ISR of at least `min.insync.replicas`
   (NOT_ENOUGH_REPLICAS);
2. the log appends the control batch (`Log.append_marker_as_leader`): a producer epoch
   older than the partition's is INVALID_PRODUCER_EPOCH, a coordinator epoch older than the
   producer's last marker TRANSACTION_COORDINATOR_FENCED, nothing appended then; an ABORT
   adds an entry to the aborted-transaction index;
3. like a produce with acks=all, the answer waits until the high watermark passed every
   marker (NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT as for Produce);
4. for `__consumer_offsets` partitions whose marker is replicated, the group coordinator
   makes the producer's pending transactional offset commits visible (commit) or drops
   them (abort).
Markers of one request are independent: each partition gets its own error code.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from praha.broker.replication.delayed import ProduceWait
from praha.common import TopicPartition, by_topic
from praha.errors import ErrorCode, PrahaError
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.txn import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from praha.security.acl import AclOperation

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
#: how long the answer waits for the markers to replicate (Kafka uses request.timeout.ms, 30 s)
MARKER_REPLICATION_TIMEOUT_MS = 30_000

_Marker = WriteTxnMarkersRequest.WritableTxnMarker
_Result = WriteTxnMarkersResponse.WritableTxnMarkerResult
_TopicResult = _Result.WritableTxnMarkerTopicResult
_PartitionResult = _TopicResult.WritableTxnMarkerPartitionResult


class TxnMarkerApis:
    def __init__(self, broker: Broker):
        self.broker = broker

    def _append(self, tp: TopicPartition, marker: _Marker) -> tuple[int, int]:
        """(error code, offset after the marker) for one partition of one marker."""
        rm = self.broker.replica_manager
        p = rm.partitions.get(tp)
        if p is None or not p.is_leader:
            known = p is not None or self.broker.metadata_cache.partition(tp) is not None
            return (ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), -1
        if len(p.isr) < p.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS, -1
        try:
            info = p.log.append_marker_as_leader(marker.producer_id, marker.producer_epoch, marker.transaction_result,
                                                 marker.coordinator_epoch, p.leader_epoch)
        except PrahaError as e:
            return int(e.code), -1
        rm.after_leader_append(p)
        return ErrorCode.NONE, info.last_offset + 1

    async def handle_write_txn_markers(self, req: DecodedRequest) -> WriteTxnMarkersResponse:
        markers = req.body(WriteTxnMarkersRequest).markers or []
        codes: list[dict[TopicPartition, int]] = []
        if not self.broker.authz.cluster_allowed(req, AclOperation.CLUSTER_ACTION):  # brokers only (Kafka)
            return WriteTxnMarkersResponse(markers=[_Result(producer_id=m.producer_id, topics=[
                _TopicResult(name=t.name, partitions=[
                    _PartitionResult(partition_index=i, error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
                    for i in t.partition_indexes or []]) for t in m.topics or []]) for m in markers])
        waits: dict[TopicPartition, ProduceWait] = {}
        for m in markers:
            mine: dict[TopicPartition, int] = {}
            for t in m.topics or []:
                for index in t.partition_indexes or []:
                    tp = TopicPartition(t.name, index)
                    code, required = self._append(tp, m)
                    mine[tp] = code
                    if code == ErrorCode.NONE:
                        w = waits.get(tp)
                        if w is None or w.required_offset < required:
                            waits[tp] = ProduceWait(required)
            codes.append(mine)
        if waits:
            outcome = await self.broker.replica_manager.park_produce(waits, MARKER_REPLICATION_TIMEOUT_MS)
            failed = {tp: (w.error if w.error is not None else ErrorCode.REQUEST_TIMED_OUT)
                      for tp, w in outcome.items() if w.error != ErrorCode.NONE}
            for mine in codes:
                for tp in mine:
                    if mine[tp] == ErrorCode.NONE and tp in failed:
                        mine[tp] = failed[tp]
        results = []
        for m, mine in zip(markers, codes):
            self._complete_offsets(m, mine)
            topics = by_topic((tp.topic, _PartitionResult(partition_index=tp.partition, error_code=int(code)))
                              for tp, code in mine.items())
            results.append(_Result(producer_id=m.producer_id, topics=[
                _TopicResult(name=name, partitions=ps) for name, ps in topics.items()]))
        written = sum(1 for mine in codes for c in mine.values() if c == ErrorCode.NONE)
        log.debug("WriteTxnMarkers: %d markers, %d partitions written, %d refused", len(markers), written,
                  sum(len(mine) for mine in codes) - written)
        return WriteTxnMarkersResponse(markers=results)

    def _complete_offsets(self, marker: _Marker, codes: dict[TopicPartition, int]) -> None:
        """Tell the group coordinator about each `__consumer_offsets` partition this marker ended."""
        complete = self.broker.group_coordinator.complete_transactional_offsets
        for tp, code in codes.items():
            if tp.topic == OFFSETS_TOPIC and code == ErrorCode.NONE:
                complete(tp.partition, marker.producer_id, bool(marker.transaction_result))
