"""A Spark standalone cluster on loopback, from the pyspark wheel's own launcher.

A master and N workers (`bin/spark-class org.apache.spark.deploy.master.Master` /
`...worker.Worker`, SPARK_HOME = the installed pyspark folder), each a JVM of its own;
executors are further JVMs with their own Python workers, so a job planned on the driver
really is pickled, shipped and run elsewhere, as on a user's cluster. Used by the pipeline
tests (`PRAHA_SPARK_MASTER=standalone`), `bench/spark.py` and the showcase.

Every process is started in its own session and stopped by its PID (SIGTERM, then SIGKILL
of its process group, which holds the executors it launched) even when the caller fails.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class StandaloneCluster:
    master_url: str
    web_url: str
    directory: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as r:
                return int(json.load(r).get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM each process (workers first: they stop their executors), then SIGKILL
        what is left of each process group."""
        for p in reversed(self.processes):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in reversed(self.processes):
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)  # the group this process leads (its executors)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(10)
        log.info("standalone cluster at %s stopped (%d processes)", self.master_url, len(self.processes))


def _launch(cmd: list[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                cwd=log_path.parent)


@contextlib.contextmanager
def standalone_cluster(directory: str | Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                       timeout: float = 120.0, env: dict[str, str] | None = None) -> Iterator[StandaloneCluster]:
    """Start a master and `workers` workers on 127.0.0.1; yield once all workers registered.

    `env` is the processes' environment (default: this one, with the worktree's Python
    path removed, so executors import praha only from what the job ships)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    home = spark_home()
    base = dict(os.environ if env is None else env)
    if env is None:
        base.pop("PYTHONPATH", None)
    base.update({"SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(root),
                 "SPARK_WORKER_DIR": str(root / "work")})
    port, web = _free_port(), _free_port()
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web}", root)
    launcher = str(home / "bin" / "spark-class")
    try:
        cluster.processes.append(_launch([launcher, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                          "--port", str(port), "--webui-port", str(web)], root / "master.log", base))
        for i in range(workers):
            (root / f"worker-{i}").mkdir(exist_ok=True)
            cluster.processes.append(_launch(
                [launcher, "org.apache.spark.deploy.worker.Worker", cluster.master_url, "--host", "127.0.0.1",
                 "--cores", str(cores), "--memory", memory, "--webui-port", str(_free_port()),
                 "--work-dir", str(root / f"worker-{i}")], root / f"worker-{i}.log", base))
        deadline = time.monotonic() + timeout
        while cluster.alive_workers() < workers:
            dead = [p.args for p in cluster.processes if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a Spark process exited while starting: {dead[0]!r}; logs in {root}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{workers} Spark workers did not register with {cluster.master_url} "
                                   f"within {timeout:.0f}s; logs in {root}")
            time.sleep(0.5)
        log.info("standalone cluster at %s: %d workers of %d core(s)", cluster.master_url, workers, cores)
        yield cluster
    finally:
        cluster.stop()
