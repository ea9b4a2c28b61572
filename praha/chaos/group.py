"""The campaign's consumer group: three member processes (praha.chaos.member) over the data topics.

Each member writes what it was served, what it saw committed when it got partitions,
and every commit the coordinator acknowledged to a file of its own (`group/<name>.jsonl`);
`collect()` reads them all into a GroupLedger. A member can be SIGKILLed and replaced
(the `member_kill` fault); `stop()` ends every member by PID (SIGTERM, then SIGKILL).
The coordinator is found like a client finds it: FindCoordinator on the wire.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from praha.chaos.access import ClientAccess, process_arguments
from praha.chaos.ledger import GroupLedger, Tp
from praha.chaos.timeline import Timeline

log = logging.getLogger(__name__)

GROUP_ID = "chaos-group"
MEMBERS = 3
#: the members' session timeout: a SIGKILLed member's partitions move after this
MEMBER_SESSION_TIMEOUT_MS = 4000


class ConsumerGroup:
    def __init__(self, root: Path, access: ClientAccess, topics: list[str], timeline: Timeline,
                 members: int = MEMBERS, group_id: str = GROUP_ID,
                 session_timeout_ms: int = MEMBER_SESSION_TIMEOUT_MS):
        self.dir = root / "group"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.access = access
        self.topics = topics
        self.timeline = timeline
        self.size = members
        self.group_id = group_id
        self.session_timeout_ms = session_timeout_ms
        self.procs: dict[int, subprocess.Popen[bytes]] = {}  # slot -> the running member process
        self.incarnation: dict[int, int] = {}
        self.started = 0
        self.killed = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ members
    def start(self) -> None:
        for slot in range(self.size):
            self._launch(slot)

    def _launch(self, slot: int) -> None:
        n = self.incarnation.get(slot, -1) + 1
        self.incarnation[slot] = n
        name = f"m{slot}.{n}"
        out = self.dir / f"{name}.jsonl"
        stderr = open(self.dir / f"{name}.stderr", "wb")  # noqa: SIM115 - handed to the child
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "praha.chaos.member", *process_arguments(self.access, self.dir / "access.json"),
                 "--group", self.group_id,
                 "--topics", ",".join(self.topics), "--name", name, "--out", str(out),
                 "--session-timeout-ms", str(self.session_timeout_ms)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
        finally:
            stderr.close()
        with self._lock:
            self.procs[slot] = proc
            self.started += 1
        self.timeline.add("group", f"member {name} started", member=name, pid=proc.pid)

    def running_slots(self) -> list[int]:
        with self._lock:
            return sorted(s for s, p in self.procs.items() if p.poll() is None)

    def kill_member(self, slot: int, hold_s: float) -> dict[str, Any]:
        """SIGKILL the member in `slot` (no LeaveGroup: the coordinator finds out by the session
        timeout), then start a new process in its place after `hold_s`."""
        with self._lock:
            proc = self.procs[slot]
        name = f"m{slot}.{self.incarnation[slot]}"
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        self.killed += 1
        self.timeline.add("group", f"member {name} SIGKILLed", member=name, pid=proc.pid)
        time.sleep(hold_s)
        self._launch(slot)
        return {"killed": name, "pid": proc.pid, "replacement": f"m{slot}.{self.incarnation[slot]}"}

    def stop(self) -> None:
        """Every member by PID: SIGTERM (a clean LeaveGroup), SIGKILL after 15 s."""
        with self._lock:
            procs = list(self.procs.values())
        stop_processes(procs, 15.0)

    # ------------------------------------------------------------------ the coordinator, as a client sees it
    def find_coordinator(self, brokers: list[tuple[str, int]]) -> int | None:
        """The broker id FindCoordinator names for the group (None if no broker answers)."""
        from praha.protocol.client import BrokerConnection
        from praha.protocol.messages.gen.metadata import FindCoordinatorRequest

        for host, port in brokers:
            try:
                with BrokerConnection(host, port, timeout=3.0, security=self.access.security()) as conn:
                    r = conn.send(FindCoordinatorRequest(key=self.group_id, key_type=0), 3)
                if r.error_code == 0:
                    return int(r.node_id)
            except Exception as e:  # noqa: BLE001 - that broker is down or busy: ask another
                log.debug("FindCoordinator on %s:%d: %s", host, port, e)
        return None

    def state_line(self) -> str:
        """The group as its coordinator describes it, and each member's last recorded event:
        what a group that stopped making progress was doing."""
        from praha.admin.groups import GroupAdmin

        try:
            with GroupAdmin(self.access.bootstrap, timeout=10, security=self.access.security()) as admin:
                d = admin.describe_groups([self.group_id])[self.group_id]
            described = (f"coordinator {d.coordinator.id}: state {d.state}, {len(d.members)} members ("
                         + ", ".join(f"{m.client_id or m.member_id[:12]} {len(m.assignment)} partitions"
                                     for m in d.members) + ")")
        except Exception as e:  # noqa: BLE001 - a diagnostic: say why it is missing
            described = f"not described ({e})"
        last = []
        for path in sorted(self.dir.glob("*.jsonl")):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            last.append(f"{path.stem}: {lines[-1][:120] if lines else '(nothing)'}")
        return described + "; last events: " + "; ".join(last)

    def committed(self, tps: list[Tp], logger: logging.Logger, timeout: float = 15.0) -> dict[Tp, int]:
        """The group's committed offsets (OffsetFetch through a client that does not join);
        -1 where nothing is committed; partitions that answered an error are left out."""
        from confluent_kafka import Consumer
        from confluent_kafka import TopicPartition as CTP

        c = Consumer({**self.access.librdkafka(), "group.id": self.group_id,
                      "enable.auto.commit": False, "logger": logger})
        try:
            got = c.committed([CTP(t, p) for t, p in tps], timeout=timeout)
            return {(p.topic, p.partition): (p.offset if p.offset >= 0 else -1) for p in got if p.error is None}
        finally:
            c.close()

    # ------------------------------------------------------------------ evidence
    def collect(self) -> GroupLedger:
        """Everything the members wrote, read from their files (a torn last line is skipped)."""
        g = GroupLedger()
        g.members_started = self.started
        g.members_killed = self.killed
        tl = self.timeline
        for path in sorted(self.dir.glob("*.jsonl")):
            member = path.stem
            for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    e = json.loads(raw)
                except ValueError:
                    continue
                ev, t = e.get("ev"), round(tl.t_of_wall(int(e.get("w") or 0)), 3)
                if ev == "served":
                    tp = (e["tp"][0], int(e["tp"][1]))
                    for off, rid in e["recs"]:
                        g.on_delivered(tp, int(off), rid)
                elif ev == "commit":
                    g.on_commit((e["tp"][0], int(e["tp"][1])), int(e["o"]), t, member,
                                sent_t=round(tl.t_of_wall(int(e.get("sent") or e["w"])), 3))
                elif ev == "observed":
                    g.on_observed((e["tp"][0], int(e["tp"][1])), int(e["o"]), t, member)
                elif ev == "assign":
                    g.assignments += 1
                elif ev in ("commit_failed", "observe_failed"):
                    g.commit_failures += ev == "commit_failed"
                    g.errors[e.get("error", "?")[:80]] = g.errors.get(e.get("error", "?")[:80], 0) + 1
        return g


def stop_processes(procs: list[subprocess.Popen[Any]], bound_s: float) -> None:
    """Client processes by PID: SIGCONT (a paused one must see the next signal) and SIGTERM,
    then SIGKILL whatever still runs after `bound_s`."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + bound_s
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
