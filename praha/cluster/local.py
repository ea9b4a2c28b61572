"""A local cluster in one directory: the embedded ZooKeeper and N broker processes.

Layout of `--dir` (default `.praha/cluster`):
  cluster.json            what `up` started: ZooKeeper (connect string, pid, embedded?),
                          brokers (id, port, metrics port, pid, config path)
  zookeeper/              the embedded server's data, config and log
  broker-<id>/            server.properties, broker.log (stdout/stderr), data/ (log.dirs)

`up` writes configs, starts ZooKeeper (unless one is given), starts the brokers as
detached processes (they outlive the command), waits until every broker is registered
and a controller is elected. Every process is stopped by the PID recorded here, and only
after checking that the PID still belongs to the process we started (its command line),
so a recycled PID is never signalled.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from praha.cluster import netns as netns_mod
from praha.cluster.netns import NetnsLayout
from praha.common import netns_preexec
from praha.errors import PrahaError
from praha.zk.auth import ZkAuth
from praha.zk.server import EmbeddedZooKeeper
from praha.zk.store import ZkStore

DEFAULT_DIR = Path(os.environ.get("PRAHA_HOME", ".praha")) / "cluster"
#: with --netns --secure: the brokers' INTERNAL (mutual TLS) listener, on each broker's own address
NETNS_INTERNAL_PORT = 9093

#: defaults for local clusters: a short session timeout so failover is quick on loopback
LOCAL_BROKER_DEFAULTS = {
    "zookeeper.session.timeout.ms": "6000",
    "controlled.shutdown.retry.backoff.ms": "500",
    "leader.imbalance.check.interval.seconds": "30",
}


class ClusterError(PrahaError):
    pass


@dataclass
class BrokerProcess:
    id: int
    port: int
    metrics_port: int
    dir: str
    pid: int = -1
    overrides: dict[str, str] = field(default_factory=dict)
    #: the Schema Registry's port (0: none); `schema.registry.listeners` in the overrides wins
    registry_port: int = 0

    @property
    def schema_registry(self) -> str:
        """The registry's URL ("" when it is off)."""
        return self.overrides.get("schema.registry.listeners", "").split(",")[0].strip()

    #: the broker's own address (its namespace's with `up --netns`) and that namespace
    host: str = "127.0.0.1"
    netns: str = ""

    @property
    def address(self) -> str:
        """host:port of its first listener, as clients bootstrap from it."""
        return f"{self.host}:{self.port}"

    @property
    def config_path(self) -> Path:
        return Path(self.dir) / "server.properties"

    @property
    def log_path(self) -> Path:
        return Path(self.dir) / "broker.log"

    @property
    def log_dirs(self) -> list[Path]:
        """Every log dir of the broker (its `log.dirs` override, else `data/` under its dir)."""
        dirs = self.overrides.get("log.dirs", "")
        return [Path(d) for d in dirs.split(",") if d.strip()] or [Path(self.dir) / "data"]

    @property
    def actual_metrics_port(self) -> int:
        """The metrics port the running broker reports (it falls back to a free port if ours was taken)."""
        try:
            return int(json.loads((Path(self.dir) / "data" / "praha-runtime.json").read_text())["metrics_port"])
        except (OSError, ValueError, KeyError):
            return self.metrics_port


@dataclass
class ClusterState:
    zookeeper: str
    zookeeper_pid: int = -1
    zookeeper_embedded: bool = True
    brokers: dict[int, BrokerProcess] = field(default_factory=dict)
    #: `up --secure`: the directory of its CA, certificates and admin credential ("" = open)
    security_dir: str = ""
    #: `up --netns`: the namespace ZooKeeper runs in ("" = this one)
    zookeeper_netns: str = ""

    def to_json(self) -> str:
        d = asdict(self)
        d["brokers"] = {str(k): v for k, v in d["brokers"].items()}
        return json.dumps(d, indent=2)

    @classmethod
    def from_json(cls, text: str) -> ClusterState:
        d = json.loads(text)
        brokers = {int(k): BrokerProcess(**v) for k, v in d.pop("brokers").items()}
        return cls(brokers=brokers, **d)


