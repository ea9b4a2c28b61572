"""The coordinators' logs: this broker's `__consumer_offsets` and `__transaction_state`
partitions.

An append is an ordinary leader append followed by an acks=all wait, exactly the path of a
Produce with acks=-1 (`offsets.commit.required.acks` is -1 in Kafka 3.x, and the
transaction log is always written with acks=-1): the coordinator acknowledges a change
only once every in-sync replica has it, so a coordinator failover never loses one. A
transactional offset commit (TxnOffsetCommit) is appended as a transactional batch of its
producer, numbered after that producer's last batch in the partition, as Kafka's
coordinator appends it; the markers that end the transaction are written by the
partition's leader (WriteTxnMarkers). Reads (loading after a leadership change) go batch
by batch from the log start to the log end as it was when loading began, and say which
records came in a transaction and where its markers are.
"""
from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from praha.broker.replication.delayed import ProduceWait
from praha.common import TopicPartition
from praha.coordinator.group.storage import LogRecord
from praha.errors import ErrorCode, PrahaError
from praha.log.batch import CONTROL_MASK, TRANSACTIONAL_MASK
from praha.log.records import complete_batches, encode_records

if TYPE_CHECKING:
    from praha.broker.replication.replica_manager import ReplicaManager
    from praha.log.log import Log

READ_CHUNK_BYTES = 1 << 20
#: a control record's key: version int16, type int16 (0 = ABORT, 1 = COMMIT)
_CONTROL_KEY = struct.Struct(">hh")


def build_batch(records: list[tuple[bytes, bytes | None]], now_ms: int, producer_id: int = -1, epoch: int = -1,
                base_sequence: int = -1) -> bytes:
    """One uncompressed v2 batch of these key/value records (base offset 0; the log sets
    it); transactional when a producer is given."""
    return encode_records(0, [(key, value, now_ms) for key, value in records], producer_id=producer_id,
                          producer_epoch=epoch, base_sequence=base_sequence,
                          attributes=TRANSACTIONAL_MASK if producer_id >= 0 else 0)


class CoordinatorLog:
    def __init__(self, replica_manager: ReplicaManager, topic: str, commit_timeout_ms: int):
        self.rm = replica_manager
        self.topic = topic
        self.commit_timeout_ms = commit_timeout_ms

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]],
                     producer: tuple[int, int] | None = None) -> ErrorCode:
        tp = TopicPartition(self.topic, partition)
        p = self.rm.partitions.get(tp)
        if p is None or not p.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if len(p.isr) < p.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        now = int(time.time() * 1000)
        try:
            if producer is None:
                batch = build_batch(records, now)
            else:
                pid, epoch = producer
                batch = build_batch(records, now, pid, epoch, self._next_sequence(p.log, pid, epoch))
            info = p.log.append_as_leader(batch, p.leader_epoch)
        except PrahaError as e:
            return e.code
        self.rm.after_leader_append(p)
        outcome = await self.rm.park_produce({tp: ProduceWait(info.last_offset + 1)}, self.commit_timeout_ms)
        w = outcome[tp]
        return ErrorCode(w.error) if w.error is not None else ErrorCode.REQUEST_TIMED_OUT

    @staticmethod
    def _next_sequence(lg: Log, producer_id: int, epoch: int) -> int:
        """The sequence after the producer's last batch here (0 for a new producer or epoch):
        read and used with no await between, so appends on the loop cannot interleave."""
        for entry in lg.active_producers():
            if entry.producer_id == producer_id and entry.epoch == epoch and entry.last_sequence >= 0:
                return int(entry.last_sequence) + 1 if entry.last_sequence < 2**31 - 1 else 0
        return 0

    def read(self, partition: int) -> Iterator[LogRecord]:
        tp = TopicPartition(self.topic, partition)
        p = self.rm.partitions.get(tp)
        if p is None:
            return
        lg = p.log
        offset, end = lg.log_start_offset, lg.log_end_offset
        while offset < end:
            chunk = lg.read(offset, READ_CHUNK_BYTES, max_offset=end)
            if chunk.next_offset <= offset or not chunk.data:
                return
            for batch, records in complete_batches(chunk.data):
                pid = batch.producer_id if batch.is_transactional else -1
                control = bool(batch.attributes & CONTROL_MASK)
                for rec in records:
                    if rec.offset < offset:
                        continue
                    if control:
                        if rec.key is not None and len(rec.key) >= 4:
                            yield LogRecord(None, None, pid, commit=_CONTROL_KEY.unpack_from(rec.key)[1] == 1)
                    else:
                        yield LogRecord(rec.key, rec.value, pid)
            offset = chunk.next_offset
