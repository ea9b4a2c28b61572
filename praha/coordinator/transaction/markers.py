"""The transaction marker channel (Kafka's `TransactionMarkerChannelManager`): COMMIT or
ABORT markers from the coordinator to every partition of a transaction, through
WriteTxnMarkers (API 27) to the partitions' current leaders.

Steps, repeated by one dispatcher task while markers are owed:
1. drop the jobs whose coordinator is gone (its `__transaction_state` partition resigned);
2. group the partitions still owed by their current leader (metadata cache); a partition
   of a deleted topic is owed nothing, one without a leader waits;
3. send one WriteTxnMarkers per broker that has no request in flight, carrying every
   marker owed to it (batched per broker);
4. per partition: written → done; a leader change, too few replicas, a timeout or a lost
   connection → owed again, to whoever leads then; a fenced coordinator or producer
   epoch → the job is given up (a newer coordinator completes it);
5. a job whose partitions are all written resolves its future (True) and its latency
   is counted.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from praha.errors import ErrorCode
from praha.protocol.async_client import AsyncConnection
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.protocol.messages.gen.txn import WriteTxnMarkersRequest, WriteTxnMarkersResponse

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_VERSION = 1
Partition = tuple[str, int]
#: (broker id, host, port) of a partition's leader
Leader = tuple[int, str, int]

#: per-partition answers after which the coordinator stops: someone newer owns the transaction
GIVE_UP = frozenset({ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
                     ErrorCode.PRODUCER_FENCED})


@dataclass(eq=False)
class MarkerJob:
    """The markers of one transaction's end."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    remaining: set[Partition]
    #: False once the coordinator no longer owns the transaction (resigned, reloaded)
    still_valid: Callable[[], bool] = lambda: True
    done: asyncio.Future[bool] | None = None
    started: float = field(default_factory=time.monotonic)


@dataclass
class MarkerStats:
    jobs_completed: int = 0
    jobs_abandoned: int = 0
    requests: int = 0
    partition_retries: int = 0
    latency_ms_total: float = 0.0


