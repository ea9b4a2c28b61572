"""Rebalance times of 10 confluent-kafka members in one group over 900 partitions (one topic,
RF 3, 3 brokers), eager (`range`) and `cooperative-sticky` (issue 11, "Speed").

Members: `heartbeat.interval.ms=100`, `session.timeout.ms=6000`, auto commit off,
`auto.offset.reset=earliest`, librdkafka's other defaults; brokers with
`group.initial.rebalance.delay.ms=0`. Every partition holds one record (written before the
trials), so a member that starts fetching a partition it was just given gets that record
(no committed offsets: it starts from the earliest). One thread per member polls every
50 ms; the assign/revoke/lost callbacks and every delivered record are timestamped.

A member *owns* a partition between the callback that gives it and the one that takes it.
The group is **assigned** when the 10 (or, after a leave, 9) members' owned sets are
disjoint, cover the 900 partitions and none is empty (only the final generation can do
that). It is **consuming** when, in addition, every member has received a record from each
partition it owns since it was last given that partition (a partition kept through a
cooperative rebalance keeps counting; an eager rebalance takes every partition back, so
every partition must be fetched again).

(a) from the return of the last member's `subscribe()` to assigned / consuming;
(b) from the start of one member's clean `close()` (LeaveGroup) to assigned / consuming
    among the 9 others.
Each trial is a new group; medians of `--repeat` trials per assignor. Published anchor for
this shape (librdkafka): 103 s with the classic protocol, 5 s with KIP-848. Target: (b)
under 1 s for both assignors.

`--protocol consumer` times Kafka 4's consumer group protocol (KIP-848: `group.protocol=consumer`,
the server-side `uniform` assignor, brokers with `group.consumer.heartbeat.interval.ms=100`) as
`consumer-uniform`; `--protocol both` times it beside the classic assignors in the same run.

Usage: .venv/bin/python bench/rebalance.py [--repeat 3] [--members 10] [--partitions 900]
       [--protocol classic|consumer|both] [--no-write] [--keep-dir] [--profile]
"""
from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _groups import (  # noqa: E402
    REPO,
    Load,
    bootstrap,
    broker_pids,
    create_topic,
    ensure_offsets_topic,
    group_cluster,
    median,
    write_subsection,
)
from confluent_kafka import Consumer, Producer  # noqa: E402
from harness import machine_line, start_py_spy, stop_py_spy  # noqa: E402

TOPIC = "rebalance-900"
ASSIGNORS = ("range", "cooperative-sticky")
#: KIP-848 members: `consumer-<server assignor>`
CONSUMER_PROTOCOL = ("consumer-uniform",)
TARGET_B_S = 1.0
POLL_S = 0.05


