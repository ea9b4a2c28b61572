"""Controller failover time against the raw ZooKeeper read time of the same znodes.

For each size P (partitions; topics of 100 partitions, RF 3 over brokers 1..6):
  1. start a fresh embedded ZooKeeper and pre-load it with multi-ops: per topic the
     config znode, the assignment znode, `partitions/`, `partitions/<p>/` and each
     partition's state znode (leader = first replica, ISR = all three);
  2. stand-ins for brokers 2..6: a tiny threaded Kafka-framed sink per broker on
     127.0.0.1 that answers LeaderAndIsr/UpdateMetadata/StopReplica with error_code 0
     (`praha.protocol` classes), registered as ephemeral `/brokers/ids/<id>` znodes of
     the bench's own session — so the bench measures the controller, not six brokers;
  3. stand-in 2 takes `/controller` (Kafka's election write, epoch + 1);
  4. per trial: time the raw reads of the topic assignment + partition state znodes from
     the bench's kazoo client, plain pipelined `get_async` (window 2000) and multi-read
     (OpCode 22, 500 paths per request; 50 for the larger topic znodes), no decoding;
     start the real broker 1 (`python -m praha broker start --config ...`), wait until
     its controller has processed Startup (so it watches `/controller`), delete
     `/controller`, and time until the `ControllerFailover` line (context loaded,
     UpdateMetadata sent) appears in its state-change log; cross-check with
     `praha_controller_last_failover_seconds` from its metrics endpoint (measured from
     the election, so a little lower) and note when every stand-in has received its
     UpdateMetadata; stop broker 1 by PID.
Figures, not asserts; medians over the trials. Every process started here is stopped by
PID in `finally` blocks, and every wait is bounded.

Usage: .venv/bin/python bench/failover.py [--sizes 1000,10000,100000] [--repeat 3]
       [--py-spy DIR]   (profile the broker during each failover; needs py-spy)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import socketserver
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from praha.common import (  # noqa: E402
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from praha.protocol.controller_apis import (  # noqa: E402
    LeaderAndIsrResponse,
    StopReplicaResponse,
    UpdateMetadataResponse,
)
from praha.protocol.framing import encode_response, parse_request_header  # noqa: E402
from praha.testing.cluster import scrape_metrics  # noqa: E402
from praha.zk import znodes as zn  # noqa: E402
from praha.zk.multiread import GET_DATA_OPCODE  # noqa: E402

try:  # the way ZkStore issues multi-reads (a cheaper chroot prefix than kazoo's), for a fair reference
    from praha.zk.store import _multi_read_async as multi_read_async  # noqa: E402
except ImportError:  # pragma: no cover
    from praha.zk.multiread import multi_read_async  # noqa: E402
from praha.zk.ops import CreateOp  # noqa: E402
from praha.zk.server import EmbeddedZooKeeper, free_port  # noqa: E402
from praha.zk.store import ZkStore  # noqa: E402

BROKERS = 6
RF = 3
CONTROLLER_BROKER = 1
STAND_IN_CONTROLLER = 2
LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = 4, 5, 6
PIPELINE_WINDOW = 2000
MULTI_READ_BATCH, MULTI_READ_TOPIC_BATCH, MULTI_READ_WINDOW = 500, 50, 16
TARGET_RATIO = 1.5
TARGET_100K_S = 14.0


# ------------------------------------------------------------------------- stand-in brokers
class _SinkHandler(socketserver.BaseRequestHandler):
    """Reads Kafka frames; answers the three controller APIs with error_code 0, records
    their arrival; closes the connection on anything else (e.g. a follower's Fetch)."""

    def handle(self) -> None:
        sink: StandInBroker = self.server.sink  # type: ignore[attr-defined]
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while not sink.closing:
            prefix = _recv_exact(sock, 4)
            if prefix is None:
                return
            (size,) = struct.unpack(">i", prefix)
            if size < 0 or size > 512 << 20:
                return
            body = _recv_exact(sock, size)
            if body is None:
                return
            try:
                header = parse_request_header(body)
            except Exception:  # noqa: BLE001 - not a frame we understand
                return
            if header.api_key == LEADER_AND_ISR:
                resp = LeaderAndIsrResponse(error_code=0, partition_errors=[])
            elif header.api_key == UPDATE_METADATA:
                resp = UpdateMetadataResponse(error_code=0)
            elif header.api_key == STOP_REPLICA:
                resp = StopReplicaResponse(error_code=0, partition_errors=[])
            else:
                return
            sink.record(header.api_key, size)
            sock.sendall(encode_response(header, resp, header.api_version))


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(min(n - len(buf), 1 << 20))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


class StandInBroker:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.closing = False
        self._lock = threading.Lock()
        self.received: list[tuple[int, float, int]] = []  # (api key, wall time, bytes)
        self.server = _Server(("127.0.0.1", 0), _SinkHandler)
        self.server.sink = self  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2},
                                       name=f"stand-in-{broker_id}", daemon=True)

    def start(self) -> "StandInBroker":
        self.thread.start()
        return self

    def info(self) -> BrokerInfo:
        return BrokerInfo(self.broker_id, (EndPoint("127.0.0.1", self.port),))

    def record(self, api_key: int, size: int) -> None:
        with self._lock:
            self.received.append((api_key, time.time(), size))

    def first_after(self, api_key: int, t0: float) -> tuple[float, int] | None:
        with self._lock:
            return next(((t, n) for k, t, n in self.received if k == api_key and t >= t0), None)

    def stop(self) -> None:
        self.closing = True
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------------- ZooKeeper pre-load
def topic_names(partitions: int, per_topic: int) -> list[tuple[str, int]]:
    out, left, i = [], partitions, 0
    while left > 0:
        n = min(per_topic, left)
        out.append((f"bench-{i:05d}", n))
        left -= n
        i += 1
    return out


