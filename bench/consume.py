"""Consume throughput of a local 3-broker praha cluster (confluent-kafka, assign-based).

Fills a topic (RF 3, 1 KiB records) with `--mb` MiB, then reads it back from the
beginning with one confluent-kafka consumer (`consume()` in batches) and prints MB/s,
plus the brokers' and the consumer's CPU seconds per GiB and the share of the CPUs other
processes used meanwhile. A second pass reads it again (the data is
then surely in the page cache). Figures, not asserts; the cluster is stopped by PID.

Usage: .venv/bin/python bench/consume.py [--mb 512] [--partitions 6]
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import psutil
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as CTP

from praha.cluster.local import LocalCluster
from praha.zk.store import ZkStore

try:  # run as a script from the repo root or from bench/
    from bench.produce import RECORD, bootstrap, create_topic, machine_busy_seconds, start_cluster
except ImportError:  # pragma: no cover
    from produce import (  # type: ignore[no-redef]
        RECORD, bootstrap, create_topic, machine_busy_seconds, start_cluster)


def fill(bs: str, topic: str, total_mb: int, partitions: int) -> int:
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.kbytes": 65536, "log_level": 3})
    value = os.urandom(RECORD)
    n = total_mb * (1 << 20) // RECORD
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.005)
    assert p.flush(120) == 0
    return n


def read_all(bs: str, topic: str, partitions: int, n: int) -> dict[str, float]:
    """Read `n` records; the clock runs from the first record to the last (librdkafka's
    start-up, ~0.5 s of metadata and offset lookups, is reported apart)."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 4 * 1048576,
                  "queued.max.messages.kbytes": 262144, "log_level": 3})
    c.assign([CTP(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got = size = 0
    start = time.perf_counter()
    t0 = c0 = None
    deadline = time.monotonic() + 300
    while got < n and time.monotonic() < deadline:
        msgs = c.consume(num_messages=10000, timeout=0.05)
        if msgs and t0 is None:
            t0, c0 = time.perf_counter(), time.process_time()
        for m in msgs:
            if m.error() is None:
                got += 1
                size += len(m.value())
    end = time.perf_counter()
    client_cpu = time.process_time() - (c0 or 0.0)
    c.close()
    dt = end - (t0 or start)
    return {"mb_s": size / dt / 1e6, "records": got, "seconds": dt, "client_cpu": client_cpu,
            "startup_s": (t0 or end) - start}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=512)
    ap.add_argument("--partitions", type=int, default=6)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="praha-bench-")
    cluster = LocalCluster(root)
    try:
        state = start_cluster(cluster)
        store = ZkStore(state.zookeeper).start()
        try:
            create_topic(cluster, store, state.zookeeper, "data", args.partitions, 3, {"min.insync.replicas": "2"})
        finally:
            store.stop()
        bs = bootstrap(cluster)
        n = fill(bs, "data", args.mb, args.partitions)
        time.sleep(1.0)  # let followers finish copying
        procs = [psutil.Process(b.pid) for b in cluster.load().brokers.values()]

        def cpu() -> float:
            return sum(p.cpu_times().user + p.cpu_times().system for p in procs)

        print(f"consume, 1 KiB records, {args.mb} MiB, {args.partitions} partitions (RF 3), "
              f"3 brokers on {os.cpu_count()} CPUs")
        for label in ("first read", "second read"):
            c0, busy0, t0, me0 = cpu(), machine_busy_seconds(), time.perf_counter(), time.process_time()
            r = read_all(bs, "data", args.partitions, n)
            used = cpu() - c0
            others = machine_busy_seconds() - busy0 - used - (time.process_time() - me0)
            other_share = max(others, 0.0) / ((time.perf_counter() - t0) * (os.cpu_count() or 1))
            print(f"{label:<12} {r['mb_s']:8.1f} MB/s  ({r['records']} records in {r['seconds']:.2f} s after "
                  f"{r['startup_s']:.2f} s of client start-up; "
                  f"CPU s per GiB: brokers {used / (args.mb / 1024):.2f}, consumer {r['client_cpu'] / (args.mb / 1024):.2f}; "
                  f"other processes used {other_share * 100:.0f}% of the CPUs)")
    finally:
        cluster.down()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
