"""Failure of a broker leading P partitions: from the controller seeing its znode vanish to
every partition's new leader acknowledged, against the raw ZooKeeper write limit.

For each size P (topics of 100 partitions, RF 3):
  1. a fresh embedded ZooKeeper pre-loaded with multi-ops: every partition led by stand-in
     broker 2, its two followers rotating over stand-ins 3..6 (ISR = all three);
  2. stand-ins 2..6 (`_harness`); stand-in 2 registers `/brokers/ids/2` in a ZooKeeper session
     of its own — closing that session is its death (ZooKeeper deletes the ephemeral znode at
     once, as it would after a SIGKILL once the session times out; the session timeout itself
     is not part of what is timed);
  3. per trial: put every state back (leader 2), re-register stand-in 2, time the raw limit
     (P fenced conditional writes of the same state znodes in multi-ops of 100), start the
     real broker 1 (the controller; it hosts no replica), wait until it is quiet; close
     stand-in 2's session; timed from broker 1's `BrokerChange` state-change line (its event
     thread has the new broker list: the controller has seen the znode vanish) to the moment
     the last LeaderAndIsr naming a new leader was answered by the surviving replicas (the
     stand-ins record when they answer; request bodies are decoded after the measurement).
     Also reported: from closing the session (watch delivery included), and the end of the
     controller's offline election (`PartitionStateChange` line).
Target: under 1 s at 10k. Figures, not asserts; medians.

Usage: .venv/bin/python bench/broker_failure.py [--sizes 1000,10000,50000] [--repeat 3]
       [--py-spy DIR] [--no-write]
"""
from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    LoadMeter,
    Rig,
    common_args,
    current_controller_epoch,
    fmt_s,
    machine_line,
    median,
    partitions_of,
    plot_vs_raw,
    preload,
    raw_fenced_writes,
    reset_states,
    topic_names,
    work_root,
    write_section,
)

DYING = 2
FOLLOWERS = (3, 4, 5, 6)
TARGET_S_AT_10K = 1.0
HEADING = "## Broker failure"


def assign(g: int) -> tuple[int, ...]:
    return (DYING, FOLLOWERS[g % 4], FOLLOWERS[(g + 1) % 4])


@dataclass
class Trial:
    raw_s: float
    failure_s: float = float("nan")      # BrokerChange line → last new-leader LeaderAndIsr answered
    from_close_s: float = float("nan")   # session closed → the same
    seen_s: float = float("nan")         # session closed → BrokerChange line
    elected_s: float = float("nan")      # BrokerChange line → offline election's PartitionStateChange line
    missing: int = 0
    other_load: float = float("nan")


def run_size(p: int, args, root: Path) -> list[Trial]:
    topics = topic_names(p, args.partitions_per_topic)
    tps = partitions_of(topics)
    replicas = {tp: assign(g) for g, tp in enumerate(tps)}
    print(f"\n== P = {p:,}: broker {DYING} leads all ({len(topics)} topics, RF 3)", flush=True)
    rig = Rig(root, f"bf-{p}", args, own_sessions={DYING})
    trials: list[Trial] = []
    try:
        rig.start()
        t = time.perf_counter()
        preload(rig.store, topics, assign)
        print(f"  pre-loaded in {time.perf_counter() - t:.1f}s", flush=True)
        sink = rig.sinks[DYING]
        for i in range(args.repeat):
            if i:
                reset_states(rig.store, topics, assign, controller_epoch=current_controller_epoch(rig.store)[0])
                rig.register(DYING)
            raw = raw_fenced_writes(rig.store, tps)
            trial = Trial(raw)
            trials.append(trial)
            b = rig.start_controller(args.timeout)
            try:
                rig.forget_requests()
                meter = LoadMeter([b.pid, rig.zk.pid])
                t0 = time.time()
                sink.close_session()
                seen = rig.tail.wait(lambda ls: any(ln.get("dead") == [DYING] for ln in ls), ["BrokerChange"],
                                     args.timeout, b.alive)
                t_seen = next(ln for ln in seen if ln.get("dead") == [DYING])["time_ms"] / 1000.0
                trial.seen_s = t_seen - t0
                elected = rig.tail.wait(
                    lambda ls: any(ln.get("election") == "offline" for ln in ls), ["PartitionStateChange"],
                    args.timeout, b.alive)
                line = next(ln for ln in elected if ln.get("election") == "offline")
                trial.elected_s = line["time_ms"] / 1000.0 - t_seen
                rig.quiet_stand_ins(t0, args.timeout, expect=FOLLOWERS)
                trial.other_load = meter.other_share()
                last, trial.missing = rig.acked(t0, lambda tp, leader, _e: leader not in (DYING, -1), tps,
                                                lambda tp: [r for r in replicas[tp] if r != DYING])
                trial.failure_s = last - t_seen
                trial.from_close_s = last - t0
            finally:
                rig.stop_controller()
            print(f"  trial {i + 1}: raw limit {raw:6.3f}s  BrokerChange → new leaders acknowledged "
                  f"{fmt_s(trial.failure_s)}s (election done at {fmt_s(trial.elected_s)}s; from the session "
                  f"close {fmt_s(trial.from_close_s)}s, seen after {fmt_s(trial.seen_s)}s)  missing {trial.missing}; "
                  f"other load {trial.other_load * 100:.0f}% of the CPUs", flush=True)
    finally:
        rig.close()
    return trials