def replicas_of(g: int) -> tuple[int, ...]:
    """RF 3 over brokers 1..6, leaders spread evenly (the first replica leads)."""
    return tuple((g + k) % BROKERS + 1 for k in range(RF))


def preload(store: ZkStore, topics: list[tuple[str, int]]) -> list[str]:
    """Write every topic's znodes with multi-ops, level by level; returns the state paths."""
    store.ensure_persistent_paths()
    store.get_or_create_cluster_id()
    levels: list[list[CreateOp]] = [[], [], [], []]
    state_paths: list[str] = []
    g = 0
    for t, n in topics:
        parts = {}
        for p in range(n):
            r = replicas_of(g)
            g += 1
            parts[p] = ReplicaAssignment(r)
            state = LeaderIsrAndControllerEpoch(LeaderAndIsr(r[0], r, 0, 0), 1)
            levels[2].append(CreateOp(zn.partition_path(t, p)))
            path = zn.tp_state_path(TopicPartition(t, p))
            levels[3].append(CreateOp(path, zn.encode_partition_state(state)))
            state_paths.append(path)
        levels[0].append(CreateOp(zn.config_topic_path(t), zn.encode_config({})))
        levels[0].append(CreateOp(zn.topic_path(t), zn.encode_topic_assignment(TopicAssignment(parts))))
        levels[1].append(CreateOp(zn.partitions_path(t)))
    for ops in levels:
        results = store.multi(ops)
        bad = [(op.path, r) for op, r in zip(ops, results) if not r.ok]
        if bad:
            raise RuntimeError(f"pre-load failed for {len(bad)} znodes, e.g. {bad[0]}")
    return state_paths


# ------------------------------------------------------------------------- raw reads
def raw_pipelined(client, paths: list[str], window: int = PIPELINE_WINDOW) -> float:
    """Plain kazoo `get_async` for every path, at most `window` outstanding."""
    t = time.perf_counter()
    inflight: deque = deque()
    for p in paths:
        if len(inflight) >= window:
            inflight.popleft().get(timeout=60)
        inflight.append(client.get_async(p))
    while inflight:
        inflight.popleft().get(timeout=60)
    return time.perf_counter() - t


def raw_multi_read(client, groups: list[tuple[list[str], int]], window: int = MULTI_READ_WINDOW) -> float:
    """Multi-read (OpCode 22) of every path; `groups` = (paths, paths per request)."""
    t = time.perf_counter()
    batches = [[(GET_DATA_OPCODE, p) for p in paths[i:i + step]]
               for paths, step in groups for i in range(0, len(paths), step)]
    inflight: deque = deque()
    for b in batches:
        if len(inflight) >= window:
            _check_multi(inflight.popleft().get(timeout=60))
        inflight.append(multi_read_async(client, b))
    while inflight:
        _check_multi(inflight.popleft().get(timeout=60))
    return time.perf_counter() - t


def _check_multi(results: list) -> None:
    for r in results:
        if isinstance(r, BaseException):
            raise RuntimeError(f"multi-read returned {r!r}")


# ------------------------------------------------------------------------- broker 1
@dataclass
class Trial:
    raw_pipelined_s: float
    raw_multi_s: float
    failover_s: float = float("nan")        # /controller deleted → ControllerFailover line
    metric_failover_s: float = float("nan")  # praha_controller_last_failover_seconds
    um_delivered_s: float = float("nan")     # → every stand-in received its UpdateMetadata
    line: dict = field(default_factory=dict)


