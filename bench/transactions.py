"""Transactional producer throughput next to the idempotent producer's (issue 13).

One confluent-kafka producer writes 1 KiB records to a 6-partition topic (RF 3, acks=all,
min.insync.replicas 2) as fast as it can for `--seconds`: once idempotent, once
transactional with a commit every `--commit-ms` (100 ms: Confluent's published anchor is a 3%
cost for 1 KiB records and 100 ms transactions on Kafka; praha's target is ≤ 10%). The two
alternate `--runs` times, each on a fresh topic; the figure is records acknowledged (for
transactions: committed) per second. Prints the medians and the cost. The cluster lives in
a temporary directory and is stopped by PID.

Usage: .venv/bin/python bench/transactions.py [--seconds 10] [--runs 3] [--commit-ms 100] [--partitions 6]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

from confluent_kafka import Producer

from praha.cluster.local import LocalCluster
from praha.zk.store import ZkStore

try:  # run as a script from the repo root or from bench/
    from bench.produce import BROKER_CONFIG, RECORD, bootstrap, create_topic, start_cluster
except ImportError:  # pragma: no cover
    from produce import BROKER_CONFIG, RECORD, bootstrap, create_topic, start_cluster  # type: ignore[no-redef]

PRODUCER = {"acks": "all", "linger.ms": 5, "batch.size": 1 << 20, "queue.buffering.max.kbytes": 8192,
            "log_level": 3}


def _produce_for(p: Producer, topic: str, value: bytes, until: float) -> int:
    """Produce until `until` (monotonic) or the queue is full; records handed over."""
    n = 0
    while time.monotonic() < until:
        try:
            p.produce(topic, value=value)
            n += 1
        except BufferError:
            p.poll(0.005)
        if n % 1000 == 0:
            p.poll(0)
    return n


def idempotent(bs: str, topic: str, seconds: float, value: bytes) -> float:
    acked = [0]

    def on_delivery(err, _msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            acked[0] += 1

    p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "on_delivery": on_delivery, **PRODUCER})
    p.list_topics(topic, timeout=30)
    start = time.monotonic()
    _produce_for(p, topic, value, start + seconds)
    p.flush(120)
    return acked[0] / (time.monotonic() - start)


def transactional(bs: str, topic: str, seconds: float, value: bytes, commit_ms: int, run: int) -> float:
    p = Producer({"bootstrap.servers": bs, "transactional.id": f"bench-txn-{run}-{os.getpid()}", **PRODUCER})
    p.init_transactions(60)
    p.list_topics(topic, timeout=30)
    committed = 0
    start = time.monotonic()
    end = start + seconds
    while time.monotonic() < end:
        p.begin_transaction()
        n = _produce_for(p, topic, value, min(end, time.monotonic() + commit_ms / 1000))
        p.commit_transaction(60)
        committed += n
    return committed / (time.monotonic() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds per run (default 10)")
    ap.add_argument("--runs", type=int, default=3, help="runs per producer kind, alternating (default 3)")
    ap.add_argument("--commit-ms", type=int, default=100, help="transaction length (default 100 ms)")
    ap.add_argument("--partitions", type=int, default=6)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="praha-bench-")
    cluster = LocalCluster(root)
    value = os.urandom(RECORD)
    try:
        state = start_cluster(cluster, BROKER_CONFIG)
        store = ZkStore(state.zookeeper).start()
        bs = bootstrap(cluster)
        print(f"transactional vs idempotent producer: 1 KiB records, {args.partitions} partitions (RF 3, acks=all, "
              f"min.insync.replicas 2), {args.seconds:.0f} s per run, transactions of {args.commit_ms} ms")
        rates: dict[str, list[float]] = {"idempotent": [], "transactional": []}
        try:
            for run in range(args.runs):
                for kind in ("idempotent", "transactional"):
                    topic = f"{kind}-{run}"
                    create_topic(cluster, store, state.zookeeper, topic, args.partitions, 3,
                                 {"min.insync.replicas": "2"})
                    rate = (idempotent(bs, topic, args.seconds, value) if kind == "idempotent" else
                            transactional(bs, topic, args.seconds, value, args.commit_ms, run))
                    rates[kind].append(rate)
                    print(f"  run {run + 1} {kind:13s} {rate:9.0f} records/s ({rate * RECORD / (1 << 20):6.1f} MiB/s)")
        finally:
            store.stop()
        idem, txn = (statistics.median(rates[k]) for k in ("idempotent", "transactional"))
        cost = 1 - txn / idem
        print(f"median: idempotent {idem:.0f} records/s, transactional {txn:.0f} records/s, cost {cost:.1%} "
              f"({'meets' if cost <= 0.10 else 'misses'} ≤ 10%)")
    finally:
        cluster.down(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
