"""docs/configuration.md, generated from the two tables (`make docs`).

`tests/unit/config/test_config_table.py` fails when the committed page and the tables
differ, so the page cannot drift from what the broker parses and reports.
"""
from __future__ import annotations

import sys
from pathlib import Path

from praha.config.broker_defs import BROKER_CONFIG_DEFS
from praha.config.model import ConfigDef, Dynamic
from praha.config.topic_defs import TOPIC_CONFIG_DEFS

HEADER = """# Configuration

Generated from `praha/config/broker_defs.py` and `praha/config/topic_defs.py` by
`make docs`; do not edit by hand (a test compares this page with the tables).

A broker reads `server.properties` (`praha broker start`, `praha cluster up --broker-config
KEY=VALUE`). Every key below is checked with its type and valid values when the broker
starts; a bad value stops it with a message naming the key. A key not listed here is
reported once, in one line, and otherwise ignored, as Kafka does. `listener.name.<l>.<key>`
sets a listener's own value of a listener setting.

*Dynamic* is where AlterConfigs may change a broker setting while brokers run, as in Kafka
3.9: `per-broker` (a broker id or a listener prefix), `cluster-wide` (also at `<default>`),
`read-only` (only `server.properties`). Broker settings marked *not acted on* are accepted
and reported as Kafka does, but praha does not use them; topic settings so marked (tiered
storage, codec levels) are reported by DescribeConfigs and refused by CreateTopics and
AlterConfigs.
"""


def _cell(text: str | None) -> str:
    if text is None:
        return "null"
    return (text or '""').replace("|", "\\|")


def _valid(d: ConfigDef) -> str:
    return d.validator.describe() if d.validator is not None else ""


def _doc(d: ConfigDef) -> str:
    return d.doc + ("" if d.applied else " (*not acted on*)")


def render() -> str:
    lines = [HEADER, "## Broker settings", "",
             "| name | type | default | valid values | dynamic | importance | description |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for d in sorted(BROKER_CONFIG_DEFS, key=lambda d: d.name):
        lines.append(f"| `{d.name}` | {d.type.name.lower()} | {_cell(d.default)} | {_valid(d)} | "
                     f"{d.dynamic.value} | {d.importance.value} | {_cell(_doc(d))} |")
    lines += ["", "## Topic settings", "",
              "A topic's own value (`kafka-topics --config`, AlterConfigs) comes first; else the first of its broker",
              "synonyms that is set, in the order listed (Kafka's precedence: `log.retention.ms` before",
              "`log.retention.minutes` before `log.retention.hours`), converted to the topic setting's unit;",
              "else the default.", "",
              "| name | type | default | valid values | broker synonyms | description |",
              "| --- | --- | --- | --- | --- | --- |"]
    for d in TOPIC_CONFIG_DEFS:
        syn = ", ".join(f"`{s.name}`" for s in d.synonyms)
        lines.append(f"| `{d.name}` | {d.type.name.lower()} | {_cell(d.default)} | {_valid(d)} | "
                     f"{syn} | {_cell(_doc(d))} |")
    dynamic = sum(d.dynamic is not Dynamic.READ_ONLY for d in BROKER_CONFIG_DEFS)
    lines += ["", f"{len(BROKER_CONFIG_DEFS)} broker settings ({dynamic} dynamic), "
                  f"{len(TOPIC_CONFIG_DEFS)} topic settings.", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """`python -m praha.config.docs [PATH]`: write the page (stdout without a path)."""
    text = render()
    if argv:
        Path(argv[0]).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
