"""Shared fixtures and the order of the run. Keep this file generic: each area may add its
own fixtures here or in a conftest.py next to its tests.

The harness's fixtures come from `praha.testing.fixtures`: one embedded ZooKeeper per
pytest process (`zookeeper`), a private chroot per test (`zk_connect`, `zk_store`), and
clusters alone on their own chroots (`module_cluster` for a module, `make_cluster` for a
test); every process is stopped by PID at the end, even on failure.

`make test` runs the files in parallel (pytest-xdist, `--dist loadfile`): each file is one
unit of work, so its module-scoped cluster starts once, and a directory in `ONE_UNIT` is
one unit (tests/pipeline: its session-scoped Spark and cluster start in one worker only).
Units start longest first (`SECONDS`), so the last to finish is a short one.
(`--dist loadgroup` cannot do this: xdist 3.8 renames items in a way pytest 9 ignores.)
"""
from __future__ import annotations

from typing import Any

import pytest

pytest_plugins = ["praha.testing.fixtures"]

#: directories run as one unit by one worker, because their conftest's session fixtures
#: are too costly to start in every worker
ONE_UNIT = ("tests/pipeline/",)

#: seconds each unit took (`--durations`), longest first; units not listed start after
#: these. `tests/test_run_order.py` checks that every key exists.
SECONDS: dict[str, float] = {
}


def unit_of(nodeid: str) -> str:
    """The unit a test runs in: its directory if listed in `ONE_UNIT`, else its file."""
    path = nodeid.split("::", 1)[0]
    return next((d.rstrip("/") for d in ONE_UNIT if path.startswith(d)), path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile`, with the `ONE_UNIT` directories as one unit each."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Units(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return Units(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: the longest units first (the scheduler hands units out in the
    order the workers collected them; stable, so a file keeps its own order)."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: -SECONDS.get(unit_of(item.nodeid), 0.0))
