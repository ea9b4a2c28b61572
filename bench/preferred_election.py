"""Preferred-replica election of P partitions via `/admin/preferred_replica_election`, against
the raw ZooKeeper write limit.

For each size P (topics of 100 partitions, RF 3 rotating over stand-ins 2..6):
  1. a fresh embedded ZooKeeper (jute.maxbuffer raised to 16 MiB: the admin znode naming 50k
     partitions is ~2 MB) pre-loaded with multi-ops where leadership has moved away: every
     partition is led by its *second* replica, ISR = all three;
  2. stand-ins 2..6 (`_harness`), registered in the bench's session;
  3. per trial: put every state back (led by the second replica), time the raw limit (P
     fenced conditional writes of the same state znodes in multi-ops of 100), start the real
     broker 1 (the controller; hosts no replica; auto leader rebalance off) and wait until it
     is quiet; write `/admin/preferred_replica_election` naming all P partitions
     (`ZkStore.create_preferred_election`, as the admin tool); timed from that write to the
     moment every replica of every partition had answered a LeaderAndIsr naming the preferred
     (first) replica as leader (stand-ins record when they answer; bodies decoded after the
     measurement). Also: the controller's `PreferredReplicaElection` line and the admin
     znode's deletion.
Figures, not asserts; medians.

Usage: .venv/bin/python bench/preferred_election.py [--sizes 1000,10000,50000] [--repeat 3]
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
    STAND_INS,
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
    rotation,
    topic_names,
    wait_until,
    work_root,
    write_section,
)
from praha.zk import znodes as zn  # noqa: E402

HEADING = "## Preferred replica election"
TARGET_RATIO = 3.0
assign = rotation(STAND_INS)


def moved_away(_g: int, r: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    """Leadership moved to the second replica (e.g. after the first one restarted)."""
    return r[1], r


@dataclass
class Trial:
    raw_s: float
    time_s: float = float("nan")        # admin znode written → every replica acknowledged the preferred leader
    line_s: float = float("nan")        # → PreferredReplicaElection line (elections decided and written)
    znode_gone_s: float = float("nan")  # → admin znode deleted
    moved: int = 0
    missing: int = 0
    other_load: float = float("nan")


def run_size(p: int, args, root: Path) -> list[Trial]:
    topics = topic_names(p, args.partitions_per_topic)
    tps = partitions_of(topics)
    replicas = {tp: assign(g) for g, tp in enumerate(tps)}
    print(f"\n== P = {p:,}: all led by their second replica ({len(topics)} topics, RF 3)", flush=True)
    rig = Rig(root, f"pe-{p}", args, jute_maxbuffer=16 << 20)
    trials: list[Trial] = []
    try:
        rig.start()
        t = time.perf_counter()
        preload(rig.store, topics, assign, moved_away)
        print(f"  pre-loaded in {time.perf_counter() - t:.1f}s", flush=True)
        for i in range(args.repeat):
            if i:
                reset_states(rig.store, topics, assign, moved_away,
                             controller_epoch=current_controller_epoch(rig.store)[0])
            raw = raw_fenced_writes(rig.store, tps)
            trial = Trial(raw)
            trials.append(trial)
            b = rig.start_controller(args.timeout)
            try:
                rig.forget_requests()
                meter = LoadMeter([b.pid, rig.zk.pid])
                t0 = time.time()
                rig.store.create_preferred_election(tps)
                wait_until(lambda: rig.store.exists(zn.PREFERRED_REPLICA_ELECTION_PATH) is None, args.timeout,
                           "the admin znode's deletion", step=0.01)
                trial.znode_gone_s = time.time() - t0
                lines = rig.tail.wait(lambda ls: bool(ls), ["PreferredReplicaElection"], args.timeout, b.alive)
                trial.line_s = lines[0]["time_ms"] / 1000.0 - t0
                trial.moved = lines[0].get("moved", 0)
                rig.quiet_stand_ins(t0, args.timeout, expect=STAND_INS)
                trial.other_load = meter.other_share()
                last, trial.missing = rig.acked(t0, lambda tp, leader, _e: leader == replicas[tp][0], tps,
                                                lambda tp: replicas[tp])
                trial.time_s = last - t0
            finally:
                rig.stop_controller()
            print(f"  trial {i + 1}: raw limit {raw:6.3f}s  preferred election {fmt_s(trial.time_s)}s "
                  f"(decided at {fmt_s(trial.line_s)}s, znode gone at {fmt_s(trial.znode_gone_s)}s; moved "
                  f"{trial.moved:,}, missing {trial.missing}; other load {trial.other_load * 100:.0f}% of the CPUs)",
                  flush=True)
    finally:
        rig.close()
    return trials


def summarise(results: dict[int, list[Trial]]) -> list[dict]:
    rows = []
    for p, trials in results.items():
        row = {
            "P": p,
            "raw_s": median([t.raw_s for t in trials]),
            "time_s": median([t.time_s for t in trials]),
            "line_s": median([t.line_s for t in trials]),
            "znode_gone_s": median([t.znode_gone_s for t in trials]),
            "moved": min(t.moved for t in trials),
            "missing": max(t.missing for t in trials),
            "other_load": median([t.other_load for t in trials]),
            "trials": len(trials),
        }
        row["ratio"] = row["time_s"] / row["raw_s"]
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    head = ("| P | admin znode → preferred leaders acknowledged s | raw limit s | ratio | elections decided s | "
            "moved | other load | trials |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    return head + "".join(
        f"| {r['P']:,} | {fmt_s(r['time_s'])} | {fmt_s(r['raw_s'])} | {r['ratio']:.2f} | {fmt_s(r['line_s'])} | "
        f"{r['moved']:,} | {r['other_load'] * 100:.0f}% | {r['trials']} |\n" for r in rows)


def verdicts(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        ok = r["ratio"] <= TARGET_RATIO
        out.append(f"P={r['P']:,}: {fmt_s(r['time_s'])}s = {r['ratio']:.2f}x the raw limit "
                   f"({'within' if ok else 'over'} {TARGET_RATIO:g}x)")
        if r["missing"]:
            out.append(f"P={r['P']:,}: {r['missing']} partitions never acknowledged with their preferred leader")
    return out


def section(rows: list[dict], command: str) -> str:
    return (
        f"{HEADING}\n\n"
        f"Command: `{command}`\n\n"
        f"Machine: {machine_line()}. ZooKeeper 3.9 embedded (forceSync=no, jute.maxbuffer 16 MiB for the 50k "
        "admin znode); broker 1 is a real broker process and the controller (it hosts no replica; auto leader "
        "rebalance off); brokers 2-6 are stand-ins (`bench/_harness.py`).\n\n"
        "What is timed: every partition (RF 3 rotating over 2-6) is led by its second replica; the bench writes "
        "`/admin/preferred_replica_election` naming all P partitions (`ZkStore.create_preferred_election`), and "
        "times until every replica of every partition had answered a LeaderAndIsr naming the preferred (first) "
        "replica (stand-ins record when they answer; bodies decoded afterwards). *Elections decided*: the "
        "controller's `PreferredReplicaElection` line (states read, elected, written; requests not yet sent). "
        "*Raw limit*: P fenced conditional writes of the same state znodes in multi-ops of 100 "
        "(`ZkStore.fenced_multi`), timed in the same trial before broker 1 starts. Medians over the trials.\n\n"
        + table(rows) + "\n"
        + "".join(f"- {v}\n" for v in verdicts(rows))
        + "\nPlot: `bench/preferred_election.png` (log-log).\n"
    )


def main() -> int:
    ap = common_args(__doc__.split("\n")[0])
    ap.add_argument("--plot", default=str(Path(__file__).resolve().parent / "preferred_election.png"))
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
        command = ("python bench/preferred_election.py " + " ".join(sys.argv[1:])).strip()
        write_section(Path(args.results), HEADING, section(rows, command))
        plot_vs_raw(Path(args.plot), "preferred replica election of P partitions", rows,
                    [("time_s", "admin znode → preferred leaders acknowledged", "o-"),
                     ("line_s", "→ elections decided (controller)", "x-.")],
                    target_ratio=TARGET_RATIO)
        print(f"\nwrote {args.results} and {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
