"""InitProducerId for idempotent producers (kafka-python 3.x and the Java client turn
idempotence on by default).

Steps of a request:
1. a transactional id is refused (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): praha has no
   transaction coordinator, so only idempotence without transactions is served;
2. otherwise the next id of this broker's block is handed out with epoch 0 — also when
   a v3+ producer names its old id and epoch: Kafka gives a non-transactional producer a
   fresh id then too;
3. an exhausted block is replaced by claiming the next 1000 ids in
   `/latest_producer_id_block` (a conditional update on a ZooKeeper thread, off the loop),
   so ids are unique across brokers and restarts.
Duplicate detection per partition lives in the log (`praha.log.producer_state`).
"""
from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from kafka.protocol.producer.transaction import InitProducerIdResponse

from praha.errors import ErrorCode, PrahaError
from praha.protocol.framing import DecodedRequest

if TYPE_CHECKING:
    from praha.broker.broker_api import Broker
    from praha.zk.store import ZkStore

log = logging.getLogger(__name__)

BLOCK_SIZE = 1000
ZK_TIMEOUT_S = 10.0


class ProducerIdManager:
    """Hands out producer ids from blocks claimed in ZooKeeper; thread-safe."""

    def __init__(self, broker_id: int, store_of: Callable[[], "ZkStore | None"], block_size: int = BLOCK_SIZE):
        self.broker_id = broker_id
        self._store_of = store_of  # the store appears once the broker has started
        self.block_size = block_size
        self._next = 0
        self._end = -1  # inclusive; below _next: no block yet
        self._lock = threading.Lock()

    def next_id(self) -> int:
        with self._lock:
            if self._next > self._end:
                store: "ZkStore | None" = self._store_of()
                if store is None:
                    raise PrahaError("not connected to ZooKeeper yet")
                self._next, self._end = store.allocate_producer_id_block(self.broker_id, self.block_size)
                log.info("claimed producer ids %d-%d", self._next, self._end)
            pid = self._next
            self._next += 1
            return pid


class ProducerIdApis:
    def __init__(self, broker: "Broker"):
        self.manager = ProducerIdManager(broker.broker_id, lambda: broker.store)
        self._zk = ThreadPoolExecutor(max_workers=1, thread_name_prefix="producer-ids")

    async def handle_init_producer_id(self, req: DecodedRequest) -> Any:
        r = req.request
        if r.transactional_id is not None:
            return self._response(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        loop = asyncio.get_running_loop()
        try:
            pid = await asyncio.wait_for(loop.run_in_executor(self._zk, self.manager.next_id), ZK_TIMEOUT_S)
        except (PrahaError, asyncio.TimeoutError) as e:
            log.warning("InitProducerId: no producer id: %r", e)
            return self._response(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return self._response(ErrorCode.NONE, pid, 0)

    @staticmethod
    def _response(code: int, producer_id: int = -1, epoch: int = -1) -> Any:
        return InitProducerIdResponse(throttle_time_ms=0, error_code=int(code), producer_id=producer_id,
                                      producer_epoch=epoch)
