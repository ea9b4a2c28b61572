"""Controlled shutdown of a broker leading P partitions, against the raw ZooKeeper write limit.

For each size P (topics of 100 partitions, RF 3):
  1. a fresh embedded ZooKeeper pre-loaded with multi-ops: every partition led by stand-in
     broker 2, its two followers rotating over stand-ins 3..6 (ISR = all three);
  2. stand-ins 2..6 (threaded Kafka-framed sinks answering LeaderAndIsr / UpdateMetadata /
     StopReplica, see `_harness`); stand-in 2 registers `/brokers/ids/2` in a ZooKeeper
     session of its own, so its broker epoch is that znode's czxid;
  3. per trial: put every state back (leader 2), re-register stand-in 2 (new epoch), time
     the raw limit — the same number P of fenced conditional writes of the same state
     znodes in multi-ops of 100 (`ZkStore.fenced_multi` via the bench's session) — then
     start the real broker 1 (it becomes the controller; hosts no replica) and wait until
     it has failed over and gone quiet; stand-in 2 sends ControlledShutdownRequest v3
     (broker id 2, its epoch) to broker 1, again while partitions remain (bounded), as a
     real broker does; timed from the first request to the response with no remaining
     partitions. Also: when the stand-ins had answered every new leader's LeaderAndIsr
     (request bodies decoded after the measurement), and the `ControlledShutdown` line;
     stop broker 1 by PID.
Targets: under 1 s at 10k and at most 3x the raw limit. Figures, not asserts; medians.

Usage: .venv/bin/python bench/controlled_shutdown.py [--sizes 1000,10000,50000] [--repeat 3]
       [--py-spy DIR] [--no-write]
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# ruff: noqa: F405 - names from the shared bench machinery's star import below
from harness import *  # noqa: E402,F403 - the shared bench machinery (bench/harness/)

SHUTTING_DOWN = 2
FOLLOWERS = (3, 4, 5, 6)
TARGET_S_AT_10K = 1.0
TARGET_RATIO = 3.0
HEADING = "## Controlled shutdown"


def assign(g: int) -> tuple[int, ...]:
    """Broker 2 leads every partition; the followers rotate over 3..6 (each pair once per 4)."""
    return (SHUTTING_DOWN, FOLLOWERS[g % 4], FOLLOWERS[(g + 1) % 4])


@dataclass
class Trial:
    raw_s: float
    shutdown_s: float = float("nan")       # first request sent → response with nothing remaining
    acked_s: float = float("nan")          # → last new leader's LeaderAndIsr answered by the stand-ins
    line_s: float = float("nan")           # → the ControlledShutdown state-change line
    elected_s: float = float("nan")        # → the elections' PartitionStateChange line (states written)
    attempts: int = 0
    missing: int = 0
    other_load: float = float("nan")
    line: dict = field(default_factory=dict)


def run_size(p: int, args, root: Path) -> list[Trial]:
    topics = topic_names(p, args.partitions_per_topic)
    tps = partitions_of(topics)
    replicas = {tp: assign(g) for g, tp in enumerate(tps)}
    print(f"\n== P = {p:,}: broker {SHUTTING_DOWN} leads all ({len(topics)} topics, RF 3)", flush=True)
    with Rig(root, f"cs-{p}", args, own_sessions={SHUTTING_DOWN}) as rig:

        def measure(trial: Trial, b, meter) -> None:
            sink = rig.sinks[SHUTTING_DOWN]
            t0 = time.time()
            start = time.perf_counter()
            remaining = None
            for attempt in range(1, 11):
                resp = sink.controlled_shutdown("127.0.0.1", b.port, timeout=args.timeout)
                trial.attempts = attempt
                remaining = len(resp.remaining_partitions or [])
                if resp.error_code == 0 and remaining == 0:
                    break
                print(f"  attempt {attempt}: error {resp.error_code}, {remaining} remaining")
                time.sleep(0.05)
            if remaining == 0:
                trial.shutdown_s = time.perf_counter() - start
            lines = rig.tail.wait(lambda ls: sum(ln["event"] == "ControlledShutdown" for ln in ls) >= trial.attempts,
                                  ["ControlledShutdown", "PartitionStateChange"], args.timeout, b.alive)
            elected = [ln for ln in lines if ln.get("election") == "controlled_shutdown"]
            if elected:
                trial.elected_s = elected[0]["time_ms"] / 1000.0 - t0
            lines = [ln for ln in lines if ln["event"] == "ControlledShutdown"]
            trial.line = lines[-1]
            trial.line_s = trial.line["time_ms"] / 1000.0 - t0
            last = rig.acknowledged(trial, t0, meter, FOLLOWERS, lambda tp, leader, _e: leader != SHUTTING_DOWN, tps,
                                    lambda tp: [r for r in replicas[tp] if r != SHUTTING_DOWN])
            trial.acked_s = last - t0

        def line(trial: Trial) -> str:
            return (f"raw limit {trial.raw_s:6.3f}s  controlled shutdown {fmt_s(trial.shutdown_s)}s "
                    f"({trial.attempts} request(s); elections written at {fmt_s(trial.elected_s)}s, line at "
                    f"{fmt_s(trial.line_s)}s)  new leaders acknowledged "
                    f"{fmt_s(trial.acked_s)}s  (missing {trial.missing}; other load "
                    f"{trial.other_load * 100:.0f}% of the CPUs)")

        rig.preload(topics, assign)
        return rig.run_trials(tps, Trial, measure, line, lambda: rig.reset(topics, assign))


def summarise(results: dict[int, list[Trial]]) -> list[dict]:
    rows = summarise_trials(results, {"raw_s": "raw_s", "time_s": "shutdown_s", "acked_s": "acked_s",
                                      "line_s": "line_s", "elected_s": "elected_s", "other_load": "other_load"},
                            {"attempts": (max, "attempts"), "missing": (max, "missing")})
    for row in rows:
        row["ratio"] = row["time_s"] / row["raw_s"]
    return rows


def table(rows: list[dict]) -> str:
    return md_table([("P (led by the broker)", "{P:,}"), ("controlled shutdown s", secs("time_s")),
                     ("raw limit s", secs("raw_s")), ("ratio", "{ratio:.2f}"),
                     ("elections written s", secs("elected_s")), ("new leaders acknowledged s", secs("acked_s")),
                     ("requests", "{attempts}"), OTHER_LOAD, TRIALS], rows)


def verdicts(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        ok = r["ratio"] <= TARGET_RATIO
        out.append(f"{ratio_verdict(r)} ({'meets' if ok else 'MISSES'} <= {TARGET_RATIO:g}x)")
        out += target_verdicts(r, TARGET_S_AT_10K) + missing_verdicts(r, " with a new leader")
    return out


def section(rows: list[dict], command: str) -> str:
    return section_text(
        HEADING, command,
        rig_machine(stand_ins="threaded Kafka-framed sinks in the bench process that answer the controller's "
                              "requests; "),
        f"What is timed: stand-in {SHUTTING_DOWN}, which leads all P partitions (RF 3, followers rotating over "
        "3-6), sends ControlledShutdownRequest v3 with its broker epoch (the czxid of its own session's "
        "`/brokers/ids/2`) to broker 1; from that request to the response naming no remaining partition "
        "(*requests*: how many it took). *Elections written*: the controller's `PartitionStateChange` line for the "
        "controlled-shutdown elections (states read, decided and written; requests not yet handed over). "
        "*New leaders acknowledged*: until every remaining replica of every "
        "partition had answered a LeaderAndIsr naming a leader other than 2 (decoded afterwards). *Raw limit*: "
        "P fenced conditional writes of the same state znodes in multi-ops of 100 from the bench's session "
        "(`ZkStore.fenced_multi`), timed in the same trial before broker 1 starts. *Other load*: CPU share "
        "other processes took meanwhile (the machine is shared). Medians over the trials.",
        table(rows), verdicts(rows), "controlled_shutdown.png")


def main() -> int:
    args = common_args(__doc__, "controlled_shutdown.png").parse_args()
    rows = summarise(run_sizes(args, run_size))
    report_results(args, __file__, table(rows), verdicts(rows), HEADING, lambda command: section(rows, command),
                   lambda: plot_vs_raw(Path(args.plot), "controlled shutdown of a broker leading P partitions", rows,
                                       [("time_s", "ControlledShutdown request → nothing remaining", "o-"),
                                        ("acked_s", "new leaders acknowledged by the stand-ins", "x-.")],
                                       target_ratio=TARGET_RATIO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
