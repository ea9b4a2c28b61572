"""A reusable harness for tests against a real local cluster (brokers as processes).

`running_cluster(dir, zookeeper, brokers=3, ...)` starts brokers on an existing ZooKeeper
(typically a test's private chroot), yields the `LocalCluster`, and always stops every
process it started, by PID, even when the test fails. Helpers poll with bounded loops.
"""
from __future__ import annotations

import contextlib
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

from praha.cluster.local import LocalCluster

#: broker settings that make tests fast but still realistic
TEST_BROKER_CONFIG = {
    "zookeeper.session.timeout.ms": "3000",
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
    timeout: float = 60.0,
) -> Iterator[LocalCluster]:
    cluster = LocalCluster(directory)
    try:
        cluster.up(
            brokers, zookeeper=zookeeper, overrides={**TEST_BROKER_CONFIG, **(overrides or {})},
            per_broker=per_broker, timeout=timeout,
        )
        yield cluster
    finally:
        cluster.down(timeout=15)  # also stops what it started if cluster.json vanished


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1, what: str = "condition") -> Any:
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
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}" + (f" (last error: {last_error!r})" if last_error else ""))


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
