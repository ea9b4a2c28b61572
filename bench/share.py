"""Share groups (KIP-932) against a classic consumer on ONE partition, same run, same topic.

A local 3-broker cluster; a one-partition topic (RF 3) filled with `--records` 1 KiB
records. Then, each reading all of them from the start under a fresh group id:

- the yardstick: one classic confluent-kafka `Consumer` (what a partition allows a classic
  group: one reader), committing after every poll;
- share groups of 1, 4 and 16 `ShareConsumer` processes (`--consumers`), explicit mode, each
  record acknowledged ACCEPT on its own, acknowledgements sent with `commit_sync` after
  every poll (`max.poll.records` `--max-poll`).

Every reader does `--work-ms` (default 1) of application work per record (a sleep: the
work of a service call, not of the CPU). Records/s is every record over the time from the
start to the last acknowledgement or commit. The start comes once every reader process is up
and subscribed and the group coordinator lists all of them as members (the classic
consumer's group Stable with its member), so the processes' start-up (seconds each
on a loaded machine, many times the measured work for 16 processes) is not measured. Every
record must be read (and, for the share groups, accepted) exactly once. The figures and
the ratio of each share group to the classic consumer go to bench/RESULTS.md; the goal is
4 share consumers >= 2x the classic consumer.

Usage: .venv/bin/python bench/share.py [--records 4000] [--consumers 1,4,16] [--work-ms 1]
       [--max-poll 50]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from praha.cluster.local import LocalCluster

try:  # run as a script from the repo root or from bench/
    from bench.harness import machine_line, write_section
    from bench.produce import RECORD, bootstrap, start_cluster
except ImportError:  # pragma: no cover
    from harness import machine_line, write_section  # type: ignore[no-redef]
    from produce import RECORD, bootstrap, start_cluster  # type: ignore[no-redef]

SETTINGS = {"zookeeper.session.timeout.ms": "6000", "replica.fetch.wait.max.ms": "500",
            "share.auto.offset.reset": "earliest", "group.share.heartbeat.interval.ms": "500",
            "group.initial.rebalance.delay.ms": "0"}
RESULTS = Path(__file__).with_name("RESULTS.md")
HEADING = "## Share groups: records/s from one partition (bench/share.py)"


def fill(bs: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer
    # idempotent: a retry under load must not write a record twice (every record is counted)
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5, "log_level": 3, "enable.idempotence": True})
    value = os.urandom(RECORD)
    for _ in range(n):
        p.produce(topic, value=value, partition=0)
        p.poll(0)
    assert p.flush(60) == 0


def classic_reader(bs: str, topic: str, group: str, n: int, work_s: float, ready, start, seen, done) -> None:
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "log_level": 3})
    c.subscribe([topic])
    with ready.get_lock():
        ready.value += 1
    start.wait()
    while seen.value < n:
        msgs = c.consume(50, 0.5)
        for m in msgs:
            if m.error() is None:
                time.sleep(work_s)
                with seen.get_lock():
                    seen.value += 1
        if msgs:
            c.commit(asynchronous=False)
    done.value = time.monotonic()
    c.close()


def share_reader(bs: str, topic: str, group: str, n: int, work_s: float, max_poll: int, ready, start, seen,
                 done, timings=None) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit",
                       "max.poll.records": max_poll, "log_level": 3})
    c.subscribe([topic])  # the member joins in librdkafka's background thread
    with ready.get_lock():
        ready.value += 1
    start.wait()
    deadline = time.monotonic() + 600
    spent = [0.0, 0.0, 0.0, 0, 0]  # seconds in poll, in work and acknowledge, in commit_sync; polls, empty polls
    while seen.value < n and time.monotonic() < deadline:
        t0 = time.perf_counter()
        ms = c.poll(0.2)
        t1 = time.perf_counter()
        k = 0
        for m in ms:
            if m.error() is None:
                time.sleep(work_s)
                c.acknowledge(m, AcknowledgeType.ACCEPT)
                k += 1
        t2 = time.perf_counter()
        if k:
            res = c.commit_sync(30)
            if all(e is None for e in res.values()):
                with seen.get_lock():
                    seen.value += k
                    if seen.value >= n:
                        done.value = time.monotonic()
        spent[0] += t1 - t0
        spent[1] += t2 - t1
        spent[2] += time.perf_counter() - t2
        spent[3] += 1
        spent[4] += 0 if k else 1
    if timings is not None:
        timings.put(tuple(spent))
    c.close()


def run(bs: str, topic: str, n: int, readers: int, share: bool, work_s: float, max_poll: int,
        timed: bool = False) -> dict:
    ctx = mp.get_context("spawn")
    ready, start, seen, done = ctx.Value("q", 0), ctx.Event(), ctx.Value("q", 0), ctx.Value("d", 0.0)
    timings = ctx.Queue() if timed and share else None
    group = f"bench-{'share' if share else 'classic'}-{readers}-{time.monotonic_ns()}"
    target = share_reader if share else classic_reader
    args = (bs, topic, group, n, work_s, max_poll) if share else (bs, topic, group, n, work_s)
    extra = (timings,) if timings is not None else ()
    procs = [ctx.Process(target=target, args=(*args, ready, start, seen, done, *extra)) for _ in range(readers)]
    for p in procs:
        p.start()
    joined = wait_joined(bs, group, readers, share, ready)
    t0 = time.monotonic()
    start.set()
    try:
        deadline = t0 + 600
        while seen.value < n and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
                p.join(10)
    assert seen.value == n, f"{seen.value} of {n} records read"
    elapsed = max(done.value - t0, 1e-6)
    out = {"readers": readers, "kind": "share" if share else "classic", "seconds": elapsed, "rate": n / elapsed,
           "join_s": joined}
    if timings is not None:  # each reader's (poll s, work s, commit_sync s, polls, empty polls), summed
        got = [timings.get(timeout=30) for _ in range(readers)]
        out["timings"] = [sum(x[i] for x in got) for i in range(5)]
    return out


def wait_joined(bs: str, group: str, readers: int, share: bool, ready, bound_s: float = 300.0) -> float:
    """Seconds until every reader process is up and subscribed and the coordinator lists them
    all as members (not measured: the readers start together after it)."""
    from praha.admin.groups import GroupAdmin
    from praha.admin.share_groups import ShareGroupAdmin
    t0 = time.monotonic()
    deadline = t0 + bound_s
    with (ShareGroupAdmin(bs, timeout=30) if share else GroupAdmin(bs, timeout=30)) as admin:
        while time.monotonic() < deadline:
            if ready.value >= readers:
                if share:
                    members = len(admin.describe_share_groups([group])[group].members)  # type: ignore[attr-defined]
                    if members >= readers:
                        return time.monotonic() - t0
                else:  # librdkafka joins a classic group in its background thread, too
                    d = admin.describe_groups([group])[group]
                    if d.state == "Stable" and len(d.members) >= readers:
                        return time.monotonic() - t0
            time.sleep(0.1)
    raise AssertionError(f"{ready.value} of {readers} readers up, group {group} not complete after {bound_s:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=4000)
    ap.add_argument("--consumers", default="1,4,16")
    ap.add_argument("--work-ms", type=float, default=1.0)
    ap.add_argument("--max-poll", type=int, default=50)
    ap.add_argument("--timings", action="store_true",
                    help="print where the share readers' time went: poll (ShareFetch), work, commit_sync")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="praha-bench-share-"))
    cluster = LocalCluster(root)
    rows = []
    try:
        start_cluster(cluster, SETTINGS)
        bs = bootstrap(cluster)
        admin = AdminClient({"bootstrap.servers": bs})  # a topic id, as share groups assign by id
        admin.create_topics([NewTopic("share-bench", 1, 3)])["share-bench"].result(60)
        fill(bs, "share-bench", args.records)
        work_s = args.work_ms / 1000
        rows.append(run(bs, "share-bench", args.records, 1, False, work_s, args.max_poll))
        for k in [int(x) for x in args.consumers.split(",")]:
            rows.append(run(bs, "share-bench", args.records, k, True, work_s, args.max_poll, args.timings))
    finally:
        cluster.down()
        shutil.rmtree(root, ignore_errors=True)
    base = rows[0]["rate"]
    lines = ["| readers | records/s | seconds | vs one classic consumer | start-up and join (not measured), s |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        name = "1 classic consumer" if r["kind"] == "classic" else f"{r['readers']} share consumers"
        lines.append(f"| {name} | {r['rate']:.0f} | {r['seconds']:.2f} | {r['rate'] / base:.2f}x | {r['join_s']:.1f} |")
    table = "\n".join(lines)
    for r in rows:
        if "timings" in r:
            poll, work, commit, polls, empty = r["timings"]
            print(f"{r['readers']} share readers, summed: poll (ShareFetch) {poll:.2f} s, work and acknowledge "
                  f"{work:.2f} s, commit_sync (ShareAcknowledge) {commit:.2f} s; {polls:.0f} polls, {empty:.0f} empty")
    four = next((r for r in rows if r["kind"] == "share" and r["readers"] == 4), None)
    verdict = ("" if four is None else
               f"4 share consumers: {four['rate'] / base:.2f}x the classic consumer "
               f"({'meets' if four['rate'] >= 2 * base else 'misses'} the 2x goal).")
    cmd = (f".venv/bin/python bench/share.py --records {args.records} --consumers {args.consumers} "
           f"--work-ms {args.work_ms:g} --max-poll {args.max_poll}")
    section = (f"{HEADING}\n\n`{cmd}` — {machine_line()}\n\n{args.records} records of {RECORD} B on one partition "
               f"(RF 3), {args.work_ms:g} ms of work per record, every share record acknowledged on its own.\n\n"
               f"{table}\n\n{verdict}\n")
    print(section)
    write_section(RESULTS, HEADING, section)


if __name__ == "__main__":
    main()
