"""Reassignment of P partitions to new replica sets via `/admin/reassign_partitions`, against
the raw ZooKeeper write limit.

For each size P (topics of 100 partitions, RF 3 rotating over stand-ins 2..6):
  1. a fresh embedded ZooKeeper (jute.maxbuffer raised to 16 MiB: the admin znode for 50k
     partitions is ~3 MB) pre-loaded with multi-ops: replicas (r0, r1, r2), leader r0, ISR all;
  2. stand-ins 2..6 (`harness`), registered in the bench's session;
  3. per trial: put states and topic assignments back, time the raw limit (P fenced
     conditional writes of the same state znodes in multi-ops of 100), start the real broker
     1 (the controller; hosts no replica) and wait until it is quiet; then
       A. start: write `/admin/reassign_partitions` moving every partition from (r0, r1, r2)
          to (r1, r2, r3) (`ZkStore.create_reassignment`): one replica added (r3), the
          leader r0 removed. Timed until every replica of the full set had answered the
          LeaderAndIsr with the bumped leader epoch (stand-ins record when they answer;
          bodies decoded after the measurement); then until the controller is idle again
          (the next event watches the P state znodes and checks them once more);
       B. catch-up, simulated: the stand-ins do not replicate, so the bench does what each
          partition's leader would do once r3 has caught up — a conditional update of the
          state znode adding r3 to the ISR (same leader and leader epoch, version-checked
          multi-ops of 100, unfenced like a broker's write), then ISR-change notifications
          (`/isr_change_notification/isr_change_<seq>`, 1,000 partitions each). Timed from
          the first of those writes until the controller has completed every reassignment
          (`ReassignmentCompleted` for all P, `/admin/reassign_partitions` deleted) and the
          last replica of the new set had answered a LeaderAndIsr naming the new leader r1.
Figures, not asserts; medians.

Usage: .venv/bin/python bench/reassignment.py [--sizes 1000,10000,50000] [--repeat 3]
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

from praha.common import LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicAssignment  # noqa: E402
from praha.zk import znodes as zn  # noqa: E402
from praha.zk.ops import DeleteOp, SetDataOp, WriteOutcome  # noqa: E402

HEADING = "## Partition reassignment"
TARGET_RATIO = 3.0
NOTIFICATION_PARTITIONS = 1000
assign = rotation(STAND_INS)
four = rotation(STAND_INS, 4)


def target_of(g: int) -> tuple[int, ...]:
    return four(g)[1:]


@dataclass
class Trial:
    raw_s: float
    start_s: float = float("nan")      # admin znode → full sets acknowledged the bumped epoch
    busy_s: float = float("nan")       # admin znode → the controller idle again (state znodes watched)
    complete_s: float = float("nan")   # first ISR write → last ReassignmentCompleted line
    acked_s: float = float("nan")      # first ISR write → new leaders acknowledged by the new replica sets
    isr_write_s: float = float("nan")  # the bench's own ISR writes + notifications
    missing: int = 0
    other_load: float = float("nan")


def reset(rig: Rig, topics) -> None:
    """Between trials: states (`Rig.reset`), topic assignments, no admin znode, no notifications."""
    rig.reset(topics, assign)
    store = rig.store
    ops, g = [], 0
    for t, n in topics:
        parts = {}
        for p in range(n):
            parts[p] = ReplicaAssignment(assign(g))
            g += 1
        ops.append(SetDataOp(zn.topic_path(t), zn.encode_topic_assignment(TopicAssignment(parts))))
    store.multi(ops)
    names = store.get_children(zn.ISR_CHANGE_NOTIFICATION_PATH) or []
    store.multi([DeleteOp(zn.REASSIGN_PARTITIONS_PATH)] + [DeleteOp(zn.isr_change_path(n)) for n in names])


def count_lines(lines: list[dict]) -> int:
    """Partitions named by Reassignment* lines (one partition per line, or a list)."""
    return sum(len(ln["partitions"]) if isinstance(ln.get("partitions"), (list, dict)) else 1 for ln in lines)


def catch_up(store, tps, adding: dict) -> None:
    """What each partition's leader does once its new replica is in sync: the state znode with
    the replica added to the ISR (conditional on its version; same leader, leader epoch and
    controller epoch), then batched ISR-change notifications."""
    states, _ = store.get_partition_states(tps)
    ops = []
    for tp in tps:
        st = states[tp]
        li = st.leader_and_isr
        new = LeaderIsrAndControllerEpoch(li.with_isr(li.isr + (adding[tp],)), st.controller_epoch)
        ops.append(SetDataOp(zn.tp_state_path(tp), zn.encode_partition_state(new), li.zk_version))
    results = store.multi(ops)
    bad = [r for r in results if r.outcome is not WriteOutcome.OK]
    if bad:
        raise RuntimeError(f"catch-up: {len(bad)} ISR writes failed, e.g. {bad[0]}")
    for i in range(0, len(tps), NOTIFICATION_PARTITIONS):
        store.create_isr_change_notification(tps[i:i + NOTIFICATION_PARTITIONS])


def wait_acked(rig: Rig, since: float, want, tps, replicas, timeout: float) -> tuple[float, int]:
    """`rig.acked(...)` once every partition is acknowledged, or when `timeout` has passed. The
    stand-ins' requests are decoded only when they have been quiet for a moment (not while the
    controller works); a quiet spell is not taken for the end: a controller event naming
    thousands of partitions logs its lines before its requests are encoded and sent."""
    deadline = time.monotonic() + timeout
    while True:
        rig.quiet_stand_ins(since, max(1.0, deadline - time.monotonic()), expect=STAND_INS)
        last, missing = rig.acked(since, want, tps, replicas)
        if not missing or time.monotonic() >= deadline:
            return last, missing
        time.sleep(0.2)


def busy_until(b, timeout: float, step: float = 0.1, quiet_s: float = 0.6, threshold: float = 0.1) -> float:
    """Wall time of the last `step` in which broker `b` used more than `threshold` of a CPU,
    once it has been below that for `quiet_s` (bounded by `timeout`)."""
    deadline = time.monotonic() + timeout
    last_cpu, last_busy = b.cpu_s(), time.time()
    while time.monotonic() < deadline:
        time.sleep(step)
        now, cpu = time.time(), b.cpu_s()
        if cpu - last_cpu > threshold * step:
            last_busy = now
        elif now - last_busy >= quiet_s:
            break
        last_cpu = cpu
    return last_busy


def run_size(p: int, args, root: Path) -> list[Trial]:
    topics = topic_names(p, args.partitions_per_topic)
    tps = partitions_of(topics)
    old = {tp: assign(g) for g, tp in enumerate(tps)}
    new = {tp: target_of(g) for g, tp in enumerate(tps)}
    adding = {tp: new[tp][-1] for tp in tps}
    completion = p <= args.completion_max
    print(f"\n== P = {p:,}: (r0,r1,r2) → (r1,r2,r3) ({len(topics)} topics, RF 3)", flush=True)
    with Rig(root, f"ra-{p}", args, jute_maxbuffer=16 << 20) as rig:

        def measure(trial: Trial, b, meter) -> None:
            # A. start
            t0 = time.time()
            rig.store.create_reassignment(new)
            rig.tail.wait(lambda ls: count_lines(ls) >= p, ["ReassignmentStarted"], args.timeout, b.alive)
            last, missing = wait_acked(rig, t0, lambda tp, _leader, epoch: epoch >= 1, tps,
                                       lambda tp: old[tp] + (adding[tp],), args.timeout)
            trial.start_s = last - t0
            trial.missing = missing
            # the event after the start watches the P state znodes (a round trip each) and
            # checks them once more: the catch-up begins once the controller is idle again
            trial.busy_s = busy_until(b, args.timeout) - t0
            if not completion:
                trial.other_load = meter.other_share()
                return
            # B. catch-up and completion
            t1 = time.time()
            catch_up(rig.store, tps, adding)
            trial.isr_write_s = time.time() - t1
            done = rig.tail.wait(lambda ls: count_lines(ls) >= p, ["ReassignmentCompleted"], args.timeout,
                                 b.alive)
            trial.complete_s = max(ln["time_ms"] for ln in done) / 1000.0 - t1
            wait_until(lambda: rig.store.exists(zn.REASSIGN_PARTITIONS_PATH) is None, args.timeout,
                       "the admin znode's deletion", step=0.01)
            last, missing2 = wait_acked(rig, t1, lambda tp, leader, _e: leader == new[tp][0], tps,
                                        lambda tp: new[tp], args.timeout)
            trial.other_load = meter.other_share()
            trial.acked_s = last - t1
            trial.missing += missing2

        def line(trial: Trial) -> str:
            start = f"raw limit {trial.raw_s:6.3f}s  start {fmt_s(trial.start_s)}s (controller idle "
            if not completion:
                return (start + f"after {fmt_s(trial.busy_s)}s)  (completion not run: "
                        f"P > --completion-max {args.completion_max})  missing {trial.missing}")
            return (start + f"after {fmt_s(trial.busy_s)}s)  completion "
                    f"{fmt_s(trial.complete_s)}s (new leaders acknowledged {fmt_s(trial.acked_s)}s; the bench's "
                    f"ISR writes took {fmt_s(trial.isr_write_s)}s)  missing {trial.missing}; other load "
                    f"{trial.other_load * 100:.0f}% of the CPUs")

        rig.preload(topics, assign)
        return rig.run_trials(tps, Trial, measure, line, lambda: reset(rig, topics))


def summarise(results: dict[int, list[Trial]]) -> list[dict]:
    rows = summarise_trials(results, {"raw_s": "raw_s", "start_s": "start_s", "busy_s": "busy_s",
                                      "complete_s": "complete_s", "acked_s": "acked_s",
                                      "isr_write_s": "isr_write_s", "other_load": "other_load"},
                            {"missing": (max, "missing")})
    for row in rows:
        row["time_s"] = row["start_s"] + row["acked_s"]
        row["ratio_start"] = row["start_s"] / row["raw_s"]
        row["ratio_complete"] = row["acked_s"] / row["raw_s"]
        row["ratio"] = row["time_s"] / row["raw_s"]
    return rows


def table(rows: list[dict]) -> str:
    return md_table([("P", "{P:,}"), ("start s", secs("start_s")), ("start / raw", ratio("ratio_start")),
                     ("controller idle after s", secs("busy_s")), ("completion s", secs("acked_s")),
                     ("completion / raw", ratio("ratio_complete")), ("start + completion s", secs("time_s")),
                     ("raw limit s", secs("raw_s")), ("ratio", ratio("ratio")),
                     ("bench's ISR writes s", secs("isr_write_s")), OTHER_LOAD, TRIALS], rows)


def ratio(key: str):
    """A table cell: the row's ratio `key` (`fmt_x`)."""
    return lambda r: fmt_x(r[key])