class Member:
    """One confluent-kafka consumer in its own thread, with timestamped callbacks."""

    def __init__(self, idx: int, bs: str, group: str, assignor: str, extra: dict[str, object]):
        self.idx = idx
        if assignor.startswith("consumer-"):  # KIP-848: the broker assigns and sets the heartbeat
            protocol: dict[str, object] = {"group.protocol": "consumer",
                                           "group.remote.assignor": assignor.removeprefix("consumer-")}
        else:
            protocol = {"partition.assignment.strategy": assignor, "heartbeat.interval.ms": 100,
                        "session.timeout.ms": 6000}
        self.conf = {"bootstrap.servers": bs, "group.id": group, **protocol, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "client.id": f"m{idx}", "log_level": 3, **extra}
        self.lock = threading.Lock()
        self.owned: set[int] = set()
        self.fresh: set[int] = set()  # owned partitions that have delivered since they were given
        self.events: list[tuple[float, str, int]] = []  # (t, "assign" | "revoke" | "deliver", partition)
        self.callbacks = 0
        self.subscribed = threading.Event()
        self.t_subscribed = 0.0
        self.leave = threading.Event()
        self.t_leave = 0.0
        self.left = threading.Event()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"member-{idx}", daemon=True)

    # callbacks run inside poll(), in this member's thread
    def _on_assign(self, _c, parts) -> None:
        t = time.perf_counter()
        with self.lock:
            self.callbacks += 1
            for tp in parts:
                self.owned.add(tp.partition)
                self.fresh.discard(tp.partition)
                self.events.append((t, "assign", tp.partition))

    def _on_revoke(self, _c, parts) -> None:
        t = time.perf_counter()
        with self.lock:
            self.callbacks += 1
            for tp in parts:
                self.owned.discard(tp.partition)
                self.fresh.discard(tp.partition)
                self.events.append((t, "revoke", tp.partition))

    def _run(self) -> None:
        c = None
        try:
            c = Consumer(self.conf)
            c.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)
            self.t_subscribed = time.perf_counter()
            self.subscribed.set()
            deadline = time.monotonic() + 600
            while not self.stop.is_set() and not self.leave.is_set() and time.monotonic() < deadline:
                m = c.poll(POLL_S)
                if m is None or m.error() is not None:
                    continue
                t = time.perf_counter()
                p = m.partition()
                with self.lock:
                    if p in self.owned and p not in self.fresh:
                        self.fresh.add(p)
                        self.events.append((t, "deliver", p))
            if self.leave.is_set():
                self.t_leave = time.perf_counter()
        except BaseException as e:  # noqa: BLE001 - reported by the trial
            self.error = e
        finally:
            if c is not None:
                try:
                    c.close()
                except Exception:  # noqa: BLE001
                    pass
            with self.lock:
                self.owned.clear()
            self.left.set()

    def snapshot(self) -> tuple[frozenset[int], bool]:
        with self.lock:
            return frozenset(self.owned), self.fresh >= self.owned


def group_state(members: list[Member], partitions: int) -> tuple[bool, bool]:
    """(assigned, consuming) as defined in the module docstring."""
    snaps = [m.snapshot() for m in members]
    owned = [s for s, _ in snaps]
    assigned = (all(owned) and sum(len(s) for s in owned) == partitions
                and len(frozenset().union(*owned)) == partitions)
    return assigned, assigned and all(f for _, f in snaps)


def wait_group(members: list[Member], partitions: int, timeout: float) -> tuple[float, float]:
    """perf_counter times at which the group was first assigned and first consuming."""
    t_assigned = float("nan")
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if any(m.error for m in members):
            raise RuntimeError(f"a member failed: {[m.error for m in members if m.error]}")
        t = time.perf_counter()
        assigned, consuming = group_state(members, partitions)
        if assigned and t_assigned != t_assigned:
            t_assigned = t
        if consuming:
            return t_assigned, t
        if not assigned:
            t_assigned = float("nan")
        time.sleep(0.01)  # 10 ms: the check takes the GIL the members need for their callbacks
    return t_assigned, float("nan")


def curve(members: list[Member], t0: float, partitions: int, horizon: float, step: float = 0.01
          ) -> tuple[list[float], list[int]]:
    """Partitions being consumed by their current owner (owned and delivered since given),
    over time since t0, replayed from the members' event logs."""
    events = sorted((t, m.idx, kind, p) for m in members for t, kind, p in m.events)
    xs, ys = [], []
    owned: dict[tuple[int, int], bool] = {}  # (member, partition) -> fresh
    i = 0
    t = t0 - step
    while t <= t0 + horizon:
        while i < len(events) and events[i][0] <= t:
            _, mid, kind, p = events[i]
            if kind == "assign":
                owned[(mid, p)] = False
            elif kind == "revoke":
                owned.pop((mid, p), None)
            elif (mid, p) in owned:
                owned[(mid, p)] = True
            i += 1
        xs.append(t - t0)
        ys.append(min(sum(1 for v in owned.values() if v), partitions))
        t += step
    return xs, ys


