"""Fast codecs for the znodes a controller reads and writes by the hundred thousand.

The codecs in `znodes` are the reference: strict, with precise error messages, and the
readable statement of each format. These take the common case (well-formed JSON of the
expected shape, plain ints and strs) without the generic helpers, a regex per partition id
or a new JSONDecoder per call, and hand anything else to the reference codec, so results,
bytes and errors are exactly the reference's (tests/unit/test_zk_codecs_match_reference.py and
test_zk_writes_match_reference.py check that on arbitrary input).

Kept apart from `znodes` so that module stays the specification; this one's only contract
is equality with it.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kazoo.protocol.states import ZnodeStat

from praha.common import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from praha.zk import znodes as zn

#: tp → (replicas, the bytes of its entry in a reassignment znode); see `reassignment_fragments`
ReassignmentFragments = dict[TopicPartition, tuple[tuple[int, ...], bytes]]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


_JSON = json.JSONDecoder(parse_constant=_reject_constant)  # as znodes' json.loads(..., parse_constant=)


def _json_or_none(data: bytes) -> Any:
    """The JSON value if `data` is exactly one (no surrounding whitespace, as Kafka writes it),
    else None. `raw_decode` runs the C scanner alone: `decode` adds two regex passes per call."""
    try:
        text = data.decode("utf-8")
        value, end = _JSON.raw_decode(text)
    except Exception:  # noqa: BLE001 - not UTF-8, not JSON, too deep...: the reference codec reports it
        return None
    return value if end == len(text) else None


# The two frozen classes a partition state decodes to, filled through their slots: the same
# objects as their constructors make (neither has a __post_init__), without the generated
# __init__'s object.__setattr__ per field (a failover decodes 100k of them).
_new = object.__new__


def _slot_setter(cls: type, name: str) -> Any:
    """The slot descriptor's `__set__` of `cls.name` (it works on frozen dataclasses too)."""
    return getattr(cls, name).__set__


_set_leader, _set_isr = _slot_setter(LeaderAndIsr, "leader"), _slot_setter(LeaderAndIsr, "isr")
_set_leader_epoch = _slot_setter(LeaderAndIsr, "leader_epoch")
_set_zk_version = _slot_setter(LeaderAndIsr, "zk_version")
_set_lai = _slot_setter(LeaderIsrAndControllerEpoch, "leader_and_isr")
_set_controller_epoch = _slot_setter(LeaderIsrAndControllerEpoch, "controller_epoch")

def decode_partition_state(path: str, data: bytes, stat: ZnodeStat) -> LeaderIsrAndControllerEpoch:
    """`znodes.decode_partition_state(data, stat.version, path)`, faster."""
    try:  # as _json_or_none, inlined
        text = data.decode("utf-8")
        obj, end = _JSON.raw_decode(text)
    except Exception:  # noqa: BLE001 - the reference codec reports it
        obj, end, text = None, 0, ""
    if type(obj) is dict and end == len(text):
        leader, isr = obj.get("leader"), obj.get("isr")
        leader_epoch, controller_epoch = obj.get("leader_epoch"), obj.get("controller_epoch")
        version = obj.get("version", 1)
        if (type(leader) is int and type(leader_epoch) is int and type(controller_epoch) is int
                and type(version) is int and version == 1
                and type(isr) is list and all(type(r) is int for r in isr)):
            lai: LeaderAndIsr = _new(LeaderAndIsr)
            _set_leader(lai, leader)
            _set_isr(lai, tuple(isr))
            _set_leader_epoch(lai, leader_epoch)
            _set_zk_version(lai, stat.version)
            state: LeaderIsrAndControllerEpoch = _new(LeaderIsrAndControllerEpoch)
            _set_lai(state, lai)
            _set_controller_epoch(state, controller_epoch)
            return state
    return zn.decode_partition_state(data, stat.version, path)


def _partition_map_or_none(v: Any) -> dict[int, tuple[int, ...]] | None:
    if type(v) is not dict:
        return None
    out: dict[int, tuple[int, ...]] = {}
    for key, replicas in v.items():
        # ASCII digits only, as the reference's [0-9]+ (str.isdigit alone accepts e.g. "²")
        if not (key.isascii() and key.isdigit()) or type(replicas) is not list:
            return None
        if not all(type(r) is int for r in replicas):
            return None
        out[int(key)] = tuple(replicas)
    return out


def decode_topic_assignment(path: str, data: bytes, _stat: ZnodeStat) -> TopicAssignment:
    """`znodes.decode_topic_assignment(data, path)`, faster."""
    obj = _json_or_none(data)
    if type(obj) is dict:
        version, topic_id = obj.get("version"), obj.get("topic_id")
        if type(version) is int and version in (1, 2, 3) and (topic_id is None or type(topic_id) is str):
            replicas = _partition_map_or_none(obj.get("partitions"))
            adding = _partition_map_or_none(obj.get("adding_replicas") or {})
            removing = _partition_map_or_none(obj.get("removing_replicas") or {})
            if replicas is not None and adding is not None and removing is not None:
                return TopicAssignment(
                    {p: ReplicaAssignment(r, adding.get(p, ()), removing.get(p, ())) for p, r in replicas.items()},
                    topic_id,
                )
    return zn.decode_topic_assignment(data, path)


def encode_partition_state(state: LeaderIsrAndControllerEpoch) -> bytes:
    """`znodes.encode_partition_state`, byte for byte, without building a dict and running the
    generic JSON encoder (a controller event writes one per partition). Plain ints only (a bool
    is an int to Python but `true` to JSON); anything else goes to the reference codec."""
    lai = state.leader_and_isr
    ce, leader, le, isr = state.controller_epoch, lai.leader, lai.leader_epoch, lai.isr
    if (type(ce) is int and type(leader) is int and type(le) is int and type(isr) in (tuple, list)
            and all(type(r) is int for r in isr)):
        return b'{"controller_epoch":%d,"leader":%d,"version":1,"leader_epoch":%d,"isr":[%s]}' % (
            ce, leader, le, ",".join(map(str, isr)).encode("ascii"))
    return zn.encode_partition_state(state)


def reassignment_fragments(reassignment: Mapping[TopicPartition, Sequence[int]],
                           known: ReassignmentFragments | None) -> ReassignmentFragments | None:
    """tp → (replicas, the bytes of its entry in `znodes.encode_reassignment(reassignment)`):
    joined by `join_reassignment` they are that encoding. Entries of `known` (the same form)
    whose replicas did not change are reused. None if some value is not a plain str/int (the
    reference encoder then writes it)."""
    out: ReassignmentFragments = {}
    for tp, replicas in reassignment.items():
        if known is not None:
            k = known.get(tp)
            if k is not None and (k[0] == replicas or k[0] == tuple(replicas)):
                out[tp] = k
                continue
        topic, partition = tp
        if type(topic) is not str or type(partition) is not int:
            return None
        rs = tuple(replicas)
        if not all(type(r) is int for r in rs):
            return None
        out[tp] = (rs, b'{"topic":' + json.dumps(topic, ensure_ascii=False).encode("utf-8")
                   + b',"partition":%d,"replicas":[%s]}' % (partition, ",".join(map(str, rs)).encode("ascii")))
    return out


def join_reassignment(fragments: ReassignmentFragments) -> bytes:
    """The reassignment znode's bytes from its entries (see `reassignment_fragments`)."""
    return b'{"version":1,"partitions":[' + b",".join(f[1] for f in fragments.values()) + b"]}"
