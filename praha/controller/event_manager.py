"""One queue and one thread for every controller event.

Steps of the loop: take the next event, record how long it queued, set the controller
state, call `processor.process(event)`, count it, mark it processed (waiters wake). An
exception in `process` is logged and never kills the thread (the processor decides what
an error means, e.g. resigning). `put` lets the last queued event absorb the new one when
the event allows it (`ControllerEvent.absorb`: per-partition watch events queued back to
back become one event naming all their partitions); the order of events is unchanged.
`clear_and_put` drops what is queued (each dropped
event gets `preempt()` so that waiting callers get an answer) and enqueues one event:
that is how session expiry jumps the queue.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from praha.controller.events import ControllerEvent, ControllerState, ShutdownEventThread

log = logging.getLogger(__name__)


class EventProcessor(Protocol):
    def process(self, event: ControllerEvent) -> None: ...


@dataclass
class QueuedEvent:
    event: ControllerEvent
    enqueued_at: float = field(default_factory=time.monotonic)
    _done: threading.Event = field(default_factory=threading.Event)

    def await_processing(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


class ControllerEventManager:
    """Serialises all controller work onto one thread (`controller-event-thread`)."""

    def __init__(self, processor: EventProcessor, name: str = "controller-event-thread"):
        self._processor = processor
        self._queue: collections.deque[QueuedEvent] = collections.deque()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.state = ControllerState.IDLE
        self.events_processed = 0
        self.last_queue_time_s = 0.0
        self.total_queue_time_s = 0.0
        self.max_queue_time_s = 0.0
        #: events taken over by the one queued before them (`put`), never queued themselves
        self.events_absorbed = 0
        self._observers: list[Callable[[ControllerEvent, float, float], None]] = []

    # -- producers (any thread) ------------------------------------------------------
    def put(self, event: ControllerEvent) -> QueuedEvent:
        """Enqueue `event`; returns its queue entry, or that of the last queued event if that
        one absorbed it (then waiting on it waits for both)."""
        with self._cond:
            queue = self._queue
            if queue:
                last = queue[-1]
                if last.event.absorb(event):
                    self.events_absorbed += 1
                    return last
            qe = QueuedEvent(event)
            queue.append(qe)
            self._cond.notify()
        return qe

    def clear_and_put(self, event: ControllerEvent) -> QueuedEvent:
        qe = QueuedEvent(event)
        with self._cond:
            dropped = list(self._queue)
            self._queue.clear()
            self._queue.append(qe)
            self._cond.notify()
        for old in dropped:
            try:
                old.event.preempt()
            finally:
                old._done.set()
        if dropped:
            log.info("event queue cleared for %s: %d queued events preempted", event.name, len(dropped))
        return qe

    @property
    def queue_size(self) -> int:
        return len(self._queue)

    def add_observer(self, fn: Callable[[ControllerEvent, float, float], None]) -> None:
        """`fn(event, queue_time_s, process_time_s)` after every event (metrics)."""
        self._observers.append(fn)

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        self.clear_and_put(ShutdownEventThread())
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    # -- the thread ------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                qe = self._queue.popleft()
            if isinstance(qe.event, ShutdownEventThread):
                qe._done.set()
                return
            start = time.monotonic()
            queued = start - qe.enqueued_at
            self.last_queue_time_s = queued
            self.total_queue_time_s += queued
            self.max_queue_time_s = max(self.max_queue_time_s, queued)
            self.state = qe.event.state
            try:
                self._processor.process(qe.event)
            except Exception:  # noqa: BLE001 - the thread must survive any event
                log.exception("error processing controller event %s", qe.event.name)
            finally:
                self.state = ControllerState.IDLE
                self.events_processed += 1
                qe._done.set()
            elapsed = time.monotonic() - start
            for fn in self._observers:
                try:
                    fn(qe.event, queued, elapsed)
                except Exception:  # noqa: BLE001
                    log.exception("event observer failed")
