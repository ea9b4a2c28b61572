"""One partition hosted by this broker: its log, role, ISR, high watermark and followers.

As leader (`make_leader`):
1. note the leader epoch's start offset (our log end) in the leader-epoch cache, so
   followers asking OffsetsForLeaderEpoch learn where the previous epoch ended;
2. forget what we knew about followers (their log ends are unknown until they fetch;
   ISR members count as caught up now, others as never);
3. own the ISR and its zkVersion (from the LeaderAndIsr, later from our own writes);
4. on every follower fetch (`update_follower`) record its log end and last caught-up
   time, advance the high watermark (min log end over the ISR, never backwards) and
   say whether it may join the ISR;
5. `out_of_sync_replicas(now)` names ISR members that have not caught up within
   `replica.lag.time.max.ms` (the replica manager checks periodically and writes the
   shrunk ISR to ZooKeeper).
As follower (`make_follower`): drop leader state; the fetcher truncates and appends,
and the high watermark follows the leader's answer (capped at our log end).

The decisions are pure functions (`high_watermark_candidate`, `ReplicaProgress.update`,
`out_of_sync`, `may_join_isr`), unit-tested without a broker. Everything here runs on
the broker's network event loop thread.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from praha.common import NO_LEADER, TopicPartition
from praha.log import Log
from praha.protocol.controller_requests import PartitionLeaderState

UNKNOWN_OFFSET = -1


class Role(Enum):
    LEADER = "leader"
    FOLLOWER = "follower"


# ------------------------------------------------------------------------- pure decisions
@dataclass(slots=True)
class ReplicaProgress:
    """What the leader knows about one follower (Kafka's Replica state on the leader)."""

    log_end_offset: int = UNKNOWN_OFFSET
    #: last time (ms) the follower was known to have everything the leader had
    last_caught_up_ms: int = 0
    #: the leader's log end and the time at the follower's previous fetch
    last_fetch_leader_leo: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0
    #: the follower's log start, as its fetches report it (Fetch v5+): DeleteRecords waits on it
    log_start_offset: int = UNKNOWN_OFFSET

    def update(self, fetch_offset: int, leader_leo: int, now_ms: int) -> None:
        """A fetch at `fetch_offset` proves the follower has everything below it.

        Caught up now if it asked for the leader's current end; caught up as of its
        previous fetch if it now has what the leader had back then (Kafka's rule, so a
        follower that keeps up with a busy leader is never seen as lagging)."""
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_leo >= 0:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_leo = leader_leo
        self.last_fetch_ms = now_ms


def high_watermark_candidate(leader_leo: int, members: Iterable[int], leader_id: int,
                             followers: Mapping[int, ReplicaProgress]) -> int:
    """min(log end) over the ISR members; an unknown follower log end holds it at -1."""
    hw = leader_leo
    for r in members:
        if r == leader_id:
            continue
        p = followers.get(r)
        leo = p.log_end_offset if p is not None else UNKNOWN_OFFSET
        if leo < hw:
            hw = leo
    return hw


def out_of_sync(isr: Iterable[int], leader_id: int, followers: Mapping[int, ReplicaProgress],
                now_ms: int, lag_time_max_ms: int) -> set[int]:
    """ISR members (not the leader) that have not caught up within the lag time."""
    out = set()
    for r in isr:
        if r == leader_id:
            continue
        p = followers.get(r)
        last = p.last_caught_up_ms if p is not None else 0
        if now_ms - last > lag_time_max_ms:
            out.add(r)
    return out


def may_join_isr(follower_leo: int, high_watermark: int, epoch_start_offset: int) -> bool:
    """A follower rejoins once it has everything up to the high watermark and everything
    written in an earlier epoch (so it cannot hold records this leader truncated)."""
    return follower_leo >= 0 and follower_leo >= high_watermark and follower_leo >= epoch_start_offset


# ------------------------------------------------------------------------- the partition
@dataclass
class Partition:
    tp: TopicPartition
    log: Log
    broker_id: int
    role: Role = Role.FOLLOWER
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    controller_epoch: int = -1
    zk_version: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    high_watermark: int = 0
    leader_epoch_start_offset: int = 0
    followers: dict[int, ReplicaProgress] = field(default_factory=dict)
    #: ISR being written to ZooKeeper (counts for acks and the high watermark meanwhile)
    pending_isr: tuple[int, ...] | None = None
    #: a conditional ISR write lost (BAD_VERSION): no more ISR changes until a LeaderAndIsr
    isr_frozen: bool = False
    min_insync_replicas: int = 1

    # -- roles ---------------------------------------------------------------------------
    def make_leader(self, s: PartitionLeaderState, now_ms: int) -> None:
        """A new leader forgets follower progress; a leader given a new epoch (e.g. the
        controller removed a dead replica from the ISR) keeps what it knows."""
        was_leader = self.is_leader
        self._take_state(s)
        self.role = Role.LEADER
        leo = self.log.log_end_offset
        self.leader_epoch_start_offset = leo
        self.log.epoch_cache.assign(s.leader_epoch, leo,
                                    durable=False)  # the log syncs it before its recovery point moves
        old = self.followers if was_leader else {}
        self.followers = {
            r: old.get(r) or ReplicaProgress(last_caught_up_ms=now_ms if r in s.isr else 0)
            for r in s.replicas if r != self.broker_id
        }
        self.high_watermark = min(self.high_watermark, leo)
        self.maybe_increment_high_watermark()

    def make_follower(self, s: PartitionLeaderState) -> None:
        self._take_state(s)
        self.role = Role.FOLLOWER
        self.followers = {}
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)

    def _take_state(self, s: PartitionLeaderState) -> None:
        self.leader_id = s.leader
        self.leader_epoch = s.leader_epoch
        self.controller_epoch = s.controller_epoch
        self.zk_version = s.zk_version
        self.replicas = tuple(s.replicas)
        self.isr = tuple(s.isr)
        self.pending_isr = None
        self.isr_frozen = False

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    # -- ISR and high watermark ------------------------------------------------------------
    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR including a pending expansion: the conservative set for the high
        watermark and acks=all while a write is in flight."""
        if self.pending_isr is None:
            return self.isr
        return tuple(dict.fromkeys(self.isr + self.pending_isr))

    def maybe_increment_high_watermark(self) -> bool:
        """Leader only: move the high watermark up to min(log end) over the ISR."""
        new = high_watermark_candidate(self.log.log_end_offset, self.maximal_isr, self.broker_id, self.followers)
        if new > self.high_watermark:
            self.high_watermark = new
            self.log.on_high_watermark(new)
            return True
        return False

    def update_follower(self, replica_id: int, fetch_offset: int, now_ms: int,
                        log_start_offset: int = UNKNOWN_OFFSET) -> tuple[bool, bool]:
        """Record a follower fetch. Returns (high watermark moved, may join the ISR)."""
        p = self.followers.get(replica_id)
        if p is None:
            if replica_id not in self.replicas:
                return False, False
            p = self.followers[replica_id] = ReplicaProgress()
        p.update(fetch_offset, self.log.log_end_offset, now_ms)
        if log_start_offset >= 0:
            p.log_start_offset = log_start_offset
        moved = self.maybe_increment_high_watermark() if replica_id in self.maximal_isr else False
        join = (
            replica_id not in self.isr
            and may_join_isr(fetch_offset, self.high_watermark, self.leader_epoch_start_offset)
        )
        return moved, join

    def low_watermark(self) -> int:
        """Leader only: the lowest log start over this replica and its in-sync followers
        (Kafka's lowWatermarkIfLeader); a follower that has not reported one counts as 0."""
        starts = [self.log.log_start_offset]
        for r in self.isr:
            if r != self.broker_id:
                f = self.followers.get(r)
                starts.append(max(f.log_start_offset, 0) if f is not None else 0)
        return min(starts)

    def out_of_sync_replicas(self, now_ms: int, lag_time_max_ms: int) -> set[int]:
        return out_of_sync(self.isr, self.broker_id, self.followers, now_ms, lag_time_max_ms)

    @property
    def under_replicated(self) -> bool:
        return self.is_leader and len(self.isr) < len(self.replicas)

    def update_follower_high_watermark(self, leader_hw: int) -> None:
        """Follower: the leader's high watermark, capped at what we have."""
        hw = min(leader_hw, self.log.log_end_offset)
        if hw > self.high_watermark:
            self.high_watermark = hw
            self.log.on_high_watermark(hw)

    def after_truncation(self) -> None:
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
