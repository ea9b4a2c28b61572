"""Offset and group storage (Kafka's GroupMetadataManager): the groups' cache and the
`__consumer_offsets` records behind it.

It replays a partition's log into groups and offsets, writes group records, offsets
(plain and transactional) and tombstones, and applies a write to the cache only once the
log has it replicated. It decides nothing about membership — who may join, sync or commit
is the coordinator's protocol (`coordinator.py`), which keeps its groups here.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from praha.coordinator.group.consumer.records import Record as ConsumerRecord
from praha.coordinator.group.consumer.records import decode as decode_consumer_record
from praha.coordinator.group.consumer.records import is_consumer_group_key
from praha.coordinator.group.metadata import CommittedOffset, Group, GroupState, Member
from praha.coordinator.group.records import (
    GroupKey,
    GroupValue,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
    group_key,
    group_value,
    offset_key,
    offset_value,
    partition_for,
)
from praha.coordinator.group.share.records import ShareRecord, is_share_group_key
from praha.coordinator.group.share.records import decode as decode_share_record
from praha.errors import ErrorCode, PrahaError

log = logging.getLogger(__name__)

Records = list[tuple[bytes, bytes | None]]
Offsets = dict[tuple[str, int], CommittedOffset]


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record of a coordinator's log, as loading needs it: key and value, the producer
    of the transaction it came in (-1 if none), and for a transaction marker (key and value
    None) whether it commits."""

    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    commit: bool | None = None


class OffsetsLog(Protocol):
    """The coordinator's view of the `__consumer_offsets` partitions this broker leads."""

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]],
                     producer: tuple[int, int] | None = None) -> ErrorCode:
        """Append as leader and wait until replicated (acks=all); the outcome's error code.
        With a producer (id, epoch): as a transactional batch of that producer."""
        ...

    def read(self, partition: int) -> Iterator[LogRecord]:
        """Every record of the partition and every transaction marker, in offset order (blocking)."""
        ...


@dataclass(slots=True)
class CoordinatorStats:
    rebalances: int = 0
    rebalance_time_ms_total: float = 0.0
    offset_commits: int = 0
    offset_commit_time_ms_total: float = 0.0
    partitions_loaded: int = 0
    load_time_ms_total: float = 0.0
    offsets_expired: int = 0
    #: the last load of each partition (ms), for the per-partition figure
    load_time_ms: dict[int, float] = field(default_factory=dict)


