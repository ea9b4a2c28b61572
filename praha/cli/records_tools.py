"""`praha delete-records` (kafka-delete-records) and `praha log-dirs` (kafka-log-dirs):
clients of the DeleteRecords and DescribeLogDirs APIs, with Kafka's tools' output."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from praha.cli.options import CliError, add_cluster_options, bootstrap_of, security_of


def _id_list(text: str) -> list[int]:
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,2,3, got {text!r}") from None
    if not ids or any(i < 0 for i in ids):
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,2,3, got {text!r}")
    return ids


def register(sub: Any) -> None:
    p = sub.add_parser("delete-records", help="move partitions' log start offsets forward (kafka-delete-records)",
                       description="Delete every record below the given offset of each partition in the JSON "
                                   'file {"partitions": [{"topic": "t", "partition": 0, "offset": 42}], '
                                   '"version": 1}; offset -1 means the high watermark.')
    p.add_argument("--offset-json-file", required=True, type=Path, help="the partitions and offsets (Kafka's format)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the replicas (default 30)")
    add_cluster_options(p)
    p.set_defaults(fn=cmd_delete_records)

    p = sub.add_parser("log-dirs", help="log directories of brokers and the partitions in them (kafka-log-dirs)")
    p.add_argument("--describe", action="store_true", required=True, help="describe the log directories")
    p.add_argument("--broker-list", type=_id_list, help="brokers to ask, e.g. 1,2 (default: every live broker)")
    p.add_argument("--topic-list", help="only these topics, e.g. a,b (default: all)")
    add_cluster_options(p)
    p.set_defaults(fn=cmd_log_dirs)


def cmd_delete_records(args: argparse.Namespace) -> int:
    from praha.admin.records import delete_records, parse_offset_plan

    try:
        text = args.offset_json_file.read_text()
    except OSError as e:
        raise CliError(f"cannot read {args.offset_json_file}: {e.strerror}") from None
    plan = parse_offset_plan(text)
    print("Executing records delete operation")
    results = delete_records(bootstrap_of(args), plan, args.timeout, security_of(args))
    print("Records delete operation completed:")
    failed = 0
    for tp in sorted(results, key=lambda tp: (tp.topic, tp.partition)):
        r = results[tp]
        if r.error is None:
            print(f"partition: {tp.topic}-{tp.partition}\tlow_watermark: {r.low_watermark}")
        else:
            failed += 1
            print(f"partition: {tp.topic}-{tp.partition}\terror: {r.error}")
    return 1 if failed else 0


def cmd_log_dirs(args: argparse.Namespace) -> int:
    from praha.admin.records import describe_log_dirs, log_dirs_json

    topics = None if not args.topic_list else {t.strip() for t in args.topic_list.split(",") if t.strip()}
    print("Querying brokers for log directories information")
    brokers = describe_log_dirs(bootstrap_of(args), args.broker_list, topics, security=security_of(args))
    answered = [b.broker for b in brokers if b.error is None]
    print(f"Received log directory information from brokers {','.join(map(str, answered))}")
    print(log_dirs_json(brokers))
    missing = [b for b in brokers if b.error is not None]
    if missing:
        raise CliError("; ".join(f"broker {b.broker}: {b.error}" for b in missing))
    return 0
