"""Violations the chaos harness found that are reported and not fixed yet, by invariant.

A chaos test that sees only these xfails (with the reason) instead of failing; any other
violation fails. Remove an entry when its fix lands: the regression test for it then
starts to pass (tests/chaos/test_regressions.py).
"""
from __future__ import annotations

KNOWN_OPEN: dict[str, str] = {
    "duplicated_client_resend": (
        "librdkafka bumps an idempotent producer's epoch on OUT_OF_ORDER_SEQUENCE_NUMBER after a leader move "
        "and re-sends records already appended but unacknowledged under new sequences "
        "(confluentinc/librdkafka#4953, seed 210); no leader can recognise them"
    ),
}

#: fixed, kept for the record: what each regression test guards
FIXED: dict[str, str] = {
    "hw_regressed": (
        "a controller broker killed and restarted before its session expired kept believing in its "
        "old /controller seat and nobody saw its bounce; fixed: a restarted broker frees a seat of its "
        "previous incarnation at once, and a failover re-elects partitions whose leader registered "
        "after their state znode was written (tests/chaos/test_regressions.py)"
    ),
}
