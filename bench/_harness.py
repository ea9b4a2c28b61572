"""Shared machinery of the controller benchmarks (failover, controlled shutdown, broker
failure, preferred election, reassignment, topic creation).

What is here:
  - stand-in brokers: a tiny threaded Kafka-framed sink per broker on 127.0.0.1 that
    answers LeaderAndIsr / UpdateMetadata / StopReplica with error_code 0 and records
    when it answered (optionally the request bodies, decoded after the measurement), and
    can register its ephemeral `/brokers/ids/<id>` znode in a ZooKeeper session of its own
    (so that closing that session is the broker's death) and send a ControlledShutdown
    request like a real broker;
  - ZooKeeper: an embedded server (optionally with a larger `jute.maxbuffer`, for admin
    znodes naming 50k partitions) and a pre-load of topics (config, assignment,
    `partitions/`, `partitions/<p>/`, state znodes) with multi-ops, level by level;
  - the real broker process (`python -m praha broker start`), started in its own session
    and stopped by its PID, its metrics endpoint, its RSS and CPU time;
  - a tail of its state-change log (JSON lines) and bounded waits on it;
  - the raw ZooKeeper write limit the controller benchmarks compare against: the same
    number of fenced conditional writes of the same partition state znodes, grouped in
    multi-ops of 100 (`ZkStore.update_partition_states`);
  - RESULTS.md section replacement and machine-load figures;
  - a bench script's frame: its common options, work directory and sizes, the trial loop of a
    controller flow (`Rig.run_trials`), per-size medians, the Markdown table, verdicts,
    RESULTS.md section and log-log plot, so that each script keeps only its measurement.

Every process started here is stopped by PID; every wait is bounded; 127.0.0.1 only.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from praha.common import (  # noqa: E402
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
    new_topic_id,
)
from praha.protocol.controller_apis import (  # noqa: E402
    ControlledShutdownRequest,
    LeaderAndIsrResponse,
    StopReplicaResponse,
    UpdateMetadataResponse,
)
from praha.protocol.framing import decode_request, encode_response, parse_request_header  # noqa: E402
from praha.testing.cluster import scrape_metrics  # noqa: E402
from praha.zk import znodes as zn  # noqa: E402
from praha.zk.ops import CreateOp, SetDataOp, WriteOutcome  # noqa: E402
from praha.zk.server import EmbeddedZooKeeper, free_port  # noqa: E402
from praha.zk.store import ZkStore  # noqa: E402

BROKERS = 6
RF = 3
CONTROLLER_BROKER = 1
LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA, CONTROLLED_SHUTDOWN = 4, 5, 6, 7
CONTROLLED_SHUTDOWN_VERSION = 3
#: partition state znodes per multi-op in the raw write limit (fenced_multi's default)
RAW_WRITE_BATCH = 100


# ------------------------------------------------------------------------- stand-in brokers
@dataclass(slots=True)
class Received:
    api_key: int
    t_in: float       # wall time the whole request was read
    t_out: float      # wall time just before the answer was written
    size: int
    body: bytes | None = None  # kept only for the API keys the stand-in was asked to keep


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
            t_in = time.time()
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
            sink.record(header.api_key, size, t_in, body)
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
    """A broker that only answers the controller. `keep` = API keys whose request bodies
    are kept (to be decoded after the measurement, never while it runs)."""

    def __init__(self, broker_id: int, keep: Iterable[int] = ()):
        self.broker_id = broker_id
        self.keep = frozenset(keep)
        self.closing = False
        self._lock = threading.Lock()
        self.received: list[tuple[int, float, int]] = []  # (api key, wall time answered, bytes)
        self.requests: list[Received] = []
        self.server = _Server(("127.0.0.1", 0), _SinkHandler)
        self.server.sink = self  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2},
                                       name=f"stand-in-{broker_id}", daemon=True)
        #: the ZooKeeper session holding this stand-in's registration, if it has its own
        self.session: ZkStore | None = None
        self.epoch = -1

    def start(self) -> StandInBroker:
        self.thread.start()
        return self

    def info(self) -> BrokerInfo:
        return BrokerInfo(self.broker_id, (EndPoint("127.0.0.1", self.port),))

    def record(self, api_key: int, size: int, t_in: float | None = None, body: bytes | None = None) -> None:
        t = time.time()
        with self._lock:
            self.received.append((api_key, t, size))
            self.requests.append(Received(api_key, t if t_in is None else t_in, t, size,
                                          body if api_key in self.keep else None))

    def first_after(self, api_key: int, t0: float) -> tuple[float, int] | None:
        with self._lock:
            return next(((t, n) for k, t, n in self.received if k == api_key and t >= t0), None)

    def since(self, t0: float, api_key: int | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.t_in >= t0 and (api_key is None or r.api_key == api_key)]

    def forget(self) -> None:
        """Drop what was recorded (between trials)."""
        with self._lock:
            self.received.clear()
            self.requests.clear()

    # -- registration in a ZooKeeper session of its own -------------------------------------
    def register_own_session(self, zk_connect: str, session_timeout_ms: int = 30000) -> int:
        """Register `/brokers/ids/<id>` in a new session; returns the broker epoch (czxid)."""
        self.close_session()
        self.session = ZkStore(zk_connect, session_timeout_ms=session_timeout_ms,
                               connection_timeout_ms=30000).start()
        self.epoch = self.session.register_broker(self.info())
        return self.epoch

    def close_session(self) -> None:
        """Close the session: ZooKeeper deletes the ephemeral znode at once (the broker "dies")."""
        s, self.session = self.session, None
        if s is not None:
            s.stop()

    def controlled_shutdown(self, host: str, port: int, timeout: float = 120.0):
        """Send ControlledShutdown v3 with this broker's epoch, as a real broker does; returns
        the response (error_code, remaining_partitions)."""
        from praha.protocol.client import BrokerConnection

        conn = BrokerConnection(host, port, timeout=timeout)
        try:
            conn.connect()
            return conn.send(ControlledShutdownRequest(broker_id=self.broker_id, broker_epoch=self.epoch),
                             CONTROLLED_SHUTDOWN_VERSION)
        finally:
            conn.close()

    def stop(self) -> None:
        self.closing = True
        self.close_session()
        self.server.shutdown()
        self.server.server_close()


def leader_and_isr_partitions(body: bytes) -> list[tuple[TopicPartition, int, int]]:
    """(partition, leader, leader epoch) of every partition state in a LeaderAndIsr request body."""
    req = decode_request(body).request
    return [(TopicPartition(ts.topic_name, p.partition_index), p.leader, p.leader_epoch)
            for ts in (req.topic_states or []) for p in (ts.partition_states or [])]


def stop_replica_partitions(body: bytes) -> list[tuple[TopicPartition, bool]]:
    req = decode_request(body).request
    return [(TopicPartition(ts.topic_name, p.partition_index), bool(p.delete_partition))
            for ts in (req.topic_states or []) for p in (ts.partition_states or [])]


# ------------------------------------------------------------------------- ZooKeeper
class _BigBufferZooKeeper(EmbeddedZooKeeper):
    """EmbeddedZooKeeper with `-Djute.maxbuffer` raised: an admin znode naming 50k partitions
    (`/admin/preferred_replica_election`, `/admin/reassign_partitions`) is 2-3 MB, over
    ZooKeeper's 1 MB default (Kafka operators raise it the same way for large requests)."""

    jute_maxbuffer = 1 << 20

    def _command(self, java: str, classpath: str) -> list[str]:
        cmd = super()._command(java, classpath)
        return cmd[:1] + [f"-Djute.maxbuffer={self.jute_maxbuffer}"] + cmd[1:]


