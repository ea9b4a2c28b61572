"""Shared fixtures. Keep this file generic: each area may add its own fixtures here or in
a conftest.py next to its tests.

The harness's fixtures come from `praha.testing.fixtures`: one embedded ZooKeeper per
pytest process (`zookeeper`), a private chroot per test (`zk_connect`, `zk_store`), and
clusters alone on their own chroots (`module_cluster` for a module, `make_cluster` for a
test); every process is stopped by PID at the end, even on failure.
"""
from __future__ import annotations

pytest_plugins = ["praha.testing.fixtures"]
