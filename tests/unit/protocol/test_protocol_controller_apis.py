"""Controller API definitions: field names, round trips with headers, and byte layouts built
by hand from Kafka's protocol description (so a definition typo cannot hide behind a round
trip through the same definition)."""
from __future__ import annotations

import struct

import pytest

from praha.protocol.controller_apis import (
    CONTROLLED_SHUTDOWN_VERSION,
    LEADER_AND_ISR_VERSION,
    STOP_REPLICA_VERSION,
    UPDATE_METADATA_VERSION,
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from praha.protocol.framing import decode_request, decode_response, encode_request, encode_response
from praha.protocol.header import RequestHeader
from praha.protocol.messages.reflect import fields_of

ALL = [
    (LeaderAndIsrRequest, LeaderAndIsrResponse, 4, LEADER_AND_ISR_VERSION),
    (StopReplicaRequest, StopReplicaResponse, 5, STOP_REPLICA_VERSION),
    (UpdateMetadataRequest, UpdateMetadataResponse, 6, UPDATE_METADATA_VERSION),
    (ControlledShutdownRequest, ControlledShutdownResponse, 7, CONTROLLED_SHUTDOWN_VERSION),
]


def field_tree(fields, version):
    out = {}
    for f in fields:
        if version not in f.versions:
            continue
        if f.is_struct and f.is_array:
            out[f.name] = field_tree(f.fields, version)
        else:
            out[f.name] = f"[]{f.element}" if f.is_array else f.type
    return out


def values_at(obj, fields, version):
    """The field values a message carries at `version` (objects hold every version's fields)."""
    out = {}
    for f in fields:
        if version not in f.versions:
            continue
        v = getattr(obj, f.name)
        out[f.name] = [values_at(x, f.fields, version) for x in v] if f.is_struct and f.is_array else v
    return out


# The snake_case names handlers use; the praha versions only.
EXPECTED_FIELDS = {
    "LeaderAndIsrRequest": {
        "controller_id": "int32", "controller_epoch": "int32", "broker_epoch": "int64",
        "topic_states": {"topic_name": "string", "partition_states": {
            "partition_index": "int32", "controller_epoch": "int32", "leader": "int32",
            "leader_epoch": "int32", "isr": "[]int32", "partition_epoch": "int32",
            "replicas": "[]int32", "adding_replicas": "[]int32", "removing_replicas": "[]int32",
            "is_new": "bool"}},
        "live_leaders": {"broker_id": "int32", "host_name": "string", "port": "int32"},
    },
    "LeaderAndIsrResponse": {
        "error_code": "int16",
        "partition_errors": {"topic_name": "string", "partition_index": "int32", "error_code": "int16"},
    },
    "StopReplicaRequest": {
        "controller_id": "int32", "controller_epoch": "int32", "broker_epoch": "int64",
        "topic_states": {"topic_name": "string", "partition_states": {
            "partition_index": "int32", "leader_epoch": "int32", "delete_partition": "bool"}},
    },
    "StopReplicaResponse": {
        "error_code": "int16",
        "partition_errors": {"topic_name": "string", "partition_index": "int32", "error_code": "int16"},
    },
    "UpdateMetadataRequest": {
        "controller_id": "int32", "controller_epoch": "int32", "broker_epoch": "int64",
        "topic_states": {"topic_name": "string", "partition_states": {
            "partition_index": "int32", "controller_epoch": "int32", "leader": "int32",
            "leader_epoch": "int32", "isr": "[]int32", "zk_version": "int32",
            "replicas": "[]int32", "offline_replicas": "[]int32"}},
        "live_brokers": {"id": "int32", "endpoints": {
            "port": "int32", "host": "string", "listener": "string", "security_protocol": "int16"},
            "rack": "string"},
    },
    "UpdateMetadataResponse": {"error_code": "int16"},
    "ControlledShutdownRequest": {"broker_id": "int32", "broker_epoch": "int64"},
    "ControlledShutdownResponse": {
        "error_code": "int16",
        "remaining_partitions": {"topic_name": "string", "partition_index": "int32"},
    },
}


@pytest.mark.parametrize(("req", "resp", "key", "version"), ALL)
def test_keys_versions_and_field_names(req, resp, key, version):
    assert req.API_KEY == resp.API_KEY == key
    assert req.MAX_VERSION >= version
    assert resp.MAX_VERSION >= version  # Kafka 3.9 defines newer ones too
    assert req.is_flexible(version)
    assert resp.is_flexible(version)
    for cls in (req, resp):
        assert field_tree(fields_of(cls), version) == EXPECTED_FIELDS[cls.__name__]


def leader_and_isr() -> LeaderAndIsrRequest:
    R = LeaderAndIsrRequest
    PS = R.LeaderAndIsrTopicState.LeaderAndIsrPartitionState
    return R(
        controller_id=1, controller_epoch=7, broker_epoch=4294967296,
        topic_states=[R.LeaderAndIsrTopicState(topic_name="orders", partition_states=[
            PS(partition_index=0, controller_epoch=7, leader=1, leader_epoch=3, isr=[1, 2],
               partition_epoch=12, replicas=[1, 2, 3], adding_replicas=[3],
               removing_replicas=[], is_new=True),
            PS(partition_index=1, controller_epoch=6, leader=-1, leader_epoch=0, isr=[],
               partition_epoch=0, replicas=[2], adding_replicas=[], removing_replicas=[],
               is_new=False),
        ])],
        live_leaders=[R.LeaderAndIsrLiveLeader(broker_id=1, host_name="127.0.0.1", port=9092)],
    )


def update_metadata() -> UpdateMetadataRequest:
    R = UpdateMetadataRequest
    PS = R.UpdateMetadataTopicState.UpdateMetadataPartitionState
    B = R.UpdateMetadataBroker
    return R(
        controller_id=2, controller_epoch=3, broker_epoch=99,
        topic_states=[R.UpdateMetadataTopicState(topic_name="t", partition_states=[
            PS(partition_index=0, controller_epoch=3, leader=-2, leader_epoch=5, isr=[2],
               zk_version=8, replicas=[1, 2], offline_replicas=[1])])],
        live_brokers=[
            B(id=2, endpoints=[B.UpdateMetadataEndpoint(port=9093, host="localhost",
                                                        listener="PLAINTEXT", security_protocol=0)],
              rack=None),
            B(id=3, endpoints=[], rack="r1"),
        ],
    )


def stop_replica() -> StopReplicaRequest:
    R = StopReplicaRequest
    TS = R.StopReplicaTopicState
    return R(controller_id=1, controller_epoch=2, broker_epoch=5, topic_states=[
        TS(topic_name="gone", partition_states=[
            TS.StopReplicaPartitionState(partition_index=4, leader_epoch=-2, delete_partition=True)])])


def samples():
    R = LeaderAndIsrResponse
    S = StopReplicaResponse
    C = ControlledShutdownResponse
    return [
        (leader_and_isr(), LEADER_AND_ISR_VERSION),
        (R(error_code=0, partition_errors=[R.LeaderAndIsrPartitionError(
            topic_name="orders", partition_index=0, error_code=11)]), LEADER_AND_ISR_VERSION),
        (stop_replica(), STOP_REPLICA_VERSION),
        (S(error_code=0, partition_errors=[S.StopReplicaPartitionError(
            topic_name="gone", partition_index=4, error_code=0)]), STOP_REPLICA_VERSION),
        (update_metadata(), UPDATE_METADATA_VERSION),
        (UpdateMetadataResponse(error_code=11), UPDATE_METADATA_VERSION),
        (ControlledShutdownRequest(broker_id=3, broker_epoch=77), CONTROLLED_SHUTDOWN_VERSION),
        (C(error_code=0, remaining_partitions=[C.RemainingPartition(topic_name="t", partition_index=1)]),
         CONTROLLED_SHUTDOWN_VERSION),
    ]


@pytest.mark.parametrize(("msg", "version"), samples(),
                         ids=lambda x: type(x).__name__ if not isinstance(x, int) else str(x))
def test_round_trip_with_header(msg, version):
    if type(msg).__name__.endswith("Request"):
        frame = encode_request(msg, version, correlation_id=123, client_id="controller-1")
        decoded = decode_request(frame[4:])
        assert decoded.header.correlation_id == 123
        back = decoded.request
    else:
        frame = bytes(encode_response(RequestHeader(msg.API_KEY, version, 123), msg, version))
        assert struct.unpack(">i", frame[4:8])[0] == 123
        back = decode_response(type(msg), frame[4:], version)
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    assert values_at(back, fields_of(back), version) == values_at(msg, fields_of(msg), version)


@pytest.mark.parametrize(("msg", "version"), [s for s in samples() if type(s[0]).__name__.endswith("Request")],
                         ids=lambda x: type(x).__name__ if not isinstance(x, int) else str(x))
def test_requests_through_framing(msg, version):
    frame = encode_request(msg, version, correlation_id=77, client_id="controller-1")
    decoded = decode_request(frame[4:])
    assert decoded.header.correlation_id == 77
    assert decoded.header.client_id == "controller-1"
    assert decoded.header.header_version == 2
    assert values_at(decoded.request, fields_of(msg), version) == values_at(msg, fields_of(msg), version)


@pytest.mark.parametrize(("req", "resp", "key", "version"), ALL)
def test_every_declared_version_round_trips(req, resp, key, version):
    """Lower versions are declared too (0..max); each must at least be self-consistent."""
    for v in range(version + 1):
        msg = req()
        frame = encode_request(msg, v, correlation_id=v)
        decoded = decode_request(frame[4:])
        assert decoded.api_version == v
        assert decoded.header.header_version == (0 if (key, v) == (7, 0) else 2 if req.is_flexible(v) else 1)


# -- hand-built wire layouts (Kafka protocol guide: compact strings/arrays are length+1
#    as unsigned varints, every struct in a flexible version ends in a tagged-field count).

def cstr(s: str) -> bytes:
    raw = s.encode()
    return bytes([len(raw) + 1]) + raw


def carr(items: list[bytes]) -> bytes:
    return bytes([len(items) + 1]) + b"".join(items)


def cints(xs: list[int]) -> bytes:
    return carr([struct.pack(">i", x) for x in xs])


TAGS = b"\x00"


def test_leader_and_isr_v4_layout():
    p0 = (struct.pack(">iiii", 0, 7, 1, 3) + cints([1, 2]) + struct.pack(">i", 12) + cints([1, 2, 3])
          + cints([3]) + cints([]) + b"\x01" + TAGS)
    p1 = (struct.pack(">iiii", 1, 6, -1, 0) + cints([]) + struct.pack(">i", 0) + cints([2])
          + cints([]) + cints([]) + b"\x00" + TAGS)
    expected = (struct.pack(">iiq", 1, 7, 4294967296)
                + carr([cstr("orders") + carr([p0, p1]) + TAGS])
                + carr([struct.pack(">i", 1) + cstr("127.0.0.1") + struct.pack(">i", 9092) + TAGS])
                + TAGS)
    assert bytes(leader_and_isr().encode(version=4)) == expected


def test_update_metadata_v6_layout():
    part = (struct.pack(">iiii", 0, 3, -2, 5) + cints([2]) + struct.pack(">i", 8)
            + cints([1, 2]) + cints([1]) + TAGS)
    b2 = (struct.pack(">i", 2)
          + carr([struct.pack(">i", 9093) + cstr("localhost") + cstr("PLAINTEXT") + struct.pack(">h", 0) + TAGS])
          + b"\x00" + TAGS)  # null compact string
    b3 = struct.pack(">i", 3) + carr([]) + cstr("r1") + TAGS
    expected = (struct.pack(">iiq", 2, 3, 99) + carr([cstr("t") + carr([part]) + TAGS])
                + carr([b2, b3]) + TAGS)
    assert bytes(update_metadata().encode(version=6)) == expected


def test_stop_replica_v3_layout():
    expected = (struct.pack(">iiq", 1, 2, 5)
                + carr([cstr("gone") + carr([struct.pack(">ii", 4, -2) + b"\x01" + TAGS]) + TAGS])
                + TAGS)
    assert bytes(stop_replica().encode(version=3)) == expected


def test_controlled_shutdown_v3_layout_and_response():
    assert bytes(ControlledShutdownRequest(broker_id=3, broker_epoch=77).encode(version=3)) == \
        struct.pack(">iq", 3, 77) + TAGS
    C = ControlledShutdownResponse
    resp = C(error_code=0, remaining_partitions=[C.RemainingPartition(topic_name="t", partition_index=1)])
    expected = struct.pack(">h", 0) + carr([cstr("t") + struct.pack(">i", 1) + TAGS]) + TAGS
    assert bytes(resp.encode(version=3)) == expected


def test_responses_use_flexible_header_v1():
    frame = bytes(encode_response(RequestHeader(6, 6, 41), UpdateMetadataResponse(error_code=0), 6))
    assert frame == struct.pack(">ii", 8, 41) + TAGS + struct.pack(">h", 0) + TAGS
    frame = bytes(encode_response(RequestHeader(6, 5, 41), UpdateMetadataResponse(error_code=0), 5))
    assert frame == struct.pack(">ii", 6, 41) + struct.pack(">h", 0)