def map_append_error(code: ErrorCode) -> ErrorCode:
    """What a client sees when the coordinator's write fails (Kafka's mapping)."""
    if code in (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return code


@dataclass(slots=True)
class Replayed:
    """A partition's log read back: its groups (offsets, pending transactional offsets, the
    last group record), the KIP-848 consumer-group and KIP-932 share-group records in order,
    and how many records."""

    groups: dict[str, Group]
    consumer_records: list[ConsumerRecord]
    records: int
    share_records: list[ShareRecord] = field(default_factory=list)


class GroupMetadataManager:
    def __init__(self, partitions: int, offsets_log: OffsetsLog, offset_metadata_max_bytes: int,
                 stats: CoordinatorStats):
        self.partitions = partitions
        self.log = offsets_log
        self.offset_metadata_max_bytes = offset_metadata_max_bytes
        self.stats = stats
        self.groups: dict[str, Group] = {}

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.partitions)

    # ---------------------------------------------------------------- loading
    def replay(self, partition: int) -> Replayed:
        """Read the partition back (blocking): offsets and group records in order, tombstones
        removing, transaction markers applying or dropping their producer's offsets."""
        groups: dict[str, Group] = {}
        consumer_records: list[ConsumerRecord] = []
        share_records: list[ShareRecord] = []
        n = 0
        for rec in self.log.read(partition):
            key, value = rec.key, rec.value
            if rec.commit is not None:  # a transaction's marker: its offsets apply or vanish
                for g in groups.values():
                    g.complete_txn_offsets(rec.producer_id, rec.commit)
                continue
            if key is None:
                continue
            n += 1
            try:
                if is_consumer_group_key(key):
                    consumer_records.append(decode_consumer_record(key, value))
                    continue
                if is_share_group_key(key):
                    share_records.append(decode_share_record(key, value))
                    continue
                k = decode_key(key)
                if isinstance(k, OffsetKey):
                    g = groups.setdefault(k.group, Group(k.group))
                    if value is None:
                        g.offsets.pop((k.topic, k.partition), None)
                    else:
                        v = decode_offset_value(value)
                        o = CommittedOffset(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                                            v.expire_timestamp)
                        if rec.producer_id >= 0:
                            g.pending_txn_offsets.setdefault(rec.producer_id, {})[(k.topic, k.partition)] = o
                        else:
                            g.offsets[(k.topic, k.partition)] = o
                elif isinstance(k, GroupKey):
                    if value is None:
                        old = groups.pop(k.group, None)
                        if old is not None and old.offsets:  # offsets outlive their group record
                            groups[k.group] = Group(k.group, offsets=old.offsets)
                    else:
                        _apply_group_value(groups.setdefault(k.group, Group(k.group)), decode_group_value(value))
            except PrahaError as e:
                log.warning("skipping an unreadable record in __consumer_offsets-%d: %s", partition, e)
        return Replayed(groups, consumer_records, n, share_records)

    # ---------------------------------------------------------------- the cache
    def still_ours(self, group: Group) -> bool:
        return self.groups.get(group.group_id) is group

    def offsets_still_ours(self, group: Group) -> bool:
        """The group's offsets are still this coordinator's: the same Group, or the one a
        protocol migration put in its place meanwhile (it took over the same offsets dict; a
        commit written during a downgrade is applied, not answered NOT_COORDINATOR)."""
        current = self.groups.get(group.group_id)
        return current is not None and current.offsets is group.offsets

    def committed(self, group_id: str, partitions: Iterable[tuple[str, int]] | None
                  ) -> dict[tuple[str, int], CommittedOffset | None]:
        """The group's committed offsets (all, or those asked for: None where there is none)."""
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None and not group.is_(GroupState.DEAD) else {}
        if partitions is None:
            return dict(offsets)
        return {tp: offsets.get(tp) for tp in partitions}

    def has_pending_txn_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]] | None
                                ) -> set[tuple[str, int]]:
        """The partitions with an offset waiting for its transaction (OffsetFetch's
        require_stable answers UNSTABLE_OFFSET_COMMIT for them)."""
        group = self.groups.get(group_id)
        if group is None or not group.pending_txn_offsets:
            return set()
        pending = {tp for offsets in group.pending_txn_offsets.values() for tp in offsets}
        return pending if partitions is None else pending & set(partitions)

    def complete_txn_offsets(self, offsets_partition: int, producer_id: int, commit: bool) -> int:
        """The producer's pending offsets in that partition's groups become committed, or are
        dropped; how many groups changed."""
        changed = 0
        for gid, g in self.groups.items():
            if producer_id in g.pending_txn_offsets and self.partition_of(gid) == offsets_partition:
                g.complete_txn_offsets(producer_id, commit)
                changed += 1
        return changed

    # ---------------------------------------------------------------- writes
    async def append(self, group_id: str, records: Records, producer: tuple[int, int] | None = None) -> ErrorCode:
        """Records of `group_id` appended to its partition, replicated; the log's own error code."""
        if producer is None:
            return await self.log.append(self.partition_of(group_id), records)
        return await self.log.append(self.partition_of(group_id), records, producer=producer)

    async def store_group(self, group: Group) -> ErrorCode:
        record = (group_key(group.group_id), group_value(group.value()))
        return map_append_error(await self.append(group.group_id, [record]))

    def metadata_fits(self, offsets: Offsets) -> tuple[dict[tuple[str, int], ErrorCode], Offsets]:
        """Offsets whose metadata is too long (OFFSET_METADATA_TOO_LARGE), and the others."""
        refused: dict[tuple[str, int], ErrorCode] = {}
        valid: Offsets = {}
        for tp, o in offsets.items():
            if len(o.metadata.encode()) > self.offset_metadata_max_bytes:
                refused[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = o
        return refused, valid

    async def store_offsets(self, group: Group, offsets: Offsets) -> dict[tuple[str, int], ErrorCode]:
        """Write the offsets (acks=all) and, once replicated, put them in the cache."""
        out, valid = self.metadata_fits(offsets)
        if not valid:
            return out
        started = time.monotonic()
        records: Records = [(offset_key(group.group_id, t, p), offset_value(o.value())) for (t, p), o in valid.items()]
        for tp in valid:
            group.pending_offset_writes[tp] = group.pending_offset_writes.get(tp, 0) + 1
        try:
            err = await self.append(group.group_id, records)
        finally:
            for tp in valid:
                left = group.pending_offset_writes.get(tp, 1) - 1
                if left > 0:
                    group.pending_offset_writes[tp] = left
                else:
                    group.pending_offset_writes.pop(tp, None)
        err = map_append_error(err)
        if err == ErrorCode.NONE and self.offsets_still_ours(group):
            group.offsets.update(valid)
            self.stats.offset_commits += 1
            self.stats.offset_commit_time_ms_total += (time.monotonic() - started) * 1000
        elif err == ErrorCode.NONE:
            err = ErrorCode.NOT_COORDINATOR
        for tp in valid:
            out[tp] = err
        return out

    async def store_txn_offsets(self, group: Group, producer_id: int, producer_epoch: int,
                                offsets: Offsets) -> dict[tuple[str, int], ErrorCode]:
        """Write the offsets in the producer's transaction; they stay pending (invisible to
        OffsetFetch) until its marker reaches the partition (`complete_txn_offsets`)."""
        out, valid = self.metadata_fits(offsets)
        if not valid:
            return out
        gid = group.group_id
        records: Records = [(offset_key(gid, t, p), offset_value(o.value())) for (t, p), o in valid.items()]
        err = map_append_error(await self.append(gid, records, producer=(producer_id, producer_epoch)))
        if err == ErrorCode.NONE and self.still_ours(group):
            group.pending_txn_offsets.setdefault(producer_id, {}).update(valid)
        elif err == ErrorCode.NONE:
            err = ErrorCode.NOT_COORDINATOR
        out.update({tp: err for tp in valid})
        return out

    async def delete_offsets(self, group: Group, doomed: list[tuple[str, int]]) -> ErrorCode:
        """Tombstone the group's offsets of `doomed`, then drop them from the cache."""
        err = map_append_error(await self.append(group.group_id,
                                                 [(offset_key(group.group_id, t, p), None) for t, p in doomed]))
        if err == ErrorCode.NONE:
            for tp in doomed:
                group.offsets.pop(tp, None)
        return err


def offset_tombstones(group_id: str, partitions: Iterable[tuple[str, int]]) -> Records:
    return [(offset_key(group_id, t, p), None) for t, p in partitions]


def _apply_group_value(g: Group, v: GroupValue) -> None:
    g.protocol_type = v.protocol_type or None
    g.generation = v.generation
    g.protocol = v.protocol
    g.leader_id = v.leader
    g.state_timestamp = v.current_state_timestamp
    g.members.clear()
    g.static_members.clear()
    for r in v.members:
        m = Member(r.member_id, r.group_instance_id, r.client_id, r.client_host, r.rebalance_timeout_ms,
                   r.session_timeout_ms, g.protocol_type or "", [(v.protocol or "", r.subscription)],
                   assignment=r.assignment, metadata_for_current=r.subscription)
        g.members[m.member_id] = m
        if m.group_instance_id is not None:
            g.static_members[m.group_instance_id] = m.member_id
    g.state = GroupState.STABLE if g.members else GroupState.EMPTY
