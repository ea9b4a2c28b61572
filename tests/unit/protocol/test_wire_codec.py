"""The generated codecs (`praha/protocol/messages/gen/`) against kafka-python, an independent
implementation built from Kafka's own JSON: for every message and version both define,
random messages encode to the same bytes, and decode back to what was encoded. Plus the
edges kafka-python does not reach: tagged fields, nullable structs, malformed input."""
from __future__ import annotations

import importlib
import pkgutil
import random
import uuid
from typing import Any

import kafka.protocol
import kafka_python_controller_apis  # noqa: F401  (registers kafka-python declarations of the controller APIs)
import pytest
from kafka.protocol.api_message import ApiMessage

from praha.protocol.messages.definition import Field, Message, load_all
from praha.protocol.messages.gen import MESSAGES
from praha.protocol.messages.gen.groups import ConsumerGroupHeartbeatResponse
from praha.protocol.messages.gen.metadata import ApiVersionsResponse
from praha.protocol.messages.gen.produce_fetch import FetchResponse
from praha.protocol.messages.runtime import WireFormatError


def _kafka_python_classes() -> dict[str, type]:
    for mod in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if "old" not in mod.name and "generate" not in mod.name:
            importlib.import_module(mod.name)
    out: dict[str, type] = {}
    todo = list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None):
            out.setdefault(cls._json["name"], cls)
    return out


KAFKA_PYTHON = _kafka_python_classes()
DEFS = {m.name: m for api in load_all().values() for m in (api.request, api.response)}
PAIRS = [(name, v) for name, m in sorted(DEFS.items()) if name in KAFKA_PYTHON
         for v in range(m.versions.lo, min(m.versions.hi, KAFKA_PYTHON[name].max_version) + 1)]


def _value(f: Field, elem: str, v: int, rng: random.Random, top: bool) -> Any:
    if elem in ("int8",):
        return rng.randint(-128, 127)
    if elem == "int16":
        return rng.randint(-32768, 32767)
    if elem == "uint16":
        return rng.randint(0, 65535)
    if elem == "int32":
        return rng.randint(-2**31, 2**31 - 1)
    if elem == "int64":
        return rng.randint(-2**63, 2**63 - 1)
    if elem == "float64":
        return rng.random()
    if elem == "bool":
        return rng.random() < 0.5
    if elem == "string":
        return rng.choice(["", "a", "topic-é", "x" * 130])
    if elem in ("bytes", "records"):
        return bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 200])))
    if elem == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise AssertionError(elem)


def _tree(fields: list[Field], v: int, rng: random.Random, depth: int = 0) -> dict[str, Any]:
    """Random values for the fields present at v: nested dicts for structs."""
    out: dict[str, Any] = {}
    for f in fields:
        if v not in f.versions:
            continue
        if f.nullable_at(v) and rng.random() < 0.25:
            out[f.name] = None
            continue
        if f.tagged_at(v) and rng.random() < 0.3:
            continue  # left at its default: not written
        if f.is_array:
            n = rng.choice([0, 1, 2]) if depth < 3 else 0
            if f.is_struct:
                out[f.name] = [_tree(f.fields, v, rng, depth + 1) for _ in range(n)]
            else:
                out[f.name] = [_value(f, f.element, v, rng, False) for _ in range(n)]
        elif f.is_struct:
            out[f.name] = _tree(f.fields, v, rng, depth + 1)
        else:
            out[f.name] = _value(f, f.element, v, rng, True)
    return out


#: kafka-python renames these int32 fields and gives them as sets of bit numbers (its json_patch)
KAFKA_PYTHON_BITFIELDS = {
    "MetadataResponse.cluster_authorized_operations": "authorized_operations",
    "MetadataResponse.topics.topic_authorized_operations": "authorized_operations",
    "DescribeClusterResponse.cluster_authorized_operations": "authorized_operations",
    "DescribeGroupsResponse.groups.authorized_operations": "authorized_operations",
}


def _bits(value: int) -> set[int]:
    return {i for i in range(32) if (value & 0xFFFFFFFF) >> i & 1}


def _build(cls: Any, fields: list[Field], tree: dict[str, Any], path: str = "", kafka_python: bool = False,
           top: Any = None) -> Any:
    """The same tree as an instance of `cls` (praha's or kafka-python's: same nested names;
    a struct several fields share is an attribute of the message class)."""
    top = top or cls
    kw: dict[str, Any] = {}
    for f in fields:
        if f.name not in tree:
            continue
        val = tree[f.name]
        name = f.name
        if f.is_struct and val is not None:
            sub = getattr(cls, f.element, None) or getattr(top, f.element)
            here = f"{path}.{f.name}"
            val = ([_build(sub, f.fields, t, here, kafka_python, top) for t in val] if f.is_array
                   else _build(sub, f.fields, val, here, kafka_python, top))
        elif kafka_python and f"{path}.{f.name}" in KAFKA_PYTHON_BITFIELDS:
            name, val = KAFKA_PYTHON_BITFIELDS[f"{path}.{f.name}"], _bits(val)
        kw[name] = val
    return cls(**kw)


