"""The group coordinator: Kafka's classic consumer-group protocol, one broker's share of it.

A broker coordinates the groups whose `__consumer_offsets` partition it leads
(`records.partition_for`). Everything runs on the broker's network event loop, so the
group state needs no locks; only log reads (loading) go to a thread.

Flows:
- **Leadership.** `on_elected(p, epoch)` (a LeaderAndIsr made us leader of partition p)
  marks p loading — requests for its groups get COORDINATOR_LOAD_IN_PROGRESS — and replays
  its log in the background: offsets and group records in order, tombstones removing. Then
  its groups are served. `on_resigned(p)` drops them: waiting members get NOT_COORDINATOR
  and look the coordinator up again.
- **Join.** A new dynamic member is given an id and asked to join again (MEMBER_ID_REQUIRED,
  KIP-394). A join moves the group to PreparingRebalance; the join phase ends when every
  member has rejoined, or at the rebalance timeout (members that did not rejoin are
  removed); an empty group first waits `group.initial.rebalance.delay.ms`, extended while
  new members keep arriving. Then the next generation starts (protocol chosen by vote) and
  every member gets its JoinGroup answer — the leader with all members' metadata.
- **Sync.** The leader's SyncGroup carries the assignment; it is written to the log (acks=all)
  and only then handed to every member: the group is Stable. A member that does not sync
  within the rebalance timeout is removed.
- **Liveness.** Each member's heartbeat timer (session timeout) removes it when it stops
  heartbeating; removal, a clean leave or a new join re-run the rebalance.
- **Offsets.** OffsetCommit is validated against member and generation, written as acks=all,
  and applied to the cache only once replicated; OffsetFetch reads the cache. Offsets of an
  empty group expire after `offsets.retention.minutes` (tombstones written).

This module is the membership protocol; the groups' cache, the replay of the log and every
write of offsets and group records are `storage.GroupMetadataManager`'s (`self.store`).
"""
from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from praha.common import now_ms
from praha.config import BrokerConfig
from praha.coordinator.group.consumer import heartbeat as kip848
from praha.coordinator.group.consumer import migration
from praha.coordinator.group.consumer.heartbeat import ConsumerGroupSettings, HeartbeatRequest
from praha.coordinator.group.consumer.migration import MigrationPolicy
from praha.coordinator.group.consumer.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ConsumerGroup,
    TopicInfo,
)
from praha.coordinator.group.consumer.records import encode as encode_consumer_record
from praha.coordinator.group.consumer.service import ConsumerGroupService, HeartbeatOutcome, snapshot
from praha.coordinator.group.metadata import CommittedOffset, Group, GroupState, Member
from praha.coordinator.group.records import group_key, group_value
from praha.coordinator.group.share.heartbeat import ShareSettings
from praha.coordinator.group.share.service import ShareGroupService
from praha.coordinator.group.storage import (
    CoordinatorStats,
    GroupMetadataManager,
    OffsetsLog,
    Replayed,
    map_append_error,
    offset_tombstones,
)
from praha.coordinator.ownership import Ownership, ownership_error
from praha.errors import ErrorCode, PrahaError

log = logging.getLogger(__name__)

#: how long a brand-new member (first join) may take to rejoin (Kafka's NewMemberJoinTimeoutMs)
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
#: a group id must fit the int16-length strings of `__consumer_offsets` keys; a flexible
#: request (compact strings) could carry a longer one, which Kafka could not store either
MAX_GROUP_ID_BYTES = 32767


def valid_group_id(group_id: str | None) -> TypeGuard[str]:
    return group_id is not None and 0 < len(group_id.encode()) <= MAX_GROUP_ID_BYTES


@dataclass(frozen=True, slots=True)
class GroupConfig:
    partitions: int = 50
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2147483647
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    #: KIP-848 consumer groups (`group.consumer.*`)
    consumer: ConsumerGroupSettings = ConsumerGroupSettings()
    migration_policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL
    #: KIP-932 share groups (`group.share.*`)
    share: ShareSettings = ShareSettings()

    @classmethod
    def from_broker_config(cls, c: BrokerConfig) -> GroupConfig:
        return cls(c.offsets_topic_num_partitions, c.group_min_session_timeout_ms, c.group_max_session_timeout_ms,
                   c.group_initial_rebalance_delay_ms, c.group_max_size, c.offsets_retention_minutes * 60_000,
                   c.offsets_retention_check_interval_ms, c.offset_metadata_max_bytes,
                   ConsumerGroupSettings(c.group_consumer_heartbeat_interval_ms, c.group_consumer_session_timeout_ms,
                                         c.group_consumer_max_size, c.group_consumer_assignors),
                   MigrationPolicy(c.group_consumer_migration_policy),
                   ShareSettings(c.group_share_heartbeat_interval_ms, c.group_share_session_timeout_ms,
                                 c.group_share_max_size))


@dataclass(slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    #: "classic" or "consumer" (KIP-848), ListGroups v5's GroupType
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    error: ErrorCode
    group_id: str
    state: str = "Dead"
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberDescription, ...] = ()


