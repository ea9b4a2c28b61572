"""The state-change log: one JSON line per controller or broker event.

Each line: `{"time_ms", "broker_id", "controller_id", "controller_epoch", "event", ...}`
plus what changed. Bulk changes go in one line as compact maps (partition → value),
never one line per partition, so a 10k-partition event is one write. The analytics job
(`praha analyze state-change-log`) reads these files.

The file usually sits in the first log dir: when that disk fails (full, read-only), lines
are dropped (counted in `lines_lost`, one warning), never raised into the event that
records them, as Kafka's state-change logger does.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class StateChangeLog:
    def __init__(self, path: str | Path | None, broker_id: int):
        self.broker_id = broker_id
        self._lock = threading.Lock()
        self._file = None
        if path is not None:
            p = Path(path)
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(p, "a", buffering=1, encoding="utf-8")
            except OSError as e:  # its log dir is unusable (and offline): events are not written
                log.warning("state-change log %s cannot be opened: %s", p, e)
        self.lines_written = 0
        self.lines_lost = 0

    def record(self, event: str, controller_id: int = -1, controller_epoch: int = -1, **details: Any) -> None:
        line = {
            "time_ms": int(time.time() * 1000),
            "broker_id": self.broker_id,
            "controller_id": controller_id,
            "controller_epoch": controller_epoch,
            "event": event,
        }
        line.update(details)
        text = json.dumps(line, separators=(",", ":"), default=_default)
        with self._lock:
            if self._file is not None:
                try:
                    self._file.write(text + "\n")
                except OSError as e:
                    self.lines_lost += 1
                    if self.lines_lost == 1:
                        log.warning("state-change log %s: lines are dropped while it cannot be written: %s",
                                    self._file.name, e)
                    return
            self.lines_written += 1

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except OSError as e:
                    log.warning("state-change log %s: closing failed: %s", self._file.name, e)
                self._file = None


def _default(o: Any) -> Any:
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if hasattr(o, "value"):
        return o.value
    return str(o)
