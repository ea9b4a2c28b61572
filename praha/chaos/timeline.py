"""One shared, thread-safe record of what happened during a campaign.

Every part (fault injector, workload, observers, checkers) appends here, so a violation
can be reported together with the events around it, and the plot draws from one source.
Times are seconds since the campaign started; wall-clock milliseconds are kept too, to
line events up with the brokers' state-change logs.
"""
from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Event:
    t: float  # seconds since start
    wall_ms: int
    kind: str  # "fault", "heal", "admin", "controller", "violation", "note", ...
    what: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Violation:
    invariant: str
    message: str
    t: float
    wall_ms: int
    details: dict[str, Any] = field(default_factory=dict)
    around: list[dict[str, Any]] = field(default_factory=list)


class Timeline:
    def __init__(self) -> None:
        self.start_mono = time.monotonic()
        self.start_wall_ms = int(time.time() * 1000)
        self._lock = threading.Lock()
        self.events: list[Event] = []
        self.violations: list[Violation] = []
        self.samples: dict[str, list[tuple[float, float]]] = {}

    def now(self) -> float:
        return time.monotonic() - self.start_mono

    def t_of_wall(self, wall_ms: int) -> float:
        return (wall_ms - self.start_wall_ms) / 1000.0

    def add(self, kind: str, what: str, **details: Any) -> Event:
        e = Event(round(self.now(), 3), int(time.time() * 1000), kind, what, details)
        with self._lock:
            self.events.append(e)
        return e

    def sample(self, series: str, value: float, t: float | None = None) -> None:
        """A point of a time series (acks per second, offline partitions, RSS...)."""
        with self._lock:
            self.samples.setdefault(series, []).append((round(self.now() if t is None else t, 3), float(value)))

    def violate(self, invariant: str, message: str, t: float | None = None, **details: Any) -> Violation:
        t = round(self.now() if t is None else t, 3)
        v = Violation(invariant, message, t, self.start_wall_ms + int(t * 1000), details)
        with self._lock:
            self.violations.append(v)
            self.events.append(Event(t, v.wall_ms, "violation", f"{invariant}: {message}", details))
        return v

    def around(self, t: float, window_s: float = 10.0, limit: int = 40) -> list[dict[str, Any]]:
        """Events within `window_s` of `t` (not other violations), nearest first then by time."""
        with self._lock:
            near = [e for e in self.events if abs(e.t - t) <= window_s and e.kind != "violation"]
        near.sort(key=lambda e: abs(e.t - t))
        return [asdict(e) for e in sorted(near[:limit], key=lambda e: e.t)]

    def finish(self) -> None:
        """Attach the surrounding events to every violation (called once, at the end)."""
        for v in self.violations:
            v.around = self.around(v.t)
