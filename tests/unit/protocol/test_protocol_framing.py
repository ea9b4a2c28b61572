"""Request framing: sizes, headers, and every way a frame can be wrong."""
from __future__ import annotations

import struct
import tracemalloc

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest

from praha.errors import ConfigError, ErrorCode, InvalidRequestError
from praha.protocol.controller_apis import ControlledShutdownRequest, LeaderAndIsrRequest
from praha.protocol.errors import (
    MalformedRequestError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from praha.protocol.framing import (
    MAX_REQUEST_BYTES,
    RequestHeader,
    decode_request,
    encode_request,
    encode_request_header,
    encode_response,
    parse_frame_size,
    parse_request_header,
)
from praha.protocol.registry import (
    APIS,
    api_versions_response,
    check_supported,
    schema_versions,
    unsupported_version_response,
)


def metadata_frame(correlation_id: int = 9, version: int = 12) -> bytes:
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="orders")],
                          allow_auto_topic_creation=False)
    return encode_request(req, version, correlation_id, "tester")


# -- frame size ---------------------------------------------------------------------------

def test_frame_size_accepts_up_to_max():
    assert MAX_REQUEST_BYTES == 104857600
    assert parse_frame_size(struct.pack(">i", 0)) == 0
    assert parse_frame_size(struct.pack(">i", 1234)) == 1234
    assert parse_frame_size(struct.pack(">i", MAX_REQUEST_BYTES)) == MAX_REQUEST_BYTES
    assert parse_frame_size(struct.pack(">i", 10), max_bytes=10) == 10


@pytest.mark.parametrize("size", [-1, -2**31, MAX_REQUEST_BYTES + 1, 2**31 - 1])
def test_frame_size_rejects_negative_and_oversized(size):
    with pytest.raises(InvalidRequestError):
        parse_frame_size(struct.pack(">i", size))


@pytest.mark.parametrize("prefix", [b"", b"\x00", b"\x00\x00\x00", b"\x00" * 5])
def test_frame_size_needs_four_bytes(prefix):
    with pytest.raises(InvalidRequestError):
        parse_frame_size(prefix)


def test_oversized_frame_is_rejected_without_allocating():
    tracemalloc.start()
    try:
        for size in (2**31 - 1, MAX_REQUEST_BYTES + 1, -1):
            with pytest.raises(InvalidRequestError):
                parse_frame_size(struct.pack(">i", size))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


# -- headers ------------------------------------------------------------------------------

def test_header_v2_for_flexible_versions_and_v1_otherwise():
    h = parse_request_header(metadata_frame(5, 12)[4:])
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id, h.header_version) == (3, 12, 5, "tester", 2)
    assert h.size == 8 + 2 + len("tester") + 1
    h = parse_request_header(metadata_frame(6, 8)[4:])
    assert (h.api_version, h.header_version, h.size) == (8, 1, 8 + 2 + 6)


def test_header_v0_for_controlled_shutdown_v0():
    frame = encode_request(ControlledShutdownRequest(broker_id=4), 0, 3, "ignored")
    assert frame == struct.pack(">ihhii", 12, 7, 0, 3, 4)
    d = decode_request(frame[4:])
    assert (d.header.header_version, d.header.client_id, d.request.broker_id) == (0, "", 4)


def test_null_client_id_reads_as_empty_and_bad_utf8_is_tolerated():
    body = bytes(MetadataRequest(topics=None).encode(version=8))
    h = struct.pack(">hhih", 3, 8, 1, -1)
    assert decode_request(h + body).header.client_id == ""
    h = struct.pack(">hhih", 3, 8, 1, 2) + b"\xff\xfe"
    assert decode_request(h + body).header.client_id == "\ufffd\ufffd"


def test_unknown_header_tags_are_skipped():
    body = bytes(MetadataRequest(topics=None, allow_auto_topic_creation=True).encode(version=12))
    header = struct.pack(">hhih", 3, 12, 77, 1) + b"c" + b"\x02" + b"\x05\x03abc" + b"\x06\x00"
    d = decode_request(header + body)
    assert d.header.correlation_id == 77
    assert d.request.topics is None


def test_encode_request_header_matches_kafka_python():
    req = MetadataRequest[12](topics=None, allow_auto_topic_creation=True)
    req.with_header(correlation_id=31, client_id="kp")
    theirs = bytes(req.encode(header=True, framed=True))
    assert encode_request(MetadataRequest(topics=None, allow_auto_topic_creation=True), 12, 31, "kp") == theirs
    assert encode_request_header(3, 12, 31, "kp") == theirs[4:4 + 13]


# -- decode errors ------------------------------------------------------------------------

@pytest.mark.parametrize("body", [b"", b"\x00", b"\x00\x03\x00\x0c\x00\x00\x00"])
def test_too_short_for_a_header(body):
    with pytest.raises(MalformedRequestError) as e:
        decode_request(body)
    assert e.value.header is None


def test_every_truncation_is_a_malformed_request():
    frame = encode_request(LeaderAndIsrRequest(controller_id=1, controller_epoch=2, broker_epoch=3, topic_states=[
        LeaderAndIsrRequest.LeaderAndIsrTopicState(topic_name="t", partition_states=[
            LeaderAndIsrRequest.LeaderAndIsrTopicState.LeaderAndIsrPartitionState(
                partition_index=0, leader=1, isr=[1], replicas=[1], adding_replicas=[], removing_replicas=[])])],
        live_leaders=[]), 4, 1234, "c")
    body = frame[4:]
    assert decode_request(body).request.topic_states[0].topic_name == "t"
    for n in range(8, len(body)):
        with pytest.raises(MalformedRequestError) as e:
            decode_request(body[:n])
        assert e.value.correlation_id == 1234


