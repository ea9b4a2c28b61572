"""A reusable harness for tests against a real local cluster (brokers as processes).

`running_cluster(dir, zookeeper, brokers=3, ...)` starts brokers on an existing ZooKeeper
(typically a test's private chroot), yields the `LocalCluster`, and always stops every
process it started, by PID, even when the test fails. `cluster_on_chroot(server, dir, ...)`
does the same on a fresh chroot of a shared server, with a started `ZkStore` on it, and
deletes the chroot afterwards: what a test module's cluster fixture needs (see
`praha.testing.fixtures.module_cluster`). Helpers poll with bounded loops.
"""
from __future__ import annotations

import contextlib
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from praha.cluster.local import BrokerProcess, LocalCluster
from praha.testing.zookeeper import delete_chroot, unique_chroot
from praha.zk.auth import ZkAuth
from praha.zk.store import ZkStore

#: broker settings that make tests fast but still realistic
TEST_BROKER_CONFIG = {
    "zookeeper.session.timeout.ms": "3000",
    # as Kafka's own test brokers: a group's first join is not held 3 s for members that never
    # come (every consumer-group start in a test paid it; a test of the delay sets its own)
    "group.initial.rebalance.delay.ms": "0",
    "controlled.shutdown.retry.backoff.ms": "200",
    "controlled.shutdown.max.retries": "3",
}


@contextlib.contextmanager
def running_cluster(
    directory: str | Path,
    zookeeper: str,
    brokers: int = 3,
    overrides: dict[str, str] | None = None,
    per_broker: dict[int, dict[str, str]] | None = None,
    timeout: float = 120.0,
) -> Iterator[LocalCluster]:
    """Brokers on `zookeeper`, ready within `timeout` (generous: parallel test workers share the cores)."""
    cluster = LocalCluster(directory)
    try:
        cluster.up(
            brokers, zookeeper=zookeeper, overrides={**TEST_BROKER_CONFIG, **(overrides or {})},
            per_broker=per_broker, timeout=timeout,
        )
        yield cluster
    finally:
        cluster.down(timeout=15)  # also stops what it started if cluster.json vanished


def bootstrap(cluster: LocalCluster, running_only: bool = False) -> str:
    """`127.0.0.1:PORT,...`: every broker's harness (PLAINTEXT) listener, or only the running ones'."""
    return ",".join(f"127.0.0.1:{b.port}" for b in cluster.load().brokers.values()
                    if not running_only or cluster.broker_running(b))


@dataclass
class ChrootCluster:
    """A running cluster alone on its own chroot of a shared ZooKeeper."""

    cluster: LocalCluster
    #: `host:port/<chroot>`, the brokers' `zookeeper.connect`
    zookeeper: str
    #: a started store on the chroot with Kafka's persistent paths (None when not asked for)
    store: ZkStore | None

    @property
    def root(self) -> Path:
        return self.cluster.root

    @property
    def bootstrap(self) -> str:
        return bootstrap(self.cluster)

    @property
    def brokers(self) -> dict[int, BrokerProcess]:
        return self.cluster.load().brokers


@contextlib.contextmanager
def cluster_on_chroot(
    server: str,
    directory: str | Path,
    brokers: int = 3,
    overrides: dict[str, str] | None = None,
    per_broker: dict[int, dict[str, str]] | None = None,
    *,
    store: bool = True,
    timeout: float = 120.0,
    auth: ZkAuth | None = None,
) -> Iterator[ChrootCluster]:
    """`running_cluster` on a fresh chroot of `server` (`host:port`), with a started
    `ZkStore` there if `store`; every process stopped by PID and the chroot deleted on exit
    (with `auth`, the ZooKeeper identity of brokers that protect their znodes with ACLs)."""
    connect = unique_chroot(server)
    zk_store = None
    try:
        if store:
            zk_store = ZkStore(connect, session_timeout_ms=10000, auth=auth).start()
            zk_store.ensure_persistent_paths()
        with running_cluster(directory, connect, brokers, overrides, per_broker, timeout) as cluster:
            yield ChrootCluster(cluster, connect, zk_store)
    finally:
        if zk_store is not None:
            zk_store.stop()
        delete_chroot(connect, auth=auth)


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1,
             what: str = "condition") -> Any:
    """Poll `predicate` until it returns a truthy value (returned) or `timeout` passes (AssertionError)."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - keep polling; report the last error
            last_error = e
        time.sleep(interval)
    raise AssertionError(
        f"timed out after {timeout:.0f}s waiting for {what}" + (f" (last error: {last_error!r})" if last_error else "")
    )


def scrape_metrics(port: int, timeout: float = 2.0, host: str = "127.0.0.1") -> dict[str, float]:
    """The broker's Prometheus figures as {name: value} (unlabelled samples only)."""
    text = urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout).read().decode()
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#") or "{" in line:
            continue
        name, _, value = line.partition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out