def start_zookeeper(data_dir: Path, heap_mb: int = 1536, jute_maxbuffer: int | None = None,
                    timeout: float = 60) -> EmbeddedZooKeeper:
    """A fresh embedded ZooKeeper on 127.0.0.1 (forceSync=no, short tick), as failover.py uses."""
    kw = dict(port=0, tick_time_ms=500, min_session_timeout_ms=1000, force_sync=False, heap_mb=heap_mb,
              die_with_parent=True)
    if jute_maxbuffer:
        zk = _BigBufferZooKeeper(data_dir, **kw)
        zk.jute_maxbuffer = jute_maxbuffer
    else:
        zk = EmbeddedZooKeeper(data_dir, **kw)
    zk.jit_options = ()  # the JVM's full JIT: benchmarks load ZooKeeper hard
    try:
        return zk.start(timeout=timeout)
    except BaseException:
        zk.stop()  # the caller never gets it to stop: a JVM that did not become ready is stopped here
        raise


def bench_store(zk: EmbeddedZooKeeper) -> ZkStore:
    return ZkStore(zk.connect_string, session_timeout_ms=30000, connection_timeout_ms=30000).start()


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


Assign = Callable[[int], tuple[int, ...]]
#: (global partition index, replicas) -> (leader, isr)
LeaderOf = Callable[[int, tuple[int, ...]], tuple[int, tuple[int, ...]]]


def first_replica_leads(_g: int, r: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    return r[0], r


def preload(store: ZkStore, topics: list[tuple[str, int]], assign: Assign = replicas_of,
            leader_of: LeaderOf = first_replica_leads, controller_epoch: int = 1) -> list[str]:
    """Write every topic's znodes with multi-ops, level by level; returns the state paths.
    `assign(g)` gives the replicas of the g-th partition overall, `leader_of(g, replicas)`
    its (leader, ISR); leader epoch 0, written by `controller_epoch`."""
    store.ensure_persistent_paths()
    store.get_or_create_cluster_id()
    levels: list[list[CreateOp]] = [[], [], [], []]
    state_paths: list[str] = []
    g = 0
    for t, n in topics:
        parts = {}
        for p in range(n):
            r = assign(g)
            leader, isr = leader_of(g, r)
            g += 1
            parts[p] = ReplicaAssignment(r)
            state = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, 0, 0), controller_epoch)
            levels[2].append(CreateOp(zn.partition_path(t, p)))
            path = zn.tp_state_path(TopicPartition(t, p))
            levels[3].append(CreateOp(path, zn.encode_partition_state(state)))
            state_paths.append(path)
        levels[0].append(CreateOp(zn.config_topic_path(t), zn.encode_config({})))
        levels[0].append(CreateOp(zn.topic_path(t), zn.encode_topic_assignment(TopicAssignment(parts, new_topic_id()))))
        levels[1].append(CreateOp(zn.partitions_path(t)))
    for ops in levels:
        results = store.multi(ops)
        bad = [(op.path, r) for op, r in zip(ops, results) if not r.ok]
        if bad:
            raise RuntimeError(f"pre-load failed for {len(bad)} znodes, e.g. {bad[0]}")
    return state_paths