class BrokerProcess:
    """The real broker 1, started in its own session and stopped by its PID."""

    def __init__(self, workdir: Path, zk_connect: str):
        self.dir = workdir
        self.port = free_port()
        self.metrics_port = free_port()
        self.data = workdir / "data"
        self.state_log = self.data / "state-change.log"
        self.config = workdir / "server.properties"
        props = {
            "broker.id": str(CONTROLLER_BROKER),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data),
            "zookeeper.connect": zk_connect,
            "zookeeper.session.timeout.ms": "6000",
            "praha.metrics.port": str(self.metrics_port),
            # measurement hygiene: no controlled shutdown between trials, and a leader
            # must not shrink the ISR of the pre-loaded partitions while a trial runs
            "controlled.shutdown.enable": "false",
            "replica.lag.time.max.ms": "3600000",
        }
        workdir.mkdir(parents=True, exist_ok=True)
        self.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.dir / "broker.log", "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "praha", "broker", "start", "--config", str(self.config)],
                cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else -1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def metrics(self) -> dict[str, float]:
        return scrape_metrics(self.metrics_port, timeout=5.0)

    def wait_controller_started(self, timeout: float) -> None:
        """Until the broker's controller has processed Startup (its /controller watch is armed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"broker 1 exited with {self.proc.returncode}; see {self.dir / 'broker.log'}")
            try:
                m = self.metrics()
                if m.get("praha_controller_events_processed_total", m.get("praha_controller_events_processed", 0)) >= 1:
                    if m.get("praha_controller_active_controller") == 0.0:
                        return
            except Exception:  # noqa: BLE001 - not serving yet
                pass
            time.sleep(0.05)
        raise RuntimeError(f"broker 1 did not start within {timeout:.0f}s; see {self.dir / 'broker.log'}")

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM by PID; SIGKILL after `grace` seconds."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass


def wait_for_line(path: Path, event: str, timeout: float, alive) -> dict:
    """Tail `path` until a JSON line with `"event": event` appears (bounded)."""
    deadline = time.monotonic() + timeout
    offset = 0
    pending = b""
    while time.monotonic() < deadline:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                chunk = f.read()
        except FileNotFoundError:
            chunk = b""
        if chunk:
            offset += len(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                if f'"event":"{event}"'.encode() in raw:
                    return json.loads(raw)
        elif not alive():
            raise RuntimeError(f"broker exited before writing {event}")
        time.sleep(0.005)
    raise RuntimeError(f"no {event} line in {path} within {timeout:.0f}s")


def start_py_spy(pid: int, out: Path, duration: int) -> subprocess.Popen | None:
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(exe).exists():
        print("  (py-spy not found; no profile)")
        return None
    return subprocess.Popen([exe, "record", "-p", str(pid), "-o", str(out), "-d", str(duration), "-r", "200",
                             "-f", "speedscope", "--nonblocking"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def stop_process(proc: subprocess.Popen | None, grace: float = 30.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def take_controller_seat(store: ZkStore) -> int:
    """Stand-in 2 wins the election (as a real broker would); returns the epoch."""
    for _ in range(50):
        if store.get_controller_id() is None:
            return store.register_controller_and_increment_epoch(STAND_IN_CONTROLLER)[0]
        time.sleep(0.2)
    raise RuntimeError("/controller still held by someone else")


def clear_broker_1(store: ZkStore) -> None:
    """After broker 1 stopped: drop its ephemerals if its session lingers (after a SIGKILL)."""
    if store.get_controller_id() == CONTROLLER_BROKER:
        store.delete_controller()
    store.deregister_broker(CONTROLLER_BROKER)


def run_size(partitions: int, args, root: Path) -> list[Trial]:
    topics = topic_names(partitions, args.partitions_per_topic)
    print(f"\n== P = {partitions:,} ({len(topics)} topics of ≤{args.partitions_per_topic} partitions, "
          f"RF {RF} over {BROKERS} brokers)", flush=True)
    zk = EmbeddedZooKeeper(root / f"zk-{partitions}", port=0, tick_time_ms=500, min_session_timeout_ms=1000,
                           force_sync=False, heap_mb=args.zk_heap_mb, die_with_parent=True)
    sinks: list[StandInBroker] = []
    store: ZkStore | None = None
    trials: list[Trial] = []
    try:
        zk.start(timeout=60)
        store = ZkStore(zk.connect_string, session_timeout_ms=30000, connection_timeout_ms=30000).start()
        t = time.perf_counter()
        state_paths = preload(store, topics)
        topic_paths = [zn.topic_path(name) for name, _ in topics]
        print(f"  pre-loaded {len(state_paths):,} partitions in {time.perf_counter() - t:.1f}s "
              f"(ZooKeeper {'.'.join(map(str, store.server_version or ()))}, pid {zk.pid})", flush=True)
        for bid in range(2, BROKERS + 1):
            sink = StandInBroker(bid).start()
            sinks.append(sink)
            store.register_broker(sink.info())
        all_paths = topic_paths + state_paths
        client = store.client
        for i in range(args.repeat):
            # raw reads first, with broker 1 not running: nothing else loads ZooKeeper
            raw_p = raw_pipelined(client, all_paths)
            raw_m = raw_multi_read(client, [(topic_paths, MULTI_READ_TOPIC_BATCH), (state_paths, MULTI_READ_BATCH)])
            trial = Trial(raw_p, raw_m)
            trials.append(trial)
            take_controller_seat(store)
            broker = BrokerProcess(root / f"broker-{partitions}-{i}", zk.connect_string)
            spy = None
            try:
                broker.start()
                broker.wait_controller_started(args.timeout)
                if args.py_spy:
                    spy = start_py_spy(broker.pid, Path(args.py_spy) / f"failover-{partitions}-{i}.json",
                                       duration=max(5, int(args.timeout)))
                    time.sleep(1.0)  # let py-spy attach
                t0 = time.time()
                store.delete_controller()
                line = wait_for_line(broker.state_log, "ControllerFailover", args.timeout, broker.alive)
                trial.failover_s = line["time_ms"] / 1000.0 - t0
                trial.line = line
                trial.metric_failover_s = broker.metrics().get("praha_controller_last_failover_seconds", float("nan"))
                deadline = time.monotonic() + args.timeout
                while time.monotonic() < deadline:
                    got = [s.first_after(UPDATE_METADATA, t0) for s in sinks]
                    if all(got):
                        trial.um_delivered_s = max(g[0] for g in got) - t0
                        break
                    time.sleep(0.01)
                if line.get("partitions") != partitions or line.get("live_brokers") != list(range(1, BROKERS + 1)):
                    print(f"  WARNING: unexpected failover line {line}")
            finally:
                if spy is not None:
                    os.kill(spy.pid, signal.SIGINT)
                    stop_process(spy, grace=30)
                broker.stop()
                clear_broker_1(store)
            print(f"  trial {i + 1}: raw pipelined {raw_p:7.3f}s  multi-read {raw_m:6.3f}s  "
                  f"failover {trial.failover_s:7.3f}s (metric {trial.metric_failover_s:.3f}s)  "
                  f"UpdateMetadata at all stand-ins {trial.um_delivered_s:7.3f}s\n"
                  f"           phases (ms): {trial.line.get('phases_ms', {})}", flush=True)
            if not args.keep:
                shutil.rmtree(broker.dir, ignore_errors=True)
    finally:
        for s in sinks:
            s.stop()
        if store is not None:
            store.stop()
        zk.stop()
    return trials


# ------------------------------------------------------------------------- report
def summarise(results: dict[int, list[Trial]]) -> list[dict]:
    rows = []
    for p, trials in results.items():
        med = lambda xs: statistics.median(xs)  # noqa: E731
        row = {
            "P": p,
            "raw_pipelined_s": med([t.raw_pipelined_s for t in trials]),
            "raw_multi_s": med([t.raw_multi_s for t in trials]),
            "failover_s": med([t.failover_s for t in trials]),
            "failover_min_s": min(t.failover_s for t in trials),
            "metric_s": med([t.metric_failover_s for t in trials]),
            "um_delivered_s": med([t.um_delivered_s for t in trials]),
            "trials": len(trials),
        }
        by_failover = sorted(trials, key=lambda t: t.failover_s)
        row["phases"] = by_failover[len(by_failover) // 2].line.get("phases_ms", {})
        row["ratio_pipelined"] = row["failover_s"] / row["raw_pipelined_s"]
        row["ratio_multi"] = row["failover_s"] / row["raw_multi_s"]
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    head = ("| P | raw pipelined read s | multi-read s | failover s (median) | failover / pipelined | "
            "failover / multi-read | metric s | UpdateMetadata at all stand-ins s | trials |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    return head + "".join(
        f"| {r['P']:,} | {r['raw_pipelined_s']:.3f} | {r['raw_multi_s']:.3f} | {r['failover_s']:.3f} | "
        f"{r['ratio_pipelined']:.2f} | {r['ratio_multi']:.2f} | {r['metric_s']:.3f} | {r['um_delivered_s']:.3f} | "
        f"{r['trials']} |\n" for r in rows)


def verdicts(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        ok = r["ratio_pipelined"] <= TARGET_RATIO
        out.append(f"P={r['P']:,}: failover/pipelined read {r['ratio_pipelined']:.2f} "
                   f"({'meets' if ok else 'MISSES'} ≤ {TARGET_RATIO})")
        if r["P"] >= 100_000:
            ok = r["failover_s"] < TARGET_100K_S
            out.append(f"P={r['P']:,}: failover {r['failover_s']:.2f}s ({'meets' if ok else 'MISSES'} < {TARGET_100K_S:.0f}s)")
    return out


def write_results(rows: list[dict], command: str, path: Path) -> None:
    section = (
        "## Controller failover\n\n"
        f"Command: `{command}`\n\n"
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}; "
        "ZooKeeper 3.9 embedded (forceSync=no), one broker process (broker 1) plus five stand-in brokers "
        "(threaded Kafka-framed sinks in the bench process, registered as ephemeral znodes).\n\n"
        "What is timed: from the deletion of `/controller` (held by stand-in 2) until broker 1's "
        "`ControllerFailover` state-change line (context loaded, UpdateMetadata handed to the channel "
        "manager), from the line's own timestamp. *metric* is `praha_controller_last_failover_seconds` "
        "(from the election, not from the deletion). The raw reads read the same znodes (topic "
        "assignments + partition states) from the bench's own kazoo client, without decoding; the "
        "target ratio is against the plain pipelined read. *UpdateMetadata at all stand-ins*: "
        "when the last stand-in received its full UpdateMetadata (after the failover proper). "
        "Medians over the trials.\n\n"
        + table(rows) + "\n"
        + "".join(f"- {v}\n" for v in verdicts(rows))
        + "\nWhere the time goes (`phases_ms` of the ControllerFailover line, median trial of each size):\n\n"
        + "".join(f"- P={r['P']:,}: " + ", ".join(f"{k} {v:.0f}" for k, v in r["phases"].items()) + "\n"
                  for r in rows if r.get("phases"))
        + "\nPlot: `bench/failover.png` (log-log).\n"
    )
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    start = text.find("## Controller failover\n")  # this section only, not others named after it
    if start >= 0:
        nxt = text.find("\n## ", start + 1)
        text = text[:start] + section + (text[nxt + 1:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ps = [r["P"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.plot(ps, [r["failover_s"] for r in rows], "o-", label="controller failover")
    ax.plot(ps, [r["raw_pipelined_s"] for r in rows], "s--", label="raw read, pipelined get_async")
    ax.plot(ps, [TARGET_RATIO * r["raw_pipelined_s"] for r in rows], ":", color="grey",
            label=f"{TARGET_RATIO}× pipelined read (target)")
    ax.plot(ps, [r["raw_multi_s"] for r in rows], "^--", label="raw read, multi-read")
    ax.plot(ps, [r["um_delivered_s"] for r in rows], "x-.", alpha=0.6, label="UpdateMetadata at all stand-ins")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("partitions (RF 3, 6 brokers)")
    ax.set_ylabel("seconds")
    ax.set_title("praha controller failover vs raw ZooKeeper reads")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="partition counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=3, help="failover trials per size (median reported)")
    ap.add_argument("--partitions-per-topic", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=180.0, help="bound on every wait, seconds")
    ap.add_argument("--zk-heap-mb", type=int, default=1536)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed)")
    ap.add_argument("--keep", action="store_true", help="keep broker directories (logs)")
    ap.add_argument("--py-spy", default=None, metavar="DIR", help="record a py-spy profile of each failover")
    ap.add_argument("--results", default=str(REPO / "bench" / "RESULTS.md"))
    ap.add_argument("--plot", default=str(REPO / "bench" / "failover.png"))
    ap.add_argument("--no-write", action="store_true", help="print only; do not touch RESULTS.md / the plot")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.py_spy:
        Path(args.py_spy).mkdir(parents=True, exist_ok=True)
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="praha-failover-"))
    root.mkdir(parents=True, exist_ok=True)
    results: dict[int, list[Trial]] = {}
    try:
        for p in sizes:
            results[p] = run_size(p, args, root)
    finally:
        if not args.dir and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    rows = summarise(results)
    print("\n" + table(rows))
    for v in verdicts(rows):
        print(v)
    if not args.no_write:
        command = "python bench/failover.py " + " ".join(sys.argv[1:])
        write_results(rows, command.strip(), Path(args.results))
        plot(rows, Path(args.plot))
        print(f"\nwrote {args.results} and {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
