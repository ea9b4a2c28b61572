"""Consume throughput of a local 3-broker praha cluster (confluent-kafka, assign-based).

Fills a topic (RF 3, 1 KiB records) with `--mb` MiB, then reads all of it back from the
beginning, `--reads` times per consumer count in `--consumers`: with 1, one confluent-kafka
consumer reads every partition; with N, N consumer processes each read a share of the
partitions (partition p goes to consumer p mod N) at the same time. Each consumer takes
batches with `consume(num_messages=...)` and, per message, checks `error()` and adds
`len(value())`; every record and byte is counted and checked against what was produced, and
each partition's position must end at its end offset. Each consumer first warms up
(bootstrap, metadata, leader connections; what it prefetched is dropped), then all start
together from offset 0. Prints per read MB/s (all bytes over the time from that start to the
last record of the last consumer), the brokers' and the consumers' CPU seconds per GiB, and
the share of the machine's CPUs other processes used meanwhile; then the median of the
reads.

Consumer settings: fetch.max.bytes 50 MiB, max.partition.fetch.bytes 4 MiB,
queued.max.messages.kbytes 256 MiB and fetch.queue.backoff.ms `--fetch-queue-backoff-ms`
(default 10). librdkafka's own default for the last is 1000 ms: whenever its queue holds
`queued.min.messages` (100,000) messages, ~100 MB of 1 KiB records, it stops fetching
for a whole second, which capped a fast reader at ~150 MB/s here; pass 1000 to see that.
Batches of `--batch` 500 messages: with 10,000 (each a Python object holding 1 KiB) the
consumer spends ~20-25% more CPU per GiB, and a call waits its whole timeout for a batch
that never fills (at the start and the end of a read). The cluster and the consumers
are stopped by PID.

Usage: .venv/bin/python bench/consume.py [--mb 512] [--partitions 6] [--reads 3]
       [--consumers 1,2] [--fetch-queue-backoff-ms 10] [--batch 500]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
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
    from produce import RECORD, bootstrap, create_topic, machine_busy_seconds, start_cluster  # type: ignore[no-redef]


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


def consumer_config(bs: str, backoff_ms: int) -> dict:
    return {"bootstrap.servers": bs, "group.id": "bench", "enable.auto.commit": False,
            "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 4 * 1048576,
            "queued.max.messages.kbytes": 262144, "fetch.queue.backoff.ms": backoff_ms, "log_level": 3}


def read_share(bs: str, topic: str, partitions: list[int], ends: list[int], backoff_ms: int, batch: int,
               ready, go, results) -> None:
    """One consumer process: read `partitions` from offset 0 until `expected` records
    arrived (or 300 s passed), `ends` being each partition's end offset; report counts,
    whether every partition's position reached its end, monotonic times and its own CPU seconds
    (process_time: the Python thread and librdkafka's threads). Before the clock starts
    the consumer warms up (bootstrap, metadata, connections to the leaders: one record
    from each partition, then unassign, which drops what it prefetched), so every
    consumer starts at once and the clock does not time librdkafka's start-up."""
    c = Consumer(consumer_config(bs, backoff_ms))
    t = time.monotonic()
    c.assign([CTP(topic, p, OFFSET_BEGINNING) for p in partitions])
    seen: set[int] = set()
    while len(seen) < len(partitions) and time.monotonic() < t + 60:
        for m in c.consume(num_messages=100, timeout=0.05):
            if m.error() is None:
                seen.add(m.partition())
    c.unassign()
    while c.consume(num_messages=batch, timeout=0.01):
        pass
    time.sleep(0.6)  # a fetch the warm-up left parked at a log end (fetch.wait.max.ms 500) comes back first
    warmup = time.monotonic() - t
    ready.put(os.getpid())
    go.wait()
    start = time.monotonic()
    cpu0 = time.process_time()
    c.assign([CTP(topic, p, 0) for p in partitions])
    expected = sum(ends)
    got = size = errors = 0
    first = None
    deadline = start + 300
    while got < expected and time.monotonic() < deadline:
        msgs = c.consume(num_messages=batch, timeout=0.05)
        if msgs and first is None:
            first = time.monotonic()
        for m in msgs:
            if m.error() is None:
                got += 1
                size += len(m.value())
            else:
                errors += 1
    end = time.monotonic()
    cpu = time.process_time() - cpu0
    at_end = [tp.offset for tp in c.position([CTP(topic, p) for p in partitions])] == ends
    c.close()
    results.put({"records": got, "bytes": size, "errors": errors, "at_end": at_end, "start": start, "warmup": warmup,
                 "first": first if first is not None else end, "end": end, "cpu": cpu})


def read_all(bs: str, topic: str, partitions: int, per_partition: list[int], consumers: int,
             backoff_ms: int, batch: int, broker_pids: list[int]) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    ready, go, results = ctx.Queue(), ctx.Event(), ctx.Queue()
    shares = [[p for p in range(partitions) if p % consumers == i] for i in range(consumers)]
    procs = [ctx.Process(target=read_share, daemon=True,
                         args=(bs, topic, share, [per_partition[p] for p in share], backoff_ms, batch, ready, go,
                               results))
             for share in shares]
    for p in procs:
        p.start()
    for _ in procs:  # every consumer built before the clock starts
        ready.get(timeout=60)
    brokers = [psutil.Process(pid) for pid in broker_pids]

    def broker_cpu() -> float:
        return sum(t.user + t.system for t in (b.cpu_times() for b in brokers))

    b0, busy0, me0 = broker_cpu(), machine_busy_seconds(), time.process_time()
    t0 = time.monotonic()
    go.set()
    got = [results.get(timeout=330) for _ in procs]
    used = broker_cpu() - b0
    wall = time.monotonic() - t0
    consumers_cpu = sum(r["cpu"] for r in got)
    others = machine_busy_seconds() - busy0 - used - consumers_cpu - (time.process_time() - me0)
    for p in procs:  # each has put its result: it is exiting; stop it by PID if it lingers
        p.join(10)
        if p.is_alive():
            p.kill()
            p.join()
    end = max(r["end"] for r in got)
    size = sum(r["bytes"] for r in got)
    gib = size / (1 << 30) if size else float("nan")
    return {"mb_s": size / (end - t0) / 1e6, "records": sum(r["records"] for r in got), "bytes": size,
            "errors": sum(r["errors"] for r in got), "at_end": all(r["at_end"] for r in got), "seconds": end - t0,
            "first_ms": 1000 * (min(r["first"] for r in got) - t0), "warmup_s": max(r["warmup"] for r in got),
            "broker_cpu_gib": used / gib, "consumer_cpu_gib": consumers_cpu / gib,
            "others": max(others, 0.0) / (wall * (os.cpu_count() or 1))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=512, help="MiB to produce and read back (default 512)")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--reads", type=int, default=3, help="reads of all the data per consumer count (default 3)")
    ap.add_argument("--consumers", default="1", help="comma-separated consumer process counts (default 1)")
    ap.add_argument("--fetch-queue-backoff-ms", type=int, default=10,
                    help="librdkafka fetch.queue.backoff.ms (default 10; librdkafka's default is 1000)")
    ap.add_argument("--batch", type=int, default=500,
                    help="consume(num_messages=) per call (default 500; 10,000 costs the consumer ~20-25%% more CPU)")
    args = ap.parse_args()
    counts = [int(x) for x in args.consumers.split(",")]
    if any(c < 1 or c > args.partitions for c in counts):
        ap.error("--consumers must be between 1 and --partitions")
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
        per_partition = [n // args.partitions + (1 if p < n % args.partitions else 0) for p in range(args.partitions)]
        time.sleep(1.0)  # let followers finish copying
        pids = [b.pid for b in cluster.load().brokers.values()]
        print(f"consume, 1 KiB records, {args.mb} MiB ({n} records), {args.partitions} partitions (RF 3), "
              f"3 brokers on {os.cpu_count()} CPUs; fetch.queue.backoff.ms={args.fetch_queue_backoff_ms}, "
              f"consume(num_messages={args.batch})")
        for count in counts:
            rates = []
            label = "1 consumer" if count == 1 else f"{count} consumers"
            for i in range(args.reads):
                r = read_all(bs, "data", args.partitions, per_partition, count, args.fetch_queue_backoff_ms,
                             args.batch, pids)
                complete = r["records"] == n and r["bytes"] == n * RECORD and not r["errors"] and r["at_end"]
                rates.append(r["mb_s"])
                incomplete = "" if complete else (f" INCOMPLETE: expected {n}, {r['errors']} errors, "
                                                  f"positions at the end: {r['at_end']}")
                print(f"{label:<12} read {i + 1}  {r['mb_s']:7.1f} MB/s  "
                      f"({r['records']} records in {r['seconds']:.2f} s{incomplete}; "
                      f"first record after {r['first_ms']:.0f} ms; CPU s per GiB: brokers {r['broker_cpu_gib']:.2f}, "
                      f"consumers {r['consumer_cpu_gib']:.2f}; "
                      f"other processes used {r['others'] * 100:.0f}% of the CPUs)")
            print(f"{label:<12} median  {statistics.median(rates):7.1f} MB/s over {len(rates)} reads")
    finally:
        cluster.down()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
