"""InitProducerId for idempotent and transactional producers (kafka-python 3.x and the Java
client turn idempotence on by default).

Steps of a request:
1. with a transactional id, the transaction coordinator answers (`praha.coordinator.transaction`:
   the id's producer id with its epoch bumped, a new one from this broker's block for a new
   id); before v4, PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH, as Kafka does;
2. otherwise the next id of this broker's block is handed out with epoch 0 — also when
   a v3+ producer names its old id and epoch: Kafka gives a non-transactional producer a
   fresh id then too;
3. an exhausted block is replaced by claiming the next 1000 ids in
   `/latest_producer_id_block` (a conditional update on a ZooKeeper thread, off the loop),
   so ids are unique across brokers and restarts.
Duplicate detection per partition lives in the log (`praha.log.producer_state`), which
DescribeProducers reports.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from praha.common import TopicPartition
from praha.errors import ErrorCode, PrahaError
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.admin import DescribeProducersRequest, DescribeProducersResponse
from praha.protocol.messages.gen.txn import InitProducerIdRequest, InitProducerIdResponse
from praha.security.acl import AclOperation

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker
    from praha.zk.store import ZkStore

log = logging.getLogger(__name__)

_DPTopic = DescribeProducersResponse.TopicResponse
_DPPartition = _DPTopic.PartitionResponse
_DPState = _DPPartition.ProducerState

BLOCK_SIZE = 1000
ZK_TIMEOUT_S = 10.0


class ProducerIdManager:
    """Hands out producer ids from blocks claimed in ZooKeeper; thread-safe."""

    def __init__(self, broker_id: int, store_of: Callable[[], ZkStore | None], block_size: int = BLOCK_SIZE):
        self.broker_id = broker_id
        self._store_of = store_of  # the store appears once the broker has started
        self.block_size = block_size
        self._next = 0
        self._end = -1  # inclusive; below _next: no block yet
        self._lock = threading.Lock()

    def next_id(self) -> int:
        with self._lock:
            if self._next > self._end:
                store: ZkStore | None = self._store_of()
                if store is None:
                    raise PrahaError("not connected to ZooKeeper yet")
                self._next, self._end = store.allocate_producer_id_block(self.broker_id, self.block_size)
                log.info("claimed producer ids %d-%d", self._next, self._end)
            pid = self._next
            self._next += 1
            return pid


class ProducerIdApis:
    def __init__(self, broker: Broker):
        self.broker = broker
        self.manager = ProducerIdManager(broker.broker_id, lambda: broker.store)
        self._zk = ThreadPoolExecutor(max_workers=1, thread_name_prefix="producer-ids")

    async def allocate(self) -> int:
        """The next producer id (a ZooKeeper round trip when the block is used up); PrahaError if none."""
        loop = asyncio.get_running_loop()
        try:
            return int(await asyncio.wait_for(loop.run_in_executor(self._zk, self.manager.next_id), ZK_TIMEOUT_S))
        except TimeoutError as e:
            raise PrahaError("timed out claiming a producer id block", ErrorCode.COORDINATOR_NOT_AVAILABLE) from e

    async def handle_init_producer_id(self, req: DecodedRequest) -> InitProducerIdResponse:
        r = req.body(InitProducerIdRequest)
        v = req.api_version
        authz = self.broker.authz
        if r.transactional_id is not None:
            if not authz.transactional_id_allowed(req, AclOperation.WRITE, r.transactional_id):
                return self._response(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            res = await self.broker.txn_coordinator.init_producer_id(
                r.transactional_id, r.transaction_timeout_ms, r.producer_id if v >= 3 else -1,
                r.producer_epoch if v >= 3 else -1)
            code = ErrorCode.INVALID_PRODUCER_EPOCH if res.error == ErrorCode.PRODUCER_FENCED and v < 4 else res.error
            return self._response(code, res.producer_id, res.producer_epoch)
        if not authz.may_write_idempotently(req):  # KIP-679: IdempotentWrite, or Write on some topic
            return self._response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        try:
            pid = await self.allocate()
        except PrahaError as e:
            log.warning("InitProducerId: no producer id: %r", e)
            return self._response(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return self._response(ErrorCode.NONE, pid, 0)

    @staticmethod
    def _response(code: int, producer_id: int = -1, epoch: int = -1) -> InitProducerIdResponse:
        return InitProducerIdResponse(throttle_time_ms=0, error_code=int(code), producer_id=producer_id,
                                      producer_epoch=epoch)

    # ------------------------------------------------------------------ DescribeProducers
    async def handle_describe_producers(self, req: DecodedRequest) -> DescribeProducersResponse:
        """The producers a partition's replica here knows (their last batch each, the coordinator
        epoch of their last marker, the first offset of their open transaction or -1), as
        kafka-transactions describe-producers (`--broker-id`: any replica, as Kafka's brokers
        answer from their local log) and find-hanging read them."""
        topics = []
        for t in req.body(DescribeProducersRequest).topics or []:
            out = []
            readable = self.broker.authz.topic_allowed(req, AclOperation.READ, t.name)
            for index in t.partition_indexes or []:
                if not readable:
                    out.append(_DPPartition(partition_index=index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                            error_message=None, active_producers=[]))
                    continue
                p = self.broker.replica_manager.partitions.get(TopicPartition(t.name, index))
                if p is None or p.log is None:
                    known = self.broker.metadata_cache.contains_topic(t.name)
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    out.append(_DPPartition(partition_index=index, error_code=int(code), error_message=None,
                                            active_producers=[]))
                    continue
                out.append(_DPPartition(partition_index=index, error_code=0, error_message=None, active_producers=[
                    _DPState(producer_id=a.producer_id, producer_epoch=a.epoch, last_sequence=a.last_sequence,
                             last_timestamp=a.timestamp, coordinator_epoch=a.coordinator_epoch,
                             current_txn_start_offset=a.current_txn_first_offset)
                    for a in p.log.active_producers()]))
            topics.append(_DPTopic(name=t.name, partitions=out))
        return DescribeProducersResponse(throttle_time_ms=0, topics=topics)
