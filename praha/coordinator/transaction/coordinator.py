"""The transaction coordinator (Kafka's `kafka.coordinator.transaction`): one broker's share
of the transactional ids, those whose `__transaction_state` partition it leads.

Everything runs on the broker's network event loop; only log reads (loading) go to a thread.
Every change of a transaction is written to `__transaction_state` (acks=all) before it is
applied or answered (`metadata` has the two-step transitions).

Flows:
- **Leadership.** `on_elected(p, epoch)`: p is loading (COORDINATOR_LOAD_IN_PROGRESS) while
  its log is replayed — the last value of each id wins, a tombstone removes it —; then
  served, and every transaction found in PrepareCommit/PrepareAbort gets its markers sent
  again and is completed (a failover in the middle of a commit finishes the commit). The
  leader epoch is the coordinator epoch the markers carry. `on_resigned(p)` drops p's ids.
- **InitProducerId.** A new id gets a producer id (the broker's block) and epoch 0; a known
  one an epoch bump (a new producer id once the epoch is exhausted). An ongoing transaction
  of the previous incarnation is fenced (epoch + 1) and aborted, and the new incarnation is
  told CONCURRENT_TRANSACTIONS until the abort is complete.
- **AddPartitionsToTxn / AddOffsetsToTxn.** The partitions (for offsets: the group's
  `__consumer_offsets` partition) join the transaction: Ongoing. The v4 `verify_only` form
  (partition leaders, KIP-890) only answers whether they are in it.
- **EndTxn.** Ongoing → PrepareCommit/PrepareAbort written, the client answered, then the
  markers are sent (`markers`) and CompleteCommit/CompleteAbort written.
- **Timeouts.** Every `transaction.abort.timed.out.transaction.cleanup.interval.ms`, a
  transaction open longer than its timeout is fenced and aborted; every
  `transaction.remove.expired.transaction.cleanup.interval.ms`, an id idle for
  `transactional.id.expiration.ms` (and not in a transaction) is removed with a tombstone.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from praha.common import now_ms
from praha.config import BrokerConfig
from praha.coordinator.group.storage import LogRecord, map_append_error
from praha.coordinator.ownership import Ownership, ownership_error
from praha.coordinator.transaction.markers import MarkerChannel, MarkerJob
from praha.coordinator.transaction.metadata import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    Partition,
    TransactionMetadata,
    TxnState,
    TxnTransit,
    TxnTransitionError,
)
from praha.coordinator.transaction.records import (
    TRANSACTION_STATE_TOPIC,
    TxnLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from praha.errors import ErrorCode, PrahaError

log = logging.getLogger(__name__)

COMPLETE_RETRY_S = 0.5


@dataclass(frozen=True, slots=True)
class TxnConfig:
    partitions: int = 50
    max_timeout_ms: int = 900000
    id_expiration_ms: int = 7 * 24 * 3600 * 1000
    abort_check_interval_ms: int = 10000
    expiration_check_interval_ms: int = 3600000

    @classmethod
    def from_broker_config(cls, c: BrokerConfig) -> TxnConfig:
        return cls(c.transaction_state_log_num_partitions, c.transaction_max_timeout_ms,
                   c.transactional_id_expiration_ms, c.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                   c.transaction_remove_expired_transaction_cleanup_interval_ms)


class TxnStateLog(Protocol):
    """The coordinator's view of the `__transaction_state` partitions this broker leads."""

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> ErrorCode:
        """Append as leader and wait until replicated (acks=all); the outcome's error code."""
        ...

    def read(self, partition: int) -> Iterator[LogRecord]:
        """Every record of the partition, key and value, in offset order (blocking)."""
        ...


@dataclass(frozen=True, slots=True)
class InitResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class TxnDescription:
    error: ErrorCode
    transactional_id: str
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: tuple[Partition, ...] = ()


@dataclass(frozen=True, slots=True)
class TxnListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass
class TxnStats:
    commits: int = 0
    aborts: int = 0
    timed_out_aborts: int = 0
    ids_expired: int = 0
    partitions_loaded: int = 0
    load_time_ms_total: float = 0.0
    completions_after_load: int = 0


