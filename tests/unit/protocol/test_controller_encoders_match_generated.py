"""The controller's direct LeaderAndIsr v4 / UpdateMetadata v6 encoders write exactly the bytes
the generated codec writes for the same request (the generated codec is itself compared with
kafka-python in test_wire_codec.py), and the lazily built wire objects still look like the
eagerly built ones to anyone who reads them.

Random requests come from a seeded generator rather than hypothesis: the same value ranges
and example counts, without hypothesis' per-example overhead (this file took 48 s, most of
it drawing examples)."""
from __future__ import annotations

import random

import pytest

from praha.common import BrokerInfo, EndPoint, TopicPartition
from praha.protocol import controller_wire as wire
from praha.protocol.controller_apis import LeaderAndIsrRequest, UpdateMetadataRequest
from praha.protocol.controller_requests import (
    LeaderAndIsrRequestData,
    PartitionLeaderState,
    UpdateMetadataRequestData,
)
from praha.protocol.framing import decode_request, encode_request
from praha.protocol.messages.runtime import WireFormatError

EXAMPLES = 300
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
_EDGES32 = [INT32[0], INT32[1], -1, 0, 127, 128, 16383, 16384]
_TEXT = "abcxyz-._é漢\x00 "


def _int32(r: random.Random) -> int:
    """Small values (one-byte varints and their edges) and the whole int32 range."""
    pick = r.random()
    if pick < 0.5:
        return r.randint(-3, 200)
    if pick < 0.7:
        return r.choice(_EDGES32)
    return r.randint(*INT32)


def _ids(r: random.Random) -> tuple[int, ...]:
    return tuple(_int32(r) for _ in range(r.randint(0, 6)))


def _text(r: random.Random, max_size: int) -> str:
    return "".join(r.choice(_TEXT) for _ in range(r.randint(0, max_size)))


def _states(r: random.Random, offline: bool = False) -> list[PartitionLeaderState]:
    names = [_text(r, 12) for _ in range(r.randint(1, 4))]
    return [PartitionLeaderState(
        tp=TopicPartition(r.choice(names), _int32(r)), controller_epoch=_int32(r), leader=_int32(r),
        leader_epoch=_int32(r), isr=_ids(r), zk_version=_int32(r), replicas=_ids(r),
        adding_replicas=() if offline else _ids(r), removing_replicas=() if offline else _ids(r),
        is_new=False if offline else r.random() < 0.5, offline_replicas=_ids(r) if offline else (),
    ) for _ in range(r.randint(0, 40))]


def _brokers(r: random.Random) -> list[BrokerInfo]:
    return [BrokerInfo(
        r.randint(*INT32),
        tuple(EndPoint(_text(r, 10), r.randint(0, 65535), r.choice(["PLAINTEXT", "INTERNAL", "", "é"]),
                       r.choice(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "OTHER"]))
              for _ in range(r.randint(1, 3))),
        r.choice([None, _text(r, 5)]),
        r.randint(*INT64),
    ) for _ in range(r.randint(0, 4))]


def _plain_leader_and_isr(req) -> bytes:
    return bytes(encode_request(wire._leader_and_isr_to_wire(req), wire.LEADER_AND_ISR_VERSION, 7, "praha"))


def test_leader_and_isr_direct_encoding_is_the_generated_codecs():
    r = random.Random(4)
    for _ in range(EXAMPLES):
        req = LeaderAndIsrRequestData(_int32(r), _int32(r), r.randint(*INT64), _states(r), _brokers(r))
        obj, version = wire.request_to_wire(req)
        assert version == wire.LEADER_AND_ISR_VERSION
        assert wire._fast_leader_and_isr_body(req) is not None
        assert bytes(encode_request(obj, version, 7, "praha")) == _plain_leader_and_isr(req)


def test_shared_update_metadata_direct_encoding_is_the_generated_codecs():
    r = random.Random(6)
    for _ in range(EXAMPLES):
        parts, live = _states(r, offline=True), _brokers(r)
        cid, cepoch, bepoch = _int32(r), _int32(r), r.randint(*INT64)
        req = UpdateMetadataRequestData(cid, cepoch, bepoch, wire.SharedPartitions(parts), live)
        obj, version = wire.request_to_wire(req)
        plain = UpdateMetadataRequest(controller_id=cid, controller_epoch=cepoch, broker_epoch=bepoch,
                                      topic_states=wire._um_topic_states(parts), live_brokers=wire._um_brokers(live))
        assert bytes(encode_request(obj, version, 3, "praha")) == bytes(encode_request(plain, version, 3, "praha"))


