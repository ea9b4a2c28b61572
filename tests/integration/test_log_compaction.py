"""Log compaction on a real 3-broker cluster: an RF 3 topic with `cleanup.policy=compact`
keeps only the last value per key (offsets keep their gaps), every replica cleans its own
log to the same bytes, a keyless record is refused with INVALID_RECORD, and a broker
SIGKILLed in the middle of a (throttled) cleaning pass restarts and serves the same
surviving records."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CTP

from praha.common import ReplicaAssignment, TopicAssignment
from praha.common import TopicPartition as TP
from praha.testing.cluster import bootstrap, scrape_metrics, wait_for

pytestmark = pytest.mark.integration

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "16384", "min.cleanable.dirty.ratio": "0.01"}


def create(store, topic: str, config: dict[str, str]) -> None:
    store.create_topic(topic, TopicAssignment({0: ReplicaAssignment((1, 2, 3))}), config)
    tp = TP(topic, 0)
    wait_for(lambda: (s := store.get_partition_states([tp])[0].get(tp)) and s.leader_and_isr.leader == 1
             and len(s.leader_and_isr.isr) == 3, 30, what=f"{topic} led by 1 with a full ISR")


def produce(bs: str, topic: str, pairs: list[tuple[bytes | None, bytes]]) -> tuple[dict[int, tuple], list]:
    """Send the records; (offset → (key, value) of those written, errors of those refused)."""
    written: dict[int, tuple] = {}
    errors: list = []

    def done(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            written[msg.offset()] = (msg.key(), msg.value())

    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5, "log_level": 3,
                  "batch.num.messages": 50, "enable.idempotence": False, "message.send.max.retries": 0})
    for k, v in pairs:
        p.produce(topic, key=k, value=v, on_delivery=done)
        p.poll(0)
    assert p.flush(30) == 0
    return written, errors


def consume_all(bs: str, topic: str, end: int) -> list[tuple[int, bytes, bytes]]:
    """Every record from the beginning up to offset `end` - 1 (the last one written, which
    sits in the active segment), once the high watermark has reached `end`."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "compaction-check", "enable.auto.commit": False,
                  "log_level": 3})
    try:
        wait_for(lambda: c.get_watermark_offsets(CTP(topic, 0), timeout=5)[1] == end, 30,
                 what=f"{topic} high watermark at {end}")
        c.assign([CTP(topic, 0, 0)])
        out: list[tuple[int, bytes, bytes]] = []
        for _ in range(300):
            for m in c.consume(1000, timeout=0.2):
                if m.error() is None:
                    out.append((m.offset(), m.key(), m.value()))
            if out and out[-1][0] == end - 1:
                return out
        raise AssertionError(f"never reached offset {end - 1}")
    finally:
        c.close()


def log_dir(cluster, broker: int, topic: str) -> Path:
    return Path(cluster.load().brokers[broker].dir) / "data" / f"{topic}-0"


def cleaned_to_active(cluster, broker: int, topic: str) -> bool:
    """The broker's cleaner checkpoint for the topic reached its active segment's base."""
    d = log_dir(cluster, broker, topic)
    cp = d.parent / "cleaner-offset-checkpoint"
    if not cp.exists():
        return False
    lines = cp.read_text().split("\n")[2:]
    offsets = {line.split()[0]: int(line.split()[2]) for line in lines if line.strip()}
    logs = sorted(n for n in os.listdir(d) if n.endswith(".log"))
    return offsets.get(topic) == int(logs[-1][:20])


def sealed_bytes(cluster, broker: int, topic: str) -> tuple[int, bytes]:
    """(active segment base, the bytes of every non-active segment in order)."""
    d = log_dir(cluster, broker, topic)
    logs = sorted(n for n in os.listdir(d) if n.endswith(".log"))
    return int(logs[-1][:20]), b"".join((d / n).read_bytes() for n in logs[:-1])