def partitions_of(topics: list[tuple[str, int]]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, n in topics for p in range(n)]


def reset_states(store: ZkStore, topics: list[tuple[str, int]], assign: Assign = replicas_of,
                 leader_of: LeaderOf = first_replica_leads, controller_epoch: int = 1) -> None:
    """Put every partition state back to its pre-loaded value (unconditional multi-ops), e.g.
    between trials; the controller epoch written is the current one (a new controller always
    has a higher one)."""
    ops = []
    g = 0
    for t, n in topics:
        for p in range(n):
            r = assign(g)
            leader, isr = leader_of(g, r)
            g += 1
            state = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, 0, 0), controller_epoch)
            ops.append(SetDataOp(zn.tp_state_path(TopicPartition(t, p)), zn.encode_partition_state(state)))
    results = store.multi(ops)
    bad = [r for r in results if not r.ok]
    if bad:
        raise RuntimeError(f"state reset failed for {len(bad)} znodes, e.g. {bad[0]}")


def current_controller_epoch(store: ZkStore) -> tuple[int, int]:
    got = store.get_controller_epoch()
    if got is None:
        return 0, -1
    return got


# ------------------------------------------------------------------------- the raw write limit
def raw_fenced_writes(store: ZkStore, tps: Sequence[TopicPartition], batch: int = RAW_WRITE_BATCH) -> float:
    """Seconds for len(tps) fenced conditional writes of those partitions' state znodes, in
    multi-ops of `batch` (each starting with the `/controller_epoch` version check), from the
    bench's own session: `ZkStore.update_partition_states`, the call the controller's
    read–decide–write ends with. Each znode gets its current content back (conditional on the
    version just read), so nothing a controller would see changes but the zkVersion. The read
    before is not timed; the encoding is (the controller encodes too)."""
    epoch, epoch_version = current_controller_epoch(store)
    states, bad = store.get_partition_states(tps)
    if bad or len(states) != len(tps):
        raise RuntimeError(f"raw limit: {len(tps) - len(states)} state znodes missing or corrupt")
    t = time.perf_counter()
    results = store.fenced_multi(
        [SetDataOp(zn.tp_state_path(tp), zn.encode_partition_state(states[tp]), states[tp].leader_and_isr.zk_version)
         for tp in tps],
        epoch_version, batch_size=batch)
    elapsed = time.perf_counter() - t
    failed = [r for r in results if r.outcome is not WriteOutcome.OK]
    if failed:
        raise RuntimeError(f"raw limit: {len(failed)} writes failed, e.g. {failed[0]}")
    return elapsed


