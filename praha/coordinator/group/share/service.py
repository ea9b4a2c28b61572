"""The share groups one group coordinator holds. A group's existence and epoch are written to
its `__consumer_offsets` partition (ShareGroupMetadata) before a change of them is answered, and
loaded by whichever broker coordinates the partition next, so an empty share group survives a
coordinator move. Membership is soft state: after a move, members are told UNKNOWN_MEMBER_ID and
join again with epoch 0; each share partition's records are kept by the partition leaders."""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field

from praha.coordinator.group.consumer.model import TopicInfo
from praha.coordinator.group.share.heartbeat import ShareAnswer, ShareHeartbeat, ShareSettings, expire, heartbeat
from praha.coordinator.group.share.model import Assignment, ShareGroup
from praha.coordinator.group.share.records import ShareGroupKey, ShareGroupValue, ShareRecord, encode
from praha.errors import ErrorCode

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShareListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str


@dataclass
class _Held:
    group: ShareGroup
    targets: dict[str, Assignment] = field(default_factory=dict)


#: appends records to a `__consumer_offsets` partition as leader, acks=all; the error code
Append = Callable[[int, list[tuple[bytes, bytes | None]]], Awaitable[ErrorCode]]


class ShareGroupService:
    def __init__(self, settings: ShareSettings, check: Callable[[str], ErrorCode],
                 other_group_type: Callable[[str], bool], topics: Callable[[], Mapping[str, TopicInfo]],
                 append: Append, partition_of: Callable[[str], int],
                 map_error: Callable[[ErrorCode], ErrorCode] = lambda code: code):
        """`check(group_id)`: NONE when this broker coordinates the group now; `other_group_type`:
        the id names a classic or consumer group; `topics`: the topics by name; `append` writes
        to the group's `__consumer_offsets` partition (`partition_of`), `map_error` turns its
        error into the coordinator's."""
        self.settings = settings
        self.check = check
        self.other_group_type = other_group_type
        self.topics = topics
        self.append = append
        self.partition_of = partition_of
        self.map_error = map_error
        self.groups: dict[str, _Held] = {}
        #: group id -> its settings with its GROUP config overrides (share.session.timeout.ms, ...)
        self.overrides: dict[str, ShareSettings] = {}
        #: epoch writes of members that expired (no request waits for them)
        self._pending: set[asyncio.Task[ErrorCode]] = set()

    # ------------------------------------------------------------ load / unload
    def load(self, partition: int, records: Iterable[ShareRecord]) -> int:
        """Replay a partition's share-group records (log order): each group is there, empty, at its epoch."""
        epochs: dict[str, int] = {}
        for r in records:
            if r.value is None:
                epochs.pop(r.key.group, None)
            else:
                epochs[r.key.group] = r.value.epoch
        for gid, epoch in epochs.items():
            self.groups[gid] = _Held(ShareGroup(gid, group_epoch=epoch, assignment_epoch=epoch))
        return len(epochs)

    def unload(self, partition: int) -> int:
        gone = [gid for gid in self.groups if self.partition_of(gid) == partition]
        for gid in gone:
            del self.groups[gid]
        return len(gone)

    async def _write(self, group_id: str, value: ShareGroupValue | None) -> ErrorCode:
        code = await self.append(self.partition_of(group_id), [encode(ShareRecord(ShareGroupKey(group_id), value))])
        if code != ErrorCode.NONE:
            log.warning("share group %s: its record (%s) not written: %s", group_id,
                        "deleted" if value is None else f"epoch {value.epoch}", code.name)
            return self.map_error(code)
        return code

    def settings_for(self, group_id: str) -> ShareSettings:
        return self.overrides.get(group_id, self.settings)

    def set_group_config(self, group_id: str, values: Mapping[str, str]) -> None:
        """A GROUP config (checked when written): the members' next heartbeats and expiry use it."""
        s = dataclasses.replace(
            self.settings,
            heartbeat_interval_ms=int(values.get("share.heartbeat.interval.ms", self.settings.heartbeat_interval_ms)),
            session_timeout_ms=int(values.get("share.session.timeout.ms", self.settings.session_timeout_ms)))
        if s == self.settings:
            self.overrides.pop(group_id, None)
        else:
            self.overrides[group_id] = s
            log.info("share group %s: session timeout %d ms, heartbeat interval %d ms", group_id,
                     s.session_timeout_ms, s.heartbeat_interval_ms)

    async def heartbeat(self, req: ShareHeartbeat, now_ms: int) -> ShareAnswer:
        """Decide in memory; a new group or a new group epoch is answered once its record is
        written (a failed write is answered with the mapped error, and the client retries; the
        in-memory members are soft state either way)."""
        if not req.group_id:
            return ShareAnswer(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        code = self.check(req.group_id)
        if code != ErrorCode.NONE:
            self.groups.pop(req.group_id, None)  # no longer ours: forget it
            return ShareAnswer(code)
        if req.group_id not in self.groups and self.other_group_type(req.group_id):
            return ShareAnswer(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a share group.")
        held = self.groups.get(req.group_id)
        if held is None:
            held = self.groups[req.group_id] = _Held(ShareGroup(req.group_id))
        before, epoch = len(held.group.members), held.group.group_epoch
        answer = heartbeat(held.group, held.targets, req, self.topics(), self.settings_for(req.group_id), now_ms)
        if len(held.group.members) != before:
            log.info("share group %s: %d members, epoch %d", req.group_id, len(held.group.members),
                     held.group.group_epoch)
        if held.group.group_epoch != epoch:
            code = await self._write(req.group_id, ShareGroupValue(held.group.group_epoch))
            if code != ErrorCode.NONE:
                return ShareAnswer(code, "The share group's record could not be written.")
        return answer

    def find(self, group_id: str) -> tuple[ErrorCode, ShareGroup | None]:
        code = self.check(group_id)
        if code != ErrorCode.NONE:
            return code, None
        held = self.groups.get(group_id)
        if held is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, None
        return ErrorCode.NONE, held.group

    def expire(self, now_ms: int) -> int:
        """Members past their session timeout leave (the group's new epoch written); groups no
        longer ours are dropped."""
        n = 0
        for gid, held in list(self.groups.items()):
            if self.check(gid) != ErrorCode.NONE:
                del self.groups[gid]
                continue
            gone = expire(held.group, held.targets, self.topics(), self.settings_for(gid), now_ms)
            if gone:
                log.info("share group %s: %d members expired (session timeout), %d left", gid, len(gone),
                         len(held.group.members))
                task = asyncio.get_running_loop().create_task(self._write(gid, ShareGroupValue(held.group.group_epoch)))
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)
            n += len(gone)
        return n

    def listed(self, states: set[str], types: set[str]) -> list[ShareListing]:
        """ListGroups' rows for the share groups held here (filters lower-case, empty: all)."""
        if types and "share" not in types:
            return []
        return [ShareListing(gid, "share", h.group.state.value, "share") for gid, h in sorted(self.groups.items())
                if self.check(gid) == ErrorCode.NONE and (not states or h.group.state.value.lower() in states)]

    async def delete(self, group_id: str) -> ErrorCode:
        """DeleteGroups of an empty share group: its record tombstoned, then forgotten."""
        code, g = self.find(group_id)
        if g is None:
            return code
        if g.members:
            return ErrorCode.NON_EMPTY_GROUP
        code = await self._write(group_id, None)
        if code != ErrorCode.NONE:
            return code
        held = self.groups.get(group_id)
        if held is not None and held.group is g and not g.members:
            del self.groups[group_id]
        return ErrorCode.NONE
