"""A scripted one-broker Kafka endpoint for `GroupAdmin` and `praha groups` unit tests.

It speaks the real wire format (praha's framing and kafka-python's messages) on a loopback
port, serves the group APIs from an in-memory model (groups, members, committed offsets,
log start/end per partition) and can be told to answer the next requests of an API with
an error (`fail_next`), so the retry paths run without a group coordinator. Threads are
daemons and `close` stops the listener; nothing outlives the test.
"""
from __future__ import annotations

import socket
import struct
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.admin import DeleteGroupsResponse, DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.consumer import ListOffsetsResponse, OffsetCommitResponse, OffsetDeleteResponse, OffsetFetchResponse
from kafka.protocol.metadata import FindCoordinatorResponse, MetadataResponse

from praha.admin.group_plans import encode_assignment
from praha.common import TopicPartition
from praha.errors import ErrorCode
from praha.protocol.api_keys import ApiKey
from praha.protocol.framing import decode_request, encode_response
from praha.protocol.registry import api_versions_response

#: what the fake advertises: the versions issue 11 says the coordinator serves
SERVED = {
    ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (0, 12), ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.FIND_COORDINATOR: (0, 4), ApiKey.LIST_GROUPS: (0, 4), ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.OFFSET_FETCH: (1, 8), ApiKey.OFFSET_COMMIT: (2, 8), ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
}


@dataclass
class FakeMember:
    member_id: str
    client_id: str = "rdkafka"
    host: str = "/127.0.0.1"
    assignment: tuple[TopicPartition, ...] = ()
    instance_id: str | None = None


@dataclass
class FakeGroup:
    state: str = "Empty"
    protocol: str = "range"
    members: list[FakeMember] = field(default_factory=list)
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    subscribed: set[str] = field(default_factory=set)


