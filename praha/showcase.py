"""`make run`: the main job.

For now: start the embedded ZooKeeper and a 3-broker local cluster in `.praha/cluster`,
print how to reach it, and leave it running (`praha cluster down` stops it).
"""
from __future__ import annotations

import sys

from praha.cli.main import main


def run() -> int:
    from praha.cluster.local import DEFAULT_DIR, LocalCluster

    cluster = LocalCluster(DEFAULT_DIR)
    if cluster.exists():
        try:
            status = cluster.status()
            if status["brokers"]:
                print("a local cluster is already running:", file=sys.stderr)
                return main(["cluster", "status"])
        except Exception:  # noqa: BLE001 - stale directory: start afresh
            pass
        cluster.down()
    return main(["cluster", "up", "--brokers", "3"])


if __name__ == "__main__":
    raise SystemExit(run())
