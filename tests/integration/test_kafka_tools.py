"""Kafka's command-line tools by name (issue 26) against real clusters: one 3-broker
cluster for the module, plus a 1-broker SASL_SSL cluster (SCRAM-SHA-512, ACLs on) reached
with `--command-config` / `--producer.config` / `--consumer.config`. Each tool's common
forms are checked against the shape of Kafka 3.9's output (line patterns, headers,
wording) and its exit status, also for bad options and unknown topics.

Every tool runs as a process of its own (`test_every_tool_runs_as_a_process`, all at
once); the many forms run through the same entry (`run_tool`) in this process with its
own stdin/stdout/stderr, which keeps the module's time modest (a Python process that
imports kafka-python costs seconds on a busy machine). `make test-kafka-tools` runs every
form as a process (PRAHA_TOOLS_AS_PROCESSES=1). Processes are the installed console
scripts when the venv has them (`kafka-topics.sh` ...), else `python -m
praha.cli.kafka_tools NAME` (same code; a unit test checks pyproject.toml declares them)."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaProducer

from praha.cli.kafka_tools import tool_for
from praha.cli.kafka_tools.base import run_tool
from praha.cluster.local import LocalCluster
from praha.testing.cluster import TEST_BROKER_CONFIG, running_cluster, wait_for
from praha.testing.zookeeper import delete_chroot, unique_chroot

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SMALL_INTERNAL = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3",
                  "group.initial.rebalance.delay.ms": "0"}


@dataclass
class Run:
    rc: int
    out: str
    err: str


AS_PROCESSES = os.environ.get("PRAHA_TOOLS_AS_PROCESSES") == "1"


def command(name: str, *args: object) -> list[str]:
    script = Path(sys.executable).parent / name
    head = [str(script)] if script.exists() else [sys.executable, "-m", "praha.cli.kafka_tools", name]
    return head + [str(a) for a in args]


ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def tool(name: str, *args: object, stdin: str | None = None, timeout: float = 90) -> Run:
    if AS_PROCESSES:
        done = subprocess.run(command(name, *args), input=stdin, capture_output=True, text=True, timeout=timeout,
                              env=ENV)
        return Run(done.returncode, done.stdout, done.stderr)
    return in_process(name, [str(a) for a in args], stdin or "")


def in_process(name: str, argv: list[str], stdin: str) -> Run:
    """The tool's entry with this process's stdin/stdout/stderr swapped for buffers (text
    and bytes, as the console tools use both)."""
    streams = [io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True) for _ in range(2)]
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
    sys.stdout, sys.stderr = streams
    try:
        rc = run_tool(tool_for(name), argv)
    except SystemExit as e:
        rc = int(e.code or 0)
    finally:
        for s in streams:
            s.flush()
        sys.stdin, sys.stdout, sys.stderr = saved
    out, err = (s.buffer.getvalue().decode() for s in streams)  # type: ignore[attr-defined]
    return Run(rc, out, err)


def ok(name: str, *args: object, stdin: str | None = None) -> Run:
    r = tool(name, *args, stdin=stdin)
    assert r.rc == 0, f"{name} {args}: rc {r.rc}\nstdout: {r.out}\nstderr: {r.err}"
    return r


@pytest.fixture(scope="module")
def bs(zookeeper, tmp_path_factory):
    connect = unique_chroot(zookeeper.connect_string)
    try:
        with running_cluster(tmp_path_factory.mktemp("kafkatools"), connect, 3, SMALL_INTERNAL) as cluster:
            yield ",".join(f"127.0.0.1:{b.port}" for b in cluster.load().brokers.values())
    finally:
        delete_chroot(connect)


@pytest.fixture(scope="module")
def secure(zookeeper, tmp_path_factory):
    """(bootstrap, client properties file, the admin's password) of a SASL_SSL cluster."""
    connect = unique_chroot(zookeeper.connect_string)
    root = tmp_path_factory.mktemp("kafkatools-secure")
    cluster = LocalCluster(root / "cluster")
    try:
        cluster.up(1, zookeeper=connect, secure=True, timeout=90, overrides={
            **TEST_BROKER_CONFIG, **SMALL_INTERNAL, "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"})
        state = cluster.load()
        from praha.cluster.secure import SecureSetup

        setup = SecureSetup.load(Path(state.security_dir))
        props = root / "client.properties"
        props.write_text(
            "# as for Kafka's tools\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
            f'    username="admin" password="{setup.admin_password}";\n'
            f"ssl.truststore.location={setup.ca}\nssl.truststore.type=PEM\n")
        yield f"127.0.0.1:{next(iter(state.brokers.values())).port}", props, setup.admin_password
    finally:
        cluster.down(timeout=15)
        delete_chroot(connect)


#: every topic has an id (KIP-516), printed as Kafka does: 22 characters of URL-safe base64
TOPIC_LINE = re.compile(r"^Topic: (\S+)\tTopicId: ([A-Za-z0-9_-]{22})\tPartitionCount: (\d+)\tReplicationFactor: (\d+)"
                        r"\tConfigs: (.*)$")
PARTITION_LINE = re.compile(r"^\tTopic: (\S+)\tPartition: (\d+)\tLeader: (\d+|none)\tReplicas: ([\d,]+)"
                            r"\tIsr: ([\d,]*)\tElr: N/A\tLastKnownElr: N/A$")


def test_kafka_topics(bs):
    created = ok("kafka-topics.sh", "--bootstrap-server", bs, "--create", "--topic", "kt", "--partitions", 3,
                 "--replication-factor", 3, "--config", "retention.ms=60000")
    assert created.out == "Created topic kt.\n"
    again = tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", "kt", "--partitions", 1)
    assert again.rc == 1
    assert re.match(r"^Error while executing topic command : .*already exists", again.out, re.I)
    assert ok("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", "kt", "--partitions", 1,
              "--if-not-exists").out == ""
    assert "kt" in ok("kafka-topics", "--bootstrap-server", bs, "--list").out.splitlines()

    ok("kafka-topics", "--bootstrap-server", bs, "--alter", "--topic", "kt", "--partitions", 4)
    lines = ok("kafka-topics.sh", "--bootstrap-server", bs, "--describe", "--topic", "kt").out.splitlines()
    head = TOPIC_LINE.match(lines[0])
    assert head, lines
    assert head.group(1, 3, 4) == ("kt", "4", "3"), lines
    assert "retention.ms=60000" in head.group(5).split(","), lines
    assert head.group(2) != "A" * 22
    by_id = ok("kafka-topics", "--bootstrap-server", bs, "--describe", "--topic-id", head.group(2)).out.splitlines()
    assert by_id[0] == lines[0], by_id
    parts = [PARTITION_LINE.match(line) for line in lines[1:]]
    assert all(parts), lines
    assert [int(m.group(2)) for m in parts if m] == [0, 1, 2, 3], lines
    assert all(len(m.group(4).split(",")) == 3 for m in parts if m)

    unknown = tool("kafka-topics", "--bootstrap-server", bs, "--describe", "--topic", "no-such-topic")
    assert unknown.rc == 1
    assert "does not exist as expected" in unknown.out
    assert ok("kafka-topics", "--bootstrap-server", bs, "--describe", "--topic", "no-such-topic",
              "--if-exists").out == ""
    bad = tool("kafka-topics", "--bootstrap-server", bs, "--list", "--partitions", 3)
    assert bad.rc == 1
    assert "can't be used with option" in bad.err
    assert "usage: kafka-topics" in bad.err
    bad = tool("kafka-topics.sh", "--bootstrap-server", bs, "--create", "--topic", "x", "--partitons", 3)
    assert bad.rc == 1
    assert "unrecognized arguments: --partitons" in bad.err
    assert tool("kafka-topics", "--list").rc == 1  # no --bootstrap-server

    ok("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", "gone", "--partitions", 1)
    ok("kafka-topics", "--bootstrap-server", bs, "--delete", "--topic", "gone")
    wait_for(lambda: "gone" not in ok("kafka-topics", "--bootstrap-server", bs, "--list").out.split(), 30,
             what="topic deleted")


def test_console_tools_and_consumer_groups(bs):
    ok("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", "kc", "--partitions", 2,
       "--replication-factor", 2)
    lines = [f"k{i}:v{i}" for i in range(6)]
    produced = ok("kafka-console-producer.sh", "--bootstrap-server", bs, "--topic", "kc", "--property",
                  "parse.key=true", "--property", "key.separator=:", "--producer-property", "acks=all",
                  stdin="\n".join(lines) + "\n")
    assert produced.out == ""
    got = ok("kafka-console-consumer.sh", "--bootstrap-server", bs, "--topic", "kc", "--from-beginning",
             "--max-messages", 6, "--group", "kg", "--property", "print.key=true", "--isolation-level",
             "read_committed")
    assert sorted(got.out.splitlines()) == sorted(line.replace(":", "\t") for line in lines)
    assert "Processed a total of 6 messages" in got.err

    one = ok("kafka-console-consumer", "--bootstrap-server", bs, "--topic", "kc", "--partition", 0, "--offset", 0,
             "--timeout-ms", 3000, "--property", "print.offset=true")
    offsets = [line.split("\t")[0] for line in one.out.splitlines()]
    assert offsets == [f"Offset:{i}" for i in range(len(offsets))]
    assert offsets
    assert re.search(r"Processed a total of \d+ messages", one.err)
    bad = tool("kafka-console-consumer", "--bootstrap-server", bs, "--topic", "kc", "--offset", 3)
    assert bad.rc == 1
    assert "The partition is required when offset is specified." in bad.err
    bad = tool("kafka-console-producer", "--bootstrap-server", bs, "--topic", "kc", "--property", "parse.key=true",
               stdin="no separator here\n")
    assert bad.rc == 1
    assert "No key separator found on line number 1" in bad.err

    assert "kg" in ok("kafka-consumer-groups.sh", "--bootstrap-server", bs, "--list").out.split()
    typed = [line.split() for line in ok("kafka-consumer-groups", "--bootstrap-server", bs, "--list", "--type",
                                         "--state").out.splitlines()]
    assert typed[0] == ["GROUP", "TYPE", "STATE"]
    assert ["kg", "Classic", "Empty"] in typed
    assert ok("kafka-consumer-groups", "--bootstrap-server", bs, "--list", "--type", "consumer").out == \
        "GROUP                     TYPE\n"  # KIP-848 groups: none, praha's coordinator runs classic ones
    bad_type = tool("kafka-consumer-groups", "--bootstrap-server", bs, "--list", "--type", "share")
    assert bad_type.rc == 1
    assert "Invalid types list 'share'. Valid types are: classic, consumer" in bad_type.err
    table = ok("kafka-consumer-groups", "--bootstrap-server", bs, "--describe", "--group", "kg").out.split("\n")
    rows = [line.split() for line in table if line.strip()]
    assert rows[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                       "HOST", "CLIENT-ID"]
    assert {(r[0], r[1], r[2]) for r in rows[1:]} == {("kg", "kc", "0"), ("kg", "kc", "1")}
    assert sum(int(r[3]) for r in rows[1:]) == 6
    assert all(r[5] == "0" for r in rows[1:])
    reset = ok("kafka-consumer-groups", "--bootstrap-server", bs, "--reset-offsets", "--group", "kg", "--topic", "kc",
               "--to-earliest", "--execute")
    assert [line.split() for line in reset.out.splitlines() if line.strip()][0] == [
        "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    missing = tool("kafka-consumer-groups", "--bootstrap-server", bs, "--describe", "--group", "no-such-group")
    assert missing.rc == 1
    assert "Consumer group 'no-such-group' does not exist." in missing.err
    assert tool("kafka-consumer-groups", "--bootstrap-server", bs, "--describe").rc == 1


def test_console_producer_reader_config_and_line_reader(bs, tmp_path):
    """--reader-config's reader settings (--property over them), Kafka's default --line-reader
    accepted, another class refused."""
    reader = tmp_path / "reader.properties"
    reader.write_text("parse.key=true\nkey.separator=|\n")
    ok("kafka-console-producer", "--bootstrap-server", bs, "--topic", "krc", "--reader-config", reader,
       "--line-reader", "org.apache.kafka.tools.LineMessageReader", stdin="a|1\nb|2\n")
    got = ok("kafka-console-consumer", "--bootstrap-server", bs, "--topic", "krc", "--from-beginning",
             "--max-messages", 2, "--property", "print.key=true", "--property", "key.separator=:")
    assert sorted(got.out.splitlines()) == ["a:1", "b:2"]
    refused = tool("kafka-console-producer", "--bootstrap-server", bs, "--topic", "krc", "--line-reader",
                   "com.acme.Reader", stdin="x\n")
    assert refused.rc == 1
    assert "a Java class cannot be loaded here" in refused.err


def test_consumer_group_offsets_exported_and_reset_from_the_file(bs, tmp_path):
    """--export writes the planned offsets as CSV; --from-file resets to them (clamped into
    the log, with Kafka's warning), per group in the group,topic,partition,offset form."""
    ok("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", "kx", "--partitions", 2)
    producer = KafkaProducer(bootstrap_servers=bs.split(","), acks="all")
    for i in range(6):
        producer.send("kx", f"v{i}".encode(), partition=i % 2)  # three records in each partition
    producer.flush(30)
    producer.close()
    groups = ("kafka-consumer-groups", "--bootstrap-server", bs)
    ok(*groups, "--reset-offsets", "--group", "kx1", "--topic", "kx", "--to-offset", 1, "--execute")
    exported = ok(*groups, "--reset-offsets", "--group", "kx1", "--topic", "kx", "--shift-by", 1, "--dry-run",
                  "--export").out
    assert exported == "kx,0,2\nkx,1,2\n\n"
    plan = tmp_path / "plan.csv"
    plan.write_text(exported)
    ok(*groups, "--reset-offsets", "--group", "kx1", "--topic", "kx", "--to-earliest", "--execute")
    ok(*groups, "--reset-offsets", "--group", "kx1", "--from-file", plan, "--execute")
    rows = [line.split() for line in ok(*groups, "--describe", "--group", "kx1").out.splitlines() if line.strip()]
    assert {(r[2], r[3]) for r in rows[1:]} == {("0", "2"), ("1", "2")}

    both = tmp_path / "both.csv"
    both.write_text("kx1,kx,0,0\nkx2,kx,1,99\n")
    done = ok(*groups, "--reset-offsets", "--group", "kx1", "--group", "kx2", "--from-file", both, "--execute",
              "--export")
    assert done.out == "kx1,kx,0,0\nkx2,kx,1,3\n\n"  # 99 is past the end of kx-1 (3 records)
    assert "New offset (99) is higher than latest offset for topic partition kx-1. Value will be set to 3" in done.err
    bad = tmp_path / "bad.csv"
    bad.write_text("kx,zero,1\n")
    refused = tool(*groups, "--reset-offsets", "--group", "kx1", "--from-file", bad, "--execute")
    assert refused.rc == 1
    assert "partition and offset must be whole numbers" in refused.err
    rows = [line.split() for line in ok(*groups, "--describe", "--group", "kx1").out.splitlines() if line.strip()]
    assert {(r[2], r[3]) for r in rows[1:]} == {("0", "0"), ("1", "2")}  # the bad file changed nothing
    assert tool(*groups, "--list", "--export").rc == 1


def test_kafka_configs(bs):
    ok("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", "kcfg", "--partitions", 1)
    done = ok("kafka-configs.sh", "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", "kcfg",
              "--alter", "--add-config", "retention.ms=120000,cleanup.policy=[compact,delete]")
    assert done.out == "Completed updating config for topic kcfg.\n"
    shown = ok("kafka-configs", "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", "kcfg",
               "--describe").out.splitlines()
    assert shown[0] == "Dynamic configs for topic kcfg are:"
    assert re.match(r"^  cleanup.policy=compact,delete sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:"
                    r"cleanup.policy=compact,delete, .*\}$", shown[1]), shown
    assert shown[2].startswith("  retention.ms=120000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:")
    ok("kafka-configs", "--bootstrap-server", bs, "--topic", "kcfg", "--alter", "--delete-config", "retention.ms")
    assert "retention.ms" not in ok("kafka-configs", "--bootstrap-server", bs, "--topic", "kcfg",
                                    "--describe").out
    every = ok("kafka-configs", "--bootstrap-server", bs, "--topic", "kcfg", "--describe", "--all").out.splitlines()
    assert every[0] == "All configs for topic kcfg are:"
    assert len(every) > 10

    assert ok("kafka-configs", "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-default", "--alter",
              "--add-config", "log.retention.ms=7200000").out == \
        "Completed updating default config for brokers in the cluster.\n"
    brokers = ok("kafka-configs", "--bootstrap-server", bs, "--entity-type", "brokers", "--describe").out
    assert "Default configs for brokers in the cluster are:\n  log.retention.ms=7200000 sensitive=false " \
           "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000" in brokers
    assert len(re.findall(r"^Dynamic configs for broker \d+ are:$", brokers, re.M)) == 3

    missing = tool("kafka-configs", "--bootstrap-server", bs, "--topic", "kcfg", "--alter", "--delete-config", "nosuch")
    assert missing.rc == 1
    assert "Invalid config(s): nosuch" in missing.err
    invalid = tool("kafka-configs", "--bootstrap-server", bs, "--topic", "kcfg", "--alter", "--add-config",
                   "retention.ms=soon")
    assert invalid.rc == 1
    assert "retention.ms" in invalid.err
    assert tool("kafka-configs", "--bootstrap-server", bs, "--describe").rc == 1  # no entity


def test_kafka_configs_broker_loggers(bs):
    """A broker's logger levels by Kafka's names (IncrementalAlterConfigs to that broker),
    back to the parent's with --delete-config; Kafka's refusals."""
    cfg = ("kafka-configs", "--bootstrap-server", bs)
    shown = ok(*cfg, "--entity-type", "broker-loggers", "--entity-name", 2, "--describe").out.splitlines()
    assert shown[0] == "Dynamic configs for broker-logger 2 are:"
    root_line = next(line for line in shown if line.startswith("  root="))
    assert re.match(r"^  root=(INFO|WARN|ERROR|DEBUG) sensitive=false synonyms=\{", root_line), shown
    logger = next(line.split("=")[0].strip() for line in shown[1:] if line.strip().startswith("praha."))
    assert ok(*cfg, "--broker-logger", 2, "--alter", "--add-config", f"{logger}=TRACE").out == \
        "Completed updating config for broker-logger 2.\n"
    assert f"  {logger}=TRACE " in ok(*cfg, "--broker-logger", 2, "--describe").out
    ok(*cfg, "--broker-logger", 2, "--alter", "--delete-config", logger)
    root = root_line.split()[0].split("=")[1]
    assert f"  {logger}={root} " in ok(*cfg, "--broker-logger", 2, "--describe").out  # the root's level again
    bad = tool(*cfg, "--broker-logger", 2, "--alter", "--add-config", f"{logger}=LOUD")
    assert bad.rc == 1
    assert f"Cannot set the log level of {logger} to LOUD as it is not a supported log level" in bad.err
    root_gone = tool(*cfg, "--broker-logger", 2, "--alter", "--delete-config", "root")
    assert root_gone.rc == 1
    assert "Removing the log level of the root logger is not allowed" in root_gone.err
    unknown = tool(*cfg, "--broker-logger", 2, "--alter", "--add-config", "nosuch.logger=INFO")
    assert unknown.rc == 1
    assert "Logger nosuch.logger does not exist!" in unknown.err


def test_kafka_configs_quotas_of_users_clients_and_ips(bs):
    """Client quotas through AlterClientQuotas/DescribeClientQuotas, Kafka's wording and
    Java's number format; bad keys and values refused with Kafka's messages."""
    cfg = ("kafka-configs", "--bootstrap-server", bs)
    assert ok(*cfg, "--entity-type", "users", "--entity-name", "qa", "--entity-type", "clients", "--entity-name",
              "qc", "--alter", "--add-config", "producer_byte_rate=10485760,request_percentage=50").out == \
        "Completed updating config for user qa.\n"
    assert ok(*cfg, "--client-defaults", "--alter", "--add-config", "consumer_byte_rate=2048").out == \
        "Completed updating default config for clients in the cluster.\n"
    assert ok(*cfg, "--entity-type", "users", "--entity-type", "clients", "--describe").out == \
        "Quota configs for user-principal 'qa', client-id 'qc' are producer_byte_rate=1.048576E7, " \
        "request_percentage=50.0\n"
    assert ok(*cfg, "--entity-type", "clients", "--entity-default", "--describe").out == \
        "Quota configs for the default client-id are consumer_byte_rate=2048.0\n"
    ok(*cfg, "--user", "qa", "--client", "qc", "--alter", "--delete-config", "request_percentage")
    assert ok(*cfg, "--user", "qa", "--client", "qc", "--describe").out == \
        "Quota configs for user-principal 'qa', client-id 'qc' are producer_byte_rate=1.048576E7\n"
    unknown = tool(*cfg, "--user", "qa", "--alter", "--add-config", "retention.ms=5")
    assert unknown.rc == 1
    assert "Only quota configs can be added for 'users' using --bootstrap-server. " \
        "Unexpected config names: Set(retention.ms)" in unknown.err
    bad = tool(*cfg, "--client", "qc", "--alter", "--add-config", "producer_byte_rate=fast")
    assert bad.rc == 1
    assert "Cannot parse quota configuration value for producer_byte_rate: fast" in bad.err
    ip = tool(*cfg, "--ip", "127.0.0.9", "--alter", "--add-config", "producer_byte_rate=10")
    assert ip.rc == 1
    assert "Only connection quota configs can be added for 'ip'" in ip.err


def test_records_log_dirs_api_versions_and_elections(bs, tmp_path):
    ok("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", "kr", "--partitions", 2,
       "--replication-factor", 2)
    ok("kafka-console-producer", "--bootstrap-server", bs, "--topic", "kr", stdin="a\nb\nc\nd\n")
    plan = tmp_path / "offsets.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "kr", "partition": 0, "offset": -1}], "version": 1}))
    deleted = ok("kafka-delete-records.sh", "--bootstrap-server", bs, "--offset-json-file", plan).out.splitlines()
    assert deleted[:2] == ["Executing records delete operation", "Records delete operation completed:"]
    assert re.match(r"^partition: kr-0\tlow_watermark: \d+$", deleted[2])

    dirs = ok("kafka-log-dirs", "--bootstrap-server", bs, "--describe", "--topic-list", "kr").out.splitlines()
    assert dirs[0] == "Querying brokers for log directories information"
    assert re.match(r"^Received log directory information from brokers \d+,\d+,\d+$", dirs[1])
    doc = json.loads(dirs[2])
    assert doc["version"] == 1
    assert len(doc["brokers"]) == 3
    assert sorted(p["partition"] for b in doc["brokers"] for d in b["logDirs"] for p in d["partitions"]) == \
        ["kr-0", "kr-0", "kr-1", "kr-1"]

    versions = ok("kafka-broker-api-versions.sh", "--bootstrap-server", bs).out
    assert len(re.findall(r"^127\.0\.0\.1:\d+ \(id: \d+ rack: null\) -> \($", versions, re.M)) == 3
    assert re.search(r"^\tProduce\(0\): \d+ to \d+ \[usable: \d+\],$", versions, re.M)
    assert re.search(r"^\tMetadata\(3\): \d+ to \d+ \[usable: \d+\],$", versions, re.M)

    elected = ok("kafka-leader-election", "--bootstrap-server", bs, "--election-type", "preferred", "--topic", "kr",
                 "--partition", 0).out
    assert re.match(r"^(Valid replica already elected for partitions kr-0|Successfully completed leader election "
                    r"\(PREFERRED\) for partitions kr-0)$", elected.strip()), elected
    bad = tool("kafka-leader-election", "--bootstrap-server", bs, "--election-type", "preferred", "--topic", "kr")
    assert bad.rc == 1
    assert "Missing required option(s): partition" in bad.err


def test_kafka_reassign_partitions(bs, tmp_path):
    ok("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", "kra", "--replica-assignment", "1:2,2:3")
    move = tmp_path / "move.json"
    move.write_text(json.dumps({"version": 1, "topics": [{"topic": "kra"}]}))
    generated = ok("kafka-reassign-partitions.sh", "--bootstrap-server", bs, "--generate",
                   "--topics-to-move-json-file", move, "--broker-list", "1,2,3").out.split("\n")
    assert generated[0] == "Current partition replica assignment"
    assert json.loads(generated[1])["partitions"][0] == {"topic": "kra", "partition": 0, "replicas": [1, 2],
                                                         "log_dirs": ["any", "any"]}
    assert generated[3] == "Proposed partition reassignment configuration"
    assert json.loads(generated[4])

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "kra", "partition": 0, "replicas": [3, 1]}]}))
    started = ok("kafka-reassign-partitions", "--bootstrap-server", bs, "--execute", "--reassignment-json-file", plan,
                 "--throttle", 50_000_000).out
    assert started.startswith("Current partition replica assignment\n\n{")
    assert "The inter-broker throttle limit was set to 50000000 B/s" in started
    assert started.rstrip().endswith("Successfully started partition reassignment for kra-0")

    def verified() -> str | None:
        out = ok("kafka-reassign-partitions", "--bootstrap-server", bs, "--verify", "--reassignment-json-file",
                 plan).out
        return out if "Reassignment of partition kra-0 is complete." in out else None

    out = wait_for(verified, 60, interval=0.5, what="reassignment complete")
    assert out.startswith("Status of partition reassignment:\n")
    assert "Clearing broker-level throttles on brokers 1,2,3" in out
    assert "Clearing topic-level throttles on topic kra" in out
    assert "throttled" not in ok("kafka-configs", "--bootstrap-server", bs, "--topic", "kra", "--describe").out
    described = ok("kafka-topics", "--bootstrap-server", bs, "--describe", "--topic", "kra").out
    assert "\tPartition: 0\tLeader: 3\tReplicas: 3,1\t" in described or "\tReplicas: 3,1\t" in described
    assert ok("kafka-reassign-partitions", "--bootstrap-server", bs, "--list").out == \
        "No partition reassignments found.\n"
    assert tool("kafka-reassign-partitions", "--bootstrap-server", bs, "--execute").rc == 1  # no JSON file


