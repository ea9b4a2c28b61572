"""KIP-890 part 1 on a partition leader: is this partition in the producer's transaction?

A transactional produce that would open a transaction in a partition (the partition's
producer state has none open for that producer and epoch) could be a late retry of a
transaction the coordinator already ended: appended, it would open a transaction no
marker ever closes, and hold the last stable offset back forever. So before appending,
the leader asks the transaction coordinator:
1. the coordinator is the leader of `__transaction_state` partition
   `abs(javaStringHash(transactional.id)) % partitions` (as for groups); none known:
   COORDINATOR_NOT_AVAILABLE;
2. one AddPartitionsToTxn v4 with `verify_only`, every partition of the request in it,
   on a connection kept per coordinator broker (one request at a time on it);
3. each partition's answer becomes the produce's error (`produce_error`, Kafka 3.8+'s
   translation, KAFKA-16386): the coordinator's "not available / loading / not coordinator /
   concurrent transactions", and a coordinator that could not be reached (NETWORK_EXCEPTION),
   become NOT_ENOUGH_REPLICAS, which every client retries; PRODUCER_FENCED becomes
   INVALID_PRODUCER_EPOCH; a partition not in the transaction is INVALID_TXN_STATE (so is a
   top-level CLUSTER_AUTHORIZATION_FAILED). A NETWORK_EXCEPTION answered as such made
   librdkafka abort the transaction (chaos seed 201: with a batch of it possibly persisted
   on a leader killed meanwhile, the abort kept the producer epoch, the next transaction
   reused that batch's sequence number, and the new leader answered its write as a
   duplicate of the aborted one: a committed value lost).
Nothing is cached: every partition that would open a transaction asks again. The log's
verification token (`Log.begin_verification`) makes the append fail if a marker landed
while the leader waited for the answer.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, NamedTuple

from praha.common import TopicPartition, by_topic
from praha.coordinator.group.records import partition_for
from praha.errors import ErrorCode, PrahaError
from praha.log.batch import (
    ATTRIBUTES_OFFSET,
    CURRENT_MAGIC,
    HEADER,
    HEADER_SIZE,
    MAGIC_OFFSET,
    TRANSACTIONAL_MASK,
    Buffer,
)
from praha.protocol.async_client import AsyncConnection
from praha.protocol.messages.gen.txn import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"
VERIFY_VERSION = 4
VERIFY_TIMEOUT_S = 30.0

_TXN = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
_TOPIC = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic

#: coordinator answers a producer can only wait out: retriable for every client as NOT_ENOUGH_REPLICAS
_RETRIABLE = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS,
                        ErrorCode.NETWORK_EXCEPTION})
CLUSTER_AUTHORIZATION_FAILED = 31


class TxnProducer(NamedTuple):
    producer_id: int
    producer_epoch: int


def is_transactional(records: Buffer | None) -> bool:
    """Whether the first batch of a partition's records has the transactional bit (what
    Kafka's `ProduceRequest.hasTransactionalRecords` looks at)."""
    return (records is not None and len(records) >= HEADER_SIZE and records[MAGIC_OFFSET] == CURRENT_MAGIC
            and bool(records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_MASK))


def transactional_producer(records: Buffer) -> TxnProducer | None:
    """The producer of a produce's records if its first batch is transactional (read from
    the header only; the log checks every batch)."""
    if len(records) < HEADER_SIZE or records[MAGIC_OFFSET] != CURRENT_MAGIC:
        return None
    h = HEADER.unpack_from(records, 0)
    attributes, producer_id, producer_epoch = h[5], h[9], h[10]
    if not attributes & TRANSACTIONAL_MASK or producer_id < 0:
        return None
    return TxnProducer(producer_id, producer_epoch)


def produce_error(coordinator_code: int) -> int:
    """The produce answer for a partition the coordinator answered `coordinator_code` for."""
    if coordinator_code in _RETRIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    if coordinator_code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return coordinator_code


def verification_request(transactional_id: str, producer_id: int, producer_epoch: int,
                         partitions: list[TopicPartition]) -> AddPartitionsToTxnRequest:
    topics = by_topic((tp.topic, tp.partition) for tp in partitions)
    return AddPartitionsToTxnRequest(transactions=[_TXN(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch, verify_only=True,
        topics=[_TOPIC(name=t, partitions=ps) for t, ps in topics.items()])])


