"""Group coordinator failover with 1,000 groups on the killed broker (issue 11, "Speed").

Per trial, a fresh 3-broker cluster (RF 3 `__consumer_offsets`, 50 partitions): the broker
that is not the controller and leads the most `__consumer_offsets` partitions is the
victim; 1,000 groups whose partition it leads (`fo-<i>`, Kafka's hash) each commit
`--partitions` offsets `--rounds` times as standalone consumers (generation -1, empty
member id), acknowledged (acks=all), and every group is read back with OffsetFetch. Then the
victim is SIGKILLed (`LocalCluster.kill_broker`) while a client polls all 1,000 groups as
a client would: FindCoordinator (batched, v4) at a live broker for the groups not yet
answered, then one OffsetFetch v8 per coordinator naming its groups; a group counts once it
answers with exactly the offsets it committed.

Measured, from the surviving brokers' state-change logs (`<broker dir>/data/state-change.log`):
- **LeaderAndIsr**: the first `LeaderAndIsrReceived` line after the kill that makes a
  survivor leader of a victim's `__consumer_offsets` partition (written once the replica
  manager has applied it; the coordinator's loads start there). `ControllerRequestAccepted`
  is only written when a controller epoch changes, which a follower's death does not do.
- (i) from that line to the moment the polling client has every group's offsets back;
- (ii) broker side: the `GroupCoordinatorLoaded` lines of the moved partitions: their
  `load_ms` (max and sum) and from the LeaderAndIsr line to the last of them.
Also shown: the controller's `BrokerChange` line (the death seen, after the ZooKeeper
session timeout) relative to the kill. Target: (i) under 1 s. Medians of `--repeat`.

Usage: .venv/bin/python bench/coordinator_failover.py [--groups 1000] [--partitions 4] [--rounds 2]
       [--repeat 3] [--no-write] [--keep-dir]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _groups import (  # noqa: E402
    REPO,
    Load,
    broker_pids,
    create_topic,
    ensure_offsets_topic,
    group_cluster,
    groups_on,
    median,
    write_subsection,
)
from harness import machine_line  # noqa: E402
from kafka.protocol.consumer import (  # noqa: E402
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse  # noqa: E402

from praha.coordinator.group.records import OFFSETS_TOPIC, partition_for  # noqa: E402
from praha.protocol.async_client import AsyncConnection  # noqa: E402
from praha.zk.store import ZkStore  # noqa: E402

TOPIC = "fo-data"
TARGET_S = 1.0
_CT = OffsetCommitRequest.OffsetCommitRequestTopic
_CP = _CT.OffsetCommitRequestPartition
_FG = OffsetFetchRequest.OffsetFetchRequestGroup
_FT = _FG.OffsetFetchRequestTopics


def expected_offset(i: int, p: int, rounds: int) -> int:
    return 1000 * rounds + 7 * i + p


async def commit_all(ports: list[int], groups: list[str], partitions: int, rounds: int, concurrency: int = 50) -> None:
    """Every group commits `partitions` offsets `rounds` times (the last round's are expected),
    group i to the coordinator at `ports[i]`."""
    queue: asyncio.Queue[tuple[int, int]] = asyncio.Queue()
    for r in range(1, rounds + 1):
        for i in range(len(groups)):
            queue.put_nowait((r, i))
    bad: list[object] = []

    async def worker(k: int) -> None:
        conns: dict[int, AsyncConnection] = {}
        try:
            while not queue.empty():
                r, i = queue.get_nowait()
                conn = conns.get(ports[i])
                if conn is None:
                    conn = conns[ports[i]] = AsyncConnection("127.0.0.1", ports[i], f"fo-commit-{k}", 30.0)
                req = OffsetCommitRequest(
                    group_id=groups[i], generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                    retention_time_ms=-1, topics=[_CT(name=TOPIC, partitions=[
                        _CP(partition_index=p, committed_offset=(expected_offset(i, p, rounds) if r == rounds
                                                                 else 1000 * r + p),
                            committed_leader_epoch=-1, committed_metadata="") for p in range(partitions)])])
                resp = await conn.send(req, 8, OffsetCommitResponse)
                codes = {p.error_code for t in resp.topics for p in t.partitions}
                if codes != {0}:
                    bad.append((groups[i], codes))
        finally:
            for c in conns.values():
                c.close()

    await asyncio.wait_for(asyncio.gather(*(worker(k) for k in range(concurrency))), 300)
    if bad:
        raise RuntimeError(f"{len(bad)} commits refused, e.g. {bad[:3]}")


class Poller:
    """Polls every group until it answers OffsetFetch with its committed offsets."""

    def __init__(self, ports: dict[int, int], groups: list[str], partitions: int, rounds: int):
        self.ports = ports  # broker id -> port
        self.groups = groups
        self.want = {g: {p: expected_offset(i, p, rounds) for p in range(partitions)} for i, g in enumerate(groups)}
        self.partitions = partitions
        self.answered: dict[str, float] = {}
        self.found: dict[str, float] = {}  # first time FindCoordinator named a broker we poll (not the victim)
        self.rounds = 0
        self.errors: dict[str, int] = {}
        self.conns: dict[int, AsyncConnection] = {}

    def conn(self, bid: int) -> AsyncConnection:
        c = self.conns.get(bid)
        if c is None:
            c = self.conns[bid] = AsyncConnection("127.0.0.1", self.ports[bid], f"fo-poll-{bid}", 5.0)
        return c

    def _err(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1

    async def find(self, via: int, pending: list[str]) -> dict[str, int]:
        try:
            r = await self.conn(via).send(FindCoordinatorRequest(key_type=0, coordinator_keys=pending), 4,
                                          FindCoordinatorResponse)
        except Exception as e:  # noqa: BLE001 - a dead broker: look elsewhere next round
            self.conns.pop(via, None)
            self._err(f"FindCoordinator {type(e).__name__}")
            return {}
        out = {}
        t = time.time()
        for c in r.coordinators:
            if c.error_code == 0:
                out[c.key] = c.node_id
                if c.node_id in self.ports:
                    self.found.setdefault(c.key, t)
            else:
                self._err(f"FindCoordinator error {c.error_code}")
        return out

    async def fetch(self, bid: int, groups: list[str]) -> None:
        if bid not in self.ports:
            return
        req = OffsetFetchRequest(groups=[_FG(group_id=g, topics=[_FT(name=TOPIC, partition_indexes=list(
            range(self.partitions)))]) for g in groups], require_stable=False)
        try:
            r = await self.conn(bid).send(req, 8, OffsetFetchResponse)
        except Exception as e:  # noqa: BLE001 - the old coordinator is dead
            self.conns.pop(bid, None)
            self._err(f"OffsetFetch {type(e).__name__}")
            return
        t = time.time()
        for g in r.groups:
            if g.error_code:
                self._err(f"OffsetFetch error {g.error_code}")
                continue
            got = {p.partition_index: p.committed_offset for tp in g.topics for p in tp.partitions}
            if got == self.want[g.group_id]:
                self.answered.setdefault(g.group_id, t)
            else:
                self._err("OffsetFetch wrong offsets")

    async def run(self, live: list[int], deadline_s: float, start_after: float = 0.0) -> None:
        """Poll until every group answered (after `start_after`, wall) or the deadline."""
        deadline = time.monotonic() + deadline_s
        k = 0
        while time.monotonic() < deadline:
            pending = [g for g in self.groups if g not in self.answered]
            if not pending:
                return
            self.rounds += 1
            via = live[k % len(live)]
            k += 1
            coord = await self.find(via, pending)
            by: dict[int, list[str]] = {}
            for g in pending:
                if g in coord:
                    by.setdefault(coord[g], []).append(g)
            await asyncio.gather(*(self.fetch(b, gs) for b, gs in by.items()))
            if start_after:
                for g in [g for g, t in self.answered.items() if t < start_after]:
                    del self.answered[g]  # answered by the old coordinator before it died
            await asyncio.sleep(0.005)

    def close(self) -> None:
        for c in self.conns.values():
            c.close()


class Watcher(Poller):
    """Polls groups that stay where they are (their coordinator survives) for as long as
    `until` is not set; records when each could not answer (an error or no coordinator)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.failed: dict[str, list[float]] = {}  # group -> times it did not answer with its offsets
        self.recovered: dict[str, float] = {}  # group -> first poll after its last failure that it answered

    async def run_until(self, live: list[int], until: asyncio.Event, t_kill: float) -> None:
        k = 0
        while not until.is_set():
            self.answered.clear()
            t = time.time()
            via = live[k % len(live)]
            k += 1
            coord = await self.find(via, list(self.groups))
            by: dict[int, list[str]] = {}
            for g in self.groups:
                if g in coord:
                    by.setdefault(coord[g], []).append(g)
            await asyncio.gather(*(self.fetch(b, gs) for b, gs in by.items()))
            if t >= t_kill:
                for g in self.groups:
                    if g not in self.answered:
                        self.failed.setdefault(g, []).append(t)
                        self.recovered.pop(g, None)
                    elif g in self.failed:
                        self.recovered.setdefault(g, self.answered[g])
            await asyncio.sleep(0.005)


def read_lines(path: Path, since_ms: int, events: set[str]) -> list[dict]:
    out = []
    try:
        with open(path, "rb") as f:
            for raw in f:
                if not any(f'"event":"{e}"'.encode() in raw for e in events):
                    continue
                d = json.loads(raw)
                if d["time_ms"] >= since_ms:
                    out.append(d)
    except FileNotFoundError:
        pass
    return out


def trial(args, k: int) -> dict[str, float]:
    with group_cluster(args.keep_dir, prefix="praha-bench-cofo-") as cluster:
        leaders = ensure_offsets_topic(cluster)
        create_topic(cluster, TOPIC, args.partitions, 3)
        state = cluster.load()
        store = ZkStore(state.zookeeper).start()
        try:
            controller = store.get_controller_id()
        finally:
            store.stop()
        candidates = [b for b in state.brokers if b != controller]
        victim = max(candidates, key=lambda b: sum(1 for v in leaders.values() if v == b))
        moved = {p for p, b in leaders.items() if b == victim}
        groups = groups_on(moved, args.groups, f"fo{k}")
        ports = {b.id: b.port for b in state.brokers.values()}
        kept = set(leaders) - moved
        bystanders = groups_on(kept, args.bystanders, f"by{k}") if args.bystanders else []
        t = time.perf_counter()
        asyncio.run(commit_all([ports[victim]] * len(groups), groups, args.partitions, args.rounds))
        if bystanders:
            asyncio.run(commit_all([ports[leaders[partition_for(g, 50)]] for g in bystanders], bystanders,
                                   args.partitions, args.rounds))
        commit_s = time.perf_counter() - t
        records = args.groups * args.partitions * args.rounds
        before = Poller(ports, groups, args.partitions, args.rounds)
        try:
            asyncio.run(before.run(list(ports), 60))
        finally:
            before.close()
        if len(before.answered) != len(groups):
            raise RuntimeError(f"only {len(before.answered)} groups answered before the kill: {before.errors}")
        survivors = [b for b in ports if b != victim]
        print(f"  trial {k + 1}: controller {controller}, victim {victim} leads {len(moved)} __consumer_offsets "
              f"partitions; {len(groups)} groups committed {records} offsets in {commit_s:.1f} s"
              + (f"; {len(bystanders)} bystander groups on the other brokers" if bystanders else ""))
        pids = [p for p in broker_pids(cluster) if p != state.brokers[victim].pid]
        poller = Poller({b: ports[b] for b in survivors}, groups, args.partitions, args.rounds)
        load = Load(pids)
        watcher = Watcher({b: ports[b] for b in survivors}, bystanders, args.partitions, args.rounds)

        async def measure() -> None:
            done = asyncio.Event()

            async def main_poll() -> None:
                try:
                    await poller.run(survivors, 120, start_after=t_kill)
                finally:
                    await asyncio.sleep(1.0)  # the bystanders are watched a second longer
                    done.set()

            await asyncio.gather(main_poll(), watcher.run_until(survivors, done, t_kill) if bystanders
                                 else asyncio.sleep(0))

        t_kill = time.time()
        cluster.kill_broker(victim)
        try:
            asyncio.run(measure())
        finally:
            poller.close()
            watcher.close()
        lo = load.done()
        if len(poller.answered) != len(groups):
            raise RuntimeError(f"only {len(poller.answered)}/{len(groups)} groups answered after the kill: "
                               f"{poller.errors}")
        t_all = max(poller.answered.values())
        outages = [watcher.recovered.get(g, float("inf")) - ts[0] for g, ts in watcher.failed.items()]
        since = int(t_kill * 1000) - 1
        lai, loaded, change, reloaded = [], [], [], []
        for b in survivors:
            path = Path(state.brokers[b].dir) / "data" / "state-change.log"
            for d in read_lines(path, since, {"LeaderAndIsrReceived", "GroupCoordinatorLoaded", "BrokerChange"}):
                if d["event"] == "LeaderAndIsrReceived":
                    mine = [tp for tp, (leader, _) in d.get("leaders", {}).items()
                            if tp.startswith(OFFSETS_TOPIC + "-") and leader == b
                            and int(tp.rsplit("-", 1)[1]) in moved]
                    if mine:
                        lai.append((d["time_ms"], b, len(mine)))
                elif d["event"] == "GroupCoordinatorLoaded" and d.get("partition") in moved:
                    loaded.append(d)
                elif d["event"] == "GroupCoordinatorLoaded":
                    reloaded.append(d)  # a partition the survivor led already, loaded again
                elif d["event"] == "BrokerChange" and victim in d.get("dead", []):
                    change.append(d["time_ms"])
        if not lai:
            raise RuntimeError("no LeaderAndIsrReceived line moving the victim's partitions")
        t_lai = min(t for t, _, _ in lai) / 1000
        t_loaded = max(d["time_ms"] for d in loaded) / 1000 if loaded else float("nan")
        load_ms = [float(d["load_ms"]) for d in loaded]
        r = {
            "victim": victim, "moved": len(moved), "records": records,
            "detect_s": (min(change) / 1000 - t_kill) if change else float("nan"),
            "lai_after_kill_s": t_lai - t_kill,
            "i_s": t_all - t_lai,
            "ii_last_loaded_s": t_loaded - t_lai,
            "load_ms_max": max(load_ms, default=float("nan")), "load_ms_sum": sum(load_ms),
            "loaded_lines": len(loaded), "groups_in_lines": sum(int(d.get("groups", 0)) for d in loaded),
            "reloaded": len(reloaded), "reloaded_groups": sum(int(d.get("groups", 0)) for d in reloaded),
            "client_after_loaded_s": t_all - t_loaded,
            "poll_rounds": poller.rounds, "busy": lo["busy"], "others": lo["others"],
            "first_group_s": min(poller.answered.values()) - t_lai,
            "found_first_s": min(poller.found.values()) - t_lai,
            "found_all_s": max(poller.found.values()) - t_lai,
            "lai_spread_s": (max(t for t, _, _ in lai) - min(t for t, _, _ in lai)) / 1000,
            "bystanders_failed": len(watcher.failed),
            "bystanders_outage_max_s": max(outages, default=0.0),
            "bystanders_outage_p50_s": median(outages) if outages else 0.0,
        }
        print(f"    kill→BrokerChange {r['detect_s']:.2f} s, kill→LeaderAndIsr {r['lai_after_kill_s']:.2f} s; "
              f"(i) LeaderAndIsr→all {len(groups)} groups answer {r['i_s']:.3f} s (first {r['first_group_s']:.3f} s);"
              f" (ii) load_ms max {r['load_ms_max']:.0f}, sum {r['load_ms_sum']:.0f} over {len(loaded)} partitions "
              f"({r['groups_in_lines']} groups; {r['reloaded']} partitions already led reloaded, "
              f"{r['reloaded_groups']} groups; bystanders not answering: {r['bystanders_failed']}, outage median "
              f"{r['bystanders_outage_p50_s']:.3f} s, max {r['bystanders_outage_max_s']:.3f} s, their errors "
              f"{watcher.errors}), LeaderAndIsr→last loaded {r['ii_last_loaded_s']:.3f} s; "
              f"found first {r['found_first_s']:.3f} s, all {r['found_all_s']:.3f} s; poll rounds {poller.rounds}; "
              f"errors seen {poller.errors}; busy {lo['busy']:.0%}, "
              f"others {lo['others']:.0%}")
        return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=4, help="offsets committed per group (default 4)")
    ap.add_argument("--rounds", type=int, default=2, help="commits of each offset (default 2)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bystanders", type=int, default=0,
                    help="groups whose coordinator is a survivor, also committed and watched (default 0)")
    ap.add_argument("--write", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--keep-dir", action="store_true")
    args = ap.parse_args()
    results = [trial(args, k) for k in range(args.repeat)]

    def col(key: str, fmt: str = "{:.3f}") -> str:
        vals = [float(r[key]) for r in results]
        return f"{fmt.format(median(vals))} ({' / '.join(fmt.format(v) for v in vals)})"

    i_med = median([float(r["i_s"]) for r in results])
    verdicts = [
        f"(i) LeaderAndIsr → all {args.groups} groups answering: {i_med:.3f} s = {i_med / TARGET_S:.2f}× the "
        f"{TARGET_S:g} s target ({'meets' if i_med < TARGET_S else 'misses'})",
        f"(ii) broker-side load: LeaderAndIsr → last GroupCoordinatorLoaded "
        f"{median([float(r['ii_last_loaded_s']) for r in results]):.3f} s, slowest partition load "
        f"{median([float(r['load_ms_max']) for r in results]):.0f} ms",
    ]
    table = "\n".join([
        "| figure | median (each trial) |", "|---|---:|",
        f"| `__consumer_offsets` partitions moved | {col('moved', '{:.0f}')} |",
        f"| offset records in them | {col('records', '{:.0f}')} |",
        f"| kill → controller's BrokerChange s | {col('detect_s')} |",
        f"| kill → first LeaderAndIsrReceived s | {col('lai_after_kill_s')} |",
        f"| **(i) LeaderAndIsr → every group answers OffsetFetch s** | {col('i_s')} |",
        f"| LeaderAndIsr → first group answers s | {col('first_group_s')} |",
        f"| LeaderAndIsr → FindCoordinator names a new coordinator, first group s | {col('found_first_s')} |",
        f"| LeaderAndIsr → FindCoordinator names a new coordinator, last group s | {col('found_all_s')} |",
        f"| (ii) LeaderAndIsr → last GroupCoordinatorLoaded s | {col('ii_last_loaded_s')} |",
        f"| (ii) `load_ms`, slowest partition | {col('load_ms_max', '{:.0f}')} |",
        f"| (ii) `load_ms`, sum over the moved partitions | {col('load_ms_sum', '{:.0f}')} |",
        f"| partitions the survivors already led, unloaded and loaded again | {col('reloaded', '{:.0f}')} |",
        f"| groups in them (unrelated to the killed broker) | {col('reloaded_groups', '{:.0f}')} |",
        *([f"| bystander groups (coordinator survived) that failed to answer at least once | "
           f"{col('bystanders_failed', '{:.0f}')} |",
           f"| … their outage (first failed poll to the next answer), median s | "
           f"{col('bystanders_outage_p50_s')} |",
           f"| … their outage, longest s | {col('bystanders_outage_max_s')} |"]
          if args.bystanders else []),
        f"| last loaded → client has every group s | {col('client_after_loaded_s')} |",
        f"| client poll rounds | {col('poll_rounds', '{:.0f}')} |",
        f"| machine busy / other processes | {' / '.join(format(r['busy'], '.0%') for r in results)}; "
        f"{' / '.join(format(r['others'], '.0%') for r in results)} |",
    ])
    print(table)
    for v in verdicts:
        print(v)
    if args.write:
        heading = ("### Coordinator failover (`bench/coordinator_failover.py`)" if not args.bystanders else
                   f"### Coordinator failover with {args.bystanders} bystander groups "
                   f"(`bench/coordinator_failover.py --bystanders {args.bystanders}`)")
        section = "\n".join([
            heading, "",
            f"Command: `python bench/coordinator_failover.py --groups {args.groups} --partitions {args.partitions} "
            f"--rounds {args.rounds} --repeat {args.repeat}"
            + (f" --bystanders {args.bystanders}" if args.bystanders else "") + "`", "",
            f"Machine: {machine_line()}; per trial a fresh cluster of 3 broker processes and ZooKeeper on the same "
            "CPUs as the polling client.", "",
            f"What is timed: {args.groups} standalone groups whose `__consumer_offsets` partitions are led by one "
            f"broker (not the controller), each with {args.partitions} committed offsets (committed {args.rounds} "
            "times, so the log holds history); that broker SIGKILLed. A client in the bench polls all groups as "
            "clients do (batched FindCoordinator v4 at a live broker, then one OffsetFetch v8 per coordinator "
            "naming its groups) until each answers with exactly its offsets. The start is the first "
            "`LeaderAndIsrReceived` line (state-change log) that makes a survivor leader of one of the moved "
            "partitions — `ControllerRequestAccepted` lines are written only when a controller epoch changes, "
            "and a follower's death changes none. (ii) is the coordinator's own loading: its "
            "`GroupCoordinatorLoaded` lines (`load_ms` per partition). Medians of the trials."
            + (f" Bystanders: {args.bystanders} more groups, committed the same way, whose coordinators survive; "
               "a second poller in the same process asks for their offsets in a loop from the kill until a second "
               "after the main poll ends, and notes every poll in which one of them does not answer with its "
               "offsets." if args.bystanders else ""), "",
            table, "",
            *[f"- {v}" for v in verdicts], "",
        ])
        write_subsection(REPO / "bench" / "RESULTS.md", heading, section)


if __name__ == "__main__":
    main()
