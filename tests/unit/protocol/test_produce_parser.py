"""ProduceRequest parsed by hand: the same fields as kafka-python's decoder, records left
in the frame (writable when the frame is), and every cut or lying frame refused."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.producer import ProduceRequest as P

from praha.protocol.errors import MalformedRequestError
from praha.protocol.framing import decode_request, encode_request
from praha.protocol.produce import MalformedProduceError, ProduceRequestView, parse_produce_request, produce_fields
from praha.testing.fuzz import examples

VERSIONS = range(3, 10)


def request(topics, transactional_id=None, acks=-1, timeout_ms=1500):
    return P(transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms, topic_data=[
        P.TopicProduceData(name=name, partition_data=[
            P.TopicProduceData.PartitionProduceData(index=i, records=r) for i, r in parts])
        for name, parts in topics])



names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
records = st.one_of(st.none(), st.binary(max_size=300))
topics = st.lists(st.tuples(names, st.lists(st.tuples(st.integers(-1, 2**31 - 1), records), max_size=4)), max_size=4)


@settings(max_examples=examples(150), deadline=None)
@given(topics=topics, txn=st.one_of(st.none(), names), acks=st.sampled_from([-1, 0, 1]),
       version=st.sampled_from(list(VERSIONS)))
def test_same_fields_as_kafka_python(topics, txn, acks, version):
    req = request(topics, txn, acks)
    frame = encode_request(req, version, 7)
    theirs = P.decode(frame[4:], version=version, header=True)
    ours = decode_request(bytearray(frame[4:])).request
    assert produce_fields(ours) == produce_fields(theirs)
    assert ours.expect_response() == (acks != 0)


@pytest.mark.parametrize("version", VERSIONS)
def test_records_are_writable_views_of_a_bytearray_frame(version):
    body = bytearray(encode_request(request([("t", [(0, b"x" * 100), (1, b"y" * 50)])]), version, 1)[4:])
    parts = decode_request(body).request.topic_data[0].partition_data
    view = parts[0].records
    assert isinstance(view, memoryview)
    assert not view.readonly
    view[0:1] = b"Z"  # the frame itself changes: no copy was made
    assert body.count(b"Z" + b"x" * 99) == 1
    assert bytes(parts[1].records) == b"y" * 50
    assert decode_request(bytes(body)).request.topic_data[0].partition_data[0].records.readonly


@pytest.mark.parametrize("version", VERSIONS)
def test_every_cut_of_a_frame_is_refused_with_its_header(version):
    body = encode_request(request([("orders", [(0, b"r" * 40), (3, None)])], "tx"), version, 99)[4:]
    header_size = decode_request(body).header.size
    for n in range(header_size, len(body)):
        with pytest.raises(MalformedRequestError) as e:
            decode_request(body[:n])
        assert e.value.correlation_id == 99


@pytest.mark.parametrize("version", [3, 9])
def test_lengths_that_lie_are_refused(version):
    flexible = version >= 9
    # records claimed 1000 bytes long, 5 present
    if flexible:
        body = (
            b"\x00"
            + struct.pack(">hi", 1, 100)
            + b"\x02"
            + b"\x02t"
            + b"\x02"
            + struct.pack(">i", 0)
            + b"\xe9\x07abcde"
        )
    else:
        body = (
            struct.pack(">hhi", -1, 1, 100)
            + struct.pack(">ih", 1, 1)
            + b"t"
            + struct.pack(">iii", 1, 0, 1000)
            + b"abcde"
        )
    with pytest.raises(MalformedProduceError, match="runs past the end"):
        parse_produce_request(body, 0, version)
    # a negative array length other than a null marker
    bad = struct.pack(">hhi", -1, 1, 100) + struct.pack(">i", -5)
    with pytest.raises(MalformedProduceError, match="array length"):
        parse_produce_request(bad, 0, 3)
    # a topic name that is not UTF-8
    bad = struct.pack(">hhi", -1, 1, 100) + struct.pack(">ih", 1, 2) + b"\xff\xfe" + struct.pack(">i", 0)
    with pytest.raises(MalformedProduceError, match="UTF-8"):
        parse_produce_request(bad, 0, 3)


def test_v10_and_v11_parse_as_v9_and_later_versions_are_left_to_the_generated_codec():
    with pytest.raises(MalformedProduceError):
        parse_produce_request(b"", 0, 2)
    for version in (10, 11):  # the same request layout as v9
        frame = encode_request(request([("t", [(0, b"abc")])]), version, 1)
        decoded = decode_request(frame[4:]).request
        assert type(decoded) is ProduceRequestView
        assert bytes(decoded.topic_data[0].partition_data[0].records) == b"abc"
    frame = encode_request(request([("t", [(0, b"abc")])]), 12, 1)
    from praha.protocol.messages.gen.produce_fetch import ProduceRequest
    assert type(decode_request(frame[4:]).request) is ProduceRequest  # the generated codec