def _process_matches(pid: int, needle: str) -> bool:
    """True if `pid` is alive and its command line contains `needle` (guards against PID reuse)."""
    if pid <= 0:
        return False
    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        return needle in " ".join(p.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _signal(pid: int, needle: str, sig: int) -> bool:
    if not _process_matches(pid, needle):
        return False
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def _wait_gone(pid: int, needle: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _process_matches(pid, needle):
            return True
        time.sleep(0.05)
    return not _process_matches(pid, needle)


class LocalCluster:
    def __init__(self, root: str | Path = DEFAULT_DIR):
        self.root = Path(root).resolve()
        self.state_file = self.root / "cluster.json"
        #: pid → creation time of every process this object started, so that `down` stops
        #: them even if cluster.json was lost (e.g. its directory deleted meanwhile); the
        #: creation time guards against PID reuse, also in the instant before exec
        self._launched: dict[int, float] = {}

    # ---- state ----------------------------------------------------------------------
    def load(self) -> ClusterState:
        try:
            return ClusterState.from_json(self.state_file.read_text())
        except FileNotFoundError:
            raise ClusterError(f"no cluster in {self.root} (run `praha cluster up --dir {self.root}` first)") from None
        except (ValueError, TypeError, KeyError) as e:
            raise ClusterError(f"{self.state_file} is not a valid cluster description: {e}") from None

    def save(self, state: ClusterState) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(state.to_json())
        tmp.replace(self.state_file)

    def exists(self) -> bool:
        return self.state_file.exists()

    # ---- up ----------------------------------------------------------------------------
    def up(
        self,
        brokers: int = 3,
        zookeeper: str | None = None,
        overrides: dict[str, str] | None = None,
        timeout: float = 60.0,
        progress: Callable[[str], object] = lambda msg: None,
        per_broker: dict[int, dict[str, str]] | None = None,
        secure: bool = False,
        netns: bool = False,
        netns_layout: NetnsLayout | None = None,
    ) -> ClusterState:
        """Start ZooKeeper (unless `zookeeper` is given) and `brokers` brokers. With `netns`, each
        in a network namespace of its own (a layout made here and recorded in `netns.json`
        before anything exists, removed by `down`); with `netns_layout`, the brokers go in the
        caller's layout (nodes b1, b2, ...), which the caller removes."""
        if brokers < 1:
            raise ClusterError("--brokers must be at least 1")
        if self.exists():
            state = self.load()
            running = [b.id for b in state.brokers.values() if self.broker_running(b)]
            if running or _process_matches(state.zookeeper_pid, "zookeeper"):
                raise ClusterError(
                    f"a cluster is already running in {self.root} (brokers {running}); "
                    "run `praha cluster down` first or use another --dir"
                )
        self.root.mkdir(parents=True, exist_ok=True)
        layout = netns_layout
        if netns and layout is None:
            names = ([] if zookeeper else ["zk"]) + [f"b{i}" for i in range(1, brokers + 1)]
            layout = netns_mod.create(names, self.netns_record)
            progress(f"network namespaces {', '.join(n.netns for n in layout.nodes.values())} on bridge "
                     f"{layout.bridge} ({layout.gateway}/24)")
        material = None
        if secure:
            from praha.cluster.secure import make_material

            zk_host = layout.node("zk").address if netns and layout is not None and not zookeeper else "127.0.0.1"
            material = make_material(self.root / "security", list(range(1, brokers + 1)), not zookeeper, zk_host)
        if zookeeper:
            state = ClusterState(zookeeper=zookeeper, zookeeper_embedded=False)
        else:
            progress("starting embedded ZooKeeper")
            zk_node = layout.node("zk") if netns and layout is not None else None
            zk = EmbeddedZooKeeper(self.root / "zookeeper", port=2181 if zk_node else 0,
                                   host=zk_node.address if zk_node else "127.0.0.1", tick_time_ms=500,
                                   min_session_timeout_ms=1000,
                                   security=material[0].zk_server_security() if material else None)
            zk.netns = zk_node.netns if zk_node else ""
            zk.start(max(30.0, timeout))
            state = ClusterState(zookeeper=zk.connect_string, zookeeper_pid=zk.pid or -1, zookeeper_netns=zk.netns)
            if zk.pid:
                self._remember(zk.pid)
            progress(f"ZooKeeper on {zk.connect_string} (pid {zk.pid})")
        self.save(state)
        ports = free_ports(3 * brokers)  # client and metrics ports, then the registries' (one call: all distinct)
        # as Kafka's single-broker quickstart config: __consumer_offsets can be created
        # with fewer than three brokers (FindCoordinator waits for that many otherwise)
        # (the same for __transaction_state, whose min.insync.replicas must fit too)
        offsets_defaults = {"offsets.topic.replication.factor": str(min(3, brokers)),
                            "transaction.state.log.replication.factor": str(min(3, brokers)),
                            "transaction.state.log.min.isr": str(min(2, brokers))}
        if material is not None:
            from praha.cluster.secure import prepare

            setup, ca = material
            ids = list(range(1, brokers + 1))
            if layout is not None:  # hosts of their own: Kafka's ports on each address
                hosts = {b: layout.node(f"b{b}").address for b in ids}
                internal, client = {b: NETNS_INTERNAL_PORT for b in ids}, {b: 9092 for b in ids}
            else:
                hosts, internal, client = {}, dict(zip(ids, free_ports(brokers))), {b: ports[2 * b - 2] for b in ids}
            secure_settings = prepare(setup, ca, state.zookeeper, ids, internal, client,
                                      own_root=state.zookeeper_embedded or "/" in state.zookeeper, hosts=hosts)
            state.security_dir = str(setup.directory)
            per_broker = {b: {**secure_settings[b], **((per_broker or {}).get(b, {}))} for b in ids}
            progress(f"secure: CA {setup.ca}, SASL_SSL (SCRAM-SHA-512) for clients, mutual TLS between brokers, "
                     "ACLs on; ZooKeeper: " + setup.zk_auth().summary())
        registry_ports = ports[2 * brokers:]
        scheme = "https" if secure else "http"
        for bid in range(1, brokers + 1):
            node = layout.node(f"b{bid}") if layout is not None else None
            placed = {"praha.metrics.host": node.address} if node else {}
            host = node.address if node else "127.0.0.1"
            registry = {"schema.registry.listeners": f"{scheme}://{host}:{registry_ports[bid - 1]}"}
            state.brokers[bid] = BrokerProcess(
                id=bid, port=9092 if node else ports[2 * bid - 2], metrics_port=9404 if node else ports[2 * bid - 1],
                dir=str(self.root / f"broker-{bid}"),
                overrides={**offsets_defaults, **placed, **registry, **(overrides or {}),
                           **((per_broker or {}).get(bid, {}))},
                registry_port=registry_ports[bid - 1], host=host, netns=node.netns if node else "",
            )
        self.save(state)
        for b in state.brokers.values():
            self._launch(state, b)
            progress(f"broker {b.id} starting on {b.address}{' in ' + b.netns if b.netns else ''} (pid {b.pid})")
        self.save(state)
        self.wait_until_ready(state, set(state.brokers), timeout)
        return state

    def _write_config(self, state: ClusterState, b: BrokerProcess) -> None:
        d = Path(b.dir)
        d.mkdir(parents=True, exist_ok=True)
        props = {
            "broker.id": str(b.id),
            "listeners": f"PLAINTEXT://{b.host}:{b.port}",
            "log.dirs": str(d / "data"),
            "zookeeper.connect": state.zookeeper,
            "praha.metrics.port": str(b.metrics_port),
            **LOCAL_BROKER_DEFAULTS,
            **b.overrides,
        }
        # overridden listeners name the broker's own port as {port} (several listeners per broker)
        props["listeners"] = props["listeners"].replace("{port}", str(b.port))
        b.config_path.touch(mode=0o600)  # it may hold secrets (sasl.jaas.config, praha.zookeeper.digest)
        b.config_path.chmod(0o600)
        b.config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def _launch(self, state: ClusterState, b: BrokerProcess) -> None:
        self._write_config(state, b)
        with open(b.log_path, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "praha", "broker", "start", "--config", str(b.config_path)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                cwd=b.dir, preexec_fn=netns_preexec(b.netns) if b.netns else None,
            )
        b.pid = proc.pid
        self._remember(proc.pid)

    def wait_until_ready(self, state: ClusterState, broker_ids: set[int], timeout: float) -> dict[str, Any]:
        """Until every broker in `broker_ids` is registered, a controller is elected, and each
        of those brokers' Metadata API already names all live brokers and that controller
        (so a client bootstrapping from any of them sees the whole cluster). One ZooKeeper
        session for the whole wait (a session per look cost a connection every 0.1 s)."""
        from praha.admin.status import cluster_status

        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        security = self.client_security(state)
        store: ZkStore | None = None
        try:
            while time.monotonic() < deadline:
                for bid in broker_ids:
                    b = state.brokers[bid]
                    if not self.broker_running(b):
                        raise ClusterError(
                            f"broker {bid} exited during start-up; see {b.log_path}:\n{_tail(b.log_path)}"
                        )
                try:
                    if store is None:
                        store = self._zk_store(state)
                    last = cluster_status(state.zookeeper, include_topics=False, store=store)
                except Exception:  # noqa: BLE001 - ZooKeeper may still be coming up
                    if store is not None:
                        store.stop()
                        store = None
                    time.sleep(0.2)
                    continue
                live = {b["id"] for b in last["brokers"]}
                if broker_ids <= live and last["controller"]["id"] in live and all(
                    self._metadata_agrees(state.brokers[b], live, last["controller"]["id"], security)
                    and _registry_listening(state.brokers[b]) for b in broker_ids
                ):
                    return last
                time.sleep(0.1)
        finally:
            if store is not None:
                store.stop()
        raise ClusterError(f"cluster not ready after {timeout:.0f}s: {last}")

    def _zk_store(self, state: ClusterState) -> ZkStore:
        """A started session with this cluster's ZooKeeper (short timeouts: it is polled)."""
        store = ZkStore(state.zookeeper, session_timeout_ms=10000, connection_timeout_ms=5000,
                        auth=self.zk_auth(state))
        store.start()
        return store

    def zk_auth(self, state: ClusterState) -> ZkAuth | None:
        """How this cluster's tools reach its ZooKeeper (None: the environment's default)."""
        if not state.security_dir:
            return None
        from praha.cluster.secure import SecureSetup

        return SecureSetup.load(Path(state.security_dir)).zk_auth()

    def client_security(self, state: ClusterState) -> Any:
        """How this cluster's own checks connect to its brokers (the admin, if secure)."""
        from praha.protocol.client_security import PLAINTEXT

        if not state.security_dir:
            return PLAINTEXT
        from praha.cluster.secure import SecureSetup

        return SecureSetup.load(Path(state.security_dir)).client_security()

    def _metadata_agrees(self, b: BrokerProcess, live: set[int], controller_id: int, security: Any) -> bool:
        from praha.admin.client_status import fetch_metadata

        try:
            md = fetch_metadata(b.address, topics=[], timeout=2.0, security=security)
        except Exception:  # noqa: BLE001 - not serving yet
            return False
        return md.controller_id == controller_id and {x.node_id for x in md.brokers} == live

    # ---- status -----------------------------------------------------------------------
    def zk_status(self, state: ClusterState) -> dict[str, Any]:
        from praha.admin.status import cluster_status

        return cluster_status(state.zookeeper, auth=self.zk_auth(state))

    def status(self) -> dict[str, Any]:
        state = self.load()
        st = self.zk_status(state)
        st["processes"] = {
            str(b.id): {"pid": b.pid, "running": self.broker_running(b), "host": b.host, "port": b.port,
                        "metrics_port": b.metrics_port, "log": str(b.log_path), "schema_registry": b.schema_registry}
            for b in state.brokers.values()
        }
        for entry in st.get("brokers", []):
            known = state.brokers.get(entry.get("id"))
            if known is not None:
                entry["schema_registry"] = known.schema_registry
        return st

    # ---- processes ----------------------------------------------------------------------
    def broker_running(self, b: BrokerProcess) -> bool:
        """Alive? For processes this object launched, by PID and creation time (right after the
        fork the command line is still the parent's); otherwise by PID and command line."""
        created = self._launched.get(b.pid)
        if created is not None:
            try:
                p = psutil.Process(b.pid)
                return bool(p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE)
            except psutil.NoSuchProcess:
                return False
        return _process_matches(b.pid, str(b.config_path))

    def _signal_broker(self, b: BrokerProcess, sig: int) -> bool:
        if not self.broker_running(b):
            return False
        try:
            os.kill(b.pid, sig)
            return True
        except ProcessLookupError:
            return False

    def _wait_broker_gone(self, b: BrokerProcess, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.broker_running(b):
                return True
            time.sleep(0.05)
        return not self.broker_running(b)

    def broker(self, broker_id: int) -> tuple[ClusterState, BrokerProcess]:
        state = self.load()
        b = state.brokers.get(broker_id)
        if b is None:
            raise ClusterError(f"no broker {broker_id} in {self.root} (brokers: {sorted(state.brokers)})")
        return state, b

    def kill_broker(self, broker_id: int) -> int:
        """SIGKILL (a crash). Returns the PID killed."""
        _, b = self.broker(broker_id)
        if not self._signal_broker(b, signal.SIGKILL):
            raise ClusterError(f"broker {broker_id} is not running")
        self._wait_broker_gone(b, 10)
        return b.pid

    def pause_broker(self, broker_id: int) -> None:
        _, b = self.broker(broker_id)
        if not self._signal_broker(b, signal.SIGSTOP):
            raise ClusterError(f"broker {broker_id} is not running")

    def resume_broker(self, broker_id: int) -> None:
        _, b = self.broker(broker_id)
        self._signal_broker(b, signal.SIGCONT)

    def stop_broker(self, broker_id: int, timeout: float = 60.0) -> bool:
        """SIGTERM (graceful: controlled shutdown), SIGKILL if still alive after `timeout`.
        Returns True if it exited by itself."""
        _, b = self.broker(broker_id)
        if not self._signal_broker(b, signal.SIGTERM):
            raise ClusterError(f"broker {broker_id} is not running")
        if self._wait_broker_gone(b, timeout):
            return True
        self._signal_broker(b, signal.SIGKILL)
        self._wait_broker_gone(b, 10)
        return False

    def start_broker(self, broker_id: int, wait: bool = True, timeout: float = 60.0) -> BrokerProcess:
        state, b = self.broker(broker_id)
        if self.broker_running(b):
            raise ClusterError(f"broker {broker_id} is already running (pid {b.pid})")
        self._launch(state, b)
        self.save(state)
        if wait:
            self.wait_until_ready(state, {broker_id}, timeout)
        return b

    def restart_zookeeper(self, timeout: float = 60.0) -> ClusterState:
        """Start this cluster's embedded ZooKeeper again, on its port and data, in the
        background, and record its PID so that `down` stops it (after it died or was killed)."""
        state = self.load()
        if not state.zookeeper_embedded:
            raise ClusterError(f"the cluster in {self.root} uses an external ZooKeeper ({state.zookeeper}); "
                               "start that one yourself")
        if _process_matches(state.zookeeper_pid, "zookeeper"):
            raise ClusterError(f"the ZooKeeper of the cluster in {self.root} is running (pid {state.zookeeper_pid})")
        host, _, port = state.zookeeper.rpartition(":")
        security = None
        if state.security_dir:
            from praha.cluster.secure import SecureSetup

            security = SecureSetup.load(Path(state.security_dir)).zk_server_security()
        zk = EmbeddedZooKeeper(self.root / "zookeeper", port=int(port), host=host or "127.0.0.1", tick_time_ms=500,
                               min_session_timeout_ms=1000, security=security)
        zk.netns = state.zookeeper_netns
        zk.start(timeout)
        state.zookeeper_pid = zk.pid or -1
        if zk.pid:
            self._remember(zk.pid)
        self.save(state)
        return state

    @property
    def netns_record(self) -> Path:
        """What `up --netns` made (written before it made anything)."""
        return self.root / "netns.json"

    def down(self, timeout: float = 30.0, progress: Callable[[str], object] = lambda msg: None) -> None:
        """Stop every process `up` started (graceful first, then SIGKILL), then ZooKeeper, then
        remove the network namespaces `up --netns` made (also after `up` crashed half-way)."""
        try:
            state = self.load()
        except ClusterError:
            if not self._launched and not self.netns_record.exists():
                raise
            state = ClusterState(zookeeper="", zookeeper_pid=-1)
        try:
            self._down(state, timeout, progress)
        finally:
            self._reap_launched()
            removed = netns_mod.teardown_recorded(self.netns_record)
            if removed:
                progress(f"network namespaces and links removed ({removed})")

    def _remember(self, pid: int) -> None:
        try:
            self._launched[pid] = psutil.Process(pid).create_time()
        except psutil.NoSuchProcess:
            pass

    def _reap_launched(self) -> None:
        """SIGKILL whatever this object started and is still alive."""
        for pid, created in list(self._launched.items()):
            try:
                p = psutil.Process(pid)
                if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                    p.kill()
                    p.wait(10)
            except (psutil.NoSuchProcess, psutil.TimeoutExpired):
                pass
        self._launched.clear()

    def _down(self, state: ClusterState, timeout: float, progress: Callable[[str], object]) -> None:
        running = [b for b in state.brokers.values() if self.broker_running(b)]
        for b in running:
            self._signal_broker(b, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for b in running:
            if not self._wait_broker_gone(b, max(0.1, deadline - time.monotonic())):
                self._signal_broker(b, signal.SIGKILL)
                self._wait_broker_gone(b, 10)
            progress(f"broker {b.id} stopped (pid {b.pid})")
        if state.zookeeper_embedded and _process_matches(state.zookeeper_pid, "zookeeper"):
            _signal(state.zookeeper_pid, "zookeeper", signal.SIGTERM)
            if not _wait_gone(state.zookeeper_pid, "zookeeper", 10):
                _signal(state.zookeeper_pid, "zookeeper", signal.SIGKILL)
                _wait_gone(state.zookeeper_pid, "zookeeper", 10)
            progress(f"ZooKeeper stopped (pid {state.zookeeper_pid})")

def _registry_listening(b: BrokerProcess) -> bool:
    """True when the broker runs no Schema Registry, or its port accepts connections."""
    if not b.schema_registry:
        return True
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(b.schema_registry)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 0), timeout=1.0):
            return True
    except OSError:
        return False


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """`n` distinct free ports: every socket stays bound until all are chosen."""
    import socket

    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
