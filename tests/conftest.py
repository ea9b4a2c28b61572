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
    # measured: a fresh clone's `make test` on 2026-11-27 (two workers, machine idle; junit times,
    # module fixtures included), less the cuts made since on the four units they touched (netns
    # cut-off test -28 s, test_clients -28 s, test_cluster_core -15 s measured; Quix -9 s estimated:
    # its three group joins are no longer held 3 s each). The
    # fresh clone run at load 17-20 the same day is no guide to the order: its units took 1.1x
    # (waiting) to 6.6x (CPU-bound) their idle times. A unit missing here starts last
    "tests/pipeline": 198,
    "tests/integration/test_transactions.py": 74,
    "tests/chaos/test_chaos_short.py": 65,
    "tests/integration/test_controller_flows.py": 63,
    "tests/integration/test_netns_cluster.py": 53,
    "tests/badinput/test_corrupt_znodes.py": 50,
    "tests/integration/test_client_quotas.py": 44,
    "tests/integration/test_replication.py": 43,
    "tests/integration/test_cluster_core.py": 41,
    "tests/integration/test_quix_streams.py": 39,
    "tests/chaos/test_regressions.py": 38,
    "tests/integration/test_console_browser.py": 34,
    "tests/badinput/test_corrupt_logs.py": 34,
    "tests/integration/test_transactions_log.py": 26,
    "tests/integration/test_admin_tools.py": 26,
    "tests/integration/test_consumer_groups.py": 26,
    "tests/fuzz/test_broker_fuzz.py": 24,
    "tests/load/test_load.py": 24,
    "tests/integration/test_schema_registry.py": 24,
    "tests/integration/test_clients.py": 21,
    "tests/integration/test_security.py": 19,
    "tests/badinput/test_cli_misuse.py": 18,
    "tests/integration/test_idempotent_producers.py": 18,
    "tests/integration/test_zk_bulk_reads_and_watches.py": 16,
    "tests/integration/test_zookeeper_security.py": 16,
    "tests/integration/test_log_dir_failure.py": 16,
    "tests/integration/test_kafka_tools.py": 16,
    "tests/integration/test_console_secure.py": 13,
    "tests/integration/test_connection_limits.py": 12,
    "tests/integration/test_topics_admin.py": 11,
    "tests/integration/test_zk_store.py": 11,
    "tests/chaos/test_delay_proxy.py": 10,
    "tests/integration/test_groups_cli.py": 9,
    "tests/integration/test_zookeeper_restart.py": 9,
    "tests/integration/test_acls.py": 9,
    "tests/integration/test_delete_records.py": 8,
    "tests/integration/test_log_compaction.py": 8,
    "tests/fuzz/test_decoder_fuzz.py": 7,
    "tests/integration/test_poison_batches.py": 6,
    "tests/integration/test_reassignment_throttle.py": 6,
    "tests/integration/test_describe_configs.py": 6,
    "tests/integration/test_alter_replica_log_dirs.py": 6,
    "tests/integration/test_forged_controller_requests.py": 5,
    "tests/integration/test_secure_cluster.py": 5,
    "tests/unit/test_znodes.py": 4,
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
