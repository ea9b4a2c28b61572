"""A short secure campaign (`make chaos-secure-short`, slow): `praha chaos --netns --secure
--workload txn` on 3 brokers on hosts of their own, 6 seeded faults of six kinds — a group
coordinator's broker killed, a partition, forged ZooKeeper writes, forged controller
requests, a controlled restart, a long_pause of a broker with a transactional producer.

Every client of the campaign logs in over SASL_SSL with SCRAM as its principal (producers,
readers, the consume-transform-produce stage; the harness's checks as the admin), the
brokers' ACLs on. The campaign first checks that every broker refuses a plain-TCP client, a
wrong password and the reader outside its grants (`security_refusals`): so the records
acknowledged, the transactions committed and the records polled were all written and read by
clients that logged in. The same safety figures as the short campaign of `make test` must be
zero.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_chaos_short import judge, run_chaos

from praha.chaos.history import ANOMALIES

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEED = 64
KINDS = "forged_controller,forged_zk_write,controlled_restart,coordinator_kill,long_pause,partition"
FAULTS = 6


def test_short_secure_campaign(tmp_path):
    from praha.chaos import leftovers
    from praha.cluster import netns

    if netns.unavailable_reason() or not shutil.which("nft"):
        pytest.skip(f"--netns: {netns.unavailable_reason() or 'nft is not installed'}")
    try:
        head, output = run_chaos(tmp_path, "--netns", "--secure", "--brokers", "3", "--faults", str(FAULTS),
                                 "--seed", str(SEED), "--workload", "txn", "--session-timeout-ms", "3000",
                                 "--kinds", KINDS, timeout=900)
    finally:
        leftovers.cleanup_leftovers()  # a campaign killed by the timeout: its processes, mounts, namespaces
    assert head["secure"] is True, output
    assert head["security_refusals"] == {"plaintext_client": True, "wrong_password": True,
                                         "reader_outside_its_grants": True}, output
    assert set(head["fault_kinds"]) == set(KINDS.split(",")), output
    assert head["acked"] > 1000, output
    assert head["read"] >= head["acked"] - head["lost"], output
    assert head["committed_txns"] > 10, output
    assert head["aborted_txns"] > 2, output
    assert head["polled"] > head["txn_values_committed"], output
    assert set(head["anomalies"]) == set(ANOMALIES), output
    assert not any(head["anomalies"].values()), output
    report = json.loads(Path(head["report"]).read_text())
    # the brokers served clients on SASL_SSL only, each workload principal from a private file
    root = Path(head["report"]).parent
    config = (root / "cluster" / "broker-1" / "server.properties").read_text()
    assert "listeners=SASL_SSL://" in config
    assert "authorizer.class.name=" in config
    assert {p.name for p in (root / "txn").glob("access-*.json")} == {
        "access-chaos-producer.json", "access-chaos-reader.json", "access-chaos-transformer.json"}
    ops = [json.loads(line) for line in Path(report["paths"]["history"]).read_text().splitlines()]
    assert any(o["op"] == "txn" and o["process"] == "x0" and o["type"] == "ok" and o["reads"] for o in ops), output
    forged = [f for f in report["faults"] if f["kind"] in ("forged_controller", "forged_zk_write")]
    assert forged, output
    assert all(f["ok"] and f["details"]["refused"] > 0 for f in forged), output
    group = report["figures"]["group"]
    assert group["commits_acked"] > 50, output
    assert group["caught_up"], output
    judge(head, output)
