"""Serving the console: the target from the command line, uvicorn (HTTPS when given a
certificate), and a console started beside a local cluster (`praha cluster up --console`),
remembered in `<dir>/console.json` so `praha cluster down` stops it by PID."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from praha.cluster.local import LocalCluster
from praha.console.target import Target
from praha.errors import PrahaError

log = logging.getLogger("praha.console")
STATE_FILE = "console.json"


def target_of_dir(root: Path, schema_registry: str | None = None) -> Target:
    """A local cluster's bootstrap servers, ZooKeeper, security and state-change logs."""
    cluster = LocalCluster(root)
    state = cluster.load()
    if schema_registry is None:
        schema_registry = _registry_of(cluster)
    if not state.brokers:
        raise PrahaError(f"no brokers in the local cluster {root}")
    bootstrap = ",".join(f"127.0.0.1:{b.port}" for _, b in sorted(state.brokers.items()))
    if state.security_dir:
        from praha.cluster.secure import MECHANISM

        return Target(bootstrap, state.zookeeper, "SASL_SSL", MECHANISM.mechanism_name,
                      str(Path(state.security_dir) / "ca.pem"), root, schema_registry)
    return Target(bootstrap, state.zookeeper, state_change_logs=root, schema_registry=schema_registry)


def _registry_of(cluster: LocalCluster) -> str | None:
    """Every broker's schema registry URL as `praha cluster status` names them (comma-separated,
    in broker order; the console fails over between them), or None when the cluster runs none."""
    try:
        state = cluster.load()
    except Exception:  # noqa: BLE001 - no state file: the console runs without a registry
        return None
    urls = [b.schema_registry for _, b in sorted(state.brokers.items()) if b.schema_registry]
    return ",".join(urls) or None


def serve(target: Target, host: str, port: int, certfile: str | None = None, keyfile: str | None = None,
          ready: Any = None) -> None:
    """Run the console until interrupted."""
    import uvicorn

    from praha.console.app import Console, build_app

    zk = None
    if target.zookeeper:
        from praha.zk.store import ZkStore

        zk = ZkStore(target.zookeeper, session_timeout_ms=10000, connection_timeout_ms=10000)
        try:
            zk.start()
        except Exception as e:  # the console still serves what the brokers answer
            log.warning("console: ZooKeeper %s unavailable: %s", target.zookeeper, e)
            zk = None
    console = Console(target, zk=zk, https=certfile is not None)
    if not target.needs_login:
        console.warm(console.shared_client())
    app = build_app(console)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            ssl_certfile=certfile, ssl_keyfile=keyfile, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    scheme = "https" if certfile else "http"
    print(f"praha console on {scheme}://{host}:{port}/ for {target.bootstrap}", file=sys.stderr, flush=True)
    try:
        server.run()
    finally:
        if zk is not None:
            zk.stop()


def start_beside(root: Path, port: int, timeout: float = 30.0) -> tuple[int, str]:
    """Start `praha console --dir root --port port` in the background; its (pid, url)."""
    log_path = root / "console.log"
    with open(log_path, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "praha", "console", "--dir", str(root), "--port", str(port)],
                                stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    (root / STATE_FILE).write_text(json.dumps({"pid": proc.pid, "port": port, "url": url}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PrahaError(f"the console exited with code {proc.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(url + "static/console.css", timeout=2):
                return proc.pid, url
        except OSError:
            time.sleep(0.2)
    return proc.pid, url


def stop_beside(root: Path) -> int | None:
    """Stop the console `start_beside` started (checked by its command line); its pid."""
    path = root / STATE_FILE
    if not path.exists():
        return None
    pid = int(json.loads(path.read_text())["pid"])
    path.unlink()
    try:
        import psutil

        proc = psutil.Process(pid)
        if "console" not in proc.cmdline():
            return None
        os.kill(pid, signal.SIGTERM)
        proc.wait(10)
    except (ProcessLookupError, PermissionError):
        return None
    except Exception:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return pid
