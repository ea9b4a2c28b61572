"""Shared fixtures. Keep this file generic: each area may add its own fixtures here or in
a conftest.py next to its tests.

ZooKeeper: one embedded server for the whole run (`zookeeper`, started on first use and
stopped by PID at the end, even on failure); each test gets a private chroot
(`zk_connect`) and, if it wants, a started `ZkStore` on it (`zk_store`).
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from praha.testing.zookeeper import delete_chroot, embedded_zookeeper, unique_chroot
from praha.zk.server import EmbeddedZooKeeper
from praha.zk.store import ZkStore


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedZooKeeper]:
    """One real ZooKeeper (3.9, from the pyspark jars) on a free loopback port."""
    with embedded_zookeeper(tmp_path_factory.mktemp("zookeeper")) as server:
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
