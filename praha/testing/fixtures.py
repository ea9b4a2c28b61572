"""The pytest fixtures of the harness (a plugin: `pytest_plugins = ["praha.testing.fixtures"]`).

- `zookeeper`: one embedded ZooKeeper per pytest process (per xdist worker), started on
  first use and stopped by PID at the end, even on failure.
- `zk_connect` / `zk_store`: the test's private chroot on it, and a started `ZkStore` there.
- `module_cluster`: the one way a test module gets clusters of its own. Call it from a
  module-scoped fixture: `module_cluster(3, OVERRIDES)` starts 3 brokers on a fresh chroot
  and returns a `ChrootCluster` (cluster, zookeeper connect string, store, bootstrap);
  everything it started is stopped by PID and its chroot deleted after the module's last
  test. A fixture that must outlive the brokers (a disk they write to) uses
  `praha.testing.cluster.cluster_on_chroot` inside its own `with` instead.
- `make_cluster`: the same for one test (function scope), on the test's `zk_connect`.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from praha.cluster.local import LocalCluster
from praha.testing.cluster import ChrootCluster, cluster_on_chroot, running_cluster
from praha.testing.zookeeper import delete_chroot, embedded_zookeeper, unique_chroot
from praha.zk.auth import ZkAuth
from praha.zk.server import EmbeddedZooKeeper
from praha.zk.store import ZkStore

#: module_cluster(brokers, overrides, per_broker, *, directory, store, timeout, auth) -> ChrootCluster
StartCluster = Callable[..., ChrootCluster]


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedZooKeeper]:
    """One real ZooKeeper (3.9, from the pyspark jars) on a free loopback port; a generous
    bound on its start, as every xdist worker starts one at the same moment."""
    with embedded_zookeeper(tmp_path_factory.mktemp("zookeeper"), timeout=120) as server:
        yield server


@pytest.fixture
def zk_connect(zookeeper: EmbeddedZooKeeper) -> Iterator[str]:
    """`127.0.0.1:PORT/praha-test-<uuid>`: this test's private namespace."""
    connect = unique_chroot(zookeeper.connect_string)
    yield connect
    delete_chroot(connect)


@pytest.fixture
def zk_store(zk_connect: str) -> Iterator[ZkStore]:
    """A started ZkStore on the test's chroot, with Kafka's persistent paths created."""
    store = ZkStore(zk_connect, session_timeout_ms=10000).start()
    try:
        store.ensure_persistent_paths()
        yield store
    finally:
        store.stop()


@pytest.fixture(scope="module")
def module_cluster(zookeeper: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory,
                   request: pytest.FixtureRequest) -> Iterator[StartCluster]:
    """Start clusters that live until the module's last test (see the module docstring)."""
    name = request.module.__name__.rpartition(".")[2]

    with contextlib.ExitStack() as stack:
        def start(brokers: int = 3, overrides: dict[str, str] | None = None,
                  per_broker: dict[int, dict[str, str]] | None = None, *, directory: str | Path | None = None,
                  store: bool = True, timeout: float = 120.0, auth: ZkAuth | None = None) -> ChrootCluster:
            return stack.enter_context(cluster_on_chroot(
                zookeeper.connect_string, directory or tmp_path_factory.mktemp(name), brokers, overrides,
                per_broker, store=store, timeout=timeout, auth=auth))

        yield start


@pytest.fixture
def make_cluster(tmp_path: Path, zk_connect: str) -> Iterator[Callable[..., LocalCluster]]:
    """`make_cluster(brokers, overrides, per_broker, zookeeper=zk_connect, name="cluster")`: a
    cluster for this test on its chroot (or another connect string), stopped by PID after it."""
    with contextlib.ExitStack() as stack:
        def make(brokers: int = 3, overrides: dict[str, str] | None = None,
                 per_broker: dict[int, dict[str, str]] | None = None, zookeeper: str | None = None,
                 name: str = "cluster") -> LocalCluster:
            return stack.enter_context(
                running_cluster(tmp_path / name, zookeeper or zk_connect, brokers, overrides, per_broker))

        yield make