def test_kafka_transactions(bs):
    ok("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", "ktx", "--partitions", 1,
       "--replication-factor", 3)
    producer = KafkaProducer(bootstrap_servers=bs.split(","), transactional_id="kt-tx")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("ktx", b"in a transaction")
        producer.commit_transaction()
    finally:
        producer.close()

    def completed() -> list[str] | None:  # commit_transaction returns at PrepareCommit; the markers follow
        rows = ok("kafka-transactions.sh", "--bootstrap-server", bs, "list").out.splitlines()
        done = any(row.split()[0] == "kt-tx" and row.split()[3] == "CompleteCommit" for row in rows[1:])
        return rows if done else None

    listed = wait_for(completed, timeout=30, what="kt-tx to reach CompleteCommit in kafka-transactions list")
    assert listed[0].split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert listed[0].endswith("\t")  # Kafka's table: every cell padded, then a tab
    described = ok("kafka-transactions", "--bootstrap-server", bs, "describe", "--transactional-id", "kt-tx").out
    header, row = described.splitlines()[:2]
    assert header.split()[:5] == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                                  "TransactionState"]
    assert row.split()[1] == "kt-tx"
    producers = ok("kafka-transactions", "--bootstrap-server", bs, "describe-producers", "--topic", "ktx",
                   "--partition", 0).out.splitlines()
    assert producers[0].split() == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                                    "LastTimestamp", "CurrentTransactionStartOffset"]
    assert len(producers) == 2
    assert tool("kafka-transactions", "--bootstrap-server", bs).rc == 1  # no command
    follower = ok("kafka-transactions", "--bootstrap-server", bs, "describe-producers", "--topic", "ktx",
                  "--partition", 0, "--broker-id", 1).out.splitlines()  # RF 3: broker 1 holds a replica
    assert follower[0].split()[0] == "ProducerId"
    hanging = ok("kafka-transactions", "--bootstrap-server", bs, "find-hanging", "--topic", "ktx").out.splitlines()
    assert hanging[0].split() == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                                  "StartOffset", "LastTimestamp", "Duration(min)"]
    assert len(hanging) == 1
    assert "requires --broker-id or --topic" in tool("kafka-transactions", "--bootstrap-server", bs,
                                                     "find-hanging").err

    # an open transaction aborted by its start offset (the tool finds its producer's ids)
    open_tx = KafkaProducer(bootstrap_servers=bs.split(","), transactional_id="kt-open",
                            transaction_timeout_ms=600_000)
    try:
        open_tx.init_transactions()
        open_tx.begin_transaction()
        start = open_tx.send("ktx", b"left open").get(30).offset
        wrong = tool("kafka-transactions", "--bootstrap-server", bs, "abort", "--topic", "ktx", "--partition", 0,
                     "--start-offset", start + 100)
        assert wrong.rc == 1
        assert f"Could not find any open transactions starting at offset {start + 100}" in wrong.err
        ok("kafka-transactions", "--bootstrap-server", bs, "abort", "--topic", "ktx", "--partition", 0,
           "--start-offset", start)
        rows = [r.split() for r in ok("kafka-transactions", "--bootstrap-server", bs, "describe-producers", "--topic",
                                      "ktx", "--partition", 0).out.splitlines()[1:]]
        assert all(r[5] == "-1" for r in rows), rows  # no transaction open in ktx-0 any more
    finally:
        open_tx.close(timeout=5)
    both = tool("kafka-transactions", "--bootstrap-server", bs, "abort", "--topic", "ktx", "--partition", 0,
                "--start-offset", 0, "--producer-id", 5)
    assert both.rc == 1
    assert "either --start-offset or all of" in both.err
    missing = tool("kafka-transactions", "--bootstrap-server", bs, "describe", "--transactional-id", "nope")
    assert missing.rc == 1
    assert "nope" in missing.err


