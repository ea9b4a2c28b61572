"""Violations the chaos harness found that are reported and not fixed yet, by invariant.

A chaos test that sees only these xfails (with the reason) instead of failing; any other
violation fails. Remove an entry when its fix lands: the regression test for it then
starts to pass (tests/chaos/test_regressions.py).
"""
from __future__ import annotations

KNOWN_OPEN: dict[str, str] = {
    "hw_regressed": (
        "a broker killed and restarted before its ZooKeeper session expires replaces its own "
        "registration; when it was the controller nobody sees the bounce, so its partitions keep "
        "their leader epoch and it leads them again with the high watermark of its last checkpoint "
        "(seed 1 / seed 2, 3 brokers; deterministic repro in test_regressions.py)"
    ),
}
