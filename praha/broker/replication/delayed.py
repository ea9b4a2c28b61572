"""Requests parked until their condition holds or they time out (Kafka's purgatory).

Flow of one delayed operation:
1. the handler tries the request at once; if it cannot finish (acks=all not yet
   replicated, a fetch without enough bytes) it builds an operation and calls
   `Purgatory.watch(op, keys, timeout_ms)`: the op is tried once more (a change may have
   slipped in) and otherwise registered under each key (a partition);
2. whoever changes a partition (append, high watermark, leadership) calls
   `Purgatory.check(key)`: each op watching that key re-checks only that key;
3. the op completes when its condition holds (`on_key` returns True) or its timer
   fires; either way it is removed from every key, its future gets the outcome, and
   the handler, which awaits `op.future`, builds the response.

All on one event loop; no locks. The conditions are small callables so the bookkeeping
is testable without a broker.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from praha.common import TopicPartition

K = TypeVar("K", bound=Hashable)


class DelayedOperation(Generic[K]):
    """Base class: `on_key(key)` re-checks one key; True completes the op."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.future: asyncio.Future[Any] = loop.create_future()
        self.keys: tuple[K, ...] = ()
        self.timer: asyncio.TimerHandle | None = None

    @property
    def done(self) -> bool:
        return self.future.done()

    def on_key(self, key: K) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def try_complete_all(self) -> bool:
        """Check every key (right after registration)."""
        return any(self.on_key(k) for k in self.keys)

    def result(self, expired: bool) -> object:
        """What the future gets; by default whether it completed before the timeout."""
        return not expired


@dataclass
class PurgatoryStats:
    watched: int = 0
    completed: int = 0
    expired: int = 0


class Purgatory(Generic[K]):
    def __init__(self, name: str, loop: asyncio.AbstractEventLoop):
        self.name = name
        self.loop = loop
        self._watchers: dict[K, set[DelayedOperation[K]]] = {}
        self.stats = PurgatoryStats()
        self._parked = 0

    def __len__(self) -> int:
        """Ops parked now (a plain counter: metrics read it from another thread)."""
        return self._parked

    def watch(self, op: DelayedOperation[K], keys: Iterable[K], timeout_ms: int) -> asyncio.Future[Any]:
        """Park `op` under `keys` for at most `timeout_ms`; returns its future."""
        op.keys = tuple(keys)
        self.stats.watched += 1
        if op.try_complete_all():
            self._finish(op, expired=False)
            return op.future
        for k in op.keys:
            self._watchers.setdefault(k, set()).add(op)
        self._parked += 1
        op.timer = self.loop.call_later(max(timeout_ms, 0) / 1000.0, self._expire, op)
        return op.future

    def check(self, key: K) -> int:
        """Re-check the ops watching `key`; returns how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        n = 0
        for op in list(ops):
            if not op.done and op.on_key(key):
                self._finish(op, expired=False)
                n += 1
        return n

    def _expire(self, op: DelayedOperation[K]) -> None:
        if not op.done:
            self.stats.expired += 1
            self._finish(op, expired=True)

    def _finish(self, op: DelayedOperation[K], expired: bool) -> None:
        if op.timer is not None:
            op.timer.cancel()
            op.timer = None
            self._parked -= 1
        for k in op.keys:
            s = self._watchers.get(k)
            if s is not None:
                s.discard(op)
                if not s:
                    del self._watchers[k]
        if not expired:
            self.stats.completed += 1
        if not op.future.done():
            op.future.set_result(op.result(expired))

    def expire_all(self) -> None:
        """Shutdown: time out every parked op now."""
        ops: set[DelayedOperation[K]] = set()
        for s in self._watchers.values():
            ops |= s
        for op in ops:
            self._expire(op)


# ------------------------------------------------------------------------- the two kinds
@dataclass
class ProduceWait:
    """Per partition: the offset the high watermark must pass, and the outcome once known."""

    required_offset: int
    error: int | None = None


class DelayedProduce(DelayedOperation[TopicPartition]):
    """acks=all: done when every partition's high watermark passed its batch (or the
    partition failed). `status(key, required)` returns an error code once that partition
    is decided (0 = replicated), None while it waits."""

    def __init__(self, loop: asyncio.AbstractEventLoop, waits: dict[TopicPartition, ProduceWait],
                 status: Callable[[TopicPartition, int], int | None]):
        super().__init__(loop)
        self.waits = waits
        self.status = status
        self._pending = set(waits)

    def on_key(self, key: TopicPartition) -> bool:
        w = self.waits.get(key)
        if w is None or w.error is not None:
            return not self._pending
        code = self.status(key, w.required_offset)
        if code is not None:
            w.error = code
            self._pending.discard(key)
        return not self._pending

    def try_complete_all(self) -> bool:
        for k in list(self._pending):
            self.on_key(k)
        return not self._pending

    def result(self, expired: bool) -> dict[TopicPartition, ProduceWait]:
        return self.waits


@dataclass
class FetchWait:
    bytes_available: int = 0


class DelayedFetch(DelayedOperation[TopicPartition]):
    """A fetch below min_bytes: done when the partitions hold at least `min_bytes` new
    bytes, or one of them can no longer be served here. `available(key)` returns the
    bytes readable now for that partition, or -1 if it errs (which completes the fetch)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, min_bytes: int, keys: Iterable[TopicPartition],
                 available: Callable[[TopicPartition], int]):
        super().__init__(loop)
        self.min_bytes = max(min_bytes, 1)
        self.available = available
        self.per_key: dict[TopicPartition, FetchWait] = {k: FetchWait() for k in keys}
        self._total = 0

    def on_key(self, key: TopicPartition) -> bool:
        w = self.per_key.get(key)
        if w is None:
            return False
        n = self.available(key)
        if n < 0:
            return True
        self._total += n - w.bytes_available
        w.bytes_available = n
        return self._total >= self.min_bytes


__all__ = ["DelayedOperation", "Purgatory", "DelayedProduce", "ProduceWait", "DelayedFetch", "FetchWait"]
