"""The transactional workload (`praha chaos --workload txn`): its client processes, the final
read, and the history the checker (praha/chaos/history.py) judges.

The clients (praha/chaos/txnclient.py) are declared in CLIENTS: three transactional producers
(two confluent-kafka, one kafka-python) over the input topics, consumers reading with
`assign` and `subscribe`, read_committed and read_uncommitted (one of them kafka-python), and
a consume-transform-produce stage writing the output topic. Each process writes its own
history file under `txn/`; `finish()` stops the writers, reads every partition back once more
(read_committed, recorded as the process `final`, so a committed value nobody ever read is a
lost write), stops the readers, and merges the files into `history.jsonl` in time order.
"""
from __future__ import annotations

import heapq
import json
import logging
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from praha.chaos.access import ClientAccess, process_arguments
from praha.chaos.environment import wait_until
from praha.chaos.group import stop_processes
from praha.chaos.history import Verdict, check, load
from praha.chaos.principals import Role
from praha.chaos.timeline import Timeline

log = logging.getLogger(__name__)

INPUT_TOPICS = ("chaos-txn-0", "chaos-txn-1")
OUTPUT_TOPIC = "chaos-txn-out"
TOPIC_PARTITIONS = {"chaos-txn-0": 3, "chaos-txn-1": 3, OUTPUT_TOPIC: 2}
READERS_GROUP = "chaos-txn-readers"
CTP_GROUP = "chaos-txn-ctp"
#: after the faults: how long the final read may take to reach every high watermark
FINAL_READ_S = 90.0
#: a writer gets this long after SIGTERM to end its transaction (a commit waits up to 30 s per attempt)
WRITER_STOP_S = 45.0


@dataclass(frozen=True)
class ClientSpec:
    name: str
    role: str  # producer | consumer | ctp
    lib: str = "confluent"
    mode: str = "assign"
    isolation: str = "read_committed"
    group: str = ""

    @property
    def writes(self) -> bool:
        return self.role in ("producer", "ctp")

    @property
    def principal(self) -> Role:
        """Who it is on a secure cluster."""
        return {"producer": Role.PRODUCER, "consumer": Role.READER, "ctp": Role.TRANSFORMER}[self.role]


#: every client of the workload (a test checks that both libraries, both modes and both isolation levels are here)
CLIENTS = (
    ClientSpec("p0", "producer"),
    ClientSpec("p1", "producer"),
    ClientSpec("p2", "producer", lib="kafka-python"),
    ClientSpec("c0", "consumer", mode="assign", isolation="read_committed"),
    ClientSpec("c1", "consumer", mode="assign", isolation="read_uncommitted"),
    ClientSpec("c2", "consumer", lib="kafka-python", mode="assign", isolation="read_committed"),
    ClientSpec("c3", "consumer", mode="subscribe", group=READERS_GROUP),
    ClientSpec("c4", "consumer", mode="subscribe", group=READERS_GROUP),
    ClientSpec("x0", "ctp", mode="subscribe", group=CTP_GROUP),
)


def command(spec: ClientSpec, connect: list[str], out: Path, seed: int) -> list[str]:
    """The client's command line (pure); `connect`: its --bootstrap (and --access) options."""
    topics = INPUT_TOPICS if spec.role in ("producer", "ctp") else (*INPUT_TOPICS, OUTPUT_TOPIC)
    cmd = [sys.executable, "-m", "praha.chaos.txnclient", "--role", spec.role, "--lib", spec.lib,
           *connect, "--topics", ",".join(topics), "--name", spec.name, "--out", str(out),
           "--isolation", spec.isolation, "--mode", spec.mode, "--seed", str(seed)]
    if spec.group:
        cmd += ["--group", spec.group]
    if spec.role == "ctp":
        cmd += ["--output-topic", OUTPUT_TOPIC, "--output-partitions", str(TOPIC_PARTITIONS[OUTPUT_TOPIC])]
    return cmd


@dataclass
class TxnSummary:
    acked: int = 0  # values of committed transactions
    committed_txns: int = 0
    aborted_txns: int = 0
    indeterminate_txns: int = 0
    polled: int = 0  # records returned to the workload's consumers (the final read included)
    ops: int = 0


