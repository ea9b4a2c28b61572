"""KIP-932's share-group APIs on the wire: ShareGroupHeartbeat and ShareGroupDescribe (the group
coordinator's), ShareFetch and ShareAcknowledge (each partition leader's).

ShareFetch first applies the acknowledgements it carries, then acquires records for the
member from every partition of its share session, waiting up to max_wait_ms when none is
there; ShareAcknowledge only acknowledges. Both check the share session's epoch first, and a
request that fails that check changes nothing.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, ParamSpec, Protocol, TypeVar

from praha.broker.handlers.authorization import NOT_REQUESTED
from praha.broker.handlers.heartbeat_answers import heartbeat_answer, heartbeat_refusal
from praha.broker.share.partition import AckBatch, AcquiredRange
from praha.broker.share.session import SessionDecision
from praha.common import TopicPartition, by_topic, now_ms
from praha.coordinator.group.share.heartbeat import ShareHeartbeat
from praha.coordinator.group.share.model import Assignment, ShareGroup
from praha.coordinator.group.share.offsets import UNINITIALIZED, Refusal, group_refusal, lag, start_offset_refusal
from praha.errors import ErrorCode, PrahaError
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.share import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupDescribeResponse_Assignment,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from praha.security.acl import AclOperation, ResourceType
from praha.zk.share_state import ShareSnapshot, ShareStateStore

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

log = logging.getLogger(__name__)

_HB = ShareGroupHeartbeatResponse
_DG = ShareGroupDescribeResponse.DescribedGroup
_DM = _DG.Member
_FT = ShareFetchResponse.ShareFetchableTopicResponse
_FP = _FT.PartitionData
_AT = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse
_AP = _AT.PartitionData
_DO = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
_T = TypeVar("_T")
_P = ParamSpec("_P")


class _AckBatch(Protocol):
    """An acknowledgement batch of a ShareFetch or a ShareAcknowledge (named alike in both)."""

    @property
    def first_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def acknowledge_types(self) -> Sequence[int]: ...


class _AckPartition(Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def acknowledgement_batches(self) -> Sequence[_AckBatch]: ...


class _AckTopic(Protocol):
    @property
    def topic_id(self) -> uuid.UUID | None: ...
    @property
    def partitions(self) -> Sequence[_AckPartition]: ...

#: how long a ShareFetch that found nothing looks again, while it waits (up to its max_wait_ms)
RECHECK_S = 0.05


class ShareApis:
    def __init__(self, broker: Broker):
        self.broker = broker

    # ---------------------------------------------------------------- the coordinator's
    async def handle_share_group_heartbeat(self, req: DecodedRequest) -> ShareGroupHeartbeatResponse:
        r = req.body(ShareGroupHeartbeatRequest)
        if not self.broker.authz.group_allowed(req, AclOperation.READ, r.group_id or ""):
            return heartbeat_refusal(_HB, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
        await self.broker.load_topic_ids()
        a = await self.broker.share_groups.heartbeat(ShareHeartbeat(
            r.group_id or "", r.member_id or "", r.member_epoch, r.rack_id,
            None if r.subscribed_topic_names is None else tuple(r.subscribed_topic_names),
            req.header.client_id or "", req.client_host), now_ms())
        if a.error != ErrorCode.NONE:
            return heartbeat_refusal(_HB, a.error, a.message)
        return heartbeat_answer(_HB, a.member_id, a.member_epoch, a.heartbeat_interval_ms, a.assignment)

    async def handle_share_group_describe(self, req: DecodedRequest) -> ShareGroupDescribeResponse:
        r = req.body(ShareGroupDescribeRequest)
        authz = self.broker.authz
        out = []
        for gid in r.group_ids or []:
            if not authz.group_allowed(req, AclOperation.DESCRIBE, gid):
                out.append(_empty(gid, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
                continue
            code, g = self.broker.share_groups.find(gid)
            if g is None:
                out.append(_empty(gid, code, f"Group {gid} not found." if code == ErrorCode.GROUP_ID_NOT_FOUND
                                  else None))
                continue
            ops = authz.authorized_operations(req, ResourceType.GROUP, gid) \
                if r.include_authorized_operations else NOT_REQUESTED
            out.append(self._described(g, ops))
        return ShareGroupDescribeResponse(throttle_time_ms=0, groups=out)

    def _described(self, g: ShareGroup, ops: int) -> _DG:
        names = {t.topic_id: t.name for t in self.broker.consumer_group_topics().values()}
        members = [_DM(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
                       client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
                       assignment=_assignment(m.assigned, names))
                   for _, m in sorted(g.members.items())]
        return _DG(error_code=0, error_message=None, group_id=g.group_id, group_state=g.state.value,
                   group_epoch=g.group_epoch, assignment_epoch=g.assignment_epoch, assignor_name="simple",
                   members=members, authorized_operations=ops)

    # ---------------------------------------------------------------- the partition leaders'
    async def _names(self, topic_ids: Sequence[uuid.UUID | None]) -> dict[uuid.UUID | None, str]:
        """Topic names by id; ids are read from ZooKeeper lazily, so an id not known yet (a topic
        created a moment ago) makes this broker read them before it answers UNKNOWN_TOPIC_ID."""
        names: dict[uuid.UUID | None, str] = {tid: name for name, tid in self.broker.metadata_cache.topic_ids.items()}
        if any(t not in names for t in topic_ids):
            await self.broker.load_topic_ids()
            names = {tid: name for name, tid in self.broker.metadata_cache.topic_ids.items()}
        return names

    async def _acks(self, req: DecodedRequest, group: str, member: str, topics: Sequence[_AckTopic],
              names: dict[uuid.UUID | None, str]) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        out: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
        sm = self.broker.share_manager
        now = now_ms()
        for t in topics:
            name = names.get(t.topic_id)
            for p in t.partitions:
                batches = [AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                           for b in p.acknowledgement_batches or []]
                if not batches:
                    continue
                if name is None:
                    out[TopicPartition("", p.partition_index)] = (ErrorCode.UNKNOWN_TOPIC_ID, None)
                    continue
                tp = TopicPartition(name, p.partition_index)
                if not self.broker.authz.topic_allowed(req, AclOperation.READ, name):
                    out[tp] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
                    continue
                out[tp] = await sm.acknowledge(group, member, tp, batches, now)
        return out

    def _refusal(self, req: DecodedRequest, group: str, member: str) -> tuple[ErrorCode, str | None] | None:
        """What a ShareFetch or ShareAcknowledge is refused with before its session is looked at."""
        if not self.broker.authz.group_allowed(req, AclOperation.READ, group):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
        if not group or not member:
            return ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set."
        return None

    async def handle_share_fetch(self, req: DecodedRequest) -> ShareFetchResponse:
        r = req.body(ShareFetchRequest)
        group, member = r.group_id or "", r.member_id or ""
        refused = self._refusal(req, group, member)
        if refused is not None:
            return _fetch_error(*refused)
        names = await self._names([*(t.topic_id for t in r.topics or []),
                                   *(t.topic_id for t in r.forgotten_topics_data or [])])
        wanted = [TopicPartition(names[t.topic_id], p.partition_index)
                  for t in r.topics or [] for p in t.partitions or [] if t.topic_id in names]
        forgotten = [TopicPartition(names[t.topic_id], p) for t in r.forgotten_topics_data or []
                     for p in t.partitions or [] if t.topic_id in names]
        unknown = [(t.topic_id, p.partition_index) for t in r.topics or [] for p in t.partitions or []
                   if t.topic_id not in names]
        has_acks = any(p.acknowledgement_batches for t in r.topics or [] for p in t.partitions or [])
        if r.share_session_epoch == 0 and has_acks:
            return _fetch_error(ErrorCode.INVALID_REQUEST, "Acknowledgements on the request opening a share session.")
        d: SessionDecision = self.broker.share_sessions.on_fetch(group, member, r.share_session_epoch,
                                                                 wanted, forgotten)
        if d.error != ErrorCode.NONE or d.session is None:
            return _fetch_error(d.error, d.message)
        sm = self.broker.share_manager
        if r.share_session_epoch == 0:
            await sm.revalidate(group, d.session.partitions)
        acks = await self._acks(req, group, member, r.topics or [], names)
        if d.closing:
            await sm.release(group, member, d.session.partitions)
            return self._fetch_answer(group, {tp: (b"", (), ErrorCode.NONE) for tp in acks}, acks, unknown)
        allowed = self.broker.authz.topic_allowed
        readable = {tp for tp in d.session.partitions if allowed(req, AclOperation.READ, tp.topic)}
        deadline = asyncio.get_running_loop().time() + max(r.max_wait_ms, 0) / 1000
        max_records = r.max_records if req.api_version >= 1 and r.max_records > 0 else 0
        while True:
            got: dict[TopicPartition, tuple[bytes, tuple[AcquiredRange, ...], ErrorCode]] = {}
            budget = r.max_bytes if r.max_bytes > 0 else 2**31 - 1
            for tp in sorted(d.session.partitions):
                if tp not in readable:
                    got[tp] = (b"", (), ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                    continue
                a = await sm.acquire(group, member, tp, budget, max_records, now_ms())
                budget = max(budget - len(a.records), 0)
                got[tp] = (a.records, a.ranges, a.error)
            if any(v[1] or v[2] != ErrorCode.NONE for v in got.values()) or acks \
                    or asyncio.get_running_loop().time() >= deadline:
                break
            await asyncio.sleep(RECHECK_S)
        return self._fetch_answer(group, got, acks, unknown)

    def _fetch_answer(self, group: str, got: dict[TopicPartition, tuple[bytes, tuple[AcquiredRange, ...], ErrorCode]],
                      acks: dict[TopicPartition, tuple[ErrorCode, str | None]],
                      unknown: list[tuple[uuid.UUID | None, int]]) -> ShareFetchResponse:
        ids = self.broker.metadata_cache.topic_ids
        answers: list[tuple[uuid.UUID | None, _FP]] = []
        for tp in sorted(set(got) | set(acks)):
            records, ranges, code = got.get(tp, (b"", (), ErrorCode.NONE))
            ack_code, ack_msg = acks.get(tp, (ErrorCode.NONE, None))
            answers.append((ids.get(tp.topic, uuid.UUID(int=0)), _FP(
                partition_index=tp.partition, error_code=int(code), error_message=None,
                acknowledge_error_code=int(ack_code), acknowledge_error_message=ack_msg,
                current_leader=self._leader(tp, code), records=records,
                acquired_records=[_FP.AcquiredRecords(first_offset=a.first_offset, last_offset=a.last_offset,
                                                      delivery_count=a.delivery_count) for a in ranges])))
        for tid, p in unknown:
            answers.append((tid, _FP(
                partition_index=p, error_code=int(ErrorCode.UNKNOWN_TOPIC_ID), error_message=None,
                acknowledge_error_code=0, acknowledge_error_message=None,
                current_leader=_FP.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1), records=b"", acquired_records=[])))
        return ShareFetchResponse(
            throttle_time_ms=0, error_code=0, error_message=None,
            acquisition_lock_timeout_ms=self.broker.share_manager.config_for(group).partition.lock_duration_ms,
            responses=[_FT(topic_id=tid, partitions=parts) for tid, parts in by_topic(answers).items()],
            node_endpoints=[])

    def _leader(self, tp: TopicPartition, code: ErrorCode) -> _FP.LeaderIdAndEpoch:
        if code != ErrorCode.NOT_LEADER_OR_FOLLOWER:
            return _FP.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
        state = self.broker.metadata_cache.partition(tp)
        if state is None:
            return _FP.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
        return _FP.LeaderIdAndEpoch(leader_id=state.leader, leader_epoch=state.leader_epoch)

    async def handle_share_acknowledge(self, req: DecodedRequest) -> ShareAcknowledgeResponse:
        r = req.body(ShareAcknowledgeRequest)
        group, member = r.group_id or "", r.member_id or ""
        refused = self._refusal(req, group, member)
        if refused is not None:
            return _ack_error(*refused)
        d = self.broker.share_sessions.on_acknowledge(group, member, r.share_session_epoch)
        if d.error != ErrorCode.NONE or d.session is None:
            return _ack_error(d.error, d.message)
        names = await self._names([t.topic_id for t in r.topics or []])
        acks = await self._acks(req, group, member, r.topics or [], names)
        if d.closing:
            await self.broker.share_manager.release(group, member, d.session.partitions)
        ids = self.broker.metadata_cache.topic_ids
        topics = by_topic((ids.get(tp.topic, uuid.UUID(int=0)), _AP(
            partition_index=tp.partition, error_code=int(code), error_message=msg,
            current_leader=_AP.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)))
            for tp, (code, msg) in sorted(acks.items()))
        return ShareAcknowledgeResponse(throttle_time_ms=0, error_code=0, error_message=None,
                                        responses=[_AT(topic_id=t, partitions=ps) for t, ps in topics.items()],
                                        node_endpoints=[])


    # ---------------------------------------------------------------- the coordinator's offsets admin
    def _state_store(self) -> ShareStateStore:
        store = self.broker.share_manager.store
        if store is None:
            raise PrahaError("the share state store is not connected yet", ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return store

    async def _zk(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        return await asyncio.get_running_loop().run_in_executor(None, partial(fn, *args, **kwargs))

    async def _group_refusal(self, req: DecodedRequest, gid: str, op: AclOperation, needs_empty: bool,
                             creates: bool = False) -> tuple[Refusal | None, dict[TopicPartition, ShareSnapshot]]:
        """The group-level refusal of an offsets request, and the group's durable state."""
        if not self.broker.authz.group_allowed(req, op, gid):
            return Refusal(ErrorCode.GROUP_AUTHORIZATION_FAILED, f"Not authorized to access group {gid}."), {}
        groups = self.broker.share_groups
        coordinator = groups.check(gid) if gid else ErrorCode.INVALID_REQUEST
        if coordinator != ErrorCode.NONE:
            return group_refusal(gid, coordinator, False, 0, True, needs_empty), {}
        held = groups.groups.get(gid)
        other = held is None and groups.other_group_type(gid)
        try:
            snaps = {} if other else await self._zk(self._state_store().of_group, gid)
        except Exception as e:  # noqa: BLE001 - ZooKeeper unreachable: the client retries
            log.warning("share group %s: state not read (%s)", gid, e)
            return Refusal(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(e)), {}
        members = len(held.group.members) if held is not None else 0
        exists = creates or held is not None or bool(snaps)
        return group_refusal(gid, coordinator, other, members, exists, needs_empty), snaps

    def _high_watermark(self, tp: TopicPartition) -> int:
        p = self.broker.replica_manager.partitions.get(tp)
        return -1 if p is None else int(p.high_watermark)

    async def handle_describe_share_group_offsets(self, req: DecodedRequest) -> DescribeShareGroupOffsetsResponse:
        """Each group's share partitions: start offset, the leader epoch that wrote the state,
        and (v1) the lag, from the durable state; a partition without state is uninitialised."""
        await self.broker.load_topic_ids()
        authz, ids, cache = self.broker.authz, self.broker.metadata_cache.topic_ids, self.broker.metadata_cache
        out = []
        for g in req.body(DescribeShareGroupOffsetsRequest).groups or []:
            gid = g.group_id or ""
            refused, snaps = await self._group_refusal(req, gid, AclOperation.DESCRIBE, needs_empty=False)
            if refused is not None:
                out.append(_DO(group_id=gid, topics=[], error_code=int(refused.error), error_message=refused.message))
                continue
            if g.topics is None:  # every share partition with state, of the topics the principal may describe
                wanted = {tp.topic: sorted(p.partition for p in snaps if p.topic == tp.topic) for tp in snaps
                          if authz.topic_allowed(req, AclOperation.DESCRIBE, tp.topic)}
            else:
                wanted = {t.topic_name: list(t.partitions or []) for t in g.topics}
            topics = []
            for name, parts in sorted(wanted.items()):
                rows = []
                for p in parts:
                    tp = TopicPartition(name, p)
                    code = ErrorCode.NONE
                    if not authz.topic_allowed(req, AclOperation.DESCRIBE, name):
                        code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    elif cache.partition(tp) is None:
                        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    snap = snaps.get(tp) if code == ErrorCode.NONE else None
                    start = UNINITIALIZED if snap is None else snap.start_offset
                    rows.append(_DO.DescribeShareGroupOffsetsResponseTopic.DescribeShareGroupOffsetsResponsePartition(
                        partition_index=p, start_offset=start, leader_epoch=UNINITIALIZED if snap is None
                        else snap.leader_epoch, lag=-1 if snap is None else lag(start, snap.batches,
                                                                                self._high_watermark(tp)),
                        error_code=int(code), error_message=None))
                topics.append(_DO.DescribeShareGroupOffsetsResponseTopic(
                    topic_name=name, topic_id=ids.get(name, uuid.UUID(int=0)), partitions=rows))
            out.append(_DO(group_id=gid, topics=topics, error_code=0, error_message=None))
        return DescribeShareGroupOffsetsResponse(throttle_time_ms=0, groups=out)

    async def handle_alter_share_group_offsets(self, req: DecodedRequest) -> AlterShareGroupOffsetsResponse:
        """New start offsets for share partitions of a group without members (Kafka's reset):
        each partition's state becomes that start offset with nothing in flight."""
        r = req.body(AlterShareGroupOffsetsRequest)
        gid = r.group_id or ""
        await self.broker.load_topic_ids()
        refused, _ = await self._group_refusal(req, gid, AclOperation.READ, needs_empty=True, creates=True)
        if refused is not None:
            return AlterShareGroupOffsetsResponse(throttle_time_ms=0, error_code=int(refused.error),
                                                  error_message=refused.message, responses=[])
        authz, cache = self.broker.authz, self.broker.metadata_cache
        _AO = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic
        topics, changed = [], 0
        for t in r.topics or []:
            rows = []
            for p in t.partitions or []:
                tp = TopicPartition(t.topic_name, p.partition_index)
                code, message = ErrorCode.NONE, None
                state = cache.partition(tp)
                bad = start_offset_refusal(p.start_offset)
                if not authz.topic_allowed(req, AclOperation.READ, tp.topic):
                    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif state is None:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif bad is not None:
                    code, message = bad.error, bad.message
                else:
                    try:
                        await self._zk(self._state_store().replace, gid, tp,
                                       ShareSnapshot(p.start_offset, (), state.leader_epoch))
                        changed += 1
                    except Exception as e:  # noqa: BLE001 - ZooKeeper unreachable: not altered
                        code, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, str(e)
                rows.append(_AO.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=int(code), error_message=message))
            topics.append(_AO(topic_name=t.topic_name, topic_id=cache.topic_ids.get(t.topic_name, uuid.UUID(int=0)),
                              partitions=rows))
        self.broker.share_manager.forget(gid)
        log.info("share group %s: start offsets of %d share partitions altered", gid, changed)
        return AlterShareGroupOffsetsResponse(throttle_time_ms=0, error_code=0, error_message=None, responses=topics)

    async def handle_delete_share_group_offsets(self, req: DecodedRequest) -> DeleteShareGroupOffsetsResponse:
        """Forget a group's share state of whole topics (the group must have no members); the
        next member starts there as share.auto.offset.reset says."""
        r = req.body(DeleteShareGroupOffsetsRequest)
        gid = r.group_id or ""
        await self.broker.load_topic_ids()
        refused, _ = await self._group_refusal(req, gid, AclOperation.DELETE, needs_empty=True)
        if refused is not None:
            return DeleteShareGroupOffsetsResponse(throttle_time_ms=0, error_code=int(refused.error),
                                                   error_message=refused.message, responses=[])
        authz, cache = self.broker.authz, self.broker.metadata_cache
        _TO = DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic
        topics = []
        for t in r.topics or []:
            code, message = ErrorCode.NONE, None
            if not authz.topic_allowed(req, AclOperation.READ, t.topic_name):
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not cache.contains_topic(t.topic_name):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                try:
                    await self._zk(self._state_store().delete_topic, gid, t.topic_name)
                except Exception as e:  # noqa: BLE001 - ZooKeeper unreachable: not deleted
                    code, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, str(e)
            topics.append(_TO(topic_name=t.topic_name, topic_id=cache.topic_ids.get(t.topic_name, uuid.UUID(int=0)),
                              error_code=int(code), error_message=message))
        self.broker.share_manager.forget(gid)
        log.info("share group %s: share state of %d topics deleted", gid,
                 sum(1 for t in topics if t.error_code == 0))
        return DeleteShareGroupOffsetsResponse(throttle_time_ms=0, error_code=0, error_message=None, responses=topics)


def _assignment(a: Assignment, names: dict[uuid.UUID, str]) -> ShareGroupDescribeResponse_Assignment:
    return ShareGroupDescribeResponse.Assignment(topic_partitions=[
        ShareGroupDescribeResponse.TopicPartitions(topic_id=tid, topic_name=names.get(tid, ""),
                                                   partitions=sorted(parts))
        for tid, parts in sorted(a.items(), key=lambda kv: kv[0].bytes)])


def _empty(gid: str, code: ErrorCode, message: str | None) -> _DG:
    return _DG(error_code=int(code), error_message=message, group_id=gid, group_state="Dead", group_epoch=-1,
               assignment_epoch=-1, assignor_name="", members=[], authorized_operations=NOT_REQUESTED)


def _fetch_error(code: ErrorCode, message: str | None) -> ShareFetchResponse:
    return ShareFetchResponse(throttle_time_ms=0, error_code=int(code), error_message=message,
                              acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])


def _ack_error(code: ErrorCode, message: str | None) -> ShareAcknowledgeResponse:
    return ShareAcknowledgeResponse(throttle_time_ms=0, error_code=int(code), error_message=message, responses=[],
                                    node_endpoints=[])