def test_the_tools_over_sasl_ssl_with_command_config(secure, tmp_path):
    bs, props, password = secure
    cfg = ("--command-config", props)
    assert ok("kafka-topics.sh", "--bootstrap-server", bs, *cfg, "--create", "--topic", "sec", "--partitions", 2,
              "--replication-factor", 1).out == "Created topic sec.\n"
    lines = ok("kafka-topics", "--bootstrap-server", bs, *cfg, "--describe", "--topic", "sec").out.splitlines()
    assert TOPIC_LINE.match(lines[0])
    assert all(PARTITION_LINE.match(line) for line in lines[1:])
    assert len(lines) == 3

    added = ok("kafka-acls.sh", "--bootstrap-server", bs, *cfg, "--add", "--allow-principal", "User:alice",
               "--operation", "Read", "--operation", "Describe", "--topic", "sec").out
    assert added == ("Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=sec, patternType=LITERAL)`: \n"
                     " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
                     "\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW) \n\n")
    listed = ok("kafka-acls", "--bootstrap-server", bs, *cfg, "--list", "--topic", "sec").out
    assert listed.startswith("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=sec, "
                             "patternType=LITERAL)`: \n")
    assert listed.count("principal=User:alice") == 2
    ok("kafka-acls", "--bootstrap-server", bs, *cfg, "--remove", "--allow-principal", "User:alice", "--operation",
       "Describe", "--topic", "sec", "--force")
    assert ok("kafka-acls", "--bootstrap-server", bs, *cfg, "--list", "--topic", "sec").out.count("User:alice") == 1

    ok("kafka-console-producer", "--bootstrap-server", bs, "--producer.config", props, "--topic", "sec",
       stdin="s1\ns2\ns3\n")
    got = ok("kafka-console-consumer", "--bootstrap-server", bs, "--consumer.config", props, "--topic", "sec",
             "--from-beginning", "--max-messages", 3, "--group", "sg")
    assert sorted(got.out.split()) == ["s1", "s2", "s3"]
    assert "sg" in ok("kafka-consumer-groups", "--bootstrap-server", bs, *cfg, "--list").out.split()
    assert re.match(r"^127\.0\.0\.1:\d+ \(id: 1 rack: null\) -> \(\n",
                    ok("kafka-broker-api-versions", "--bootstrap-server", bs, *cfg).out)

    # a SCRAM user made through AlterUserScramCredentials logs in with its password
    made = ok("kafka-configs.sh", "--bootstrap-server", bs, *cfg, "--alter", "--entity-type", "users",
              "--entity-name", "carol", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=carol-secret]")
    assert made.out == "Completed updating config for user carol.\n"
    assert ok("kafka-configs", "--bootstrap-server", bs, *cfg, "--describe", "--user", "carol").out == \
        "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=8192\n"
    carol = tmp_path / "carol.properties"
    carol.write_text(props.read_text().replace('username="admin"', 'username="carol"').replace(password,
                                                                                             "carol-secret"))
    ok("kafka-acls", "--bootstrap-server", bs, *cfg, "--add", "--allow-principal", "User:carol", "--operation",
       "Describe", "--topic", "sec")
    # ACLs reach each broker's authorizer through a ZooKeeper change notification, as in Kafka
    wait_for(lambda: ok("kafka-topics", "--bootstrap-server", bs, "--command-config", carol, "--list").out == "sec\n",
             30, interval=0.5, what="carol to see the topic her new ACL lets her describe")
    ok("kafka-configs", "--bootstrap-server", bs, *cfg, "--alter", "--user", "carol", "--delete-config",
       "SCRAM-SHA-512")
    gone = ok("kafka-configs", "--bootstrap-server", bs, *cfg, "--describe", "--user", "carol").out
    assert gone.startswith("Error retrieving SCRAM credential configs for user-principal 'carol': "
                           "ResourceNotFoundException: ")
    # so do SCRAM credentials: the deleted one stops working once the brokers hear of it
    wait_for(lambda: "Authentication failed" in tool("kafka-topics", "--bootstrap-server", bs, "--command-config",
                                                     carol, "--list").out,
             30, interval=0.5, what="carol's deleted credential to be refused")

    wrong = tmp_path / "wrong.properties"
    wrong.write_text(props.read_text().replace(password, "not-the-password"))
    refused = tool("kafka-topics", "--bootstrap-server", bs, "--command-config", wrong, "--list")
    assert refused.rc == 1
    assert "Authentication failed" in refused.out


