"""The share-group workload (`praha chaos --workload share`, issue 23): queues for Kafka under faults.

Beside the queue workload, an idempotent producer writes unique values to SHARE_TOPIC (RF 3,
SHARE_PARTITIONS partitions) and SHARE_MEMBERS ShareConsumer processes
(praha/chaos/share_member.py) read it as one share group, more members than partitions, each
accepting, rejecting or releasing (poison) a record by its value. While the campaign's faults
hit brokers (leaders of the share partitions, the group's coordinator), the workload SIGKILLs
one member every KILL_EVERY_S seconds (seeded) and starts another in its place, so records
are held by a dead member until their acquisition lock expires.

After the faults `finish()` stops the killing, lets the members drain the topic (bounded by
DRAIN_S: every share partition's durable state past its high watermark), stops them, and
judges (praha/chaos/share_invariants.py) what they wrote, what the producer was told and
the durable state in ZooKeeper. Violations go to the campaign's timeline; the figures to
its report (`figures.share`) and to `share.json`.
"""
from __future__ import annotations

import json
import logging
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from praha.chaos.access import ClientAccess, process_arguments
from praha.chaos.environment import ChaosEnvironment, wait_until
from praha.chaos.group import stop_processes
from praha.chaos.ledger import Ledger, Tp
from praha.chaos.principals import Role
from praha.chaos.share_config import (
    DELIVERY_LIMIT,
    RECORDS_PER_SECOND,
    SHARE_GROUP,
    SHARE_MEMBERS,
    SHARE_PARTITIONS,
    SHARE_TOPIC,
)
from praha.chaos.share_invariants import INVARIANTS, FinalState, ShareHistory, judge
from praha.chaos.timeline import Timeline
from praha.chaos.workload import ProducerWorker

log = logging.getLogger(__name__)

#: one member SIGKILLed this often (± a third, seeded) while the faults run
KILL_EVERY_S = 15.0
#: after the faults: how long the members get to acknowledge or archive every record
DRAIN_S = 120.0


