"""Which partitions of its internal topic a coordinator owns, and the answer a request gets.

A coordinator (group or transaction) serves the ids that hash to the partitions of its
internal topic this broker leads. A partition is LOADING from the leadership change until
its records are replayed, then ACTIVE until the broker resigns it. A request for an id of a
partition not owned is told NOT_COORDINATOR (the client looks the coordinator up again);
one still loading, COORDINATOR_LOAD_IN_PROGRESS (the client retries). No I/O here.
"""
from __future__ import annotations

from enum import Enum

from praha.errors import ErrorCode


class Ownership(Enum):
    LOADING = "loading"
    ACTIVE = "active"


#: an owned partition: its state and the leader epoch it was elected at
Owned = tuple[Ownership, int]


def ownership_error(owned: Owned | None) -> ErrorCode:
    """The error for a request whose id maps to a partition in this state (NONE: serve it)."""
    if owned is None:
        return ErrorCode.NOT_COORDINATOR
    if owned[0] is Ownership.LOADING:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    return ErrorCode.NONE
