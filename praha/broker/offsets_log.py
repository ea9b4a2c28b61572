"""The group coordinator's log: this broker's `__consumer_offsets` partitions.

An append is an ordinary leader append followed by an acks=all wait, exactly the path of a
Produce with acks=-1 (`offsets.commit.required.acks` is -1 in Kafka 3.x): the coordinator
acknowledges a commit only once every in-sync replica has it, so a coordinator failover
never loses an acknowledged commit. Reads (loading after a leadership change) go batch
by batch from the log start to the log end as it was when loading began.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from praha.broker.delayed import ProduceWait
from praha.common import TopicPartition
from praha.coordinator.group.records import OFFSETS_TOPIC
from praha.errors import ErrorCode, PrahaError

if TYPE_CHECKING:
    from praha.broker.replica_manager import ReplicaManager

READ_CHUNK_BYTES = 1 << 20


def build_batch(records: list[tuple[bytes, bytes | None]], now_ms: int) -> bytes:
    """One uncompressed v2 batch of these key/value records (base offset 0; the log sets it)."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 30)
    for key, value in records:
        builder.append(now_ms, key, value, [])
    builder.close()
    return bytes(builder.buffer())


class ConsumerOffsetsLog:
    def __init__(self, replica_manager: "ReplicaManager", commit_timeout_ms: int):
        self.rm = replica_manager
        self.commit_timeout_ms = commit_timeout_ms

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> ErrorCode:
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        p = self.rm.partitions.get(tp)
        if p is None or not p.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if len(p.isr) < p.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        try:
            info = p.log.append_as_leader(build_batch(records, int(time.time() * 1000)), p.leader_epoch)
        except PrahaError as e:
            return e.code
        self.rm.after_leader_append(p)
        outcome = await self.rm.park_produce({tp: ProduceWait(info.last_offset + 1)}, self.commit_timeout_ms)
        w = outcome[tp]
        return ErrorCode(w.error) if w.error is not None else ErrorCode.REQUEST_TIMED_OUT

    def read(self, partition: int) -> Iterator[tuple[bytes | None, bytes | None]]:
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        p = self.rm.partitions.get(tp)
        if p is None:
            return
        lg = p.log
        offset, end = lg.log_start_offset, lg.log_end_offset
        while offset < end:
            chunk = lg.read(offset, READ_CHUNK_BYTES, max_offset=end)
            if chunk.next_offset <= offset or not chunk.data:
                return
            records = MemoryRecords(bytes(chunk.data))
            while records.has_next():
                batch = records.next_batch()
                if batch is None:
                    break
                if batch.is_control_batch:
                    continue
                for rec in batch:
                    if rec.offset >= offset:
                        yield rec.key, rec.value
            offset = chunk.next_offset
