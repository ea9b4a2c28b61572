"""Creation of one topic of P partitions (RF 3): from the assignment znode's write to every
partition online with an acknowledged leader, against the raw ZooKeeper write limit; and the
brokers' memory.

For each size P, per trial:
  1. one embedded ZooKeeper per size (warmed up: P scratch state znodes created and deleted
     first), stand-ins 2..6 (`harness`) registered in the bench's session; per trial a fresh
     real broker 1 (the controller; it hosts no replica), waited for until quiet; its RSS is
     read;
  2. `ZkStore.create_topic` as the admin tool does it: the config znode, then the assignment
     znode `/brokers/topics/<t>` naming all P partitions (replicas rotating over 2..6) — one
     write the controller watches. Timed from that write until every replica of every
     partition had answered a LeaderAndIsr naming the partition's leader (the stand-ins record
     when they answer; bodies decoded after the measurement). Also: the controller's
     `PartitionStateChange` line for the new partitions (state znodes created);
  3. broker 1's RSS again once quiet (it now holds P partitions in its controller context and
     its metadata cache); then the raw limit, with broker 1 idle: P fenced conditional writes
     of the new state znodes in multi-ops of 100 (`ZkStore.fenced_multi`), and, for reference,
     P fenced creates of state znodes under a scratch path (parents made beforehand, untimed);
     broker 1 is stopped and the topic's znodes deleted.
With --hosting-sizes 1000,5000: one more run per such size with a second real broker (7) that
leads every partition of another topic of P partitions (followers on the stand-ins, which
never fetch), timed until its `praha_broker_leader_partitions` figure says P, and its RSS
before and after (logs created for P partitions). Each hosted partition keeps files open, so
the process's open-file limit (`ulimit -n`) bounds P.
Target: under 2 s at 10k. Figures, not asserts; medians.

Usage: .venv/bin/python bench/topic_create.py [--sizes 1000,10000,50000] [--repeat 3]
       [--hosting-sizes 1000,5000] [--py-spy DIR] [--no-write]
"""
from __future__ import annotations

import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# ruff: noqa: F405 - names from the shared bench machinery's star import below
from harness import *  # noqa: E402,F403 - the shared bench machinery (bench/harness/)

