"""Which log directories have failed (Kafka's LogDirFailureChannel).

An I/O error of the disk (ENOSPC, EROFS, EIO, the directory removed) while a log appends,
rolls, flushes, truncates or reads, or while a checkpoint is written, takes the whole
directory offline: `report(dir, error)` records it once (later reports of the same dir are
ignored) and tells the listeners, on the reporting thread. The broker's listener moves the
work onto its loop: its replicas there stop, and the controller hears of it through
`/log_dir_event_notification` (see praha/broker/replication/replica_manager.py).

A directory stays offline until the broker restarts; then it is tried again like any other.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

#: `listener(log_dir, reason)`; runs on whichever thread hit the error: it must only hand over
DirFailureListener = Callable[[str, str], None]


class LogDirFailureChannel:
    """Thread-safe set of offline log directories, with listeners for new ones."""

    def __init__(self) -> None:
        self._offline: dict[str, str] = {}
        self._lock = threading.Lock()
        self._listeners: list[DirFailureListener] = []

    def add_listener(self, listener: DirFailureListener) -> None:
        self._listeners.append(listener)

    def report(self, log_dir: str, error: BaseException | str) -> bool:
        """`log_dir` failed; True the first time (listeners told), False if already offline."""
        reason = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        with self._lock:
            if log_dir in self._offline:
                return False
            self._offline[log_dir] = reason
        log.error("log directory %s is offline: %s", log_dir, reason)
        for listener in list(self._listeners):
            try:
                listener(log_dir, reason)
            except Exception:  # noqa: BLE001 - one listener must not keep the others uninformed
                log.exception("log dir failure listener failed")
        return True

    def is_offline(self, log_dir: str) -> bool:
        return log_dir in self._offline

    def offline_dirs(self) -> dict[str, str]:
        """Offline directory → why."""
        with self._lock:
            return dict(self._offline)
