"""A reassignment's throttle is enforced by the followers that copy the data.

`praha reassign execute --throttle B` writes Kafka's throttle configs (topic:
`follower.replication.throttled.replicas`, broker: `follower.replication.throttled.rate`)
and config change notices; the new replica's broker must pick them up and copy no faster
than B bytes/s (plus one fetch), pick up a raised rate while the move runs, and drop the
throttle when `verify` clears it."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from praha.admin.reassign import execute, set_throttles, verify
from praha.common import ReplicaAssignment, TopicAssignment
from praha.common import TopicPartition as TP
from praha.testing.cluster import bootstrap, scrape_metrics, wait_for
from praha.zk import znodes as zn

pytestmark = pytest.mark.integration

RATE = 250_000  # bytes/s
DATA = 4 << 20
FETCH_MAX = 1 << 20  # replica.fetch.max.bytes: one fetch may overdraw the budget


def copied_bytes(broker_dir: str, tp: TP) -> int:
    d = Path(broker_dir) / "data" / f"{tp.topic}-{tp.partition}"
    return sum(f.stat().st_size for f in d.glob("*.log")) if d.is_dir() else 0


def figure(cluster, broker: int, name: str) -> float:
    return scrape_metrics(cluster.load().brokers[broker].actual_metrics_port).get(f"praha_broker_{name}", -1.0)


def test_reassignment_copy_is_held_to_the_throttle_and_follows_rate_changes(make_cluster, zk_store):
    cluster = make_cluster(2)
    tp = TP("moving", 0)
    zk_store.create_topic(tp.topic, TopicAssignment({0: ReplicaAssignment((1,))}), {})
    wait_for(lambda: (s := zk_store.get_partition_states([tp])[0].get(tp)) and s.leader_and_isr.leader == 1,
             30, what="leader 1")
    bs = bootstrap(cluster)
    producer = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5, "log_level": 3})
    value = os.urandom(1024)
    for _ in range(DATA // 1024):
        while True:
            try:
                producer.produce(tp.topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(30) == 0

    plan = {tp: (1, 2)}
    started = time.monotonic()
    execute(zk_store, plan, throttle=RATE)
    broker2_dir = cluster.load().brokers[2].dir
    wait_for(lambda: copied_bytes(broker2_dir, tp) > 0, 30, what="broker 2 copying")
    time.sleep(2.5)
    copied = copied_bytes(broker2_dir, tp)
    elapsed = time.monotonic() - started
    # the budget holds one second's worth to start, then refills at RATE
    assert 0 < copied <= RATE * (elapsed + 1) + FETCH_MAX, (copied, elapsed)
    assert zk_store.exists(zn.REASSIGN_PARTITIONS_PATH) is not None
    assert 2 not in zk_store.get_partition_states([tp])[0][tp].leader_and_isr.isr
    assert figure(cluster, 2, "follower_throttle_rate") == RATE
    assert figure(cluster, 2, "follower_throttled_bytes") > 0
    # progress shows how far behind the new replica is (its own log end, from the follower)
    mid = verify(zk_store, plan, preserve_throttles=True).partitions[tp]
    assert mid.state == "in_progress"
    assert mid.not_in_isr == (2,)
    assert mid.leader_offset == DATA // 1024
    assert 0 < mid.replica_offsets[2] < mid.leader_offset

    # a raised rate (as `execute` of another plan writes it) reaches the follower mid-move
    set_throttles(zk_store, {tp: (1,)}, plan, 1 << 30)
    wait_for(lambda: zk_store.exists(zn.REASSIGN_PARTITIONS_PATH) is None, 60, what="reassignment complete")
    state = zk_store.get_partition_states([tp])[0][tp].leader_and_isr
    assert sorted(state.isr) == [1, 2]
    assert copied_bytes(broker2_dir, tp) >= DATA

    result = verify(zk_store, plan, with_offsets=False)
    assert result.all_complete
    assert 2 in result.cleared_brokers
    wait_for(lambda: figure(cluster, 2, "follower_throttle_rate") == 0, 30, what="throttle cleared on broker 2")
