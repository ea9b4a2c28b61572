"""kafka-python's own client requests, byte for byte, decode through praha's framing."""
from __future__ import annotations

import struct

import pytest
from kafka.protocol.metadata import ApiVersionsResponse, MetadataResponse
from kafka.record import MemoryRecords
from protocol_samples import client_requests, controller_requests, kafka_python_frame, record_batch

from praha.protocol.framing import decode_request, encode_response, parse_frame_size
from praha.protocol.produce import ProduceRequestView, produce_fields
from praha.protocol.registry import APIS, api_versions_response


@pytest.mark.parametrize(("name", "request_", "version"), client_requests() + controller_requests(),
                         ids=lambda x: x if isinstance(x, str) else "")
def test_kafka_python_frames_decode(name, request_, version):
    frame = kafka_python_frame(request_, version, correlation_id=4711, client_id="kafka-python-3")
    size = parse_frame_size(frame[:4])
    assert size == len(frame) - 4
    decoded = decode_request(frame[4:])
    assert (decoded.api_key, decoded.api_version) == (request_.API_KEY, version)
    assert decoded.header.correlation_id == 4711
    assert decoded.header.client_id == "kafka-python-3"
    # what kafka-python itself decodes from the same bytes
    theirs = type(request_).decode(frame[4:], version=version, header=True)
    if isinstance(decoded.request, ProduceRequestView):  # parsed by hand: records stay in the frame
        assert produce_fields(decoded.request) == produce_fields(theirs)
        return
    # praha's generated class, and it says exactly what the bytes said
    assert type(decoded.request) is APIS[request_.API_KEY].request
    assert bytes(decoded.request.encode(version)) == bytes(frame[4 + decoded.header.size:])



def test_produce_v9_records_survive_as_bytes():
    _, produce, version = next(r for r in client_requests() if r[0] == "Produce v9")
    decoded = decode_request(kafka_python_frame(produce, version)[4:])
    part = decoded.request.topic_data[0].partition_data[0]
    assert bytes(part.records) == record_batch()
    batch = MemoryRecords(bytes(part.records)).next_batch()
    assert [r.value for r in batch] == [b"value-0", b"value-1", b"value-2"]
    assert decoded.expects_response
    produce.acks = 0
    assert not decode_request(kafka_python_frame(produce, version)[4:]).expects_response


def test_kafka_python_reads_praha_responses():
    decoded = decode_request(kafka_python_frame(*client_requests()[0][1:], correlation_id=3)[4:])
    frame = bytes(encode_response(decoded.header, api_versions_response({18: (0, 3), 3: (0, 12)}), 3))
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    resp = ApiVersionsResponse.decode(frame[4:], version=3, header=True)
    assert resp.header.correlation_id == 3
    assert resp.error_code == 0

    M = MetadataResponse
    meta = M(throttle_time_ms=0, brokers=[M.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=9092, rack=None)],
             cluster_id="praha", controller_id=1, topics=[])
    frame = bytes(encode_response(decoded.header, meta, 12))
    back = M.decode(frame[4:], version=12, header=True)
    assert back.header.correlation_id == 3
    assert back.brokers[0].port == 9092
