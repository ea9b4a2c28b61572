"""Conversion between the controller's request dataclasses and the Kafka wire classes.

The controller and the broker reason in `messages.py` terms; this is the only place that
knows the shape of the controller APIs' generated classes (LeaderAndIsr v4, StopReplica v3,
UpdateMetadata v6, ControlledShutdown v3). Grouping by topic happens here.
"""
from __future__ import annotations

import struct
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from praha.common import BrokerInfo, EndPoint, TopicPartition, by_topic
from praha.encoding.varint import write_uvarint
from praha.errors import PrahaError
from praha.protocol.controller_requests import (
    ControllerRequest,
    ControllerResponseData,
    LeaderAndIsrRequestData,
    PartitionLeaderState,
    StopReplicaPartition,
    StopReplicaRequestData,
    UpdateMetadataRequestData,
)
from praha.protocol.messages.gen.controller import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from praha.protocol.messages.runtime import WireMessage

LEADER_AND_ISR_VERSION = 4
STOP_REPLICA_VERSION = 3
UPDATE_METADATA_VERSION = 6
CONTROLLED_SHUTDOWN_VERSION = 3

#: Kafka's SecurityProtocol ids as carried in UpdateMetadata endpoints
_SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
_SECURITY_PROTOCOL_NAMES = {v: k for k, v in _SECURITY_PROTOCOL_IDS.items()}

_LI = LeaderAndIsrRequest
_UM = UpdateMetadataRequest
_SR = StopReplicaRequest


# ---------------------------------------------------------------------- requests → wire
def request_to_wire(req: ControllerRequest) -> tuple[WireMessage, int]:
    """The wire object and the API version to send it at."""
    if isinstance(req, LeaderAndIsrRequestData):
        return _LazyLeaderAndIsrRequest.of(req), LEADER_AND_ISR_VERSION
    if isinstance(req, UpdateMetadataRequestData):
        return _update_metadata_to_wire(req), UPDATE_METADATA_VERSION
    if isinstance(req, StopReplicaRequestData):
        return _stop_replica_to_wire(req), STOP_REPLICA_VERSION
    raise TypeError(f"not a controller request: {type(req).__name__}")


def _leader_and_isr_to_wire(req: LeaderAndIsrRequestData) -> LeaderAndIsrRequest:
    topic_states = [
        _LI.LeaderAndIsrTopicState(
            topic_name=topic,
            partition_states=[
                _LI.LeaderAndIsrPartitionState(
                    topic_name=topic, partition_index=s.tp.partition, controller_epoch=s.controller_epoch,
                    leader=s.leader, leader_epoch=s.leader_epoch, isr=list(s.isr), partition_epoch=s.zk_version,
                    replicas=list(s.replicas), adding_replicas=list(s.adding_replicas),
                    removing_replicas=list(s.removing_replicas), is_new=s.is_new,
                )
                for s in states
            ],
        )
        for topic, states in by_topic((s.tp.topic, s) for s in req.partitions).items()
    ]
    leaders = [_LI.LeaderAndIsrLiveLeader(broker_id=b.id, host_name=b.host, port=b.port) for b in req.live_leaders]
    return LeaderAndIsrRequest(
        controller_id=req.controller_id, controller_epoch=req.controller_epoch, broker_epoch=req.broker_epoch,
        topic_states=topic_states, live_leaders=leaders,
    )


def _update_metadata_to_wire(req: UpdateMetadataRequestData) -> UpdateMetadataRequest:
    shared = _shared_update_metadata(req)
    if shared is not None:
        return _SharedUpdateMetadataRequest.of(req, shared)
    return UpdateMetadataRequest(
        controller_id=req.controller_id, controller_epoch=req.controller_epoch, broker_epoch=req.broker_epoch,
        topic_states=_um_topic_states(req.partitions), live_brokers=_um_brokers(req.live_brokers),
    )


def _um_topic_states(partitions: Iterable[Any]) -> list[Any]:
    return [
        _UM.UpdateMetadataTopicState(
            topic_name=topic,
            partition_states=[
                _UM.UpdateMetadataPartitionState(
                    topic_name=topic, partition_index=s.tp.partition, controller_epoch=s.controller_epoch,
                    leader=s.leader, leader_epoch=s.leader_epoch, isr=list(s.isr), zk_version=s.zk_version,
                    replicas=list(s.replicas), offline_replicas=list(s.offline_replicas),
                )
                for s in states
            ],
        )
        for topic, states in by_topic((s.tp.topic, s) for s in partitions).items()
    ]