def test_compacted_topic_on_three_brokers(make_cluster, zk_store, cli):
    cluster = make_cluster(3, overrides={"log.cleaner.backoff.ms": "100", "auto.leader.rebalance.enable": "false"},
                           per_broker={1: {"log.cleaner.io.max.bytes.per.second": "400000"}})
    bs = bootstrap(cluster)

    # 1. compaction: the last value per key, offsets with gaps, identical replicas
    create(zk_store, "compacted", COMPACT)
    topic = ["configs", "--entity-type", "topics", "--entity-name", "compacted", "--dir", cluster.root]
    rc, _, err = cli(*topic, "--alter", "--add-config", "cleanup.policy=shred")
    assert rc == 1, err
    assert "Invalid value shred for configuration cleanup.policy: String must be one of: compact, delete" \
        in err, err
    assert cli(*topic, "--alter", "--add-config", "max.compaction.lag.ms=600000")[0] == 0
    rc, _, err = cli(*topic, "--alter", "--add-config", "min.compaction.lag.ms=700000")  # checked merged
    assert rc == 1
    assert "conflict topic config setting min.compaction.lag.ms (700000) > max.compaction.lag.ms" in err
    assert cli(*topic, "--alter", "--delete-config", "max.compaction.lag.ms")[0] == 0
    assert zk_store.get_topic_configs(["compacted"])[0]["compacted"] == COMPACT
    pairs = [(b"key-%d" % (i % 40), b"value-%d-" % i + b"x" * 100) for i in range(2000)]
    written, errors = produce(bs, "compacted", pairs)
    assert not errors
    assert len(written) == 2000
    more, _ = produce(bs, "compacted", [(b"last", b"roll")] * 150)  # push the data out of the active segment
    written.update(more)
    wait_for(lambda: all(cleaned_to_active(cluster, b, "compacted") for b in (1, 2, 3)), 30,
             what="every replica cleaned up to its active segment")
    got = consume_all(bs, "compacted", max(written) + 1)
    active_base, leader_bytes = sealed_bytes(cluster, 1, "compacted")
    latest = {}
    for off in sorted(o for o in written if o < active_base):
        latest[written[off][0]] = (off, written[off][1])
    below = [(o, k, v) for o, k, v in got if o < active_base]
    assert {k: (o, v) for o, k, v in below} == latest
    assert len({k for _, k, _ in below}) == len(below)  # one record per key
    assert [o for o, _, _ in got if o >= active_base] == sorted(o for o in written if o >= active_base)
    assert len(below) < active_base  # offsets have gaps
    assert all(written.get(o, (k, v)) == (k, v) for o, k, v in got)
    for follower in (2, 3):
        assert sealed_bytes(cluster, follower, "compacted") == (active_base, leader_bytes)
    metrics = scrape_metrics(cluster.load().brokers[1].actual_metrics_port)
    assert metrics["praha_broker_log_cleaner_passes"] >= 1
    assert metrics["praha_broker_log_cleaner_bytes_read"] > 0

    # 2. a keyless record is refused
    _, errors = produce(bs, "compacted", [(None, b"no key")])
    assert [e.code() for e in errors] == [KafkaError.INVALID_RECORD]

    # 3. SIGKILL the (throttled) leader while it cleans; it comes back with the same records
    create(zk_store, "big", {**COMPACT, "segment.bytes": "65536"})
    big = [(b"k%d" % (i % 300), b"v%d-" % i + b"y" * 400) for i in range(5000)]
    written, errors = produce(bs, "big", big)
    assert not errors
    more, _ = produce(bs, "big", [(b"last", b"roll")] * 200)
    written.update(more)
    d = log_dir(cluster, 1, "big")
    wait_for(lambda: any(n.endswith(".cleaned") for n in os.listdir(d)), 30, interval=0.02,
             what="broker 1 writing a cleaned segment")
    cluster.kill_broker(1)
    cluster.start_broker(1, wait=True)
    tp = TP("big", 0)
    wait_for(lambda: len(zk_store.get_partition_states([tp])[0][tp].leader_and_isr.isr) == 3, 30,
             what="broker 1 back in the ISR")
    assert not any(n.endswith((".cleaned", ".swap")) for n in os.listdir(d))
    zk_store.create_preferred_election([tp])
    wait_for(lambda: zk_store.get_partition_states([tp])[0][tp].leader_and_isr.leader == 1, 30,
             what="broker 1 leading again")
    got = consume_all(bs, "big", max(written) + 1)
    latest = {}
    for off in sorted(written):
        latest[written[off][0]] = (off, written[off][1])
    seen = {}
    for o, k, v in got:
        assert written.get(o, (k, v)) == (k, v)  # every record served is the one written there
        seen[k] = (o, v)
    assert {k: seen[k] for k in latest} == latest  # no key's latest value lost
