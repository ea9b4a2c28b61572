"""Client quotas on a broker (Kafka's ClientQuotaManager): the decisions, with no I/O.

Per quota type (produce bytes, fetch bytes, request time) one `ClientQuotaManager`:
1. the quotas in force come from ZooKeeper's `/config/users|clients` (`update_quota`, fed
   by the broker's config change listener); with none set, `record` returns 0 at once;
2. a request's (principal, client id) resolves to the entity whose quota applies, in
   Kafka's order: user+client, user+default client, user, default user+client, default
   user+default client, default user, client, default client (`metric_tags`, `quota_limit`);
3. the amount is recorded into that entity's `WindowedRate` (Kafka's Rate over
   `quota.window.num` samples of `quota.window.size.seconds`) and, if the rate is now
   above the quota, the throttle time is Kafka's: (rate - quota) / quota * window size
   (`throttle_time_ms`), capped at one window for request time.
The caller sends the response with that `throttle_time_ms` and mutes the connection for it
(KIP-219). `clock_ms` is injectable for tests.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from praha.protocol.framing import ANONYMOUS_PRINCIPAL
from praha.zk.quota_entities import (
    CONSUMER_BYTE_RATE,
    DEFAULT,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    QuotaEntity,
    sanitize,
)

ANONYMOUS = ANONYMOUS_PRINCIPAL  # every request's principal until authentication exists
#: Kafka expires an idle client's sensors after an hour
INACTIVE_EXPIRY_MS = 3600 * 1000


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class QuotaType(Enum):
    PRODUCE = PRODUCER_BYTE_RATE
    FETCH = CONSUMER_BYTE_RATE
    REQUEST = REQUEST_PERCENTAGE


@dataclass(frozen=True, slots=True)
class QuotaWindow:
    """`quota.window.num` samples of `quota.window.size.seconds` each."""

    samples: int = 11
    size_ms: int = 1000


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0
    events: int = 0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0
        self.events = 0


class WindowedRate:
    """Kafka's `Rate` over a `WindowedSum`: the sum of the live samples divided by the time
    they span, which counts as at least `samples - 1` whole windows (so a client's first
    second is not measured as a burst)."""

    __slots__ = ("window", "_samples", "_current")

    def __init__(self, window: QuotaWindow):
        self.window = window
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window.size_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """The rate per second."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000.0)

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        elapsed = now_ms - self._oldest(now_ms).start_ms
        full = elapsed // self.window.size_ms
        if full < self.window.samples - 1:
            elapsed += (self.window.samples - 1 - full) * self.window.size_ms
        return max(elapsed, 1)

    def last_event_ms(self) -> int:
        return max((s.last_event_ms for s in self._samples), default=0)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # one extra slot: the sample overlapping the window's start still counts
        self._current = (self._current + 1) % (self.window.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms, now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _oldest(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return min(self._samples, key=lambda s: s.start_ms)

    def _purge(self, now_ms: int) -> None:
        expire_age = self.window.samples * self.window.size_ms
        for s in self._samples:
            if now_ms - s.last_event_ms >= expire_age:
                s.reset(now_ms)


def throttle_time_ms(observed: float, bound: float, window_ms: int) -> int:
    """Kafka's QuotaUtils.throttleTime: the delay X that brings the observed rate O back to
    the quota T over the window W, O * W / (W + X) = T, so X = (O - T) / T * W."""
    return round((observed - bound) / bound * window_ms)


@dataclass(slots=True)
class QuotaStats:
    throttled: int = 0
    throttle_time_ms: int = 0


@dataclass(slots=True)
class ClientQuotaManager:
    """One quota type's quotas and rates on this broker (see the module's steps)."""

    quota_type: QuotaType
    window: QuotaWindow = QuotaWindow()
    clock_ms: Callable[[], int] = monotonic_ms
    #: the longest throttle (request time: one window, as Kafka's ClientRequestQuotaManager)
    max_throttle_ms: int | None = None
    overrides: dict[QuotaEntity, float] = field(default_factory=dict)
    stats: QuotaStats = field(default_factory=QuotaStats)
    _rates: dict[tuple[str, str], WindowedRate] = field(default_factory=dict)
    _tags: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    _next_expiry_ms: int = 0

    @property
    def enabled(self) -> bool:
        return bool(self.overrides)

    def update_quota(self, entity: QuotaEntity, value: float | None) -> None:
        """Set (or with None remove) the entity's quota of this type."""
        if value is None:
            self.overrides.pop(entity, None)
        else:
            self.overrides[entity] = value
        self._tags.clear()  # the resolution may differ now

    def clear(self) -> None:
        """Forget every quota (the rates recorded so far stay)."""
        self.overrides.clear()
        self._tags.clear()

    # ------------------------------------------------------------ resolution
    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """(sanitized user, client id) of the entity whose rate this request counts in;
        an empty component is not part of it (Kafka's DefaultQuotaCallback.quotaMetricTags)."""
        key = (user, client_id)
        tags = self._tags.get(key)
        if tags is None:
            tags = self._tags[key] = self._resolve_tags(sanitize(user), client_id)
        return tags

    def _resolve_tags(self, u: str, client_id: str) -> tuple[str, str]:
        o = self.overrides
        c = sanitize(client_id)
        if QuotaEntity(u, c) in o or QuotaEntity(u, DEFAULT) in o:
            return u, client_id
        if QuotaEntity(u, None) in o:
            return u, ""
        if QuotaEntity(DEFAULT, c) in o or QuotaEntity(DEFAULT, DEFAULT) in o:
            return u, client_id
        if QuotaEntity(DEFAULT, None) in o:
            return u, ""
        return "", client_id

    def quota_limit(self, tags: tuple[str, str]) -> float | None:
        """The quota of the entity these tags name, None if it has none (unlimited)."""
        u, client_id = tags
        o = self.overrides
        c = sanitize(client_id) if client_id else ""
        if u and client_id:
            for entity in (QuotaEntity(u, c), QuotaEntity(u, DEFAULT), QuotaEntity(DEFAULT, c),
                           QuotaEntity(DEFAULT, DEFAULT)):
                if entity in o:
                    return o[entity]
        elif u:
            for entity in (QuotaEntity(u, None), QuotaEntity(DEFAULT, None)):
                if entity in o:
                    return o[entity]
        elif client_id:
            for entity in (QuotaEntity(None, c), QuotaEntity(None, DEFAULT)):
                if entity in o:
                    return o[entity]
        return None

    # ------------------------------------------------------------ recording
    def record(self, user: str, client_id: str, value: float) -> int:
        """Count `value` for this client now; the throttle time in ms (0: within its quota)."""
        if not self.overrides:
            return 0
        now = self.clock_ms()
        tags = self.metric_tags(user, client_id)
        rate = self._rate(tags, now)
        rate.record(value, now)
        bound = self.quota_limit(tags)
        if bound is None:
            return 0
        observed = rate.measure(now)
        if observed <= bound:
            return 0
        throttle = throttle_time_ms(observed, bound, rate.window_size_ms(now))
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return max(throttle, 0)

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        """Take back a recorded amount (a throttled fetch is answered empty: its bytes were not sent)."""
        if self.overrides:
            tags = self.metric_tags(user, client_id)
            now = self.clock_ms()
            self._rate(tags, now).record(-value, now)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most that can be recorded at once without a certain throttle (caps a fetch's
        size); None when unlimited."""
        if not self.overrides:
            return None
        bound = self.quota_limit(self.metric_tags(user, client_id))
        if bound is None:
            return None
        return bound * (self.window.samples - 1) * self.window.size_ms / 1000.0

    def throttled(self, throttle_ms: int) -> None:
        """A response of this type went out throttled for `throttle_ms` (for the figures)."""
        self.stats.throttled += 1
        self.stats.throttle_time_ms += throttle_ms

    def _rate(self, tags: tuple[str, str], now: int) -> WindowedRate:
        rate = self._rates.get(tags)
        if rate is None:
            if now >= self._next_expiry_ms:
                self._expire_idle(now)
            rate = self._rates[tags] = WindowedRate(self.window)
        return rate

    def _expire_idle(self, now: int) -> None:
        self._next_expiry_ms = now + 60_000
        idle = [t for t, r in self._rates.items() if now - r.last_event_ms() >= INACTIVE_EXPIRY_MS]
        for t in idle:
            del self._rates[t]


@dataclass(slots=True)
class ClientQuotas:
    """The broker's three client quota managers, updated together from ZooKeeper."""

    produce: ClientQuotaManager
    fetch: ClientQuotaManager
    request: ClientQuotaManager

    @classmethod
    def create(cls, window: QuotaWindow = QuotaWindow(), clock_ms: Callable[[], int] = monotonic_ms) -> ClientQuotas:
        return cls(ClientQuotaManager(QuotaType.PRODUCE, window, clock_ms),
                   ClientQuotaManager(QuotaType.FETCH, window, clock_ms),
                   ClientQuotaManager(QuotaType.REQUEST, window, clock_ms, max_throttle_ms=window.size_ms))

    def managers(self) -> tuple[ClientQuotaManager, ...]:
        return self.produce, self.fetch, self.request

    def apply_entity_config(self, entity: QuotaEntity, values: dict[str, float]) -> None:
        """An entity's quota config as ZooKeeper now has it (keys absent: quota removed)."""
        for m in self.managers():
            m.update_quota(entity, values.get(m.quota_type.value))

    def replace_all(self, configs: dict[QuotaEntity, dict[str, float]]) -> None:
        """Every entity's quotas at once (start-up)."""
        for m in self.managers():
            m.clear()
        for entity, values in configs.items():
            self.apply_entity_config(entity, values)
