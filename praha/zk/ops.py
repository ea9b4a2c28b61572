"""Write operations for `ZkStore.multi`/`fenced_multi` and their per-operation outcomes.

Kept apart from the store so the controller's state machines can build operation lists
(and unit tests can inspect them) without a ZooKeeper connection.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    """Set data; `version=-1` means any version, else the write is conditional on it."""

    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = -1


ZkOp = CreateOp | SetDataOp | DeleteOp


class WriteOutcome(Enum):
    OK = "ok"
    BAD_VERSION = "bad_version"
    NO_NODE = "no_node"
    NODE_EXISTS = "node_exists"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class WriteResult:
    """Outcome of one operation. `stat_version` is the node's new version after a set (0 after
    a create); `created_path` is the name a (sequential) create got; `error` names any other
    ZooKeeper error (outcome FAILED)."""

    outcome: WriteOutcome
    stat_version: int | None = None
    created_path: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is WriteOutcome.OK


def outcome_of_error(exc: BaseException) -> WriteResult:
    """Map a kazoo error of one operation to its WriteResult."""
    if isinstance(exc, BadVersionError):
        return WriteResult(WriteOutcome.BAD_VERSION)
    if isinstance(exc, NoNodeError):
        return WriteResult(WriteOutcome.NO_NODE)
    if isinstance(exc, NodeExistsError):
        return WriteResult(WriteOutcome.NODE_EXISTS)
    return WriteResult(WriteOutcome.FAILED, error=type(exc).__name__)
