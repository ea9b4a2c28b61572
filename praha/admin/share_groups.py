"""Share groups (KIP-932) for `praha groups --share`: ShareGroupDescribe over the wire, and each
share partition's start offset and in-flight records from the durable share state praha keeps
in ZooKeeper (`praha.zk.share_state`; docs/share-groups.md)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from praha.admin.groups import GroupAdmin, GroupListing, Node
from praha.common import TopicPartition
from praha.errors import ErrorCode
from praha.protocol.api_keys import ApiKey
from praha.protocol.messages.gen.share import ShareGroupDescribeRequest
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
                members = tuple(ShareMember(m.member_id, m.client_id, m.client_host, m.member_epoch, tuple(
                    TopicPartition(t.topic_name, p) for t in m.assignment.topic_partitions for p in sorted(t.partitions)))
                    for m in d.members)
                out[d.group_id] = (d.error_code, ShareGroupDescription(d.group_id, d.group_state, d.group_epoch,
                                                                       d.assignor_name, members, node))
            return out

        return self._per_group(group_ids, send)


def share_state(zk_client: Any, group_id: str) -> dict[TopicPartition, ShareSnapshot]:
    """The group's durable state per share partition (start offset, in-flight records)."""
    return ShareStateStore(zk_client).of_group(group_id)