def _um_brokers(live_brokers: Iterable[BrokerInfo]) -> list[Any]:
    return [
        _UM.UpdateMetadataBroker(
            id=b.id,
            endpoints=[
                _UM.UpdateMetadataBroker.UpdateMetadataEndpoint(
                    port=e.port, host=e.host, listener=e.listener,
                    security_protocol=_SECURITY_PROTOCOL_IDS.get(e.security_protocol, 0),
                )
                for e in b.endpoints
            ],
            rack=b.rack,
        )
        for b in live_brokers
    ]


# ---------------------------------------------------------------------- direct encoding
# The generic path builds one object per partition state (per broker, for LeaderAndIsr) and
# encodes them field by field: at 10k partitions that was most of the senders' CPU time,
# taken from the event thread (one interpreter). These encoders write the same bytes straight
# from the controller's dataclasses: LeaderAndIsr v4 and UpdateMetadata v6 are flexible
# versions (compact arrays and strings: unsigned varint length + 1; an empty tagged-field
# section, one 0 byte, after every struct and the body). Integers are packed with the struct
# formats the generated codec packs them with, so they take (and refuse) the same values; anything
# else unusual (a string field that is not a str, an array without a length, 127+ entries)
# returns None and the caller uses the generated codec, so the bytes are always its; unit
# tests compare them.

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">iiq")       # controller id, controller epoch, broker epoch


class _NotPlain(PrahaError):
    """A value the direct encoders leave to the generated codec."""


def _uvarint(n: int) -> bytes:
    try:
        return write_uvarint(n)
    except (TypeError, ValueError):  # not an int, or out of range: the generated codec says why
        raise _NotPlain(repr(n)) from None


def _string(v: str | None) -> bytes:
    """A compact (nullable) string."""
    if v is None:
        return b"\x00"
    if type(v) is not str:
        raise _NotPlain(repr(v))
    b = v.encode("utf-8")
    return _uvarint(len(b) + 1) + b


def _ints(*xs: int) -> tuple[int, ...]:
    for x in xs:
        if type(x) is not int:
            raise _NotPlain(repr(x))
    return xs


def _topic_groups(states: Iterable[Any]) -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = {}
    for s in states:
        topic = s.tp.topic
        g = groups.get(topic)
        if g is None:
            groups[topic] = [s]
        else:
            g.append(s)
    return groups


_LI_SHAPES: dict[tuple[int, int, int, int], struct.Struct] = {}
_UM_SHAPES: dict[tuple[int, int, int], struct.Struct] = {}


def _li_shape(n_isr: int, n_replicas: int, n_adding: int, n_removing: int) -> struct.Struct:
    """One LeaderAndIsr v4 partition state of this shape in one pack: partition, controller
    epoch, leader, leader epoch, isr, partition epoch, replicas, adding, removing, is_new and the
    empty tagged fields (array lengths are one-byte varints below 127 entries)."""
    key = (n_isr, n_replicas, n_adding, n_removing)
    st = _LI_SHAPES.get(key)
    if st is None:
        if max(key) >= 127:
            raise _NotPlain(repr(key))
        st = _LI_SHAPES.setdefault(key, struct.Struct(
            f">iiiiB{n_isr}iiB{n_replicas}iB{n_adding}iB{n_removing}i?B"))
    return st


def _um_shape(n_isr: int, n_replicas: int, n_offline: int) -> struct.Struct:
    """One UpdateMetadata v6 partition state of this shape in one pack."""
    key = (n_isr, n_replicas, n_offline)
    st = _UM_SHAPES.get(key)
    if st is None:
        if max(key) >= 127:
            raise _NotPlain(repr(key))
        st = _UM_SHAPES.setdefault(key, struct.Struct(f">iiiiB{n_isr}iiB{n_replicas}iB{n_offline}iB"))
    return st