def test_garbage_body_after_valid_header():
    header = struct.pack(">hhih", 3, 12, 8, 0) + b"\x00"
    for junk in (b"\xff" * 7, b"\x80" * 30, b"\x05\xff\xfe\xfd\xfc"):
        with pytest.raises(MalformedRequestError) as e:
            decode_request(header + junk)
        assert e.value.correlation_id == 8


def test_invalid_utf8_in_a_body_string():
    header = struct.pack(">hhih", 3, 4, 8, 0)
    body = struct.pack(">ih", 1, 2) + b"\xff\xfe" + b"\x01"
    with pytest.raises(MalformedRequestError):
        decode_request(header + body)


def test_unknown_api_key_carries_correlation_id():
    with pytest.raises(UnknownApiKeyError) as e:
        decode_request(struct.pack(">hhih", 999, 0, 4242, 2) + b"cl")
    assert (e.value.correlation_id, e.value.api_key, e.value.header.client_id) == (4242, 999, "cl")
    assert e.value.code == ErrorCode.INVALID_REQUEST
    with pytest.raises(UnknownApiKeyError):  # known to praha, not served by this broker
        decode_request(metadata_frame()[4:], supported={18: (0, 3)})


def test_unsupported_version_carries_correlation_id():
    with pytest.raises(UnsupportedVersionError) as e:
        decode_request(metadata_frame(17, 12)[4:], supported={3: (0, 9), 18: (0, 3)})
    assert (e.value.correlation_id, e.value.api_version, e.value.is_api_versions) == (17, 12, False)
    assert e.value.code == ErrorCode.UNSUPPORTED_VERSION
    assert isinstance(e.value, InvalidRequestError)
    with pytest.raises(UnsupportedVersionError):  # beyond what the schema knows
        decode_request(struct.pack(">hhih", 4, 8, 1, 0) + b"\x00")


def test_unsupported_api_versions_gets_a_v0_answer():
    """KIP-511: a client asking ApiVersions at a version the server lacks gets a v0
    answer with UNSUPPORTED_VERSION and the ranges, in response header v0."""
    supported = {18: (0, 3), 3: (0, 12)}
    body = struct.pack(">hhih", 18, 127, 55, 3) + b"new" + b"\x00" + b"\x04abc\x02x\x00"
    with pytest.raises(UnsupportedVersionError) as e:
        decode_request(body, supported)
    err = e.value
    assert err.is_api_versions
    assert err.correlation_id == 55
    assert err.header.client_id == "new"
    frame = bytes(encode_response(err.header, unsupported_version_response(supported), 0))
    assert frame[4:8] == struct.pack(">i", 55)
    resp = ApiVersionsResponse.decode(frame[4:], version=3, header=True)
    assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys} == supported


# -- responses and the registry -----------------------------------------------------------

def test_api_versions_response_round_trips_and_is_reusable():
    supported = {18: (0, 4), 3: (0, 12), 4: (4, 4)}
    resp = api_versions_response(supported)
    for v in (0, 3, 4, 3):
        frame = bytes(encode_response(RequestHeader(18, v, 7), resp, v))
        assert frame[4:8] == struct.pack(">i", 7)
        assert frame[8:10] == b"\x00\x00"  # header v0: the error code follows at once
        back = ApiVersionsResponse.decode(frame[4:], version=v, header=True)
        assert {k.api_key: (k.min_version, k.max_version) for k in back.api_keys} == supported


def test_check_supported_rejects_what_the_schemas_cannot_do():
    with pytest.raises(ConfigError):
        check_supported({999: (0, 1)})
    with pytest.raises(ConfigError):
        check_supported({4: (0, 8)})
    with pytest.raises(ConfigError):
        check_supported({0: (0, 9)})  # Kafka 4's Produce starts at v3
    assert check_supported(schema_versions()) == schema_versions()


def test_registry_covers_the_brief():
    assert set(APIS) == {18, 3, 0, 1, 2, 23, 19, 20, 37, 60, 43, 45, 46, 10, 4, 5, 6, 7, 22,
                         8, 9, 11, 12, 13, 14, 15, 16, 42, 47,  # + the consumer-group APIs
                         32, 33, 44,  # the config APIs
                         21, 35, 61,  # DeleteRecords, DescribeLogDirs, DescribeProducers
                         17, 36,  # SaslHandshake, SaslAuthenticate
                         29, 30, 31, 50, 51,  # the ACL and SCRAM credential APIs
                         48, 49,  # DescribeClientQuotas, AlterClientQuotas
                         34,  # AlterReplicaLogDirs
                         27,  # WriteTxnMarkers
                         24, 25, 26, 28, 65, 66,  # the transaction coordinator's APIs
                         68, 69,  # KIP-848's ConsumerGroupHeartbeat, ConsumerGroupDescribe (served)
                         76, 77, 78, 79, 90, 91, 92}  # the share-group APIs
    for key, spec in APIS.items():
        assert spec.request.API_KEY == spec.response.API_KEY == key
        assert spec.min_version <= spec.max_version


def test_every_api_decodes_a_default_request_at_every_version():
    for key, spec in APIS.items():
        for v in range(spec.min_version, spec.max_version + 1):
            frame = encode_request(spec.request(), v, correlation_id=v, client_id="x")
            d = decode_request(frame[4:])
            assert (d.api_key, d.api_version, d.header.correlation_id) == (key, v, v)


def test_api_versions_request_decodes():
    req = ApiVersionsRequest(client_software_name="librdkafka", client_software_version="2.16")
    d = decode_request(encode_request(req, 3, 1, "rdkafka")[4:])
    assert d.request.client_software_name == "librdkafka"
    assert d.expects_response