def summarize(ops: list[dict[str, Any]]) -> TxnSummary:
    s = TxnSummary(ops=len(ops))
    for o in ops:
        if o.get("op") == "txn":
            if o["type"] == "ok":
                s.committed_txns += 1
                s.acked += len(o.get("sends", []))
            elif o["type"] == "fail":
                s.aborted_txns += 1
            else:
                s.indeterminate_txns += 1
        elif o.get("op") == "poll":
            s.polled += sum(len(r) for r in o.get("records", {}).values())
    return s


def merge(paths: list[Path], more: Sequence[list[dict[str, Any]]] = ()) -> list[dict[str, Any]]:
    """Every process's history (and `more` lists of ops, each in time order), in time order
    (each file's own order kept)."""
    return list(heapq.merge(*(load(p) for p in paths), *more, key=lambda o: float(o.get("t", 0.0))))


#: librdkafka's line for a position it moved after an error, e.g. `%4|1795778951.311|OFFSET|rdkafka#consumer-2|
#: [thrd:main]: r [0]: offset reset (at offset 100 (leader epoch -1), broker 1) to cached BEGINNING offset
#: offset 0 (leader epoch -1): fetch failed due to ...: Broker: Offset out of range`
_RDKAFKA_RESET = re.compile(r"^%\d\|(?P<t>\d+(?:\.\d+)?)\|OFFSET\|[^|]*\|\s*\[thrd:[^\]]*\]: "
                            r"(?P<topic>[^\s\[]+) \[(?P<partition>\d+)\]: offset reset "
                            r"\(at offset (?P<frm>\d+)\b.*?\) to (?P<to>.*?): .*Offset out of range")


def librdkafka_resets(process: str, text: str) -> list[dict[str, Any]]:
    """A confluent-kafka consumer's `reset` ops (praha/chaos/history.py), from what librdkafka
    writes to its stderr when an OFFSET_OUT_OF_RANGE answer moved its position to the
    beginning (`auto.offset.reset=earliest`). A beginning not yet resolved to an offset is
    taken as 0: the chaos topics never move their log start."""
    ops = []
    for line in text.splitlines():
        m = _RDKAFKA_RESET.match(line)
        if m is None or "BEGINNING" not in m["to"]:
            continue
        to = re.search(r"offset (\d+)", m["to"])
        ops.append({"op": "reset", "process": process, "partition": f"{m['topic']}-{m['partition']}",
                    "from": int(m["frm"]), "to": int(to[1]) if to else 0, "t": float(m["t"])})
    return ops


