"""Transaction APIs on the wire: AddPartitionsToTxn (v0-3 from producers, v4's batch form
with `verify_only` from partition leaders), AddOffsetsToTxn, EndTxn, DescribeTransactions,
ListTransactions. (InitProducerId is in `producer_ids`, TxnOffsetCommit with the group APIs,
FindCoordinator key type 1 in `group`.)

Each handler decodes the request, refuses what Kafka's KafkaApis refuses before the
coordinator sees it (unknown topics: UNKNOWN_TOPIC_OR_PARTITION for them and
OPERATION_NOT_ATTEMPTED for the rest, nothing added), asks the transaction coordinator
(`praha.coordinator.transaction`) and answers at the request's version: before v2 of the
producer APIs PRODUCER_FENCED did not exist, so those clients get INVALID_PRODUCER_EPOCH.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from praha.common import TopicPartition, by_topic
from praha.coordinator.group.records import OFFSETS_TOPIC
from praha.coordinator.transaction.coordinator import TransactionCoordinator
from praha.coordinator.transaction.metadata import Partition, TxnState
from praha.errors import ErrorCode
from praha.protocol.error_response import refusal
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResponse_AddPartitionsToTxnTopicResult,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from praha.protocol.messages.runtime import WireMessage
from praha.security.acl import AclOperation

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

_APTopic = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
_APPartition = _APTopic.AddPartitionsToTxnPartitionResult
_APTxn = AddPartitionsToTxnResponse.AddPartitionsToTxnResult
_DTState = DescribeTransactionsResponse.TransactionState
_LTState = ListTransactionsResponse.TransactionState

#: the first version of each producer API that knows PRODUCER_FENCED
PRODUCER_FENCED_SINCE = 2


def for_version(code: ErrorCode, version: int, since: int = PRODUCER_FENCED_SINCE) -> ErrorCode:
    return ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED and version < since else code


class TransactionApis:
    def __init__(self, broker: Broker):
        self.broker = broker

    @property
    def coordinator(self) -> TransactionCoordinator:
        return self.broker.txn_coordinator

    # ------------------------------------------------------------ AddPartitionsToTxn
    async def handle_add_partitions_to_txn(self, req: DecodedRequest) -> AddPartitionsToTxnResponse:
        r = req.body(AddPartitionsToTxnRequest)
        v = req.api_version
        if v < 4:
            wanted = [(t.name, p) for t in (r.v3_and_below_topics or []) for p in (t.partitions or [])]
            results = await self._add(req, r.v3_and_below_transactional_id, r.v3_and_below_producer_id,
                                      r.v3_and_below_producer_epoch, False, wanted)
            results = {tp: for_version(c, v) for tp, c in results.items()}
            return AddPartitionsToTxnResponse(throttle_time_ms=0, results_by_topic_v3_and_below=_by_topic(results))
        out = []
        for t in r.transactions or []:
            wanted = [(tt.name, p) for tt in (t.topics or []) for p in (tt.partitions or [])]
            results = await self._add(req, t.transactional_id, t.producer_id, t.producer_epoch, bool(t.verify_only),
                                      wanted)
            out.append(_APTxn(transactional_id=t.transactional_id, topic_results=_by_topic(results)))
        return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=0, results_by_transaction=out)

    async def _add(self, req: DecodedRequest, transactional_id: str, producer_id: int, epoch: int, verify_only: bool,
                   wanted: list[Partition]) -> dict[Partition, ErrorCode]:
        authz = self.broker.authz  # Write on the transactional id (a broker verifying: ClusterAction)
        if not (authz.transactional_id_allowed(req, AclOperation.WRITE, transactional_id)
                or (verify_only and authz.cluster_allowed(req, AclOperation.CLUSTER_ACTION))):
            return {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in wanted}
        denied = {tp for tp in wanted if not authz.topic_allowed(req, AclOperation.WRITE, tp[0])}
        if denied:
            return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp in denied else ErrorCode.OPERATION_NOT_ATTEMPTED
                    for tp in wanted}
        if verify_only:
            return self.coordinator.verify_partitions(transactional_id, producer_id, epoch, wanted)
        cache = self.broker.metadata_cache
        unknown = {tp for tp in wanted if cache.partition(TopicPartition(*tp)) is None}
        if unknown:
            return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                    for tp in wanted}
        code = await self.coordinator.add_partitions(transactional_id, producer_id, epoch, wanted)
        return {tp: code for tp in wanted}

    # ------------------------------------------------------------ AddOffsetsToTxn, EndTxn
    async def handle_add_offsets_to_txn(self, req: DecodedRequest) -> WireMessage:
        r = req.body(AddOffsetsToTxnRequest)
        authz = self.broker.authz
        if not authz.transactional_id_allowed(req, AclOperation.WRITE, r.transactional_id):
            return refusal(req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if r.group_id and not authz.group_allowed(req, AclOperation.READ, r.group_id):
            return refusal(req, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if not r.group_id:
            return refusal(req, ErrorCode.INVALID_GROUP_ID)
        offsets_partition = (OFFSETS_TOPIC, self.broker.group_coordinator.partition_of(r.group_id))
        code = await self.coordinator.add_partitions(r.transactional_id, r.producer_id, r.producer_epoch,
                                                     [offsets_partition])
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=int(for_version(code, req.api_version)))

    async def handle_end_txn(self, req: DecodedRequest) -> WireMessage:
        r = req.body(EndTxnRequest)
        if not self.broker.authz.transactional_id_allowed(req, AclOperation.WRITE, r.transactional_id):
            return refusal(req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        code = await self.coordinator.end_txn(r.transactional_id, r.producer_id, r.producer_epoch, bool(r.committed))
        return EndTxnResponse(throttle_time_ms=0, error_code=int(for_version(code, req.api_version)))

    # ------------------------------------------------------------ admin
    async def handle_describe_transactions(self, req: DecodedRequest) -> DescribeTransactionsResponse:
        out = []
        for tid in req.body(DescribeTransactionsRequest).transactional_ids or []:
            if not self.broker.authz.transactional_id_allowed(req, AclOperation.DESCRIBE, tid):
                out.append(_DTState(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
                                    transactional_id=tid, transaction_state="", transaction_timeout_ms=0,
                                    transaction_start_time_ms=-1, producer_id=-1, producer_epoch=-1, topics=[]))
                continue
            d = self.coordinator.describe(tid)
            topics = by_topic(d.partitions)
            out.append(_DTState(error_code=int(d.error), transactional_id=tid, transaction_state=d.state,
                                transaction_timeout_ms=d.timeout_ms, transaction_start_time_ms=d.start_ms,
                                producer_id=d.producer_id, producer_epoch=d.producer_epoch,
                                topics=[_DTState.TopicData(topic=t, partitions=ps) for t, ps in topics.items()]))
        return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=out)

    async def handle_list_transactions(self, req: DecodedRequest) -> ListTransactionsResponse:
        r = req.body(ListTransactionsRequest)
        filters = list(r.state_filters or [])
        unknown = [s for s in filters if TxnState.of_name(s) is None]
        duration = r.duration_filter if req.api_version >= 1 else -1
        code, listed = self.coordinator.list_transactions(
            {s for s in filters if s not in unknown}, set(r.producer_id_filters or []), duration)
        if filters and len(unknown) == len(filters):
            listed = []  # only unknown states asked for: nothing matches
        authz = self.broker.authz  # only the transactional ids the principal may describe
        listed = [t for t in listed if authz.transactional_id_allowed(req, AclOperation.DESCRIBE, t.transactional_id)]
        return ListTransactionsResponse(throttle_time_ms=0, error_code=int(code), unknown_state_filters=unknown,
                                        transaction_states=[
                                            _LTState(transactional_id=t.transactional_id, producer_id=t.producer_id,
                                                     transaction_state=t.state) for t in listed])


def _by_topic(results: dict[Partition, ErrorCode]) -> list[AddPartitionsToTxnResponse_AddPartitionsToTxnTopicResult]:
    topics = by_topic((t, _APPartition(partition_index=p, partition_error_code=int(code)))
                      for (t, p), code in results.items())
    return [_APTopic(name=t, results_by_partition=ps) for t, ps in topics.items()]
