"""Clients kept open between the tasks a Python worker runs.

Spark reuses its Python workers (`spark.python.worker.reuse`, on by default): a worker
runs one task at a time, task after task, and the driver's planner processes plan one
micro-batch after another. A streaming query's micro-batches are small and frequent, so
opening a cluster client (TCP, TLS, SASL, a Metadata request) or a librdkafka producer
(bootstrap, metadata, connections) for every task and every plan would cost more than
the records do. The pool keeps them per process, keyed by every setting that shapes
them, lends one to one borrower at a time and takes it back when the borrower finishes
cleanly. One that saw an error is closed, never lent again; one idle for longer than
`IDLE_SECONDS` (well under a broker's `connections.max.idle.ms`) is closed on the next
borrow.
"""
from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: an idle client older than this is closed instead of lent (brokers close idle
#: connections after `connections.max.idle.ms`, 10 minutes by default)
IDLE_SECONDS = 60.0


class Pool(Generic[T]):
    """Idle objects by key; `borrow` lends one (or makes one) and takes it back."""

    def __init__(self, close: Callable[[T], Any], idle_seconds: float = IDLE_SECONDS):
        self._close = close
        self._idle_seconds = idle_seconds
        self._idle: dict[Hashable, list[tuple[T, float]]] = {}
        self._lock = threading.Lock()
        self.made = self.reused = self.discarded = 0

    @contextmanager
    def borrow(self, key: Hashable, make: Callable[[], T]) -> Iterator[T]:
        item = self._take(key)
        if item is None:
            item = make()
            self.made += 1
        else:
            self.reused += 1
        try:
            yield item
        except GeneratorExit:  # a generator's consumer stopped early, between two uses: still sound
            self._give_back(key, item)
            raise
        except BaseException:
            self.discarded += 1
            self._close(item)
            raise
        self._give_back(key, item)

    def _take(self, key: Hashable) -> T | None:
        now = time.monotonic()
        stale: list[T] = []
        found: T | None = None
        with self._lock:
            idle = self._idle.get(key, [])
            while idle:
                item, since = idle.pop()
                if now - since <= self._idle_seconds:
                    found = item
                    break
                stale.append(item)
        for item in stale:
            self._close(item)
        return found

    def _give_back(self, key: Hashable, item: T) -> None:
        with self._lock:
            self._idle.setdefault(key, []).append((item, time.monotonic()))

    def close_all(self) -> None:
        with self._lock:
            items = [item for idle in self._idle.values() for item, _ in idle]
            self._idle.clear()
        for item in items:
            self._close(item)


def _close_client(client: Any) -> None:
    client.close()


def _drop_producer(producer: Any) -> None:
    """librdkafka producers have no close: what is queued was flushed by the borrower."""


#: `praha.spark.kafka.ClusterClient`s by (bootstrap, client id, isolation, security)
CLIENTS: Pool[Any] = Pool(_close_client)
#: at-least-once sink producers (confluent-kafka) by their whole configuration
PRODUCERS: Pool[Any] = Pool(_drop_producer)
atexit.register(CLIENTS.close_all)
