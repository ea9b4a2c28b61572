"""Fixtures for tests with real broker processes: `make_cluster`, which starts a local
cluster on the test's ZooKeeper chroot and always stops it by PID, and `cli`, which runs
the `praha` command in this process."""
from __future__ import annotations

import contextlib

import pytest

from praha.cli.main import main as praha_main
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


@pytest.fixture
def cli(capsys):
    """Run `praha ARGS` in this process: (exit code, stdout, stderr)."""

    def run(*args) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = praha_main([str(a) for a in args])
        out, err = capsys.readouterr()
        return rc, out, err

    return run
