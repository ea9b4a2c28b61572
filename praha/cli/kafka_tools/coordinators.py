"""kafka-consumer-groups and kafka-transactions: `praha groups` and `praha transactions`
already take these tools' options and print their tables; here they get Kafka's command
line around them: `--bootstrap-server` required, `--command-config` for TLS/SASL,
Kafka's `--timeout` in milliseconds, kafka-transactions' sub-commands (`list`,
`describe`, `describe-producers`, `find-hanging`, `abort`), and Kafka's exits."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from praha.cli.kafka_tools.base import KafkaToolParser

GROUPS_DESCRIPTION = """\
List all consumer groups, describe a consumer group, delete consumer group info, or reset
consumer group offsets (Kafka's kafka-consumer-groups).

examples:
  kafka-consumer-groups --bootstrap-server B --list [--state]
  kafka-consumer-groups --bootstrap-server B --describe --group g [--members [--verbose] | --state]
  kafka-consumer-groups --bootstrap-server B --reset-offsets --group g --topic t --to-earliest --execute
  kafka-consumer-groups --bootstrap-server B --reset-offsets --group g --all-topics --to-current --dry-run --export
  kafka-consumer-groups --bootstrap-server B --reset-offsets --group g --from-file offsets.csv --execute
  kafka-consumer-groups --bootstrap-server B --delete --group g
"""
TRANSACTIONS_DESCRIPTION = """\
This tool is used to analyze the transactional state of producers in the cluster. It can
be used to detect and recover from hanging transactions (Kafka's kafka-transactions).

  kafka-transactions --bootstrap-server B list
  kafka-transactions --bootstrap-server B describe --transactional-id ID
  kafka-transactions --bootstrap-server B describe-producers --topic T --partition P [--broker-id ID]
  kafka-transactions --bootstrap-server B find-hanging (--broker-id ID | --topic T [--partition P])
        [--max-transaction-timeout MIN]
  kafka-transactions --bootstrap-server B abort --topic T --partition P --start-offset O
  kafka-transactions --bootstrap-server B abort --topic T --partition P --producer-id PID
        --producer-epoch E --coordinator-epoch CE
"""
TRANSACTION_COMMANDS = ("list", "describe", "describe-producers", "find-hanging", "abort")


def _praha_parser(name: str, prog: str, description: str, register: Callable[[Any], None]) -> KafkaToolParser:
    """praha's own subcommand parser, built as a KafkaToolParser, plus Kafka's connection options."""
    holder = argparse.ArgumentParser(add_help=False)
    sub = holder.add_subparsers(parser_class=KafkaToolParser)
    register(sub)
    p = sub.choices[name]
    assert isinstance(p, KafkaToolParser)
    p.prog, p.description, p.epilog = prog, description, None
    p.add_argument("--command-config", metavar="FILE",
                   help="a properties file of client configs (security.protocol, sasl.*, ssl.*)")
    p.set_defaults(timeout=None)
    return p


def _finish(p: KafkaToolParser, args: argparse.Namespace, default_timeout_ms: int) -> None:
    if not args.bootstrap_server:
        p.fail('Missing required argument "[bootstrap-server]"')
    # Kafka's --timeout is in milliseconds; praha's admin clients take seconds
    args.timeout = (default_timeout_ms if args.timeout is None else args.timeout) / 1000.0


def run_consumer_groups(argv: list[str]) -> int:
    from praha.cli import groups

    p = _praha_parser("groups", "kafka-consumer-groups", GROUPS_DESCRIPTION, groups.register)
    args = p.parse(argv)
    _finish(p, args, 5000)
    return int(groups.cmd_groups(args))


def run_transactions(argv: list[str]) -> int:
    from praha.cli import transactions

    p = _praha_parser("transactions", "kafka-transactions", TRANSACTIONS_DESCRIPTION, transactions.register)
    commands = [a for a in argv if a in TRANSACTION_COMMANDS]
    if "--help" in argv or "-h" in argv:
        p.parse(["--help"])
    if len(commands) != 1:
        p.fail("too few arguments: give one command of " + ", ".join(TRANSACTION_COMMANDS) if not commands
               else f"unrecognized arguments: '{commands[1]}'")
    i = argv.index(commands[0])
    args = p.parse(argv[:i] + [f"--{commands[0]}"] + argv[i + 1:])
    _finish(p, args, 30000)
    args.kafka_table = True
    return int(transactions.cmd_transactions(args))
