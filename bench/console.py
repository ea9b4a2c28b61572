"""The console's speed (issue 26): the topic list of a large cluster, and a filtered scan
against a plain consumer reading the same bytes in the same run.

1. `--topics` topics × `--partitions` partitions (RF 1) on a `--brokers` cluster (default 1, or
   the running cluster in `--cluster-dir`); `praha console` runs as a process; its first GET
   /topics (page 1 of 100 topics) is timed as soon as it answers, then other pages and a name
   search; the yardstick is one whole-cluster Metadata through confluent-kafka in the same run.
2. `--mb` MiB of 1 KiB records in a 4-partition topic; then, in this process, a plain
   confluent-kafka consumer (assign, batches of 1000, `len(value())` per record) reads it
   all, and the console's scan (`praha.console.messages.scan`) reads it with a value filter
   that matches one record in 100,000, reporting progress every 0.25 s. Ratio = plain time
   / scan time (the target is ≥ 0.5).

Usage: .venv/bin/python bench/console.py [--topics 2000] [--partitions 10] [--mb 1024 (0: no scan)]
       [--batch 100] [--create-budget S] [--cluster-dir DIR] [--no-write]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from praha.cluster.local import LocalCluster, free_ports  # noqa: E402
from praha.console.messages import ScanRequest, StartAt, scan  # noqa: E402
from praha.testing.cluster import running_cluster, wait_for  # noqa: E402
from praha.testing.zookeeper import embedded_zookeeper  # noqa: E402

RECORD = 1024
HEADING = "## Console (bench/console.py)"


def make_topics(bs: str, n: int, partitions: int, batch: int, budget_s: float) -> tuple[float, int]:
    """Topics t00000.. through CreateTopics, `batch` at a time, until `n` or the time budget is
    spent (a shared machine's ZooKeeper may not keep up with the full size); (seconds, made)."""
    admin = AdminClient({"bootstrap.servers": bs})
    t0 = time.monotonic()
    names = [f"t{i:05d}" for i in range(n)]
    made = 0
    for i in range(0, n, batch):
        if time.monotonic() - t0 > budget_s:
            break
        for _attempt in range(3):
            futures = admin.create_topics([NewTopic(t, partitions, 1) for t in names[i:i + batch]],
                                          operation_timeout=120)
            failed = []
            for f in futures.values():
                try:
                    f.result(180)
                except KafkaException as e:
                    if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                        failed.append(e)
            if not failed:
                break
            print(f"batch {i // batch}: {len(failed)} failed ({failed[0]}); again", flush=True)
    made = sum(1 for name in admin.list_topics(timeout=30).topics if name in set(names))  # a failed batch is left out
    wait_for(lambda: sum(len(t.partitions) for name, t in admin.list_topics(timeout=30).topics.items()
                         if name.startswith("t")) == made * partitions and
             all(p.leader >= 0 for t in admin.list_topics(timeout=30).topics.values()
                 for p in t.partitions.values()), timeout=600, interval=2, what="every partition led")
    return time.monotonic() - t0, made


def time_get(url: str) -> tuple[float, int]:
    t0 = time.monotonic()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read()
    return time.monotonic() - t0, len(body)


def fill(bs: str, topic: str, mb: int, partitions: int) -> int:
    p = Producer({"bootstrap.servers": bs, "acks": "1", "linger.ms": 20, "batch.size": 1_000_000,
                  "queue.buffering.max.kbytes": 262144})
    value = bytearray(os.urandom(RECORD))
    n = mb * (1 << 20) // RECORD
    for i in range(n):
        if i % 100_000 == 50_000:
            value[:12] = b"needle-12345"
        else:
            value[:12] = b"haystack-abc"
        while True:
            try:
                p.produce(topic, value=bytes(value), partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(300) == 0
    return n


def plain_read(bs: str, topic: str, partitions: int) -> tuple[float, int, int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": "bench-plain", "enable.auto.commit": "false",
                  "enable.partition.eof": "true", "fetch.max.bytes": str(64 << 20),
                  "max.partition.fetch.bytes": str(16 << 20), "queued.max.messages.kbytes": str(256 << 10)})
    c.assign([CTP(topic, p, 0) for p in range(partitions)])
    t0 = time.monotonic()
    n = size = 0
    open_parts = set(range(partitions))
    while open_parts:
        for m in c.consume(num_messages=1000, timeout=0.5):
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    open_parts.discard(m.partition())
                continue
            n += 1
            size += len(m.value())
    took = time.monotonic() - t0
    c.close()
    return took, n, size


def _raise_open_files(wanted: int) -> None:
    """A broker keeps a file open per partition: 20,000 partitions on one broker need more than
    a common 20,000-descriptor limit (the broker inherits this process's limit)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, max(hard, wanted)))
        except (ValueError, OSError) as e:  # not root: the hard limit stays
            print(f"open files stay at {soft} ({e}); a large --topics may exhaust them", flush=True)


def measure_topic_list(root: Path, bs: str, args: argparse.Namespace) -> list[str]:
    """`praha console --dir` as a process; GET /topics (page 1) as soon as it answers (its
    first list: nothing asked before but what the console asks at start), then a middle and
    the last page, a name search, and page 1 again; beside them the yardstick, a whole-cluster
    Metadata through confluent-kafka (what any client pays to learn every topic)."""
    (port,) = free_ports(1)
    log = open(root.parent / "console-bench.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "praha", "console", "--dir", str(root), "--port", str(port)],
                            stdout=log, stderr=log, env={**os.environ, "PYTHONPATH": str(REPO)})
    pages = max(1, -(-args.topics // 100))
    timed: dict[str, float] = {}
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: time_get(base + "/static/console.css"), timeout=60, what="the console")
        first, size = time_get(base + "/topics")
        assert b'id="topics-summary"' in size_check(base + "/topics"), "no topic list"
        for what, path in (("middle page", f"/topics?page={max(1, pages // 2)}"),
                           ("last page", f"/topics?page={pages}"),
                           ("name search", "/topics?q=t0199"), ("page 1 again", "/topics")):
            timed[what] = min(time_get(base + path)[0] for _ in range(3))
    finally:
        proc.terminate()
        proc.wait(15)
    admin = AdminClient({"bootstrap.servers": bs})
    yard = []
    for _ in range(3):
        t0 = time.monotonic()
        md = admin.list_topics(timeout=120)
        yard.append(time.monotonic() - t0)
    yardstick = min(yard)
    n_parts = sum(len(t.partitions) for t in md.topics.values())
    print(f"/topics: first {first:.2f} s ({size / 1e3:.0f} kB); " +
          ", ".join(f"{k} {v:.2f} s" for k, v in timed.items()) +
          f"; yardstick (Metadata of all {n_parts} partitions) {yardstick:.2f} s", flush=True)
    return [f"Topic list, {args.topics} topics × {args.partitions} partitions (RF 1, {args.brokers} broker(s)), "
            f"100 topics a page: the console's first GET /topics, made as soon as it answered, took "
            f"**{first:.2f} s** (target 2 s: {'met' if first <= 2.0 else 'NOT met'}; {size / 1e3:.0f} kB of HTML); "
            + ", ".join(f"{k} {v:.2f} s" for k, v in timed.items()) + " (best of 3). Yardstick in the same run: "
            f"one Metadata of the whole cluster ({n_parts} partitions) through confluent-kafka, {yardstick:.2f} s; "
            f"first list / yardstick = {first / yardstick:.2f}.", ""]


def size_check(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topics", type=int, default=2000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--brokers", type=int, default=1,
                    help="brokers (RF 1): each keeps a file open per partition it holds")
    ap.add_argument("--batch", type=int, default=100, help="topics per CreateTopics request")
    ap.add_argument("--create-budget", type=float, default=3600.0,
                    help="stop creating topics after this many seconds and measure what exists")
    ap.add_argument("--cluster-dir", help="measure a running local cluster (`praha cluster up --dir`) instead of "
                                          "starting one; its missing t00000.. topics are created")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    _raise_open_files(2 * args.topics * args.partitions // args.brokers)
    work = Path(tempfile.mkdtemp(prefix="praha-bench-console-"))
    lines: list[str] = []
    try:
        with contextlib.ExitStack() as stack:
            if args.cluster_dir:
                cluster = LocalCluster(Path(args.cluster_dir))
            else:
                zk = stack.enter_context(embedded_zookeeper(work / "zk", timeout=180))
                cluster = stack.enter_context(running_cluster(work / "cluster", zk.connect_string, args.brokers,
                                                              {"num.partitions": "1"}))
            state = cluster.load()
            args.brokers = len(state.brokers)
            bs = ",".join(f"127.0.0.1:{b.port}" for b in state.brokers.values())
            took, made = make_topics(bs, args.topics, args.partitions, args.batch, args.create_budget)
            print(f"{made} topics × {args.partitions} partitions there after {took:.1f} s", flush=True)
            args.topics = made
            lines += measure_topic_list(cluster.root, bs, args)
            if args.mb:  # 0: the topic list only
                topic = f"scan-{os.getpid()}"  # a fresh one, also on a --cluster-dir measured before
                admin = AdminClient({"bootstrap.servers": bs})
                admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(60)
                n = fill(bs, topic, args.mb, 4)
                plain_s, plain_n, plain_bytes = plain_read(bs, topic, 4)
                reports: list[int] = []
                req = ScanRequest(topic, start=StartAt.OLDEST, newest_first=False, value="needle-12345",
                                  limit=1000, max_scan=n)
                ranges = {p: (0, n // 4 + (1 if p < n % 4 else 0)) for p in range(4)}
                t0 = time.monotonic()
                result = scan({"bootstrap.servers": bs}, req, ranges, progress=lambda s: reports.append(s.scanned))
                scan_s = time.monotonic() - t0
                ratio = plain_s / scan_s
                mib = plain_bytes / (1 << 20)
                print(
                    f"plain consumer: {plain_n} records, {mib:.0f} MiB in {plain_s:.2f} s ({mib / plain_s:.0f} MiB/s)"
                )
                print(f"console scan: {result.scanned} records, {result.matched} matched in {scan_s:.2f} s "
                      f"({mib / scan_s:.0f} MiB/s), {len(reports)} progress reports; ratio {ratio:.2f}")
                assert result.scanned == plain_n == n, (result.scanned, plain_n, n)
                lines += [
                    f"Filtered scan of {mib:.0f} MiB ({n} records of 1 KiB, 4 partitions): plain confluent-kafka "
                    f"consumer {plain_s:.2f} s ({mib / plain_s:.0f} MiB/s); the console's scan with a value filter "
                    f"{scan_s:.2f} s ({mib / scan_s:.0f} MiB/s), {result.matched} matches, {len(reports)} progress "
                    f"reports. Scan speed / plain speed = **{ratio:.2f}** (target ≥ 0.5: "
                    f"{'met' if ratio >= 0.5 else 'NOT met'})."
                ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.topics < 2000 or args.mb < 1024:
        lines += ["", "Smaller than the issue's sizes (2,000 topics × 10 partitions, 1 GiB), for time on a shared "
                      "machine; the defaults run the full sizes."]
    la = os.getloadavg()
    section = "\n".join([HEADING, "", f"`.venv/bin/python bench/console.py --topics {args.topics} --partitions "
                         f"{args.partitions} --mb {args.mb}` on {os.cpu_count()} CPUs (load average at the end "
                         f"{la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f}; the machine is shared).", "", *lines, ""])
    print(section)
    if not args.no_write:
        sys.path.insert(0, str(REPO / "bench"))
        from harness import write_section

        write_section(REPO / "bench" / "RESULTS.md", HEADING, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
