"""The hand-written FetchResponse codec matches kafka-python's generated one byte for
byte (v4-v12), through the same `encode_response` call the network layer makes."""
from __future__ import annotations

import os

import pytest
from kafka.protocol.consumer import FetchResponse

from praha.broker.handlers.data import EncodedFetchResponse
from praha.protocol.fetch import FetchedPartition, parse_fetch_response_v12
from praha.protocol.framing import RequestHeader, encode_response

PD = FetchResponse.FetchableTopicResponse.PartitionData

TOPICS = [
    ("alpha", [FetchedPartition(0, 0, 10, 10, 0, os.urandom(300)),
               FetchedPartition(3, 1, 7, 7, 2, b""),
               FetchedPartition(1, 6, -1, -1, -1, b"")]),
    ("béta-ünïcode", [FetchedPartition(2, 0, 1 << 40, 1 << 40, 5, os.urandom(70_000))]),
    ("empty", []),
    ("txn", [FetchedPartition(0, 0, 20, 12, 0, os.urandom(100), [(7, 3), (9, 11)]),
             FetchedPartition(1, 0, 5, 5, 0, b"", [])]),
]


def kafka_python(version: int, topics) -> bytes:
    resp = FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[
        FetchResponse.FetchableTopicResponse(topic=t, partitions=[
            PD(partition_index=p.partition, error_code=p.error_code, high_watermark=p.high_watermark,
               last_stable_offset=p.last_stable_offset, log_start_offset=p.log_start_offset,
               aborted_transactions=None if p.aborted_transactions is None else [
                   PD.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in p.aborted_transactions],
               preferred_read_replica=-1, records=p.records)
            for p in parts]) for t, parts in topics])
    return bytes(encode_response(RequestHeader(1, version, 4242), resp, version))


@pytest.mark.parametrize("version", range(4, 13))
def test_encoding_is_byte_identical_to_kafka_python(version):
    ours = bytes(encode_response(RequestHeader(1, version, 4242), EncodedFetchResponse(TOPICS), version))
    assert ours == kafka_python(version, TOPICS)


def test_kafka_python_decodes_our_encoding():
    data = bytes(encode_response(RequestHeader(1, 12, 9), EncodedFetchResponse(TOPICS), 12))
    resp = FetchResponse.decode(data[4:], version=12, header=True)
    got = [(t.topic, [(p.partition_index, p.error_code, p.high_watermark, p.log_start_offset, p.records)
                      for p in t.partitions]) for t in resp.responses]
    assert got == [(t, [(p.partition, p.error_code, p.high_watermark, p.log_start_offset, p.records)
                        for p in parts]) for t, parts in TOPICS]


def test_v12_parser_reads_kafka_python_encoding_with_tagged_fields_and_aborted_transactions():
    AT = PD.AbortedTransaction
    resp = FetchResponse(throttle_time_ms=5, error_code=0, session_id=77, responses=[
        FetchResponse.FetchableTopicResponse(topic="t", partitions=[
            PD(partition_index=4, error_code=0, high_watermark=99, last_stable_offset=98, log_start_offset=3,
               aborted_transactions=[AT(producer_id=1, first_offset=2), AT(producer_id=3, first_offset=4)],
               preferred_read_replica=2, records=b"abc",
               diverging_epoch=PD.EpochEndOffset(epoch=3, end_offset=50),
               current_leader=PD.LeaderIdAndEpoch(leader_id=1, leader_epoch=3)),
            PD(partition_index=5, error_code=6, high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
               aborted_transactions=None, preferred_read_replica=-1, records=None),
        ])])
    body = bytes(encode_response(RequestHeader(1, 12, 3), resp, 12))[4:]
    error, parts = parse_fetch_response_v12(memoryview(body))
    assert error == 0
    assert [(t, p.partition, p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset,
             None if p.records is None else bytes(p.records)) for t, p in parts] == [
        ("t", 4, 0, 99, 98, 3, b"abc"), ("t", 5, 6, -1, -1, -1, None)]


def test_v12_parser_round_trips_our_encoding_without_copying_records():
    body = memoryview(bytes(encode_response(RequestHeader(1, 12, 3), EncodedFetchResponse(TOPICS), 12)))[4:]
    _, parts = parse_fetch_response_v12(body)
    assert [(t, p.partition, bytes(p.records)) for t, p in parts] == [
        (t, p.partition, p.records) for t, ps in TOPICS for p in ps]
    assert isinstance(parts[0][1].records, memoryview)


def test_follower_fetch_request_is_byte_identical_to_kafka_python():
    from kafka.protocol.consumer import FetchRequest

    from praha.protocol.fetch import FollowerFetch, encode_fetch_request_v12
    from praha.protocol.framing import encode_request

    FT, FP = FetchRequest.FetchTopic, FetchRequest.FetchTopic.FetchPartition
    topics = [("orders", [FollowerFetch(0, 7, 123456789012, 5, 1 << 20), FollowerFetch(3, 0, 0, 0, 65536)]),
              ("é-topic", [FollowerFetch(2, 2**31 - 1, 2**62, 2**40, 1)])]
    for topics_ in (topics, []):
        req = FetchRequest(replica_id=4, max_wait_ms=500, min_bytes=1, max_bytes=10 << 20, isolation_level=0,
                           session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                           topics=[FT(topic=t, partitions=[FP(partition=f.partition,
                                                                 current_leader_epoch=f.current_leader_epoch,
                                                                 fetch_offset=f.fetch_offset, last_fetched_epoch=-1,
                                                                 log_start_offset=f.log_start_offset,
                                                                 partition_max_bytes=f.partition_max_bytes)
                                                              for f in parts]) for t, parts in topics_])
        want = encode_request(req, 12, 99, "replica-fetcher-4")
        assert encode_fetch_request_v12(99, "replica-fetcher-4", 4, 500, 1, 10 << 20, topics_) == want
