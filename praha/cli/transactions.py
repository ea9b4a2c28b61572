"""`praha transactions`: Kafka's kafka-transactions.sh, over the wire protocol.

  praha transactions --list
  praha transactions --describe --transactional-id ID
  praha transactions --describe-producers --topic T --partition P
  praha transactions --describe-producers --topic T --partition P --broker-id B
  praha transactions --find-hanging (--broker-id B | --topic T [--partition P]) [--max-transaction-timeout MINUTES]
  praha transactions --abort --topic T --partition P (--start-offset O | --producer-id PID --producer-epoch E
        --coordinator-epoch CE)
  every form takes --json, and --bootstrap-server, --zookeeper or --dir to name the cluster

One action per run. Option mistakes argparse can see exit 2 with the usage line; what the
cluster refuses prints `error: ...` (Kafka's message) and exits 1.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from praha.cli.options import CliError, add_cluster_options, at_least, bootstrap_of, security_of

DESCRIPTION = """\
List, describe and abort transactions (Kafka's kafka-transactions). Exactly one action:
--list, --describe, --describe-producers, --find-hanging, --abort.

  --abort writes an ABORT marker for one producer's open transaction in one partition,
  straight to the partition's leader: the way out of a hanging transaction (one the log
  holds open but no coordinator will end). Take the producer id, epoch and coordinator
  epoch from --describe-producers or --find-hanging.
"""
EPILOG = """\
examples:
  praha transactions --list
  praha transactions --describe --transactional-id payments-1
  praha transactions --describe-producers --topic orders --partition 0
  praha transactions --find-hanging --broker-id 1
  praha transactions --abort --topic orders --partition 0 --producer-id 4000 --producer-epoch 2 --coordinator-epoch 5
"""


def register(sub: Any) -> None:
    p = sub.add_parser("transactions", help="list, describe, abort transactions (kafka-transactions)",
                       description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_argument_group("action (exactly one)").add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="every transactional id of every coordinator")
    actions.add_argument("--describe", action="store_true", help="one transactional id's state (--transactional-id)")
    actions.add_argument("--describe-producers", action="store_true",
                         help="the producers a partition's leader knows (--topic, --partition)")
    actions.add_argument("--find-hanging", action="store_true",
                         help="open transactions no coordinator will end, in the partitions a broker leads")
    actions.add_argument("--abort", action="store_true", help="abort one producer's open transaction in a partition")
    g = p.add_argument_group("what to act on")
    g.add_argument("--transactional-id", metavar="ID", help="--describe: the transactional id")
    g.add_argument("--topic", metavar="TOPIC", help="--describe-producers, --abort: the topic")
    g.add_argument("--partition", type=at_least(0), metavar="P", help="--describe-producers, --abort: the partition")
    g.add_argument("--producer-id", type=at_least(0), metavar="PID", help="--abort: the producer id")
    g.add_argument("--producer-epoch", type=at_least(0), metavar="E", help="--abort: the producer epoch")
    g.add_argument("--coordinator-epoch", type=at_least(0), metavar="CE", help="--abort: the coordinator epoch")
    g.add_argument("--start-offset", type=at_least(0), metavar="O",
                   help="--abort: the first offset of the transaction to abort (instead of its producer's ids)")
    g.add_argument("--broker-id", type=at_least(0), metavar="B",
                   help="--find-hanging: the broker whose partitions to search; --describe-producers: the replica "
                        "to ask (default the leader)")
    g.add_argument("--max-transaction-timeout", type=at_least(1), default=15, metavar="MINUTES",
                   help="--find-hanging: transactions open longer than this may hang (default 15, "
                        "transaction.max.timeout.ms)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default 10)")
    add_cluster_options(p)
    p.set_defaults(fn=cmd_transactions)


#: the options each action needs and may take (Kafka's TransactionsCommand arguments)
REQUIRED = {
    "describe": ("transactional_id",),
    "describe_producers": ("topic", "partition"),
    "find_hanging": (),
    "abort": ("topic", "partition"),
}
ALLOWED = {
    "describe": ("transactional_id",),
    "describe_producers": ("topic", "partition", "broker_id"),
    "find_hanging": ("broker_id", "topic", "partition"),
    "abort": ("topic", "partition", "producer_id", "producer_epoch", "coordinator_epoch", "start_offset"),
}
ABORT_IDS = ("producer_id", "producer_epoch", "coordinator_epoch")


def check_options(args: argparse.Namespace) -> str:
    """The action, after Kafka's option rules; CliError before any I/O."""
    action = next(a for a in ("list", "describe", "describe_producers", "find_hanging", "abort") if getattr(args, a))
    for name in REQUIRED.get(action, ()):
        if getattr(args, name) is None:
            raise CliError(f"--{action.replace('_', '-')} requires --{name.replace('_', '-')}")
    given = {n for ns in ALLOWED.values() for n in ns if getattr(args, n) is not None}
    extra = sorted(given - set(ALLOWED.get(action, ())))
    if extra:
        raise CliError(f"--{action.replace('_', '-')} does not take --{extra[0].replace('_', '-')}")
    if action == "find_hanging":
        if args.broker_id is None and args.topic is None:
            raise CliError("--find-hanging requires --broker-id or --topic")
        if args.partition is not None and args.topic is None:
            raise CliError("--find-hanging: --partition requires --topic")
    if action == "abort":
        ids = [getattr(args, n) is not None for n in ABORT_IDS]
        by_offset = args.start_offset is not None
        if not ((by_offset and not any(ids)) or (not by_offset and all(ids))):
            raise CliError("--abort requires either --start-offset or all of --producer-id, --producer-epoch "
                           "and --coordinator-epoch")
    return action


