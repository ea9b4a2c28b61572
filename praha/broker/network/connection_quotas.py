"""Connection limits of the socket server, under Kafka's names (its `ConnectionQuotas`).

For each new connection, before a byte of it is read:
1. `max.connections` (broker-wide) and `max.connections.per.ip`, or that IP's entry in
   `max.connections.per.ip.overrides` ("host:count,…"): over either, the connection is
   closed at once and counted;
2. `max.connection.creation.rate` (connections per second, broker-wide): a connection
   that comes too soon is accepted but not read until its turn, as Kafka throttles its
   acceptor instead of refusing;
3. the count is given back when the connection closes (`release`).
Idle connections (`connections.max.idle.ms`) and requests that never finish arriving
(`praha.partial.request.timeout.ms`) are the socket server's timers; their limits live here
too so that one object holds what a connection may cost. Nothing here does I/O; `clock` is
injectable for tests.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from praha.config import parse_ip_overrides

if TYPE_CHECKING:
    from praha.config import BrokerConfig

INT_MAX = 2**31 - 1


class Refusal(Enum):
    """Why a new connection is closed before it is served."""

    BROKER_LIMIT = "max.connections"
    IP_LIMIT = "max.connections.per.ip"


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_connections: int = INT_MAX
    max_per_ip: int = INT_MAX
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    #: new connections per second, broker-wide
    max_creation_rate: int = INT_MAX
    #: close a connection with no request for this long (Kafka's default: 10 minutes)
    max_idle_ms: int = 600_000
    #: close a connection whose request has begun arriving but not finished within this time
    partial_request_timeout_ms: int = 30_000

    @classmethod
    def from_broker_config(cls, cfg: BrokerConfig) -> ConnectionLimits:
        return cls(cfg.max_connections, cfg.max_connections_per_ip,
                   parse_ip_overrides(cfg.max_connections_per_ip_overrides), cfg.max_connection_creation_rate,
                   cfg.connections_max_idle_ms, cfg.partial_request_timeout_ms)

    def limit_for(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_per_ip)


class ConnectionQuotas:
    """Counts of open connections per IP, and the creation-rate schedule."""

    def __init__(self, limits: ConnectionLimits, clock: Callable[[], float] = time.monotonic):
        self.limits = limits
        self._clock = clock
        self._per_ip: dict[str, int] = {}
        self.open = 0
        self.refused = {r: 0 for r in Refusal}
        self.throttled = 0
        #: the earliest time the next connection may be served under the creation rate
        self._next_slot = 0.0

    def admit(self, ip: str) -> Refusal | float:
        """A Refusal, or the seconds to wait before serving the connection (0.0: now);
        an admitted connection is counted until `release`."""
        if self.open >= self.limits.max_connections:
            self.refused[Refusal.BROKER_LIMIT] += 1
            return Refusal.BROKER_LIMIT
        if self._per_ip.get(ip, 0) >= self.limits.limit_for(ip):
            self.refused[Refusal.IP_LIMIT] += 1
            return Refusal.IP_LIMIT
        self.open += 1
        self._per_ip[ip] = self._per_ip.get(ip, 0) + 1
        if self.limits.max_creation_rate >= INT_MAX:
            return 0.0
        now = self._clock()
        slot = max(now, self._next_slot)
        self._next_slot = slot + 1.0 / self.limits.max_creation_rate
        if slot > now:
            self.throttled += 1
        return slot - now

    def release(self, ip: str) -> None:
        count = self._per_ip.get(ip, 0)
        if count <= 1:
            self._per_ip.pop(ip, None)
        else:
            self._per_ip[ip] = count - 1
        self.open = max(0, self.open - 1)

    def connections_of(self, ip: str) -> int:
        return self._per_ip.get(ip, 0)