def _fast_leader_and_isr_body(req: LeaderAndIsrRequestData) -> bytes | None:
    """The LeaderAndIsr v4 body of `req`, as the generated codec encodes `_leader_and_isr_to_wire(req)`."""
    try:
        out = [_HEAD.pack(*_ints(req.controller_id, req.controller_epoch, req.broker_epoch))]
        groups = _topic_groups(req.partitions)
        out.append(_uvarint(len(groups) + 1))
        append = out.append
        cache = req.encoded_states
        for topic, states in groups.items():
            append(_string(topic))
            append(_uvarint(len(states) + 1))
            for st in states:
                if cache is not None:
                    known = cache.get(id(st))
                    if known is not None and known[0] is st:
                        append(known[1])
                        continue
                isr, replicas, adding, removing = st.isr, st.replicas, st.adding_replicas, st.removing_replicas
                ni, nr, na, nm = len(isr), len(replicas), len(adding), len(removing)
                encoded = _li_shape(ni, nr, na, nm).pack(
                    st.tp.partition, st.controller_epoch, st.leader, st.leader_epoch, ni + 1, *isr,
                    st.zk_version, nr + 1, *replicas, na + 1, *adding, nm + 1, *removing, bool(st.is_new), 0)
                if cache is not None:
                    cache[id(st)] = (st, encoded)  # keeps `st` alive, so its id is not reused meanwhile
                append(encoded)
            append(b"\x00")
        out.append(_uvarint(len(req.live_leaders) + 1))
        i32 = _I32.pack
        for b in req.live_leaders:
            out.append(i32(*_ints(b.id)))
            out.append(_string(b.host))
            out.append(i32(*_ints(b.port)))
            out.append(b"\x00")
        out.append(b"\x00")
        return b"".join(out)
    except (_NotPlain, struct.error, AttributeError, TypeError):
        return None


def _fast_update_metadata_body(controller_id: int, controller_epoch: int, broker_epoch: int,
                               partitions: Sequence[Any], live_brokers: Sequence[BrokerInfo]) -> bytes | None:
    """The UpdateMetadata v6 body, as the generated codec encodes `_um_topic_states` / `_um_brokers`."""
    try:
        out = [_HEAD.pack(*_ints(controller_id, controller_epoch, broker_epoch))]
        groups = _topic_groups(partitions)
        out.append(_uvarint(len(groups) + 1))
        i32 = _I32.pack
        for topic, states in groups.items():
            out.append(_string(topic))
            out.append(_uvarint(len(states) + 1))
            for st in states:
                isr, replicas, offline = st.isr, st.replicas, st.offline_replicas
                ni, nr, no = len(isr), len(replicas), len(offline)
                out.append(_um_shape(ni, nr, no).pack(
                    st.tp.partition, st.controller_epoch, st.leader, st.leader_epoch, ni + 1, *isr,
                    st.zk_version, nr + 1, *replicas, no + 1, *offline, 0))
            out.append(b"\x00")
        out.append(_uvarint(len(live_brokers) + 1))
        for b in live_brokers:
            out.append(i32(*_ints(b.id)))
            out.append(_uvarint(len(b.endpoints) + 1))
            for e in b.endpoints:
                out.append(i32(*_ints(e.port)))
                out.append(_string(e.host))
                out.append(_string(e.listener))
                out.append(_I16.pack(_SECURITY_PROTOCOL_IDS.get(e.security_protocol, 0)))
                out.append(b"\x00")
            out.append(_string(b.rack))
            out.append(b"\x00")
        out.append(b"\x00")
        return b"".join(out)
    except (_NotPlain, struct.error, AttributeError, TypeError):
        return None


def _lazy_getattr(self: Any, name: str) -> Any:
    """`__getattr__` of the lazy messages below: Python calls it only for an unset slot, which
    is a field not built yet (their big arrays): build them, then read it."""
    if not name.startswith("_") and not self._materialized:
        self._materialize()
        return object.__getattribute__(self, name)
    raise AttributeError(name)


class _LazyLeaderAndIsrRequest(LeaderAndIsrRequest):
    """A LeaderAndIsrRequest that encodes (at v4) straight from the controller's request;
    `topic_states` / `live_leaders` are built as message objects only when read (or for
    another version), and once built they are what gets encoded."""

    __slots__ = ("_data", "_materialized")
    _data: LeaderAndIsrRequestData
    _materialized: bool

    @classmethod
    def of(cls, req: LeaderAndIsrRequestData) -> _LazyLeaderAndIsrRequest:
        msg = cls(controller_id=req.controller_id, controller_epoch=req.controller_epoch,
                  broker_epoch=req.broker_epoch)
        del msg.topic_states, msg.live_leaders  # unset slots: reading them materialises (__getattr__)
        msg._data = req
        msg._materialized = False
        return msg

    def _materialize(self) -> None:
        if not self._materialized:
            self._materialized = True
            full = _leader_and_isr_to_wire(self._data)
            self.topic_states, self.live_leaders = full.topic_states, full.live_leaders

    __getattr__ = _lazy_getattr

    def encode(self, version: int) -> bytearray:
        if version == LEADER_AND_ISR_VERSION and not self._materialized:
            data = self._data
            if (self.controller_id, self.controller_epoch, self.broker_epoch) == (
                    data.controller_id, data.controller_epoch, data.broker_epoch):
                body = _fast_leader_and_isr_body(data)
                if body is not None:
                    return bytearray(body)
        self._materialize()
        return super().encode(version)


