"""Share groups (KIP-932) for `praha groups --share`: ShareGroupDescribe over the wire, and each
share partition's start offset and in-flight records from the durable share state praha keeps
in ZooKeeper (`praha.zk.share_state`; docs/share-groups.md)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from praha.admin.groups import GroupAdmin, GroupListing, Node
from praha.common import TopicPartition, partitions_by_topic
from praha.errors import ErrorCode
from praha.protocol.api_keys import ApiKey
from praha.protocol.messages.gen.share import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ShareGroupDescribeRequest,
)
from praha.zk.share_state import ShareSnapshot, ShareStateStore


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    client_id: str
    host: str
    member_epoch: int
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ShareGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignor: str
    members: tuple[ShareMember, ...]
    coordinator: Node

    @property
    def exists(self) -> bool:
        return self.state not in ("Dead", "")


@dataclass(frozen=True)
class ShareOffset:
    """A share partition as DescribeShareGroupOffsets gives it (-1: no state, or not known)."""

    start_offset: int
    leader_epoch: int
    lag: int
    error: int


class ShareGroupAdmin(GroupAdmin):
    def __enter__(self) -> ShareGroupAdmin:
        return self

    def list_share_groups(self, states: Sequence[str] = ()) -> list[GroupListing]:
        """Every share group on every broker (ListGroups v5 with the type filter `share`), sorted."""
        found: dict[str, GroupListing] = {}
        for node in sorted(self.cluster(()).brokers.values()):
            for g in self._list_on(node, states, ["share"]):
                if g.group_type == "share":
                    found.setdefault(g.group_id, g)
        return [found[g] for g in sorted(found)]

    def describe_share_groups(self, group_ids: Sequence[str]) -> dict[str, ShareGroupDescription]:
        """Each group as its coordinator holds it; an unknown one comes back Dead."""

        def send(node: Node, gs: list[str]) -> dict[str, tuple[int, ShareGroupDescription]]:
            resp = self._send(node.host, node.port, ApiKey.SHARE_GROUP_DESCRIBE,
                              lambda v: ShareGroupDescribeRequest(group_ids=gs, include_authorized_operations=False))
            out: dict[str, tuple[int, ShareGroupDescription]] = {}
            for d in resp.groups:
                if d.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
                    out[d.group_id] = (ErrorCode.NONE, ShareGroupDescription(d.group_id, "Dead", -1, "", (), node))
                    continue
                members = tuple(
                    ShareMember(
                        m.member_id,
                        m.client_id,
                        m.client_host,
                        m.member_epoch,
                        tuple(
                            TopicPartition(t.topic_name, p)
                            for t in m.assignment.topic_partitions
                            for p in sorted(t.partitions)
                        ),
                    )
                    for m in d.members
                )
                out[d.group_id] = (d.error_code, ShareGroupDescription(d.group_id, d.group_state, d.group_epoch,
                                                                       d.assignor_name, members, node))
            return out

        return self._per_group(group_ids, send)

    def describe_share_group_offsets(self, group_ids: Sequence[str], partitions: Sequence[TopicPartition] | None = None
                                     ) -> dict[str, dict[TopicPartition, ShareOffset] | None]:
        """Each group's share partitions (`partitions`, or every one with state); None for a
        group that does not exist (GROUP_ID_NOT_FOUND)."""
        wanted = partitions_by_topic(partitions or ())
        topics = None if partitions is None else [DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
                                                  .DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
                                                  for t, ps in sorted(wanted.items())]

        def send(node: Node, gs: list[str]) -> dict[str, tuple[int, dict[TopicPartition, ShareOffset] | None]]:
            resp = self._send(node.host, node.port, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                              lambda v: DescribeShareGroupOffsetsRequest(groups=[
                                  DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(
                                      group_id=g, topics=topics) for g in gs]))
            out: dict[str, tuple[int, dict[TopicPartition, ShareOffset] | None]] = {}
            for g in resp.groups:
                if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
                    out[g.group_id] = (ErrorCode.NONE, None)
                    continue
                out[g.group_id] = (g.error_code, {
                    TopicPartition(t.topic_name, p.partition_index): ShareOffset(
                        p.start_offset, p.leader_epoch, getattr(p, "lag", -1), p.error_code)
                    for t in g.topics for p in t.partitions})
            return out

        return self._per_group(group_ids, send)

    def alter_share_group_offsets(self, group_id: str, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """New start offsets (the group must have no members): each partition's error code."""
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for tp, off in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append((tp.partition, off))
        R = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic

        def send(node: Node, gs: list[str]) -> dict[str, tuple[int, dict[TopicPartition, int]]]:
            resp = self._send(node.host, node.port, ApiKey.ALTER_SHARE_GROUP_OFFSETS,
                              lambda v: AlterShareGroupOffsetsRequest(group_id=gs[0], topics=[
                                  R(topic_name=t, partitions=[R.AlterShareGroupOffsetsRequestPartition(
                                      partition_index=p, start_offset=o) for p, o in ps])
                                  for t, ps in by_topic.items()]))
            return {gs[0]: (resp.error_code, {TopicPartition(t.topic_name, p.partition_index): p.error_code
                                              for t in resp.responses for p in t.partitions})}

        return self._per_group([group_id], send)[group_id]

    def delete_share_group_offsets(self, group_id: str, topics: Sequence[str]) -> dict[str, int]:
        """Forget the group's share state of whole topics (no members): each topic's error code."""
        def send(node: Node, gs: list[str]) -> dict[str, tuple[int, dict[str, int]]]:
            resp = self._send(node.host, node.port, ApiKey.DELETE_SHARE_GROUP_OFFSETS,
                              lambda v: DeleteShareGroupOffsetsRequest(group_id=gs[0], topics=[
                                  DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=t)
                                  for t in dict.fromkeys(topics)]))
            return {gs[0]: (resp.error_code, {t.topic_name: t.error_code for t in resp.responses})}

        return self._per_group([group_id], send)[group_id]


def share_state(zk_client: Any, group_id: str) -> dict[TopicPartition, ShareSnapshot]:
    """The group's durable state per share partition (start offset, in-flight records)."""
    return ShareStateStore(zk_client).of_group(group_id)