@pytest.mark.parametrize("name", sorted({n for n, _ in PAIRS}))
def test_same_bytes_as_kafka_python_and_round_trip(name: str) -> None:
    """Every version both define, three random messages each (one test per message: the
    per-version cases cost more in pytest's bookkeeping than in encoding)."""
    msg: Message = DEFS[name]
    ours_cls = MESSAGES[msg.api_key][0 if name.endswith("Request") else 1]
    theirs_cls = KAFKA_PYTHON[name]
    for version in (v for n, v in PAIRS if n == name):
        rng = random.Random(f"{name}{version}")
        for _ in range(3):
            tree = _tree(msg.fields, version, rng)
            ours = _build(ours_cls, msg.fields, tree, name)
            theirs = _build(theirs_cls, msg.fields, tree, name, kafka_python=True)
            wire = bytes(ours.encode(version))
            assert wire == bytes(theirs.encode(version=version)), (version, tree)
            back = ours_cls.decode(wire, version)
            assert back == ours, version
            assert bytes(back.encode(version)) == wire


def test_every_served_message_is_compared() -> None:
    """Only the messages kafka-python lacks (KIP-848, share groups) escape the comparison."""
    missing = sorted(n for n in DEFS if n not in KAFKA_PYTHON)
    assert all(n.startswith(("ConsumerGroup", "Share")) or "ShareGroupOffsets" in n for n in missing), missing
    assert len(PAIRS) > 400


def test_tagged_fields_written_only_when_not_default_and_unknown_tags_skipped() -> None:
    """FetchResponse v12+: diverging_epoch, current_leader and snapshot_id are tagged."""
    p = FetchResponse.FetchableTopicResponse.PartitionData(partition_index=3, high_watermark=10)
    resp = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[p])])
    plain = bytes(resp.encode(12))
    p.current_leader = FetchResponse.FetchableTopicResponse.PartitionData.LeaderIdAndEpoch(leader_id=2, leader_epoch=7)
    tagged = bytes(resp.encode(12))
    assert len(tagged) > len(plain)
    assert FetchResponse.decode(tagged, 12).responses[0].partitions[0].current_leader.leader_epoch == 7
    assert FetchResponse.decode(plain, 12).responses[0].partitions[0].current_leader.leader_id == -1
    # an unknown tag (99) in the top-level tagged fields is skipped, not an error
    resp.responses = []
    body = bytes(resp.encode(12))
    assert body.endswith(b"\x00")
    with_unknown = body[:-1] + b"\x01\x63\x02\xab\xcd"
    assert FetchResponse.decode(with_unknown, 12) == resp


def test_api_versions_supported_features_are_tagged_at_v3() -> None:
    r = ApiVersionsResponse(finalized_features_epoch=5)
    assert ApiVersionsResponse.decode(r.encode(3), 3).finalized_features_epoch == 5
    assert ApiVersionsResponse.decode(r.encode(2), 2).finalized_features_epoch == -1  # not in v2


def test_nullable_struct_and_absent_field() -> None:
    none = ConsumerGroupHeartbeatResponse(member_id="m")
    assert ConsumerGroupHeartbeatResponse.decode(none.encode(0), 0).assignment is None
    tp = ConsumerGroupHeartbeatResponse.TopicPartitions(topic_id=uuid.uuid4(), partitions=[0, 5])
    some = ConsumerGroupHeartbeatResponse(assignment=ConsumerGroupHeartbeatResponse.Assignment(topic_partitions=[tp]))
    assert ConsumerGroupHeartbeatResponse.decode(some.encode(1), 1) == some


@pytest.mark.parametrize("cut", [1, 5, 9])
def test_truncated_or_padded_input_is_a_wire_error(cut: int) -> None:
    cls = MESSAGES[8][0]  # OffsetCommitRequest
    msg = cls(group_id="g", topics=[cls.OffsetCommitRequestTopic(name="t", partitions=[
        cls.OffsetCommitRequestTopic.OffsetCommitRequestPartition(partition_index=1, committed_offset=5)])])
    wire = bytes(msg.encode(9))
    with pytest.raises(WireFormatError):
        cls.decode(wire[:-cut], 9)
    with pytest.raises(WireFormatError):
        cls.decode(wire + b"\x00" * cut, 9)


def test_null_in_a_non_nullable_field_is_a_wire_error() -> None:
    cls = MESSAGES[8][0]
    wire = bytes(cls(group_id="g").encode(9))
    assert wire[0] == 2  # compact "g"
    with pytest.raises(WireFormatError, match="group_id"):
        cls.decode(b"\x00" + wire[2:], 9)


def test_unknown_version_is_refused() -> None:
    with pytest.raises(WireFormatError):
        MESSAGES[8][0]().encode(99)
