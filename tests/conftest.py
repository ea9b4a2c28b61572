"""Shared fixtures and the order of the run. Keep this file generic: each area may add its
own fixtures here or in a conftest.py next to its tests.

The harness's fixtures come from `praha.testing.fixtures`: one embedded ZooKeeper per
pytest process (`zookeeper`), a private chroot per test (`zk_connect`, `zk_store`), and
clusters alone on their own chroots (`module_cluster` for a module, `make_cluster` for a
test); every process is stopped by PID at the end, even on failure.

`make test` runs the files in parallel (pytest-xdist, `--dist loadgroup`): each file is one
unit of work, so its module-scoped cluster starts once; the files that use the Spark
session share one unit, so one worker starts Spark. Units start longest first
(`SECONDS`), so the last to finish is a short one.
"""
from __future__ import annotations

from collections import defaultdict

import pytest

pytest_plugins = ["praha.testing.fixtures"]

#: session-scoped fixtures too costly to start in every worker: a file using one runs in
#: the unit named here, with the other files that use it
SHARED_SESSION_FIXTURES = {"spark": "spark", "pipeline": "spark"}

#: seconds each unit took (`--durations`, 2 cores, alone on the machine), longest first;
#: units not listed start after these. `tests/test_layout.py` checks that every key exists.
SECONDS: dict[str, float] = {
}


def unit_of(items: list[pytest.Item]) -> dict[str, str]:
    """nodeid → the unit it runs in: its file, or the shared unit of a session fixture it uses."""
    by_file: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        by_file[item.nodeid.split("::", 1)[0]].append(item)
    units = {}
    for path, its in by_file.items():
        shared = {SHARED_SESSION_FIXTURES[f] for it in its for f in getattr(it, "fixturenames", ())
                  if f in SHARED_SESSION_FIXTURES}
        unit = min(shared) if shared else path
        units.update({it.nodeid: unit for it in its})
    return units


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: the run's own order
        return
    units = unit_of(items)
    for item in items:
        if item.get_closest_marker("xdist_group") is None:  # a test's own group wins
            item.add_marker(pytest.mark.xdist_group(units[item.nodeid]))
    items.sort(key=lambda item: -SECONDS.get(units[item.nodeid], 0.0))  # stable: a file keeps its order
