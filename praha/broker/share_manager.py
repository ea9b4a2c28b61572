"""The share partitions a broker leads (Kafka's SharePartitionManager): reads the log for them,
hands the offsets it read to the pure `SharePartition`, and forgets them when it stops leading.

One share partition per (group, topic partition), created on the first ShareFetch for it: its
start offset from `share.auto.offset.reset` (latest or earliest) when the group has no state
there yet. A share partition belongs to the leader epoch it was created in; a new epoch on
this broker (it lost and won the leadership back) starts it afresh.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from praha.broker.replica_manager import ReplicaManager
from praha.broker.share_partition import (
    AckBatch,
    AcquiredRange,
    InvalidRecordState,
    LogRecord,
    SharePartition,
    SharePartitionSettings,
    committed_offsets,
    initial_start_offset,
)
from praha.common import TopicPartition
from praha.errors import ErrorCode, PrahaError
from praha.log.batch import CONTROL_MASK, TRANSACTIONAL_MASK, iter_batches
from praha.log.errors import OffsetOutOfRangeError

log = logging.getLogger(__name__)


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


class SharePartitionManager:
    def __init__(self, rm: ReplicaManager, config: ShareConfig) -> None:
        self.rm = rm
        self.config = config
        self.held: dict[tuple[str, TopicPartition], _Held] = {}

    def _leading(self, tp: TopicPartition) -> tuple[object | None, ErrorCode]:
        p = self.rm.partitions.get(tp)
        if p is None:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if not p.is_leader:
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return p, ErrorCode.NONE

    def share_partition(self, group_id: str, tp: TopicPartition) -> tuple[SharePartition | None, ErrorCode]:
        p, code = self._leading(tp)
        if p is None:
            self.held.pop((group_id, tp), None)
            return None, code
        epoch = p.leader_epoch  # type: ignore[attr-defined]
        h = self.held.get((group_id, tp))
        if h is None or h.leader_epoch != epoch:
            lg = p.log  # type: ignore[attr-defined]
            start = initial_start_offset(self.config.auto_offset_reset, lg.log_start_offset,
                                         p.high_watermark)  # type: ignore[attr-defined]
            h = self.held[(group_id, tp)] = _Held(SharePartition(self.config.partition, start), epoch)
            log.info("share partition %s %s: started at offset %d (leader epoch %d)", group_id, tp, start, epoch)
        return h.partition, ErrorCode.NONE

    def acquire(self, group_id: str, member_id: str, tp: TopicPartition, max_bytes: int, max_records: int,
                now_ms: int) -> Acquired:
        sp, code = self.share_partition(group_id, tp)
        if sp is None:
            return Acquired(code)
        sp.expire_locks(now_ms)
        p = self.rm.partitions[tp]
        lg = p.log
        upper = lg.last_stable_offset(p.high_watermark) if self.config.read_committed else p.high_watermark
        if sp.start_offset < lg.log_start_offset:
            sp.move_start(lg.log_start_offset)
        if sp.window_full() and sp.fetch_offset() >= sp.end_offset:
            return Acquired(ErrorCode.NONE)
        offset = sp.fetch_offset()
        try:
            sl = lg.read_slice(offset, max(max_bytes, 1), upper, min_one_batch=True)
            data = sl.read()
        except OffsetOutOfRangeError:
            return Acquired(ErrorCode.OFFSET_OUT_OF_RANGE)
        except PrahaError as e:
            return Acquired(e.code)
        if not data:
            return Acquired(ErrorCode.NONE)
        records = []
        for h in iter_batches(data):
            control = bool(h.attributes & CONTROL_MASK)
            txn = bool(h.attributes & TRANSACTIONAL_MASK)
            records += [LogRecord(o, h.producer_id, txn, control) for o in range(h.base_offset, h.last_offset + 1)]
        if self.config.read_committed:
            aborted = [(t.producer_id, t.first_offset) for t in lg.collect_aborted_transactions(offset, sl.next_offset)]
            deliverable = committed_offsets(records, aborted)
        else:
            deliverable = [r.offset for r in records if not r.control]
        ranges = sp.acquire(member_id, deliverable, sl.next_offset, now_ms, max_records)
        return Acquired(ErrorCode.NONE, data if ranges else b"", tuple(ranges))

    def acknowledge(self, group_id: str, member_id: str, tp: TopicPartition,
                    batches: list[AckBatch], now_ms: int) -> tuple[ErrorCode, str | None]:
        sp, code = self.share_partition(group_id, tp)
        if sp is None:
            return code, None
        sp.expire_locks(now_ms)
        try:
            sp.acknowledge(member_id, batches)
        except InvalidRecordState as e:
            return ErrorCode.INVALID_RECORD_STATE, str(e)
        return ErrorCode.NONE, None

    def release(self, group_id: str, member_id: str, tps: set[TopicPartition]) -> int:
        n = 0
        for tp in tps:
            h = self.held.get((group_id, tp))
            if h is not None:
                n += h.partition.release_member(member_id)
        if n:
            log.info("share group %s: member %s released %d records", group_id, member_id, n)
        return n

    def expire(self, now_ms: int) -> int:
        """Locks run out; share partitions this broker no longer leads are dropped."""
        n = 0
        for key, h in list(self.held.items()):
            p = self.rm.partitions.get(key[1])
            if p is None or not p.is_leader or p.leader_epoch != h.leader_epoch:
                del self.held[key]
                continue
            n += h.partition.expire_locks(now_ms)
        return n

    def of_group(self, group_id: str) -> dict[TopicPartition, SharePartition]:
        return {tp: h.partition for (g, tp), h in self.held.items() if g == group_id}
