"""The generated decoders against hostile input: bounded varints, tagged fields read in place."""
from __future__ import annotations

import struct

import pytest
from kafka.protocol.metadata import ApiVersionsResponse

from praha.protocol.controller_apis import LeaderAndIsrRequest
from praha.protocol.errors import MalformedRequestError
from praha.protocol.framing import RequestHeader, decode_request, encode_request, encode_response

METADATA_V12_HEADER = struct.pack(">hhih", 3, 12, 21, 0) + b"\x00"


def test_varints_longer_than_five_bytes_are_rejected():
    # topics = compact array whose length is 0 spelled in 6 bytes; unbounded decoding
    # would read it as a null array and carry on.
    body = METADATA_V12_HEADER + b"\x80\x80\x80\x80\x80\x00" + b"\x00\x00\x00"
    with pytest.raises(MalformedRequestError, match="varint"):
        decode_request(body)


@pytest.mark.timeout(20)
def test_long_varint_runs_fail_fast():
    """4 MB of 0xFF took minutes with the quadratic decoder; now the 6th byte stops it."""
    with pytest.raises(MalformedRequestError):
        decode_request(METADATA_V12_HEADER + b"\xff" * (4 << 20))


def leader_and_isr_with_tag(tag_bytes: bytes) -> bytes:
    R = LeaderAndIsrRequest
    req = R(controller_id=1, controller_epoch=1, broker_epoch=1, topic_states=[
        R.LeaderAndIsrTopicState(topic_name="t", partition_states=[
            R.LeaderAndIsrTopicState.LeaderAndIsrPartitionState(
                partition_index=0, leader=1, isr=[1], replicas=[1], adding_replicas=[],
                removing_replicas=[], is_new=False)])], live_leaders=[])
    body = bytearray(encode_request(req, 4, 5, "c")[4:])
    # the partition state ends "...is_new(1 byte) tags(0x00)" followed by the topic's
    # tags, the empty live_leaders array (0x01) and the request's tags
    assert body[-5:] == b"\x00\x00\x00\x01\x00"
    return bytes(body[:-4]) + tag_bytes + b"\x00\x01\x00"


def test_unknown_tags_are_skipped():
    decoded = decode_request(leader_and_isr_with_tag(b"\x02\x07\x03xyz\x09\x00"))
    part = decoded.request.topic_states[0].partition_states[0]
    assert (part.partition_index, part.leader, part.isr, part.is_new) == (0, 1, [1], False)
    assert decoded.request.live_leaders == []


@pytest.mark.parametrize("tags", [b"\x01\x07\x09xyz", b"\x02\x07\x00", b"\x01\x80\x80\x80\x80\x80\x01\x00"])
def test_broken_tags_are_malformed(tags):
    with pytest.raises(MalformedRequestError):
        decode_request(leader_and_isr_with_tag(tags))


def test_known_tagged_fields_still_decode():
    A = ApiVersionsResponse
    resp = A(error_code=0, api_keys=[A.ApiVersion(api_key=18, min_version=0, max_version=3)],
             throttle_time_ms=0, finalized_features_epoch=42,
             supported_features=[A.SupportedFeatureKey(name="metadata.version", min_version=1, max_version=7)])
    frame = bytes(encode_response(RequestHeader(18, 3, 1), resp, 3))
    back = A.decode(frame[4:], version=3, header=True)
    assert back.finalized_features_epoch == 42
    assert back.supported_features[0].name == "metadata.version"
    assert back.supported_features[0].max_version == 7
