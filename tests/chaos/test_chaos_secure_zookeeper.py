"""A chaos campaign on a secured ZooKeeper tree (`praha chaos --secure-zookeeper`): the
brokers log in with `zookeeper.set.acl=true`, and `forged_zk_write` faults (an
unauthenticated client straight to ZooKeeper trying to create a topic, queue a deletion or a
reassignment, grant itself ACLs or a SCRAM user, claim `/controller`, bump its epoch) are
mixed with broker kills; every forged write must be refused, every time."""
from __future__ import annotations

import json

import pytest
from test_chaos_short import judge, run_chaos

from praha.chaos.config import ALL_KINDS, CampaignConfig

pytestmark = pytest.mark.integration


def test_forged_zk_write_runs_only_on_secure_campaigns():
    assert "forged_zk_write" in ALL_KINDS
    assert "forged_zk_write" not in CampaignConfig().effective_kinds()
    assert "forged_zk_write" in CampaignConfig(secure_zookeeper=True).effective_kinds()


@pytest.mark.slow
def test_secure_campaign_refuses_every_forged_zookeeper_write(tmp_path):
    # 3 forged writes, a kill, 2 controlled restarts
    head, output = run_chaos(tmp_path, "--brokers", "3", "--faults", "6", "--seed", "14",
                             "--kinds", "forged_zk_write,kill,controlled_restart", "--secure-zookeeper",
                             "--group-members", "0", "--session-timeout-ms", "3000", timeout=600)
    faults = json.loads(open(head["report"]).read())["faults"]
    forged = [f for f in faults if f["kind"] == "forged_zk_write"]
    assert forged, output
    assert all(f["ok"] and set(f["details"]["answers"].values()) == {"NoAuth"} for f in forged), output
    assert "forged_zk_write_accepted" not in head["violation_kinds"], output
    judge(head, output)