def trial(bs: str, assignor: str, n: int, partitions: int, k: int, pids: list[int], extra: dict[str, object],
          profile: bool, debug: dict[str, object]) -> dict[str, object]:
    group = f"rb-{assignor}-{k}-{int(time.time() * 1000) % 100000}"
    members = [Member(i, bs, group, assignor, {**extra, **(debug if i == 1 else {})}) for i in range(n)]
    out: dict[str, object] = {"assignor": assignor, "trial": k + 1}
    try:
        load = Load(pids)
        for m in members:
            m.thread.start()
        for m in members:
            if not m.subscribed.wait(60):
                raise RuntimeError("a member did not subscribe within 60 s")
        t0 = max(m.t_subscribed for m in members)
        ta, tc = wait_group(members, partitions, 180)
        out.update(a_assigned=ta - t0, a_consuming=tc - t0, a_callbacks=sum(m.callbacks for m in members))
        out["a_load"] = load.done()
        out["a_curve"] = curve(members, t0, partitions, (tc - t0) + 0.5 if tc == tc else 30.0, step=0.05)
        time.sleep(1.0)  # settle: fetchers running, heartbeats steady
        spies = []
        if profile:
            spies = [start_py_spy(pid, Path(f"/tmp/rebalance-{assignor}-broker-{i + 1}.txt"), 6, fmt="raw")
                     for i, pid in enumerate(pids)]
            time.sleep(0.5)
        load = Load(pids)
        cb0 = sum(m.callbacks for m in members[1:])
        leaver, rest = members[0], members[1:]
        leaver.leave.set()
        if not leaver.left.wait(60):
            raise RuntimeError("the leaving member did not close within 60 s")
        t0 = leaver.t_leave
        out["b_t0_wall"] = time.time() - (time.perf_counter() - t0)
        ta, tc = wait_group(rest, partitions, 60)
        for s in spies:
            stop_py_spy(s)
        out.update(b_assigned=ta - t0, b_consuming=tc - t0, b_callbacks=sum(m.callbacks for m in rest) - cb0,
                   b_split=split(rest, t0))
        out["b_load"] = load.done()
        out["b_curve"] = curve(rest, t0, partitions, max((tc - t0) if tc == tc else 5.0, 0.5) + 0.5)
        return out
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.left.wait(60)


def split(members: list[Member], t0: float) -> dict[str, float]:
    """Where (b)'s time went: the last assign callback after t0, and per partition given
    after t0, the wait from its assign callback to its first record (max and median)."""
    last_assign = 0.0
    waits = []
    for m in members:
        given: dict[int, float] = {}
        with m.lock:
            events = list(m.events)
        for t, kind, p in events:
            if t < t0:
                continue
            if kind == "assign":
                given[p] = t
                last_assign = max(last_assign, t - t0)
            elif kind == "deliver" and p in given:
                waits.append(t - given.pop(p))
    return {"last_assign": last_assign, "record_wait_max": max(waits, default=float("nan")),
            "record_wait_p50": median(waits)}


def fill(bs: str, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 20, "log_level": 3})
    for i in range(partitions):
        p.produce(TOPIC, value=b"r", partition=i)
    left = p.flush(600)  # bounded: a loaded machine can take minutes
    if left:
        raise RuntimeError(f"{left} records not delivered")


