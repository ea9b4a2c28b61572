"""An embedded ZooKeeper server: the real one, from the jars inside the pyspark wheel.

Start flow (`EmbeddedZooKeeper.start`):
  1. find `java` (JAVA_HOME, then PATH) and the jar directory next to `pyspark.__file__`;
  2. refuse if a live server from an earlier run still owns this data_dir (pid file);
  3. pick a free port if asked for port 0, else check the port is free;
  4. write `zoo.cfg` (loopback only; the admin HTTP server off, as praha asks ZooKeeper
     nothing over HTTP; only the 4-letter words praha sends, `srvr`/`ruok`; the data dir
     its owner's only) and a log4j2 file logging to `data_dir/zookeeper.log`; with
     `ZkServerSecurity`, only the TLS client port (Netty) with the cluster's certificates
     and SASL DIGEST-MD5 users from a JAAS `Server` section;
  5. start `ZooKeeperServerMain` in its own session, write `data_dir/zookeeper.pid`;
  6. poll `srvr` until the server says it serves, the child dies (→ error with the log
     tail) or the timeout passes.
Stop flow: SIGTERM to the PID, SIGKILL after a grace period, remove the pid file.

`ZooKeeperEnsemble` runs n `QuorumPeerMain` servers on loopback the same way.
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from praha.common import netns_preexec
from praha.errors import PrahaError
from praha.zk.auth import ZkTls
from praha.zk.four_letter import USED_COMMANDS, four_letter_word

log = logging.getLogger(__name__)

PID_FILE = "zookeeper.pid"
LOG_FILE = "zookeeper.log"
STDOUT_FILE = "zookeeper.out"
SERVER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


class ZooKeeperServerError(PrahaError):
    """The embedded ZooKeeper could not be started (no Java, port taken, crashed)."""


@dataclass(frozen=True)
class ZkServerSecurity:
    """A secured embedded server: TLS only (its key and certificate chain in one PEM file,
    the cluster's CA), and the SASL DIGEST-MD5 users it accepts. Client certificates are not
    asked for: a certificate would add an `x509:` identity to every znode its holder creates
    (CREATOR_ALL), so the one identity that may write stays the SASL user."""
    keystore: Path
    truststore: Path
    sasl_users: tuple[tuple[str, str], ...]

    def probe_tls(self) -> ZkTls:
        """How the server's own readiness probe connects."""
        return ZkTls(str(self.truststore))

    def config_lines(self, host: str, port: int) -> list[str]:
        return [
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
            f"secureClientPort={port}",
            f"secureClientPortAddress={host}",
            f"ssl.keyStore.location={self.keystore}",
            "ssl.keyStore.type=PEM",
            f"ssl.trustStore.location={self.truststore}",
            "ssl.trustStore.type=PEM",
            "ssl.clientAuth=none",  # identity is SASL; TLS keeps it and the data private
            "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
        ]

    def jaas(self) -> str:
        def quoted(v: str) -> str:
            return v.replace("\\", "\\\\").replace('"', '\\"')
        users = "".join(f'\n    user_{u}="{quoted(p)}"' for u, p in self.sasl_users)
        return f"Server {{\n    org.apache.zookeeper.server.auth.DigestLoginModule required{users};\n}};\n"


def find_java() -> str:
    """The java executable: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if not found:
        raise ZooKeeperServerError(
            "Java not found: the embedded ZooKeeper needs a Java runtime (11+, e.g. OpenJDK 17) "
            "on PATH or in JAVA_HOME; or point zookeeper.connect at an external ensemble")
    return found


def zookeeper_classpath() -> str:
    """`<site-packages>/pyspark/jars/*`, checked to contain a ZooKeeper jar."""
    try:
        import pyspark
    except ImportError as e:  # pragma: no cover - pyspark is a hard dependency
        raise ZooKeeperServerError(f"pyspark is not installed, no ZooKeeper jars: {e}") from e
    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("zookeeper-*.jar")):
        raise ZooKeeperServerError(f"no zookeeper-*.jar in {jars}")
    return f"{jars}/*"


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the usual small race is accepted)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM binds: TIME_WAIT is no owner
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def _log4j2_properties(log_path: Path) -> str:
    return (
        "status = warn\n"
        "appender.file.type = File\n"
        "appender.file.name = FILE\n"
        f"appender.file.fileName = {log_path}\n"
        "appender.file.layout.type = PatternLayout\n"
        "appender.file.layout.pattern = %d{ISO8601} [myid:%X{myid}] %-5p [%t:%c{1}@%L] - %m%n\n"
        "rootLogger.level = INFO\n"
        "rootLogger.appenderRef.file.ref = FILE\n"
    )


def _set_parent_death_signal() -> None:  # pragma: no cover - runs in the child
    """Linux only: have the kernel SIGTERM the child if the starting thread dies."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class _JavaServer:
    """One ZooKeeper JVM: config files, process, readiness, stop by PID."""

    main_class = SERVER_MAIN
    #: the JVM compiles with its quick JIT tier only: an embedded ZooKeeper of a local or test
    #: cluster serves light traffic, and the optimising tier's compiler threads cost half of a
    #: start's CPU (2.5-2.8 CPU-s instead of 5.1 for a start and 200 writes, side by side);
    #: benchmarks that load ZooKeeper hard set `()` to keep the JVM's default
    jit_options: tuple[str, ...] = ("-XX:TieredStopAtLevel=1",)

    def __init__(self, data_dir: str | os.PathLike[str], port: int, host: str, *, tick_time_ms: int,
                 min_session_timeout_ms: int | None, max_session_timeout_ms: int | None,
                 force_sync: bool, heap_mb: int, die_with_parent: bool,
                 security: ZkServerSecurity | None = None):
        self.security = security
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.port = port
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.force_sync = force_sync
        self.heap_mb = heap_mb
        self.die_with_parent = die_with_parent
        #: the network namespace to run in ("" = this one); its address is `host`
        self.netns = ""
        self._proc: subprocess.Popen[bytes] | None = None

    # -- paths ---------------------------------------------------------------------------
    @property
    def pid_file(self) -> Path:
        return self.data_dir / PID_FILE

    @property
    def log_file(self) -> Path:
        return self.data_dir / LOG_FILE

    @property
    def config_file(self) -> Path:
        return self.data_dir / "zoo.cfg"

    @property
    def jaas_file(self) -> Path:
        return self.data_dir / "zookeeper_jaas.conf"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- config --------------------------------------------------------------------------
    def _config_lines(self) -> list[str]:
        lines = [
            f"tickTime={self.tick_time_ms}",
            f"dataDir={self.data_dir / 'data'}",
            f"clientPort={self.port}",
            f"clientPortAddress={self.host}",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            f"4lw.commands.whitelist={','.join(USED_COMMANDS)}",
            f"forceSync={'yes' if self.force_sync else 'no'}",
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
        ]
        if self.security is not None:  # the plaintext port is off: TLS only
            lines = [line for line in lines if not line.startswith(("clientPort=", "clientPortAddress="))]
            lines += self.security.config_lines(self.host, self.port)
        if self.min_session_timeout_ms is not None:
            lines.append(f"minSessionTimeout={self.min_session_timeout_ms}")
        if self.max_session_timeout_ms is not None:
            lines.append(f"maxSessionTimeout={self.max_session_timeout_ms}")
        return lines

    def _write_files(self) -> None:
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)  # snapshots hold every znode, credentials included
        if self.security is not None:
            self.jaas_file.touch(mode=0o600)
            self.jaas_file.write_text(self.security.jaas())
        self.config_file.write_text("\n".join(self._config_lines()) + "\n")
        (self.data_dir / "log4j2.properties").write_text(_log4j2_properties(self.log_file))

    def _command(self, java: str, classpath: str) -> list[str]:
        return [
            java, f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC", *self.jit_options, "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile=file:{self.data_dir / 'log4j2.properties'}",
            "-Dzookeeper.jmx.log4j.disable=true", "-Dzookeeper.admin.enableServer=false",
            *([f"-Djava.security.auth.login.config={self.jaas_file}"] if self.security is not None else []),
            "-cp", classpath, self.main_class, str(self.config_file),
        ]

    # -- lifecycle -----------------------------------------------------------------------
    def _check_stale_pid(self) -> None:
        if not self.pid_file.exists():
            return
        try:
            old = int(self.pid_file.read_text().strip())
        except ValueError:
            old = -1
        if old > 0 and _pid_alive(old):
            raise ZooKeeperServerError(
                f"a ZooKeeper (pid {old}) still runs for {self.data_dir} (pid file {self.pid_file}); "
                "stop it first")
        self.pid_file.unlink(missing_ok=True)

    def launch(self) -> None:
        """Steps 1–5 of the start flow; readiness is awaited separately."""
        if self.is_running():
            return
        java = find_java()
        classpath = zookeeper_classpath()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._check_stale_pid()
        if self.netns:  # the address lives in another namespace: its ports are all free
            self.port = self.port or 2181
        elif self.port == 0:
            self.port = free_port(self.host)
        elif not port_is_free(self.host, self.port):
            raise ZooKeeperServerError(f"cannot start ZooKeeper: port {self.host}:{self.port} is already in use")
        self._write_files()
        out = open(self.data_dir / STDOUT_FILE, "ab")
        try:
            self._proc = subprocess.Popen(
                self._command(java, classpath), cwd=self.data_dir, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=self._preexec())
        finally:
            out.close()
        self.pid_file.write_text(f"{self._proc.pid}\n")

    def _preexec(self) -> Callable[[], None] | None:
        if not self.netns:
            return _set_parent_death_signal if self.die_with_parent else None
        return netns_preexec(self.netns, _set_parent_death_signal if self.die_with_parent else None)

    def wait_ready(self, deadline: float) -> None:
        """Step 6: `srvr` answers with a Mode line once the server serves requests."""
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                detail = _tail(self.log_file) or _tail(self.data_dir / STDOUT_FILE)
                self._proc = None
                self.pid_file.unlink(missing_ok=True)
                hint = " (port in use?)" if "Address already in use" in detail else ""
                raise ZooKeeperServerError(
                    f"ZooKeeper on {self.connect_string} exited with code {code}{hint}; log tail:\n{detail}")
            answer = four_letter_word(self.host, self.port, "srvr", timeout=0.5,
                                      tls=self.security.probe_tls() if self.security is not None else None)
            if answer and "Mode:" in answer:
                return
            if time.monotonic() > deadline:
                self.stop()
                raise ZooKeeperServerError(
                    f"ZooKeeper on {self.connect_string} not ready in time; log tail:\n{_tail(self.log_file)}")
            time.sleep(0.1)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM the process by PID, SIGKILL after `grace` seconds."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=grace)
            except ProcessLookupError:
                pass
        self.pid_file.unlink(missing_ok=True)

    def kill(self) -> None:
        """SIGKILL at once (a crash, for fault tests)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        self._proc = None
        self.pid_file.unlink(missing_ok=True)


class EmbeddedZooKeeper(_JavaServer):
    """A standalone ZooKeeper server process on loopback.

    `tick_time_ms` bounds the session-expiry granularity; tests use a short tick and a
    low `min_session_timeout_ms` so an expired session is noticed within seconds.
    """

    def __init__(self, data_dir: str | os.PathLike[str], port: int = 2181, host: str = "127.0.0.1", *,
                 tick_time_ms: int = 2000, min_session_timeout_ms: int | None = None,
                 max_session_timeout_ms: int | None = None, force_sync: bool = True,
                 heap_mb: int = 512, die_with_parent: bool = False, security: ZkServerSecurity | None = None):
        super().__init__(data_dir, port, host, tick_time_ms=tick_time_ms,
                         min_session_timeout_ms=min_session_timeout_ms,
                         max_session_timeout_ms=max_session_timeout_ms, force_sync=force_sync,
                         heap_mb=heap_mb, die_with_parent=die_with_parent, security=security)

    def start(self, timeout: float = 30) -> EmbeddedZooKeeper:
        deadline = time.monotonic() + timeout
        self.launch()
        self.wait_ready(deadline)
        log.info("ZooKeeper serving on %s (pid %s, data %s)", self.connect_string, self.pid, self.data_dir)
        return self

    def __enter__(self) -> EmbeddedZooKeeper:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _QuorumPeer(_JavaServer):
    main_class = QUORUM_MAIN

    def __init__(self, data_dir: Path, port: int, host: str, my_id: int, peers: list[tuple[int, int, int, int]],
                 **kw: Any):
        super().__init__(data_dir, port, host, **kw)
        self.my_id = my_id
        self.peers = peers  # (id, quorum port, election port, client port)
        self.hosts: dict[int, str] = {}  # id → address, when the servers have addresses of their own

    def _config_lines(self) -> list[str]:
        lines = super()._config_lines() + ["initLimit=10", "syncLimit=5", "standaloneEnabled=false",
                                           "reconfigEnabled=false"]
        lines = [line for line in lines if not line.startswith(("clientPort=", "clientPortAddress="))]
        for pid, qport, eport, cport in self.peers:
            host = self.hosts.get(pid, self.host)
            lines.append(f"server.{pid}={host}:{qport}:{eport};{host}:{cport}")
        return lines

    def _write_files(self) -> None:
        super()._write_files()
        (self.data_dir / "data" / "myid").write_text(f"{self.my_id}\n")


class ZooKeeperEnsemble:
    """n QuorumPeerMain servers on loopback, in `base_dir/zk<i>`; for fault tests. With
    `placement` (id → (network namespace, address)), each server runs in a namespace of its
    own on ZooKeeper's standard ports."""

    def __init__(self, n: int, base_dir: str | os.PathLike[str], host: str = "127.0.0.1", *,
                 tick_time_ms: int = 500, force_sync: bool = False, heap_mb: int = 256,
                 placement: dict[int, tuple[str, str]] | None = None):
        if n < 1:
            raise ValueError("an ensemble needs at least one server")
        base = Path(base_dir)
        if placement:
            peers = [(i, 2888, 3888, 2181) for i in range(1, n + 1)]
        else:
            peers = [(i, free_port(host), free_port(host), free_port(host)) for i in range(1, n + 1)]
        self.servers = [
            _QuorumPeer(base / f"zk{i}", cport, placement[i][1] if placement else host, i, peers,
                        tick_time_ms=tick_time_ms, min_session_timeout_ms=None, max_session_timeout_ms=None,
                        force_sync=force_sync, heap_mb=heap_mb, die_with_parent=False)
            for i, _, _, cport in peers
        ]
        for s in self.servers:
            if placement:
                s.netns = placement[s.my_id][0]
                s.hosts = {i: placement[i][1] for i in placement}

    @property
    def connect_string(self) -> str:
        return ",".join(s.connect_string for s in self.servers)

    @property
    def pids(self) -> list[int | None]:
        return [s.pid for s in self.servers]

    def start(self, timeout: float = 60) -> ZooKeeperEnsemble:
        deadline = time.monotonic() + timeout
        try:
            for s in self.servers:
                s.launch()
            for s in self.servers:
                s.wait_ready(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for s in self.servers:
            s.stop()

    def __enter__(self) -> ZooKeeperEnsemble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_foreground(port: int = 2181, data_dir: str | os.PathLike[str] = "zookeeper-data",
                   host: str = "127.0.0.1") -> int:
    """Run an embedded ZooKeeper until SIGINT/SIGTERM (for the CLI); returns an exit code."""
    server = EmbeddedZooKeeper(data_dir, port=port, host=host)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.start()
        print(f"ZooKeeper serving on {server.connect_string} (pid {server.pid}, log {server.log_file})",
              file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            if not server.is_running():
                print(f"ZooKeeper exited unexpectedly; see {server.log_file}", file=sys.stderr)
                return 1
        return 0
    except ZooKeeperServerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