class TxnWorkload:
    def __init__(self, root: Path, access: Callable[[Role], ClientAccess], timeline: Timeline, seed: int):
        self.dir = root / "txn"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.history_path = root / "history.jsonl"
        #: each principal's way in (`ChaosEnvironment.access`)
        self.access = access
        self.timeline = timeline
        self.seed = seed
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        #: what kept the workload from proving anything (judged as violations: a check that ran
        #: on nothing must not pass)
        self.problems: list[str] = []

    def start(self) -> None:
        for i, spec in enumerate(CLIENTS):
            with open(self.dir / f"{spec.name}.stderr", "wb") as err:
                connect = process_arguments(self.access(spec.principal),
                                            self.dir / f"access-{spec.principal.value}.json")
                proc = subprocess.Popen(command(spec, connect, self.dir / f"{spec.name}.jsonl", self.seed + i),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
            self.procs[spec.name] = proc
            self.timeline.add("txn", f"{spec.role} {spec.name} started ({spec.lib}, {spec.mode}, {spec.isolation})",
                              pid=proc.pid)

    def wait_working(self, timeout: float) -> bool:
        """Until every writer has committed a transaction and every reader has its partitions
        (bounded): the faults are meant for a workload in full swing, not one still starting."""
        def working(spec: ClientSpec) -> bool:
            path = self.dir / f"{spec.name}.jsonl"
            if not path.exists():
                return False
            ops = load(path)
            if spec.writes:
                return any(o.get("op") == "txn" and o.get("type") == "ok" for o in ops)
            return any(o.get("op") == "poll" for o in ops)

        ok = wait_until(lambda: all(working(s) for s in CLIENTS), timeout, interval=0.5)
        idle = [s.name for s in CLIENTS if not working(s)]
        self.timeline.add("txn", f"workload {'working' if ok else 'NOT working'}: "
                                 f"{len(CLIENTS) - len(idle)}/{len(CLIENTS)} clients")
        if idle:
            self.problems.append(f"clients {idle} had not committed or polled within {timeout:.0f}s of starting")
        return ok

    def pid(self, name: str) -> int | None:
        """The running process of a client (None when it has exited)."""
        p = self.procs.get(name)
        return p.pid if p is not None and p.poll() is None else None

    def writers(self) -> list[str]:
        return [s.name for s in CLIENTS if s.role == "producer"]

    def finish(self, logger: logging.Logger) -> tuple[list[dict[str, Any]], Verdict]:
        """Stop the writers, read everything back, stop the readers; the merged history and its verdict."""
        self._stop([s.name for s in CLIENTS if s.writes], WRITER_STOP_S)
        reached = self._final_read(logger)
        self.timeline.add("txn", f"final read {'reached' if reached else 'DID NOT reach'} every high watermark")
        if not reached:
            self.problems.append(f"the final read did not reach every high watermark within {FINAL_READ_S:.0f}s")
        self.stop()
        resets = [librdkafka_resets(s.name, (self.dir / f"{s.name}.stderr").read_text(errors="replace"))
                  for s in CLIENTS if s.role == "consumer" and s.lib == "confluent"
                  and (self.dir / f"{s.name}.stderr").exists()]
        ops = merge(sorted(self.dir.glob("*.jsonl")), resets)
        with open(self.history_path, "w", encoding="utf-8") as f:
            for o in ops:
                f.write(json.dumps(o) + "\n")
        if not summarize(ops).committed_txns:
            self.problems.append("no transaction committed")
        return ops, check(ops)

    def stop(self) -> None:
        """Every client by PID (SIGTERM, SIGKILL after a bound); safe twice."""
        self._stop(list(self.procs), 15.0)

    def _stop(self, names: list[str], bound_s: float) -> None:
        stop_processes([self.procs[n] for n in names if n in self.procs], bound_s)

    def _final_read(self, logger: logging.Logger) -> bool:
        """Read every partition from the start, read_committed, until each position reaches its
        high watermark (bounded); recorded as polls of the process `final`."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
        from confluent_kafka import TopicPartition as CTP

        tps = [(t, p) for t, n in TOPIC_PARTITIONS.items() for p in range(n)]
        c = Consumer({**self.access(Role.READER).librdkafka(), "group.id": "chaos-txn-final",
                      "enable.auto.commit": False,
                      "isolation.level": "read_committed", "enable.partition.eof": False, "logger": logger})
        out = open(self.dir / "final.jsonl", "w", encoding="utf-8")  # noqa: SIM115 - closed below
        reached = False
        try:
            c.assign([CTP(t, p, OFFSET_BEGINNING) for t, p in tps])
            out.write(json.dumps({"op": "assign", "process": "final", "t": time.time()}) + "\n")
            high: dict[tuple[str, int], int] = {}
            deadline = time.monotonic() + FINAL_READ_S
            while time.monotonic() < deadline:
                try:
                    if len(high) < len(tps):
                        high.update({tp: c.get_watermark_offsets(CTP(*tp),
                                                                 timeout=5)[1] for tp in tps if tp not in high})
                    batch = c.consume(1000, 0.5)
                except KafkaException as e:
                    log.debug("final read: %s", e)
                    continue
                records: dict[str, list[list[Any]]] = {}
                for m in batch:
                    if not m.error():
                        records.setdefault(f"{m.topic()}-{m.partition()}", []).append(
                            [m.offset(), (m.value() or b"").decode()])
                if records:
                    out.write(json.dumps({"op": "poll", "process": "final", "type": "ok",
                                          "isolation": "read_committed", "t": time.time(), "records": records}) + "\n")
                positions = {(p.topic, p.partition): p.offset for p in c.position([CTP(*tp) for tp in tps])}
                if len(high) == len(tps) and all(positions.get(tp, -1) >= high[tp] or high[tp] == 0 for tp in tps):
                    reached = True
                    break
        finally:
            out.close()
            c.close()
        return reached