class GroupCoordinator:
    def __init__(self, config: GroupConfig, offsets_log: OffsetsLog,
                 run_blocking: Callable[[Callable[[], Any]], Awaitable[Any]],
                 on_event: Callable[..., None] = lambda *a, **k: None,
                 topics: Callable[[], Mapping[str, TopicInfo]] = dict):
        self.config = config
        self.run_blocking = run_blocking
        self.on_event = on_event  # (name, partition, **fields) for the state-change log
        self.owned: dict[int, tuple[Ownership, int]] = {}
        self.stats = CoordinatorStats()
        #: offsets and group records: the cache and its log (Kafka's GroupMetadataManager)
        self.store = GroupMetadataManager(config.partitions, offsets_log, config.offset_metadata_max_bytes, self.stats)
        self.groups: dict[str, Group] = self.store.groups
        self._tasks: set[asyncio.Task[Any]] = set()
        self._expiry_task: asyncio.Task[Any] | None = None
        #: transaction markers that reached a partition while it was loading: (producer id, commit),
        #: applied once the load is done (the load read the log as it was when it began)
        self._markers_while_loading: dict[int, list[tuple[int, bool]]] = {}
        #: KIP-848 consumer groups: their own state and timers; offsets stay in `groups`
        self.consumer = ConsumerGroupService(config.consumer, self._append_consumer_records, self.partition_of,
                                             topics, map_append_error)
        self.consumer.on_fenced = lambda gid: self._spawn(self._maybe_downgrade(gid))
        #: KIP-932 share groups: membership in memory, each group's record in its partition
        self.share = ShareGroupService(config.share, self._check, self._is_classic_or_consumer_group, topics,
                                       self._append_consumer_records, self.partition_of, map_append_error)

    # ================================================================ leadership
    def partition_of(self, group_id: str) -> int:
        return self.store.partition_of(group_id)

    def on_elected(self, partition: int, epoch: int) -> None:
        cur = self.owned.get(partition)
        if cur is not None:
            # still (or already) ours: keep serving what is loaded, only the epoch moves on
            if epoch > cur[1]:
                self.owned[partition] = (cur[0], epoch) if cur[0] is Ownership.ACTIVE else cur
            return
        self.owned[partition] = (Ownership.LOADING, epoch)
        task = asyncio.get_running_loop().create_task(self._load(partition, epoch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._ensure_expiry_task()

    def on_resigned(self, partition: int) -> None:
        self._markers_while_loading.pop(partition, None)
        if self.owned.pop(partition, None) is not None:
            self.stats.load_time_ms.pop(partition, None)
            n = self._unload(partition) + self.consumer.unload(partition) + self.share.unload(partition)
            log.info("group coordinator: resigned %s-%d, %d groups unloaded", "__consumer_offsets", partition, n)
            self.on_event("GroupCoordinatorUnloaded", partition, groups=n)

    def _unload(self, partition: int) -> int:
        gone = [g for gid, g in self.groups.items() if self.partition_of(gid) == partition]
        for g in gone:
            self._kill_group(g, ErrorCode.NOT_COORDINATOR)
            del self.groups[g.group_id]
        return len(gone)

    async def _load(self, partition: int, epoch: int) -> None:
        started = time.monotonic()

        try:
            replayed: Replayed = await self.run_blocking(functools.partial(self.store.replay, partition))
        except Exception as e:  # noqa: BLE001 - a failed load leaves the partition unserved, not the broker
            log.error("loading __consumer_offsets-%d failed: %r", partition, e)
            if self.owned.get(partition) == (Ownership.LOADING, epoch):
                del self.owned[partition]
            return
        if self.owned.get(partition) != (Ownership.LOADING, epoch):
            return  # resigned (or re-elected) meanwhile
        now = now_ms()
        n = 0
        records = replayed.records
        for gid, g in replayed.groups.items():
            if not g.members and not g.offsets and not g.pending_txn_offsets and g.generation == 0:
                continue
            for m in g.members.values():  # a loaded group with members is Stable (_apply_group_value)
                self._schedule_heartbeat(g, m)
            g.state_timestamp = g.state_timestamp if g.state_timestamp > 0 else now
            self.groups[gid] = g
            n += 1
        n += self.consumer.load(partition, replayed.consumer_records)
        n += self.share.load(partition, replayed.share_records)
        self.owned[partition] = (Ownership.ACTIVE, epoch)
        for producer_id, commit in self._markers_while_loading.pop(partition, []):
            self.complete_transactional_offsets(partition, producer_id, commit)
        ms = (time.monotonic() - started) * 1000
        self.stats.partitions_loaded += 1
        self.stats.load_time_ms_total += ms
        self.stats.load_time_ms[partition] = round(ms, 1)
        log.info("group coordinator: loaded __consumer_offsets-%d (epoch %d): %d records, %d groups in %.0f ms",
                 partition, epoch, records, n, ms)
        self.on_event("GroupCoordinatorLoaded", partition, groups=n, records=records, load_ms=round(ms, 1))

    def _check(self, group_id: str | None) -> ErrorCode:
        if not valid_group_id(group_id):
            return ErrorCode.INVALID_GROUP_ID
        return ownership_error(self.owned.get(self.partition_of(group_id)))

    def _still_ours(self, group: Group) -> bool:
        return self.store.still_ours(group)

    # ================================================================ KIP-848 consumer groups
    async def _append_consumer_records(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> ErrorCode:
        return await self.store.log.append(partition, records)

    def _has_classic_members(self, group_id: str) -> bool:
        g = self.groups.get(group_id)
        return g is not None and not g.is_(GroupState.DEAD) and bool(g.members or g.pending_members)

    def _is_classic_or_consumer_group(self, group_id: str) -> bool:
        """The id names a group of another type than share (a live classic group, or a consumer group)."""
        classic = self.groups.get(group_id)
        return group_id in self.consumer.groups or (classic is not None and not classic.is_(GroupState.DEAD))

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        g = self.consumer.groups.get(group_id)
        return None if g is None or g.dead else g

    def find_consumer_group(self, group_id: str) -> tuple[ErrorCode, str | None, ConsumerGroup | None]:
        """ConsumerGroupDescribe's lookup: (error, message, group)."""
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return code, None, None
        g = self.consumer_group(group_id)
        if g is not None:
            return ErrorCode.NONE, None, g
        if self._has_classic_members(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.", None
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None

    async def consumer_group_heartbeat(self, req: HeartbeatRequest) -> HeartbeatOutcome:
        """ConsumerGroupHeartbeat: the request checked, the group's decision written, the answer."""
        if req.group_id:
            code = self._check(req.group_id)
            if code != ErrorCode.NONE:
                return HeartbeatOutcome(code)
            classic = self.groups.get(req.group_id)
            if self._has_classic_members(req.group_id) and classic is not None:
                if req.member_epoch != 0 or not self._may_upgrade(classic):
                    return HeartbeatOutcome(ErrorCode.GROUP_ID_NOT_FOUND,
                                            f"Group {req.group_id} is not a consumer group.")
                return await self._upgrade(classic, req)
        out = await self.consumer.heartbeat(req, now_ms())
        if out.error == ErrorCode.NONE and req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            await self._maybe_downgrade(req.group_id)
        return out

    # ================================================================ migration (classic <-> consumer)
    def set_group_config(self, group_id: str, values: Mapping[str, str]) -> None:
        """A GROUP resource's config changed (DescribeConfigs/IncrementalAlterConfigs, any broker)."""
        self.consumer.set_group_config(group_id, values)

    def _may_upgrade(self, classic: Group) -> bool:
        policy = self.config.migration_policy
        ok = policy.upgrades and classic.protocol_type == migration.CONSUMER_PROTOCOL_TYPE and \
            len(classic.members) <= self.config.consumer.max_size
        if not ok:
            log.info("group %s: not upgraded to the consumer protocol (policy %s, protocol type %s, %d members)",
                     classic.group_id, policy.value, classic.protocol_type, len(classic.members))
        return ok

    async def _upgrade(self, classic: Group, req: HeartbeatRequest) -> HeartbeatOutcome:
        """A consumer-protocol member joins a classic group: the group becomes a consumer group
        (its classic members kept, at epoch = generation), then the heartbeat is decided in it.
        One append holds the classic group's tombstone and the consumer group's records."""
        gid = classic.group_id
        members = [migration.ClassicMemberState(
            m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms, m.session_timeout_ms,
            tuple(m.protocols), m.metadata_for(classic.protocol or "") or m.metadata_for_current, m.assignment)
            for m in classic.members.values()]
        topics = self.consumer.topics()
        now = now_ms()

        def decide() -> kip848.Decision:
            records = migration.upgrade(self.consumer.groups, gid, classic.generation, members, topics)
            d = kip848.heartbeat(self.consumer.groups, req, topics, self.consumer.settings_for(gid), now)
            # the classic group keeps only its offsets; its members now live in the consumer group
            self._kill_group(classic, ErrorCode.REBALANCE_IN_PROGRESS)
            classic.members.clear()
            classic.static_members.clear()
            classic.pending_members.clear()
            classic.pending_sync.clear()
            classic.state, classic.leader_id, classic.protocol = GroupState.EMPTY, None, None
            return kip848.Decision(records + d.records, d.answer, d.timers)

        out = await self.consumer.decide(gid, decide, extra=[(group_key(gid), None)])
        if out.error == ErrorCode.NONE:
            for m in members:
                self.consumer.touch(gid, m.member_id, m.session_timeout_ms)
            log.info("group %s: upgraded from classic to consumer at epoch %d with %d classic members", gid,
                     classic.generation, len(members))
        return out

    async def _maybe_downgrade(self, group_id: str) -> None:
        """The last consumer-protocol member is gone: the group goes back to the classic protocol
        (its consumer-group records tombstoned, a classic group record at the generation its classic
        members hold in the same append), and a classic rebalance starts so every member rejoins."""
        cg = self.consumer_group(group_id)
        if cg is None or self._check(group_id) != ErrorCode.NONE or \
                not migration.may_downgrade(cg, self.config.migration_policy, self.config.max_size):
            return
        before = snapshot(cg)
        records, members, epoch = migration.downgrade(self.consumer.groups, group_id)
        holder = self.groups.get(group_id)
        group = Group(group_id, state=GroupState.STABLE, state_timestamp=now_ms(), generation=epoch,
                      protocol_type=migration.CONSUMER_PROTOCOL_TYPE)
        if holder is not None:
            group.offsets, group.pending_offset_writes = holder.offsets, holder.pending_offset_writes
            group.pending_txn_offsets = holder.pending_txn_offsets
        for cm in members:
            assert cm.classic is not None
            group.add(Member(cm.member_id, cm.instance_id, cm.client_id, cm.client_host, cm.rebalance_timeout_ms,
                             cm.classic.session_timeout_ms, migration.CONSUMER_PROTOCOL_TYPE,
                             list(cm.classic.protocols)))
        group.protocol = group.select_protocol()
        for x in group.members.values():
            x.metadata_for_current = x.metadata_for(group.protocol)
        self.consumer.forget(group_id)
        self.groups[group_id] = group
        err = map_append_error(await self.store.append(group_id, [
            *(encode_consumer_record(r) for r in records), (group_key(group_id), group_value(group.value()))]))
        if err != ErrorCode.NONE:
            log.warning("group %s: downgrade not written (%s); the consumer group is kept", group_id, err.name)
            if self._still_ours(group):
                self.groups[group_id] = holder if holder is not None else Group(group_id, offsets=group.offsets)
                self.consumer.groups[group_id] = before
                for cm in members:
                    assert cm.classic is not None
                    self.consumer.touch(group_id, cm.member_id, cm.classic.session_timeout_ms)
            return
        if not self._still_ours(group):
            return
        for x in group.members.values():
            self._schedule_heartbeat(group, x)
        log.info("group %s: downgraded from consumer to classic at generation %d with %d members", group_id, epoch,
                 len(group.members))
        # a member may have rejoined while the append was in flight (that began the rebalance already)
        self._prepare_or_check(group, "downgraded from the consumer protocol")

    # ================================================================ join
    async def join_group(self, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                         client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                         protocols: list[tuple[str, bytes]], require_known_member_id: bool,
                         supports_skip_assignment: bool = False) -> JoinResult:
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return JoinResult(code, member_id)
        cfg = self.config
        if not cfg.min_session_timeout_ms <= session_timeout_ms <= cfg.max_session_timeout_ms:
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        cg = self.consumer_group(group_id)
        if cg is not None and cg.members:
            return await self._join_consumer_group(migration.ClassicJoin(
                group_id, member_id, group_instance_id, client_id, client_host, session_timeout_ms,
                rebalance_timeout_ms, protocol_type, tuple(protocols)), require_known_member_id)
        if cg is not None:  # an empty consumer group gives way to a classic one (its offsets stay)
            code = await self._drop_empty_consumer_group(group_id)
            if code != ErrorCode.NONE:
                return JoinResult(code, member_id)
        if rebalance_timeout_ms <= 0:
            rebalance_timeout_ms = session_timeout_ms
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            group = self.groups[group_id] = Group(group_id, state_timestamp=now_ms())
        if group.is_(GroupState.DEAD):
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports(protocol_type, protocols):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        fields = (client_id, client_host, session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols)
        if not member_id:
            return await self._join_unknown_member(group, group_instance_id, require_known_member_id,
                                                   supports_skip_assignment, *fields)
        return await self._join_known_member(group, member_id, group_instance_id, *fields)

    async def _join_consumer_group(self, req: migration.ClassicJoin, require_known: bool) -> JoinResult:
        """A classic member's JoinGroup in a consumer group: answered at once from the group's
        assignment, its member epoch as the generation, never as the leader."""
        if not req.member_id and req.instance_id is None and require_known:
            cg = self.consumer.groups[req.group_id]
            if len(cg.members) >= self.config.consumer.max_size:
                return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, f"{req.client_id}-{uuid.uuid4()}")
        out = await self.consumer.decide(req.group_id, functools.partial(
            migration.classic_join, self.consumer.groups, req, self.consumer.topics(),
            self.consumer.settings_for(req.group_id)))
        if out.error != ErrorCode.NONE or out.answer is None:
            return JoinResult(out.error, req.member_id)
        a = out.answer
        return JoinResult(ErrorCode.NONE, a.member_id, a.member_epoch, migration.CONSUMER_PROTOCOL_TYPE,
                          req.protocols[0][0], "", [])

    async def _drop_empty_consumer_group(self, gid: str) -> ErrorCode:
        g = self.consumer.groups[gid]
        before = snapshot(g)
        records = kip848.delete_group(self.consumer.groups, gid)
        code = await self.consumer.write(gid, records, before)
        if code == ErrorCode.NONE:
            self.consumer.forget(gid)
        return code

    async def _join_unknown_member(self, group: Group, instance: str | None, require_known: bool,
                                   skip_ok: bool, client_id: str, host: str, session_ms: int, rebalance_ms: int,
                                   protocol_type: str, protocols: list[tuple[str, bytes]]) -> JoinResult:
        new_id = group.new_member_id(client_id, instance)
        if instance is not None:
            old_id = group.static_member_id(instance)
            if old_id is not None:
                return await self._replace_static_member(group, instance, old_id, new_id, skip_ok, session_ms,
                                                         rebalance_ms, protocols)
        elif require_known:
            if len(group.members) + len(group.pending_members) >= self.config.max_size:
                return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
            group.pending_members.add(new_id)
            self._schedule_pending_expiry(group, new_id, session_ms)
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id)
        if len(group.members) >= self.config.max_size:
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        m = Member(new_id, instance, client_id, host, rebalance_ms, session_ms, protocol_type, protocols, is_new=True)
        return await self._add_member_and_rebalance(group, m)

    async def _join_known_member(self, group: Group, member_id: str, instance: str | None, client_id: str,
                                 host: str, session_ms: int, rebalance_ms: int, protocol_type: str,
                                 protocols: list[tuple[str, bytes]]) -> JoinResult:
        if member_id in group.pending_members:
            return await self._add_member_and_rebalance(group, Member(
                member_id, instance, client_id, host, rebalance_ms, session_ms, protocol_type, protocols, is_new=True))
        if group.is_static_member_fenced(member_id, instance):
            return JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id)
        m = group.members.get(member_id)
        if m is None or group.is_(GroupState.EMPTY):
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return await self._update_member_and_rebalance(group, m, protocols, session_ms, rebalance_ms)
        if group.is_(GroupState.COMPLETING_REBALANCE):
            if m.matches(protocols):  # the member missed its answer: give it again
                return self._join_result(group, m)
            return await self._update_member_and_rebalance(group, m, protocols, session_ms, rebalance_ms)
        # Stable
        if m.member_id == group.leader_id or not m.matches(protocols):
            return await self._update_member_and_rebalance(group, m, protocols, session_ms, rebalance_ms)
        return self._join_result(group, m, with_members=False)

    async def _replace_static_member(self, group: Group, instance: str, old_id: str, new_id: str, skip_ok: bool,
                                     session_ms: int, rebalance_ms: int,
                                     protocols: list[tuple[str, bytes]]) -> JoinResult:
        """A static member came back (KIP-345): it takes over the old member id's place; the
        process holding the old id is fenced. No rebalance when nothing else changed."""
        old = group.members[old_id]
        if old.awaiting_join is not None and not old.awaiting_join.done():
            old.awaiting_join.set_result(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        old.awaiting_join = None
        if old.awaiting_sync is not None and not old.awaiting_sync.done():
            old.awaiting_sync.set_result(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        old.awaiting_sync = None
        m = group.replace_static_member(instance, old_id, new_id)
        m.session_timeout_ms, m.rebalance_timeout_ms = session_ms, rebalance_ms
        self._schedule_heartbeat(group, m)
        if group.is_(GroupState.STABLE) and m.matches(protocols):
            err = await self.store.store_group(group)
            if err != ErrorCode.NONE:
                return JoinResult(err, new_id)
            is_leader = group.leader_id == new_id
            return self._join_result(group, m, with_members=is_leader and skip_ok,
                                     skip_assignment=is_leader and skip_ok)
        if group.is_(GroupState.PREPARING_REBALANCE):
            m.protocols = protocols
            return await self._await_join(group, m)
        m.protocols = protocols
        return await self._update_member_and_rebalance(group, m, protocols, session_ms, rebalance_ms)

    async def _add_member_and_rebalance(self, group: Group, m: Member) -> JoinResult:
        group.add(m)
        if group.is_(GroupState.PREPARING_REBALANCE) and group.in_initial_delay:
            group.new_member_added = True
        self._prepare_or_check(group, f"member {m.member_id} joined")
        return await self._await_join(group, m)

    async def _update_member_and_rebalance(self, group: Group, m: Member, protocols: list[tuple[str, bytes]],
                                           session_ms: int, rebalance_ms: int) -> JoinResult:
        m.protocols = protocols
        m.session_timeout_ms, m.rebalance_timeout_ms = session_ms, rebalance_ms
        self._prepare_or_check(group, f"member {m.member_id} rejoined")
        return await self._await_join(group, m)

    async def _await_join(self, group: Group, m: Member) -> JoinResult:
        fut: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        if m.awaiting_join is not None and not m.awaiting_join.done():
            m.awaiting_join.set_result(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, m.member_id))
        m.awaiting_join = fut
        self._schedule_heartbeat(group, m)
        self._maybe_complete_join(group)
        return await fut

    def _prepare_or_check(self, group: Group, reason: str) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        loop = asyncio.get_running_loop()
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._fail_pending_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS)
        _cancel(group.sync_timer)
        group.sync_timer = None
        was_empty = group.is_(GroupState.EMPTY)
        group.transition(GroupState.PREPARING_REBALANCE, now_ms())
        group.rebalance_started = time.monotonic()
        _cancel(group.join_timer)
        rebalance_ms = group.rebalance_timeout_ms()
        if was_empty and self.config.initial_rebalance_delay_ms > 0:
            delay = min(self.config.initial_rebalance_delay_ms, rebalance_ms)
            group.in_initial_delay = True
            group.new_member_added = False
            group.initial_delay_deadline = loop.time() + rebalance_ms / 1000
            group.join_timer = loop.call_later(delay / 1000, self._initial_delay_expired, group)
        else:
            group.in_initial_delay = False
            group.join_timer = loop.call_later(rebalance_ms / 1000, self._complete_join, group)
        log.info("group %s: preparing rebalance, generation %d (%s)", group.group_id, group.generation, reason)

    def _initial_delay_expired(self, group: Group) -> None:
        loop = asyncio.get_running_loop()
        remaining = group.initial_delay_deadline - loop.time()
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms / 1000, remaining)
            group.join_timer = loop.call_later(delay, self._initial_delay_expired, group)
            return
        group.in_initial_delay = False
        self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if (group.is_(GroupState.PREPARING_REBALANCE) and not group.in_initial_delay
                and group.all_rejoined()):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if not self._still_ours(group) or not group.is_(GroupState.PREPARING_REBALANCE):
            return
        _cancel(group.join_timer)
        group.join_timer = None
        for m in group.not_yet_rejoined():
            if m.group_instance_id is None:  # a static member keeps its place (KIP-345)
                self._remove_member(group, m, "did not rejoin in time", rebalance=False)
        if group.members and not group.elect_joined_leader():
            # nobody rejoined (only static members remain): wait another rebalance timeout,
            # until they rejoin or their session timeouts remove them
            group.join_timer = asyncio.get_running_loop().call_later(
                group.rebalance_timeout_ms() / 1000, self._complete_join, group)
            return
        now = now_ms()
        group.init_next_generation(now)
        started, group.rebalance_started = group.rebalance_started, None
        if started is not None:
            self.stats.rebalances += 1
            self.stats.rebalance_time_ms_total += (time.monotonic() - started) * 1000
        if group.is_(GroupState.EMPTY):
            log.info("group %s: generation %d is empty", group.group_id, group.generation)
            self._spawn(self.store.store_group(group))
            return
        log.info("group %s: generation %d with %d members, protocol %s", group.group_id, group.generation,
                 len(group.members), group.protocol)
        for m in group.members.values():
            fut, m.awaiting_join = m.awaiting_join, None
            if fut is not None and not fut.done():
                fut.set_result(self._join_result(group, m, with_members=m.member_id == group.leader_id))
            self._schedule_heartbeat(group, m)
        loop = asyncio.get_running_loop()
        group.sync_timer = loop.call_later(group.rebalance_timeout_ms() / 1000, self._sync_expired, group,
                                           group.generation)

    def _join_result(self, group: Group, m: Member, with_members: bool | None = None,
                     skip_assignment: bool = False) -> JoinResult:
        if with_members is None:
            with_members = m.member_id == group.leader_id
        members = ([(x.member_id, x.group_instance_id, x.metadata_for_current) for x in group.members.values()]
                   if with_members else [])
        return JoinResult(ErrorCode.NONE, m.member_id, group.generation, group.protocol_type, group.protocol,
                          group.leader_id or "", members, skip_assignment)

    # ================================================================ sync
    async def sync_group(self, group_id: str, generation: int, member_id: str, instance: str | None,
                         protocol_type: str | None, protocol: str | None,
                         assignments: dict[str, bytes]) -> SyncResult:
        code = self._check(group_id)
        if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)  # Kafka's answer: rejoin once loaded
        if code != ErrorCode.NONE:
            return SyncResult(code)
        cg = self.consumer_group(group_id)
        if cg is not None and cg.members:
            try:
                synced = migration.classic_sync(cg, member_id, instance, generation, protocol_type, protocol,
                                                self.consumer.topics())
            except PrahaError as e:
                return SyncResult(e.code)
            self.consumer.timers(group_id, synced.timers)
            if synced.error != ErrorCode.NONE:
                return SyncResult(synced.error)
            classic = cg.members[member_id].classic
            assert classic is not None
            return SyncResult(ErrorCode.NONE, migration.CONSUMER_PROTOCOL_TYPE, classic.protocols[0][0],
                              synced.assignment)
        group = self.groups.get(group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.DEAD):
            return SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.is_static_member_fenced(member_id, instance):
            return SyncResult(ErrorCode.FENCED_INSTANCE_ID)
        m = group.members.get(member_id)
        if m is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != group.generation:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != group.protocol_type) or \
                (protocol is not None and protocol != group.protocol):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_(GroupState.EMPTY):
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        group.pending_sync.discard(member_id)
        self._schedule_heartbeat(group, m)
        if group.is_(GroupState.STABLE):
            return SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol, m.assignment)
        fut: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        m.awaiting_sync = fut
        if member_id == group.leader_id:
            self._spawn(self._leader_synced(group, group.generation, assignments))
        return await fut

    async def _leader_synced(self, group: Group, generation: int, assignments: dict[str, bytes]) -> None:
        for m in group.members.values():
            m.assignment = assignments.get(m.member_id, b"")
        err = await self.store.store_group(group)
        if not self._still_ours(group) or not group.is_(GroupState.COMPLETING_REBALANCE) \
                or group.generation != generation:
            return
        if err != ErrorCode.NONE:
            for m in group.members.values():
                m.assignment = b""
            self._fail_pending_syncs(group, err)
            self._prepare_rebalance(group, f"storing the assignment failed: {err.name}")
            return
        group.transition(GroupState.STABLE, now_ms())
        for m in group.members.values():
            fut, m.awaiting_sync = m.awaiting_sync, None
            if fut is not None and not fut.done():
                fut.set_result(SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol, m.assignment))
        log.info("group %s: stable at generation %d", group.group_id, group.generation)

    def _fail_pending_syncs(self, group: Group, code: ErrorCode) -> None:
        for m in group.members.values():
            fut, m.awaiting_sync = m.awaiting_sync, None
            if fut is not None and not fut.done():
                fut.set_result(SyncResult(code))

    def _sync_expired(self, group: Group, generation: int) -> None:
        if not self._still_ours(group) or group.generation != generation:
            return
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) or not group.pending_sync:
            return
        late = [group.members[mid] for mid in list(group.pending_sync) if mid in group.members]
        for m in late:
            self._remove_member(group, m, "did not sync in time", rebalance=False)
        self._prepare_or_check(group, f"{len(late)} members did not sync")

    # ================================================================ heartbeat and leave
    def heartbeat(self, group_id: str, generation: int, member_id: str, instance: str | None) -> ErrorCode:
        code = self._check(group_id)
        if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE  # Kafka answers blindly while loading: the member keeps its place
        if code != ErrorCode.NONE:
            return code
        cg = self.consumer_group(group_id)
        if cg is not None and cg.members:
            try:
                beat = migration.classic_heartbeat(cg, member_id, instance, generation)
            except PrahaError as e:
                return e.code
            self.consumer.timers(group_id, beat.timers)
            return beat.error
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(member_id, instance):
            return ErrorCode.FENCED_INSTANCE_ID
        m = group.members.get(member_id)
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, m)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    async def _leave_consumer_group(self, cg: ConsumerGroup, leaving: list[tuple[str, str | None]]
                                    ) -> tuple[ErrorCode, list[ErrorCode]]:
        before = snapshot(cg)
        records, codes, gone = migration.classic_leave(self.consumer.groups, cg, leaving, self.consumer.topics())
        code = await self.consumer.write(cg.group_id, records, before)
        if code != ErrorCode.NONE:
            return code, []
        self.consumer.cancel_timers(cg.group_id, gone)
        return ErrorCode.NONE, codes

    async def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]
                          ) -> tuple[ErrorCode, list[ErrorCode]]:
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return code, []
        cg = self.consumer_group(group_id)
        if cg is not None and cg.members:
            return await self._leave_consumer_group(cg, leaving)
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in leaving]
        out = []
        for member_id, instance in leaving:
            if instance is not None:
                current = group.static_member_id(instance)
                if current is None:
                    out.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != current:
                    out.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
                member_id = current
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                out.append(ErrorCode.NONE)
                self._maybe_complete_join(group)
                continue
            m = group.members.get(member_id)
            if m is None:
                out.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            self._remove_member(group, m, "left the group")
            out.append(ErrorCode.NONE)
        return ErrorCode.NONE, out

    def _schedule_heartbeat(self, group: Group, m: Member) -> None:
        _cancel(m.heartbeat_timer)
        timeout = NEW_MEMBER_JOIN_TIMEOUT_MS if m.is_new and m.awaiting_join is not None else m.session_timeout_ms
        m.heartbeat_timer = asyncio.get_running_loop().call_later(timeout / 1000, self._heartbeat_expired, group, m)

    def _heartbeat_expired(self, group: Group, m: Member) -> None:
        if not self._still_ours(group) or group.members.get(m.member_id) is not m:
            return
        if (m.awaiting_join is not None and not m.awaiting_join.done()) or \
                (m.awaiting_sync is not None and not m.awaiting_sync.done()):
            self._schedule_heartbeat(group, m)  # waiting on us, not dead
            return
        self._remove_member(group, m, "session timed out")

    def _schedule_pending_expiry(self, group: Group, member_id: str, session_ms: int) -> None:
        def expire() -> None:
            if self._still_ours(group) and member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self._maybe_complete_join(group)
        asyncio.get_running_loop().call_later(session_ms / 1000, expire)

    def _remove_member(self, group: Group, m: Member, reason: str, rebalance: bool = True) -> None:
        _cancel(m.heartbeat_timer)
        for fut, result in ((m.awaiting_join, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, m.member_id)),
                            (m.awaiting_sync, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))):
            if fut is not None and not fut.done():
                fut.set_result(result)
        m.awaiting_join = m.awaiting_sync = None
        group.remove(m.member_id)
        log.info("group %s: member %s removed (%s), %d left", group.group_id, m.member_id, reason, len(group.members))
        if not rebalance:
            return
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {m.member_id} {reason}")
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    # ================================================================ offsets
    async def commit_offsets(self, group_id: str, generation: int, member_id: str, instance: str | None,
                             offsets: dict[tuple[str, int], CommittedOffset],
                             api_version: int = 9) -> dict[tuple[str, int], ErrorCode]:
        """Per partition, the commit's outcome. Unknown topics are the caller's to refuse.
        In a consumer group (KIP-848) `generation` is the member epoch."""
        def all_(code: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return {tp: code for tp in offsets}

        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return all_(code)
        cg = self.consumer_group(group_id)
        if cg is not None:
            try:
                kip848.validate_offset_commit(cg, member_id, generation, api_version)
            except PrahaError as e:
                return all_(e.code)
            holder = self.groups.get(group_id)
            if holder is None or holder.is_(GroupState.DEAD):
                holder = self.groups[group_id] = Group(group_id, state_timestamp=now_ms())
            return await self.store.store_offsets(holder, offsets)
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                return all_(ErrorCode.ILLEGAL_GENERATION)
            group = self.groups[group_id] = Group(group_id, state_timestamp=now_ms())  # a standalone consumer
        code = self._validate_commit(group, generation, member_id, instance)
        if code != ErrorCode.NONE:
            return all_(code)
        if group.is_(GroupState.COMPLETING_REBALANCE):
            # a member with the new generation that has not synced yet: it should wait
            return all_(ErrorCode.REBALANCE_IN_PROGRESS)
        m = group.members.get(member_id)
        if m is not None:
            self._schedule_heartbeat(group, m)
        return await self.store.store_offsets(group, offsets)

    @staticmethod
    def _validate_commit(group: Group, generation: int, member_id: str, instance: str | None) -> ErrorCode:
        """Kafka's validateOffsetCommit: who may commit to this group now."""
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and group.is_(GroupState.EMPTY):
            return ErrorCode.NONE  # the admin client, or a consumer assigning partitions itself
        if generation >= 0 or member_id or instance is not None:
            if group.is_static_member_fenced(member_id, instance):
                return ErrorCode.FENCED_INSTANCE_ID
            if member_id not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            return ErrorCode.ILLEGAL_GENERATION if generation != group.generation else ErrorCode.NONE
        return ErrorCode.UNKNOWN_MEMBER_ID  # only members commit to a non-empty group

    # ================================================================ transactional offsets
    async def txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int, generation: int,
                                 member_id: str, instance: str | None,
                                 offsets: dict[tuple[str, int], CommittedOffset]) -> dict[tuple[str, int], ErrorCode]:
        """TxnOffsetCommit: the offsets are written in the producer's transaction and stay
        pending — invisible to OffsetFetch — until its COMMIT marker reaches the partition
        (`complete_transactional_offsets`); an ABORT drops them."""
        def all_(code: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return {tp: code for tp in offsets}

        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return all_(code)
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0 or member_id:
                return all_(ErrorCode.ILLEGAL_GENERATION if generation >= 0 else ErrorCode.UNKNOWN_MEMBER_ID)
            group = self.groups[group_id] = Group(group_id, state_timestamp=now_ms())
        # Kafka's doTxnCommitOffsets: an old client (no member id, generation -1) may commit to any group
        if group.is_(GroupState.DEAD):
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.is_static_member_fenced(member_id, instance):
            return all_(ErrorCode.FENCED_INSTANCE_ID)
        if member_id and member_id not in group.members:
            return all_(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation >= 0 and generation != group.generation:
            return all_(ErrorCode.ILLEGAL_GENERATION)
        return await self.store.store_txn_offsets(group, producer_id, producer_epoch, offsets)

    def complete_transactional_offsets(self, offsets_partition: int, producer_id: int, commit: bool) -> int:
        """A COMMIT or ABORT marker of `producer_id` reached `__consumer_offsets`-`offsets_partition`
        (called by the partition's leader, which is this coordinator): its pending offsets in
        that partition's groups become committed, or are dropped. How many groups changed."""
        owned = self.owned.get(offsets_partition)
        if owned is not None and owned[0] is Ownership.LOADING:
            self._markers_while_loading.setdefault(offsets_partition, []).append((producer_id, commit))
            return 0
        return self.store.complete_txn_offsets(offsets_partition, producer_id, commit)

    def has_pending_txn_offsets(self, group_id: str,
                                partitions: Iterable[tuple[str, int]] | None) -> set[tuple[str, int]]:
        """The partitions with an offset waiting for its transaction (OffsetFetch's
        require_stable answers UNSTABLE_OFFSET_COMMIT for them)."""
        return self.store.has_pending_txn_offsets(group_id, partitions)

    def fetch_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]] | None,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> tuple[ErrorCode, dict[tuple[str, int], CommittedOffset | None]]:
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return code, {}
        cg = self.consumer_group(group_id)
        if cg is not None:
            try:
                kip848.validate_offset_fetch(cg, member_id, member_epoch)
            except PrahaError as e:
                return e.code, {}
        return ErrorCode.NONE, self.store.committed(group_id, partitions)

    async def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                             ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return code, {}
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        if group.is_(GroupState.EMPTY):
            subscribed: set[str] = set()
        else:
            topics = group.subscribed_topics()
            if topics is None:
                return ErrorCode.NON_EMPTY_GROUP, {}
            subscribed = topics
        out: dict[tuple[str, int], ErrorCode] = {}
        doomed = []
        for tp in partitions:
            if tp[0] in subscribed:
                out[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                out[tp] = ErrorCode.NONE
                if tp in group.offsets:
                    doomed.append(tp)
        if doomed:
            err = await self.store.delete_offsets(group, doomed)
            if err != ErrorCode.NONE:
                return err, {}
        return ErrorCode.NONE, out

    # ================================================================ admin
    def list_groups(self, states: set[str] | None = None,
                    types: set[str] | None = None) -> tuple[ErrorCode, list[GroupOverview]]:
        """Groups of both protocols; `states` and `types` (lower case) filter when given."""
        loading = any(o is Ownership.LOADING for o, _ in self.owned.values())
        consumer = self.consumer.states()
        out = [GroupOverview(g.group_id, g.protocol_type or "", g.state.value) for g in self.groups.values()
               if not g.is_(GroupState.DEAD) and g.group_id not in consumer]
        out += [GroupOverview(gid, "consumer", state.value, "consumer") for gid, state in consumer.items()]
        out = [o for o in out if (not states or o.state.lower() in states) and (not types or o.group_type in types)]
        return (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NONE), out

    def describe_group(self, group_id: str) -> GroupDescription:
        code = self._check(group_id)
        if code != ErrorCode.NONE:
            return GroupDescription(code, group_id, state="")
        if self.consumer_group(group_id) is not None:
            # Kafka 4: DescribeGroups is for classic groups; clients ask ConsumerGroupDescribe
            return GroupDescription(ErrorCode.GROUP_ID_NOT_FOUND, group_id, state="")
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return GroupDescription(ErrorCode.NONE, group_id)
        stable = group.is_(GroupState.STABLE)
        members = tuple(MemberDescription(
            m.member_id, m.group_instance_id, m.client_id, m.client_host,
            m.metadata_for_current if stable else b"", m.assignment if stable else b"")
            for m in group.members.values())
        return GroupDescription(ErrorCode.NONE, group_id, group.state.value, group.protocol_type or "",
                                (group.protocol or "") if stable else "", members)

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        out: dict[str, ErrorCode] = {}
        for gid in group_ids:
            code = self._check(gid)
            if code != ErrorCode.NONE:
                out[gid] = code
                continue
            if self.consumer_group(gid) is not None:
                out[gid] = await self._delete_consumer_group(gid)
                continue
            group = self.groups.get(gid)
            if group is None or group.is_(GroupState.DEAD):
                out[gid] = ErrorCode.GROUP_ID_NOT_FOUND
                continue
            if not group.is_(GroupState.EMPTY):
                out[gid] = ErrorCode.NON_EMPTY_GROUP
                continue
            tombstones = offset_tombstones(gid, group.offsets)
            tombstones.append((group_key(gid), None))
            err = map_append_error(await self.store.append(gid, tombstones))
            if err != ErrorCode.NONE:
                out[gid] = err
                continue
            if self._still_ours(group):
                self._kill_group(group, ErrorCode.COORDINATOR_NOT_AVAILABLE)
                del self.groups[gid]
            out[gid] = ErrorCode.NONE
        return out

    async def _delete_consumer_group(self, gid: str) -> ErrorCode:
        """An empty consumer group's records and offsets, all tombstoned in one append."""
        groups = self.consumer.groups
        g = groups[gid]
        if g.members:
            return ErrorCode.NON_EMPTY_GROUP
        holder = self.groups.get(gid)
        offsets = [] if holder is None else list(holder.offsets)
        records = offset_tombstones(gid, offsets)
        records += [encode_consumer_record(r) for r in kip848.delete_group({gid: snapshot(g)}, gid)]
        err = map_append_error(await self.store.append(gid, records))
        if err != ErrorCode.NONE:
            return err
        groups.pop(gid, None)
        if holder is not None and self._still_ours(holder):
            self._kill_group(holder, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            del self.groups[gid]
        return ErrorCode.NONE

    def _kill_group(self, group: Group, code: ErrorCode) -> None:
        _cancel(group.join_timer)
        _cancel(group.sync_timer)
        for m in group.members.values():
            _cancel(m.heartbeat_timer)
            for fut, result in ((m.awaiting_join, JoinResult(code, m.member_id)), (m.awaiting_sync, SyncResult(code))):
                if fut is not None and not fut.done():
                    fut.set_result(result)
        group.state = GroupState.DEAD

    # ================================================================ storage and expiry
    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _ensure_expiry_task(self) -> None:
        if self._expiry_task is None or self._expiry_task.done():
            self._expiry_task = asyncio.get_running_loop().create_task(self._expire_forever())

    async def _expire_forever(self) -> None:
        while self.owned:
            await asyncio.sleep(self.config.offsets_retention_check_interval_ms / 1000)
            try:
                await self.expire_offsets(now_ms())
            except Exception as e:  # noqa: BLE001 - the next round tries again
                log.warning("offset expiration failed: %r", e)

    async def expire_offsets(self, now: int) -> int:
        """Kafka's rule: offsets of a group that has been empty for the retention period go
        (for a standalone group and an empty consumer group: each offset once its commit is that
        old); an empty group without offsets goes too (a consumer group: its records tombstoned)."""
        retention = self.config.offsets_retention_ms
        expired_total = 0
        for gid, group in list(self.groups.items()):
            if self._check(gid) != ErrorCode.NONE or not group.is_(GroupState.EMPTY):
                continue
            cg = self.consumer_group(gid)
            if cg is not None and cg.members:
                continue  # the offsets of a KIP-848 group with members stay (they live in its classic holder)
            if group.protocol_type:
                gone = list(group.offsets) if group.state_timestamp + retention <= now else []
            else:
                gone = [tp for tp, o in group.offsets.items() if o.commit_timestamp + retention <= now]
            drop_group = len(gone) == len(group.offsets)
            if not gone and not drop_group:
                continue
            records = offset_tombstones(gid, gone)
            if drop_group:
                records.append((group_key(gid), None))
                if cg is not None:  # an empty consumer group goes with its last offset, in the same append
                    records += [encode_consumer_record(r) for r in kip848.delete_group({gid: snapshot(cg)}, gid)]
            if await self.store.append(gid, records) != ErrorCode.NONE:
                continue
            for tp in gone:
                group.offsets.pop(tp, None)
            expired_total += len(gone)
            if drop_group and self._still_ours(group) and group.is_(GroupState.EMPTY):
                self._kill_group(group, ErrorCode.COORDINATOR_NOT_AVAILABLE)
                del self.groups[gid]
                if cg is not None and self.consumer_group(gid) is cg and not cg.members:
                    self.consumer.forget(gid)
        # an empty consumer group without offsets is deleted at once, as Kafka's cleanup cycle does
        for gid, cg in list(self.consumer.groups.items()):
            if cg.dead or cg.members or gid in self.groups or self._check(gid) != ErrorCode.NONE:
                continue
            records = [encode_consumer_record(r) for r in kip848.delete_group({gid: snapshot(cg)}, gid)]
            if await self.store.append(gid, records) == ErrorCode.NONE and \
                    self.consumer.groups.get(gid) is cg and not cg.members:
                self.consumer.forget(gid)
                log.info("consumer group %s: empty, without offsets: deleted", gid)
        if expired_total:
            self.stats.offsets_expired += expired_total
            log.info("group coordinator: expired %d offsets", expired_total)
        return expired_total

    # ================================================================ figures
    def figures(self) -> list[tuple[str, float, str]]:
        by_state: dict[str, int] = {s.value: 0 for s in GroupState if s is not GroupState.DEAD}
        for g in self.groups.values():
            if not g.is_(GroupState.DEAD):
                by_state[g.state.value] += 1
        out = [(f"groups_{name.lower()}", float(n), f"groups in state {name} on this coordinator")
               for name, n in by_state.items()]
        s = self.stats
        out += [
            ("group_rebalances_total", float(s.rebalances), "join phases completed"),
            ("group_rebalance_time_ms_total", s.rebalance_time_ms_total, "time spent in join phases"),
            ("group_offset_commits_total", float(s.offset_commits), "offset commits written"),
            ("group_offset_commit_time_ms_total", s.offset_commit_time_ms_total,
             "time from commit to replication"),
            ("group_partitions_loaded_total", float(s.partitions_loaded), "__consumer_offsets loads"),
            ("group_load_time_ms_total", s.load_time_ms_total, "time spent loading partitions"),
            ("group_offsets_expired_total", float(s.offsets_expired), "offsets expired"),
            ("group_coordinator_partitions", float(len(self.owned)), "__consumer_offsets partitions led"),
        ]
        return out

    def shutdown(self) -> None:
        self.consumer.shutdown()
        for p in list(self.owned):
            self.on_resigned(p)
        for t in list(self._tasks):
            t.cancel()
        if self._expiry_task is not None:
            self._expiry_task.cancel()


def _cancel(handle: Any) -> None:
    if handle is not None:
        handle.cancel()
