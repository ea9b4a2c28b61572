"""What every Kafka tool by name shares: a parser that fails as Kafka's tools fail (the
message and the options on stderr, exit status 1, also for `--help`, as joptsimple's
`printUsageAndExit`), `--bootstrap-server` and `--command-config`, and the run wrapper
that turns a refusal into the tool's own error line and status 1."""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, NoReturn

from praha.errors import PrahaError

EXIT_OK, EXIT_FAILED = 0, 1


class ErrorStyle(Enum):
    """Where and how each Kafka tool reports a failed command."""

    #: the message alone, on stderr (most tools in `tools/`)
    STDERR = "stderr"
    #: kafka-topics: `Error while executing topic command : MSG`, on stdout
    TOPICS = "topics"
    #: kafka-acls: `Error while executing ACL command: MSG`, on stdout
    ACLS = "acls"
    #: kafka-consumer-groups and kafka-transactions: `Error: MSG` on stderr
    PREFIXED = "prefixed"


def report(style: ErrorStyle, message: str) -> None:
    if style is ErrorStyle.TOPICS:
        print(f"Error while executing topic command : {message}")
    elif style is ErrorStyle.ACLS:
        print(f"Error while executing ACL command: {message}")
    elif style is ErrorStyle.PREFIXED:
        print(f"Error: {message}", file=sys.stderr)
    else:
        print(message, file=sys.stderr)


class KafkaToolParser(argparse.ArgumentParser):
    """argparse with Kafka's exits: a usage mistake prints the message and the options on
    stderr and exits 1; `--help` prints the options and exits 1 too, as Kafka's tools do."""

    def __init__(self, prog: str, description: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        kwargs.pop("add_help", None)
        super().__init__(prog=prog, description=description, add_help=False, **kwargs)
        self.add_argument("--help", action="store_true", help="Print usage information.")
        self.add_argument("--version", action="store_true", help="Display Kafka version (praha's).")

    def error(self, message: str) -> NoReturn:
        self.fail(message)

    def fail(self, message: str) -> NoReturn:
        print(message, file=sys.stderr)
        self.print_help(sys.stderr)
        sys.exit(EXIT_FAILED)

    def refuse_zookeeper(self, given: object, praha_verb: str) -> None:
        """The ZooKeeper forms of Kafka's tools (--zookeeper, --authorizer-properties): praha's
        tools by name speak to brokers only; its own verb does the ZooKeeper form."""
        if given:
            self.fail(f"praha's {self.prog} talks to the cluster through --bootstrap-server; for ZooKeeper use "
                      f"`{praha_verb} --zookeeper`")

    def parse(self, argv: list[str]) -> argparse.Namespace:
        if not argv:
            self.fail(self.description or "")
        args = self.parse_args(argv)
        if args.help:
            self.print_help(sys.stderr)
            sys.exit(EXIT_FAILED)
        if args.version:
            print("3.9.0 (praha)")
            sys.exit(EXIT_OK)
        return args


def add_connection(p: argparse.ArgumentParser, config_flag: str = "--command-config", required: bool = True) -> None:
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", required=required,
                   help="REQUIRED: the server(s) to connect to, host1:port1,host2:port2")
    p.add_argument(config_flag, dest="command_config", metavar="FILE",
                   help="a properties file of client configs for the admin client: security.protocol, "
                        "sasl.mechanism, sasl.jaas.config, ssl.truststore.location, ...")


@dataclass(frozen=True)
class Tool:
    """One of Kafka's tools: its name, what it does, how it reports failures, and its entry
    (`module:function` in this package, imported when the tool runs)."""

    name: str
    summary: str
    style: ErrorStyle
    entry: str

    def load(self) -> Callable[[list[str]], int]:
        module, _, function = self.entry.partition(":")
        run: Callable[[list[str]], int] = getattr(importlib.import_module(f"{__package__}.{module}"), function)
        return run


def run_tool(tool: Tool, argv: list[str]) -> int:
    try:
        return tool.load()(argv)
    except PrahaError as e:
        report(tool.style, str(e))
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as a shell tool does
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
