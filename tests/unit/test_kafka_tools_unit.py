"""Kafka's tools by name, the parts without a cluster: the scripts pyproject.toml installs
are exactly the tools' names with and without `.sh`, all entering the dispatcher, which
picks the tool by the name it was called by; Kafka's exit status 1 for bad options;
client properties as Kafka writes them; the console consumer's formatter."""
from __future__ import annotations

import ssl
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from praha.cli.kafka_tools import SCRIPT_NAMES, TOOLS, main, tool_for
from praha.cli.kafka_tools.console import Formatter, client_settings
from praha.cli.kafka_tools.topics import _parse_assignment
from praha.errors import ConfigError, PrahaError
from praha.security.client_properties import client_security, parse_properties

ROOT = Path(__file__).resolve().parents[2]
KAFKA_TOOLS = {"kafka-topics", "kafka-configs", "kafka-acls", "kafka-consumer-groups", "kafka-console-producer",
               "kafka-console-consumer", "kafka-transactions", "kafka-delete-records", "kafka-log-dirs",
               "kafka-reassign-partitions", "kafka-leader-election", "kafka-broker-api-versions"}


def test_pyproject_installs_every_tool_with_and_without_sh():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    ours = {name: target for name, target in scripts.items() if name.startswith("kafka-")}
    assert set(TOOLS) == KAFKA_TOOLS
    assert sorted(ours) == SCRIPT_NAMES == sorted(KAFKA_TOOLS | {n + ".sh" for n in KAFKA_TOOLS})
    assert set(ours.values()) == {"praha.cli.kafka_tools:main"}


@pytest.mark.parametrize("name", sorted(KAFKA_TOOLS))
def test_every_tool_has_an_entry(name):
    assert callable(TOOLS[name].load())


@pytest.mark.parametrize("program", ["/usr/bin/kafka-topics.sh", "kafka-topics", "./kafka-log-dirs.sh"])
def test_the_program_name_picks_the_tool(program):
    assert tool_for(program) is TOOLS[Path(program).name.removesuffix(".sh")]
    assert tool_for("/usr/bin/kafka-nothing.sh") is None


def test_bad_options_exit_1_with_the_message_and_usage_on_stderr(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/kafka-topics.sh"])
    with pytest.raises(SystemExit) as exc:
        main(["--bootstrap-server", "127.0.0.1:1", "--list", "--bogus"])
    out, err = capsys.readouterr()
    assert exc.value.code == 1
    assert out == ""
    assert "unrecognized arguments: --bogus" in err
    assert "usage: kafka-topics" in err
    with pytest.raises(SystemExit) as exc:
        main(["--bootstrap-server", "127.0.0.1:1", "--list", "--describe"])
    assert exc.value.code == 1
    assert "Command must include exactly one action" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # Kafka's tools exit 1 after --help too
        main(["--help"])
    assert exc.value.code == 1
    assert "--replication-factor" in capsys.readouterr().err


def test_an_unknown_program_name_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["kafka-mirror-maker.sh"])
    assert main([]) == 1
    assert "not one of Kafka's tools" in capsys.readouterr().err


def test_java_properties_with_comments_and_continuations():
    props = parse_properties("# client\n! also a comment\nsecurity.protocol = SASL_SSL\nsasl.mechanism: PLAIN\n"
                             'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n'
                             '    username="u" password="p";\n')
    assert props == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                     "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                         'username="u" password="p";'}
    security = client_security(props)
    assert (security.protocol, security.sasl_mechanism, security.username, security.password) == (
        "SASL_SSL", "PLAIN", "u", "p")
    assert isinstance(security.ssl_context, ssl.SSLContext)
    assert security.ssl_context.check_hostname


def test_client_properties_refuse_what_cannot_work():
    with pytest.raises(ConfigError, match="security.protocol"):
        client_security({"security.protocol": "SASL_TLS"})
    with pytest.raises(ConfigError, match="sasl.jaas.config"):
        client_security({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"})
    assert client_security({}).protocol == "PLAINTEXT"


def test_kafka_client_names_become_kafka_python_arguments(capsys):
    from kafka import KafkaProducer

    got = client_settings({"acks": "all", "linger.ms": "5", "enable.idempotence": "false", "nonsense.key": "1"},
                          KafkaProducer.DEFAULT_CONFIG)
    assert got == {"security_protocol": "PLAINTEXT", "acks": "all", "linger_ms": 5, "enable_idempotence": False}
    assert "The configuration 'nonsense.key' was supplied but isn't a known config." in capsys.readouterr().err


def test_the_default_formatter_prints_what_is_asked_in_kafkas_order():
    m = SimpleNamespace(timestamp=1700, timestamp_type=0, partition=2, offset=7, headers=[("h", b"v")],
                        key=None, value=b"val")
    assert Formatter({}).render(m) == b"val\n"
    everything = {k: "true" for k in ("print.timestamp", "print.partition", "print.offset", "print.headers",
                                      "print.key")}
    assert Formatter({**everything, "key.separator": "|"}).render(m) == \
        b"CreateTime:1700|Partition:2|Offset:7|h:v|null|val\n"


def test_replica_assignments_as_kafka_topics_parses_them():
    assert _parse_assignment("1:2,2:3") == {0: [1, 2], 1: [2, 3]}
    with pytest.raises(PrahaError, match="duplicate entries: 1"):
        _parse_assignment("1:1")
    with pytest.raises(PrahaError, match="different replication factor"):
        _parse_assignment("1:2,3")