def cmd_transactions(args: argparse.Namespace) -> int:
    from praha.admin.transactions import TransactionAdmin
    from praha.common import TopicPartition

    action = check_options(args)
    with TransactionAdmin(bootstrap_of(args), timeout=args.timeout, security=security_of(args)) as admin:
        if action == "list":
            rows = [[t.transactional_id, t.coordinator, t.producer_id, t.state] for t in admin.list_transactions()]
            return _print(args, ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows)
        if action == "describe":
            d = admin.describe_transaction(args.transactional_id)
            now = int(time.time() * 1000)
            duration = now - d.start_ms if d.start_ms >= 0 else None
            row = [d.coordinator, d.transactional_id, d.producer_id, d.producer_epoch, d.state, d.timeout_ms,
                   d.start_ms if d.start_ms >= 0 else None, duration,
                   ",".join(str(tp) for tp in d.partitions)]
            return _print(args, ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                                 "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                                 "TopicPartitions"], [row])
        if action == "describe_producers":
            states = admin.describe_producers(TopicPartition(args.topic, args.partition), args.broker_id)
            return _print(args, ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                                 "LastTimestamp", "CurrentTransactionStartOffset"],
                          [[s.producer_id, s.producer_epoch, s.coordinator_epoch, s.last_sequence,
                            s.last_timestamp, s.current_txn_start_offset] for s in states])
        if action == "find_hanging":
            hanging = admin.find_hanging(args.broker_id, args.max_transaction_timeout * 60_000, args.topic,
                                         args.partition)
            return _print(args, ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                                 "StartOffset", "LastTimestamp", "Duration(min)"],
                          [[h.partition.topic, h.partition.partition, h.producer.producer_id,
                            h.producer.producer_epoch, h.producer.coordinator_epoch,
                            h.producer.current_txn_start_offset, h.producer.last_timestamp,
                            h.duration_ms // 60_000 if h.duration_ms >= 0 else None] for h in hanging])
        tp = TopicPartition(args.topic, args.partition)
        if args.start_offset is not None:  # the producer whose open transaction starts there
            found = [s for s in admin.describe_producers(tp) if s.current_txn_start_offset == args.start_offset]
            if not found:
                raise CliError(f"Could not find any open transactions starting at offset {args.start_offset} on "
                               f"partition {tp}")
            args.producer_id, args.producer_epoch, args.coordinator_epoch = (
                found[0].producer_id, found[0].producer_epoch, found[0].coordinator_epoch)
        admin.abort_transaction(tp, args.producer_id, args.producer_epoch, args.coordinator_epoch)
        if args.json:
            print(json.dumps({"aborted": {"topic": tp.topic, "partition": tp.partition,
                                          "producer_id": args.producer_id, "producer_epoch": args.producer_epoch}}))
        else:
            print(f"Aborted the transaction of producer {args.producer_id} (epoch {args.producer_epoch}) in {tp}")
        return 0


def _print(args: argparse.Namespace, header: list[str], rows: list[list[Any]]) -> int:
    if args.json:
        print(json.dumps([dict(zip(header, r)) for r in rows]))
        return 0
    cells = [header] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    if getattr(args, "kafka_table", False):  # kafka-transactions by name: each cell padded, then a tab
        for r in cells:
            sys.stdout.write("".join(c.ljust(w) + "\t" for c, w in zip(r, widths)) + "\n")
        return 0
    for r in cells:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")
    return 0