# ------------------------------------------------------------------------- the real broker
class BrokerProcess:
    """A real broker (broker 1 by default), started in its own session and stopped by its PID."""

    def __init__(self, workdir: Path, zk_connect: str, broker_id: int = CONTROLLER_BROKER,
                 extra: dict[str, str] | None = None):
        self.dir = workdir
        self.broker_id = broker_id
        self.port = free_port()
        self.metrics_port = free_port()
        self.data = workdir / "data"
        self.state_log = self.data / "state-change.log"
        self.config = workdir / "server.properties"
        props = {
            "broker.id": str(broker_id),
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
        props.update(extra or {})
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

    def rss_mb(self) -> float:
        return rss_mb(self.pid)

    def cpu_s(self) -> float:
        return process_cpu_s(self.pid)

    def wait_controller_started(self, timeout: float, active: bool = False) -> None:
        """Until the broker's controller has processed Startup (its /controller watch is armed);
        with `active`, until it is the active controller."""
        deadline = time.monotonic() + timeout
        want = 1.0 if active else 0.0
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"broker {self.broker_id} exited with {self.proc.returncode}; "
                                   f"see {self.dir / 'broker.log'}")
            try:
                m = self.metrics()
                if m.get("praha_controller_events_processed_total", m.get("praha_controller_events_processed", 0)) >= 1:
                    if m.get("praha_controller_active_controller") == want:
                        return
            except Exception:  # noqa: BLE001 - not serving yet
                pass
            time.sleep(0.05)
        raise RuntimeError(f"broker {self.broker_id} did not start within {timeout:.0f}s; "
                           f"see {self.dir / 'broker.log'}")

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


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (from /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (from /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


class LoadMeter:
    """The share of the machine's CPUs that processes other than the bench, the broker and
    ZooKeeper took during a window (the machine is shared)."""

    def __init__(self, pids: Iterable[int]):
        self.pids = [p for p in pids if p and p > 0]
        self.t0 = time.perf_counter()
        self.busy0 = machine_busy_seconds()
        self.own0 = sum(process_cpu_s(p) for p in self.pids) + time.process_time()

    def other_share(self) -> float:
        wall = time.perf_counter() - self.t0
        own = sum(process_cpu_s(p) for p in self.pids) + time.process_time() - self.own0
        others = machine_busy_seconds() - self.busy0 - own
        return max(others, 0.0) / max(wall * (os.cpu_count() or 1), 1e-9)


# ------------------------------------------------------------------------- state-change log
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


class LogTail:
    """Reads a state-change log incrementally from a mark; only lines of the wanted events
    are parsed (a 50k-partition line is large)."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self._pending = b""

    def mark(self) -> None:
        """Skip everything written so far."""
        try:
            self.offset = self.path.stat().st_size
        except FileNotFoundError:
            self.offset = 0
        self._pending = b""

    def read(self, events: Iterable[str] | None = None) -> list[dict]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        data = self._pending + chunk
        *lines, self._pending = data.split(b"\n")
        wanted = None if events is None else [f'"event":"{e}"'.encode() for e in events]
        return [json.loads(raw) for raw in lines
                if raw and (wanted is None or any(w in raw for w in wanted))]

    def wait(self, done: Callable[[list[dict]], bool], events: Iterable[str], timeout: float,
             alive: Callable[[], bool] = lambda: True, seen: list[dict] | None = None) -> list[dict]:
        """Collect lines of `events` until `done(lines so far)`; bounded. Returns the lines."""
        events = list(events)
        got = [] if seen is None else seen
        deadline = time.monotonic() + timeout
        while True:
            got.extend(self.read(events))
            if done(got):
                return got
            if time.monotonic() > deadline:
                raise RuntimeError(f"waited {timeout:.0f}s for {events} in {self.path}; {len(got)} lines so far")
            if not alive():
                raise RuntimeError(f"broker exited while waiting for {events}")
            time.sleep(0.005)


# ------------------------------------------------------------------------- misc processes
def start_py_spy(pid: int, out: Path, duration: int, fmt: str = "speedscope",
                 gil_only: bool = False) -> subprocess.Popen | None:
    """py-spy (pip-installed into the venv for measuring only) sampling `pid` at 200 Hz;
    `fmt` "speedscope" or "raw" (collapsed stacks, one line per stack with its count);
    `gil_only`: only the thread holding the GIL is sampled (where the interpreter's time goes)."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(exe).exists():
        print("  (py-spy not found; no profile)")
        return None
    return subprocess.Popen([exe, "record", "-p", str(pid), "-o", str(out), "-d", str(duration), "-r", "200",
                             "-f", fmt, "--nonblocking"] + (["--gil"] if gil_only else []),
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


def stop_py_spy(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        os.kill(proc.pid, signal.SIGINT)
        stop_process(proc, grace=30)


def take_controller_seat(store: ZkStore, broker_id: int) -> int:
    """A stand-in wins the election (as a real broker would); returns the epoch."""
    for _ in range(50):
        if store.get_controller_id() is None:
            return store.register_controller_and_increment_epoch(broker_id)[0]
        time.sleep(0.2)
    raise RuntimeError("/controller still held by someone else")


def clear_broker(store: ZkStore, broker_id: int = CONTROLLER_BROKER) -> None:
    """After a real broker stopped: drop its ephemerals if its session lingers (after a SIGKILL)."""
    if store.get_controller_id() == broker_id:
        store.delete_controller()
    store.deregister_broker(broker_id)


def wait_until(pred: Callable[[], bool], timeout: float, what: str, step: float = 0.005) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(step)


# ------------------------------------------------------------------------- report
def machine_id() -> str:
    """CPUs, Python and platform: what a figure in RESULTS.md was taken on."""
    return f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}"


def machine_line() -> str:
    """`machine_id` and the load average (the machine is shared: a busy one explains a figure)."""
    la = os.getloadavg()
    return f"{machine_id()}; load average at the end {la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f} (1/5/15 min)"


def write_section(path: Path, heading: str, section: str) -> None:
    """Replace the section that starts with the line `heading` (up to the next `## `), or
    append it; the other sections are kept as they are."""
    if not section.startswith(heading + "\n"):
        raise ValueError("the section must start with its heading line")
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    start = text.find(heading + "\n")
    while start > 0 and text[start - 1] != "\n":  # a heading line, not a substring of another
        start = text.find(heading + "\n", start + 1)
    if start >= 0:
        nxt = text.find("\n## ", start + 1)
        text = text[:start] + section.rstrip("\n") + "\n" + (text[nxt:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    path.write_text(text)


def fmt_s(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"  # noqa: PLR0124 - NaN check


# ------------------------------------------------------------------------- a controller bench rig
STAND_INS = (2, 3, 4, 5, 6)


def rotation(brokers: Sequence[int], rf: int = RF) -> Assign:
    """RF replicas rotating over `brokers`, leaders spread evenly (the first replica leads)."""
    n = len(brokers)
    return lambda g: tuple(brokers[(g + k) % n] for k in range(rf))


class Rig:
    """One size of one controller bench: an embedded ZooKeeper, stand-in brokers 2..6
    (those in `own_sessions` registered in a ZooKeeper session of their own, the others in
    the bench's), and the real broker 1 as the only controller candidate. Broker 1 hosts no
    replica: the benches' partitions live on the stand-ins, so broker 1's process does the
    controller's work (plus its own UpdateMetadata handling) and nothing else."""

    def __init__(self, root: Path, name: str, args, stand_ins: Sequence[int] = STAND_INS,
                 own_sessions: Iterable[int] = (), keep: Iterable[int] = (LEADER_AND_ISR, STOP_REPLICA),
                 jute_maxbuffer: int | None = None, broker_props: dict[str, str] | None = None):
        self.root = root
        self.name = name
        self.args = args
        self.stand_in_ids = list(stand_ins)
        self.own_sessions = set(own_sessions)
        self.keep = tuple(keep)
        self.jute_maxbuffer = jute_maxbuffer
        self.broker_props = {"auto.leader.rebalance.enable": "false", **(broker_props or {})}
        self.zk: EmbeddedZooKeeper | None = None
        self.store: ZkStore | None = None
        self.sinks: dict[int, StandInBroker] = {}
        self.broker: BrokerProcess | None = None
        self.tail: LogTail | None = None
        self._spy: subprocess.Popen | None = None
        self._trials = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Rig:
        self.zk = start_zookeeper(self.root / f"zk-{self.name}", heap_mb=self.args.zk_heap_mb,
                                  jute_maxbuffer=self.jute_maxbuffer)
        self.store = bench_store(self.zk)
        self.store.ensure_persistent_paths()
        self.store.get_or_create_cluster_id()
        if self.store.get_controller_epoch() is None:  # so that the raw limit can be fenced before broker 1 runs
            self.store.multi([CreateOp(zn.CONTROLLER_EPOCH_PATH, zn.encode_controller_epoch(0))])
        for bid in self.stand_in_ids:
            self.sinks[bid] = StandInBroker(bid, keep=self.keep).start()
            self.register(bid)
        return self

    def __enter__(self) -> Rig:
        """`start()`, and `close()` at the end of the block, also when starting fails half-way
        (a ZooKeeper JVM or stand-in left running would skew the next size and the machine)."""
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc) -> None:
        self.close()

    def preload(self, topics: list[tuple[str, int]], assign: Assign = replicas_of,
                leader_of: LeaderOf = first_replica_leads) -> None:
        """`preload` the topics, printing how long it took (set-up time, not measured, but worth
        knowing at 50k partitions)."""
        t = time.perf_counter()
        preload(self.store, topics, assign, leader_of)
        print(f"  pre-loaded in {time.perf_counter() - t:.1f}s", flush=True)

    def reset(self, topics: list[tuple[str, int]], assign: Assign = replicas_of,
              leader_of: LeaderOf = first_replica_leads) -> None:
        """Between trials: every partition state back to its pre-loaded value (written with the
        current controller epoch, so the next broker 1 accepts it), and the stand-ins with a
        session of their own registered again (a trial may have closed it; a new broker epoch)."""
        reset_states(self.store, topics, assign, leader_of, controller_epoch=current_controller_epoch(self.store)[0])
        for bid in sorted(self.own_sessions):
            self.register(bid)

    def register(self, bid: int) -> int:
        sink = self.sinks[bid]
        if bid in self.own_sessions:
            return sink.register_own_session(self.zk.connect_string)
        self.store.deregister_broker(bid)
        sink.epoch = self.store.register_broker(sink.info())
        return sink.epoch

    def close(self) -> None:
        try:
            self.stop_controller()
        finally:
            for s in self.sinks.values():
                s.stop()
            if self.store is not None:
                self.store.stop()
            if self.zk is not None:
                self.zk.stop()

    # -- broker 1 ----------------------------------------------------------------------------
    def start_controller(self, timeout: float) -> BrokerProcess:
        """Start broker 1; it wins the election (nobody else runs for it) and fails over.
        Returns once its ControllerFailover line is written, every stand-in has its
        UpdateMetadata, and its CPU has been quiet for a moment."""
        self._trials += 1
        b = BrokerProcess(self.root / f"broker-{self.name}-{self._trials}", self.zk.connect_string,
                          extra=self.broker_props)
        self.broker = b
        t0 = time.time()
        b.start()
        b.wait_controller_started(timeout, active=True)
        wait_for_line(b.state_log, "ControllerFailover", timeout, b.alive)
        wait_until(lambda: all(s.first_after(UPDATE_METADATA, t0) for s in self.live_sinks()), timeout,
                   "the failover's UpdateMetadata at every stand-in")
        self.settle(timeout)
        self.tail = LogTail(b.state_log)
        self.tail.mark()
        if getattr(self.args, "py_spy", None):
            self._spy = start_py_spy(b.pid, Path(self.args.py_spy) / f"{self.name}-{self._trials}.txt",
                                     duration=max(10, int(timeout)), fmt="raw", gil_only=True)
            time.sleep(1.0)  # let py-spy attach
        return b

    def live_sinks(self) -> list[StandInBroker]:
        return [s for bid, s in self.sinks.items() if bid not in self.own_sessions or s.session is not None]

    def settle(self, timeout: float, quiet_s: float = 0.6, threshold: float = 0.1) -> None:
        """Until broker 1 used less than `threshold` of a CPU over `quiet_s` (bounded)."""
        b = self.broker
        deadline = time.monotonic() + timeout
        last = b.cpu_s()
        while time.monotonic() < deadline:
            time.sleep(quiet_s)
            now = b.cpu_s()
            if now - last < threshold * quiet_s:
                return
            last = now
        print(f"  (broker {b.broker_id} did not quiet down within {timeout:.0f}s)")

    def stop_controller(self) -> None:
        stop_py_spy(self._spy)
        self._spy = None
        b, self.broker = self.broker, None
        if b is None:
            return
        b.stop()
        clear_broker(self.store, b.broker_id)
        if not getattr(self.args, "keep", False):
            shutil.rmtree(b.dir, ignore_errors=True)

    @contextmanager
    def controller_trial(self) -> Iterator[tuple[BrokerProcess, LoadMeter]]:
        """Broker 1 started and quiet, the stand-ins' records of its failover forgotten, and a
        load meter running, for one measurement; broker 1 stopped afterwards whatever happened
        (every trial starts from a fresh controller)."""
        b = self.start_controller(self.args.timeout)
        try:
            self.forget_requests()
            yield b, LoadMeter([b.pid, self.zk.pid])
        finally:
            self.stop_controller()

    def run_trials(self, tps: Sequence[TopicPartition], new_trial: Callable[[float], object],
                   measure: Callable[[object, BrokerProcess, LoadMeter], None], line: Callable[[object], str],
                   reset: Callable[[], None]) -> list:
        """The --repeat trials of a controller flow over the pre-loaded partitions `tps`. Per trial:
        `reset()` (not before the first: the pre-load is its state); the raw limit over `tps`, timed
        before broker 1 runs so that nothing else loads ZooKeeper; `new_trial(raw seconds)`; then
        `measure(trial, broker 1, meter)` in a `controller_trial`; `line(trial)` printed."""
        trials = []
        for i in range(self.args.repeat):
            if i:
                reset()
            trial = new_trial(raw_fenced_writes(self.store, tps))
            trials.append(trial)
            with self.controller_trial() as (b, meter):
                measure(trial, b, meter)
            print(f"  trial {i + 1}: {line(trial)}", flush=True)
        return trials

    def first_line(self, event: str, pred: Callable[[dict], bool]) -> dict:
        """The first `event` line of broker 1's state-change log (from the tail's mark on) that
        satisfies `pred` (bounded by --timeout; fails at once if broker 1 exits)."""
        lines = self.tail.wait(lambda ls: any(pred(ln) for ln in ls), [event], self.args.timeout, self.broker.alive)
        return next(ln for ln in lines if pred(ln))

    # -- measurements ----------------------------------------------------------------------------
    def forget_requests(self) -> None:
        for s in self.sinks.values():
            s.forget()

    def quiet_stand_ins(self, since: float, timeout: float, expect: Iterable[int] = (),
                        api_key: int = LEADER_AND_ISR, quiet_s: float = 0.5) -> None:
        """Until each stand-in of `expect` has received an `api_key` request since `since`,
        and then no stand-in has received anything for `quiet_s` (bounded)."""
        expect = [self.sinks[b] for b in expect]
        wait_until(lambda: all(s.since(since, api_key) for s in expect), timeout,
                   f"api {api_key} requests at stand-ins {[s.broker_id for s in expect]}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = max((r.t_out for s in self.sinks.values() for r in s.since(since)), default=since)
            if time.time() - last >= quiet_s:
                return
            time.sleep(0.05)
        raise RuntimeError(f"stand-ins still receiving requests after {timeout:.0f}s")

    def acked(self, since: float, want: Callable[[TopicPartition, int, int], bool],
              tps: Iterable[TopicPartition], replicas: Callable[[TopicPartition], Iterable[int]]
              ) -> tuple[float, int]:
        """When every partition of `tps` had a LeaderAndIsr entry that satisfies
        `want(tp, leader, leader_epoch)` answered by each of `replicas(tp)` that is a live
        stand-in (request bodies decoded now, after the measurement). Returns (the latest
        such answer's wall time, partitions never acknowledged)."""
        first: dict[tuple[TopicPartition, int], float] = {}
        for bid, s in self.sinks.items():
            for r in s.since(since, LEADER_AND_ISR):
                if r.body is None:
                    continue
                for tp, leader, epoch in leader_and_isr_partitions(r.body):
                    key = (tp, bid)
                    if key not in first and want(tp, leader, epoch):
                        first[key] = r.t_out
        live = {bid for bid, s in self.sinks.items() if bid not in self.own_sessions or s.session is not None}
        latest, missing = since, 0
        for tp in tps:
            for bid in replicas(tp):
                if bid not in live:
                    continue
                t = first.get((tp, bid))
                if t is None:
                    missing += 1
                    break
                latest = max(latest, t)
        return latest, missing

    def acknowledged(self, trial, since: float, meter: LoadMeter, expect: Iterable[int],
                     want: Callable[[TopicPartition, int, int], bool], tps: Iterable[TopicPartition],
                     replicas: Callable[[TopicPartition], Iterable[int]]) -> float:
        """The end of a measured controller flow: once the stand-ins of `expect` have their
        LeaderAndIsr and all have gone quiet, the machine's other load (`trial.other_load`, read
        before decoding so the decoding does not count) and `acked` (`trial.missing`); returns the
        wall time of the last wanted acknowledgement."""
        self.quiet_stand_ins(since, self.args.timeout, expect=expect)
        trial.other_load = meter.other_share()
        last, trial.missing = self.acked(since, want, tps, replicas)
        return last


# ------------------------------------------------------------------------- a bench script's options, sizes, trials
def common_args(doc: str, plot_file: str, default_sizes: str = "1000,10000,50000", timeout: float = 300.0,
                repeat_help: str = "trials per size (median reported)",
                py_spy_help: str = "record a py-spy profile of broker 1 per trial"):
    """The options every controller bench takes (the description is the first line of the
    script's docstring; `plot_file` the default plot in bench/), so that they mean the same in
    each; a script adds its own after these."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--sizes", default=default_sizes, help="partition counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=3, help=repeat_help)
    ap.add_argument("--partitions-per-topic", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=timeout, help="bound on every wait, seconds")
    ap.add_argument("--zk-heap-mb", type=int, default=1536)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed)")
    ap.add_argument("--keep", action="store_true", help="keep broker directories (logs)")
    ap.add_argument("--py-spy", default=None, metavar="DIR", help=py_spy_help)
    ap.add_argument("--results", default=str(REPO / "bench" / "RESULTS.md"))
    ap.add_argument("--no-write", action="store_true", help="print only; do not touch RESULTS.md / the plot")
    ap.add_argument("--plot", default=str(REPO / "bench" / plot_file))
    return ap


def sizes(spec: str) -> list[int]:
    """The partition counts of a comma-separated option (--sizes, --hosting-sizes)."""
    return [int(s) for s in spec.split(",") if s.strip()]


@contextmanager
def work_dir(args, prefix: str = "praha-bench-") -> Iterator[Path]:
    """The work directory of a run: --dir (kept), else a temporary one removed at the end
    unless --keep (ZooKeeper data and broker logs of 50k partitions are large). Also makes the
    --py-spy directory, so that the first profile does not fail after minutes of set-up."""
    import tempfile

    if args.py_spy:
        Path(args.py_spy).mkdir(parents=True, exist_ok=True)
    if args.dir:
        root = Path(args.dir)
        root.mkdir(parents=True, exist_ok=True)
        remove = False
    else:
        root = Path(tempfile.mkdtemp(prefix=prefix))
        remove = not args.keep
    try:
        yield root
    finally:
        if remove:
            shutil.rmtree(root, ignore_errors=True)


def run_sizes(args, run_size: Callable[[int, object, Path], list], prefix: str = "praha-bench-") -> dict[int, list]:
    """`run_size(P, args, work directory)` for every --sizes P, in one `work_dir`; returns the
    trials by P."""
    results: dict[int, list] = {}
    with work_dir(args, prefix) as root:
        for p in sizes(args.sizes):
            results[p] = run_size(p, args, root)
    return results


def median(xs: Sequence[float]) -> float:
    import statistics

    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def summarise_trials(results: dict[int, list], medians: dict[str, str],
                     extremes: dict[str, tuple[Callable, str]] | None = None) -> list[dict]:
    """One row per size: "P", then for each `medians` entry (row key → trial field) the median
    over the trials (trials where it is NaN left out: a figure a trial could not take), for each
    `extremes` entry (row key → (max or min, trial field)) the worst trial's, and "trials"."""
    rows = []
    for p, trials in results.items():
        row: dict = {"P": p}
        row.update({key: median([getattr(t, name) for t in trials]) for key, name in medians.items()})
        row.update({key: agg(getattr(t, name) for t in trials) for key, (agg, name) in (extremes or {}).items()})
        row["trials"] = len(trials)
        rows.append(row)
    return rows


# ------------------------------------------------------------------------- a bench's tables, verdicts, section, plot
Column = tuple[str, "str | Callable[[dict], str]"]


def secs(key: str) -> Callable[[dict], str]:
    """A table cell: the row's `key` in seconds (`fmt_s`: "n/a" for a figure not taken)."""
    return lambda r: fmt_s(r[key])


#: the columns every controller bench's table ends with
OTHER_LOAD: Column = ("other load", lambda r: f"{r['other_load'] * 100:.0f}%")
TRIALS: Column = ("trials", "{trials}")


def md_table(columns: Sequence[Column], rows: list[dict]) -> str:
    """A right-aligned Markdown table, one line per row, as RESULTS.md has them; each column is
    (header, cell) where the cell is a format template of the row (`"{P:,}"`) or a function of it."""
    cell = [(c if callable(c) else c.format_map) for _h, c in columns]
    return ("| " + " | ".join(h for h, _c in columns) + " |\n" + "|" + "---:|" * len(columns) + "\n"
            + "".join("| " + " | ".join(f(r) for f in cell) + " |\n" for r in rows))


def ratio_verdict(r: dict) -> str:
    """The verdict every size gets: its time as a multiple of the raw write limit."""
    return f"P={r['P']:,}: {fmt_s(r['time_s'])}s = {r['ratio']:.2f}x the raw limit"


def target_verdicts(r: dict, target_s: float) -> list[str]:
    """The absolute target's verdict, for the P = 10,000 row only (the size it is set at)."""
    if r["P"] != 10_000:
        return []
    ok = r["time_s"] < target_s
    return [f"P=10,000: {fmt_s(r['time_s'])}s ({'meets' if ok else 'MISSES'} < {target_s:g} s)"]


def missing_verdicts(r: dict, what: str = "") -> list[str]:
    """A warning when partitions were never acknowledged (`what`: with which leader), since the
    time of such a size is then only a lower bound."""
    return [f"P={r['P']:,}: {r['missing']} partitions never acknowledged{what}"] if r["missing"] else []


def rig_machine(zk: str = "", broker: str = "", stand_ins: str = "") -> str:
    """The "Machine:" paragraph of a `Rig` bench's section: the machine, then what ran where;
    `zk`, `broker`, `stand_ins` add to the notes on ZooKeeper, broker 1 and the stand-ins."""
    return (f"{machine_line()}. ZooKeeper 3.9 embedded (forceSync=no{zk}); broker 1 is a real broker "
            f"process and the controller (it hosts no replica{broker}); brokers 2-6 are stand-ins "
            f"({stand_ins}`bench/_harness.py`).")


def section_text(heading: str, command: str, machine: str, what: str, table: str, verdicts: list[str],
                 plot_file: str, after_verdicts: str = "") -> str:
    """A bench's RESULTS.md section, laid out as all of them are: heading, command, machine,
    what is timed, the table, the verdicts as a list, (`after_verdicts`), the plot."""
    return (
        f"{heading}\n\n"
        f"Command: `{command}`\n\n"
        f"Machine: {machine}\n\n"
        f"{what}\n\n"
        + table + "\n"
        + "".join(f"- {v}\n" for v in verdicts)
        + after_verdicts
        + f"\nPlot: `bench/{plot_file}` (log-log).\n"
    )


def report_results(args, script: str, printed: str, verdicts: list[str], heading: str,
                   section: Callable[[str], str], plot: Callable[[], None]) -> None:
    """Print the table(s) and the verdicts; unless --no-write, replace the script's section of
    --results (`section(command line)`, so that a figure can be reproduced) and draw --plot."""
    print("\n" + printed)
    for v in verdicts:
        print(v)
    if args.no_write:
        return
    command = (f"python bench/{Path(script).name} " + " ".join(sys.argv[1:])).strip()
    write_section(Path(args.results), heading, section(command))
    plot()
    print(f"\nwrote {args.results} and {args.plot}")


def loglog_plot(path: Path, title: str, xs: Sequence[float], series: Sequence[tuple[Sequence[float], str, dict]],
                xlabel: str = "partitions (RF 3)", hline: tuple[float, str] | None = None,
                legend_fontsize: float | None = None, dpi: int = 110) -> None:
    """A log-log plot of `series` = (ys, style, matplotlib keywords such as label) against
    `xs`, with an optional horizontal target line (value, label): the times grow over decades
    of P, which only a log-log scale shows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for ys, style, kw in series:
        ax.plot(xs, ys, style, **kw)
    if hline:
        ax.axhline(hline[0], color="red", linestyle=":", alpha=0.6, label=hline[1])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("seconds")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend_fontsize)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def plot_vs_raw(path: Path, title: str, rows: list[dict], curves: list[tuple[str, str, str]],
                target_s: float | None = None, target_ratio: float | None = None) -> None:
    """Log-log: each (row key, label, style) against P, with the raw limit and targets."""
    series = [([r[key] for r in rows], style, {"label": label}) for key, label, style in curves]
    series.append(([r["raw_s"] for r in rows], "s--", {"label": "raw limit: fenced multi-op writes (100/op)"}))
    if target_ratio:
        series.append(([target_ratio * r["raw_s"] for r in rows], ":",
                       {"color": "grey", "label": f"{target_ratio:g}× raw limit (target)"}))
    loglog_plot(path, title, [r["P"] for r in rows], series,
                hline=(target_s, f"{target_s:g} s target") if target_s else None, legend_fontsize=8)