def partition_errors(response: AddPartitionsToTxnResponse, transactional_id: str,
                     partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The coordinator's code per partition; a top-level error, or a partition it did not
    answer for, counts for every partition left (the latter as INVALID_TXN_STATE)."""
    top = response.error_code or ErrorCode.NONE
    if top == CLUSTER_AUTHORIZATION_FAILED:  # not the producer's business: "not verified"
        top = ErrorCode.INVALID_TXN_STATE
    if top != ErrorCode.NONE:
        return {tp: top for tp in partitions}
    out: dict[TopicPartition, int] = {}
    for result in response.results_by_transaction or []:
        if result.transactional_id != transactional_id:
            continue
        for t in result.topic_results or []:
            for p in t.results_by_partition or []:
                out[TopicPartition(t.name, p.partition_index)] = p.partition_error_code
    return {tp: out.get(tp, ErrorCode.INVALID_TXN_STATE) for tp in partitions}


class TxnVerifier:
    """Asks transaction coordinators whether partitions are in a transaction (one per broker)."""

    def __init__(self, broker: Broker):
        self.broker = broker
        self._connections: dict[int, tuple[AsyncConnection, asyncio.Lock]] = {}

    @property
    def enabled(self) -> bool:
        return bool(self.broker.config.transaction_partition_verification_enable)

    def coordinator_partition(self, transactional_id: str) -> int:
        cache = self.broker.metadata_cache
        count = len(cache.topic_partitions(TRANSACTION_STATE_TOPIC)) or \
            self.broker.config.transaction_state_log_num_partitions
        return partition_for(transactional_id, count)

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """The produce error code for each partition (NONE: it is in the transaction)."""
        tsp = TopicPartition(TRANSACTION_STATE_TOPIC, self.coordinator_partition(transactional_id))
        coordinator = self.broker.metadata_cache.leader_of(tsp)
        if coordinator is None:
            return {tp: produce_error(ErrorCode.COORDINATOR_NOT_AVAILABLE) for tp in partitions}
        request = verification_request(transactional_id, producer_id, producer_epoch, partitions)
        security = self.broker.replica_manager.inter_broker_security  # brokers talk on the inter-broker listener
        ep = coordinator.endpoint(security.listener) or coordinator.endpoints[0]
        conn, lock = self._connection(coordinator.id, ep.host, ep.port)
        try:
            async with lock:
                reused = conn.connected
                try:
                    response = await conn.send(request, VERIFY_VERSION, AddPartitionsToTxnResponse)
                except OSError:
                    if not reused:
                        raise
                    # a kept connection its peer had closed (a restarted coordinator): once more, fresh
                    response = await conn.send(request, VERIFY_VERSION, AddPartitionsToTxnResponse)
        except (TimeoutError, OSError, PrahaError) as e:
            log.info("Transaction verification for %s at broker %d failed: %s", transactional_id, coordinator.id, e)
            return {tp: produce_error(ErrorCode.NETWORK_EXCEPTION) for tp in partitions}
        except Exception as e:  # noqa: BLE001 - an undecodable answer must fail this produce, not the connection
            conn.close()
            log.warning("Undecodable AddPartitionsToTxn answer from broker %d: %r", coordinator.id, e)
            return {tp: produce_error(ErrorCode.NETWORK_EXCEPTION) for tp in partitions}
        return {tp: produce_error(code) for tp, code in partition_errors(response, transactional_id,
                                                                         partitions).items()}

    def _connection(self, broker_id: int, host: str, port: int) -> tuple[AsyncConnection, asyncio.Lock]:
        entry = self._connections.get(broker_id)
        if entry is None or (entry[0].host, entry[0].port) != (host, port):
            if entry is not None:
                entry[0].close()
            entry = (AsyncConnection(host, port, f"txn-verifier-{self.broker.broker_id}", VERIFY_TIMEOUT_S,
                                     security=self.broker.replica_manager.inter_broker_security), asyncio.Lock())
            self._connections[broker_id] = entry
        return entry

    def close(self) -> None:
        for conn, _ in self._connections.values():
            conn.close()
        self._connections.clear()
