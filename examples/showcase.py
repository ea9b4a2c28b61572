"""`make run`: a Spark pipeline on a praha cluster that survives a leader and a controller crash.

What it does, printing progress as it goes:
  1. cleans `.praha/cluster` and `.praha/showcase`, starts the embedded ZooKeeper and 3 brokers;
  2. creates `pageviews` (6 partitions, RF 3, min.insync.replicas=2) and `pageview-counts`;
  3. a producer thread writes generated page views (key = page, event-time timestamps, a
     unique id in each value) with acks=all at a steady rate;
  4. a Spark Structured Streaming job reads them with the praha source, counts views per
     page in 10-second event-time windows (30 s watermark), and writes each window's final
     count to `pageview-counts` with the praha sink (append mode), checkpointing to
     `.praha/showcase/checkpoint`;
  5. mid-run the driver SIGKILLs the leader of a partition, restarts it, then SIGKILLs the
     controller's broker and restarts it; the controller's failover and the elections are
     printed as they happen (tailing the brokers' state-change logs);
  6. when the producer is done and the job has caught up, a batch Spark job reads both
     topics back and checks that every acknowledged record is in the log and counted once
     in the final window counts;
  7. prints a report and writes `.praha/showcase/throughput.png`; stops everything by PID.

`praha cluster up` remains the way to run just the cluster. This is a program built on
praha, as a user's would be, and not part of the library: run it as `python examples/showcase.py`.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# run from a checkout (`make run`): praha is imported from it
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from praha.cluster.local import DEFAULT_DIR, LocalCluster  # noqa: E402

INPUT, OUTPUT = "pageviews", "pageview-counts"
WINDOW_S = 10
#: how late a page view may arrive and still be counted: well above a failover's delay
WATERMARK_S = 30
END = "__end__"
BROKER_CONFIG = {
    "zookeeper.session.timeout.ms": "4000",  # a crashed broker is noticed in ~4 s
    "replica.lag.time.max.ms": "4000",
    "isr.change.notification.interval.ms": "500",
    "replica.fetch.backoff.ms": "200",
    "leader.imbalance.check.interval.seconds": "15",  # restarted brokers get their leaders back
}


def say(msg: str, t0: float | None = None) -> None:
    stamp = f"[{time.monotonic() - t0:6.1f}s] " if t0 is not None else ""
    print(f"{stamp}{msg}", flush=True)


# ------------------------------------------------------------------------------ events
PAGES = ["/", "/search", "/cart", "/checkout", "/login", "/help"] + [f"/product/{i}" for i in range(1, 25)]
COUNTRIES = ["CZ", "DE", "PL", "AT", "SK", "FR", "US", "GB"]


def page_view(seq: int, rnd: random.Random) -> tuple[bytes, bytes, int]:
    """(key, value, timestamp ms) of one generated page view: popular pages are more popular."""
    page = PAGES[min(int(rnd.paretovariate(1.2)) - 1, len(PAGES) - 1)]
    now = int(time.time() * 1000)
    value = {"id": seq, "user": f"u{rnd.randrange(5000):04d}", "page": page,
             "country": rnd.choice(COUNTRIES), "ms_on_page": int(rnd.expovariate(1 / 9000)), "ts": now}
    return page.encode(), json.dumps(value, separators=(",", ":")).encode(), now


@dataclass
class ProducerStats:
    sent: int = 0
    acked_ids: set[int] = field(default_factory=set)
    failed: Counter[str] = field(default_factory=Counter)
    acked_per_second: Counter[int] = field(default_factory=Counter)  # int(wall second) -> records
    done: threading.Event = field(default_factory=threading.Event)


def run_producer(bootstrap: str, rate: int, stats: ProducerStats, stop: threading.Event) -> None:
    from confluent_kafka import Producer

    rnd = random.Random(7)
    lock = threading.Lock()

    def delivered(err: Any, msg: Any) -> None:
        with lock:
            if err is None:
                stats.acked_ids.add(json.loads(msg.value())["id"])
                stats.acked_per_second[int(time.time())] += 1
            else:
                stats.failed[err.str()] += 1

    # idempotent: a batch resent after a lost answer (e.g. across a leader kill) is stored once
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "enable.idempotence": True,
                  "log_level": 0})
    start = time.monotonic()
    seq = 0
    try:
        while not stop.is_set():
            due = int((time.monotonic() - start) * rate)
            while seq < due:
                key, value, ts = page_view(seq, rnd)
                try:
                    p.produce(INPUT, key=key, value=value, timestamp=ts, on_delivery=delivered)
                except BufferError:
                    p.poll(0.05)
                    continue
                seq += 1
            stats.sent = seq
            p.poll(0.02)
        p.flush(120)
    finally:
        stats.sent = seq
        stats.done.set()


# ------------------------------------------------------------------------------ state-change tail
class StateChangeTail:
    """Prints controller and election events from the brokers' state-change logs as they appear."""

    def __init__(self, cluster_dir: Path, t0: float):
        self.dir = cluster_dir
        self.t0 = t0
        self.offsets: dict[Path, int] = {}
        self.controller_elections: list[tuple[float, int, int]] = []  # (monotonic, broker, epoch)
        self.failovers_ms: list[float] = []
        self.elections: Counter[str] = Counter()

    def skip_existing(self) -> None:
        for path in self.dir.glob("broker-*/data/state-change.log"):
            self.offsets[path] = path.stat().st_size

    def poll(self) -> None:
        for path in sorted(self.dir.glob("broker-*/data/state-change.log")):
            start = self.offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(start)
                    data = f.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1
            self.offsets[path] = start + end
            for line in data[:end].splitlines():
                try:
                    self._show(json.loads(line))
                except ValueError:
                    continue

    def _show(self, e: dict[str, Any]) -> None:
        ev, who = e.get("event"), e.get("broker_id")
        if ev == "ControllerElected":
            self.controller_elections.append((time.monotonic(), int(who or -1), int(e.get("controller_epoch", -1))))
            say(f"  ⚑ broker {who} is the controller now (epoch {e.get('controller_epoch')})", self.t0)
        elif ev == "ControllerFailover":
            self.failovers_ms.append(float(e.get("duration_ms", 0)))
            say(f"  ⚑ controller failover done in {e.get('duration_ms')} ms "
                f"(live brokers {e.get('live_brokers')}, {e.get('partitions')} partitions)", self.t0)
        elif ev == "BrokerChange":
            parts = [f"{k} {e[k]}" for k in ("dead", "new", "bounced") if e.get(k)]
            say(f"  ⚑ controller {who}: brokers " + ", ".join(parts), self.t0)
        elif ev == "PartitionStateChange" and e.get("target") == "OnlinePartition" and e.get("elected"):
            kind = str(e.get("election"))
            leaders = e.get("leaders") or {}
            self.elections[kind] += len(leaders)
            if kind != "new":
                shown = ", ".join(f"{tp}→{v[0]}" for tp, v in sorted(leaders.items())[:6])
                more = f" (+{len(leaders) - 6})" if len(leaders) > 6 else ""
                unclean = f", UNCLEAN {e['unclean']}" if e.get("unclean") else ""
                say(f"  ⚑ {kind} election of {len(leaders)} partitions: {shown}{more}{unclean}", self.t0)
        elif ev == "ControlledShutdown":
            say(f"  ⚑ controlled shutdown of broker {e.get('broker')}: {e.get('leaders_to_move')} leaders moved",
                self.t0)
        elif ev == "IsrChange" and e.get("partitions"):
            sizes = Counter(len(v) for v in (e.get("isr") or {}).values())
            say(f"  ⚑ ISR change of {e.get('partitions')} partitions (ISR sizes {dict(sorted(sizes.items()))})",
                self.t0)