def summarise(results: dict[int, list[Trial]]) -> list[dict]:
    rows = []
    for p, trials in results.items():
        row = {
            "P": p,
            "raw_s": median([t.raw_s for t in trials]),
            "time_s": median([t.failure_s for t in trials]),
            "from_close_s": median([t.from_close_s for t in trials]),
            "seen_s": median([t.seen_s for t in trials]),
            "elected_s": median([t.elected_s for t in trials]),
            "missing": max(t.missing for t in trials),
            "other_load": median([t.other_load for t in trials]),
            "trials": len(trials),
        }
        row["ratio"] = row["time_s"] / row["raw_s"]
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    head = ("| P (led by the dead broker) | BrokerChange → new leaders acknowledged s | raw limit s | ratio | "
            "offline election done s | from the session close s | other load | trials |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    return head + "".join(
        f"| {r['P']:,} | {fmt_s(r['time_s'])} | {fmt_s(r['raw_s'])} | {r['ratio']:.2f} | {fmt_s(r['elected_s'])} | "
        f"{fmt_s(r['from_close_s'])} | {r['other_load'] * 100:.0f}% | {r['trials']} |\n" for r in rows)


def verdicts(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        out.append(f"P={r['P']:,}: {fmt_s(r['time_s'])}s = {r['ratio']:.2f}x the raw limit")
        if r["P"] == 10_000:
            ok = r["time_s"] < TARGET_S_AT_10K
            out.append(f"P=10,000: {fmt_s(r['time_s'])}s ({'meets' if ok else 'MISSES'} < {TARGET_S_AT_10K:g} s)")
        if r["missing"]:
            out.append(f"P={r['P']:,}: {r['missing']} partitions never acknowledged with a new leader")
    return out


def section(rows: list[dict], command: str) -> str:
    return (
        f"{HEADING}\n\n"
        f"Command: `{command}`\n\n"
        f"Machine: {machine_line()}. ZooKeeper 3.9 embedded (forceSync=no); broker 1 is a real broker "
        "process and the controller (it hosts no replica); brokers 2-6 are stand-ins (`bench/_harness.py`).\n\n"
        f"What is timed: stand-in {DYING} leads all P partitions (RF 3, followers rotating over 3-6) and holds "
        "`/brokers/ids/2` in a ZooKeeper session of its own; the bench closes that session (ZooKeeper deletes "
        "the ephemeral znode at once; a SIGKILLed broker's znode goes when its session times out, which is not "
        "timed here). From broker 1's `BrokerChange` state-change line (the controller has read the new broker "
        "list) until the last surviving replica had answered a LeaderAndIsr naming the partition's new leader "
        "(the stand-ins record when they answer; bodies decoded afterwards). *Offline election done*: the "
        "controller's `PartitionStateChange` line for the offline election, from the same start. *From the "
        "session close*: the same end, from the close (watch delivery and event queueing included). *Raw limit*: "
        "P fenced conditional writes of the same state znodes in multi-ops of 100 (`ZkStore.fenced_multi`), "
        "timed in the same trial before broker 1 starts. Medians over the trials.\n\n"
        + table(rows) + "\n"
        + "".join(f"- {v}\n" for v in verdicts(rows))
        + "\nPlot: `bench/broker_failure.png` (log-log).\n"
    )


def main() -> int:
    ap = common_args(__doc__.split("\n")[0])
    ap.add_argument("--plot", default=str(Path(__file__).resolve().parent / "broker_failure.png"))
    args = ap.parse_args()
    root, remove = work_root(args)
    results: dict[int, list[Trial]] = {}
    try:
        for p in [int(s) for s in args.sizes.split(",") if s.strip()]:
            results[p] = run_size(p, args, root)
    finally:
        if remove:
            shutil.rmtree(root, ignore_errors=True)
    rows = summarise(results)
    print("\n" + table(rows))
    for v in verdicts(rows):
        print(v)
    if not args.no_write:
        command = ("python bench/broker_failure.py " + " ".join(sys.argv[1:])).strip()
        write_section(Path(args.results), HEADING, section(rows, command))
        plot_vs_raw(Path(args.plot), "broker failure: BrokerChange → new leaders acknowledged", rows,
                    [("time_s", "BrokerChange → new leaders acknowledged", "o-"),
                     ("elected_s", "→ offline election done (controller)", "x-.")],
                    target_s=TARGET_S_AT_10K)
        print(f"\nwrote {args.results} and {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
