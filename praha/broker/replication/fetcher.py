"""Follower replication: one fetcher task per leader broker, fetching all its partitions.

Per source broker, the task loops:
1. connect (on failure: back off `replica.fetch.backoff.ms`, retry);
2. partitions marked TRUNCATING: if our log knows no leader epoch, truncate to the high
   watermark; otherwise ask the leader OffsetsForLeaderEpoch for our latest epoch and
   truncate to where the leader's copy of that epoch ends (`truncation_offset`; an
   undefined answer falls back to the high watermark); a partial answer (the leader
   named an epoch we lack) asks again next round; then FETCHING from our log end;
3. one FetchRequest (replica_id = our broker id) for every FETCHING partition, each at
   its log end, `replica.fetch.max.bytes` per partition, parked by the leader up to
   `replica.fetch.wait.max.ms`;
4. per partition answer: append the batches as they are (`append_as_follower`), take
   the leader's high watermark and log start; OFFSET_OUT_OF_RANGE → ask the leader's
   log end/start (ListOffsets) and truncate or restart there; a log that does not
   continue (UnexpectedAppendOffset) → TRUNCATING again; leadership errors → back off
   that partition until the next LeaderAndIsr.
A response is applied only if the partition is still followed at the same leader epoch
(LeaderAndIsr may have changed it while the request was out).
Reassignment throttle (`praha.broker.quotas.replication_quota`): a partition the throttle covers that has not
caught up with the leader's high watermark is left out of step 3 while the broker's
follower budget is spent, and its fetched bytes are charged to that budget; when every
partition is held back the task sleeps until the budget recovers (≤ 1 s at a time).
Logging: one line per connection problem and per truncation, never per fetch.

The bytes stay bytes: the fetch response is read from the socket into one reusable
buffer and parsed by hand (`praha.protocol.fetch.parse_fetch_response_v12`), so records reach the log as
views of that buffer. `encode_fetch_response` there is the matching encoder the leader uses to
answer fetches (both byte-identical to kafka-python's codec, unit-tested).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from praha.common import BrokerInfo, EndPoint, TopicPartition, by_topic, now_ms
from praha.errors import ErrorCode, PrahaError
from praha.log.errors import CorruptBatchError, LogStorageError, UnexpectedAppendOffsetError
from praha.log.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from praha.protocol.async_client import AsyncConnection
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.protocol.fetch import FollowerFetch, encode_fetch_request_v12, parse_fetch_response_v12
from praha.protocol.messages.gen.produce_fetch import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)

if TYPE_CHECKING:
    from praha.broker.quotas.replication_quota import ReplicationQuota
    from praha.broker.replication.partition import Partition
    from praha.log import Log

log = logging.getLogger(__name__)

FETCH_VERSION = 12
OFFSET_FOR_LEADER_EPOCH_VERSION = 3
LIST_OFFSETS_VERSION = 2
_OT = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
_OP = OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition
_LT = ListOffsetsRequest.ListOffsetsTopic
_LP = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition


# ------------------------------------------------------------------------- pure truncation rule
@dataclass(frozen=True, slots=True)
class Truncation:
    offset: int
    complete: bool


def truncation_offset(leader_epoch: int, leader_end_offset: int, log_end: int, high_watermark: int,
                      local_end_for: Callable[[int], tuple[int, int]]) -> Truncation:
    """Where a follower truncates given the leader's OffsetsForLeaderEpoch answer
    (leader_epoch, leader_end_offset) for our latest epoch (KIP-101/279).

    `local_end_for(epoch)` is our own (epoch, end offset) for the largest epoch ≤ epoch."""
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        return Truncation(min(high_watermark, log_end), True)
    if leader_epoch == UNDEFINED_EPOCH:
        return Truncation(min(leader_end_offset, log_end), True)
    our_epoch, our_end = local_end_for(leader_epoch)
    if our_epoch == UNDEFINED_EPOCH or our_end == UNDEFINED_EPOCH_OFFSET:
        return Truncation(min(leader_end_offset, log_end), True)
    if our_epoch != leader_epoch:
        # we lack the epoch the leader named: cut to the end of our last earlier epoch, ask again
        return Truncation(min(our_end, log_end), False)
    return Truncation(min(our_end, leader_end_offset, log_end), True)


def truncate_follower(log_: Log, offset: int) -> bool:
    """Truncate a follower's log to `offset`, also when that is its log end (the log then
    drops an epoch that starts there and holds no record, so the next OffsetsForLeaderEpoch
    asks about an older one: seed 216's follower asked about such an epoch for ever).
    Returns whether records went."""
    before = log_.log_end_offset
    log_.truncate_to(offset)
    return log_.log_end_offset < before


# ------------------------------------------------------------------------- fetcher
class FetchState(Enum):
    TRUNCATING = "truncating"
    FETCHING = "fetching"


@dataclass(slots=True)
class FollowedPartition:
    tp: TopicPartition
    leader_epoch: int
    state: FetchState = FetchState.TRUNCATING
    delayed_until_ms: int = 0
    #: our log end reached the leader's high watermark at the last fetch (never throttled then)
    in_sync: bool = False


@dataclass(frozen=True, slots=True)
class FetcherSettings:
    broker_id: int
    fetch_max_bytes: int
    response_max_bytes: int
    wait_max_ms: int
    backoff_ms: int
    socket_timeout_ms: int
    #: how to reach leaders: the inter-broker listener's TLS and SASL
    security: ClientSecurity = PLAINTEXT


@dataclass
class FetcherStats:
    fetches: int = 0
    bytes: int = 0
    truncations: int = 0
    errors: int = 0
    throttled_rounds: int = 0


class ReplicaFetcher:
    """Every partition this broker follows from one source broker."""

    def __init__(self, source: BrokerInfo, settings: FetcherSettings,
                 partition_of: Callable[[TopicPartition, int], Partition | None],
                 on_appended: Callable[[Partition], None], stats: FetcherStats,
                 quota: ReplicationQuota | None = None,
                 is_throttled: Callable[[TopicPartition], bool] = lambda tp: False):
        self.source = source
        self.settings = settings
        self.partition_of = partition_of
        self.on_appended = on_appended
        self.stats = stats
        self.quota = quota
        self.is_throttled = is_throttled
        self.partitions: dict[TopicPartition, FollowedPartition] = {}
        self.conn = self._new_connection()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        self._stopped = False

    def _endpoint(self, source: BrokerInfo) -> EndPoint:
        """Where to fetch from: the leader's inter-broker endpoint (LeaderAndIsr names only
        that one; UpdateMetadata names them all)."""
        return source.endpoint(self.settings.security.listener) or source.endpoints[0]

    def _new_connection(self) -> AsyncConnection:
        s = self.settings
        timeout = max(s.socket_timeout_ms, s.wait_max_ms + 5000) / 1000.0
        ep = self._endpoint(self.source)
        return AsyncConnection(ep.host, ep.port, f"replica-fetcher-{s.broker_id}", timeout, security=s.security)

    # -- membership ------------------------------------------------------------------------
    def add(self, tp: TopicPartition, leader_epoch: int) -> None:
        self.partitions[tp] = FollowedPartition(tp, leader_epoch)
        self._wake.set()

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)

    def update_source(self, source: BrokerInfo) -> None:
        new, old = self._endpoint(source), self._endpoint(self.source)
        if (new.host, new.port) != (old.host, old.port):
            self.source = source
            self.conn.close()
            self.conn = self._new_connection()
        self.source = source

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"fetcher-{self.source.id}")

    async def stop(self) -> None:
        """Stop the task. The flag ends the loop even if a cancellation is swallowed
        (Python 3.11's `wait_for` can lose one when its inner future finishes at the same
        moment), so cancellation is repeated until the task is really done."""
        self._stopped = True
        self._wake.set()
        task, self._task = self._task, None
        for _ in range(20):
            if task is None or task.done():
                break
            task.cancel()
            await asyncio.wait({task}, timeout=0.25)
        if task is not None and task.done() and not task.cancelled() and task.exception() is not None:
            log.debug("fetcher for broker %d ended with %r", self.source.id, task.exception())
        self.conn.close()

    # -- the loop ----------------------------------------------------------------------------
    async def _run(self) -> None:
        backoff = self.settings.backoff_ms / 1000.0
        while not self._stopped:
            try:
                did = await self._round()
            except asyncio.CancelledError:
                raise
            except (TimeoutError, OSError, asyncio.IncompleteReadError, PrahaError) as e:
                self.stats.errors += 1
                if not self._failing:
                    ep = self._endpoint(self.source)
                    log.warning("fetcher for broker %d (%s:%d): %s; retrying every %d ms",
                                self.source.id, ep.host, ep.port, str(e) or type(e).__name__,
                                self.settings.backoff_ms)
                self._failing = True
                self.conn.close()
                await asyncio.sleep(backoff)
                continue
            except Exception:  # noqa: BLE001 - a bug must not kill replication silently
                log.exception("fetcher for broker %d failed; retrying", self.source.id)
                self.conn.close()
                await asyncio.sleep(backoff)
                continue
            if self._failing:
                log.info("fetcher for broker %d reconnected", self.source.id)
                self._failing = False
            if not did:
                await self._idle()

    async def _idle(self) -> None:
        """Nothing to send: wait for a new partition or the end of the nearest back-off."""
        now = now_ms()
        delays = [p.delayed_until_ms - now for p in self.partitions.values() if p.delayed_until_ms > now]
        timeout = min(delays) / 1000.0 if delays else self.settings.backoff_ms / 1000.0
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            pass

    async def _round(self) -> bool:
        now = now_ms()
        ready = [p for p in self.partitions.values() if p.delayed_until_ms <= now]
        truncating = [p for p in ready if p.state is FetchState.TRUNCATING]
        if truncating:
            await self._truncate(truncating)
        fetching = [p for p in self.partitions.values()
                    if p.state is FetchState.FETCHING and p.delayed_until_ms <= now]
        if not fetching:
            return bool(truncating)
        await self._fetch(fetching)
        return True

    def _current(self, fp: FollowedPartition) -> Partition | None:
        """The partition if we still follow it from here at the same epoch."""
        if self.partitions.get(fp.tp) is not fp:
            return None
        return self.partition_of(fp.tp, fp.leader_epoch)

    def _delay(self, fp: FollowedPartition) -> None:
        fp.delayed_until_ms = now_ms() + self.settings.backoff_ms

    # -- truncation ---------------------------------------------------------------------------
    async def _truncate(self, fps: list[FollowedPartition]) -> None:
        asks: dict[TopicPartition, tuple[FollowedPartition, int]] = {}
        for fp in fps:
            p = self._current(fp)
            if p is None:
                continue
            epoch = p.log.latest_epoch
            if epoch == UNDEFINED_EPOCH:
                self._truncate_to(p, p.high_watermark, "no leader epoch known")
                fp.state = FetchState.FETCHING
            else:
                asks[fp.tp] = (fp, epoch)
        if not asks:
            return
        topics = by_topic((tp.topic,
                           _OP(partition=tp.partition, current_leader_epoch=fp.leader_epoch, leader_epoch=epoch))
                          for tp, (fp, epoch) in asks.items())
        req = OffsetForLeaderEpochRequest(
            replica_id=self.settings.broker_id,
            topics=[_OT(topic=t, partitions=ps) for t, ps in topics.items()])
        resp = await self.conn.send(req, OFFSET_FOR_LEADER_EPOCH_VERSION, OffsetForLeaderEpochResponse)
        unanswered = set(asks)
        for t in resp.topics:
            for r in t.partitions:
                tp = TopicPartition(t.topic, r.partition)
                got = asks.get(tp)
                if got is None:
                    continue
                unanswered.discard(tp)
                fp = got[0]
                p = self._current(fp)
                if p is None:
                    continue
                if r.error_code != ErrorCode.NONE:
                    self._delay(fp)
                    continue
                log_ = p.log
                tr = truncation_offset(r.leader_epoch, r.end_offset, log_.log_end_offset, p.high_watermark,
                                       log_.end_offset_for_epoch)
                self._truncate_to(p, tr.offset,
                                  f"leader {self.source.id} has epoch {r.leader_epoch} up to {r.end_offset}")
                if tr.complete:
                    fp.state = FetchState.FETCHING
        for tp in unanswered:  # a leader that skips a partition must not make us spin
            self._delay(asks[tp][0])

    def _truncate_to(self, p: Partition, offset: int, why: str) -> None:
        before = p.log.log_end_offset
        if truncate_follower(p.log, offset):
            self.stats.truncations += 1
            log.info("%s: truncated from %d to %d as follower of %d (%s)", p.tp, before, p.log.log_end_offset,
                     self.source.id, why)
        p.after_truncation()

    # -- fetching -------------------------------------------------------------------------------
    def _throttled(self, fp: FollowedPartition) -> bool:
        return self.quota is not None and not fp.in_sync and self.is_throttled(fp.tp)

    async def _fetch(self, fps: list[FollowedPartition]) -> None:
        s = self.settings
        asked: list[tuple[str, FollowerFetch]] = []
        sent: dict[TopicPartition, tuple[FollowedPartition, int]] = {}
        hold_back = self.quota is not None and self.quota.exceeded()
        held = 0
        for fp in fps:
            p = self._current(fp)
            if p is None:
                continue
            if hold_back and self._throttled(fp):
                held += 1
                continue
            offset = p.log.log_end_offset
            sent[fp.tp] = (fp, offset)
            asked.append((fp.tp.topic, FollowerFetch(
                fp.tp.partition, fp.leader_epoch, offset, p.log.log_start_offset, s.fetch_max_bytes)))
        if not sent:
            if held and self.quota is not None:
                self.stats.throttled_rounds += 1
                await asyncio.sleep(min(self.quota.seconds_until_available(), 1.0))
            return
        topics = list(by_topic(asked).items())
        client_id = self.conn.client_id
        body = await self.conn.send(None, FETCH_VERSION, raw=True, frame_for=lambda cid: encode_fetch_request_v12(
            cid, client_id, s.broker_id, s.wait_max_ms, 1, s.response_max_bytes, topics))
        error_code, results = parse_fetch_response_v12(body)
        self.stats.fetches += 1
        if error_code != ErrorCode.NONE:
            raise PrahaError(f"fetch failed with error {error_code}")
        out_of_range: list[tuple[FollowedPartition, int]] = []
        unanswered = set(sent)
        for topic, r in results:
            tp = TopicPartition(topic, r.partition)
            got = sent.get(tp)
            if got is None:
                continue
            unanswered.discard(tp)
            fp, offset = got
            p = self._current(fp)
            if p is None or p.log.log_end_offset != offset:
                continue
            code = r.error_code
            if code == ErrorCode.NONE:
                self._apply(fp, p, r)
            elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                out_of_range.append((fp, offset))
            else:
                self._delay(fp)
        for tp in unanswered:
            self._delay(sent[tp][0])
        if out_of_range:
            await self._handle_out_of_range(out_of_range)

    def _apply(self, fp: FollowedPartition, p: Partition, r: Any) -> None:
        records = r.records
        throttled = self._throttled(fp)
        if records:
            try:
                info = p.log.append_as_follower(records)
            except UnexpectedAppendOffsetError as e:
                log.warning("%s: %s; truncating again", p.tp, e)
                fp.state = FetchState.TRUNCATING
                return
            except (CorruptBatchError, LogStorageError) as e:
                self.stats.errors += 1
                log.warning("%s: cannot append data from leader %d: %s", p.tp, self.source.id, e)
                self._delay(fp)
                return
            if info.size_bytes:
                self.stats.bytes += info.size_bytes
                if throttled:
                    assert self.quota is not None
                    self.quota.record(info.size_bytes)
        fp.in_sync = p.log.log_end_offset >= r.high_watermark
        p.update_follower_high_watermark(r.high_watermark)
        if r.log_start_offset > p.log.log_start_offset:
            p.log.increment_log_start_offset(min(r.log_start_offset, p.high_watermark))
        self.on_appended(p)

    async def _handle_out_of_range(self, items: list[tuple[FollowedPartition, int]]) -> None:
        """Our log end is outside the leader's log: follow its end or its start."""
        ends = await self._list_offsets([fp.tp for fp, _ in items], -1)
        starts = await self._list_offsets([fp.tp for fp, _ in items], -2)
        for fp, offset in items:
            p = self._current(fp)
            if p is None or fp.tp not in ends or fp.tp not in starts:
                self._delay(fp)
                continue
            leader_end, leader_start = ends[fp.tp], starts[fp.tp]
            if leader_end < offset:
                self._truncate_to(p, leader_end, f"leader {self.source.id} ends at {leader_end}")
            elif offset < leader_start:
                p.log.truncate_fully_and_start_at(leader_start)
                p.after_truncation()
                self.stats.truncations += 1
                log.info("%s: restarted at the leader's log start %d", p.tp, leader_start)
            else:
                self._delay(fp)

    async def _list_offsets(self, tps: list[TopicPartition], timestamp: int) -> dict[TopicPartition, int]:
        topics = by_topic((tp.topic, _LP(partition_index=tp.partition, timestamp=timestamp)) for tp in tps)
        req = ListOffsetsRequest(replica_id=self.settings.broker_id, isolation_level=0,
                                 topics=[_LT(name=t, partitions=ps) for t, ps in topics.items()])
        resp = await self.conn.send(req, LIST_OFFSETS_VERSION, ListOffsetsResponse)
        out = {}
        for t in resp.topics:
            for r in t.partitions:
                if r.error_code == ErrorCode.NONE:
                    out[TopicPartition(t.name, r.partition_index)] = r.offset
        return out