# ------------------------------------------------------------------------------ the run
@dataclass
class Marks:
    faults: list[tuple[float, str]] = field(default_factory=list)  # (seconds since t0, label)
    batches: list[tuple[float, int, float]] = field(default_factory=list)  # (t, rows, seconds)
    recoveries: dict[str, float] = field(default_factory=dict)


def create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # re-exported at run time

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    futures = admin.create_topics([
        NewTopic(INPUT, 6, 3, config={"min.insync.replicas": "2"}),
        NewTopic(OUTPUT, 3, 3, config={"min.insync.replicas": "2"}),
    ], request_timeout=30)
    for f in futures.values():
        f.result(timeout=60)


def wait_leaders(zk: str, timeout: float = 60) -> dict[str, Any]:
    from praha.admin.status import cluster_status

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = cluster_status(zk)
        parts = [p for t in (INPUT, OUTPUT) for p in st["topics"].get(t, {}).get("partitions", [])]
        if len(parts) == 9 and all(not p["offline"] and len(p["isr"]) == 3 for p in parts):
            return st
        time.sleep(0.3)
    raise RuntimeError("topics did not get leaders and full ISRs in time")


def start_stream(spark: Any, bootstrap: str, checkpoint: Path) -> Any:
    from pyspark.sql import functions as F

    events = (spark.readStream.format("praha").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", INPUT).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "20000").load())
    views = events.select("timestamp", F.from_json(F.col("value").cast("string"), "id long, page string").alias("e"))
    counts = (views.withWatermark("timestamp", f"{WATERMARK_S} seconds")
              .groupBy(F.window("timestamp", f"{WINDOW_S} seconds"), F.col("e.page").alias("page")).count())
    out = counts.select(
        F.concat_ws("|", F.col("window.start").cast("long").cast("string"), "page").alias("key"),
        F.to_json(F.struct(F.col("window.start").cast("long").alias("window_start"), "page", "count")).alias("value"))
    return (out.writeStream.format("praha").option("kafka.bootstrap.servers", bootstrap).option("topic", OUTPUT)
            .option("kafka.log_level", "0")  # connection-refused chatter while a broker is down
            .option("checkpointLocation", str(checkpoint)).outputMode("append")
            .trigger(processingTime="2 seconds").queryName("pageview_counts").start())


def send_end_markers(bootstrap: str) -> None:
    """One END record per partition, two minutes ahead in event time: the watermark then
    passes every real window, and append mode emits their final counts."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    parts = admin.list_topics(INPUT, timeout=10).topics[INPUT].partitions
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    ts = int(time.time() * 1000) + 120_000
    for i in sorted(parts):
        value = json.dumps({"id": -1 - i, "page": END, "ts": ts}).encode()
        p.produce(INPUT, key=END.encode(), value=value, partition=i, timestamp=ts)
    if p.flush(60):
        raise RuntimeError("end-of-stream markers were not acknowledged")


def leader_of(zk: str, topic: str, partition: int) -> tuple[int, int]:
    from praha.admin.status import cluster_status

    st = cluster_status(zk)
    return st["topics"][topic]["partitions"][partition]["leader"], st["controller"]["id"]


def recover_time(zk: str, check: Callable[[dict[str, Any]], bool], tick: Callable[[], None],
                 timeout: float = 60) -> float:
    """Seconds until `check(cluster_status)` holds (polled every 0.1 s; `tick()` keeps the
    progress output going meanwhile)."""
    from praha.admin.status import cluster_status

    t = time.monotonic()
    while time.monotonic() - t < timeout:
        try:
            if check(cluster_status(zk)):
                return time.monotonic() - t
        except Exception:  # noqa: BLE001 - ZooKeeper answers again in a moment
            pass
        tick()
        time.sleep(0.1)
    return float("nan")


def input_end_offsets(bootstrap: str) -> int:
    from praha.spark.kafka import ClusterClient
    from praha.spark.options import parse_bootstrap

    with ClusterClient(parse_bootstrap({"kafka.bootstrap.servers": bootstrap})) as c:
        tps = c.refresh([INPUT]).partitions_of(INPUT)
        return sum(c.list_offsets({tp: -1 for tp in tps}, 60, 500).values())


def processed_offsets(q: Any) -> int:
    p = q.lastProgress
    if not p:
        return 0
    end = p["sources"][0]["endOffset"]
    end = json.loads(end) if isinstance(end, str) else end
    return sum(int(v) for parts in (end or {}).values() for v in parts.values())


def spark_session(master: str | None, out_dir: Path) -> Any:
    """local[2] (task retries on), or the given cluster with praha shipped to its executors."""
    from praha.spark import local_session, package_zip, session

    if not master:
        return local_session("praha-showcase", cores=2, task_retries=8, quiet=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    return session(master, "praha-showcase", quiet=True, py_files=[package_zip(str(out_dir))],
                   conf={"spark.task.maxFailures": "8", "spark.sql.shuffle.partitions": "2"})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python examples/showcase.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=600, help="page views per second (default 600)")
    ap.add_argument("--seconds", type=float, default=70,
                    help="how long to produce once the stream runs (default 70, at least 60: the faults need it)")
    ap.add_argument("--keep-running", action="store_true", help="leave the cluster running at the end")
    ap.add_argument("--spark-master", default=None, metavar="URL",
                    help="run the streaming job on this Spark cluster (e.g. spark://HOST:7077; praha is shipped "
                         "to its executors as a zip) instead of local[2]")
    args = ap.parse_args(argv)

    home = DEFAULT_DIR.parent
    cluster_dir, out_dir = DEFAULT_DIR, home / "showcase"
    cluster = LocalCluster(cluster_dir)
    t_start = time.monotonic()
    say("praha showcase: a Spark pipeline on a 3-broker praha cluster, with a leader and a controller crash")
    if cluster.exists():
        say(f"stopping the cluster left in {cluster.root} and cleaning it")
        try:
            cluster.down(progress=lambda m: say(f"  {m}"))
        except Exception as e:  # noqa: BLE001 - a broken leftover directory is removed anyway
            say(f"  ({e})")
    shutil.rmtree(cluster_dir, ignore_errors=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    spark = None
    q = None
    stop_producer = threading.Event()
    try:
        say("starting ZooKeeper and 3 brokers ...")
        state = cluster.up(3, overrides=BROKER_CONFIG, progress=lambda m: say(f"  {m}"))
        zk = state.zookeeper
        bootstrap = ",".join(b.address for b in state.brokers.values())
        create_topics(bootstrap)
        wait_leaders(zk)
        say(f"topics {INPUT} (6 partitions) and {OUTPUT} (3 partitions): RF 3, min.insync.replicas=2")
        say(f"starting Spark ({args.spark_master or 'local[2]'}) ...")
        spark = spark_session(args.spark_master, out_dir)
        tail = StateChangeTail(cluster.root, t_start)
        tail.skip_existing()
        stats = ProducerStats()
        marks = Marks()
        producer = threading.Thread(target=run_producer, args=(bootstrap, args.rate, stats, stop_producer),
                                    name="producer", daemon=True)
        q = start_stream(spark, bootstrap, out_dir / "checkpoint")
        t0 = time.monotonic()
        tail.t0 = t0
        producer.start()
        say(f"producing {args.rate} page views/s; streaming job: praha → {WINDOW_S}s windowed counts per page "
            "→ praha; waiting for its first micro-batch ...", t0)
        while q.lastProgress is None or q.lastProgress["numInputRows"] == 0:
            if q.exception() is not None:
                raise RuntimeError(f"the streaming query failed: {q.exception()}")
            tail.poll()
            time.sleep(0.2)
        live = time.monotonic() - t0
        say(f"the stream is running; faults at +10 s, +25 s, +40 s, +55 s; producing until +{args.seconds:.0f} s", t0)
        schedule = [(live + 10, "kill-leader"), (live + 25, "restart-leader"), (live + 40, "kill-controller"),
                    (live + 55, "restart-controller"), (live + max(args.seconds, 60), "stop-producer")]
        victims: dict[str, int] = {}
        seen = {"batch": -1}

        def tick() -> None:
            """Print new state-change events; record finished micro-batches; fail fast."""
            tail.poll()
            p = q.lastProgress
            if p and p["batchId"] != seen["batch"]:
                seen["batch"] = p["batchId"]
                marks.batches.append((time.monotonic() - t0, int(p["numInputRows"]),
                                      p["durationMs"].get("triggerExecution", 0) / 1000))
            if q.exception() is not None:
                raise RuntimeError(f"the streaming query failed: {q.exception()}")

        last_status = 0.0
        while True:
            now = time.monotonic() - t0
            tick()
            if schedule and now >= schedule[0][0]:
                _, action = schedule.pop(0)
                if action == "stop-producer":
                    stop_producer.set()
                else:
                    inject(action, cluster, zk, victims, marks, t0, tick)
            if now - last_status >= 5:
                last_status = now
                say(f"produced {stats.sent} (acked {len(stats.acked_ids)}), stream read {processed_offsets(q)} "
                    f"in {seen['batch'] + 1} micro-batches", t0)
            if stats.done.is_set() and not schedule:
                break
            time.sleep(0.2)
        send_end_markers(bootstrap)
        total = input_end_offsets(bootstrap)
        say(f"producer done: {len(stats.acked_ids)} acknowledged; end-of-stream markers sent (event time +2 min, "
            f"so the watermark closes every window); waiting for the job to read all {total} records", t0)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            tick()
            p = q.lastProgress
            open_windows = (p or {}).get("stateOperators", [{}])[0].get("numRowsTotal", 1 << 30) if p else 1 << 30
            if processed_offsets(q) >= total and open_windows <= 1:
                break
            time.sleep(0.3)
        caught_up = time.monotonic() - t0
        say(f"the job caught up ({processed_offsets(q)} records read)", t0)
        q.stop()
        tail.poll()
        say("checking in batch: every record in the log, every record counted once ...", t0)
        check = final_check(spark, bootstrap, stats)
        report(stats, marks, tail, check, caught_up, t0, out_dir)
        ok = check["ok"]
    finally:
        stop_producer.set()
        if q is not None and q.isActive:
            q.stop()
        if spark is not None:
            spark.stop()
        if cluster.exists() and not args.keep_running:
            say("stopping the cluster (every process by PID) ...")
            cluster.down(progress=lambda m: say(f"  {m}"))
    if args.keep_running:
        say(f"the cluster is still running in {cluster.root}: `praha cluster status`, "
            "stop it with `praha cluster down`")
    else:
        say(f"cluster stopped; its logs stay in {cluster.root}. Start a cluster again with "
            "`.venv/bin/praha cluster up --brokers 3` (or rerun `make run`); "
            f"operations report: `.venv/bin/praha analyze state-change-log --path {cluster_dir}`")
    say(f"done in {time.monotonic() - t_start:.0f} s: " + ("PASS, nothing lost" if ok else "FAIL (see above)"))
    return 0 if ok else 1


def inject(action: str, cluster: LocalCluster, zk: str, victims: dict[str, int], marks: Marks, t0: float,
           tick: Callable[[], None]) -> None:
    now = time.monotonic() - t0
    if action == "kill-leader":
        # the leader of a partition, not the controller (that comes next)
        from praha.admin.status import cluster_status

        st = cluster_status(zk)
        controller = st["controller"]["id"]
        part = next(p for p in st["topics"][INPUT]["partitions"] if p["leader"] != controller)
        victim = part["leader"]
        victims["leader"] = victim
        say(f"✖ killing broker {victim}, leader of {INPUT}-{part['partition']} "
            f"(SIGKILL, pid {cluster.kill_broker(victim)})", t0)
        marks.faults.append((now, f"kill leader {victim}"))
        took = recover_time(zk, lambda s: all(p["leader"] not in (-1, victim) and not p["offline"]
                                              for p in s["topics"][INPUT]["partitions"]), tick)
        marks.recoveries["leader"] = took
        say(f"  every {INPUT} partition has a live leader again {took:.1f} s after the kill", t0)
    elif action == "kill-controller":
        _, controller = leader_of(zk, INPUT, 0)
        victims["controller"] = controller
        say(f"✖ killing broker {controller}, the controller (SIGKILL, pid {cluster.kill_broker(controller)})", t0)
        marks.faults.append((now, f"kill controller {controller}"))
        took = recover_time(zk, lambda s: s["controller"]["id"] not in (-1, controller), tick)
        marks.recoveries["controller"] = took
        took_p = recover_time(zk, lambda s: all(p["leader"] not in (-1, controller) and not p["offline"]
                                                for p in s["topics"][INPUT]["partitions"]), tick)
        marks.recoveries["controller_partitions"] = took + took_p
        say(f"  a new controller {took:.1f} s after the kill; its partitions led again after {took + took_p:.1f} s", t0)
    else:
        victim = victims["leader" if action == "restart-leader" else "controller"]
        b = cluster.start_broker(victim, timeout=90)
        say(f"↻ broker {victim} restarted (pid {b.pid})", t0)
        marks.faults.append((time.monotonic() - t0, f"restart {victim}"))


def final_check(spark: Any, bootstrap: str, stats: ProducerStats) -> dict[str, Any]:
    from pyspark.sql import functions as F

    def read(topic: str) -> Any:
        return spark.read.format("praha").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load()

    views = (read(INPUT).select("timestamp",
                                F.from_json(F.col("value").cast("string"), "id long, page string").alias("e"))
             .where(F.col("e.page") != END))
    ids = [r.id for r in views.select(F.col("e.id").alias("id")).collect()]
    in_log = set(ids)
    missing = stats.acked_ids - in_log
    duplicates = len(ids) - len(in_log)
    expected = (views.groupBy(F.window("timestamp", f"{WINDOW_S} seconds"), F.col("e.page").alias("page")).count()
                .select(F.concat_ws("|", F.col("window.start").cast("long").cast("string"), "page").alias("key"),
                        F.col("count").alias("expected")))
    outputs = read(OUTPUT).select(F.col("key").cast("string").alias("key"),
                                  F.from_json(F.col("value").cast("string"), "count long").alias("v"))
    final = outputs.groupBy("key").agg(F.max("v.count").alias("counted"), F.count("*").alias("updates"))
    joined = expected.join(final, "key", "full_outer")
    rows = joined.collect()
    wrong = [r for r in rows if r.expected != r.counted]
    counted = sum(r.counted or 0 for r in rows)
    return {
        "acked": len(stats.acked_ids), "in_log": len(ids), "distinct_in_log": len(in_log),
        "missing": len(missing), "duplicates_in_log": duplicates, "windows": len(rows),
        "wrong_windows": len(wrong), "counted": counted, "updates": sum(r.updates or 0 for r in rows),
        "failed_sends": sum(stats.failed.values()), "sample_wrong": [tuple(r) for r in wrong[:3]],
        "ok": not missing and not wrong and counted == len(ids),
    }


def report(stats: ProducerStats, marks: Marks, tail: StateChangeTail, check: dict[str, Any], caught_up: float,
           t0: float, out_dir: Path) -> None:
    acked = check["acked"]
    per_s = stats.acked_per_second
    span = (max(per_s) - min(per_s) + 1) if per_s else 1
    stream_rows = sum(r for _, r, _ in marks.batches)
    busy = sum(d for _, _, d in marks.batches) or 1
    print()
    print("=" * 72)
    print("praha showcase report")
    print("=" * 72)
    print(f"records produced (acks=all)  {stats.sent} sent, {acked} acknowledged, {check['failed_sends']} failed")
    print(f"records in {INPUT:<16} {check['in_log']} ({check['distinct_in_log']} distinct ids, "
          f"{check['duplicates_in_log']} producer retry duplicates)")
    print(f"acknowledged but missing     {check['missing']}")
    print(f"windowed counts              {check['windows']} (window, page) keys, {check['wrong_windows']} wrong, "
          f"sum {check['counted']} = records in the log: {check['counted'] == check['in_log']}")
    print(f"sink records                 {check['updates']} for {check['windows']} windows "
          "(append mode: one final count per window; more only if a retried task wrote one twice, "
          "which the at-least-once sink allows)")
    print(f"produce throughput           {acked / span:.0f} records/s average, {max(per_s.values(), default=0)} peak")
    print(f"stream throughput            {stream_rows / busy:.0f} records/s while processing; "
          f"{len(marks.batches)} micro-batches; caught up {caught_up:.0f} s after the start")
    elections = ", ".join(f"{k} {v}" for k, v in sorted(tail.elections.items())) or "none"
    print(f"elections (partitions)       {elections}")
    print(f"controller elections         {len(tail.controller_elections)}; failover (controller work) "
          + ", ".join(f"{ms:.0f} ms" for ms in tail.failovers_ms))
    timeout_s = int(BROKER_CONFIG["zookeeper.session.timeout.ms"]) / 1000
    for key, label in (("leader", "leader kill → all led again"), ("controller", "controller kill → new one"),
                       ("controller_partitions", "controller kill → all led")):
        if key in marks.recoveries:
            print(f"{label:<28} {marks.recoveries[key]:.1f} s "
                  f"(mostly the ZooKeeper session timeout, {timeout_s:.0f} s, before the crash is noticed)")
    verdict = "PASS: every acknowledged record is in the log and counted once" if check["ok"] else "FAIL"
    print(f"result                       {verdict}")
    if not check["ok"]:
        print(f"  sample of wrong windows: {check['sample_wrong']}")
    png = plot(stats, marks, tail, t0, out_dir / "throughput.png")
    print(f"plot                         {png}")
    print("=" * 72)


def plot(stats: ProducerStats, marks: Marks, tail: StateChangeTail, t0: float, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wall0 = time.time() - (time.monotonic() - t0)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
    secs = sorted(stats.acked_per_second)
    xs = [s - wall0 for s in secs]
    top.step(xs, [stats.acked_per_second[s] for s in secs], where="post", label="produced (acknowledged) records/s",
             color="tab:blue")
    bx = [t for t, _, _ in marks.batches]
    rates = [r / max(t - (bx[i - 1] if i else t - d), 0.001) for i, (t, r, d) in enumerate(marks.batches)]
    top.step(bx, rates, where="pre", color="tab:green", label="stream: rows read / s (per micro-batch)")
    top.set_ylabel("records / s")
    cum_p, total = [], 0
    for s in secs:
        total += stats.acked_per_second[s]
        cum_p.append(total)
    bottom.step(xs, cum_p, where="post", color="tab:blue", label="produced (acknowledged), cumulative")
    cum_s, total = [], 0
    for _, r, _ in marks.batches:
        total += r
        cum_s.append(total)
    bottom.step(bx, cum_s, where="post", color="tab:green", label="read by the stream, cumulative")
    bottom.set_ylabel("records")
    bottom.set_xlabel("seconds since the stream started")
    for ax in (top, bottom):
        for t, label in marks.faults:
            color = "tab:red" if label.startswith("kill") else "tab:olive"
            ax.axvline(t, color=color, linestyle="--", alpha=0.8)
        for t, _broker, _epoch in tail.controller_elections:
            ax.axvline(t - t0, color="tab:purple", linestyle=":", alpha=0.8)
        ax.grid(alpha=0.3)
    ymax = top.get_ylim()[1]
    for t, label in marks.faults:
        top.text(t, ymax * 0.97, f" {label}", rotation=90, va="top", fontsize=8)
    for t, broker, _epoch in tail.controller_elections:
        top.text(t - t0, ymax * 0.5, f" controller → {broker}", rotation=90, va="top", fontsize=8, color="tab:purple")
    top.legend(loc="lower left", fontsize=8)
    bottom.legend(loc="upper left", fontsize=8)
    top.set_title("praha showcase: throughput with a leader crash and a controller crash")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


if __name__ == "__main__":
    sys.exit(main())
