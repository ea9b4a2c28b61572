"""The heartbeat answer KIP-848's ConsumerGroupHeartbeat and KIP-932's ShareGroupHeartbeat share:
the same fields, the assignment by topic id with its partitions sorted, one builder for both."""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import TypeVar

from praha.errors import ErrorCode
from praha.protocol.messages.gen.groups import ConsumerGroupHeartbeatResponse
from praha.protocol.messages.gen.share import ShareGroupHeartbeatResponse

_Heartbeat = TypeVar("_Heartbeat", ConsumerGroupHeartbeatResponse, ShareGroupHeartbeatResponse)


def heartbeat_refusal(response: type[_Heartbeat], code: ErrorCode, message: str | None) -> _Heartbeat:
    """An error answer of `response` (ConsumerGroupHeartbeatResponse or ShareGroupHeartbeatResponse)."""
    return response(throttle_time_ms=0, error_code=int(code), error_message=message, member_id=None,
                    member_epoch=-1, heartbeat_interval_ms=-1, assignment=None)


def heartbeat_answer(response: type[_Heartbeat], member_id: str | None, member_epoch: int, interval_ms: int,
                     assignment: Mapping[uuid.UUID, Iterable[int]] | None) -> _Heartbeat:
    """A successful answer; `assignment` None: unchanged since the member's last answer."""
    wire = None if assignment is None else response.Assignment(topic_partitions=[
        response.Assignment.TopicPartitions(topic_id=tid, partitions=sorted(parts))
        for tid, parts in sorted(assignment.items(), key=lambda kv: kv[0].bytes)])
    return response(throttle_time_ms=0, error_code=0, error_message=None, member_id=member_id,
                    member_epoch=member_epoch, heartbeat_interval_ms=interval_ms, assignment=wire)
