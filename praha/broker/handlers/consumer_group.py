"""KIP-848's consumer-group APIs on the wire: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

The handler turns the request into the coordinator's `HeartbeatRequest` (client id and host
from the connection), makes sure the topic ids of every topic are known first (a group's
assignment is by topic id), and answers with the decision once its records are written.
ConsumerGroupDescribe reads the group as its coordinator holds it: epochs, assignor,
each member's current and target assignment, by topic id and name.
"""
from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from praha.broker.handlers.authorization import NOT_REQUESTED
from praha.broker.handlers.heartbeat_answers import heartbeat_answer, heartbeat_refusal
from praha.coordinator.group.consumer.heartbeat import HeartbeatRequest
from praha.coordinator.group.consumer.model import Assignment, ConsumerGroup
from praha.coordinator.group.coordinator import GroupCoordinator
from praha.errors import ErrorCode
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.groups import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponse_Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from praha.protocol.messages.runtime import ZERO_UUID
from praha.security.acl import AclOperation, ResourceType

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

log = logging.getLogger(__name__)

_HB = ConsumerGroupHeartbeatResponse
_DG = ConsumerGroupDescribeResponse.DescribedGroup
_DM = _DG.Member
#: ConsumerGroupDescribe v1's member types (KIP-1099): a classic member is one kept after an upgrade
MEMBER_TYPE_CONSUMER = 1
MEMBER_TYPE_CLASSIC = 0


def heartbeat_request(r: ConsumerGroupHeartbeatRequest, version: int, client_id: str,
                      client_host: str) -> HeartbeatRequest:
    """The wire request as the coordinator's decision takes it."""
    owned = None if r.topic_partitions is None else tuple(
        (t.topic_id or ZERO_UUID, tuple(t.partitions or ())) for t in r.topic_partitions)
    return HeartbeatRequest(
        r.group_id or "", r.member_id or "", r.member_epoch, r.instance_id, r.rack_id, r.rebalance_timeout_ms,
        None if r.subscribed_topic_names is None else tuple(r.subscribed_topic_names),
        r.subscribed_topic_regex if version >= 1 else None, r.server_assignor, owned, client_id, client_host, version)


class ConsumerGroupApis:
    def __init__(self, broker: Broker):
        self.broker = broker

    @property
    def coordinator(self) -> GroupCoordinator:
        return self.broker.group_coordinator

    async def handle_consumer_group_heartbeat(self, req: DecodedRequest) -> ConsumerGroupHeartbeatResponse:
        r = req.body(ConsumerGroupHeartbeatRequest)
        if not self.broker.authz.group_allowed(req, AclOperation.READ, r.group_id or ""):
            return heartbeat_refusal(_HB, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
        await self.broker.load_topic_ids()
        out = await self.coordinator.consumer_group_heartbeat(
            heartbeat_request(r, req.api_version, req.header.client_id or "", req.client_host))
        a = out.answer
        if out.error != ErrorCode.NONE or a is None:
            return heartbeat_refusal(_HB, out.error, out.message)
        return heartbeat_answer(_HB, a.member_id, a.member_epoch, a.heartbeat_interval_ms, a.assignment)

    async def handle_consumer_group_describe(self, req: DecodedRequest) -> ConsumerGroupDescribeResponse:
        r = req.body(ConsumerGroupDescribeRequest)
        authz = self.broker.authz
        out = []
        for gid in r.group_ids or []:
            if not authz.group_allowed(req, AclOperation.DESCRIBE, gid):
                out.append(_empty(gid, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
                continue
            code, message, g = self.coordinator.find_consumer_group(gid)
            if g is None:
                out.append(_empty(gid, code, message))
            else:
                ops = authz.authorized_operations(req, ResourceType.GROUP, gid) \
                    if r.include_authorized_operations else NOT_REQUESTED
                out.append(self._described(g, req.api_version, ops))
        return ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=out)

    def _described(self, g: ConsumerGroup, version: int, ops: int) -> _DG:
        names = {t.topic_id: t.name for t in self.broker.consumer_group_topics().values()}
        assignor = g.preferred_assignor(self.coordinator.config.consumer.default_assignor)
        members = [_DM(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                       member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                       subscribed_topic_names=list(m.subscribed_topic_names),
                       subscribed_topic_regex=m.subscribed_topic_regex,
                       assignment=_assignment(m.assigned, names),
                       target_assignment=_assignment(g.target_of(mid), names),
                       member_type=MEMBER_TYPE_CLASSIC if m.classic is not None else MEMBER_TYPE_CONSUMER)
                   for mid, m in sorted(g.members.items())]
        return _DG(error_code=0, error_message=None, group_id=g.group_id, group_state=g.state.value,
                   group_epoch=g.group_epoch, assignment_epoch=g.assignment_epoch, assignor_name=assignor,
                   members=members, authorized_operations=ops)


def _assignment(a: Assignment, names: dict[uuid.UUID, str]) -> ConsumerGroupDescribeResponse_Assignment:
    return _DM.Assignment(topic_partitions=[
        _DM.Assignment.TopicPartitions(topic_id=tid, topic_name=names.get(tid, ""), partitions=sorted(parts))
        for tid, parts in sorted(a.items(), key=lambda kv: kv[0].bytes)])


def _empty(gid: str, code: ErrorCode, message: str | None) -> _DG:
    return _DG(error_code=int(code), error_message=message, group_id=gid, group_state="", group_epoch=-1,
               assignment_epoch=-1, assignor_name="", members=[], authorized_operations=NOT_REQUESTED)
