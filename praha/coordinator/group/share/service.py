"""The share groups one group coordinator holds, in memory (membership is soft state: after a
coordinator moves, members are told UNKNOWN_MEMBER_ID and join again with epoch 0; what must
survive, each share partition's acknowledged records, is kept by the partition leaders)."""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from praha.coordinator.group.consumer.model import TopicInfo
from praha.coordinator.group.share.heartbeat import ShareAnswer, ShareHeartbeat, ShareSettings, expire, heartbeat
from praha.coordinator.group.share.model import Assignment, ShareGroup
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


class ShareGroupService:
    def __init__(self, settings: ShareSettings, check: Callable[[str], ErrorCode],
                 other_group_type: Callable[[str], bool], topics: Callable[[], Mapping[str, TopicInfo]]):
        """`check(group_id)`: NONE when this broker coordinates the group now; `other_group_type`:
        the id names a classic or consumer group; `topics`: the topics by name."""
        self.settings = settings
        self.check = check
        self.other_group_type = other_group_type
        self.topics = topics
        self.groups: dict[str, _Held] = {}
        #: group id -> its settings with its GROUP config overrides (share.session.timeout.ms, ...)
        self.overrides: dict[str, ShareSettings] = {}

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

    def heartbeat(self, req: ShareHeartbeat, now_ms: int) -> ShareAnswer:
        if not req.group_id:
            return ShareAnswer(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        code = self.check(req.group_id)
        if code != ErrorCode.NONE:
            self.groups.pop(req.group_id, None)  # no longer ours: forget it
            return ShareAnswer(code)
        if req.group_id not in self.groups and self.other_group_type(req.group_id):
            return ShareAnswer(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a share group.")
        held = self.groups.setdefault(req.group_id, _Held(ShareGroup(req.group_id)))
        before = len(held.group.members)
        answer = heartbeat(held.group, held.targets, req, self.topics(), self.settings_for(req.group_id), now_ms)
        if len(held.group.members) != before:
            log.info("share group %s: %d members, epoch %d", req.group_id, len(held.group.members),
                     held.group.group_epoch)
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
        """Members past their session timeout leave; groups no longer ours are dropped."""
        n = 0
        for gid, held in list(self.groups.items()):
            if self.check(gid) != ErrorCode.NONE:
                del self.groups[gid]
                continue
            gone = expire(held.group, held.targets, self.topics(), self.settings_for(gid), now_ms)
            if gone:
                log.info("share group %s: %d members expired (session timeout), %d left", gid, len(gone),
                         len(held.group.members))
            n += len(gone)
        return n

    def listed(self, states: set[str], types: set[str]) -> list[ShareListing]:
        """ListGroups' rows for the share groups held here (filters lower-case, empty: all)."""
        if types and "share" not in types:
            return []
        return [ShareListing(gid, "share", h.group.state.value, "share") for gid, h in sorted(self.groups.items())
                if self.check(gid) == ErrorCode.NONE and (not states or h.group.state.value.lower() in states)]

    def delete(self, group_id: str) -> ErrorCode:
        code, g = self.find(group_id)
        if g is None:
            return code
        if g.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        return ErrorCode.NONE
