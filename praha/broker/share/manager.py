"""The share partitions a broker leads (Kafka's SharePartitionManager): reads the log for them,
hands the offsets it read to the pure `SharePartition`, keeps their state durable
(`share_state`), and forgets them when it stops leading.

One share partition per (group, topic partition), loaded on the first ShareFetch for it: from
its durable state when the group has one there, else at the offset `share.auto.offset.reset`
names (latest or earliest). A share partition belongs to the leader epoch it was loaded in; a
new epoch on this broker loads it again. Acknowledgements are answered only once the state
they produced is written, so nothing acknowledged is delivered again after a failover; what
was acquired but not acknowledged is stored as available (archived if that was its last
delivery), so nothing is lost either.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from praha.broker.replication.replica_manager import ReplicaManager
from praha.broker.share.partition import (
    AckBatch,
    AcquiredRange,
    InvalidRecordState,
    LogRecord,
    RecordState,
    SharePartition,
    SharePartitionSettings,
    StateBatch,
    committed_offsets,
    covering,
    initial_start_offset,
)
from praha.common import TopicPartition
from praha.coordinator.group.share.service import ShareGroupService
from praha.errors import ErrorCode, PrahaError
from praha.log.batch import CONTROL_MASK, TRANSACTIONAL_MASK, iter_batches
from praha.log.errors import OffsetOutOfRangeError
from praha.zk.share_state import FencedStateEpoch, ShareSnapshot, ShareStateStore

log = logging.getLogger(__name__)


#: the most one share partition reads from its log for one ShareFetch (whole batches, at least
#: one): what is acquired comes from the front of the read, so reading megabytes for a member
#: that takes `max_records` at a time only costs CPU (Kafka's max.partition.fetch.bytes default)
READ_CAP_BYTES = 1 << 20


@dataclass(frozen=True)
class ShareConfig:
    partition: SharePartitionSettings
    auto_offset_reset: str = "latest"
    read_committed: bool = False


@dataclass(frozen=True)
class Acquired:
    error: ErrorCode
    records: bytes = b""
    ranges: tuple[AcquiredRange, ...] = ()
    message: str | None = None


@dataclass
class _Held:
    partition: SharePartition
    leader_epoch: int
    #: the durable state's znode version as last read or written (-1: none yet)
    version: int = -1
    written: tuple[int, tuple[object, ...]] | None = None
    #: one write at a time (each is conditional on the version the previous one produced)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: the write sent and not answered yet: a check queued behind it is judged by its outcome
    writing: asyncio.Future[int] | None = None


class SharePartitionManager:
    def __init__(self, rm: ReplicaManager, config: ShareConfig) -> None:
        self.rm = rm
        self.config = config
        self.held: dict[tuple[str, TopicPartition], _Held] = {}
        #: the durable state (None: kept in memory only, as in handler tests without ZooKeeper)
        self.store: ShareStateStore | None = None
        self._loading: dict[tuple[str, TopicPartition], asyncio.Future[None]] = {}
        #: group id -> its config with its GROUP config overrides (share.record.lock.duration.ms, ...)
        self.overrides: dict[str, ShareConfig] = {}

    def config_for(self, group_id: str) -> ShareConfig:
        return self.overrides.get(group_id, self.config)

    def set_group_config(self, group_id: str, values: Mapping[str, str]) -> None:
        """A GROUP config (checked when written): new acquisitions of the group's loaded share
        partitions lock for the new duration; the offset reset applies to partitions loaded later."""
        base = self.config
        c = ShareConfig(
            dataclasses.replace(base.partition, lock_duration_ms=int(values.get(
                "share.record.lock.duration.ms", base.partition.lock_duration_ms))),
            str(values.get("share.auto.offset.reset", base.auto_offset_reset)).lower(),
            str(values.get("share.isolation.level", "read_committed" if base.read_committed else
                           "read_uncommitted")).lower() == "read_committed")
        if c == base:
            self.overrides.pop(group_id, None)
        else:
            self.overrides[group_id] = c
        for (g, _), h in self.held.items():
            if g == group_id:
                h.partition.settings = c.partition
        log.info("share group %s: lock duration %d ms, auto offset reset %s, read_committed %s", group_id,
                 c.partition.lock_duration_ms, c.auto_offset_reset, c.read_committed)

    def _leading(self, tp: TopicPartition) -> tuple[object | None, ErrorCode]:
        p = self.rm.partitions.get(tp)
        if p is None:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if not p.is_leader:
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return p, ErrorCode.NONE

    async def share_partition(self, group_id: str, tp: TopicPartition) -> tuple[SharePartition | None, ErrorCode]:
        """The share partition, loaded (from its durable state, once) if this broker leads `tp`."""
        key = (group_id, tp)
        while True:
            p, code = self._leading(tp)
            if p is None:
                self.held.pop(key, None)
                return None, code
            epoch = p.leader_epoch  # type: ignore[attr-defined]
            h = self.held.get(key)
            if h is not None and h.leader_epoch == epoch:
                return h.partition, ErrorCode.NONE
            pending = self._loading.get(key)
            if pending is not None:
                await asyncio.shield(pending)
                continue
            fut = self._loading[key] = asyncio.get_running_loop().create_future()
            try:
                return await self._load(group_id, tp, p, epoch)
            finally:
                del self._loading[key]
                fut.set_result(None)

    async def _load(self, group_id: str, tp: TopicPartition, p: object, epoch: int
                    ) -> tuple[SharePartition | None, ErrorCode]:
        snap: ShareSnapshot | None = None
        version = -1
        if self.store is not None:
            store = self.store
            try:
                snap, version = await asyncio.get_running_loop().run_in_executor(None, store.read, group_id, tp)
            except Exception as e:  # noqa: BLE001 - ZooKeeper unreachable: the client retries
                log.warning("share partition %s %s: state not read (%s)", group_id, tp, e)
                return None, ErrorCode.COORDINATOR_NOT_AVAILABLE
        lg = p.log  # type: ignore[attr-defined]
        config = self.config_for(group_id)
        if snap is not None:
            sp = SharePartition.restore(config.partition, max(snap.start_offset, lg.log_start_offset),
                                        [StateBatch(a, b, RecordState(st), dc) for a, b, st, dc in snap.batches])
            how = f"its durable state (written in leader epoch {snap.leader_epoch})"
        else:
            start = initial_start_offset(config.auto_offset_reset, lg.log_start_offset,
                                         p.high_watermark)  # type: ignore[attr-defined]
            sp = SharePartition(config.partition, start)
            how = f"share.auto.offset.reset={config.auto_offset_reset}"
        self.held[(group_id, tp)] = _Held(sp, epoch, version)
        log.info("share partition %s %s: loaded at offset %d, %d in flight, from %s (leader epoch %d)",
                 group_id, tp, sp.start_offset, sp.in_flight_count(), how, epoch)
        return sp, ErrorCode.NONE

    async def persist(self, group_id: str, tp: TopicPartition) -> ErrorCode:
        """Write the share partition's state if it changed since the last write (fenced by version)."""
        h = self.held.get((group_id, tp))
        if h is None or self.store is None:
            return ErrorCode.NONE
        store = self.store
        async with h.lock:
            if self.held.get((group_id, tp)) is not h:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            sp = h.partition
            batches = tuple((b.first_offset, b.last_offset, int(b.state), b.delivery_count) for b in sp.state_batches())
            if h.written == (sp.start_offset, batches):
                return ErrorCode.NONE
            snap = ShareSnapshot(sp.start_offset, batches, h.leader_epoch)
            try:
                if h.version < 0:  # the first write creates the znode and its parents (rare)
                    h.version = await asyncio.get_running_loop().run_in_executor(
                        None, store.write, group_id, tp, snap, h.version)
                else:
                    h.writing = store.write_async(group_id, tp, snap, h.version)
                    try:
                        h.version = await asyncio.shield(h.writing)
                    finally:
                        h.writing = None
            except FencedStateEpoch as e:
                log.warning("share partition %s %s: %s; unloaded", group_id, tp, e)
                self.held.pop((group_id, tp), None)
                return ErrorCode.FENCED_STATE_EPOCH
            except Exception as e:  # noqa: BLE001 - ZooKeeper unreachable: not acknowledged
                log.warning("share partition %s %s: state not written (%s)", group_id, tp, e)
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            h.written = (snap.start_offset, batches)
        return ErrorCode.NONE

    async def acquire(self, group_id: str, member_id: str, tp: TopicPartition, max_bytes: int, max_records: int,
                      now_ms: int) -> Acquired:
        sp, code = await self.share_partition(group_id, tp)
        if sp is None:
            return Acquired(code)
        sp.expire_locks(now_ms)
        p = self.rm.partitions[tp]
        lg = p.log
        read_committed = self.config_for(group_id).read_committed
        upper = lg.last_stable_offset(p.high_watermark) if read_committed else p.high_watermark
        if sp.start_offset < lg.log_start_offset:
            sp.move_start(lg.log_start_offset)
        if sp.window_full() and sp.fetch_offset() >= sp.end_offset:
            return Acquired(ErrorCode.NONE)
        offset = sp.fetch_offset()
        try:
            sl = lg.read_slice(offset, max(min(max_bytes, READ_CAP_BYTES), 1), upper, min_one_batch=True)
            data = sl.read()
        except OffsetOutOfRangeError:
            return Acquired(ErrorCode.OFFSET_OUT_OF_RANGE)
        except PrahaError as e:
            return Acquired(e.code)
        if not data:
            return Acquired(ErrorCode.NONE)
        records: list[LogRecord] = []
        headers = []
        read_end, found = sl.next_offset, 0
        for h in iter_batches(data):
            headers.append(h)
            control = bool(h.attributes & CONTROL_MASK)
            txn = bool(h.attributes & TRANSACTIONAL_MASK)
            records += [LogRecord(o, h.producer_id, txn, control) for o in range(h.base_offset, h.last_offset + 1)]
            if max_records > 0 and not control:
                found += sp.acquirable(h.base_offset, h.last_offset)
                if found >= max_records:  # enough for this member: the rest of the read is not decoded
                    read_end = h.last_offset + 1
                    break
        if read_committed:
            aborted = [(t.producer_id, t.first_offset) for t in lg.collect_aborted_transactions(offset, read_end)]
            deliverable = committed_offsets(records, aborted)
        else:
            deliverable = [r.offset for r in records if not r.control]
        ranges = sp.acquire(member_id, deliverable, read_end, now_ms, max_records)
        if ranges and not await self._current(group_id, tp, sp):
            return Acquired(ErrorCode.NONE)  # nothing handed out; the next look loads the state again
        return Acquired(ErrorCode.NONE, covering(data, headers, ranges), tuple(ranges))

    async def _current(self, group_id: str, tp: TopicPartition, sp: SharePartition) -> bool:
        """Before records go out: is the loaded share partition still the durable state's latest,
        and is this broker still the leader ZooKeeper names?

        Another broker that wrote the state since (a successor leader while this one is cut off
        and does not know yet, or the coordinator resetting offsets) may have acknowledged the very
        records just acquired here (chaos seed 502, `--workload share`, a one_way cut of the leader:
        records accepted at the new leader were handed out again by the old one); a successor that
        has not written yet may be handing the same records to another member (seed 503). Then, or
        when ZooKeeper cannot say, the share partition is dropped and nothing is delivered; the
        next look loads it again (or finds it is not the leader).

        The reads are sent at once, after the acquisition, without waiting for this leader's own
        write in flight (acknowledgements of other members): ZooKeeper answers a session's
        requests in order, so they see that write's outcome, which is what they are compared
        with. Checks of several members' fetches run side by side (they used to queue behind
        each other and behind every write: with 4 members that queue was the share path's limit)."""
        h = self.held.get((group_id, tp))
        if self.store is None or h is None or h.partition is not sp:
            return self.store is None
        if h.version < 0:
            async with h.lock:  # the first write (a create, its parents first) is not ordered with reads
                pass
        writing, expected = h.writing, h.version
        try:
            answers: list[Any] = await asyncio.gather(
                self.store.standing_async(group_id, tp), *([] if writing is None else [asyncio.shield(writing)]),
                return_exceptions=True)
        except Exception as e:  # noqa: BLE001 - the reads not even sent (the client stopping)
            answers = [e]
        failed = next((a for a in answers if isinstance(a, BaseException)), None)
        if isinstance(failed, FencedStateEpoch):
            why = f"our own write fenced ({failed})"
        elif failed is not None:  # ZooKeeper unreachable, or our write's outcome unknown: hand nothing out
            why = f"state version not read ({type(failed).__name__}: {failed})"
        else:
            (version, epoch), expected = answers[0], (answers[1] if writing is not None else expected)
            if version == expected and epoch == h.leader_epoch:
                return True
            why = (f"state rewritten elsewhere (version {version}, expected {expected})" if version != expected
                   else f"leader epoch {epoch} in ZooKeeper, this leader's {h.leader_epoch}")
        if self.held.get((group_id, tp)) is h:
            del self.held[(group_id, tp)]
        log.warning("share partition %s %s: %s; unloaded before delivering", group_id, tp, why)
        return False

    async def acknowledge(self, group_id: str, member_id: str, tp: TopicPartition,
                          batches: list[AckBatch], now_ms: int) -> tuple[ErrorCode, str | None]:
        sp, code = await self.share_partition(group_id, tp)
        if sp is None:
            return code, None
        sp.expire_locks(now_ms)
        try:
            sp.acknowledge(member_id, batches)
        except InvalidRecordState as e:
            return ErrorCode.INVALID_RECORD_STATE, str(e)
        code = await self.persist(group_id, tp)
        return code, None

    async def release(self, group_id: str, member_id: str, tps: set[TopicPartition]) -> int:
        n = 0
        for tp in tps:
            h = self.held.get((group_id, tp))
            if h is not None:
                k = h.partition.release_member(member_id)
                if k:
                    await self.persist(group_id, tp)
                n += k
        if n:
            log.info("share group %s: member %s released %d records", group_id, member_id, n)
        return n

    def expire(self, now_ms: int) -> list[tuple[str, TopicPartition]]:
        """Locks run out (the share partitions whose state changed, to persist); share partitions
        this broker no longer leads are dropped."""
        changed = []
        for key, h in list(self.held.items()):
            p = self.rm.partitions.get(key[1])
            if p is None or not p.is_leader or p.leader_epoch != h.leader_epoch:
                del self.held[key]
                continue
            if h.partition.expire_locks(now_ms):
                changed.append(key)
        return changed

    async def delete_groups(self, group_ids: list[str], groups: ShareGroupService) -> dict[str, ErrorCode]:
        """DeleteGroups for share groups: an empty group (or one only with durable state) loses
        its membership and every share partition's state; one with members is NON_EMPTY_GROUP."""
        out: dict[str, ErrorCode] = {}
        for gid in group_ids:
            code = await groups.delete(gid)
            if code == ErrorCode.GROUP_ID_NOT_FOUND and self.store is not None and groups.check(gid) == ErrorCode.NONE:
                store = self.store
                has_state = bool(await asyncio.get_running_loop().run_in_executor(None, store.of_group, gid))
                code = ErrorCode.NONE if has_state else code
            if code == ErrorCode.NONE:
                for key in [k for k in self.held if k[0] == gid]:
                    del self.held[key]
                if self.store is not None:
                    await asyncio.get_running_loop().run_in_executor(None, self.store.delete_group, gid)
                log.info("share group %s deleted with its share state", gid)
            out[gid] = code
        return out

    def forget(self, group_id: str) -> int:
        """Drop this broker's loaded share partitions of the group (its state was altered or
        deleted): the next ShareFetch loads them again."""
        keys = [k for k in self.held if k[0] == group_id]
        for key in keys:
            del self.held[key]
        return len(keys)

    async def revalidate(self, group_id: str, tps: set[TopicPartition]) -> int:
        """On a share session's opening: drop each loaded share partition whose durable state
        another broker rewrote since (AlterShareGroupOffsets, DeleteShareGroupOffsets or
        DeleteGroups on the coordinator), so the member reads the new state."""
        if self.store is None:
            return 0
        store, n = self.store, 0
        for tp in tps:
            h = self.held.get((group_id, tp))
            if h is None:
                continue
            async with h.lock:
                try:
                    version = await asyncio.get_running_loop().run_in_executor(None, store.version, group_id, tp)
                except Exception as e:  # noqa: BLE001 - ZooKeeper unreachable: keep what is loaded
                    log.warning("share partition %s %s: state version not read (%s)", group_id, tp, e)
                    continue
                if version != h.version and self.held.get((group_id, tp)) is h:
                    del self.held[(group_id, tp)]
                    n += 1
        if n:
            log.info("share group %s: %d share partitions rewritten elsewhere, loaded again", group_id, n)
        return n

    def of_group(self, group_id: str) -> dict[TopicPartition, SharePartition]:
        return {tp: h.partition for (g, tp), h in self.held.items() if g == group_id}

