"""Durable share-partition state (KIP-932), in ZooKeeper: what each share partition has
acknowledged survives a leader failover and a restart.

Kafka keeps this state in `__share_group_state` through a share coordinator; praha, a
ZooKeeper-mode cluster, keeps it in one znode per (group, topic, partition):
`/praha/share_group_state/<group>/<topic>/<partition>` (the group id percent-encoded), JSON
of the start offset and the in-flight window's state batches (Kafka's ShareSnapshot
fields), with the leader epoch that wrote it. Writes are conditional on the znode version
the leader read or last wrote, so a deposed leader's late write fails (Kafka's
FENCED_STATE_EPOCH) instead of overwriting its successor's state.
"""
from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from praha.common import TopicPartition
from praha.errors import ErrorCode, PrahaError
from praha.zk.znodes import SHARE_GROUP_STATE_PATH, decode_partition_state, partition_state_path


class FencedStateEpoch(PrahaError):
    code = ErrorCode.FENCED_STATE_EPOCH


_T = TypeVar("_T")


def _on_loop(results: list[Any], decide: Callable[[list[Any]], _T]) -> asyncio.Future[_T]:
    """kazoo's async results as one future of the running event loop: settled from kazoo's
    callback thread, with no executor thread between (each ZooKeeper round trip of the share
    path is on a member's critical path). `decide` turns the settled results (kazoo's
    `get_nowait()` raises a failed one's error) into the answer, or raises."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[_T] = loop.create_future()
    left = [len(results)]

    def settle() -> None:
        if fut.done():
            return
        try:
            fut.set_result(decide(results))
        except Exception as e:  # noqa: BLE001 - the caller decides what a failed read or write means
            fut.set_exception(e)

    def one_done(_: Any) -> None:  # kazoo's callback thread
        left[0] -= 1
        if left[0] == 0:
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the loop closed meanwhile (the broker stopping): nobody waits
                pass

    for r in results:
        r.rawlink(one_done)
    return fut


#: (first offset, last offset, record state, delivery count): Kafka's state batch fields
Batch = tuple[int, int, int, int]
#: the record states a state batch may hold (Kafka's values): available, acknowledged, archived
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


@dataclass(frozen=True)
class ShareSnapshot:
    start_offset: int
    batches: tuple[Batch, ...]
    leader_epoch: int

    def in_flight(self) -> int:
        """Records of the window not yet done (acquired ones are stored as available)."""
        return sum(b[1] - b[0] + 1 for b in self.batches if b[2] == AVAILABLE)


def group_path(group_id: str) -> str:
    return f"{SHARE_GROUP_STATE_PATH}/{urllib.parse.quote(group_id, safe='')}"


def state_path(group_id: str, tp: TopicPartition) -> str:
    return f"{group_path(group_id)}/{tp.topic}/{tp.partition}"


def encode(s: ShareSnapshot) -> bytes:
    return json.dumps({"version": 1, "leader_epoch": s.leader_epoch, "start_offset": s.start_offset,
                       "state_batches": [list(b) for b in s.batches]}, separators=(",", ":")).encode()


def decode(data: bytes) -> ShareSnapshot:
    d = json.loads(data)
    return ShareSnapshot(int(d["start_offset"]), tuple((int(a), int(b), int(st), int(dc))
                                                       for a, b, st, dc in d["state_batches"]),
                         int(d["leader_epoch"]))


class ShareStateStore:
    """Blocking reads and fenced writes of share-partition state (call from an executor)."""

    def __init__(self, client: Any) -> None:
        self.client = client  # a started kazoo client (the broker's ZkStore.client)

    def read(self, group_id: str, tp: TopicPartition) -> tuple[ShareSnapshot | None, int]:
        """The state and its znode version; (None, -1) when the group has none on this partition."""
        try:
            data, stat = self.client.get(state_path(group_id, tp))
        except NoNodeError:
            return None, -1
        return decode(data), stat.version

    def write(self, group_id: str, tp: TopicPartition, snap: ShareSnapshot, version: int) -> int:
        """Store `snap` if the znode is still at `version` (-1: must not exist yet); its new version."""
        path = state_path(group_id, tp)
        try:
            if version < 0:
                self.client.create(path, encode(snap), makepath=True)
                return 0
            return int(self.client.set(path, encode(snap), version=version).version)
        except (BadVersionError, NodeExistsError):
            raise FencedStateEpoch(f"share state of {group_id} {tp} was written by a newer leader") from None
        except NoNodeError:  # deleted since this leader read it (DeleteShareGroupOffsets, DeleteGroups)
            raise FencedStateEpoch(f"share state of {group_id} {tp} was deleted") from None

    def write_async(self, group_id: str, tp: TopicPartition, snap: ShareSnapshot, version: int
                    ) -> asyncio.Future[int]:
        """`write` of an existing znode (version >= 0) as a future of the running loop. The
        request is queued at once, so a read queued after it on this session sees its outcome
        (ZooKeeper answers a session's requests in order)."""
        path = state_path(group_id, tp)

        def decide(results: list[Any]) -> int:
            try:
                return int(results[0].get_nowait().version)
            except BadVersionError:
                raise FencedStateEpoch(f"share state of {group_id} {tp} was written by a newer leader") from None
            except NoNodeError:  # deleted since this leader read it (DeleteShareGroupOffsets, DeleteGroups)
                raise FencedStateEpoch(f"share state of {group_id} {tp} was deleted") from None

        return _on_loop([self.client.set_async(path, encode(snap), version=version)], decide)

    def standing_async(self, group_id: str, tp: TopicPartition) -> asyncio.Future[tuple[int, int]]:
        """The state znode's version (-1: none) and the partition's leader epoch as ZooKeeper has
        it, read together (two pipelined reads, queued at once): before handing records out, a
        leader checks that nobody rewrote the state and that the controller has not elected
        another leader it has not heard of yet."""
        def decide(results: list[Any]) -> tuple[int, int]:
            stat, (data, pstat) = (r.get_nowait() for r in results)
            epoch = decode_partition_state(data, pstat.version).leader_and_isr.leader_epoch
            return (-1 if stat is None else int(stat.version)), epoch

        return _on_loop([self.client.exists_async(state_path(group_id, tp)),
                         self.client.get_async(partition_state_path(tp.topic, tp.partition))], decide)

    def version(self, group_id: str, tp: TopicPartition) -> int:
        """The state znode's version (-1: none), to see whether another broker rewrote it."""
        stat = self.client.exists(state_path(group_id, tp))
        return -1 if stat is None else int(stat.version)

    def replace(self, group_id: str, tp: TopicPartition, snap: ShareSnapshot) -> None:
        """Store `snap` whatever is there (AlterShareGroupOffsets on a group without members)."""
        path = state_path(group_id, tp)
        try:
            self.client.set(path, encode(snap))
        except NoNodeError:
            self.client.create(path, encode(snap), makepath=True)

    def delete_topic(self, group_id: str, topic: str) -> None:
        """Drop the group's state of every partition of `topic` (DeleteShareGroupOffsets)."""
        try:
            self.client.delete(f"{group_path(group_id)}/{topic}", recursive=True)
        except NoNodeError:
            pass

    def groups(self) -> list[str]:
        try:
            return sorted(urllib.parse.unquote(g) for g in self.client.get_children(SHARE_GROUP_STATE_PATH))
        except NoNodeError:
            return []

    def of_group(self, group_id: str) -> dict[TopicPartition, ShareSnapshot]:
        out: dict[TopicPartition, ShareSnapshot] = {}
        try:
            topics = self.client.get_children(group_path(group_id))
        except NoNodeError:
            return out
        for t in topics:
            for p in self.client.get_children(f"{group_path(group_id)}/{t}"):
                snap, _ = self.read(group_id, TopicPartition(t, int(p)))
                if snap is not None:
                    out[TopicPartition(t, int(p))] = snap
        return out

    def delete_group(self, group_id: str) -> None:
        try:
            self.client.delete(group_path(group_id), recursive=True)
        except NoNodeError:
            pass

