"""Fixtures for tests with real broker processes: `cluster_dir`, and `make_cluster` which
starts a local cluster on the test's ZooKeeper chroot and always stops it by PID."""
from __future__ import annotations

import contextlib

import pytest

from praha.testing.cluster import running_cluster


@pytest.fixture
def make_cluster(tmp_path, zk_connect):
    stack = contextlib.ExitStack()

    def make(brokers: int = 3, overrides=None, per_broker=None, zookeeper: str | None = None, name: str = "cluster"):
        return stack.enter_context(
            running_cluster(tmp_path / name, zookeeper or zk_connect, brokers, overrides, per_broker)
        )

    with stack:
        yield make
