"""Console producer and consumer (confluent-kafka), like Kafka's console tools.

  praha produce --topic T [--bootstrap-server H:P | --dir D] [--acks all] [--key-separator :]
      one record per stdin line (key<sep>value when --key-separator is given)
  praha consume --topic T [--from-beginning] [--max-messages N] [--partition P]
      [--print-key] [--idle-timeout S]
      assign-based (no consumer group): every partition, or just --partition P

Records go to stdout, progress and errors to stderr. The broker list comes from
--bootstrap-server, or from the local cluster in --dir.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from praha.cli.options import at_least, bootstrap_of

EXIT_OK, EXIT_ERROR = 0, 1


def _confluent() -> Any:
    try:
        import confluent_kafka
    except ImportError:  # pragma: no cover - a test dependency
        from praha.cli.options import CliError

        raise CliError("the console tools need confluent-kafka (pip install confluent-kafka)") from None
    return confluent_kafka


def cmd_produce(args: argparse.Namespace) -> int:
    ck = _confluent()
    producer = ck.Producer({
        "bootstrap.servers": bootstrap_of(args), "acks": args.acks, "linger.ms": 5,
        "message.timeout.ms": int(args.timeout * 1000), "log_level": 3,
    })
    sent = failed = 0
    first_error: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        nonlocal failed
        if err is not None:
            failed += 1
            if not first_error:
                first_error.append(err)

    sep = args.key_separator
    for line in sys.stdin.buffer:
        line = line.rstrip(b"\r\n")
        key = None
        if sep:
            k, found, v = line.partition(sep.encode())
            key, line = (k, v) if found else (None, line)
        while True:
            try:
                producer.produce(args.topic, value=line, key=key, partition=args.partition, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.1)
        sent += 1
        producer.poll(0)
    left = producer.flush(args.timeout)
    failed += left
    ok = sent - failed
    print(f"produced {ok} of {sent} records to {args.topic}"
          + (f"; {failed} failed (first error: {first_error[0] if first_error else 'timed out'})" if failed else ""),
          file=sys.stderr)
    return EXIT_OK if failed == 0 else EXIT_ERROR


def cmd_consume(args: argparse.Namespace) -> int:
    from praha.cli.options import CliError

    ck = _confluent()
    consumer = ck.Consumer({
        "bootstrap.servers": bootstrap_of(args), "group.id": "praha-console-consumer",
        "enable.auto.commit": False, "enable.auto.offset.store": False, "log_level": 3,
    })
    try:
        md = consumer.list_topics(args.topic, timeout=args.timeout)
        t = md.topics.get(args.topic)
        if t is None or t.error is not None or not t.partitions:
            raise CliError(f"topic {args.topic} not found" + (f" ({t.error})" if t is not None and t.error else ""))
        if args.partition is not None and args.partition not in t.partitions:
            raise CliError(f"topic {args.topic} has no partition {args.partition} "
                           f"(partitions 0..{max(t.partitions)})")
        parts = sorted(t.partitions) if args.partition is None else [args.partition]
        start = ck.OFFSET_BEGINNING if args.from_beginning else ck.OFFSET_END
        consumer.assign([ck.TopicPartition(args.topic, p, start) for p in parts])
        print(f"consuming {args.topic} partitions {parts}", file=sys.stderr)
        count = 0
        last = time.monotonic()
        out = sys.stdout.buffer
        sep = args.key_separator.encode()
        while args.max_messages is None or count < args.max_messages:
            msg = consumer.poll(0.5)
            if msg is None:
                if args.idle_timeout is not None and time.monotonic() - last > args.idle_timeout:
                    break
                continue
            if msg.error():
                if msg.error().code() != ck.KafkaError._PARTITION_EOF:
                    print(f"error: {msg.error()}", file=sys.stderr)
                continue
            last = time.monotonic()
            if args.print_key:
                out.write((msg.key() or b"") + sep)
            out.write((msg.value() or b"") + b"\n")
            count += 1
        out.flush()
        print(f"consumed {count} records", file=sys.stderr)
        return EXIT_OK
    finally:
        consumer.close()


def _cluster_options(p: argparse.ArgumentParser) -> None:
    from praha.cli.options import _host_port
    from praha.cluster.local import DEFAULT_DIR

    g = p.add_argument_group("cluster (default: the local cluster in --dir)")
    g.add_argument("--bootstrap-server", type=_host_port, metavar="HOST:PORT", help="any broker of the cluster")
    g.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"local cluster directory (default {DEFAULT_DIR})")


def register(sub: Any) -> None:
    p = sub.add_parser("produce", help="write stdin lines as records (confluent-kafka producer)")
    p.add_argument("--topic", required=True)
    p.add_argument("--acks", default="all", choices=["all", "-1", "0", "1"], help="default all")
    p.add_argument("--key-separator", metavar="SEP", help="split each line into key SEP value")
    p.add_argument("--partition", type=int, default=-1, help="fixed partition (default: by key, else spread)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for delivery (default 30)")
    _cluster_options(p)
    p.set_defaults(fn=cmd_produce)

    p = sub.add_parser("consume", help="print records to stdout (assign-based, no consumer group)")
    p.add_argument("--topic", required=True)
    p.add_argument("--from-beginning", action="store_true", help="start at the earliest offset (default: the end)")
    p.add_argument("--max-messages", type=at_least(1), help="stop after N records (default: run until stopped)")
    p.add_argument("--partition", type=int, help="only this partition")
    p.add_argument("--print-key", action="store_true", help="print key SEP value")
    p.add_argument("--key-separator", default="\t", metavar="SEP", help="with --print-key (default tab)")
    p.add_argument("--idle-timeout", type=float, metavar="S", help="stop after S seconds without records")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for metadata (default 10)")
    _cluster_options(p)
    p.set_defaults(fn=cmd_consume)
