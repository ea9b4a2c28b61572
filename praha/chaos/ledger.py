"""What the clients were told and what they saw: the evidence the invariants are judged on.

Producers write records whose value is a unique id `<producer>-<seq>`; the ledger keeps,
per id, where the broker said it was stored (acknowledged) or why it failed. Consumers
report every (partition, offset) → id they are served; the first value seen for an
offset is kept, and a different value later is a divergence, recorded at once.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from praha.chaos.timeline import Timeline

Tp = tuple[str, int]


@dataclass
class Ack:
    tp: Tp
    offset: int
    t: float


@dataclass
class Ledger:
    timeline: Timeline
    acked: dict[str, Ack] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # id -> error name
    sent: int = 0
    served: dict[Tp, dict[int, str]] = field(default_factory=dict)  # what consumers were served
    served_count: int = 0
    divergences: list[tuple[Tp, int, str, str]] = field(default_factory=list)
    rewinds: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on_sent(self) -> None:
        with self._lock:
            self.sent += 1

    def on_ack(self, rid: str, tp: Tp, offset: int) -> None:
        t = self.timeline.now()
        with self._lock:
            self.acked[rid] = Ack(tp, offset, t)

    def on_fail(self, rid: str, error: str) -> None:
        with self._lock:
            self.failed[rid] = error

    def on_served(self, tp: Tp, offset: int, rid: str) -> None:
        with self._lock:
            self.served_count += 1
            seen = self.served.setdefault(tp, {})
            prev = seen.get(offset)
            if prev is None:
                seen[offset] = rid
                return
            if prev == rid:
                return
            self.divergences.append((tp, offset, prev, rid))
        self.timeline.violate("divergent_offset", f"{tp[0]}-{tp[1]} offset {offset} served as {prev!r} then {rid!r}",
                              topic=tp[0], partition=tp[1], offset=offset, first=prev, then=rid)

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def snapshot_acked(self) -> dict[str, Ack]:
        with self._lock:
            return dict(self.acked)


@dataclass
class Commit:
    offset: int
    t: float  # when the member got the coordinator's acknowledgement (campaign seconds)
    member: str
    sent_t: float = -1.0  # when the member sent the OffsetCommit


@dataclass
class Observed:
    offset: int  # what OffsetFetch said was committed (-1: nothing)
    t: float  # when the member sent the OffsetFetch
    member: str


@dataclass
class GroupLedger:
    """What the consumer group's members were served and committed (from their own files).

    `commits[tp]`: every committed offset the coordinator acknowledged, in acknowledgement
    order; `observed[tp]`: what a member was told was committed when it got the partition;
    `delivered`: every record id the group was served; `final_committed`: the last OffsetFetch."""
    commits: dict[Tp, list[Commit]] = field(default_factory=dict)
    observed: dict[Tp, list[Observed]] = field(default_factory=dict)
    delivered: set[str] = field(default_factory=set)
    delivered_count: int = 0
    final_committed: dict[Tp, int] = field(default_factory=dict)
    members_started: int = 0
    members_killed: int = 0
    assignments: int = 0
    commit_failures: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    caught_up: bool = False
    catch_up_s: float = 0.0

    def on_delivered(self, tp: Tp, offset: int, rid: str) -> None:
        self.delivered.add(rid)
        self.delivered_count += 1

    def on_commit(self, tp: Tp, offset: int, t: float, member: str, sent_t: float = -1.0) -> None:
        self.commits.setdefault(tp, []).append(Commit(offset, t, member, sent_t))

    def on_observed(self, tp: Tp, offset: int, t: float, member: str) -> None:
        self.observed.setdefault(tp, []).append(Observed(offset, t, member))