# ---------------------------------------------------------------------- one UpdateMetadata, many brokers
# A request batch gives every broker that gets UpdateMetadata the *same* partition list
# (a failover: all partitions to every broker). Each broker's sender thread would convert
# and encode it again (about 1 s per broker at 100k partitions, all competing for the
# interpreter). The batch marks such a list as `SharedPartitions`; the first sender
# converts and encodes it, and the others reuse that body with their own broker epoch
# patched in: in v6 the body starts with controller_id (int32), controller_epoch (int32),
# broker_epoch (int64). The cache lives on the list, so it goes when the requests go.

_BROKER_EPOCH = struct.Struct(">q")
_BROKER_EPOCH_AT = 8


class SharedPartitions(list[Any]):
    """A partition list that several requests of one batch carry (see above)."""

    __slots__ = ("_wire",)
    _wire: _SharedUpdateMetadata


class _SharedUpdateMetadata:
    """The wire form of a shared partition list and its live brokers, built once."""

    def __init__(self, partitions: list[Any], live_brokers: list[BrokerInfo]):
        self.partitions = partitions
        self.live_brokers = live_brokers
        self._lock = threading.Lock()
        self._fields: tuple[list[Any], list[Any]] | None = None
        self._body: tuple[int, int, bytes] | None = None  # (controller id, controller epoch, v6 body)

    def wire_fields(self) -> tuple[list[Any], list[Any]]:
        with self._lock:
            if self._fields is None:
                self._fields = (_um_topic_states(self.partitions), _um_brokers(self.live_brokers))
            return self._fields

    def body(self, msg: _SharedUpdateMetadataRequest) -> bytes:
        """`msg` encoded at UPDATE_METADATA_VERSION (the first call encodes, later ones patch)."""
        with self._lock:
            cached = self._body
            if cached is None or cached[:2] != (msg.controller_id, msg.controller_epoch):
                body = _fast_update_metadata_body(msg.controller_id, msg.controller_epoch, msg.broker_epoch,
                                                  self.partitions, self.live_brokers)
                if body is None:  # something the direct encoder does not take: the generated one
                    msg._materialize()
                    body = bytes(UpdateMetadataRequest.encode(msg, UPDATE_METADATA_VERSION))
                self._body = (msg.controller_id, msg.controller_epoch, body)
                return body
        body = cached[2]
        at = _BROKER_EPOCH_AT
        return body[:at] + _BROKER_EPOCH.pack(msg.broker_epoch) + body[at + _BROKER_EPOCH.size:]


class _SharedUpdateMetadataRequest(UpdateMetadataRequest):
    """An UpdateMetadataRequest whose topic states are shared with the same request to the
    other brokers of its batch; encodes through `_SharedUpdateMetadata.body`. Its
    `topic_states` / `live_brokers` (the shared message objects) are only built when read:
    sending does not need them."""

    __slots__ = ("_shared", "_materialized")
    _shared: _SharedUpdateMetadata
    _materialized: bool

    @classmethod
    def of(cls, req: UpdateMetadataRequestData, shared: _SharedUpdateMetadata) -> _SharedUpdateMetadataRequest:
        msg = cls(controller_id=req.controller_id, controller_epoch=req.controller_epoch,
                  broker_epoch=req.broker_epoch)
        del msg.topic_states, msg.live_brokers  # unset slots: reading them materialises (__getattr__)
        msg._shared = shared
        msg._materialized = False
        return msg

    def _materialize(self) -> None:
        if not self._materialized:
            self._materialized = True
            self.topic_states, self.live_brokers = self._shared.wire_fields()

    __getattr__ = _lazy_getattr

    def encode(self, version: int) -> bytearray:
        if version != UPDATE_METADATA_VERSION:
            self._materialize()
            return super().encode(version)
        if self._materialized:
            # fields were read (and may have been replaced): encode what the object holds
            fields = self._shared._fields
            if fields is None or self.topic_states is not fields[0] or self.live_brokers is not fields[1]:
                return super().encode(version)
        return bytearray(self._shared.body(self))


_shared_lock = threading.Lock()


def _shared_update_metadata(req: UpdateMetadataRequestData) -> _SharedUpdateMetadata | None:
    """The shared wire form for this request, if its partition list is a `SharedPartitions`
    (and its broker list the one the first request came with)."""
    parts = req.partitions
    if not isinstance(parts, SharedPartitions):
        return None
    with _shared_lock:
        shared = getattr(parts, "_wire", None)
        if shared is None:
            shared = parts._wire = _SharedUpdateMetadata(parts, req.live_brokers)
    return shared if shared.live_brokers is req.live_brokers else None


