"""Share sessions (KIP-932) on a partition leader: which partitions a member fetches, and the
session epoch that orders its requests. Pure decisions; the cache is keyed by (group, member).

- ShareFetch epoch 0 opens a session (replacing one the member had), -1 closes it after its
  acknowledgements; any other epoch must be the session's next one (INVALID_SHARE_SESSION_EPOCH),
  of a session that exists (SHARE_SESSION_NOT_FOUND). Each accepted request moves the epoch on.
- ShareAcknowledge never opens a session: epoch 0 is INVALID_SHARE_SESSION_EPOCH.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from praha.common import TopicPartition
from praha.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1
    partitions: set[TopicPartition] = field(default_factory=set)


@dataclass(frozen=True)
class SessionDecision:
    error: ErrorCode
    session: ShareSession | None = None
    #: the request closes the session (epoch -1): acknowledge, release, answer no records
    closing: bool = False
    message: str | None = None


def _next(epoch: int) -> int:
    return 1 if epoch >= MAX_EPOCH else epoch + 1


class ShareSessionCache:
    """The sessions of one leader (not evicted: a session of a consumer that died stays until
    the member opens a new one with epoch 0; its records come back when their locks expire)."""

    def __init__(self) -> None:
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def on_fetch(self, group_id: str, member_id: str, epoch: int, added: Iterable[TopicPartition],
                 forgotten: Iterable[TopicPartition]) -> SessionDecision:
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            s = ShareSession(group_id, member_id, 1, set(added))
            self.sessions[key] = s
            return SessionDecision(ErrorCode.NONE, s)
        return self._existing(key, epoch, added, forgotten)

    def on_acknowledge(self, group_id: str, member_id: str, epoch: int) -> SessionDecision:
        if epoch == INITIAL_EPOCH:
            return SessionDecision(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                                   message="ShareAcknowledge cannot open a share session (epoch 0).")
        return self._existing((group_id, member_id), epoch, (), ())

    def _existing(self, key: tuple[str, str], epoch: int, added: Iterable[TopicPartition],
                  forgotten: Iterable[TopicPartition]) -> SessionDecision:
        s = self.sessions.get(key)
        if s is None:
            return SessionDecision(ErrorCode.SHARE_SESSION_NOT_FOUND,
                                   message=f"No share session for member {key[1]} of group {key[0]}.")
        if epoch == FINAL_EPOCH:
            del self.sessions[key]
            return SessionDecision(ErrorCode.NONE, s, closing=True)
        if epoch != s.epoch:
            return SessionDecision(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                                   message=f"Share session epoch {epoch}, expected {s.epoch}.")
        s.partitions |= set(added)
        s.partitions -= set(forgotten)
        s.epoch = _next(s.epoch)
        return SessionDecision(ErrorCode.NONE, s)

    def remove_member(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)