def fmt_x(x: float) -> str:
    return "n/a" if x != x else f"{x:.2f}"  # noqa: PLR0124 - NaN check


def verdicts(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        completion = ("not run" if r["acked_s"] != r["acked_s"]  # noqa: PLR0124 - NaN check
                      else f"{fmt_s(r['acked_s'])}s ({fmt_x(r['ratio_complete'])}x)")
        out.append(f"P={r['P']:,}: start {fmt_s(r['start_s'])}s ({fmt_x(r['ratio_start'])}x the raw limit), "
                   f"completion {completion}")
        if r["missing"]:
            out.append(f"P={r['P']:,}: {r['missing']} partitions never acknowledged")
    # growth: linear means the time grows by the factor P grows by (per-partition cost flat)
    for a, b in zip(rows, rows[1:]):
        out.append(f"P {a['P']:,} → {b['P']:,} ({b['P'] / a['P']:.0f}x): start {fmt_x(b['start_s'] / a['start_s'])}x, "
                   f"completion {fmt_x(b['acked_s'] / a['acked_s'])}x; per partition: start "
                   f"{fmt_us(a['start_s'], a['P'])} → {fmt_us(b['start_s'], b['P'])}, completion "
                   f"{fmt_us(a['acked_s'], a['P'])} → {fmt_us(b['acked_s'], b['P'])}")
    return out


def fmt_us(seconds: float, p: int) -> str:
    return "n/a" if seconds != seconds else f"{seconds / p * 1e6:.0f} µs"  # noqa: PLR0124 - NaN check


def section(rows: list[dict], command: str, completion_max: int) -> str:
    return section_text(
        HEADING, command, rig_machine(zk=", jute.maxbuffer 16 MiB for the 50k admin znode"),
        "What is timed: every partition (RF 3 rotating over 2-6) moves from (r0, r1, r2) to (r1, r2, r3) — one "
        "replica added, the leader removed — through one `/admin/reassign_partitions` znode naming all P. "
        "*Start*: from writing it until every replica of the full set (r0..r3) had answered the LeaderAndIsr "
        "with the bumped leader epoch; *controller idle after*: until broker 1's CPU went quiet after that (±0.1 s): "
        "the event after the start watches the P state znodes (one round trip each through kazoo) and checks them "
        "once more; the catch-up begins then. *Completion*: the stand-ins do not replicate, so the bench simulates the "
        "catch-up as each leader would report it: a conditional update of every state znode adding r3 to the "
        "ISR (same leader and leader epoch, version-checked multi-ops of 100, unfenced like a broker's write), "
        "then ISR-change notifications of 1,000 partitions each; from the first of those writes until every "
        "`ReassignmentCompleted`, the admin znode's deletion and the last LeaderAndIsr naming the new leader r1 "
        "answered by r1..r3 (*bench's ISR writes*: how long the simulated catch-up writes themselves took, "
        f"inside that window). Completion is run up to P = `--completion-max` ({completion_max:,}). Each state "
        "znode's watch queues a `PartitionReassignmentIsrChange` (Kafka's), but those queued back to back are one "
        "controller event, and an ISR-change notification names many partitions: partitions that catch up together "
        "complete together, with one bulk read of their states, grouped fenced multi-ops, at most one request of "
        "each kind per broker and ONE rewrite (or the deletion) of `/admin/reassign_partitions`, not one per "
        "partition (with one event per partition, as before, the rewrites alone grew as P²: 150 s at 10k, "
        "~60 GB written at 50k). The state znodes are watched from the event after the start (their own epoch "
        "bumps fire no watch; the LeaderAndIsr goes out first), which then checks them once more. "
        "What remains per partition is mostly its state znode's watch, one kazoo message at a time (a profile of "
        "broker 1): armed, fired by the catch-up, re-armed (`praha/zk/watches.py`), fired again by the controller's "
        "own write of the new leader (a ZooKeeper watch cannot be taken back). *Raw limit*: P "
        "fenced conditional writes of the same state znodes in multi-ops of 100 (`ZkStore.fenced_multi`), timed "
        "in the same trial before broker 1 starts. Medians over the trials.",
        table(rows), verdicts(rows), "reassignment.png")


def main() -> int:
    ap = common_args(__doc__, "reassignment.png")
    ap.add_argument("--completion-max", type=int, default=50000,
                    help="largest P whose completion is run (bigger ones: the start only)")
    args = ap.parse_args()
    rows = summarise(run_sizes(args, run_size))
    report_results(args, __file__, table(rows), verdicts(rows), HEADING,
                   lambda command: section(rows, command, args.completion_max),
                   lambda: plot_vs_raw(Path(args.plot),
                                       "reassignment of P partitions (one replica added, leader moved)",
                                       rows, [("start_s", "start: admin znode → full sets acknowledged", "o-"),
                                              ("acked_s", "completion: ISR caught up → new leaders acknowledged", "x-"),
                                              ("time_s", "start + completion", "^-.")],
                                       target_ratio=TARGET_RATIO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
