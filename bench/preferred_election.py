"""Preferred-replica election of P partitions via `/admin/preferred_replica_election`, against
the raw ZooKeeper write limit.

For each size P (topics of 100 partitions, RF 3 rotating over stand-ins 2..6):
  1. a fresh embedded ZooKeeper (jute.maxbuffer raised to 16 MiB: the admin znode naming 50k
     partitions is ~2 MB) pre-loaded with multi-ops where leadership has moved away: every
     partition is led by its *second* replica, ISR = all three;
  2. stand-ins 2..6 (`harness`), registered in the bench's session;
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

import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# ruff: noqa: F405 - names from the shared bench machinery's star import below
from harness import *  # noqa: E402,F403 - the shared bench machinery (bench/harness/)

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
    with Rig(root, f"pe-{p}", args, jute_maxbuffer=16 << 20) as rig:

        def measure(trial: Trial, b, meter) -> None:
            t0 = time.time()
            rig.store.create_preferred_election(tps)
            wait_until(lambda: rig.store.exists(zn.PREFERRED_REPLICA_ELECTION_PATH) is None, args.timeout,
                       "the admin znode's deletion", step=0.01)
            trial.znode_gone_s = time.time() - t0
            lines = rig.tail.wait(lambda ls: bool(ls), ["PreferredReplicaElection"], args.timeout, b.alive)
            trial.line_s = lines[0]["time_ms"] / 1000.0 - t0
            trial.moved = lines[0].get("moved", 0)
            last = rig.acknowledged(trial, t0, meter, STAND_INS, lambda tp, leader, _e: leader == replicas[tp][0],
                                    tps, lambda tp: replicas[tp])
            trial.time_s = last - t0

        def line(trial: Trial) -> str:
            return (f"raw limit {trial.raw_s:6.3f}s  preferred election {fmt_s(trial.time_s)}s "
                    f"(decided at {fmt_s(trial.line_s)}s, znode gone at {fmt_s(trial.znode_gone_s)}s; moved "
                    f"{trial.moved:,}, missing {trial.missing}; other load {trial.other_load * 100:.0f}% of the CPUs)")

        rig.preload(topics, assign, moved_away)
        return rig.run_trials(tps, Trial, measure, line, lambda: rig.reset(topics, assign, moved_away))


def summarise(results: dict[int, list[Trial]]) -> list[dict]:
    rows = summarise_trials(results, {"raw_s": "raw_s", "time_s": "time_s", "line_s": "line_s",
                                      "znode_gone_s": "znode_gone_s", "other_load": "other_load"},
                            {"moved": (min, "moved"), "missing": (max, "missing")})
    for row in rows:
        row["ratio"] = row["time_s"] / row["raw_s"]
    return rows


def table(rows: list[dict]) -> str:
    return md_table([("P", "{P:,}"), ("admin znode → preferred leaders acknowledged s", secs("time_s")),
                     ("raw limit s", secs("raw_s")), ("ratio", "{ratio:.2f}"),
                     ("elections decided s", secs("line_s")), ("moved", "{moved:,}"), OTHER_LOAD, TRIALS], rows)


def verdicts(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        ok = r["ratio"] <= TARGET_RATIO
        out.append(f"{ratio_verdict(r)} ({'within' if ok else 'over'} {TARGET_RATIO:g}x)")
        out += missing_verdicts(r, " with their preferred leader")
    return out


def section(rows: list[dict], command: str) -> str:
    return section_text(
        HEADING, command,
        rig_machine(zk=", jute.maxbuffer 16 MiB for the 50k admin znode", broker="; auto leader rebalance off"),
        "What is timed: every partition (RF 3 rotating over 2-6) is led by its second replica; the bench writes "
        "`/admin/preferred_replica_election` naming all P partitions (`ZkStore.create_preferred_election`), and "
        "times until every replica of every partition had answered a LeaderAndIsr naming the preferred (first) "
        "replica (stand-ins record when they answer; bodies decoded afterwards). *Elections decided*: the "
        "controller's `PreferredReplicaElection` line (states read, elected, written; requests not yet sent). "
        "*Raw limit*: P fenced conditional writes of the same state znodes in multi-ops of 100 "
        "(`ZkStore.fenced_multi`), timed in the same trial before broker 1 starts. Medians over the trials.",
        table(rows), verdicts(rows), "preferred_election.png")


def main() -> int:
    args = common_args(__doc__, "preferred_election.png").parse_args()
    rows = summarise(run_sizes(args, run_size))
    report_results(args, __file__, table(rows), verdicts(rows), HEADING, lambda command: section(rows, command),
                   lambda: plot_vs_raw(Path(args.plot), "preferred replica election of P partitions", rows,
                                       [("time_s", "admin znode → preferred leaders acknowledged", "o-"),
                                        ("line_s", "→ elections decided (controller)", "x-.")],
                                       target_ratio=TARGET_RATIO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