class ReplicaFetcherManager:
    """Fetchers by source broker; created on first partition, stopped when empty."""

    def __init__(self, settings: FetcherSettings, partition_of: Callable[[TopicPartition, int], Partition | None],
                 on_appended: Callable[[Partition], None], quota: ReplicationQuota | None = None,
                 is_throttled: Callable[[TopicPartition], bool] = lambda tp: False):
        self.settings = settings
        self.partition_of = partition_of
        self.on_appended = on_appended
        self.quota = quota
        self.is_throttled = is_throttled
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.stats = FetcherStats()

    def add(self, tp: TopicPartition, leader: BrokerInfo, leader_epoch: int) -> None:
        self.remove(tp)
        f = self.fetchers.get(leader.id)
        if f is None:
            f = self.fetchers[leader.id] = ReplicaFetcher(leader, self.settings, self.partition_of,
                                                          self.on_appended, self.stats, self.quota,
                                                          self.is_throttled)
            f.start()
        else:
            f.update_source(leader)
        f.add(tp, leader_epoch)

    def remove(self, tp: TopicPartition) -> None:
        for f in list(self.fetchers.values()):
            if tp in f.partitions:
                f.remove(tp)

    def remove_all(self) -> int:
        """Stop fetching every partition (the fetchers stop at the next `shutdown_idle`);
        returns how many there were."""
        n = self.partition_count()
        for f in self.fetchers.values():
            f.partitions.clear()
        return n

    def shutdown_idle(self) -> None:
        """Stop fetchers left without partitions."""
        for bid, f in list(self.fetchers.items()):
            if not f.partitions:
                del self.fetchers[bid]
                asyncio.get_running_loop().create_task(f.stop())

    def update_sources(self, brokers: dict[int, BrokerInfo]) -> None:
        for bid, f in self.fetchers.items():
            b = brokers.get(bid)
            if b is not None:
                f.update_source(b)

    def partition_count(self) -> int:
        return sum(len(f.partitions) for f in list(self.fetchers.values()))

    async def shutdown(self) -> None:
        fetchers = list(self.fetchers.values())
        self.fetchers.clear()
        for f in fetchers:
            await f.stop()
