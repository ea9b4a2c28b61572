"""Replication throttles (Kafka's names): which replicas are throttled, and the byte budget.

A reassignment's throttle (`praha reassign execute --throttle B`) is two pieces of dynamic
config, as Kafka writes them (names in `praha.config`):
- per topic, `follower.replication.throttled.replicas` = "partition:broker,..." (or "*"):
  the replicas being added, i.e. the followers that copy a whole log;
- per broker, `follower.replication.throttled.rate` = bytes/s in `/config/brokers/<id>`
  (or `<default>`).
A follower fetches a throttled partition only while its budget allows, unless that
replica has caught up with the leader's high watermark (then it is in sync and never
held back, as in Kafka). Nothing here does I/O; `clock` is injectable for tests.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ThrottledReplicas:
    """A parsed `*.replication.throttled.replicas` value."""
    all_replicas: bool = False
    pairs: frozenset[tuple[int, int]] = frozenset()

    def covers(self, partition: int, broker: int) -> bool:
        return self.all_replicas or (partition, broker) in self.pairs

    @property
    def empty(self) -> bool:
        return not self.all_replicas and not self.pairs


NO_THROTTLED_REPLICAS = ThrottledReplicas()


def parse_throttled_replicas(value: str | None) -> ThrottledReplicas:
    """"0:1,1:2" → pairs; "*" → every replica; "" or None → none. ValueError if malformed."""
    if value is None or not value.strip():
        return NO_THROTTLED_REPLICAS
    value = value.strip()
    if value == "*":
        return ThrottledReplicas(all_replicas=True)
    pairs = set()
    for item in value.split(","):
        partition, sep, broker = item.strip().partition(":")
        if not sep or not partition.strip().isdigit() or not broker.strip().isdigit():
            raise ValueError(f"throttled replica {item.strip()!r} is not partition:broker")
        pairs.add((int(partition), int(broker)))
    return ThrottledReplicas(pairs=frozenset(pairs))


def parse_rate(value: str | None) -> int | None:
    """A `*.replication.throttled.rate` in bytes/s; None (unlimited) when unset.
    ValueError if it is not a positive integer."""
    if value is None or not value.strip():
        return None
    rate = int(value.strip())
    if rate <= 0:
        raise ValueError(f"throttle rate must be a positive number of bytes/s, not {rate}")
    return rate


class ReplicationQuota:
    """A token bucket of `rate` bytes/s holding at most one second's worth.

    Bytes are recorded after they arrive (a fetch may overdraw the bucket); while it is
    in debt the quota is exceeded, which holds throttled partitions back until the debt
    is paid off. So the long-run rate is `rate` whatever the fetch size. `rate=None`:
    unlimited."""

    def __init__(self, rate: int | None = None, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._rate: int | None = None
        self._tokens = 0.0
        self._at = clock()
        self.throttled_bytes = 0
        self.set_rate(rate)

    @property
    def rate(self) -> int | None:
        return self._rate

    def set_rate(self, rate: int | None) -> None:
        self._refill()
        if rate != self._rate:
            self._rate = rate
            self._tokens = float(rate) if rate is not None else 0.0

    def _refill(self) -> None:
        now = self._clock()
        if self._rate is not None:
            self._tokens = min(float(self._rate), self._tokens + (now - self._at) * self._rate)
        self._at = now

    def record(self, nbytes: int) -> None:
        self.throttled_bytes += nbytes
        if self._rate is not None:
            self._refill()
            self._tokens -= nbytes

    def exceeded(self) -> bool:
        if self._rate is None:
            return False
        self._refill()
        return self._tokens <= 0

    def seconds_until_available(self) -> float:
        """How long until the bucket is out of debt (0 if it is now)."""
        if not self.exceeded():
            return 0.0
        assert self._rate is not None
        return (-self._tokens) / self._rate + 0.001
