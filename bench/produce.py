"""Produce throughput and latency of a local 3-broker praha cluster (confluent-kafka).

Prints, for 1 KiB records:
- acks=all, RF 3 (min.insync.replicas 2): MB/s and p50/p99 delivery latency, saturated
  (latency then includes the client's queue) and paced at --paced-rate (the pipeline alone)
- acks=1,   RF 1: the same (no replication: the single-broker ceiling)
- the rate of the memory warm-up write before each run (see `warm_memory`): a low one
  says the machine handed out cold memory, and every file append of the run was slow
- with --repeat N, the saturated pair N times, alternating, and the median of each and of
  the ratio (one short run is at the mercy of whatever else the machine does)
- CPU seconds per GiB of the brokers and of the client, and the share of the machine's
  CPUs other processes used meanwhile (other work on it skews every figure)
- the machine's limit: loopback TCP into a file append (one process, big writes)
- the yardstick: a raw write()+fsync of the same bytes, its MB/s and CPU seconds per GiB,
  and the brokers' RF 3 CPU per GiB as a multiple of it (CPU per GiB swells on a loaded or
  cold machine for any writer; the multiple swells less)
and the ratio RF3/RF1. Figures, not asserts. The cluster (embedded ZooKeeper + 3
broker processes) lives in a temporary directory and is stopped by PID at the end.

With `--profile DIR`, py-spy (raw collapsed stacks, 200 Hz, not pausing the brokers) records
each broker during the first saturated RF 3 run into DIR/broker-<id>.txt (summarise them with
`bench/profile_summary.py`, which also draws a flame graph), and `perf record`, if installed,
all three (flat profile by shared object and symbol in DIR/perf.txt).

Usage: .venv/bin/python bench/produce.py [--mb 512] [--repeat 3] [--no-warm] [--partitions 6] [--paced-rate 20]
       [--profile DIR] [--keep-dir]
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psutil
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient

from praha.admin.status import cluster_status
from praha.cluster.local import ClusterError, LocalCluster
from praha.common import ReplicaAssignment, TopicAssignment
from praha.testing.cluster import wait_for
from praha.zk.store import ZkStore

try:  # run as a script from the repo root or from bench/
    from bench.harness import start_py_spy, stop_py_spy
except ImportError:  # pragma: no cover
    from harness import start_py_spy, stop_py_spy  # type: ignore[no-redef]

RECORD = 1024
BROKER_CONFIG = {"zookeeper.session.timeout.ms": "6000", "replica.fetch.wait.max.ms": "500"}


def start_cluster(cluster: LocalCluster, overrides: dict[str, str] | None = None, timeout: float = 60.0):
    """`cluster.up(3)`, looking again when the launcher mistakes a just-forked broker (its
    command line is still the parent's) for one that exited during start-up."""
    try:
        return cluster.up(3, overrides=BROKER_CONFIG if overrides is None else overrides, timeout=timeout)
    except ClusterError as e:
        if "exited during start-up" not in str(e):
            raise
        time.sleep(2.0)
        state = cluster.load()
        if not all(cluster.broker_running(b) for b in state.brokers.values()):
            raise
        cluster.wait_until_ready(state, set(state.brokers), 60)
        return state


def create_topic(cluster: LocalCluster, store: ZkStore, zk: str, name: str, partitions: int, rf: int,
                 config: dict[str, str]) -> None:
    ids = sorted(cluster.load().brokers)
    assignment = {p: ReplicaAssignment(tuple(ids[(p + i) % len(ids)] for i in range(rf))) for p in range(partitions)}
    store.create_topic(name, TopicAssignment(assignment), config)
    wait_for(lambda: all(p["leader"] >= 0 for p in cluster_status(zk, store=store)["topics"][name]["partitions"]), 30)
    bs = bootstrap(cluster)
    admin = AdminClient({"bootstrap.servers": bs})
    wait_for(lambda: all(p.leader >= 0 for p in admin.list_topics(name,
                                                                  timeout=5).topics[name].partitions.values()), 30)


def bootstrap(cluster: LocalCluster) -> str:
    return ",".join(f"127.0.0.1:{b.port}" for b in cluster.load().brokers.values())


def high_watermarks(bs: str, topic: str, partitions: int) -> int:
    c = Consumer({"bootstrap.servers": bs, "group.id": "bench-hw", "log_level": 3})
    try:
        return sum(c.get_watermark_offsets(CTP(topic, p), timeout=10)[1] for p in range(partitions))
    finally:
        c.close()


def cpu_seconds(pids: list[int]) -> float:
    return sum(cpu_split(pids))


def cpu_split(pids: list[int]) -> tuple[float, float]:
    """User and system CPU seconds of `pids` (from /proc/PID/stat)."""
    user = system = 0.0
    for pid in pids:
        t = psutil.Process(pid).cpu_times()
        user += t.user
        system += t.system
    return user, system


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (from /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def produce(bs: str, topic: str, acks: str, total_mb: int, partitions: int, broker_pids: list[int],
            rate_mb_s: float | None = None) -> dict[str, float]:
    """Saturate (or pace at `rate_mb_s`) a confluent-kafka producer; MB/s, latencies, CPU."""
    p = Producer({
        "bootstrap.servers": bs, "acks": acks, "linger.ms": 5, "batch.size": 1_000_000,
        "queue.buffering.max.kbytes": 65536, "queue.buffering.max.messages": 1_000_000,
        # the Java producer's default; librdkafka's (1M) sends a tiny request per linger
        # while earlier ones wait for replication, since a broker reads one request per
        # connection at a time, so batches never grow under acks=all
        "max.in.flight.requests.per.connection": 5,
        "log_level": 3,
    })
    value = os.urandom(RECORD)
    n = total_mb * (1 << 20) // RECORD
    latencies: list[float] = []
    errors = [0]

    def report(err, msg):
        if err is not None:
            errors[0] += 1
        else:
            latencies.append(msg.latency())

    for i in range(1000):  # warm-up: metadata and connections
        p.produce(topic, value=value, partition=i % partitions)
    p.flush(30)
    hw0 = high_watermarks(bs, topic, partitions)
    (bu0, bs0), busy0 = cpu_split(broker_pids), machine_busy_seconds()
    load0 = os.getloadavg()[0]
    c0 = time.process_time()
    t0 = time.perf_counter()
    for i in range(n):
        if rate_mb_s is not None and i % 64 == 0:
            ahead = i * RECORD / (rate_mb_s * 1e6) - (time.perf_counter() - t0)
            if ahead > 0:
                time.sleep(ahead)
        while True:
            try:  # latency sampled on every 16th record: per-record callbacks cost client CPU
                if i & 15:
                    p.produce(topic, value=value, partition=i % partitions)
                else:
                    p.produce(topic, value=value, partition=i % partitions, on_delivery=report)
                break
            except BufferError:
                p.poll(0.005)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(120)
    dt = time.perf_counter() - t0
    missing = n - (high_watermarks(bs, topic, partitions) - hw0)  # every failure, sampled or not
    client = time.process_time() - c0
    bu1, bs1 = cpu_split(broker_pids)
    brokers = bu1 + bs1 - bu0 - bs0
    others = machine_busy_seconds() - busy0 - brokers - client
    latencies.sort()
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 100 else [0.0] * 99
    gib = n * RECORD / (1 << 30)
    return {"mb_s": n * RECORD / dt / 1e6, "p50_ms": q[49] * 1000, "p99_ms": q[98] * 1000,
            "seconds": dt, "errors": max(errors[0], missing), "records": n, "broker_cpu_gib": brokers / gib,
            "client_cpu_gib": client / gib, "broker_sys_share": (bs1 - bs0) / brokers if brokers else 0.0,
            "load": load0,
            "others": max(others, 0.0) / (dt * (os.cpu_count() or 1))}


def start_perf(pids: list[int], out: Path) -> subprocess.Popen | None:
    """`perf record` (if installed) on the brokers: where their CPU goes below Python
    (the interpreter, the kernel's copies, CRC32C)."""
    exe = shutil.which("perf")
    if exe is None:
        return None
    return subprocess.Popen([exe, "record", "-F", "499", "-p", ",".join(map(str, pids)), "-o", str(out)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def perf_report(data: Path) -> None:
    """perf's flat profile (by shared object and symbol) next to `data`, as perf.txt."""
    exe = shutil.which("perf")
    if exe is None or not data.exists():
        return
    with open(data.with_suffix(".txt"), "w") as f:
        subprocess.run([exe, "report", "-i", str(data), "--stdio", "--sort", "dso,sym", "--percent-limit", "0.3"],
                       stdout=f, stderr=subprocess.DEVNULL, check=False, timeout=300)


def warm_memory(directory: str, mb: int) -> float:
    """Write `mb` MiB to a scratch file and delete it; returns the write rate (MB/s).

    Why: on this machine kind (a VM with free page reporting) memory the guest freed
    goes back to the host within seconds, and the next page cache page that lands on it
    costs a host fault: file appends then run at ~400 MB/s instead of ~5 GB/s, whatever
    the writer. A run that follows this write reuses the pages it just freed, so it
    measures the brokers rather than the hypervisor. `--no-warm` skips it."""
    chunk = os.urandom(1 << 20)
    path = os.path.join(directory, "warm.bin")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.perf_counter()
    try:
        for _ in range(mb):
            os.write(fd, chunk)
    finally:
        os.close(fd)
        os.unlink(path)
    return mb * (1 << 20) / (time.perf_counter() - t0) / 1e6


def raw_write_fsync(total_mb: int, directory: str) -> tuple[float, float]:
    """The yardstick: the same bytes written with write() (1 MiB each) and one fsync, in
    this process; (MB/s, CPU seconds per GiB). Its CPU per GiB moves with the machine's
    state (other load, cold memory) much as the brokers' does, so the brokers' figure is
    also given as a multiple of it."""
    chunk = os.urandom(1 << 20)
    path = os.path.join(directory, "yardstick.bin")
    c0, t0 = time.thread_time(), time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(total_mb):
            os.write(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    dt, cpu = time.perf_counter() - t0, time.thread_time() - c0
    os.unlink(path)
    return total_mb * (1 << 20) / dt / 1e6, cpu / (total_mb / 1024)


def machine_limit(total_mb: int, directory: str) -> float:
    """Loopback TCP into a file (1 MiB sends, appends): this machine's ceiling for a broker."""
    chunk = os.urandom(1 << 20)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    path = os.path.join(directory, "limit.bin")
    done = threading.Event()

    def sink() -> None:
        conn, _ = srv.accept()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        while True:
            k = conn.recv_into(view)
            if not k:
                break
            os.write(fd, view[:k])
        os.close(fd)
        conn.close()
        done.set()

    t = threading.Thread(target=sink, daemon=True)
    t.start()
    c = socket.create_connection(srv.getsockname())
    t0 = time.perf_counter()
    for _ in range(total_mb):
        c.sendall(chunk)
    c.close()
    done.wait()
    dt = time.perf_counter() - t0
    srv.close()
    os.unlink(path)
    return total_mb * (1 << 20) / dt / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=512, help="MiB to produce per run (default 512)")
    ap.add_argument("--repeat", type=int, default=3, help="saturated RF3/RF1 pairs to run, alternating (default 3)")
    ap.add_argument("--partitions", type=int, default=6, help="partitions of each topic (default 6)")
    ap.add_argument("--warm", action=argparse.BooleanOptionalAction, default=True,
                    help="write and delete a scratch file before each run, so that the run's page cache "
                         "lands on memory the VM has already backed (default: on; see warm_memory)")
    ap.add_argument("--paced-rate", type=float, default=20.0, help="MB/s of the latency runs (default 20)")
    ap.add_argument("--profile", metavar="DIR", help="py-spy each broker during the first saturated RF 3 run "
                                                      "(raw collapsed stacks in DIR/broker-<id>.txt) "
                                                      "and, if installed, perf (DIR/perf.txt)")
    ap.add_argument("--keep-dir", action="store_true")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="praha-bench-")
    cluster = LocalCluster(root)
    try:
        state = start_cluster(cluster)
        store = ZkStore(state.zookeeper).start()
        try:
            create_topic(cluster, store, state.zookeeper, "rf3", args.partitions, 3, {"min.insync.replicas": "2"})
            create_topic(cluster, store, state.zookeeper, "rf1", args.partitions, 1, {})
        finally:
            store.stop()
        bs = bootstrap(cluster)
        pids = [b.pid for b in cluster.load().brokers.values()]
        # a consumer with a group.id (high_watermarks) makes the brokers create __consumer_offsets:
        # its 50 logs are created now, not inside the first measured run
        def offsets_answered() -> bool:
            try:
                high_watermarks(bs, "rf1", args.partitions)
                return True
            except KafkaException:  # a broker that has not heard of the topic yet
                return False
        wait_for(offsets_answered, 60)
        wait_for(lambda: all(p["leader"] >= 0 for p in
                             cluster_status(state.zookeeper)["topics"].get("__consumer_offsets", {"partitions": [
                                 {"leader": -1}]})["partitions"]), 60)
        warm_rates: list[float] = []

        profile = [args.profile]

        def run(topic: str, acks: str, replicas: int, mb: int, rate: float | None = None) -> dict[str, float]:
            if args.warm:  # the run appends `replicas` copies of `mb`, plus headroom
                warm_rates.append(warm_memory(root, 2 * replicas * mb))
            spies: list[subprocess.Popen | None] = []
            if profile[0] and replicas == 3 and rate is None:
                out = Path(profile[0])
                out.mkdir(parents=True, exist_ok=True)
                spies = [start_py_spy(b.pid, out / f"broker-{b.id}.txt", 3600, fmt="raw")
                         for b in cluster.load().brokers.values()]
                spies.append(start_perf(pids, out / "perf.data"))
                profile[0] = None
                time.sleep(1.0)  # let them attach
            try:
                return produce(bs, topic, acks, mb, args.partitions, pids, rate_mb_s=rate)
            finally:
                for spy in spies:
                    stop_py_spy(spy)
                if spies:
                    perf_report(Path(args.profile) / "perf.data")

        pairs = [(run("rf3", "all", 3, args.mb), run("rf1", "1", 1, args.mb)) for _ in range(max(args.repeat, 1))]
        paced_mb = max(args.mb // 8, 16)
        rf3_paced = run("rf3", "all", 3, paced_mb, args.paced_rate)
        rf1_paced = run("rf1", "1", 1, paced_mb, args.paced_rate)
        limit_mb = max(args.mb, 256)
        if args.warm:
            warm_rates.append(warm_memory(root, 2 * limit_mb))
        limit = machine_limit(limit_mb, root)
        if args.warm:
            warm_rates.append(warm_memory(root, 2 * args.mb))
        yard_mb_s, yard_cpu = raw_write_fsync(args.mb, root)
        print(f"produce, 1 KiB records, {args.mb} MiB per saturated run, {args.partitions} partitions, "
              f"3 brokers on {os.cpu_count()} CPUs (the client shares them)")
        print(f"{'run':<30}{'MB/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'err':>5}"
              f"{'broker CPU s/GiB':>18}{'(sys)':>7}{'client CPU s/GiB':>18}{'other load':>12}{'loadavg':>9}")
        rows = []
        for i, (rf3, rf1) in enumerate(pairs):
            tag = f" #{i + 1}" if len(pairs) > 1 else ""
            rows += [(f"acks=all RF3{tag}", rf3), (f"acks=1   RF1{tag}", rf1)]
        rows += [(f"acks=all RF3 at {args.paced_rate:g} MB/s", rf3_paced),
                 (f"acks=1   RF1 at {args.paced_rate:g} MB/s", rf1_paced)]
        for name, r in rows:
            print(f"{name:<30}{r['mb_s']:>8.1f}{r['p50_ms']:>9.1f}{r['p99_ms']:>9.1f}{r['errors']:>5}"
                  f"{r['broker_cpu_gib']:>18.2f}{r['broker_sys_share'] * 100:>6.0f}%{r['client_cpu_gib']:>18.2f}"
                  f"{r['others'] * 100:>11.0f}%{r['load']:>9.1f}")
        print(f"{'loopback+append limit':<30}{limit:>8.1f}")
        print(f"{'raw write()+fsync (yardstick)':<30}{yard_mb_s:>8.1f}{'':>23}{yard_cpu:>18.2f}")
        rf3_cpu = [rf3["broker_cpu_gib"] for rf3, _ in pairs]
        print(f"RF3 broker CPU per GiB / the yardstick's: {', '.join(f'{x / yard_cpu:.1f}' for x in rf3_cpu)} "
              f"(median {statistics.median(rf3_cpu) / yard_cpu:.1f})")
        if warm_rates:
            print(f"memory warm-up writes (MB/s, before each run): {' '.join(f'{x:.0f}' for x in warm_rates)}")
        else:
            print("memory warm-up off (--no-warm): runs may land on cold memory")
        ratios = [rf3["mb_s"] / rf1["mb_s"] for rf3, rf1 in pairs]
        if len(pairs) == 1:
            print(f"RF3 acks=all / RF1 acks=1 = {ratios[0]:.2f}")
        else:
            print(f"median of {len(pairs)}: RF3 acks=all {statistics.median(r['mb_s'] for r, _ in pairs):.1f} MB/s, "
                  f"RF1 acks=1 {statistics.median(r['mb_s'] for _, r in pairs):.1f} MB/s, "
                  f"ratio {statistics.median(ratios):.2f} (each pair: {', '.join(f'{x:.2f}' for x in ratios)})")
    finally:
        cluster.down()
        if not args.keep_dir:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"cluster dir kept: {root}")


if __name__ == "__main__":
    main()
