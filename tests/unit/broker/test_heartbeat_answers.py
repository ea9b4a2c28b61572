"""The heartbeat answer both group protocols build: assignment sorted by topic id, then partition,
and encoded the same way by ConsumerGroupHeartbeat and ShareGroupHeartbeat."""
import uuid

import pytest

from praha.broker.handlers.heartbeat_answers import heartbeat_answer, heartbeat_refusal
from praha.errors import ErrorCode
from praha.protocol.messages.gen.groups import ConsumerGroupHeartbeatResponse
from praha.protocol.messages.gen.share import ShareGroupHeartbeatResponse

A, B = uuid.UUID(int=2), uuid.UUID(int=1)


@pytest.mark.parametrize("response", [ConsumerGroupHeartbeatResponse, ShareGroupHeartbeatResponse])
def test_assignment_sorted_and_unchanged_is_null(response):
    r = heartbeat_answer(response, "m", 3, 5000, {A: frozenset({2, 0}), B: frozenset({1})})
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m", 3, 5000)
    assert [(t.topic_id, t.partitions) for t in r.assignment.topic_partitions] == [(B, [1]), (A, [0, 2])]
    assert heartbeat_answer(response, "m", 3, 5000, None).assignment is None


@pytest.mark.parametrize("response", [ConsumerGroupHeartbeatResponse, ShareGroupHeartbeatResponse])
def test_refusal(response):
    r = heartbeat_refusal(response, ErrorCode.FENCED_MEMBER_EPOCH, "stale")
    assert (r.error_code, r.error_message, r.member_id, r.member_epoch, r.assignment) == (
        int(ErrorCode.FENCED_MEMBER_EPOCH), "stale", None, -1, None)
