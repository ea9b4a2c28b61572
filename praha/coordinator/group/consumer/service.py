"""KIP-848 consumer groups on one broker: the decisions of `heartbeat.py` applied to the log
and the clock. Runs on the broker's event loop (no locks), beside the classic coordinator,
which hands it the records of its `__consumer_offsets` partitions on load and its appends.

A heartbeat is answered only once its records are replicated (acks=all). If the append
fails, the group is put back as it was before the decision and the client gets Kafka's
mapped error (it retries). Timers: one session timer per member (restarted by each of its
heartbeats) and one revocation timer while a member holds partitions it must give up; when
either fires the member is fenced, through a decision and an append like any other change.
"""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from praha.common import now_ms
from praha.coordinator.group.consumer.heartbeat import (
    ConsumerGroupSettings,
    Decision,
    HeartbeatAnswer,
    HeartbeatRequest,
    TimerKind,
    Timers,
    heartbeat,
    is_steady,
    revocation_expired,
    session_expired,
    steady_heartbeat,
    topics_changed,
)
from praha.coordinator.group.consumer.model import ConsumerGroup, ConsumerGroupState, TopicInfo
from praha.coordinator.group.consumer.records import Record, encode
from praha.coordinator.group.consumer.replay import replay
from praha.errors import ErrorCode, PrahaError

log = logging.getLogger(__name__)

#: appends records to a `__consumer_offsets` partition as leader, acks=all; the error code
Append = Callable[[int, list[tuple[bytes, bytes | None]]], Awaitable[ErrorCode]]


#: a timer woken this close to its deadline fires (the loop may run a handle a hair early)
_EARLY_S = 0.001


class _Timer:
    """A member's timer whose restarts cost no timer-heap work: a heartbeat only moves the
    deadline later; the scheduled wake-up, when it comes, waits on for the rest. (Restarting
    by cancel and reschedule was 40% of a steady heartbeat's CPU with 1,000 members.)"""

    __slots__ = ("deadline", "ms", "decide", "handle")

    def __init__(self, deadline: float, ms: int, decide: Callable[[], list[Record]]) -> None:
        self.deadline, self.ms, self.decide = deadline, ms, decide
        self.handle: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()


@dataclass(frozen=True, slots=True)
class HeartbeatOutcome:
    error: ErrorCode
    message: str | None = None
    answer: HeartbeatAnswer | None = None


def snapshot(g: ConsumerGroup) -> ConsumerGroup:
    """A copy a failed append can put back (members and assignments are immutable values)."""
    return dataclasses.replace(g, members=dict(g.members), target=dict(g.target), static_members=dict(g.static_members),
                               partition_epochs=dict(g.partition_epochs),
                               subscription_metadata=dict(g.subscription_metadata),
                               resolved_regexes=dict(g.resolved_regexes), acknowledged=dict(g.acknowledged),
                               unconfirmed=dict(g.unconfirmed))


