"""A short chaos campaign with the share-group workload (`praha chaos --workload share`, issue 23):
3 brokers, 6 seeded faults (broker pauses, kills of the controller and of others, a controlled
restart), four ShareConsumer members, one SIGKILLed every ~15 s while holding records.

Runs `praha chaos --json` as a user would. Every share invariant (praha/chaos/share_invariants.py)
must hold, the queue workload's safety figures must be zero, and the campaign must have done what
it is for: members killed, records accepted, rejected, released to the limit and delivered again.
Slow (about 4 minutes): `make chaos-share`, and `make chaos`.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_chaos_short import run_chaos

from praha.chaos.share_config import DELIVERY_LIMIT
from praha.chaos.share_invariants import INVARIANTS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: faults: pause (controller) x3, kill_controller, kill, controlled_restart (praha.chaos.schedule)
SEED = 501
FAULTS = 6
KINDS = "kill,kill_controller,pause,controlled_restart"


@pytest.mark.timeout(900)
def test_share_group_campaign(tmp_path):
    from praha.chaos import leftovers

    try:
        head, output = run_chaos(tmp_path, "--brokers", "3", "--faults", str(FAULTS), "--seed", str(SEED),
                                 "--workload", "share", "--kinds", KINDS, timeout=840)
    finally:
        leftovers.cleanup_leftovers()
    assert head["seed"] == SEED, output
    assert head["faults"] == FAULTS, output
    assert head["share_violations"] == {k: 0 for k in INVARIANTS}, output
    assert head["lost"] == 0, output
    assert head["divergent_offsets"] == 0, output
    assert head["violations"] == 0, output
    share = json.loads(Path(head["report"]).read_text())["figures"]["share"]
    assert share["drained"], output
    assert share["finished"] == share["records"] >= 1000, output
    assert share["members_killed"] >= 3, output
    assert share["accepted"] > 0.8 * share["records"], output
    assert share["rejected"] > 0, output
    assert share["poison"] > 0, output
    assert share["redelivered"] > share["poison"], "no record came again after a member died"
    assert share["max_delivery_count"] == DELIVERY_LIMIT, output
