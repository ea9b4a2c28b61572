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

#: seconds each unit took, longest first; units not listed (the unit tests: seconds each)
#: start after these. `tests/test_run_order.py` checks that every key exists. Only their order
#: counts; refresh them from an idle run (`--junitxml`, summed per unit).
SECONDS: dict[str, float] = {
    # measured: a fresh clone's `.ci/run` on 2026-11-27 13:00 (session 14; two workers, machine idle;
    # junit times, module fixtures included: 2,724 tests, 1,202 test-seconds in 621 s). A unit
    # missing here starts last
    "tests/pipeline": 184,
    "tests/integration/test_transactions.py": 82,
    "tests/chaos/test_chaos_short.py": 69,
    "tests/integration/test_controller_flows.py": 58,
    "tests/integration/test_netns_cluster.py": 53,
    "tests/badinput/test_corrupt_znodes.py": 49,
    "tests/integration/test_client_quotas.py": 46,
    "tests/integration/test_replication.py": 43,
    "tests/badinput/test_corrupt_logs.py": 39,
    "tests/integration/test_cluster_core.py": 36,
    "tests/integration/test_console_browser.py": 35,
    "tests/integration/test_quix_streams.py": 30,
    "tests/integration/test_consumer_groups.py": 27,
    "tests/integration/test_transactions_log.py": 27,
    "tests/load/test_load.py": 24,
    "tests/integration/test_admin_tools.py": 21,
    "tests/integration/test_security.py": 21,
    "tests/integration/test_idempotent_producers.py": 20,
    "tests/integration/test_clients.py": 19,
    "tests/integration/test_log_dir_failure.py": 19,
    "tests/integration/test_zookeeper_security.py": 18,
    "tests/integration/test_zk_bulk_reads_and_watches.py": 17,
    "tests/integration/test_kafka_tools.py": 17,
    "tests/fuzz/test_broker_fuzz.py": 16,
    "tests/integration/test_schema_registry.py": 15,
    "tests/chaos/test_regressions.py": 15,
    "tests/integration/test_connection_limits.py": 13,
    "tests/integration/test_console_secure.py": 11,
    "tests/badinput/test_cli_misuse.py": 10,
    "tests/integration/test_groups_cli.py": 10,
    "tests/chaos/test_delay_proxy.py": 10,
    "tests/integration/test_acls.py": 10,
    "tests/integration/test_topics_admin.py": 10,
    "tests/integration/test_delete_records.py": 9,
    "tests/integration/test_zk_store.py": 8,
    "tests/integration/test_log_compaction.py": 7,
    "tests/integration/test_describe_configs.py": 7,
    "tests/integration/test_reassignment_throttle.py": 6,
    "tests/integration/test_alter_replica_log_dirs.py": 6,
    "tests/integration/test_secure_cluster.py": 6,
    "tests/integration/test_zk_startup_connection_loss.py": 6,
    "tests/integration/test_forged_controller_requests.py": 6,
    "tests/integration/test_zookeeper_restart.py": 5,
    "tests/integration/test_poison_batches.py": 5,
    "tests/test_layout.py": 4,
    "tests/fuzz/test_decoder_fuzz.py": 4,
    "tests/unit/test_znodes.py": 1,
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
