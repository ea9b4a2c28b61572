"""Consumer-group APIs on the wire: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit, TxnOffsetCommit, OffsetFetch, ListGroups, DescribeGroups,
DeleteGroups, OffsetDelete.

Each handler decodes the request's fields, asks the group coordinator
(`praha.coordinator.group`) and builds Kafka's response at the request's version. The one
thing done here rather than in the coordinator is FindCoordinator's, for groups and
(key type 1) transactional ids alike: the first lookup creates `__consumer_offsets`
(`offsets.topic.*`) or `__transaction_state` (`transaction.state.log.*`: 50 partitions,
compacted, min.insync.replicas 2), refused with COORDINATOR_NOT_AVAILABLE while fewer brokers
are alive than the replication factor, as Kafka does; the coordinator is then the leader of
the key's partition.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from praha.broker.handlers.authorization import NOT_REQUESTED
from praha.common import TopicPartition, by_topic, now_ms
from praha.config import BrokerConfig
from praha.coordinator.group.coordinator import MAX_GROUP_ID_BYTES, GroupCoordinator, valid_group_id
from praha.coordinator.group.metadata import CommittedOffset
from praha.coordinator.group.records import OFFSETS_TOPIC
from praha.coordinator.transaction.records import TRANSACTION_STATE_TOPIC
from praha.errors import ErrorCode, PrahaError
from praha.protocol.error_response import refusal
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from praha.protocol.messages.gen.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from praha.protocol.messages.gen.txn import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from praha.protocol.messages.runtime import WireMessage
from praha.security.acl import AclOperation, ResourceType
from praha.zk.admin_zk import create_topic_if_absent

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker
    from praha.coordinator.group.coordinator import GroupOverview
    from praha.coordinator.group.share.service import ShareListing

log = logging.getLogger(__name__)

KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION = 0, 1

_OCT = OffsetCommitResponse.OffsetCommitResponseTopic
_OCP = _OCT.OffsetCommitResponsePartition
_OFT = OffsetFetchResponse.OffsetFetchResponseTopic
_OFP = _OFT.OffsetFetchResponsePartition
_OFG = OffsetFetchResponse.OffsetFetchResponseGroup
_OFGT = _OFG.OffsetFetchResponseTopics
_OFGP = _OFGT.OffsetFetchResponsePartitions
_TOCT = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
_TOCP = _TOCT.TxnOffsetCommitResponsePartition


def offsets_topic_config(segment_bytes: int) -> dict[str, str]:
    """Kafka's `__consumer_offsets` settings (GroupMetadataManager.offsetsTopicConfigs)."""
    return {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": str(segment_bytes)}


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """A coordinator's topic as FindCoordinator creates it on first use."""

    name: str
    partitions: int
    replication_factor: int
    replication_key: str
    config: dict[str, str]


def internal_topic(cfg: BrokerConfig, name: str) -> InternalTopic:
    if name == TRANSACTION_STATE_TOPIC:
        # Kafka's TransactionStateManager.transactionTopicConfigs
        return InternalTopic(name, cfg.transaction_state_log_num_partitions,
                             cfg.transaction_state_log_replication_factor, "transaction.state.log.replication.factor",
                             {"cleanup.policy": "compact", "compression.type": "uncompressed",
                              "min.insync.replicas": str(cfg.transaction_state_log_min_isr),
                              "segment.bytes": str(cfg.transaction_state_log_segment_bytes),
                              "unclean.leader.election.enable": "false"})
    return InternalTopic(name, cfg.offsets_topic_num_partitions, cfg.offsets_topic_replication_factor,
                         "offsets.topic.replication.factor", offsets_topic_config(cfg.offsets_topic_segment_bytes))


class _OffsetToCommit(Protocol):
    """A partition of an OffsetCommit or a TxnOffsetCommit (the two name these fields alike)."""

    @property
    def partition_index(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def committed_leader_epoch(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class _TopicToCommit(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[_OffsetToCommit]: ...


class GroupApis:
    def __init__(self, broker: Broker):
        self.broker = broker
        self._creating: dict[str, asyncio.Future[None]] = {}

    @property
    def coordinator(self) -> GroupCoordinator:
        return self.broker.group_coordinator

    # ------------------------------------------------------------ FindCoordinator
    async def handle_find_coordinator(self, req: DecodedRequest) -> FindCoordinatorResponse:
        r = req.body(FindCoordinatorRequest)
        v = req.api_version
        key_type = r.key_type if v >= 1 else KEY_TYPE_GROUP
        keys = list(r.coordinator_keys or []) if v >= 4 else [r.key]
        answers = [await self._find(key, key_type, req.session.listener) if self._may_find(req, key, key_type)
                   else (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED if key_type == KEY_TYPE_TRANSACTION
                         else ErrorCode.GROUP_AUTHORIZATION_FAILED, None, -1, "", -1) for key in keys]
        if v >= 4:
            return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[
                FindCoordinatorResponse.Coordinator(key=k, node_id=n, host=h, port=p, error_code=int(c),
                                                    error_message=m) for k, (c, m, n, h, p) in zip(keys, answers)])
        c, m, n, h, p = answers[0]
        return FindCoordinatorResponse(throttle_time_ms=0, error_code=int(c), error_message=m, node_id=n, host=h,
                                       port=p)

    def _may_find(self, req: DecodedRequest, key: str, key_type: int) -> bool:
        """Describe on the group, or on the transactional id (Kafka's FindCoordinator)."""
        authz = self.broker.authz
        if key_type == KEY_TYPE_TRANSACTION:
            return authz.transactional_id_allowed(req, AclOperation.DESCRIBE, key)
        return key_type != KEY_TYPE_GROUP or authz.group_allowed(req, AclOperation.DESCRIBE, key)

    async def _find(self, key: str, key_type: int, listener: str) -> tuple[ErrorCode, str | None, int, str, int]:
        def fail(code: ErrorCode, message: str | None = None) -> tuple[ErrorCode, str | None, int, str, int]:
            return code, message, -1, "", -1
        if key_type == KEY_TYPE_TRANSACTION:
            if not key:
                return fail(ErrorCode.INVALID_REQUEST, "a transactional id must not be empty")
            topic = internal_topic(self.broker.config, TRANSACTION_STATE_TOPIC)
            partition = self.broker.txn_coordinator.partition_of(key)
        elif key_type == KEY_TYPE_GROUP:
            if not valid_group_id(key):
                return fail(ErrorCode.INVALID_GROUP_ID,
                            f"a group id must be 1 to {MAX_GROUP_ID_BYTES} bytes of UTF-8, got {len(key.encode())}")
            topic = internal_topic(self.broker.config, OFFSETS_TOPIC)
            partition = self.coordinator.partition_of(key)
        else:
            return fail(ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {key_type}")
        cache = self.broker.metadata_cache
        if not cache.contains_topic(topic.name):
            problem = await self._create_internal_topic(topic)
            if problem is not None:
                return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, problem)
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{topic.name} is being created")
        leader = cache.leader_of(TopicPartition(topic.name, partition))
        if leader is None:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{topic.name}-{partition} has no leader")
        endpoint = leader.endpoint(listener)
        if endpoint is None:  # the coordinator has no endpoint on the client's listener
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"broker {leader.id} has no listener {listener}")
        return ErrorCode.NONE, None, leader.id, endpoint.host, endpoint.port

    async def _create_internal_topic(self, topic: InternalTopic) -> str | None:
        """Create a coordinator's topic (once per broker and topic at a time); a problem, or None."""
        alive = len(self.broker.metadata_cache.live_brokers)
        if alive < topic.replication_factor:
            return (f"{topic.name} needs {topic.replication_factor} brokers ({topic.replication_key}), "
                    f"{alive} are alive")
        creating = self._creating.get(topic.name)
        if creating is not None:
            await asyncio.shield(creating)
            return None
        loop = asyncio.get_running_loop()
        done = self._creating[topic.name] = loop.create_future()

        def create() -> None:
            if create_topic_if_absent(self.broker.zk_store(), topic.name, topic.partitions, topic.replication_factor,
                                      topic.config):
                log.info("created %s: %d partitions, replication factor %d", topic.name, topic.partitions,
                         topic.replication_factor)

        try:
            await loop.run_in_executor(None, create)
            return None
        except PrahaError as e:
            return f"could not create {topic.name}: {e}"
        finally:
            done.set_result(None)
            del self._creating[topic.name]

    # ------------------------------------------------------------ membership
    def _group_readable(self, req: DecodedRequest, group_id: str) -> bool:
        return self.broker.authz.group_allowed(req, AclOperation.READ, group_id)

    async def handle_join_group(self, req: DecodedRequest) -> JoinGroupResponse:
        r = req.body(JoinGroupRequest)
        v = req.api_version
        if not self._group_readable(req, r.group_id):
            return JoinGroupResponse(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                     generation_id=-1, protocol_type=None,
                                     protocol_name=None if v >= 7 else "", leader="", skip_assignment=False,
                                     member_id=r.member_id or "", members=[])
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

    async def handle_sync_group(self, req: DecodedRequest) -> SyncGroupResponse:
        r = req.body(SyncGroupRequest)
        v = req.api_version
        if not self._group_readable(req, r.group_id):
            return SyncGroupResponse(throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                     protocol_type=None, protocol_name=None, assignment=b"")
        assignments = {a.member_id: bytes(a.assignment) for a in (r.assignments or [])}
        res = await self.coordinator.sync_group(
            r.group_id, r.generation_id, r.member_id, r.group_instance_id if v >= 3 else None,
            r.protocol_type if v >= 5 else None, r.protocol_name if v >= 5 else None, assignments)
        return SyncGroupResponse(throttle_time_ms=0, error_code=int(res.error), protocol_type=res.protocol_type,
                                 protocol_name=res.protocol, assignment=res.assignment)

    async def handle_heartbeat(self, req: DecodedRequest) -> WireMessage:
        r = req.body(HeartbeatRequest)
        if not self._group_readable(req, r.group_id):
            return refusal(req, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        code = self.coordinator.heartbeat(r.group_id, r.generation_id, r.member_id,
                                          r.group_instance_id if req.api_version >= 3 else None)
        return HeartbeatResponse(throttle_time_ms=0, error_code=int(code))

    async def handle_leave_group(self, req: DecodedRequest) -> WireMessage:
        r = req.body(LeaveGroupRequest)
        v = req.api_version
        if not self._group_readable(req, r.group_id):
            return refusal(req, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        leaving: list[tuple[str, str | None]] = (
            [(m.member_id, m.group_instance_id) for m in (r.members or [])] if v >= 3 else [(r.member_id, None)])
        code, per_member = await self.coordinator.leave_group(r.group_id, leaving)
        if v < 3 and code == ErrorCode.NONE and per_member:
            code = per_member[0]
        members = [LeaveGroupResponse.MemberResponse(member_id=mid, group_instance_id=inst, error_code=int(c))
                   for (mid, inst), c in zip(leaving, per_member)]
        return LeaveGroupResponse(throttle_time_ms=0, error_code=int(code), members=members)

    # ------------------------------------------------------------ offsets
    def _offsets_to_commit(self, req: DecodedRequest, group_id: str, topics: Sequence[_TopicToCommit] | None,
                           with_epoch: bool
                           ) -> tuple[dict[tuple[str, int], ErrorCode], dict[tuple[str, int], CommittedOffset]]:
        """An (Txn)OffsetCommit's partitions: refused ones (Read on the group and on the topic
        needed; unknown) and the offsets to commit."""
        cache = self.broker.metadata_cache
        now = now_ms()
        results: dict[tuple[str, int], ErrorCode] = {}
        offsets: dict[tuple[str, int], CommittedOffset] = {}
        authz, group_ok = self.broker.authz, self._group_readable(req, group_id)
        for t in topics or []:
            topic_ok = authz.topic_allowed(req, AclOperation.READ, t.name)
            for p in t.partitions or []:
                tp = (t.name, p.partition_index)
                if not group_ok or not topic_ok:
                    results[tp] = (ErrorCode.GROUP_AUTHORIZATION_FAILED if not group_ok
                                   else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                    continue
                if cache.partition(TopicPartition(t.name, p.partition_index)) is None:
                    results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                epoch = p.committed_leader_epoch if with_epoch else -1
                offsets[tp] = CommittedOffset(p.committed_offset, epoch, p.committed_metadata or "", now)
        return results, offsets

    async def handle_offset_commit(self, req: DecodedRequest) -> OffsetCommitResponse:
        r = req.body(OffsetCommitRequest)
        v = req.api_version
        results, offsets = self._offsets_to_commit(req, r.group_id, r.topics, with_epoch=v >= 6)
        if offsets or not results:
            results.update(await self.coordinator.commit_offsets(
                r.group_id, r.generation_id_or_member_epoch, r.member_id or "",
                r.group_instance_id if v >= 7 else None, offsets, api_version=v))
        topics = by_topic((t, _OCP(partition_index=p, error_code=int(code))) for (t, p), code in results.items())
        return OffsetCommitResponse(throttle_time_ms=0,
                                    topics=[_OCT(name=t, partitions=ps) for t, ps in topics.items()])

    async def handle_offset_fetch(self, req: DecodedRequest) -> OffsetFetchResponse:
        r = req.body(OffsetFetchRequest)
        v = req.api_version
        if v >= 8:
            groups = []
            for g in r.groups or []:
                wanted = None if g.topics is None else [(t.name, p) for t in g.topics for p in t.partition_indexes]
                member = (g.member_id, g.member_epoch) if v >= 9 and g.member_id else (None, -1)
                code, topics = self._fetch(req, g.group_id, wanted, bool(r.require_stable), member)
                groups.append(_OFG(group_id=g.group_id, error_code=int(code), topics=[
                    _OFGT(name=t, partitions=[_OFGP(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                                    metadata=m, error_code=int(c)) for p, o, e, m, c in ps])
                    for t, ps in topics.items()]))
            return OffsetFetchResponse(throttle_time_ms=0, groups=groups)
        wanted = None if r.topics is None else [(t.name, p) for t in r.topics for p in t.partition_indexes]
        code, topics = self._fetch(req, r.group_id, wanted, v >= 7 and bool(r.require_stable))
        out = [_OFT(name=t, partitions=[_OFP(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                             metadata=m, error_code=int(c)) for p, o, e, m, c in ps])
               for t, ps in topics.items()]
        if v < 2 and code != ErrorCode.NONE:  # no top-level error before v2: every partition carries it
            out = [_OFT(name=t, partitions=[_OFP(partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
                                                 metadata="", error_code=int(code)) for p in ps_])
                   for t, ps_ in by_topic(wanted or []).items()]
        return OffsetFetchResponse(throttle_time_ms=0, topics=out, error_code=int(code))

    def _fetch(self, req: DecodedRequest, group_id: str, wanted: list[tuple[str, int]] | None,
               require_stable: bool = False, member: tuple[str | None, int] = (None, -1)
               ) -> tuple[ErrorCode, dict[str, list[tuple[int, int, int, str, ErrorCode]]]]:
        """Rows (partition, offset, leader epoch, metadata, error) by topic: Describe on the
        group, and only the topics the principal may describe (the others are left out);
        with `require_stable` (KIP-447), a partition whose offset waits for a transaction is
        answered UNSTABLE_OFFSET_COMMIT, so the consumer asks again after the commit."""
        topics: dict[str, list[tuple[int, int, int, str, ErrorCode]]] = {}
        authz = self.broker.authz
        if not authz.group_allowed(req, AclOperation.DESCRIBE, group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, topics
        code, offsets = self.coordinator.fetch_offsets(group_id, wanted, *member)
        if code != ErrorCode.NONE:
            return code, topics
        unstable = self.coordinator.has_pending_txn_offsets(group_id, wanted) if require_stable else set()
        for tp in unstable:
            offsets.setdefault(tp, None)
        describable: dict[str, bool] = {}
        for (t, p), o in sorted(offsets.items()):
            if not describable.setdefault(t, authz.topic_allowed(req, AclOperation.DESCRIBE, t)):
                continue
            if (t, p) in unstable:
                row = (p, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
            else:
                row = (p, o.offset, o.leader_epoch, o.metadata, ErrorCode.NONE) if o is not None else (
                    p, -1, -1, "", ErrorCode.NONE)
            topics.setdefault(t, []).append(row)
        return code, topics

    async def handle_txn_offset_commit(self, req: DecodedRequest) -> TxnOffsetCommitResponse:
        """TxnOffsetCommit: offsets written in the producer's transaction, visible once it commits."""
        r = req.body(TxnOffsetCommitRequest)
        v = req.api_version
        results, offsets = self._offsets_to_commit(req, r.group_id, r.topics, with_epoch=v >= 2)
        if r.transactional_id and not self.broker.authz.transactional_id_allowed(req, AclOperation.WRITE,
                                                                                r.transactional_id):
            results = {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in [*results, *offsets]}
            offsets = {}
        if not r.transactional_id:
            results.update({tp: ErrorCode.INVALID_REQUEST for tp in offsets})
        elif offsets:
            results.update(await self.coordinator.txn_commit_offsets(
                r.group_id, r.producer_id, r.producer_epoch, r.generation_id if v >= 3 else -1,
                (r.member_id or "") if v >= 3 else "", r.group_instance_id if v >= 3 else None, offsets))
        if v < 2:  # PRODUCER_FENCED came with v2; older clients know INVALID_PRODUCER_EPOCH
            results = {tp: ErrorCode.INVALID_PRODUCER_EPOCH if c == ErrorCode.PRODUCER_FENCED else c
                       for tp, c in results.items()}
        topics = by_topic((t, _TOCP(partition_index=p, error_code=int(code))) for (t, p), code in results.items())
        return TxnOffsetCommitResponse(throttle_time_ms=0, topics=[
            _TOCT(name=t, partitions=ps) for t, ps in topics.items()])

    async def handle_offset_delete(self, req: DecodedRequest) -> WireMessage:
        r = req.body(OffsetDeleteRequest)
        authz = self.broker.authz
        if not authz.group_allowed(req, AclOperation.DELETE, r.group_id):
            return refusal(req, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        readable = {t.name: authz.topic_allowed(req, AclOperation.READ, t.name) for t in (r.topics or [])}
        denied = {(t.name, p.partition_index) for t in (r.topics or []) for p in (t.partitions or [])
                  if not readable[t.name]}
        wanted = [(t.name, p.partition_index) for t in (r.topics or []) for p in (t.partitions or [])
                  if readable[t.name]]
        cache = self.broker.metadata_cache
        unknown = {tp for tp in wanted if cache.partition(TopicPartition(*tp)) is None}
        code, per = await self.coordinator.delete_offsets(r.group_id, [tp for tp in wanted if tp not in unknown])
        for tp in unknown:
            per[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        for tp in denied:
            per[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        topics: dict[str, list[OffsetDeleteResponse.OffsetDeleteResponseTopic.OffsetDeleteResponsePartition]] = {}
        if code == ErrorCode.NONE:
            for (t, p), c in per.items():
                topics.setdefault(t, []).append(
                    OffsetDeleteResponse.OffsetDeleteResponseTopic.OffsetDeleteResponsePartition(
                        partition_index=p, error_code=int(c)))
        return OffsetDeleteResponse(error_code=int(code), throttle_time_ms=0, topics=[
            OffsetDeleteResponse.OffsetDeleteResponseTopic(name=t, partitions=ps) for t, ps in topics.items()])

    # ------------------------------------------------------------ admin
    async def handle_list_groups(self, req: DecodedRequest) -> ListGroupsResponse:
        r = req.body(ListGroupsRequest)
        v = req.api_version
        states = {s.lower() for s in (r.states_filter or [])} if v >= 4 else set()
        types = {t.lower() for t in (r.types_filter or [])} if v >= 5 else set()
        code, groups = self.coordinator.list_groups(states, types)
        listed: list[GroupOverview | ShareListing] = [*groups, *self.broker.share_groups.listed(states, types)]
        authz = self.broker.authz  # Describe on the cluster lists all; otherwise those the principal may describe
        if not authz.cluster_allowed(req, AclOperation.DESCRIBE):
            listed = [g for g in listed if authz.group_allowed(req, AclOperation.DESCRIBE, g.group_id)]
        return ListGroupsResponse(throttle_time_ms=0, error_code=int(code), groups=[
            ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                                           group_type=g.group_type) for g in listed])

    async def handle_describe_groups(self, req: DecodedRequest) -> DescribeGroupsResponse:
        r = req.body(DescribeGroupsRequest)
        out = []
        authz = self.broker.authz
        with_ops = req.api_version >= 3 and bool(r.include_authorized_operations)
        for gid in r.groups or []:
            if not authz.group_allowed(req, AclOperation.DESCRIBE, gid):
                out.append(DescribeGroupsResponse.DescribedGroup(
                    error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None, group_id=gid, group_state="",
                    protocol_type="", protocol_data="", members=[], authorized_operations=NOT_REQUESTED))
                continue
            d = self.coordinator.describe_group(gid)
            out.append(DescribeGroupsResponse.DescribedGroup(
                error_code=int(d.error), error_message=None, group_id=gid, group_state=d.state,
                protocol_type=d.protocol_type, protocol_data=d.protocol,
                members=[DescribeGroupsResponse.DescribedGroup.DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                    client_host=m.client_host, member_metadata=m.metadata, member_assignment=m.assignment)
                    for m in d.members],
                authorized_operations=authz.authorized_operations(req, ResourceType.GROUP, gid) if with_ops
                else NOT_REQUESTED))
        return DescribeGroupsResponse(throttle_time_ms=0, groups=out)

    async def handle_delete_groups(self, req: DecodedRequest) -> DeleteGroupsResponse:
        r = req.body(DeleteGroupsRequest)
        ids = list(r.groups_names or [])
        authz = self.broker.authz
        allowed = [g for g in ids if authz.group_allowed(req, AclOperation.DELETE, g)]
        results: dict[str, ErrorCode] = dict(await self.coordinator.delete_groups(allowed)) if allowed else {}
        shares = [g for g, code in results.items() if code == ErrorCode.GROUP_ID_NOT_FOUND]
        if shares:  # not a classic or consumer group: perhaps a share group (KIP-932)
            results.update(await self.broker.share_manager.delete_groups(shares, self.broker.share_groups))
        results.update({g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in ids if g not in allowed})
        return DeleteGroupsResponse(throttle_time_ms=0, results=[
            DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=int(results[g])) for g in ids])


