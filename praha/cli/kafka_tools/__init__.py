"""Kafka's command-line tools by name (`kafka-topics`, `kafka-topics.sh`, ...): console
scripts that take Kafka 3.9's options, talk to any cluster through `--bootstrap-server`
and the admin APIs (`--command-config` for TLS/SASL), print what Kafka's tools print and
exit as they exit. `TOOLS` is the one table: pyproject.toml's scripts are its names, with
and without `.sh` (a test checks), all entering `main`, which picks the tool by the name
it was called by. `python -m praha.cli.kafka_tools NAME ARGS...` runs one without the
scripts. A tool's module is imported only when it runs (a script starts faster)."""
from __future__ import annotations

import os
import sys

from praha.cli.kafka_tools.base import ErrorStyle, Tool, run_tool

TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("kafka-topics", "create, delete, describe, or change a topic", ErrorStyle.TOPICS, "topics:run"),
    Tool("kafka-configs", "describe and alter topic and broker configs", ErrorStyle.STDERR, "configs:run"),
    Tool("kafka-acls", "add, remove and list ACLs", ErrorStyle.ACLS, "acls:run"),
    Tool("kafka-consumer-groups", "list, describe, delete consumer groups; reset offsets", ErrorStyle.PREFIXED,
         "coordinators:run_consumer_groups"),
    Tool("kafka-console-producer", "stdin lines to records", ErrorStyle.STDERR, "console:run_producer"),
    Tool("kafka-console-consumer", "records to stdout lines", ErrorStyle.STDERR, "console:run_consumer"),
    Tool("kafka-transactions", "list, describe, abort transactions; find hanging ones", ErrorStyle.PREFIXED,
         "coordinators:run_transactions"),
    Tool("kafka-delete-records", "move partitions' log start offsets forward", ErrorStyle.STDERR,
         "operations:run_delete_records"),
    Tool("kafka-log-dirs", "log directories of brokers and the partitions in them", ErrorStyle.STDERR,
         "operations:run_log_dirs"),
    Tool("kafka-reassign-partitions", "move partition replicas between brokers", ErrorStyle.STDERR, "reassign:run"),
    Tool("kafka-leader-election", "preferred or unclean leader elections", ErrorStyle.STDERR,
         "operations:run_leader_election"),
    Tool("kafka-broker-api-versions", "the API versions every broker serves", ErrorStyle.STDERR,
         "operations:run_broker_api_versions"),
)}
#: the console scripts pyproject.toml declares: each tool's name, and the name with `.sh`
SCRIPT_NAMES = sorted(n + suffix for n in TOOLS for suffix in ("", ".sh"))


def tool_for(program: str) -> Tool | None:
    name = os.path.basename(program)
    return TOOLS.get(name[:-3] if name.endswith(".sh") else name)


def main(argv: list[str] | None = None) -> int:
    """The console scripts' entry: the tool named by the program's own name."""
    tool = tool_for(sys.argv[0])
    if tool is None:
        print(f"{os.path.basename(sys.argv[0])}: not one of Kafka's tools praha provides "
              f"({', '.join(TOOLS)})", file=sys.stderr)
        return 1
    return run_tool(tool, list(sys.argv[1:] if argv is None else argv))