def test_every_tool_runs_as_a_process(bs, secure, tmp_path):
    """Each tool once as a real process (half by the `.sh` name), all started at once:
    the console scripts' dispatch, Kafka's exits and output of a process."""
    ok("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", "kp", "--partitions", 1,
       "--replication-factor", 3)
    ok("kafka-console-producer", "--bootstrap-server", bs, "--topic", "kp", stdin="p0\np1\n")
    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": "kp", "partition": 0, "offset": 1}], "version": 1}))
    sbs, props, _ = secure
    runs = {  # name: (arguments, stdin, what stdout must match)
        "kafka-topics.sh": (["--bootstrap-server", bs, "--describe", "--topic", "kp"], None,
                            r"^Topic: kp\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 1\tReplicationFactor: 3\t"),
        "kafka-configs": (["--bootstrap-server", bs, "--topic", "kp", "--describe"], None,
                          r"^Dynamic configs for topic kp are:\n$"),
        "kafka-acls.sh": (["--bootstrap-server", sbs, "--command-config", props, "--list"], None, r"^"),
        "kafka-consumer-groups": (["--bootstrap-server", bs, "--list"], None, r"^"),
        "kafka-console-producer.sh": (["--bootstrap-server", bs, "--topic", "kp"], "p2\n", r"^$"),
        "kafka-console-consumer": (["--bootstrap-server", bs, "--topic", "kp", "--partition", 0, "--offset", 1,
                                    "--max-messages", 1], None, r"^p1\n$"),
        "kafka-transactions.sh": (["--bootstrap-server", bs, "list"], None, r"^TransactionalId\s+Coordinator\s+"),
        "kafka-delete-records": (["--bootstrap-server", bs, "--offset-json-file", offsets], None,
                                 r"\npartition: kp-0\tlow_watermark: 1\n$"),
        "kafka-log-dirs.sh": (["--bootstrap-server", bs, "--describe", "--topic-list", "kp"], None,
                              r"^Querying brokers for log directories information\n"),
        "kafka-reassign-partitions": (["--bootstrap-server", bs, "--list"], None,
                                      r"^No partition reassignments found.\n$"),
        "kafka-leader-election.sh": (["--bootstrap-server", bs, "--election-type", "preferred", "--topic", "kp",
                                      "--partition", 0], None, r"partitions kp-0\n$"),
        "kafka-broker-api-versions": (["--bootstrap-server", bs], None, r"^127\.0\.0\.1:\d+ \(id: \d+ rack: null\)"),
        # a bad option: the message and the usage on stderr, exit 1, nothing on stdout
        "kafka-topics": (["--bootstrap-server", bs, "--lst"], None, r"^$"),
    }
    procs = {name: subprocess.Popen(command(name, *argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=ENV)
             for name, (argv, _, _) in runs.items()}
    results = {}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(runs[name][1], timeout=120)
            results[name] = Run(proc.returncode, out, err)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for name, r in results.items():
        expected_rc = 1 if name == "kafka-topics" else 0
        assert r.rc == expected_rc, f"{name}: rc {r.rc}\n{r.out}\n{r.err}"
        assert re.search(runs[name][2], r.out), f"{name}: rc {r.rc}\n{r.out}\n{r.err}"
    assert "unrecognized arguments: --lst" in results["kafka-topics"].err
    assert "usage: kafka-topics" in results["kafka-topics"].err
    assert "Processed a total of 1 messages" in results["kafka-console-consumer"].err
