"""A share group as its coordinator holds it: epochs and members (Kafka's ShareGroup)."""
from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field

#: topic id -> partitions
Assignment = dict[uuid.UUID, frozenset[int]]


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...]
    assigned: Assignment = field(default_factory=dict)
    last_heartbeat_ms: int = 0


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    #: subscribed topic id -> partitions, as of the last assignment
    topics_seen: dict[uuid.UUID, int] = field(default_factory=dict)

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY
