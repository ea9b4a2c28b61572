"""Failure of a broker leading P partitions: from the controller seeing its znode vanish to
every partition's new leader acknowledged, against the raw ZooKeeper write limit.

For each size P (topics of 100 partitions, RF 3):
  1. a fresh embedded ZooKeeper pre-loaded with multi-ops: every partition led by stand-in
     broker 2, its two followers rotating over stand-ins 3..6 (ISR = all three);
  2. stand-ins 2..6 (`harness`); stand-in 2 registers `/brokers/ids/2` in a ZooKeeper session
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

import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# ruff: noqa: F405 - names from the shared bench machinery's star import below
from harness import *  # noqa: E402,F403 - the shared bench machinery (bench/harness/)

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
    with Rig(root, f"bf-{p}", args, own_sessions={DYING}) as rig:

        def measure(trial: Trial, b, meter) -> None:
            t0 = time.time()
            rig.sinks[DYING].close_session()
            t_seen = rig.first_line("BrokerChange", lambda ln: ln.get("dead") == [DYING])["time_ms"] / 1000.0
            trial.seen_s = t_seen - t0
            elected = rig.first_line("PartitionStateChange", lambda ln: ln.get("election") == "offline")
            trial.elected_s = elected["time_ms"] / 1000.0 - t_seen
            last = rig.acknowledged(trial, t0, meter, FOLLOWERS, lambda tp, leader, _e: leader not in (DYING, -1),
                                    tps, lambda tp: [r for r in replicas[tp] if r != DYING])
            trial.failure_s = last - t_seen
            trial.from_close_s = last - t0

        def line(trial: Trial) -> str:
            return (f"raw limit {trial.raw_s:6.3f}s  BrokerChange → new leaders acknowledged "
                    f"{fmt_s(trial.failure_s)}s (election done at {fmt_s(trial.elected_s)}s; from the session "
                    f"close {fmt_s(trial.from_close_s)}s, seen after {fmt_s(trial.seen_s)}s)  missing {trial.missing}; "
                    f"other load {trial.other_load * 100:.0f}% of the CPUs")

        rig.preload(topics, assign)
        return rig.run_trials(tps, Trial, measure, line, lambda: rig.reset(topics, assign))


def summarise(results: dict[int, list[Trial]]) -> list[dict]:
    rows = summarise_trials(results, {"raw_s": "raw_s", "time_s": "failure_s", "from_close_s": "from_close_s",
                                      "seen_s": "seen_s", "elected_s": "elected_s", "other_load": "other_load"},
                            {"missing": (max, "missing")})
    for row in rows:
        row["ratio"] = row["time_s"] / row["raw_s"]
    return rows


def table(rows: list[dict]) -> str:
    return md_table([("P (led by the dead broker)", "{P:,}"),
                     ("BrokerChange → new leaders acknowledged s", secs("time_s")), ("raw limit s", secs("raw_s")),
                     ("ratio", "{ratio:.2f}"), ("offline election done s", secs("elected_s")),
                     ("from the session close s", secs("from_close_s")), OTHER_LOAD, TRIALS], rows)


def verdicts(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        out += [ratio_verdict(r)] + target_verdicts(r, TARGET_S_AT_10K) + missing_verdicts(r, " with a new leader")
    return out


def section(rows: list[dict], command: str) -> str:
    return section_text(
        HEADING, command, rig_machine(),
        f"What is timed: stand-in {DYING} leads all P partitions (RF 3, followers rotating over 3-6) and holds "
        "`/brokers/ids/2` in a ZooKeeper session of its own; the bench closes that session (ZooKeeper deletes "
        "the ephemeral znode at once; a SIGKILLed broker's znode goes when its session times out, which is not "
        "timed here). From broker 1's `BrokerChange` state-change line (the controller has read the new broker "
        "list) until the last surviving replica had answered a LeaderAndIsr naming the partition's new leader "
        "(the stand-ins record when they answer; bodies decoded afterwards). *Offline election done*: the "
        "controller's `PartitionStateChange` line for the offline election, from the same start. *From the "
        "session close*: the same end, from the close (watch delivery and event queueing included). *Raw limit*: "
        "P fenced conditional writes of the same state znodes in multi-ops of 100 (`ZkStore.fenced_multi`), "
        "timed in the same trial before broker 1 starts. Medians over the trials.",
        table(rows), verdicts(rows), "broker_failure.png")


def main() -> int:
    args = common_args(__doc__, "broker_failure.png").parse_args()
    rows = summarise(run_sizes(args, run_size))
    report_results(args, __file__, table(rows), verdicts(rows), HEADING, lambda command: section(rows, command),
                   lambda: plot_vs_raw(Path(args.plot), "broker failure: BrokerChange → new leaders acknowledged",
                                       rows, [("time_s", "BrokerChange → new leaders acknowledged", "o-"),
                                              ("elected_s", "→ offline election done (controller)", "x-.")],
                                       target_s=TARGET_S_AT_10K))
    return 0


if __name__ == "__main__":
    sys.exit(main())