class FakeGroupBroker:
    def __init__(self, served: dict[int, tuple[int, int]] | None = None, node_id: int = 1):
        self.node_id = node_id
        self.served = dict(SERVED if served is None else served)
        self.topics: dict[str, int] = {}
        self.log_start: dict[TopicPartition, int] = {}
        self.log_end: dict[TopicPartition, int] = {}
        self.by_time: dict[TopicPartition, int] = {}  # the offset any timestamp query gets (-1: none)
        self.groups: dict[str, FakeGroup] = {}
        self.requests: list[tuple[int, int]] = []  # (api key, version) of every request
        self._fail: dict[int, list[int]] = defaultdict(list)
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="fake-broker").start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._closed = True
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread, which then exits
        except OSError:
            pass
        self._server.close()

    def __enter__(self) -> FakeGroupBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the model ---------------------------------------------------------------------
    def topic(self, name: str, partitions: int, start: int = 0, end: int = 0) -> None:
        self.topics[name] = partitions
        for p in range(partitions):
            self.log_start[TopicPartition(name, p)] = start
            self.log_end[TopicPartition(name, p)] = end

    def fail_next(self, api_key: int, *codes: int) -> None:
        """Answer the next len(codes) requests of `api_key` with these error codes."""
        self._fail[api_key].extend(codes)

    def _take_failure(self, api_key: int) -> int:
        with self._lock:
            return self._fail[api_key].pop(0) if self._fail[api_key] else ErrorCode.NONE

    # -- the wire ----------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                sock, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        with sock:
            while True:
                head = _recv(sock, 4)
                if head is None:
                    return
                body = _recv(sock, struct.unpack(">i", head)[0])
                if body is None:
                    return
                req = decode_request(body, self.served)
                self.requests.append((req.api_key, req.api_version))
                resp = self._handle(req.api_key, req.api_version, req.request)
                sock.sendall(encode_response(req.header, resp, req.api_version))

    def _handle(self, key: int, version: int, r: Any) -> Any:
        fail = self._take_failure(key)
        return getattr(self, f"_h{key}")(version, r, fail)

    def _h18(self, version: int, r: Any, fail: int) -> Any:  # ApiVersions
        return api_versions_response(self.served)

    def _h3(self, version: int, r: Any, fail: int) -> Any:  # Metadata
        names = list(self.topics) if not r.topics else [t.name for t in r.topics]
        topics = []
        for name in names:
            if name not in self.topics:
                topics.append(MetadataResponse.MetadataResponseTopic(
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=None, is_internal=False,
                    partitions=[], authorized_operations=None))
                continue
            parts = [MetadataResponse.MetadataResponseTopic.MetadataResponsePartition(
                error_code=0, partition_index=p, leader_id=self.node_id, leader_epoch=0,
                replica_nodes=[self.node_id], isr_nodes=[self.node_id], offline_replicas=[])
                for p in range(self.topics[name])]
            topics.append(MetadataResponse.MetadataResponseTopic(
                error_code=0, name=name, topic_id=None, is_internal=name.startswith("__"), partitions=parts,
                authorized_operations=None))
        return MetadataResponse(throttle_time_ms=0, brokers=[MetadataResponse.MetadataResponseBroker(
            node_id=self.node_id, host="127.0.0.1", port=self.port, rack=None)], cluster_id="fake",
            controller_id=self.node_id, topics=topics, authorized_operations=None)

    def _h10(self, version: int, r: Any, fail: int) -> Any:  # FindCoordinator
        node = {"node_id": self.node_id if not fail else -1, "host": "127.0.0.1" if not fail else "",
                "port": self.port if not fail else -1}
        if version >= 4:
            return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[FindCoordinatorResponse.Coordinator(
                key=k, error_code=fail, error_message=None, **node) for k in r.coordinator_keys])
        return FindCoordinatorResponse(throttle_time_ms=0, error_code=fail, error_message=None, **node)

    def _h16(self, version: int, r: Any, fail: int) -> Any:  # ListGroups
        states = set(r.states_filter or []) if version >= 4 else set()
        return ListGroupsResponse(throttle_time_ms=0, error_code=fail, groups=[
            ListGroupsResponse.ListedGroup(group_id=g, protocol_type="consumer", group_state=grp.state)
            for g, grp in self.groups.items() if not states or grp.state in states])

    def _h15(self, version: int, r: Any, fail: int) -> Any:  # DescribeGroups
        out = []
        for g in r.groups:
            grp = self.groups.get(g)
            if grp is None:
                out.append(DescribeGroupsResponse.DescribedGroup(
                    error_code=fail, group_id=g, group_state="Dead", protocol_type="", protocol_data="", members=[]))
                continue
            out.append(DescribeGroupsResponse.DescribedGroup(
                error_code=fail, group_id=g, group_state=grp.state, protocol_type="consumer",
                protocol_data=grp.protocol if grp.members else "", members=[
                    DescribeGroupsResponse.DescribedGroup.DescribedGroupMember(
                        member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                        client_host=m.host, member_metadata=b"", member_assignment=encode_assignment(m.assignment))
                    for m in grp.members]))
        return DescribeGroupsResponse(throttle_time_ms=0, groups=out)

    def _h9(self, version: int, r: Any, fail: int) -> Any:  # OffsetFetch
        def topics_of(group: str, wanted: Any, topic_cls: Any, part_cls: Any) -> list[Any]:
            offsets = self.groups.get(group, FakeGroup()).offsets
            by_topic: dict[str, list[Any]] = defaultdict(list)
            for tp, off in sorted(offsets.items()):
                if wanted is None or any(t.name == tp.topic and tp.partition in t.partition_indexes for t in wanted):
                    by_topic[tp.topic].append(part_cls(partition_index=tp.partition, committed_offset=off,
                                                       committed_leader_epoch=-1, metadata="", error_code=0))
            return [topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()]

        if version >= 8:
            G = OffsetFetchResponse.OffsetFetchResponseGroup
            return OffsetFetchResponse(throttle_time_ms=0, groups=[G(
                group_id=g.group_id, error_code=fail, topics=[] if fail else topics_of(
                    g.group_id, g.topics, G.OffsetFetchResponseTopics,
                    G.OffsetFetchResponseTopics.OffsetFetchResponsePartitions)) for g in r.groups])
        T = OffsetFetchResponse.OffsetFetchResponseTopic
        return OffsetFetchResponse(throttle_time_ms=0, error_code=fail, topics=[] if fail else topics_of(
            r.group_id, r.topics, T, T.OffsetFetchResponsePartition))

    def _h8(self, version: int, r: Any, fail: int) -> Any:  # OffsetCommit
        grp = self.groups.setdefault(r.group_id, FakeGroup())
        out = []
        for t in r.topics:
            parts = []
            for p in t.partitions:
                code = fail or (ErrorCode.UNKNOWN_MEMBER_ID if grp.members else ErrorCode.NONE)
                if code == ErrorCode.NONE:
                    grp.offsets[TopicPartition(t.name, p.partition_index)] = p.committed_offset
                parts.append(OffsetCommitResponse.OffsetCommitResponseTopic.OffsetCommitResponsePartition(
                    partition_index=p.partition_index, error_code=code))
            out.append(OffsetCommitResponse.OffsetCommitResponseTopic(name=t.name, partitions=parts))
        return OffsetCommitResponse(throttle_time_ms=0, topics=out)

    def _h42(self, version: int, r: Any, fail: int) -> Any:  # DeleteGroups
        results = []
        for g in r.groups_names:
            grp = self.groups.get(g)
            code = fail or (ErrorCode.GROUP_ID_NOT_FOUND if grp is None else
                            ErrorCode.NON_EMPTY_GROUP if grp.members else ErrorCode.NONE)
            if code == ErrorCode.NONE:
                del self.groups[g]
            results.append(DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=code))
        return DeleteGroupsResponse(throttle_time_ms=0, results=results)

    def _h47(self, version: int, r: Any, fail: int) -> Any:  # OffsetDelete
        grp = self.groups.get(r.group_id)
        top = fail or (ErrorCode.GROUP_ID_NOT_FOUND if grp is None else ErrorCode.NONE)
        topics = []
        for t in r.topics:
            parts = []
            for p in t.partitions:
                code = ErrorCode.NONE
                if grp is not None and not top:
                    if t.name in grp.subscribed:
                        code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                    else:
                        grp.offsets.pop(TopicPartition(t.name, p.partition_index), None)
                parts.append(OffsetDeleteResponse.OffsetDeleteResponseTopic.OffsetDeleteResponsePartition(
                    partition_index=p.partition_index, error_code=code))
            topics.append(OffsetDeleteResponse.OffsetDeleteResponseTopic(name=t.name, partitions=parts))
        return OffsetDeleteResponse(error_code=top, throttle_time_ms=0, topics=[] if top else topics)

    def _h2(self, version: int, r: Any, fail: int) -> Any:  # ListOffsets
        T = ListOffsetsResponse.ListOffsetsTopicResponse
        topics = []
        for t in r.topics:
            parts = []
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if tp not in self.log_end:
                    parts.append(T.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                                timestamp=-1, offset=-1, leader_epoch=-1))
                    continue
                offset = (self.log_start[tp] if p.timestamp == -2 else self.log_end[tp] if p.timestamp == -1
                          else self.by_time.get(tp, -1))
                parts.append(T.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=fail,
                                                            timestamp=-1, offset=offset, leader_epoch=0))
            topics.append(T(name=t.name, partitions=parts))
        return ListOffsetsResponse(throttle_time_ms=0, topics=topics)


def _recv(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)
