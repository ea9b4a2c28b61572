"""Quix Streams, a stream-processing framework built on Kafka, runs a stateful application
against praha (issue 12): consumer groups, a compacted changelog topic it creates and checks
through the admin API (CreateTopics, DescribeConfigs), and its state restored from that
changelog, compacted by praha's cleaner, after the local state is deleted.

The application (tests/frameworks/quix_app.py) runs in `.venv-quix` (Quix 3.28 pins an older
confluent-kafka than praha's tests; `make test` builds that venv from pyproject's `quix` extra).
It is stopped with SIGTERM, its RocksDB state directory deleted, and started again: the totals
it writes must continue from the changelog and end exact, with every input counted once.
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from praha.testing.cluster import bootstrap as bootstrap_servers

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QUIX_PYTHON = ROOT / ".venv-quix" / "bin" / "python"
APP = ROOT / "tests" / "frameworks" / "quix_app.py"
KEYS = [f"account-{i}" for i in range(8)]
INPUT, OUTPUT, GROUP = "payments", "payment-totals", "quix-totals"


@pytest.fixture(scope="module")
def quix_python() -> Path:
    if not QUIX_PYTHON.exists():  # `make test` builds it first; a bare pytest run builds it here
        subprocess.run(["make", "-C", str(ROOT), ".venv-quix/.installed", f"PYTHON={sys.executable}"],
                       check=True, timeout=600)
    return QUIX_PYTHON


def produce(bootstrap: str, first_seq: int, n: int) -> dict[str, tuple[int, int]]:
    """n records spread over KEYS; returns {key: (sum of amounts, count)} of this batch."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    sums: dict[str, tuple[int, int]] = {}
    for seq in range(first_seq, first_seq + n):
        key, amount = KEYS[seq % len(KEYS)], seq % 13 + 1
        p.produce(INPUT, key=key, value=json.dumps({"amount": amount, "seq": seq}))
        total, count = sums.get(key, (0, 0))
        sums[key] = (total + amount, count + 1)
    assert p.flush(30) == 0
    return sums


def read_output(bootstrap: str, expect: int, timeout: float) -> list[tuple[str, dict]]:
    """Every record of the output topic, once at least `expect` are there (or the time is up)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        deadline = time.monotonic() + timeout
        parts: dict = {}
        while not parts and time.monotonic() < deadline:  # the application creates the topic when it starts
            parts = c.list_topics(OUTPUT, timeout=10).topics[OUTPUT].partitions
            time.sleep(0 if parts else 0.5)
        c.assign([TopicPartition(OUTPUT, p, 0) for p in parts])
        got: list[tuple[str, dict]] = []
        while len(got) < expect and time.monotonic() < deadline:
            for m in c.consume(500, 1.0):
                if m.error() is None:
                    got.append((m.key().decode(), json.loads(m.value())))
        return got
    finally:
        c.close()


def start_app(python: Path, bootstrap: str, state_dir: Path, log: Path) -> subprocess.Popen:
    """The application, checkpointing after every record so that its changelog gets many
    updates of the same few keys (what compaction removes)."""
    return subprocess.Popen([str(python), str(APP), "--broker", bootstrap, "--group", GROUP, "--input", INPUT,
                             "--output", OUTPUT, "--state-dir", str(state_dir), "--commit-every", "1"],
                            stdout=log.open("ab"), stderr=subprocess.STDOUT)


def stop_app(proc: subprocess.Popen) -> int:
    """SIGTERM (Quix commits its checkpoint and exits); SIGKILL by PID if it hangs."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        raise


def run_until(python: Path, bootstrap: str, state_dir: Path, log: Path, outputs: int) -> list[tuple[str, dict]]:
    """Run the application until the output topic holds `outputs` records, then stop it."""
    app = start_app(python, bootstrap, state_dir, log)
    try:
        out = read_output(bootstrap, outputs, 120)
        assert len(out) >= outputs, log.read_text()[-3000:]
        return out
    finally:
        assert stop_app(app) == 0, log.read_text()[-3000:]


def changelog_counts(bootstrap: str, topic: str) -> tuple[int, int]:
    """(records left in the changelog, sum of its high watermarks): fewer records than
    offsets means the cleaner compacted it."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        parts = list(c.list_topics(topic, timeout=10).topics[topic].partitions)
        high = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        seen, last = 0, {p: -1 for p in parts}
        deadline = time.monotonic() + 30
        while any(last[p] < high[p] - 1 for p in parts) and time.monotonic() < deadline:
            for m in c.consume(500, 1.0):
                if m.error() is None:
                    seen += 1
                    last[m.partition()] = m.offset()
        return seen, sum(high.values())
    finally:
        c.close()


def test_stateful_quix_application_restores_from_its_compacted_changelog(make_cluster, quix_python, tmp_path):
    """Run 1 creates the topics; the changelog is then made to roll small segments and be
    cleaned eagerly (AlterConfigs); run 2 adds to the state; the cleaner compacts the
    changelog; the local state is deleted; run 3 must rebuild it from the compacted changelog."""
    cluster = make_cluster(3, overrides={"log.cleaner.backoff.ms": "200"})
    bootstrap = bootstrap_servers(cluster)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(INPUT, 3, 3)])[INPUT].result(30)
    state_dir, log = tmp_path / "quix-state", tmp_path / "quix-app.log"
    batches = [produce(bootstrap, 0, 160)]
    run_until(quix_python, bootstrap, state_dir, log, 160)

    changelogs = [t for t in admin.list_topics(timeout=10).topics if t.startswith("changelog__")]
    assert len(changelogs) == 1, changelogs
    changelog = changelogs[0]
    res = ConfigResource(ConfigResource.Type.TOPIC, changelog)
    assert admin.describe_configs([res])[res].result(15)["cleanup.policy"].value == "compact"
    eager = ConfigResource(ConfigResource.Type.TOPIC, changelog, incremental_configs=[
        ConfigEntry("segment.bytes", "1024", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("min.cleanable.dirty.ratio", "0.01", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([eager])[eager].result(15)

    batches.append(produce(bootstrap, 160, 160))
    run_until(quix_python, bootstrap, state_dir, log, 320)
    deadline = time.monotonic() + 60
    left, offsets = changelog_counts(bootstrap, changelog)
    while left > offsets // 2 and time.monotonic() < deadline:
        time.sleep(1)
        left, offsets = changelog_counts(bootstrap, changelog)
    assert left <= offsets // 2, f"the changelog was not compacted: {left} records of {offsets} offsets"

    shutil.rmtree(state_dir)  # the local state is gone: Quix must rebuild it from the changelog
    log_before = len(log.read_text())
    batches.append(produce(bootstrap, 320, 160))
    run_until(quix_python, bootstrap, state_dir, log, 480)
    time.sleep(2)  # a late duplicate would show up now
    out = read_output(bootstrap, 480, 30)
    assert "Recovery process complete" in log.read_text()[log_before:]

    assert sorted(v["seq"] for _, v in out) == list(range(480)), "every input counted exactly once"
    last = {}
    for key, value in out:  # one key is one input partition is one output partition: in order
        last[key] = value
    for key in KEYS:
        total = sum(b.get(key, (0, 0))[0] for b in batches)
        count = sum(b.get(key, (0, 0))[1] for b in batches)
        assert (last[key]["total"], last[key]["count"]) == (total, count), key
    committed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])[GROUP].result(15)
    assert sum(tp.offset for tp in committed.topic_partitions if tp.topic == INPUT) == 480