class MarkerChannel:
    def __init__(self, leader_of: Callable[[Partition], Leader | None], topic_exists: Callable[[str], bool],
                 client_id: str, request_timeout_s: float = 30.0, retry_backoff_s: float = 0.1,
                 security: ClientSecurity = PLAINTEXT):
        self.leader_of = leader_of
        self.security = security  # the inter-broker listener's TLS and SASL
        self.topic_exists = topic_exists
        self.client_id = client_id
        self.request_timeout_s = request_timeout_s
        self.retry_backoff_s = retry_backoff_s
        self.jobs: list[MarkerJob] = []
        self.stats = MarkerStats()
        self._conns: dict[int, AsyncConnection] = {}
        self._busy: dict[int, set[tuple[MarkerJob, Partition]]] = {}
        self._failures: dict[int, int] = {}  # broker id -> failed requests in a row
        self._wake = asyncio.Event()
        self._dispatcher: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()

    def write(self, job: MarkerJob) -> asyncio.Future[bool]:
        """Queue the markers of `job`; the future is True once every partition has its marker."""
        job.done = asyncio.get_running_loop().create_future()
        if not job.remaining:
            job.done.set_result(True)
            return job.done
        self.jobs.append(job)
        self._wake.set()
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.get_running_loop().create_task(self._dispatch())
        return job.done

    @property
    def pending(self) -> int:
        return len(self.jobs)

    def shutdown(self) -> None:
        for t in [*self._sends, *([self._dispatcher] if self._dispatcher else [])]:
            t.cancel()
        for c in self._conns.values():
            c.close()
        self._conns.clear()
        for job in self.jobs:
            _resolve(job, False)
        self.jobs.clear()

    # ------------------------------------------------------------ dispatch
    async def _dispatch(self) -> None:
        while self.jobs:
            self._wake.clear()
            self._settle()
            in_flight = {(j, p) for s in self._busy.values() for j, p in s}
            by_broker: dict[int, tuple[Leader, list[tuple[MarkerJob, Partition]]]] = {}
            for job in self.jobs:
                for p in sorted(job.remaining):
                    if (job, p) in in_flight:
                        continue
                    leader = self.leader_of(p)
                    if leader is None:
                        continue
                    by_broker.setdefault(leader[0], (leader, []))[1].append((job, p))
            for broker_id, (leader, items) in by_broker.items():
                if broker_id in self._busy:
                    continue
                self._busy[broker_id] = set(items)
                task = asyncio.get_running_loop().create_task(self._send(leader, items))
                self._sends.add(task)
                task.add_done_callback(self._sends.discard)
            if not self.jobs:
                break
            try:
                await asyncio.wait_for(self._wake.wait(), self.retry_backoff_s)
            except TimeoutError:
                pass

    def _settle(self) -> None:
        """Resolve finished and abandoned jobs; forget partitions of deleted topics."""
        keep = []
        for job in self.jobs:
            if not job.still_valid():
                self.stats.jobs_abandoned += 1
                _resolve(job, False)
                continue
            job.remaining = {p for p in job.remaining if self.topic_exists(p[0])}
            if not job.remaining:
                ms = (time.monotonic() - job.started) * 1000
                self.stats.jobs_completed += 1
                self.stats.latency_ms_total += ms
                _resolve(job, True)
                continue
            keep.append(job)
        self.jobs = keep

    async def _send(self, leader: Leader, items: list[tuple[MarkerJob, Partition]]) -> None:
        broker_id, host, port = leader
        per_job: dict[MarkerJob, list[Partition]] = {}
        for job, p in items:
            per_job.setdefault(job, []).append(p)
        jobs = list(per_job)
        try:
            conn = self._conns.get(broker_id)
            if conn is None or (conn.host, conn.port) != (host, port):
                if conn is not None:
                    conn.close()
                conn = self._conns[broker_id] = AsyncConnection(host, port, self.client_id, self.request_timeout_s,
                                                                security=self.security)
            self.stats.requests += 1
            resp = await conn.send(_request(jobs, per_job), WRITE_TXN_MARKERS_VERSION, WriteTxnMarkersResponse)
            self._failures.pop(broker_id, None)
            self._apply(jobs, per_job, resp)
            if any(p in job.remaining and job.still_valid() for job, p in items):
                await asyncio.sleep(self.retry_backoff_s)  # refused for now: not straight back to it
        except Exception as e:  # noqa: BLE001 - a lost connection, a timeout, a bad answer: all retried
            self.stats.partition_retries += len(items)
            failures = self._failures[broker_id] = self._failures.get(broker_id, 0) + 1
            if failures == 1 or failures % 100 == 0:  # one line per outage, not one per retry
                log.info("WriteTxnMarkers to broker %d failed %d times in a row (%d partitions to retry): %r",
                         broker_id, failures, len(items), e)
            conn = self._conns.pop(broker_id, None)
            if conn is not None:
                conn.close()
            await asyncio.sleep(self.retry_backoff_s)
        finally:
            self._busy.pop(broker_id, None)
            self._wake.set()

    def _apply(self, jobs: list[MarkerJob], per_job: dict[MarkerJob, list[Partition]], resp: Any) -> None:
        retries = 0
        for job, result in zip(jobs, resp.markers or []):
            for t in result.topics or []:
                for pr in t.partitions or []:
                    code = pr.error_code
                    p = (t.name, pr.partition_index)
                    if code == ErrorCode.NONE:
                        job.remaining.discard(p)
                    elif code in GIVE_UP:
                        log.warning("markers of %s (producer %d) refused by %s-%d: %s; a newer coordinator "
                                    "completes it", job.transactional_id, job.producer_id, p[0], p[1],
                                    ErrorCode(code).name)
                        job.still_valid = _never
                    else:
                        retries += 1
        self.stats.partition_retries += retries


def _request(jobs: list[MarkerJob], per_job: dict[MarkerJob, list[Partition]]) -> Any:
    markers = []
    for job in jobs:
        topics: dict[str, list[int]] = {}
        for topic, partition in per_job[job]:
            topics.setdefault(topic, []).append(partition)
        markers.append(WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=job.producer_id, producer_epoch=job.producer_epoch, transaction_result=job.commit,
            topics=[WriteTxnMarkersRequest.WritableTxnMarker.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                    for t, ps in topics.items()],
            coordinator_epoch=job.coordinator_epoch))
    return WriteTxnMarkersRequest(markers=markers)


def _never() -> bool:
    return False


def _resolve(job: MarkerJob, ok: bool) -> None:
    if job.done is not None and not job.done.done():
        job.done.set_result(ok)
