"""The controller's direct LeaderAndIsr v4 / UpdateMetadata v6 encoders write exactly the bytes
kafka-python writes for the same request, and the lazily built wire objects still look like
the eagerly built ones to anyone who reads them."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from praha.common import BrokerInfo, EndPoint, TopicPartition
from praha.protocol import controller_wire as wire
from praha.protocol.controller_apis import LeaderAndIsrRequest, UpdateMetadataRequest
from praha.protocol.controller_requests import (
    LeaderAndIsrRequestData,
    PartitionLeaderState,
    UpdateMetadataRequestData,
)
from praha.protocol.framing import decode_request, encode_request

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
small = st.integers(-3, 200)
ids = st.lists(st.one_of(small, int32), max_size=6).map(tuple)
topics = st.text(min_size=0, max_size=12)


@st.composite
def states(draw, offline=False):
    n = draw(st.integers(0, 40))
    names = draw(st.lists(topics, min_size=1, max_size=4))
    out = []
    for _ in range(n):
        out.append(PartitionLeaderState(
            tp=TopicPartition(draw(st.sampled_from(names)), draw(st.one_of(small, int32))),
            controller_epoch=draw(st.one_of(small, int32)), leader=draw(st.one_of(small, int32)),
            leader_epoch=draw(st.one_of(small, int32)), isr=draw(ids), zk_version=draw(st.one_of(small, int32)),
            replicas=draw(ids), adding_replicas=() if offline else draw(ids),
            removing_replicas=() if offline else draw(ids), is_new=False if offline else draw(st.booleans()),
            offline_replicas=draw(ids) if offline else (),
        ))
    return out


brokers = st.lists(st.builds(
    lambda i, eps, rack, epoch: BrokerInfo(i, tuple(eps), rack, epoch),
    int32,
    st.lists(st.builds(EndPoint, st.text(max_size=10), st.integers(0, 65535),
                       st.sampled_from(["PLAINTEXT", "INTERNAL", "", "é"]),
                       st.sampled_from(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "OTHER"])),
             min_size=1, max_size=3),
    st.one_of(st.none(), st.text(max_size=5)),
    int64,
), max_size=4)


def _plain_leader_and_isr(req) -> bytes:
    return bytes(encode_request(wire._leader_and_isr_to_wire(req), wire.LEADER_AND_ISR_VERSION, 7, "praha"))


@settings(max_examples=300, deadline=None)
@given(states(), brokers, int32, int32, int64)
def test_leader_and_isr_direct_encoding_is_kafka_pythons(parts, leaders, cid, cepoch, bepoch):
    req = LeaderAndIsrRequestData(cid, cepoch, bepoch, parts, leaders)
    obj, version = wire.request_to_wire(req)
    assert version == wire.LEADER_AND_ISR_VERSION
    assert wire._fast_leader_and_isr_body(req) is not None
    assert bytes(encode_request(obj, version, 7, "praha")) == _plain_leader_and_isr(req)


@settings(max_examples=300, deadline=None)
@given(states(offline=True), brokers, int32, int32, int64)
def test_shared_update_metadata_direct_encoding_is_kafka_pythons(parts, live, cid, cepoch, bepoch):
    req = UpdateMetadataRequestData(cid, cepoch, bepoch, wire.SharedPartitions(parts), live)
    obj, version = wire.request_to_wire(req)
    plain = UpdateMetadataRequest(controller_id=cid, controller_epoch=cepoch, broker_epoch=bepoch,
                                  topic_states=wire._um_topic_states(parts), live_brokers=wire._um_brokers(live))
    assert bytes(encode_request(obj, version, 3, "praha")) == bytes(encode_request(plain, version, 3, "praha"))


def _req(n=30):
    parts = [PartitionLeaderState(TopicPartition(f"t{i % 3}", i), 2, i % 4, 7, (1, 2), 3, (1, 2, 3), (3,), (), i % 2 == 0)
             for i in range(n)]
    return LeaderAndIsrRequestData(1, 2, 99, parts, [BrokerInfo(1, (EndPoint("h", 9092),))])


def test_lazy_leader_and_isr_fields_are_the_eager_ones_and_round_trip():
    req = _req()
    obj, version = wire.request_to_wire(req)
    eager = wire._leader_and_isr_to_wire(req)
    assert obj.topic_states == eager.topic_states and obj.live_leaders == eager.live_leaders
    body = bytes(encode_request(obj, version, 1, "praha"))[4:]
    back = wire.leader_and_isr_from_wire(decode_request(body).request)
    # grouped by topic on the wire: the same states, topic by topic
    assert back.partitions == [s for t in ("t0", "t1", "t2") for s in req.partitions if s.tp.topic == t]
    assert (back.controller_id, back.controller_epoch, back.broker_epoch, back.live_leaders) == (
        req.controller_id, req.controller_epoch, req.broker_epoch, req.live_leaders)


def test_lazy_leader_and_isr_other_versions_and_replaced_fields_go_through_kafka_python():
    req = _req()
    obj, _ = wire.request_to_wire(req)
    assert bytes(obj.encode(version=3)) == bytes(wire._leader_and_isr_to_wire(req).encode(version=3))
    obj2, version = wire.request_to_wire(req)
    obj2.topic_states = obj2.topic_states[:1]  # read, then replaced: what the object holds is sent
    expect = LeaderAndIsrRequest(controller_id=1, controller_epoch=2, broker_epoch=99,
                                 topic_states=obj2.topic_states, live_leaders=obj2.live_leaders)
    assert bytes(encode_request(obj2, version, 1, "praha")) == bytes(encode_request(expect, version, 1, "praha"))


def test_values_the_direct_encoder_does_not_take_fall_back_to_kafka_python():
    req = _req(3)
    # integers go through the same struct formats: a bool packs as kafka-python packs it
    loose = LeaderAndIsrRequestData(1, 2, 99, [PartitionLeaderState(TopicPartition("t", 0), 2, True, 7, [1, 2], 3,
                                                                    (1,))], req.live_leaders)
    obj, version = wire.request_to_wire(loose)
    assert bytes(encode_request(obj, version, 7, "praha")) == _plain_leader_and_isr(loose)
    # a topic name that is not a str is left to kafka-python (which writes str() of it)
    odd = LeaderAndIsrRequestData(1, 2, 99, [PartitionLeaderState(TopicPartition(5, 0), 2, 1, 7, (1, 2), 3, (1,))],
                                  req.live_leaders)
    assert wire._fast_leader_and_isr_body(odd) is None
    obj, version = wire.request_to_wire(odd)
    assert bytes(encode_request(obj, version, 7, "praha")) == _plain_leader_and_isr(odd)


def test_states_shared_by_a_batchs_requests_are_encoded_once_and_identically():
    req = _req(40)
    cache: dict = {}
    reqs = [LeaderAndIsrRequestData(1, 2, epoch, parts, req.live_leaders, encoded_states=cache)
            for epoch, parts in ((7, req.partitions), (8, req.partitions[::2]), (9, req.partitions[5:]))]
    for r in reqs:
        obj, version = wire.request_to_wire(r)
        assert bytes(encode_request(obj, version, 7, "praha")) == _plain_leader_and_isr(r)
    assert len(cache) == 40 and all(v[0] is s for s in req.partitions for k, v in cache.items() if k == id(s))
    # the cache is no part of the request's value
    assert reqs[0] == LeaderAndIsrRequestData(1, 2, 7, req.partitions, req.live_leaders)
