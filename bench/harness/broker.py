"""The real broker process (`python -m praha broker start`), started in its own session
and stopped by its PID; its metrics endpoint, RSS and CPU time; the tail of its
state-change log (JSON lines) and bounded waits on it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from praha.testing.cluster import scrape_metrics
from praha.zk.server import free_port

from .constants import CONTROLLER_BROKER, REPO
from .load import process_cpu_s, rss_mb


# ------------------------------------------------------------------------- the real broker
class BrokerProcess:
    """A real broker (broker 1 by default), started in its own session and stopped by its PID."""

    def __init__(self, workdir: Path, zk_connect: str, broker_id: int = CONTROLLER_BROKER,
                 extra: dict[str, str] | None = None):
        self.dir = workdir
        self.broker_id = broker_id
        self.port = free_port()
        self.metrics_port = free_port()
        self.data = workdir / "data"
        self.state_log = self.data / "state-change.log"
        self.config = workdir / "server.properties"
        props = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data),
            "zookeeper.connect": zk_connect,
            "zookeeper.session.timeout.ms": "6000",
            "praha.metrics.port": str(self.metrics_port),
            # measurement hygiene: no controlled shutdown between trials, and a leader
            # must not shrink the ISR of the pre-loaded partitions while a trial runs
            "controlled.shutdown.enable": "false",
            "replica.lag.time.max.ms": "3600000",
        }
        props.update(extra or {})
        workdir.mkdir(parents=True, exist_ok=True)
        self.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.dir / "broker.log", "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "praha", "broker", "start", "--config", str(self.config)],
                cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else -1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def metrics(self) -> dict[str, float]:
        return scrape_metrics(self.metrics_port, timeout=5.0)

    def rss_mb(self) -> float:
        return rss_mb(self.pid)

    def cpu_s(self) -> float:
        return process_cpu_s(self.pid)

    def wait_controller_started(self, timeout: float, active: bool = False) -> None:
        """Until the broker's controller has processed Startup (its /controller watch is armed);
        with `active`, until it is the active controller."""
        deadline = time.monotonic() + timeout
        want = 1.0 if active else 0.0
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"broker {self.broker_id} exited with {self.proc.returncode}; "
                                   f"see {self.dir / 'broker.log'}")
            try:
                m = self.metrics()
                if m.get("praha_controller_events_processed_total", m.get("praha_controller_events_processed", 0)) >= 1:
                    if m.get("praha_controller_active_controller") == want:
                        return
            except Exception:  # noqa: BLE001 - not serving yet
                pass
            time.sleep(0.05)
        raise RuntimeError(f"broker {self.broker_id} did not start within {timeout:.0f}s; "
                           f"see {self.dir / 'broker.log'}")

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM by PID; SIGKILL after `grace` seconds."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass


# ------------------------------------------------------------------------- state-change log
def wait_for_line(path: Path, event: str, timeout: float, alive) -> dict:
    """Tail `path` until a JSON line with `"event": event` appears (bounded)."""
    deadline = time.monotonic() + timeout
    offset = 0
    pending = b""
    while time.monotonic() < deadline:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                chunk = f.read()
        except FileNotFoundError:
            chunk = b""
        if chunk:
            offset += len(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                if f'"event":"{event}"'.encode() in raw:
                    return json.loads(raw)
        elif not alive():
            raise RuntimeError(f"broker exited before writing {event}")
        time.sleep(0.005)
    raise RuntimeError(f"no {event} line in {path} within {timeout:.0f}s")


class LogTail:
    """Reads a state-change log incrementally from a mark; only lines of the wanted events
    are parsed (a 50k-partition line is large)."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self._pending = b""

    def mark(self) -> None:
        """Skip everything written so far."""
        try:
            self.offset = self.path.stat().st_size
        except FileNotFoundError:
            self.offset = 0
        self._pending = b""

    def read(self, events: Iterable[str] | None = None) -> list[dict]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        data = self._pending + chunk
        *lines, self._pending = data.split(b"\n")
        wanted = None if events is None else [f'"event":"{e}"'.encode() for e in events]
        return [json.loads(raw) for raw in lines
                if raw and (wanted is None or any(w in raw for w in wanted))]

    def wait(self, done: Callable[[list[dict]], bool], events: Iterable[str], timeout: float,
             alive: Callable[[], bool] = lambda: True, seen: list[dict] | None = None) -> list[dict]:
        """Collect lines of `events` until `done(lines so far)`; bounded. Returns the lines."""
        events = list(events)
        got = [] if seen is None else seen
        deadline = time.monotonic() + timeout
        while True:
            got.extend(self.read(events))
            if done(got):
                return got
            if time.monotonic() > deadline:
                raise RuntimeError(f"waited {timeout:.0f}s for {events} in {self.path}; {len(got)} lines so far")
            if not alive():
                raise RuntimeError(f"broker exited while waiting for {events}")
            time.sleep(0.005)


