"""One member of the campaign's consumer group, as its own process (so a fault can SIGKILL it).

  python -m praha.chaos.member --bootstrap B [--access FILE] --group G --topics t1,t2 --name m0.1 --out FILE

A confluent-kafka consumer that `subscribe`s, records what it is served, then commits
the offsets after what it processed (manual, synchronous: at-least-once). Every fact
goes to FILE as one JSON line, flushed before the next step, so a SIGKILL loses at most
the line being written (the harness ignores a torn last line):

  {"ev": "start", "w": wall_ms, "pid": P}
  {"ev": "assign", "w": wall_ms, "tps": [[topic, partition], ...]}
  {"ev": "revoke", "w": wall_ms, "tps": [...]}
  {"ev": "observed", "w": wall_ms of the request, "tp": [t, p], "o": committed offset (-1: none)}
  {"ev": "served", "w": wall_ms, "tp": [t, p], "recs": [[offset, id], ...]}
  {"ev": "commit", "w": wall_ms of the answer, "sent": wall_ms of the request, "tp": [t, p], "o": offset}
  {"ev": "commit_failed", "w": wall_ms, "error": "..."}
  {"ev": "stop", "w": wall_ms}

`commit` lines are only the offsets the coordinator acknowledged (no error for that
partition). A member never commits below what it saw committed or committed itself for
a partition (a consumer reset to `earliest` re-reads, which is at-least-once, but does
not pull the group's offset back): any backwards step the invariants find is the
coordinator's doing. A commit that fails (say COORDINATOR_LOAD_IN_PROGRESS while a
coordinator loads) stays owed and is retried on the next turn even when nothing new was
served (`Owed`), until the partition is revoked. SIGTERM stops it cleanly (LeaveGroup).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO, cast

from praha.chaos.access import ClientAccess, from_arguments

_stop = False


def _on_term(*_args: object) -> None:
    global _stop
    _stop = True


def _wall() -> int:
    return int(time.time() * 1000)


class Out:
    def __init__(self, f: TextIO):
        self.f = f

    def write(self, ev: str, **fields: Any) -> None:
        self.f.write(json.dumps({"ev": ev, "w": fields.pop("w", None) or _wall(), **fields}) + "\n")
        self.f.flush()


Tp = tuple[str, int]


@dataclass
class Owed:
    """The offsets a member processed but has not had acknowledged yet (pure bookkeeping).

    Seed 101 (loopback): the last commits before the producers stopped were refused with
    COORDINATOR_LOAD_IN_PROGRESS; a member that committed only after being served new records
    never sent them again, so the group "did not catch up" although the coordinator had loaded.
    """
    #: the highest offset seen committed for each partition (never commit below it)
    floor: dict[Tp, int] = field(default_factory=dict)
    #: partition -> the offset after the last record processed, not yet acknowledged
    pending: dict[Tp, int] = field(default_factory=dict)

    def processed(self, nxt: dict[Tp, int]) -> None:
        for tp, o in nxt.items():
            self.pending[tp] = max(self.pending.get(tp, -1), o)

    def revoked(self, tps: list[Tp]) -> None:
        """Owed no more: the partition's next owner commits (a late commit would pull it back)."""
        for tp in tps:
            self.pending.pop(tp, None)

    def due(self) -> dict[Tp, int]:
        """What to commit now: the owed offsets above what is known to be committed."""
        return {tp: o for tp, o in self.pending.items() if o > self.floor.get(tp, -1)}

    def seen_committed(self, tp: Tp, offset: int) -> None:
        self.floor[tp] = max(self.floor.get(tp, -1), offset)
        if self.pending.get(tp, -1) <= offset:
            self.pending.pop(tp, None)