def plot(path: Path, results: list[dict[str, object]], partitions: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    colours = {"range": "tab:blue", "cooperative-sticky": "tab:orange", "consumer-uniform": "tab:green"}
    for key, ax, title in (("a_curve", axes[0], "(a) from the last subscribe()"),
                           ("b_curve", axes[1], "(b) from one member's close()")):
        seen: set[str] = set()
        for r in results:
            xs, ys = r[key]  # type: ignore[misc]
            a = str(r["assignor"])
            ax.plot(xs, ys, color=colours[a], alpha=0.8, label=None if a in seen else a)
            seen.add(a)
        ax.axhline(partitions, color="grey", linestyle=":", alpha=0.6)
        if key == "b_curve":
            ax.axvline(TARGET_B_S, color="red", linestyle=":", alpha=0.6, label=f"{TARGET_B_S:g} s target")
        ax.set_xlabel("seconds")
        ax.set_ylabel("partitions consumed by their current owner")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("10 confluent-kafka members, 900 partitions, 3 brokers (each line a trial)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=900)
    ap.add_argument("--assignors", default=None, help="default: by --protocol")
    ap.add_argument("--protocol", choices=("classic", "consumer", "both"), default="classic",
                    help="classic assignors, KIP-848's consumer protocol, or both in one run")
    ap.add_argument("--fetch-wait-ms", type=int, default=None,
                    help="the members' fetch.wait.max.ms (default: librdkafka's, 500)")
    ap.add_argument("--write", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--keep-dir", action="store_true")
    ap.add_argument("--profile", action="store_true", help="py-spy the brokers during each (b)")
    ap.add_argument("--debug-log", help="write member 1's librdkafka debug log (cgrp, fetch) to this file")
    args = ap.parse_args()
    if args.assignors is None:
        args.assignors = ",".join({"classic": ASSIGNORS, "consumer": CONSUMER_PROTOCOL,
                                   "both": ASSIGNORS + CONSUMER_PROTOCOL}[args.protocol])
    extra: dict[str, object] = {}
    if args.fetch_wait_ms is not None:
        extra["fetch.wait.max.ms"] = args.fetch_wait_ms
    results: list[dict[str, object]] = []
    debug: dict[str, object] = {}
    if args.debug_log:  # librdkafka's debug log of member 1 (group and fetch), wall-clock stamped
        logger = logging.getLogger("member-1")
        handler = logging.FileHandler(args.debug_log, mode="w")
        handler.setFormatter(logging.Formatter("%(created).3f %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        debug = {"debug": "cgrp,fetch,topic,protocol,broker", "logger": logger}
    with group_cluster(args.keep_dir, {"group.consumer.heartbeat.interval.ms": "100"}) as cluster:
        ensure_offsets_topic(cluster)
        t = time.perf_counter()
        create_topic(cluster, TOPIC, args.partitions, 3)
        print(f"topic {TOPIC}: {args.partitions} partitions RF 3 led everywhere in {time.perf_counter() - t:.1f} s")
        bs = bootstrap(cluster)
        fill(bs, args.partitions)
        pids = broker_pids(cluster)
        for k in range(args.repeat):
            for assignor in args.assignors.split(","):
                r = trial(bs, assignor, args.members, args.partitions, k, pids, extra, args.profile, debug)
                results.append(r)
                print(f"  {assignor:<19} #{k + 1}: (a) assigned {r['a_assigned']:.3f} s, consuming "
                      f"{r['a_consuming']:.3f} s ({r['a_callbacks']} callbacks, machine busy "
                      f"{r['a_load']['busy']:.0%}, others {r['a_load']['others']:.0%}); "  # type: ignore[index]
                      f"(b) assigned {r['b_assigned']:.3f} s, consuming {r['b_consuming']:.3f} s "
                      f"({r['b_callbacks']} callbacks, busy {r['b_load']['busy']:.0%}, "  # type: ignore[index]
                      f"others {r['b_load']['others']:.0%}); (b) split {r['b_split']}, t0 wall {r['b_t0_wall']:.3f}")  # type: ignore[index]
    rows, verdicts, splits = [], [], []
    for assignor in args.assignors.split(","):
        rs = [r for r in results if r["assignor"] == assignor]

        def col(key: str, rs=rs) -> str:
            vals = [float(r[key]) for r in rs]  # type: ignore[arg-type]
            return f"{median(vals):.3f} ({' / '.join(f'{v:.3f}' for v in vals)})"

        def loads(key: str, rs=rs) -> str:
            return " / ".join(f"{r[key]['busy']:.0%}, {r[key]['others']:.0%}" for r in rs)  # type: ignore[index]

        rows.append(f"| {assignor} | {col('a_assigned')} | {col('a_consuming')} | {loads('a_load')} | "
                    f"{col('b_assigned')} | {col('b_consuming')} | {loads('b_load')} |")

        def sp(key: str, rs=rs) -> str:
            vals = [float(r["b_split"][key]) for r in rs]  # type: ignore[index]
            return f"{median(vals):.3f} ({' / '.join(f'{v:.3f}' for v in vals)})"

        splits.append(f"| {assignor} | {sp('last_assign')} | {sp('record_wait_p50')} | {sp('record_wait_max')} |")
        b = median([float(r["b_consuming"]) for r in rs])  # type: ignore[arg-type]
        ba = median([float(r["b_assigned"]) for r in rs])  # type: ignore[arg-type]
        verdicts.append(f"{assignor}: (b) consuming {b:.3f} s = {b / TARGET_B_S:.2f}× the {TARGET_B_S:g} s target "
                        f"({'meets' if b < TARGET_B_S else 'misses'}); assigned {ba:.3f} s "
                        f"({'meets' if ba < TARGET_B_S else 'misses'}); vs the published classic-protocol 103 s: "
                        f"{b / 103:.3f}×, vs KIP-848's 5 s: {b / 5:.2f}×")
    table = ("| assignor | (a) assigned s | (a) consuming s | (a) machine busy, others | (b) assigned s | "
             "(b) consuming s | (b) machine busy, others |\n|---|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows))
    split_table = ("| assignor | (b) close() → last assign callback s | (b) assign callback → first record of a "
                   "partition given, median s | … max s |\n|---|---:|---:|---:|\n" + "\n".join(splits))
    print(table)
    print(split_table)
    for v in verdicts:
        print(v)
    if args.write:
        tag = "" if args.fetch_wait_ms is None else f"-fetch-wait-{args.fetch_wait_ms}"
        if args.protocol != "classic":
            tag += f"-protocol-{args.protocol}"
        png = REPO / "bench" / f"rebalance{tag}.png"
        heading = ("### Rebalance (`bench/rebalance.py`)" if not tag else
                   f"### Rebalance, protocol {args.protocol} (`bench/rebalance.py --protocol {args.protocol}`)"
                   if args.fetch_wait_ms is None else
                   f"### Rebalance with `fetch.wait.max.ms={args.fetch_wait_ms}` (`bench/rebalance.py "
                   f"--fetch-wait-ms {args.fetch_wait_ms}`)")
        plot(png, results, args.partitions)
        cmd = f"python bench/rebalance.py --repeat {args.repeat}" + (
            f" --fetch-wait-ms {args.fetch_wait_ms}" if args.fetch_wait_ms is not None else "") + (
            f" --protocol {args.protocol}" if args.protocol != "classic" else "")
        section = "\n".join([
            heading, "",
            f"Command: `{cmd}`", "",
            f"Machine: {machine_line()}; 3 broker processes, ZooKeeper and the 10 members (one process, one thread "
            "each) on the same CPUs.", "",
            f"What is timed: {args.members} confluent-kafka members in one new group per trial over one topic of "
            f"{args.partitions} partitions (RF 3, one record each), `heartbeat.interval.ms=100`, "
            "`session.timeout.ms=6000`, brokers with `group.initial.rebalance.delay.ms=0`"
            + ("; `consumer-uniform`: `group.protocol=consumer`, `group.remote.assignor=uniform`, brokers' "
               "`group.consumer.heartbeat.interval.ms=100` (the session timeout is the brokers' 45 s)"
               if args.protocol != "classic" else "")
            + (f", `fetch.wait.max.ms={args.fetch_wait_ms}`" if args.fetch_wait_ms is not None else
               ", librdkafka's other defaults (`fetch.wait.max.ms` 500)") + ". *Assigned*: the members' owned "
            "partitions (from the assign/revoke callbacks) are disjoint, cover every partition and none is empty. "
            "*Consuming*: also every member has received a record from each partition it owns since it was given "
            "it (kept partitions of a cooperative rebalance keep counting; an eager one takes all back). "
            "(a) from the return of the last `subscribe()`; (b) from the start of one member's clean `close()` "
            f"(LeaveGroup) among the other {args.members - 1}. Medians (each trial in brackets); "
            "machine busy = share of both CPUs busy, others = share taken by processes other than the brokers "
            "and the bench (ZooKeeper counts as the cluster).", "",
            table, "",
            "Where (b)'s time went: the last member's assign callback after the `close()`, and for each partition "
            "a member was given, the wait from its assign callback to its first record:", "",
            split_table, "",
            *[f"- {v}" for v in verdicts], "",
            f"Plot: `bench/{png.name}` (partitions consumed by their current owner over time, each trial).", "",
        ])
        write_subsection(REPO / "bench" / "RESULTS.md", heading, section)


if __name__ == "__main__":
    main()
