"""Consumer-group APIs on the wire: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups, OffsetDelete.

Each handler decodes the request's fields, asks the group coordinator
(`praha.coordinator.group`) and builds Kafka's response at the request's version. The one
thing done here rather than in the coordinator is FindCoordinator's: the first lookup
creates `__consumer_offsets` (50 partitions, `offsets.topic.replication.factor`, compacted),
refused with COORDINATOR_NOT_AVAILABLE while fewer brokers are alive than that factor, as
Kafka does; the coordinator is then the leader of the group's partition.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from kafka.protocol.admin import DeleteGroupsResponse, DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.consumer import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from kafka.protocol.metadata import FindCoordinatorResponse

from praha.broker.authorized_operations import ResourceKind, authorized_operations
from praha.common import TopicPartition, now_ms
from praha.coordinator.group.coordinator import MAX_GROUP_ID_BYTES, GroupCoordinator, valid_group_id
from praha.coordinator.group.metadata import CommittedOffset
from praha.coordinator.group.records import OFFSETS_TOPIC
from praha.errors import ErrorCode, PrahaError
from praha.protocol.framing import DecodedRequest
from praha.zk.admin_zk import create_topic_if_absent

if TYPE_CHECKING:
    from praha.broker.broker_api import Broker

log = logging.getLogger(__name__)

KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION = 0, 1

_OCT = OffsetCommitResponse.OffsetCommitResponseTopic
_OCP = _OCT.OffsetCommitResponsePartition
_OFT = OffsetFetchResponse.OffsetFetchResponseTopic
_OFP = _OFT.OffsetFetchResponsePartition
_OFG = OffsetFetchResponse.OffsetFetchResponseGroup
_OFGT = _OFG.OffsetFetchResponseTopics
_OFGP = _OFGT.OffsetFetchResponsePartitions


def offsets_topic_config(segment_bytes: int) -> dict[str, str]:
    """Kafka's `__consumer_offsets` settings (GroupMetadataManager.offsetsTopicConfigs)."""
    return {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": str(segment_bytes)}


class GroupApis:
    def __init__(self, broker: "Broker"):
        self.broker = broker
        self._creating: asyncio.Future[None] | None = None

    @property
    def coordinator(self) -> GroupCoordinator:
        return self.broker.group_coordinator

    # ------------------------------------------------------------ FindCoordinator
    async def handle_find_coordinator(self, req: DecodedRequest) -> Any:
        r = req.request
        v = req.api_version
        key_type = r.key_type if v >= 1 else KEY_TYPE_GROUP
        keys = list(r.coordinator_keys or []) if v >= 4 else [r.key]
        answers = [await self._find(key, key_type) for key in keys]
        if v >= 4:
            return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[
                FindCoordinatorResponse.Coordinator(key=k, node_id=n, host=h, port=p, error_code=int(c),
                                                    error_message=m) for k, (c, m, n, h, p) in zip(keys, answers)])
        c, m, n, h, p = answers[0]
        return FindCoordinatorResponse(throttle_time_ms=0, error_code=int(c), error_message=m, node_id=n, host=h,
                                       port=p)

    async def _find(self, key: str, key_type: int) -> tuple[ErrorCode, str | None, int, str, int]:
        def fail(code: ErrorCode, message: str | None = None) -> tuple[ErrorCode, str | None, int, str, int]:
            return code, message, -1, "", -1
        if key_type == KEY_TYPE_TRANSACTION:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, "transactions are not supported yet")
        if key_type != KEY_TYPE_GROUP:
            return fail(ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {key_type}")
        if not valid_group_id(key):
            return fail(ErrorCode.INVALID_GROUP_ID,
                        f"a group id must be 1 to {MAX_GROUP_ID_BYTES} bytes of UTF-8, got {len(key.encode())}")
        cache = self.broker.metadata_cache
        if not cache.contains_topic(OFFSETS_TOPIC):
            problem = await self._create_offsets_topic()
            if problem is not None:
                return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, problem)
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{OFFSETS_TOPIC} is being created")
        partition = self.coordinator.partition_of(key)
        leader = cache.leader_of(TopicPartition(OFFSETS_TOPIC, partition))
        if leader is None:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{OFFSETS_TOPIC}-{partition} has no leader")
        return ErrorCode.NONE, None, leader.id, leader.host, leader.port

    async def _create_offsets_topic(self) -> str | None:
        """Create `__consumer_offsets` (once per broker at a time); a problem, or None."""
        cfg = self.broker.config
        rf = cfg.offsets_topic_replication_factor
        alive = len(self.broker.metadata_cache.live_brokers)
        if alive < rf:
            return (f"{OFFSETS_TOPIC} needs {rf} brokers (offsets.topic.replication.factor), "
                    f"{alive} are alive")
        if self._creating is not None:
            await asyncio.shield(self._creating)
            return None
        loop = asyncio.get_running_loop()
        self._creating = loop.create_future()

        def create() -> None:
            if create_topic_if_absent(self.broker.zk_store(), OFFSETS_TOPIC, cfg.offsets_topic_num_partitions, rf,
                                      offsets_topic_config(cfg.offsets_topic_segment_bytes)):
                log.info("created %s: %d partitions, replication factor %d", OFFSETS_TOPIC,
                         cfg.offsets_topic_num_partitions, rf)

        try:
            await loop.run_in_executor(None, create)
            return None
        except PrahaError as e:
            return f"could not create {OFFSETS_TOPIC}: {e}"
        finally:
            self._creating.set_result(None)
            self._creating = None

    # ------------------------------------------------------------ membership
    async def handle_join_group(self, req: DecodedRequest) -> Any:
        r = req.request
        v = req.api_version
        protocols = [(p.name, bytes(p.metadata)) for p in (r.protocols or [])]
        res = await self.coordinator.join_group(
            r.group_id, r.member_id or "", r.group_instance_id if v >= 5 else None, req.header.client_id or "",
            req.client_host, r.session_timeout_ms, r.rebalance_timeout_ms if v >= 1 else r.session_timeout_ms,
            r.protocol_type, protocols, require_known_member_id=v >= 4, supports_skip_assignment=v >= 9)
        members = [JoinGroupResponse.JoinGroupResponseMember(member_id=mid, group_instance_id=inst, metadata=meta)
                   for mid, inst, meta in res.members]
        return JoinGroupResponse(
            throttle_time_ms=0, error_code=int(res.error), generation_id=res.generation,
            protocol_type=res.protocol_type, protocol_name=res.protocol if res.protocol is not None or v >= 7 else "",
            leader=res.leader, skip_assignment=res.skip_assignment, member_id=res.member_id, members=members)

    async def handle_sync_group(self, req: DecodedRequest) -> Any:
        r = req.request
        v = req.api_version
        assignments = {a.member_id: bytes(a.assignment) for a in (r.assignments or [])}
        res = await self.coordinator.sync_group(
            r.group_id, r.generation_id, r.member_id, r.group_instance_id if v >= 3 else None,
            r.protocol_type if v >= 5 else None, r.protocol_name if v >= 5 else None, assignments)
        return SyncGroupResponse(throttle_time_ms=0, error_code=int(res.error), protocol_type=res.protocol_type,
                                 protocol_name=res.protocol, assignment=res.assignment)

    async def handle_heartbeat(self, req: DecodedRequest) -> Any:
        r = req.request
        code = self.coordinator.heartbeat(r.group_id, r.generation_id, r.member_id,
                                          r.group_instance_id if req.api_version >= 3 else None)
        return HeartbeatResponse(throttle_time_ms=0, error_code=int(code))

    async def handle_leave_group(self, req: DecodedRequest) -> Any:
        r = req.request
        v = req.api_version
        leaving: list[tuple[str, str | None]] = (
            [(m.member_id, m.group_instance_id) for m in (r.members or [])] if v >= 3 else [(r.member_id, None)])
        code, per_member = self.coordinator.leave_group(r.group_id, leaving)
        if v < 3 and code == ErrorCode.NONE and per_member:
            code = per_member[0]
        members = [LeaveGroupResponse.MemberResponse(member_id=mid, group_instance_id=inst, error_code=int(c))
                   for (mid, inst), c in zip(leaving, per_member)]
        return LeaveGroupResponse(throttle_time_ms=0, error_code=int(code), members=members)

    # ------------------------------------------------------------ offsets
    async def handle_offset_commit(self, req: DecodedRequest) -> Any:
        r = req.request
        v = req.api_version
        cache = self.broker.metadata_cache
        now = now_ms()
        results: dict[tuple[str, int], ErrorCode] = {}
        offsets: dict[tuple[str, int], CommittedOffset] = {}
        for t in r.topics or []:
            for p in t.partitions or []:
                tp = (t.name, p.partition_index)
                if cache.partition(TopicPartition(t.name, p.partition_index)) is None:
                    results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                epoch = p.committed_leader_epoch if v >= 6 else -1
                offsets[tp] = CommittedOffset(p.committed_offset, epoch, p.committed_metadata or "", now)
        if offsets or not results:
            results.update(await self.coordinator.commit_offsets(
                r.group_id, r.generation_id_or_member_epoch, r.member_id or "",
                r.group_instance_id if v >= 7 else None, offsets))
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), code in results.items():
            by_topic.setdefault(topic, []).append(_OCP(partition_index=partition, error_code=int(code)))
        return OffsetCommitResponse(throttle_time_ms=0, topics=[
            _OCT(name=t, partitions=ps) for t, ps in by_topic.items()])

    async def handle_offset_fetch(self, req: DecodedRequest) -> Any:
        r = req.request
        v = req.api_version
        if v >= 8:
            groups = []
            for g in r.groups or []:
                wanted = None if g.topics is None else [(t.name, p) for t in g.topics for p in t.partition_indexes]
                code, topics = self._fetch(g.group_id, wanted)
                groups.append(_OFG(group_id=g.group_id, error_code=int(code), topics=[
                    _OFGT(name=t, partitions=[_OFGP(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                                    metadata=m, error_code=0) for p, o, e, m in ps])
                    for t, ps in topics.items()]))
            return OffsetFetchResponse(throttle_time_ms=0, groups=groups)
        wanted = None if r.topics is None else [(t.name, p) for t in r.topics for p in t.partition_indexes]
        code, topics = self._fetch(r.group_id, wanted)
        out = [_OFT(name=t, partitions=[_OFP(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                             metadata=m, error_code=0) for p, o, e, m in ps])
               for t, ps in topics.items()]
        if v < 2 and code != ErrorCode.NONE:  # no top-level error before v2: every partition carries it
            out = [_OFT(name=t, partitions=[_OFP(partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
                                                 metadata="", error_code=int(code)) for p in ps_])
                   for t, ps_ in _by_topic(wanted or [])]
        return OffsetFetchResponse(throttle_time_ms=0, topics=out, error_code=int(code))

    def _fetch(self, group_id: str, wanted: list[tuple[str, int]] | None
               ) -> tuple[ErrorCode, dict[str, list[tuple[int, int, int, str]]]]:
        code, offsets = self.coordinator.fetch_offsets(group_id, wanted)
        topics: dict[str, list[tuple[int, int, int, str]]] = {}
        if code != ErrorCode.NONE:
            return code, topics
        for (t, p), o in sorted(offsets.items()):
            row = (p, o.offset, o.leader_epoch, o.metadata) if o is not None else (p, -1, -1, "")
            topics.setdefault(t, []).append(row)
        return code, topics

    async def handle_offset_delete(self, req: DecodedRequest) -> Any:
        r = req.request
        wanted = [(t.name, p.partition_index) for t in (r.topics or []) for p in (t.partitions or [])]
        cache = self.broker.metadata_cache
        unknown = {tp for tp in wanted if cache.partition(TopicPartition(*tp)) is None}
        code, per = await self.coordinator.delete_offsets(r.group_id, [tp for tp in wanted if tp not in unknown])
        for tp in unknown:
            per[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        topics: dict[str, list[Any]] = {}
        if code == ErrorCode.NONE:
            for (t, p), c in per.items():
                topics.setdefault(t, []).append(
                    OffsetDeleteResponse.OffsetDeleteResponseTopic.OffsetDeleteResponsePartition(
                        partition_index=p, error_code=int(c)))
        return OffsetDeleteResponse(error_code=int(code), throttle_time_ms=0, topics=[
            OffsetDeleteResponse.OffsetDeleteResponseTopic(name=t, partitions=ps) for t, ps in topics.items()])

    # ------------------------------------------------------------ admin
    async def handle_list_groups(self, req: DecodedRequest) -> Any:
        r = req.request
        v = req.api_version
        states = {s.lower() for s in (r.states_filter or [])} if v >= 4 else set()
        types = {t.lower() for t in (r.types_filter or [])} if v >= 5 else set()
        code, groups = self.coordinator.list_groups(states)
        if types and "classic" not in types:
            groups = []
        return ListGroupsResponse(throttle_time_ms=0, error_code=int(code), groups=[
            ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                                           group_type="classic") for g in groups])

    async def handle_describe_groups(self, req: DecodedRequest) -> Any:
        r = req.request
        operations = authorized_operations(
            ResourceKind.GROUP, req.api_version >= 3 and bool(r.include_authorized_operations))
        out = []
        for gid in r.groups or []:
            d = self.coordinator.describe_group(gid)
            out.append(DescribeGroupsResponse.DescribedGroup(
                error_code=int(d.error), error_message=None, group_id=gid, group_state=d.state,
                protocol_type=d.protocol_type, protocol_data=d.protocol,
                members=[DescribeGroupsResponse.DescribedGroup.DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                    client_host=m.client_host, member_metadata=m.metadata, member_assignment=m.assignment)
                    for m in d.members],
                authorized_operations=operations))
        return DescribeGroupsResponse(throttle_time_ms=0, groups=out)

    async def handle_delete_groups(self, req: DecodedRequest) -> Any:
        r = req.request
        ids = list(r.groups_names or [])
        results = await self.coordinator.delete_groups(ids)
        return DeleteGroupsResponse(throttle_time_ms=0, results=[
            DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=int(results[g])) for g in ids])


def _by_topic(tps: list[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    out: dict[str, list[int]] = {}
    for t, p in tps:
        out.setdefault(t, []).append(p)
    return list(out.items())

