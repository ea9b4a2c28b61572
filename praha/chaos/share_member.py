"""One member of the share-group workload (`praha chaos --workload share`), as its own process
(so the workload can SIGKILL it while it holds acquired records).

  python -m praha.chaos.share_member --bootstrap B [--access FILE] --group G --topics T
      --name s0.1 --out FILE [--work-ms 2] [--max-records 20]

A confluent-kafka `ShareConsumer` in explicit acknowledgement mode. What it does with a
record is decided by the record's value alone (`intent`, shared with the judge): most are
accepted, a few rejected (archived, never to come again), and a few are poison, released
every time they come until the broker archives them at its delivery count limit. Every fact
goes to FILE as one JSON line, flushed before the next step (a SIGKILL loses at most the line
being written; the judge skips a torn last line):

  {"ev": "start", "w": wall_ms, "pid": P}
  {"ev": "got", "w": wall_ms, "recs": [[topic, partition, offset, value, delivery_count], ...]}
  {"ev": "ack", "w": wall_ms, "recs": [[topic, partition, offset, kind], ...]}       sent
  {"ev": "acked", "w": wall_ms, "recs": [...]}          the leader confirmed them (commit_sync)
  {"ev": "ack_failed", "w": wall_ms, "recs": [...], "error": "..."}     refused for that partition
  {"ev": "ack_unknown", "w": wall_ms, "recs": [...], "error": "..."}    no answer: may or may not hold
  {"ev": "error", "w": wall_ms, "error": "..."}
  {"ev": "stop", "w": wall_ms}

SIGTERM ends it after its current step (close() leaves the group); it also ends with its parent.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import zlib
from enum import Enum
from typing import Any

from praha.chaos.access import from_arguments
from praha.chaos.member import Out

_stop = False


class Intent(Enum):
    """What a member does with a record (Kafka's acknowledge types)."""
    ACCEPT = "accept"
    REJECT = "reject"  # archived at once: must never be delivered again
    RELEASE = "release"  # a poison record: released every time, archived at the delivery count limit


#: out of 100 (by the CRC-32 of the value): this many values are poison, this many more rejected
POISON_PER_100 = 2
REJECT_PER_100 = 3


def intent(value: str) -> Intent:
    """The fate a member gives a record (pure, the same in every process: CRC-32, not hash())."""
    bucket = zlib.crc32(value.encode()) % 100
    if bucket < POISON_PER_100:
        return Intent.RELEASE
    if bucket < POISON_PER_100 + REJECT_PER_100:
        return Intent.REJECT
    return Intent.ACCEPT


def _on_term(*_args: object) -> None:
    global _stop
    _stop = True


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer

    kinds = {Intent.ACCEPT: AcknowledgeType.ACCEPT, Intent.REJECT: AcknowledgeType.REJECT,
             Intent.RELEASE: AcknowledgeType.RELEASE}
    signal.signal(signal.SIGTERM, _on_term)
    out = Out(open(args.out, "a", encoding="utf-8"))  # noqa: SIM115 - kept open for the process's life
    out.write("start", pid=os.getpid(), name=args.name)
    consumer = ShareConsumer({**from_arguments(args.bootstrap, args.access).librdkafka(), "group.id": args.group,
                              "client.id": args.name, "share.acknowledgement.mode": "explicit",
                              "max.poll.records": args.max_records, "socket.timeout.ms": 10000,
                              "topic.metadata.refresh.interval.ms": 2000})
    consumer.subscribe(args.topics.split(","))
    parent = os.getppid()
    deadline = time.monotonic() + args.max_seconds
    try:
        while not _stop and time.monotonic() < deadline and os.getppid() == parent:
            try:
                batch = consumer.poll(0.5)
            except KafkaException as e:
                out.write("error", error=str(e)[:200])
                time.sleep(0.2)
                continue
            got: list[list[Any]] = []
            acks: list[list[Any]] = []
            for m in batch:
                if m.error() is not None:
                    out.write("error", error=str(m.error())[:200])
                    continue
                value = (m.value() or b"").decode("utf-8", "replace")
                got.append([m.topic(), m.partition(), m.offset(), value, m.delivery_count()])
            if got:  # recorded before anything is acknowledged
                out.write("got", recs=got)
            for m, (topic, partition, offset, value, _dc) in zip((m for m in batch if m.error() is None), got):
                what = intent(value)
                consumer.acknowledge(m, kinds[what])
                acks.append([topic, partition, offset, what.value])
                if args.work_ms:
                    time.sleep(args.work_ms / 1000)
            if acks:
                _commit(consumer, out, acks)
    finally:
        try:
            consumer.close()
        finally:
            out.write("stop")
            out.f.close()
    return 0


def _commit(consumer: Any, out: Out, acks: list[list[Any]]) -> None:
    """Send the acknowledgements and record, per partition, what the leader answered."""
    from confluent_kafka import KafkaException

    out.write("ack", recs=acks)
    try:
        result = consumer.commit_sync(30)
    except KafkaException as e:
        out.write("ack_unknown", recs=acks, error=str(e)[:200])
        return
    answered = {(tp.topic, tp.partition): err for tp, err in (result or {}).items()}
    for (topic, partition), err in answered.items():
        recs = [a for a in acks if (a[0], a[1]) == (topic, partition)]
        if err is None:
            out.write("acked", recs=recs)
        else:
            out.write("ack_failed", recs=recs, error=str(err)[:200])
    unanswered = [a for a in acks if (a[0], a[1]) not in answered]
    if unanswered:
        out.write("ack_unknown", recs=unanswered, error="no answer for the partition")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m praha.chaos.share_member",
                                description="one ShareConsumer of the chaos share-group workload: accepts, "
                                            "rejects or releases each record by its value and logs every step")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--access", default="", help="a secure principal's credentials (JSON, praha/chaos/access.py)")
    p.add_argument("--group", required=True, help="the share group")
    p.add_argument("--topics", required=True, help="comma-separated topics to subscribe to")
    p.add_argument("--name", required=True, help="the member's name in the logs (slot.incarnation)")
    p.add_argument("--out", required=True, help="the JSON-lines file of what it got and acknowledged")
    p.add_argument("--work-ms", type=float, default=2.0, help="application work per record (holds records longer)")
    p.add_argument("--max-records", type=int, default=20, help="max.poll.records")
    p.add_argument("--max-seconds", type=float, default=3600.0, help="bound on the member's life")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