class TransactionCoordinator:
    def __init__(self, config: TxnConfig, state_log: TxnStateLog, markers: MarkerChannel,
                 allocate_producer_id: Callable[[], Awaitable[int]],
                 run_blocking: Callable[[Callable[[], Any]], Awaitable[Any]],
                 on_event: Callable[..., None] = lambda *a, **k: None):
        self.config = config
        self.log = state_log
        self.markers = markers
        self.allocate_producer_id = allocate_producer_id
        self.run_blocking = run_blocking
        self.on_event = on_event  # (name, partition, **fields) for the state-change log
        self.owned: dict[int, tuple[Ownership, int]] = {}
        self.txns: dict[str, TransactionMetadata] = {}
        self.stats = TxnStats()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timers: list[asyncio.Task[Any]] = []

    # ================================================================ leadership
    def partition_of(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.partitions)

    def on_elected(self, partition: int, epoch: int) -> None:
        cur = self.owned.get(partition)
        if cur is not None:
            if epoch > cur[1] and cur[0] is Ownership.ACTIVE:
                self.owned[partition] = (Ownership.ACTIVE, epoch)
            return
        self.owned[partition] = (Ownership.LOADING, epoch)
        self._spawn(self._load(partition, epoch))
        self._ensure_timers()

    def on_resigned(self, partition: int) -> None:
        if self.owned.pop(partition, None) is None:
            return
        gone = [tid for tid in self.txns if self.partition_of(tid) == partition]
        for tid in gone:
            del self.txns[tid]
        log.info("transaction coordinator: resigned %s-%d, %d transactional ids unloaded",
                 TRANSACTION_STATE_TOPIC, partition, len(gone))
        self.on_event("TxnCoordinatorUnloaded", partition, transactional_ids=len(gone))

    async def _load(self, partition: int, epoch: int) -> None:
        started = time.monotonic()

        def replay() -> tuple[dict[str, TxnLogValue], int]:
            found: dict[str, TxnLogValue] = {}
            n = 0
            for rec in self.log.read(partition):
                key, value = rec.key, rec.value
                if key is None:
                    continue
                n += 1
                try:
                    tid = decode_key(key)
                    if value is None:
                        found.pop(tid, None)
                    else:
                        found[tid] = decode_value(value)
                except PrahaError as e:
                    log.warning("skipping an unreadable record in %s-%d: %s", TRANSACTION_STATE_TOPIC, partition, e)
            return found, n

        try:
            found, records = await self.run_blocking(replay)
        except Exception as e:  # noqa: BLE001 - a failed load leaves the partition unserved, not the broker
            log.error("loading %s-%d failed: %r", TRANSACTION_STATE_TOPIC, partition, e)
            if self.owned.get(partition) == (Ownership.LOADING, epoch):
                del self.owned[partition]
            return
        if self.owned.get(partition) != (Ownership.LOADING, epoch):
            return  # resigned (or re-elected) meanwhile
        completing = []
        for tid, v in found.items():
            try:
                state = TxnState.of_id(v.state_id)
            except ValueError:
                log.warning("%s: unknown transaction state id %d, skipped", tid, v.state_id)
                continue
            txn = TransactionMetadata(tid, v.producer_id, v.producer_epoch, v.timeout_ms, state, set(v.partitions),
                                      v.start_ms, v.last_update_ms)
            self.txns[tid] = txn
            if state.completing:
                completing.append(txn)
        self.owned[partition] = (Ownership.ACTIVE, epoch)
        for txn in completing:
            self.stats.completions_after_load += 1
            self._spawn(self._complete(txn, epoch))
        ms = (time.monotonic() - started) * 1000
        self.stats.partitions_loaded += 1
        self.stats.load_time_ms_total += ms
        log.info("transaction coordinator: loaded %s-%d (epoch %d): %d records, %d transactional ids, "
                 "%d transactions to complete, in %.0f ms", TRANSACTION_STATE_TOPIC, partition, epoch, records,
                 len(found), len(completing), ms)
        self.on_event("TxnCoordinatorLoaded", partition, transactional_ids=len(found), records=records,
                      completing=len(completing), load_ms=round(ms, 1))

    def _check(self, transactional_id: str | None) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        return ownership_error(self.owned.get(self.partition_of(transactional_id)))

    def _coordinator_epoch(self, transactional_id: str) -> int:
        return self.owned.get(self.partition_of(transactional_id), (Ownership.LOADING, -1))[1]

    # ================================================================ InitProducerId
    async def init_producer_id(self, transactional_id: str, timeout_ms: int, expected_producer_id: int = -1,
                               expected_epoch: int = -1) -> InitResult:
        code = self._check(transactional_id)
        if code != ErrorCode.NONE:
            return InitResult(code)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        txn = self.txns.get(transactional_id)
        if txn is None:
            try:
                pid = await self.allocate_producer_id()
            except PrahaError as e:
                log.warning("InitProducerId %s: no producer id: %s", transactional_id, e)
                return InitResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            code = self._check(transactional_id)
            if code != ErrorCode.NONE:
                return InitResult(code)
            txn = self.txns.setdefault(transactional_id, TransactionMetadata(
                transactional_id, pid, NO_PRODUCER_EPOCH, timeout_ms, last_update_ms=now_ms()))
        if expected_producer_id >= 0 and not _valid_expected_producer(txn, expected_producer_id, expected_epoch):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if txn.pending is not None or txn.state.completing or txn.state is TxnState.DEAD:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if txn.state in (TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE):
            # the previous incarnation's transaction: fence it and abort; the client retries
            if txn.state is TxnState.ONGOING:
                txn.apply_fence_in_memory()
            log.info("InitProducerId %s: aborting the ongoing transaction of producer %d (epoch now %d)",
                     transactional_id, txn.producer_id, txn.producer_epoch)
            self._spawn(self._end(txn, txn.producer_id, txn.producer_epoch, commit=False, from_client=False))
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected_epoch >= 0 and txn.producer_epoch not in (expected_epoch, NO_PRODUCER_EPOCH):
            if expected_producer_id == txn.producer_id and expected_epoch == txn.last_producer_epoch:
                return InitResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)  # a retried bump
            return InitResult(ErrorCode.PRODUCER_FENCED)
        new_pid: int | None = None
        if txn.producer_epoch >= MAX_EPOCH:
            try:
                new_pid = await self.allocate_producer_id()
            except PrahaError:
                return InitResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        try:
            transit = txn.prepare_epoch_bump(timeout_ms, now_ms(), new_pid)
        except TxnTransitionError as e:
            return InitResult(e.code)
        err = await self._write(txn, transit)
        if err != ErrorCode.NONE:
            return InitResult(err)
        return InitResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)

    # ================================================================ AddPartitions / AddOffsets
    def _validate_producer(self, transactional_id: str, producer_id: int, epoch: int
                           ) -> tuple[ErrorCode, TransactionMetadata | None]:
        code = self._check(transactional_id)
        if code != ErrorCode.NONE:
            return code, None
        txn = self.txns.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if txn.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, txn

    async def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                             partitions: Iterable[Partition]) -> ErrorCode:
        code, txn = self._validate_producer(transactional_id, producer_id, epoch)
        if txn is None:
            return code
        wanted = set(partitions)
        if txn.pending is not None or txn.state.completing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if txn.state is TxnState.ONGOING and wanted <= txn.partitions:
            return ErrorCode.NONE
        try:
            transit = txn.prepare_add_partitions(wanted, now_ms())
        except TxnTransitionError as e:
            return e.code
        return await self._write(txn, transit)

    def verify_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                          partitions: Iterable[Partition]) -> dict[Partition, ErrorCode]:
        """KIP-890: a partition leader asks whether these partitions are in the ongoing
        transaction before it appends the producer's first transactional batch."""
        wanted = list(partitions)
        code, txn = self._validate_producer(transactional_id, producer_id, epoch)
        if txn is not None and txn.state.completing:
            code = ErrorCode.CONCURRENT_TRANSACTIONS
        if txn is None or code != ErrorCode.NONE:
            return {p: code for p in wanted}
        return {p: ErrorCode.NONE if p in txn.partitions else ErrorCode.INVALID_TXN_STATE for p in wanted}

    # ================================================================ EndTxn
    async def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> ErrorCode:
        code = self._check(transactional_id)
        if code != ErrorCode.NONE:
            return code
        txn = self.txns.get(transactional_id)
        if txn is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        return await self._end(txn, producer_id, epoch, commit, from_client=True)

    async def _end(self, txn: TransactionMetadata, producer_id: int, epoch: int, commit: bool,
                   from_client: bool) -> ErrorCode:
        if txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if (from_client and epoch != txn.producer_epoch) or epoch < txn.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if txn.pending is not None:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        s = txn.state
        if s is TxnState.COMPLETE_COMMIT:
            return ErrorCode.NONE if commit else ErrorCode.INVALID_TXN_STATE
        if s is TxnState.COMPLETE_ABORT:
            return ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.NONE
        if s is TxnState.PREPARE_COMMIT:
            return ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE
        if s is TxnState.PREPARE_ABORT:
            return ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.CONCURRENT_TRANSACTIONS
        if not (s is TxnState.ONGOING or (s is TxnState.PREPARE_EPOCH_FENCE and not commit)):
            return ErrorCode.INVALID_TXN_STATE  # Empty, Dead: there is no transaction to end
        try:
            transit = txn.prepare_end(commit, now_ms())
        except TxnTransitionError as e:
            return e.code
        coordinator_epoch = self._coordinator_epoch(txn.transactional_id)
        err = await self._write(txn, transit)
        if err == ErrorCode.NONE:
            self._spawn(self._complete(txn, coordinator_epoch))
        return err

    async def _complete(self, txn: TransactionMetadata, coordinator_epoch: int) -> None:
        """Send the markers of a PrepareCommit/PrepareAbort and write its completion."""
        commit = txn.state is TxnState.PREPARE_COMMIT
        tid = txn.transactional_id
        job = MarkerJob(tid, txn.producer_id, txn.producer_epoch, commit, coordinator_epoch, set(txn.partitions),
                        still_valid=lambda: self.txns.get(tid) is txn)
        if not await self.markers.write(job):
            return
        while self.txns.get(tid) is txn and txn.state.completing:
            if txn.pending is None:
                err = await self._write(txn, txn.prepare_complete(now_ms()))
                if err == ErrorCode.NONE:
                    if commit:
                        self.stats.commits += 1
                    else:
                        self.stats.aborts += 1
                    return
                log.info("%s: writing %s failed (%s), retrying", tid,
                         "CompleteCommit" if commit else "CompleteAbort", err.name)
            await asyncio.sleep(COMPLETE_RETRY_S)

    # ================================================================ the log
    async def _write(self, txn: TransactionMetadata, transit: TxnTransit) -> ErrorCode:
        """Write a prepared transit (acks=all) and apply it; the error a client gets if not."""
        tid = txn.transactional_id
        value = None if transit.state is TxnState.DEAD else encode_value(TxnLogValue(
            transit.producer_id, transit.producer_epoch, transit.timeout_ms, transit.state.id,
            tuple(sorted(transit.partitions)), transit.last_update_ms, transit.start_ms))
        try:
            err = map_append_error(await self.log.append(self.partition_of(tid), [(encode_key(tid), value)]))
        except BaseException:
            txn.abandon()
            raise
        if self.txns.get(tid) is not txn:
            return ErrorCode.NOT_COORDINATOR
        if err != ErrorCode.NONE:
            txn.abandon()
            return err
        txn.complete(transit)
        return ErrorCode.NONE

    # ================================================================ admin
    def describe(self, transactional_id: str) -> TxnDescription:
        code = self._check(transactional_id)
        if code != ErrorCode.NONE:
            return TxnDescription(code, transactional_id)
        txn = self.txns.get(transactional_id)
        if txn is None or txn.state is TxnState.DEAD:
            return TxnDescription(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, transactional_id)
        return TxnDescription(ErrorCode.NONE, transactional_id, txn.state.display, txn.timeout_ms, txn.start_ms,
                              txn.producer_id, txn.producer_epoch, tuple(sorted(txn.partitions)))

    def list_transactions(self, states: set[str] | None = None, producer_ids: set[int] | None = None,
                          min_duration_ms: int = -1) -> tuple[ErrorCode, list[TxnListing]]:
        """Kafka's ListTransactions: a filter on state names (case-insensitive) and producer
        ids; with `min_duration_ms` >= 0, only transactions open at least that long (v1)."""
        loading = any(o is Ownership.LOADING for o, _ in self.owned.values())
        now = now_ms()
        out = []
        wanted = {s.lower() for s in states or ()}
        for tid, txn in self.txns.items():
            if txn.state is TxnState.DEAD or self.owned.get(self.partition_of(tid), (None,))[0] is not Ownership.ACTIVE:
                continue
            if wanted and txn.state.display.lower() not in wanted:
                continue
            if producer_ids and txn.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and (txn.state is not TxnState.ONGOING or now - txn.start_ms < min_duration_ms):
                continue
            out.append(TxnListing(tid, txn.producer_id, txn.state.display))
        return (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NONE), out

    # ================================================================ timers
    def _ensure_timers(self) -> None:
        if self._timers and not all(t.done() for t in self._timers):
            return
        loop = asyncio.get_running_loop()
        self._timers = [loop.create_task(self._every(self.config.abort_check_interval_ms, self.abort_timed_out)),
                        loop.create_task(self._every(self.config.expiration_check_interval_ms, self.expire_ids))]

    async def _every(self, interval_ms: int, job: Callable[[int], Awaitable[int]]) -> None:
        while self.owned:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job(now_ms())
            except Exception as e:  # noqa: BLE001 - the next round tries again
                log.warning("transaction coordinator: %s failed: %r", getattr(job, "__name__", job), e)

    async def abort_timed_out(self, now: int) -> int:
        """Fence and abort every transaction open longer than its timeout; how many."""
        doomed = [txn for tid, txn in self.txns.items()
                  if self._check(tid) == ErrorCode.NONE and txn.pending is None
                  and ((txn.state is TxnState.ONGOING and txn.start_ms + txn.timeout_ms < now)
                       or txn.state is TxnState.PREPARE_EPOCH_FENCE)]
        for txn in doomed:
            if txn.state is TxnState.ONGOING:
                txn.apply_fence_in_memory()
            log.info("transaction %s (producer %d) timed out after %d ms: aborting, epoch now %d",
                     txn.transactional_id, txn.producer_id, txn.timeout_ms, txn.producer_epoch)
            self._spawn(self._end(txn, txn.producer_id, txn.producer_epoch, commit=False, from_client=False))
        self.stats.timed_out_aborts += len(doomed)
        return len(doomed)

    async def expire_ids(self, now: int) -> int:
        """Remove (tombstone) the transactional ids idle for transactional.id.expiration.ms."""
        expired = 0
        for tid, txn in list(self.txns.items()):
            if (self._check(tid) != ErrorCode.NONE or txn.pending is not None or not txn.state.expiration_allowed
                    or txn.last_update_ms + self.config.id_expiration_ms > now):
                continue
            if await self._write(txn, txn.prepare_dead()) == ErrorCode.NONE and self.txns.get(tid) is txn:
                del self.txns[tid]
                expired += 1
        if expired:
            self.stats.ids_expired += expired
            log.info("transaction coordinator: %d transactional ids expired", expired)
        return expired

    # ================================================================ figures and shutdown
    def figures(self) -> list[tuple[str, float, str]]:
        by_state = {s.display: 0 for s in TxnState if s is not TxnState.DEAD}
        for txn in self.txns.values():
            if txn.state is not TxnState.DEAD:
                by_state[txn.state.display] += 1
        out = [(f"transactions_{_snake(name)}", float(n), f"transactional ids in state {name} on this coordinator")
               for name, n in by_state.items()]
        s, m = self.stats, self.markers.stats
        out += [
            ("transaction_commits_total", float(s.commits), "transactions committed (markers written)"),
            ("transaction_aborts_total", float(s.aborts), "transactions aborted (markers written)"),
            ("transaction_timed_out_aborts_total", float(s.timed_out_aborts), "transactions aborted on timeout"),
            ("transactional_ids_expired_total", float(s.ids_expired), "transactional ids expired"),
            ("transaction_marker_jobs_total", float(m.jobs_completed), "transactions whose markers were all written"),
            ("transaction_marker_latency_ms_total", m.latency_ms_total,
             "time from the end of a transaction to its last marker written"),
            ("transaction_marker_requests_total", float(m.requests), "WriteTxnMarkers requests sent"),
            ("transaction_marker_retries_total", float(m.partition_retries), "markers sent again"),
            ("transaction_marker_pending", float(self.markers.pending), "transactions waiting for markers"),
            ("transaction_coordinator_partitions", float(len(self.owned)), "__transaction_state partitions led"),
            ("transaction_load_time_ms_total", s.load_time_ms_total, "time spent loading partitions"),
        ]
        return out

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def shutdown(self) -> None:
        for p in list(self.owned):
            self.on_resigned(p)
        for t in [*self._tasks, *self._timers]:
            t.cancel()
        self.markers.shutdown()


def _valid_expected_producer(txn: TransactionMetadata, producer_id: int, epoch: int) -> bool:
    """Kafka's isValidProducerId (KIP-360): a producer naming its old id and epoch may go on."""
    return (txn.producer_epoch == NO_PRODUCER_EPOCH or producer_id == txn.producer_id
            or (producer_id == txn.last_producer_id and epoch >= MAX_EPOCH))


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