class ShareWorkload:
    def __init__(self, root: Path, env: ChaosEnvironment, timeline: Timeline, seed: int, logger: logging.Logger):
        self.dir = root / "share"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.env = env
        self.access: ClientAccess = env.access(Role.READER)
        self.timeline = timeline
        self.rng = random.Random(f"share-{seed}")
        self.logger = logger
        self.tps: list[Tp] = [(SHARE_TOPIC, p) for p in range(SHARE_PARTITIONS)]
        self.ledger = Ledger(timeline)
        self.procs: dict[int, subprocess.Popen[bytes]] = {}  # slot -> the running member
        self.incarnation: dict[int, int] = {}
        self.killed = 0
        self.producer: ProducerWorker | None = None
        self._stop_killing = threading.Event()
        self._killer: threading.Thread | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ running
    def start(self, create_topics: Callable[[dict[str, int]], object], stop_producing: threading.Event) -> None:
        """Create the topic (the campaign's way), start the members, the producer and the killer."""
        create_topics({SHARE_TOPIC: SHARE_PARTITIONS})
        for slot in range(SHARE_MEMBERS):
            self._launch(slot)
        self.producer = ProducerWorker("sp0", self.env.access(Role.PRODUCER), self.tps, self.ledger,
                                       RECORDS_PER_SECOND, stop_producing, self.logger)
        self.producer.start()
        self._killer = threading.Thread(target=self._kill_loop, name="chaos-share-killer", daemon=True)
        self._killer.start()

    def _launch(self, slot: int) -> None:
        n = self.incarnation.get(slot, -1) + 1
        self.incarnation[slot] = n
        name = f"s{slot}.{n}"
        with open(self.dir / f"{name}.stderr", "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "praha.chaos.share_member",
                 *process_arguments(self.access, self.dir / "access.json"), "--group", SHARE_GROUP,
                 "--topics", SHARE_TOPIC, "--name", name, "--out", str(self.dir / f"{name}.jsonl")],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        with self._lock:
            self.procs[slot] = proc
        self.timeline.add("share", f"share member {name} started", member=name, pid=proc.pid)

    def _kill_loop(self) -> None:
        while not self._stop_killing.wait(KILL_EVERY_S * self.rng.uniform(2 / 3, 4 / 3)):
            slot = self.rng.randrange(SHARE_MEMBERS)
            with self._lock:
                proc = self.procs[slot]
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
            self.killed += 1
            self.timeline.add("share", f"share member s{slot}.{self.incarnation[slot]} SIGKILLed", pid=proc.pid)
            if not self._stop_killing.wait(1.0):
                self._launch(slot)

    def stop(self) -> None:
        """Every member by PID (SIGTERM, SIGKILL after a bound); safe twice."""
        self._stop_killing.set()
        if self._killer is not None:
            self._killer.join(timeout=30)
        with self._lock:
            procs = list(self.procs.values())
        stop_processes(procs, 15.0)

    # ------------------------------------------------------------------ judging
    def finish(self) -> dict[str, Any]:
        """After the faults and the producer: drain (bounded), stop the members, judge.
        Violations go to the timeline; returns the figures."""
        self._stop_killing.set()
        if self._killer is not None:
            self._killer.join(timeout=30)
        with self._lock:  # a slot killed just before the stop gets its member back
            idle = [s for s, p in self.procs.items() if p.poll() is not None]
        for slot in idle:
            self._launch(slot)
        if self.producer is not None:
            self.producer.join(timeout=60)
        high = self._high_watermarks()
        t0 = time.monotonic()
        drained = wait_until(lambda: self._drained(high), DRAIN_S, interval=1.0)
        waited = round(time.monotonic() - t0, 1)
        self.timeline.add("share", f"share group {'drained' if drained else 'DID NOT drain'} in {waited:.1f}s",
                          high_watermarks=sum(high.values()))
        self.stop()
        verdict = judge(self._history(), self._produced(), self._final_states(), high, DELIVERY_LIMIT)
        if not drained:
            verdict.violate("share_workload", f"the group did not finish every record within {DRAIN_S:.0f}s")
        for kind, examples in verdict.violations.items():
            self.timeline.violate(kind, f"{len(examples)}: {INVARIANTS[kind]}", examples=examples[:5])
        figures = {**asdict(verdict), "violations": verdict.counts(), "drained": drained, "drain_s": waited,
                   "members_started": sum(n + 1 for n in self.incarnation.values()), "members_killed": self.killed,
                   "sent": self.ledger.sent, "failed_sends": len(self.ledger.failed)}
        (self.dir / "share.json").write_text(json.dumps({**figures, "examples": verdict.violations}, indent=1))
        return figures

    def _high_watermarks(self) -> dict[Tp, int]:
        from confluent_kafka import Consumer
        from confluent_kafka import TopicPartition as CTP

        c = Consumer({**self.access.librdkafka(), "group.id": f"{SHARE_GROUP}-hw", "logger": self.logger})
        try:
            out: dict[Tp, int] = {}
            for tp in self.tps:
                for _attempt in range(5):
                    try:
                        out[tp] = int(c.get_watermark_offsets(CTP(*tp), timeout=10)[1])
                        break
                    except Exception as e:  # noqa: BLE001 - a leader still moving: ask again
                        log.debug("high watermark of %s: %s", tp, e)
                        time.sleep(1.0)
            return out
        finally:
            c.close()

    def _final_states(self) -> dict[Tp, FinalState | None]:
        from praha.zk.share_state import ShareStateStore

        snaps = ShareStateStore(self.env.store.client).of_group(SHARE_GROUP)
        return {tp: (FinalState(s.start_offset, s.batches) if (s := snaps.get(_tp(tp))) is not None else None)
                for tp in self.tps}

    def _drained(self, high: dict[Tp, int]) -> bool:
        try:
            final = self._final_states()
        except Exception as e:  # noqa: BLE001 - ZooKeeper busy: look again
            log.debug("share state unreadable: %s", e)
            return False
        return len(high) == len(self.tps) and all(
            (s := final.get(tp)) is not None and all(s.done(o) for o in range(s.start_offset, hw))
            for tp, hw in high.items())

    def _produced(self) -> dict[tuple[str, int, int], str]:
        return {(a.tp[0], a.tp[1], a.offset): rid for rid, a in self.ledger.snapshot_acked().items() if a.offset >= 0}

    def _history(self) -> ShareHistory:
        h = ShareHistory()
        for path in sorted(self.dir.glob("*.jsonl")):
            for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    e = json.loads(raw)
                except ValueError:  # a SIGKILLed member's torn last line
                    continue
                h.add(path.stem, e)
        return h


def _tp(tp: Tp) -> Any:
    from praha.common import TopicPartition

    return TopicPartition(*tp)