class ConsumerGroupService:
    def __init__(self, settings: ConsumerGroupSettings, append: Append, partition_of: Callable[[str], int],
                 topics: Callable[[], Mapping[str, TopicInfo]], map_error: Callable[[ErrorCode], ErrorCode]):
        self.settings = settings
        self.append = append
        self.partition_of = partition_of
        self.topics = topics
        self.map_error = map_error
        self.groups: dict[str, ConsumerGroup] = {}
        self._timers: dict[tuple[str, str, TimerKind], _Timer] = {}
        self._pending: set[asyncio.Task[ErrorCode]] = set()
        self.heartbeats = 0
        self.rebalances = 0
        #: group id -> its GROUP config overrides (`consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms`)
        self.overrides: dict[str, ConsumerGroupSettings] = {}
        #: called (group id) after a timer fenced a member and its records were written: the
        #: coordinator may then move the group back to the classic protocol
        self.on_fenced: Callable[[str], None] = lambda group_id: None

    # ------------------------------------------------------------ load / unload
    def load(self, partition: int, records: Iterable[Record]) -> int:
        """Replay a partition's consumer-group records (log order); start every member's session."""
        loaded: dict[str, ConsumerGroup] = {}
        replay(loaded, records)
        for gid, g in loaded.items():
            self.groups[gid] = g
            for mid, m in g.members.items():
                ms = m.classic.session_timeout_ms if m.classic is not None else \
                    self.settings_for(gid).session_timeout_ms
                self._restart(gid, mid, TimerKind.SESSION, ms,
                              functools.partial(session_expired, self.groups, gid, mid))
        return len(loaded)

    def unload(self, partition: int) -> int:
        gone = [gid for gid in self.groups if self.partition_of(gid) == partition]
        for gid in gone:
            del self.groups[gid]
            for key in [k for k in self._timers if k[0] == gid]:
                self._timers.pop(key).cancel()
        return len(gone)

    def settings_for(self, group_id: str) -> ConsumerGroupSettings:
        return self.overrides.get(group_id, self.settings)

    def set_group_config(self, group_id: str, values: Mapping[str, str]) -> None:
        """A GROUP config (already checked when written): its members' next answers and timers use it."""
        session = int(values.get("consumer.session.timeout.ms", self.settings.session_timeout_ms))
        interval = int(values.get("consumer.heartbeat.interval.ms", self.settings.heartbeat_interval_ms))
        if (session, interval) == (self.settings.session_timeout_ms, self.settings.heartbeat_interval_ms):
            self.overrides.pop(group_id, None)
        else:
            self.overrides[group_id] = dataclasses.replace(self.settings, session_timeout_ms=session,
                                                           heartbeat_interval_ms=interval)
        log.info("consumer group %s: session timeout %d ms, heartbeat interval %d ms", group_id, session, interval)

    def is_consumer_group(self, group_id: str) -> bool:
        g = self.groups.get(group_id)
        return g is not None and not g.dead

    def _snapshot_of(self, group_id: str) -> ConsumerGroup | None:
        g = self.groups.get(group_id)
        return None if g is None else snapshot(g)

    # ------------------------------------------------------------ heartbeat
    async def heartbeat(self, req: HeartbeatRequest, now: int) -> HeartbeatOutcome:
        self.heartbeats += 1
        settings = self.settings_for(req.group_id)
        if is_steady(self.groups, req):  # most heartbeats of a settled group: nothing to decide or write
            d = steady_heartbeat(self.groups, req, settings)
            self._apply_timers(req.group_id, d)
            return HeartbeatOutcome(ErrorCode.NONE, None, d.answer)
        return await self.decide(req.group_id, functools.partial(heartbeat, self.groups, req, self.topics(), settings,
                                                                 now))

    async def decide(self, group_id: str, decision: Callable[[], Decision],
                     extra: list[tuple[bytes, bytes | None]] | None = None) -> HeartbeatOutcome:
        """Run a decision on the group, write its records (with `extra` ones, already encoded, in
        the same append), then apply its timers; the group is put back when the write fails."""
        started = time.perf_counter()
        before = self._snapshot_of(group_id)
        try:
            d = decision()
        except PrahaError as e:  # decisions check before they change a group; one they created goes
            if before is None:
                self.groups.pop(group_id, None)
            return HeartbeatOutcome(e.code, str(e))
        decided = time.perf_counter()
        code = await self._write(group_id, d.records, before, extra)
        if d.records:  # where a rebalance's time goes: the decision (assignor) or the acks=all write
            log.debug("consumer group %s: decided in %.1f ms, %d records written in %.1f ms", group_id,
                      (decided - started) * 1000, len(d.records), (time.perf_counter() - decided) * 1000)
        if code != ErrorCode.NONE:
            return HeartbeatOutcome(code, "the group's records could not be written")
        self._apply_timers(group_id, d)
        return HeartbeatOutcome(ErrorCode.NONE, None, d.answer)

    async def write(self, group_id: str, records: list[Record], before: ConsumerGroup | None,
                    extra: list[tuple[bytes, bytes | None]] | None = None) -> ErrorCode:
        """Records already replayed onto the group, written; put back to `before` on failure."""
        return await self._write(group_id, records, before, extra)

    def touch(self, group_id: str, member_id: str, ms: int) -> None:
        """A member showed it is alive (a classic Heartbeat, SyncGroup): its session timer restarts."""
        self._restart(group_id, member_id, TimerKind.SESSION, ms,
                      lambda: session_expired(self.groups, group_id, member_id))

    def cancel_timers(self, group_id: str, member_ids: Iterable[str]) -> None:
        for mid in member_ids:
            self._stop(group_id, mid, *TimerKind)

    def timers(self, group_id: str, timers: Timers) -> None:
        """Apply what a decision taken outside `decide` says of the timers (a classic Heartbeat, SyncGroup)."""
        self._apply_timers(group_id, Decision([], None, timers))

    def deadlines(self, group_id: str, member_id: str) -> dict[TimerKind, float]:
        """The member's running timers and when each fires (the event loop's clock)."""
        return {k: t.deadline for (g, m, k), t in self._timers.items() if (g, m) == (group_id, member_id)}

    def _stop(self, group_id: str, member_id: str, *kinds: TimerKind) -> None:
        for kind in kinds:
            h = self._timers.pop((group_id, member_id, kind), None)
            if h is not None:
                h.cancel()

    def forget(self, group_id: str) -> None:
        """The group left this service (downgraded): its timers stop."""
        self.groups.pop(group_id, None)
        for key in [k for k in self._timers if k[0] == group_id]:
            self._timers.pop(key).cancel()

    async def _write(self, group_id: str, records: list[Record], before: ConsumerGroup | None,
                     extra: list[tuple[bytes, bytes | None]] | None = None) -> ErrorCode:
        if not records and not extra:
            return ErrorCode.NONE
        g = self.groups.get(group_id)
        epoch_before = -1 if before is None else before.group_epoch
        code = await self.append(self.partition_of(group_id), [*(extra or []), *(encode(r) for r in records)])
        if code != ErrorCode.NONE:
            if before is None:
                self.groups.pop(group_id, None)
            else:
                self.groups[group_id] = before
            log.warning("consumer group %s: %d records not written (%s); state put back", group_id, len(records),
                        code.name)
            return self.map_error(code)
        if g is not None and g.group_epoch != epoch_before:
            self.rebalances += 1
            log.info("consumer group %s: epoch %d, target epoch %d, %d members, state %s", group_id, g.group_epoch,
                     g.assignment_epoch, len(g.members), g.state.value)
        return ErrorCode.NONE

    def _apply_timers(self, group_id: str, d: Decision) -> None:
        t: Timers = d.timers
        for mid in t.cancel:
            self._stop(group_id, mid, *TimerKind)
        for mid, kind in t.stop:
            self._stop(group_id, mid, kind)
        if t.session is not None:
            mid, ms = t.session
            self._restart(group_id, mid, TimerKind.SESSION, ms, lambda: session_expired(self.groups, group_id, mid))
        if t.revocation is not None:
            rmid, epoch, rms = t.revocation
            self._restart(group_id, rmid, TimerKind.REVOCATION, rms,
                          lambda: revocation_expired(self.groups, group_id, rmid, epoch))
        # a classic member's join and sync timers fence it as its session timer does (Kafka's
        # consumerGroupFenceMemberOperation); a join timer already running is left as it is
        if t.join is not None and (group_id, t.join[0], TimerKind.JOIN) not in self._timers:
            jmid, jms = t.join
            self._restart(group_id, jmid, TimerKind.JOIN, jms, lambda: session_expired(self.groups, group_id, jmid))
        if t.sync is not None:
            smid, sms = t.sync
            self._restart(group_id, smid, TimerKind.SYNC, sms, lambda: session_expired(self.groups, group_id, smid))

    def _restart(self, group_id: str, member_id: str, kind: TimerKind, ms: int,
                 decide: Callable[[], list[Record]]) -> None:
        key = (group_id, member_id, kind)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ms / 1000
        t = self._timers.get(key)
        if t is None:
            t = self._timers[key] = _Timer(deadline, ms, decide)
        else:
            t.deadline, t.ms, t.decide = deadline, ms, decide
            if t.handle is not None and t.handle.when() <= deadline:
                return  # it wakes first and waits on (most restarts: a heartbeat within the session)
            t.cancel()
        t.handle = loop.call_at(deadline, self._due, key, t)

    def _due(self, key: tuple[str, str, TimerKind], t: _Timer) -> None:
        if self._timers.get(key) is not t:
            return
        loop = asyncio.get_running_loop()
        if t.deadline - loop.time() > _EARLY_S:  # restarted since it was scheduled
            t.handle = loop.call_at(t.deadline, self._due, key, t)
            return
        del self._timers[key]
        group_id, member_id, kind = key
        before = self._snapshot_of(group_id)
        records = t.decide()
        if records:
            log.info("consumer group %s: member %s fenced (%s timeout, %d ms)", group_id, member_id,
                     kind.value, t.ms)
            self._stop(group_id, member_id, *TimerKind)
            task = loop.create_task(self._write(group_id, records, before))
            task.add_done_callback(lambda done: self.on_fenced(group_id) if not done.cancelled() and
                                   done.exception() is None and done.result() == ErrorCode.NONE else None)
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    # ------------------------------------------------------------ topics
    async def on_topics_changed(self) -> int:
        """Topics were created, deleted or grew: groups whose subscriptions changed get a new epoch."""
        topics = self.topics()
        changed = 0
        by_group: dict[str, list[Record]] = {}
        befores = {gid: snapshot(g) for gid, g in self.groups.items()}
        for r in topics_changed(self.groups, topics, now_ms=now_ms()):
            by_group.setdefault(r.key.group, []).append(r)
        for gid, records in by_group.items():
            if await self._write(gid, records, befores.get(gid)) == ErrorCode.NONE:
                changed += 1
        return changed

    # ------------------------------------------------------------ views
    def states(self) -> dict[str, ConsumerGroupState]:
        return {gid: g.state for gid, g in self.groups.items() if not g.dead}

    def shutdown(self) -> None:
        for t in self._timers.values():
            t.cancel()
        self._timers.clear()