def _stop_replica_to_wire(req: StopReplicaRequestData) -> StopReplicaRequest:
    topic_states = [
        _SR.StopReplicaTopicState(
            topic_name=topic,
            partition_states=[
                _SR.StopReplicaTopicState.StopReplicaPartitionState(
                    partition_index=p.tp.partition, leader_epoch=p.leader_epoch, delete_partition=p.delete
                )
                for p in parts
            ],
        )
        for topic, parts in by_topic((p.tp.topic, p) for p in req.partitions).items()
    ]
    return StopReplicaRequest(
        controller_id=req.controller_id, controller_epoch=req.controller_epoch, broker_epoch=req.broker_epoch,
        topic_states=topic_states,
    )


# ---------------------------------------------------------------------- wire → requests
def leader_and_isr_from_wire(w: LeaderAndIsrRequest) -> LeaderAndIsrRequestData:
    parts = [
        PartitionLeaderState(
            tp=TopicPartition(ts.topic_name, p.partition_index), controller_epoch=p.controller_epoch,
            leader=p.leader, leader_epoch=p.leader_epoch, isr=tuple(p.isr), zk_version=p.partition_epoch,
            replicas=tuple(p.replicas), adding_replicas=tuple(p.adding_replicas or ()),
            removing_replicas=tuple(p.removing_replicas or ()), is_new=bool(p.is_new),
        )
        for ts in (w.topic_states or [])
        for p in (ts.partition_states or [])
    ]
    leaders = [BrokerInfo(l.broker_id, (EndPoint(l.host_name, l.port),)) for l in (w.live_leaders or [])]
    return LeaderAndIsrRequestData(w.controller_id, w.controller_epoch, w.broker_epoch, parts, leaders)


def update_metadata_from_wire(w: UpdateMetadataRequest) -> UpdateMetadataRequestData:
    parts = [
        PartitionLeaderState(
            tp=TopicPartition(ts.topic_name, p.partition_index), controller_epoch=p.controller_epoch,
            leader=p.leader, leader_epoch=p.leader_epoch, isr=tuple(p.isr), zk_version=p.zk_version,
            replicas=tuple(p.replicas), offline_replicas=tuple(p.offline_replicas or ()),
        )
        for ts in (w.topic_states or [])
        for p in (ts.partition_states or [])
    ]
    brokers = [
        BrokerInfo(
            b.id,
            tuple(
                EndPoint(e.host, e.port, e.listener or "PLAINTEXT",
                         _SECURITY_PROTOCOL_NAMES.get(e.security_protocol, "PLAINTEXT"))
                for e in (b.endpoints or [])
            ),
            b.rack,
        )
        for b in (w.live_brokers or [])
    ]
    return UpdateMetadataRequestData(w.controller_id, w.controller_epoch, w.broker_epoch, parts, brokers)


def stop_replica_from_wire(w: StopReplicaRequest) -> StopReplicaRequestData:
    parts = [
        StopReplicaPartition(TopicPartition(ts.topic_name, p.partition_index), p.leader_epoch, bool(p.delete_partition))
        for ts in (w.topic_states or [])
        for p in (ts.partition_states or [])
    ]
    return StopReplicaRequestData(w.controller_id, w.controller_epoch, w.broker_epoch, parts)


# ---------------------------------------------------------------------- responses
def response_to_wire(api_key: int, resp: ControllerResponseData) -> WireMessage:
    errors = [(tp.topic, tp.partition, int(code)) for tp, code in resp.partition_errors.items()]
    if api_key == LeaderAndIsrRequestData.api_key:
        return LeaderAndIsrResponse(
            error_code=int(resp.error_code),
            partition_errors=[LeaderAndIsrResponse.LeaderAndIsrPartitionError(
                topic_name=t, partition_index=p, error_code=c) for t, p, c in errors],
        )
    if api_key == StopReplicaRequestData.api_key:
        return StopReplicaResponse(
            error_code=int(resp.error_code),
            partition_errors=[StopReplicaResponse.StopReplicaPartitionError(
                topic_name=t, partition_index=p, error_code=c) for t, p, c in errors],
        )
    if api_key == UpdateMetadataRequestData.api_key:
        return UpdateMetadataResponse(error_code=int(resp.error_code))
    raise TypeError(f"api key {api_key} is not a controller request")


def response_from_wire(w: LeaderAndIsrResponse | StopReplicaResponse | UpdateMetadataResponse
                       ) -> ControllerResponseData:
    errors = {
        TopicPartition(e.topic_name, e.partition_index): e.error_code
        for e in (getattr(w, "partition_errors", None) or [])
    }
    return ControllerResponseData(w.error_code, errors)