from praha.common import (  # noqa: E402
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from praha.zk import znodes as zn  # noqa: E402
from praha.zk.ops import CreateOp, WriteOutcome  # noqa: E402

HEADING = "## Topic creation"
TARGET_S_AT_10K = 2.0
TOPIC = "bench-created"
HOSTING_BROKER = 7
assign = rotation(STAND_INS)


@dataclass
class Trial:
    raw_s: float = float("nan")
    raw_create_s: float = float("nan")
    time_s: float = float("nan")       # assignment znode written → every replica acknowledged its leader
    line_s: float = float("nan")       # → PartitionStateChange (new) line
    rss_before_mb: float = float("nan")
    rss_after_mb: float = float("nan")
    missing: int = 0
    other_load: float = float("nan")


def raw_fenced_creates(store, p: int) -> float:
    """P fenced creates of state znodes (same content as the controller writes) under a scratch
    path, parents created beforehand (untimed); the scratch tree is deleted afterwards."""
    base = "/bench_raw"
    epoch, version = current_controller_epoch(store)
    store.multi([CreateOp(base)] + [CreateOp(f"{base}/{i}") for i in range(p)])
    state = zn.encode_partition_state(LeaderIsrAndControllerEpoch(LeaderAndIsr(2, (2, 3, 4), 0, 0), epoch))
    ops = [CreateOp(f"{base}/{i}/state", state) for i in range(p)]
    t = time.perf_counter()
    results = store.fenced_multi(ops, version)
    elapsed = time.perf_counter() - t
    if any(r.outcome is not WriteOutcome.OK for r in results):
        raise RuntimeError("raw creates failed")
    store.delete_recursive([base])
    return elapsed


def run_trial(rig: Rig, p: int, args, i: int) -> Trial:
    """One creation on `rig`'s ZooKeeper, with a fresh broker 1; the topic's znodes are deleted
    afterwards (broker 1 stopped), so every trial starts from an empty cluster."""
    trial = Trial()
    topic = f"{TOPIC}-{i}"
    tps = [TopicPartition(topic, k) for k in range(p)]
    replicas = {tp: assign(tp.partition) for tp in tps}
    with rig.controller_trial() as (b, meter):
        trial.rss_before_mb = b.rss_mb()
        ta = TopicAssignment({k: ReplicaAssignment(assign(k)) for k in range(p)})
        rig.store.set_topic_config(topic, {})  # create_topic writes it first; done here so t0 is the assignment
        t0 = time.time()
        rig.store.create_topic(topic, ta)
        line = rig.first_line("PartitionStateChange", lambda ln: ln.get("election") == "new")
        trial.line_s = line["time_ms"] / 1000.0 - t0
        last = rig.acknowledged(trial, t0, meter, STAND_INS, lambda tp, leader, _e: leader == replicas[tp][0], tps,
                                lambda tp: replicas[tp])
        trial.time_s = last - t0
        rig.settle(args.timeout)
        trial.rss_after_mb = b.rss_mb()
        trial.raw_s = raw_fenced_writes(rig.store, tps)
        trial.raw_create_s = raw_fenced_creates(rig.store, p)
    rig.store.delete_recursive([zn.topic_path(topic), zn.config_topic_path(topic)])
    return trial


def run_size(p: int, args, root: Path) -> list[Trial]:
    """--repeat creations of a P-partition topic on one warmed-up ZooKeeper."""
    print(f"\n== P = {p:,}: one topic, RF 3", flush=True)
    trials: list[Trial] = []
    with Rig(root, f"tc-{p}", args, jute_maxbuffer=16 << 20) as rig:
        warm_up(rig, p)
        for i in range(args.repeat):
            t = run_trial(rig, p, args, i)
            trials.append(t)
            print(f"  trial {i + 1}: leaders acknowledged {fmt_s(t.time_s)}s (state znodes at "
                  f"{fmt_s(t.line_s)}s)  raw limit {fmt_s(t.raw_s)}s, raw creates {fmt_s(t.raw_create_s)}s  "
                  f"broker 1 RSS {t.rss_before_mb:.0f} → {t.rss_after_mb:.0f} MB  missing {t.missing}; "
                  f"other load {t.other_load * 100:.0f}% of the CPUs", flush=True)
    return trials


def warm_up(rig: Rig, p: int) -> None:
    """A fresh ZooKeeper JVM creates its first few thousand znodes several times slower than
    later ones: create (and delete) P scratch state znodes first, untimed."""
    raw_fenced_creates(rig.store, p)


def run_hosting(p: int, args, root: Path) -> dict:
    """A real broker 7 leading every partition of a P-partition topic: time and RSS."""
    rig = Rig(root, f"tc-host-{p}", args, jute_maxbuffer=16 << 20)
    out: dict = {}
    host: BrokerProcess | None = None
    try:
        rig.start()
        rig.start_controller(args.timeout)
        host = BrokerProcess(root / f"broker-7-{p}", rig.zk.connect_string, broker_id=HOSTING_BROKER)
        host.start()
        host.wait_controller_started(args.timeout, active=False)
        wait_until(lambda: host.metrics().get("praha_broker_highest_controller_epoch_seen", 0) >= 1, args.timeout,
                   "broker 7 to hear from the controller", step=0.05)
        time.sleep(1.0)
        out["rss_before_mb"] = host.rss_mb()
        others = [s for s in STAND_INS if s != 2]
        ta = TopicAssignment({k: ReplicaAssignment((HOSTING_BROKER, others[k % 4], others[(k + 1) % 4]))
                              for k in range(p)})
        rig.store.set_topic_config("bench-hosted", {})
        t0 = time.time()
        rig.store.create_topic("bench-hosted", ta)
        led = {"n": 0.0}

        def leads_all() -> bool:
            try:
                led["n"] = host.metrics().get("praha_broker_leader_partitions", 0)
            except Exception:  # noqa: BLE001 - busy: the metrics endpoint did not answer in time
                return False
            return led["n"] >= p

        try:
            wait_until(leads_all, args.timeout, "broker 7 to lead every partition", step=0.05)
            out["time_s"] = time.time() - t0
        except RuntimeError:
            out["time_s"] = float("nan")
            print(f"  broker 7 led {led['n']:.0f} of {p:,} partitions after {args.timeout:.0f}s")
        out["led"] = led["n"]
        t = time.monotonic()
        while time.monotonic() - t < args.timeout:  # until its CPU is quiet
            c0 = host.cpu_s()
            time.sleep(0.6)
            if host.cpu_s() - c0 < 0.06:
                break
        out["rss_after_mb"] = host.rss_mb()
        out["controller_rss_mb"] = rig.broker.rss_mb()
    finally:
        if host is not None:
            host.stop()
            clear_broker(rig.store, HOSTING_BROKER)
        rig.close()
    return out


def summarise(results: dict[int, list[Trial]]) -> list[dict]:
    rows = summarise_trials(results, {"raw_s": "raw_s", "raw_create_s": "raw_create_s", "time_s": "time_s",
                                      "line_s": "line_s", "rss_before_mb": "rss_before_mb",
                                      "rss_after_mb": "rss_after_mb", "other_load": "other_load"},
                            {"missing": (max, "missing")})
    for row in rows:
        row["ratio"] = row["time_s"] / row["raw_s"]
    return rows


def table(rows: list[dict]) -> str:
    return md_table([("P", "{P:,}"), ("znode written → leaders acknowledged s", secs("time_s")),
                     ("raw limit s", secs("raw_s")), ("ratio", "{ratio:.2f}"),
                     ("state znodes created s", secs("line_s")), ("raw fenced creates s", secs("raw_create_s")),
                     ("broker 1 RSS before → after MB", "{rss_before_mb:.0f} → {rss_after_mb:.0f}"),
                     OTHER_LOAD, TRIALS], rows)


def hosting_table(hosting: dict[int, dict]) -> str:
    if not hosting:
        return ""
    return ("| P | real broker 7 leads all s | partitions it led at the end | broker 7 RSS before → after MB | "
            "controller RSS MB |\n|---:|---:|---:|---:|---:|\n" + "".join(
                f"| {p:,} | {fmt_s(h['time_s'])} | {h.get('led', 0):,.0f} | {h['rss_before_mb']:.0f} → "
                f"{h['rss_after_mb']:.0f} | {h['controller_rss_mb']:.0f} |\n" for p, h in sorted(hosting.items())))


def verdicts(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        out.append(f"{ratio_verdict(r)}; broker 1 RSS +{r['rss_after_mb'] - r['rss_before_mb']:.0f} MB")
        out += target_verdicts(r, TARGET_S_AT_10K) + missing_verdicts(r)
    return out


def section(rows: list[dict], hosting: dict[int, dict], command: str) -> str:
    host = hosting_table(hosting)
    return section_text(
        HEADING, command, rig_machine(),
        "What is timed: one topic of P partitions (RF 3 rotating over 2-6) created as the admin tool does "
        "(`ZkStore.create_topic`: config znode, then the assignment znode); from the assignment znode's write "
        "until every replica of every partition had answered a LeaderAndIsr naming its leader (stand-ins record "
        "when they answer; bodies decoded afterwards). *State znodes created*: the controller's "
        "`PartitionStateChange` line for the new partitions. *Raw limit*: P fenced conditional writes of the new "
        "state znodes in multi-ops of 100 (`ZkStore.fenced_multi`), broker 1 idle; *raw fenced creates*: P "
        "fenced creates of state znodes (parents made beforehand), for reference — the controller creates "
        "`partitions/<p>` and `partitions/<p>/state`, 2P znodes. *RSS*: broker 1 (controller context and "
        "metadata cache of P partitions), idle before and after. Each trial with a fresh broker 1 on an empty "
        "cluster (one ZooKeeper per size, warmed up by P scratch creates). "
        "Medians over the trials.",
        table(rows), verdicts(rows), "topic_create.png",
        ("\nA real broker hosting the partitions (`--hosting-sizes`): broker 7, a second real broker, "
            "leads every partition of a P-partition topic (followers on stand-ins); from the assignment znode "
            "until its `praha_broker_leader_partitions` figure reached P (polled every 50 ms), and its RSS "
            f"(open-file limit here: {resource.getrlimit(resource.RLIMIT_NOFILE)[0]:,}; each hosted partition keeps "
            "its log files open, which bounds how many one broker process can host):\n\n"
         + host) if host else "")


def main() -> int:
    ap = common_args(__doc__, "topic_create.png")
    ap.add_argument("--hosting-sizes", default="", help="also measure a real broker hosting P partitions, "
                                                            "for these P (comma-separated)")
    args = ap.parse_args()
    results: dict[int, list[Trial]] = {}
    hosting: dict[int, dict] = {}
    with work_dir(args) as root:
        for p in sizes(args.sizes):
            results[p] = run_size(p, args, root)
        for p in sizes(args.hosting_sizes):
            print(f"\n== a real broker hosting {p:,} partitions", flush=True)
            hosting[p] = run_hosting(p, args, root)
            print(f"  real broker 7 leads {hosting[p].get('led', 0):,.0f} of {p:,}: {fmt_s(hosting[p]['time_s'])}s, "
                  f"RSS {hosting[p]['rss_before_mb']:.0f} → {hosting[p]['rss_after_mb']:.0f} MB", flush=True)
    rows = summarise(results)
    report_results(args, __file__, table(rows) + "\n" + hosting_table(hosting), verdicts(rows), HEADING,
                   lambda command: section(rows, hosting, command),
                   lambda: plot_vs_raw(Path(args.plot), "creation of a P-partition topic", rows,
                                       [("time_s", "assignment znode → leaders acknowledged", "o-"),
                                        ("line_s", "→ state znodes created (controller)", "x-.")],
                                       target_s=TARGET_S_AT_10K))
    return 0


if __name__ == "__main__":
    sys.exit(main())
