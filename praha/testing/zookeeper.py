"""Start/stop a throw-away embedded ZooKeeper for tests, and isolate tests by chroot.

`embedded_zookeeper()` starts one server in a temporary directory with test-friendly
settings (short tick so short session timeouts are accepted and expire promptly, no
fsync), yields it, and always stops it by PID and removes the directory. Tests then share
that server, each under its own chroot from `unique_chroot()` (ZkStore creates a missing
chroot at start), so no test sees another's znodes.
"""
from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from praha.zk.auth import ZkAuth
from praha.zk.server import EmbeddedZooKeeper
from praha.zk.store import ZkStore


@contextmanager
def embedded_zookeeper(data_dir: str | Path | None = None, *, port: int = 0, tick_time_ms: int = 500,
                       min_session_timeout_ms: int = 1000, max_session_timeout_ms: int = 60000,
                       force_sync: bool = False, timeout: float = 30) -> Iterator[EmbeddedZooKeeper]:
    """A started server; stopped (SIGTERM, then SIGKILL) on exit, even on failure. Short
    sessions are granted (a short tick), and long ones up to `max_session_timeout_ms` (ZooKeeper's
    own cap would be 20 ticks) for tests that need a session to outlive a slow restart."""
    tmp = None if data_dir is not None else tempfile.mkdtemp(prefix="praha-zk-")
    server = EmbeddedZooKeeper(str(data_dir or tmp), port=port, tick_time_ms=tick_time_ms,
                               min_session_timeout_ms=min_session_timeout_ms,
                               max_session_timeout_ms=max_session_timeout_ms, force_sync=force_sync,
                               heap_mb=384, die_with_parent=True)
    try:
        server.start(timeout=timeout)
        yield server
    finally:
        server.stop()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def unique_chroot(connect: str, prefix: str = "praha-test") -> str:
    """`host:port/<prefix>-<random>`: a private namespace on a shared server."""
    return f"{connect.rstrip('/')}/{prefix}-{uuid.uuid4().hex[:12]}"


def delete_chroot(connect_with_chroot: str, timeout_ms: int = 10000, auth: ZkAuth | None = None) -> None:
    """Remove a test's chroot and everything under it (best effort, batched; `auth`: as the
    identity that owns its znodes, if they have ACLs)."""
    slash = connect_with_chroot.find("/")
    if slash < 0:
        return
    store = ZkStore(connect_with_chroot[:slash], connection_timeout_ms=timeout_ms, auth=auth)
    try:
        store.start()
        store.delete_recursive([connect_with_chroot[slash:]])
    except Exception:
        pass
    finally:
        store.stop()