def _req(n=30):
    parts = [PartitionLeaderState(TopicPartition(f"t{i % 3}", i), 2, i % 4, 7, (1, 2), 3, (1, 2, 3),
                                  (3,), (), i % 2 == 0)
             for i in range(n)]
    return LeaderAndIsrRequestData(1, 2, 99, parts, [BrokerInfo(1, (EndPoint("h", 9092),))])


def test_lazy_leader_and_isr_fields_are_the_eager_ones_and_round_trip():
    req = _req()
    obj, version = wire.request_to_wire(req)
    eager = wire._leader_and_isr_to_wire(req)
    assert obj.topic_states == eager.topic_states
    assert obj.live_leaders == eager.live_leaders
    body = bytes(encode_request(obj, version, 1, "praha"))[4:]
    back = wire.leader_and_isr_from_wire(decode_request(body).request)
    # grouped by topic on the wire: the same states, topic by topic
    assert back.partitions == [s for t in ("t0", "t1", "t2") for s in req.partitions if s.tp.topic == t]
    assert (back.controller_id, back.controller_epoch, back.broker_epoch, back.live_leaders) == (
        req.controller_id, req.controller_epoch, req.broker_epoch, req.live_leaders)


def test_lazy_leader_and_isr_other_versions_and_replaced_fields_go_through_the_generated_codec():
    req = _req()
    obj, _ = wire.request_to_wire(req)
    assert bytes(obj.encode(version=3)) == bytes(wire._leader_and_isr_to_wire(req).encode(version=3))
    obj2, version = wire.request_to_wire(req)
    obj2.topic_states = obj2.topic_states[:1]  # read, then replaced: what the object holds is sent
    expect = LeaderAndIsrRequest(controller_id=1, controller_epoch=2, broker_epoch=99,
                                 topic_states=obj2.topic_states, live_leaders=obj2.live_leaders)
    assert bytes(encode_request(obj2, version, 1, "praha")) == bytes(encode_request(expect, version, 1, "praha"))


def test_values_the_direct_encoder_does_not_take_fall_back_to_the_generated_codec():
    req = _req(3)
    # integers go through the same struct formats: a bool packs as the generated codec packs it
    loose = LeaderAndIsrRequestData(1, 2, 99, [PartitionLeaderState(TopicPartition("t", 0), 2, True, 7, [1, 2], 3,
                                                                    (1,))], req.live_leaders)
    obj, version = wire.request_to_wire(loose)
    assert bytes(encode_request(obj, version, 7, "praha")) == _plain_leader_and_isr(loose)
    # a topic name that is not a str is left to the generated codec, which refuses it
    odd = LeaderAndIsrRequestData(1, 2, 99, [PartitionLeaderState(TopicPartition(5, 0), 2, 1, 7, (1, 2), 3, (1,))],
                                  req.live_leaders)
    assert wire._fast_leader_and_isr_body(odd) is None
    obj, version = wire.request_to_wire(odd)
    with pytest.raises(WireFormatError, match="int 5"):
        encode_request(obj, version, 7, "praha")


def test_states_shared_by_a_batchs_requests_are_encoded_once_and_identically():
    req = _req(40)
    cache: dict = {}
    reqs = [LeaderAndIsrRequestData(1, 2, epoch, parts, req.live_leaders, encoded_states=cache)
            for epoch, parts in ((7, req.partitions), (8, req.partitions[::2]), (9, req.partitions[5:]))]
    for r in reqs:
        obj, version = wire.request_to_wire(r)
        assert bytes(encode_request(obj, version, 7, "praha")) == _plain_leader_and_isr(r)
    assert len(cache) == 40
    assert all(v[0] is s for s in req.partitions for k, v in cache.items() if k == id(s))
    # the cache is no part of the request's value
    assert reqs[0] == LeaderAndIsrRequestData(1, 2, 7, req.partitions, req.live_leaders)