def member_config(access: ClientAccess, group: str, session_timeout_ms: int) -> dict[str, Any]:
    return {
        **access.librdkafka(), "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "enable.partition.eof": False,
        "session.timeout.ms": session_timeout_ms, "heartbeat.interval.ms": max(100, session_timeout_ms // 8),
        "fetch.wait.max.ms": 200, "topic.metadata.refresh.interval.ms": 2000, "socket.timeout.ms": 10000,
        "partition.assignment.strategy": "range",
        # the rebalance timeout: a member SIGKILLed with its JoinGroup pending is waited for this
        # long (as Kafka does); the default 5 minutes would outlast the campaign's catch-up bound
        "max.poll.interval.ms": 30000,
    }


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka import TopicPartition as CTP

    signal.signal(signal.SIGTERM, _on_term)
    out = Out(open(args.out, "a", encoding="utf-8"))  # noqa: SIM115 - kept open for the process's life
    out.write("start", pid=os.getpid(), name=args.name)
    consumer = Consumer({**member_config(from_arguments(args.bootstrap, args.access), args.group,
                                         args.session_timeout_ms), "client.id": args.name})
    owed = Owed()
    pending_observe: list[Any] = []

    def on_assign(_c: Any, parts: list[Any]) -> None:
        out.write("assign", tps=[[p.topic, p.partition] for p in parts])
        pending_observe.extend(parts)

    def on_revoke(_c: Any, parts: list[Any]) -> None:
        out.write("revoke", tps=[[p.topic, p.partition] for p in parts])
        owed.revoked([(p.topic, p.partition) for p in parts])

    def observe() -> None:
        """What the coordinator says is committed for newly assigned partitions (OffsetFetch)."""
        parts = [CTP(p.topic, p.partition) for p in pending_observe]
        pending_observe.clear()
        sent = _wall()
        try:
            got = consumer.committed(parts, timeout=10)
        except KafkaException as e:
            out.write("observe_failed", error=str(e)[:200])
            return
        for p in got:
            if p.error is not None:
                continue
            off = p.offset if p.offset >= 0 else -1
            out.write("observed", w=sent, tp=[p.topic, p.partition], o=off)
            owed.seen_committed((p.topic, p.partition), off)

    consumer.subscribe(args.topics.split(","), on_assign=on_assign, on_revoke=on_revoke)
    deadline = time.monotonic() + args.max_seconds
    parent = os.getppid()
    try:
        while not _stop and time.monotonic() < deadline and os.getppid() == parent:  # dies with the harness
            try:
                batch = consumer.consume(200, 0.3)
            except KafkaException:
                continue
            if pending_observe:
                observe()
            nxt: dict[tuple[str, int], int] = {}
            served: dict[tuple[str, int], list[list[Any]]] = {}
            for m in batch:
                if m.error():
                    continue
                tp = (cast(str, m.topic()), cast(int, m.partition()))
                off = cast(int, m.offset())
                served.setdefault(tp, []).append([off, (m.value() or b"").decode("utf-8", "replace")])
                nxt[tp] = max(nxt.get(tp, -1), off + 1)
            for tp, recs in served.items():  # processed (recorded) before committed: at-least-once
                out.write("served", tp=list(tp), recs=recs)
            owed.processed(nxt)
            forward = [CTP(t, p, o) for (t, p), o in owed.due().items()]
            if not forward:
                continue
            sent = _wall()
            try:
                result = consumer.commit(offsets=forward, asynchronous=False)
            except KafkaException as e:
                out.write("commit_failed", error=str(e)[:200])
                continue
            done = _wall()
            for p in result or []:
                if p.error is None:
                    out.write("commit", w=done, sent=sent, tp=[p.topic, p.partition], o=p.offset)
                    owed.seen_committed((p.topic, p.partition), p.offset)
                else:
                    out.write("commit_failed", error=str(p.error)[:200], tp=[p.topic, p.partition])
    finally:
        try:
            consumer.close()
        finally:
            out.write("stop")
            out.f.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m praha.chaos.member")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--access", default="", help="a secure principal's credentials (JSON, praha/chaos/access.py)")
    p.add_argument("--group", required=True)
    p.add_argument("--topics", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--max-seconds", type=float, default=3600.0, help="bound on the member's life")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
