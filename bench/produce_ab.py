"""Two codes' produce path side by side, under the same load at the same moment.

On a machine others share, broker CPU per GiB swings by 2x from one run to the next (other
processes' load inflates every CPU second and shrinks the requests), far more than the
changes being judged. Here two local 3-broker clusters run at once, one on each code (the
`praha` package from tree A and from tree B: each cluster's brokers start with that tree
first on PYTHONPATH), and two producer processes write the same RF 3 acks=all load (1 KiB
records, as `bench/produce.py`) into them simultaneously. Each round gives both clusters'
broker CPU seconds per GiB acknowledged (user+sys of their processes, /proc) and MB/s; the
B/A ratio of a round compares codes that saw the same machine. Beside it, the requests
the brokers handled per GiB (all APIs, from their /metrics): smaller, more frequent
requests cost more CPU per GiB, so a code that answers sooner can read dearer; the last
ratio is CPU per request handled. The order in which the
producers start alternates between rounds. Every acknowledged record is checked against
the high watermarks. The clusters are stopped by PID.

Usage: .venv/bin/python bench/produce_ab.py --a TREE --b TREE [--mb 128] [--rounds 4] [--partitions 6]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import tempfile
import time
import urllib.request

from praha.cluster.local import LocalCluster
from praha.zk.store import ZkStore

try:  # run as a script from the repo root or from bench/
    from bench.produce import bootstrap, create_topic, produce, start_cluster, warm_memory
except ImportError:  # pragma: no cover
    from produce import bootstrap, create_topic, produce, start_cluster, warm_memory  # type: ignore[no-redef]


def _producer(bs: str, mb: int, partitions: int, pids: list[int], delay: float, go, out) -> None:
    """One producer process: wait for the common start, then `produce` (bench/produce.py)."""
    go.wait()
    time.sleep(delay)
    out.put(produce(bs, "rf3", "all", mb, partitions, pids))


def requests_handled(cluster: LocalCluster) -> float:
    """Requests the cluster's brokers have handled so far (their `/metrics`, all APIs)."""
    total = 0.0
    for b in cluster.load().brokers.values():
        with urllib.request.urlopen(f"http://127.0.0.1:{b.actual_metrics_port}/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("praha_broker_requests "):
                    total += float(line.split()[1])
    return total


def start(tree: str, root: str, partitions: int) -> tuple[LocalCluster, str, list[int]]:
    """A 3-broker cluster whose brokers run the code in `tree`, with an RF 3 topic."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = tree
    cluster = LocalCluster(root)
    try:
        state = start_cluster(cluster)
    except BaseException:
        cluster.down()  # what did start (ZooKeeper, brokers) is stopped, also when it never got ready
        raise
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    store = ZkStore(state.zookeeper).start()
    try:
        create_topic(cluster, store, state.zookeeper, "rf3", partitions, 3, {"min.insync.replicas": "2"})
    finally:
        store.stop()
    return cluster, bootstrap(cluster), [b.pid for b in cluster.load().brokers.values()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True,
                    help="tree A (a checkout holding praha/), e.g. a git worktree of the old commit")
    ap.add_argument("--b", required=True, help="tree B")
    ap.add_argument("--mb", type=int, default=128, help="MiB each producer writes per round (default 128)")
    ap.add_argument("--rounds", type=int, default=4, help="rounds (default 4)")
    ap.add_argument("--partitions", type=int, default=6, help="partitions of each topic (default 6)")
    args = ap.parse_args()
    trees = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
    root = tempfile.mkdtemp(prefix="praha-ab-")
    clusters: dict[str, LocalCluster] = {}
    ctx = mp.get_context("spawn")
    try:
        targets = {}
        for name, tree in trees.items():
            cluster, bs, pids = start(tree, os.path.join(root, name), args.partitions)
            clusters[name] = cluster
            targets[name] = (bs, pids)
        print(f"A = {trees['A']}\nB = {trees['B']}")
        print(f"RF 3 acks=all, 1 KiB records, {args.mb} MiB per producer per round, {args.partitions} partitions, "
              f"both clusters at once on {os.cpu_count()} CPUs")
        print(f"{'round':<7}{'first':>6}{'loadavg':>9}{'A MB/s':>9}{'A CPU s/GiB':>13}{'B MB/s':>9}"
              f"{'B CPU s/GiB':>13}{'B/A CPU':>9}{'A req/GiB':>11}{'B req/GiB':>11}{'B/A CPU per req':>17}{'err':>5}")
        ratios = []
        rows = []
        for r in range(args.rounds):
            warm_memory(root, 4 * 3 * args.mb)
            first = "A" if r % 2 == 0 else "B"
            go = ctx.Event()
            queues = {name: ctx.Queue() for name in trees}
            procs = {name: ctx.Process(target=_producer, args=(
                targets[name][0], args.mb, args.partitions, targets[name][1], 0.0 if name == first else 0.05,
                go, queues[name])) for name in trees}
            for p in procs.values():
                p.start()
            time.sleep(3.0)  # both children imported and waiting
            load = os.getloadavg()[0]
            req0 = {name: requests_handled(clusters[name]) for name in trees}
            go.set()
            res = {name: queues[name].get(timeout=900) for name in trees}
            for name in trees:  # requests per GiB acknowledged (the warm-up's few included)
                res[name]["req_gib"] = (requests_handled(clusters[name]) - req0[name]) / (args.mb / 1024)
            for p in procs.values():
                p.join(60)
            a, b = res["A"], res["B"]
            ratio = b["broker_cpu_gib"] / a["broker_cpu_gib"]
            ratios.append(ratio)
            rows.append((a, b))
            print(f"{r + 1:<7}{first:>6}{load:>9.1f}{a['mb_s']:>9.1f}{a['broker_cpu_gib']:>13.2f}{b['mb_s']:>9.1f}"
                  f"{b['broker_cpu_gib']:>13.2f}{ratio:>9.2f}{a['req_gib']:>11.0f}{b['req_gib']:>11.0f}"
                  f"{ratio * a['req_gib'] / b['req_gib']:>17.2f}{a['errors'] + b['errors']:>5}", flush=True)
        print(f"median: A {statistics.median(a['broker_cpu_gib'] for a, _ in rows):.2f} s/GiB, "
              f"B {statistics.median(b['broker_cpu_gib'] for _, b in rows):.2f} s/GiB, "
              f"B/A {statistics.median(ratios):.2f} (rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
    finally:
        for cluster in clusters.values():
            cluster.down()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
