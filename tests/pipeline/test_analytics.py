"""`praha analyze state-change-log` on logs produced by a scenario on the test cluster:
a leader killed (SIGKILL) and another broker stopped with a controlled shutdown. The job
reports the elections that happened (offline, controlled_shutdown), the offline period
of the killed leader's partition, the controller epochs, and writes CSV, Parquet and a PNG."""
from __future__ import annotations

import csv

import pytest

from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration


# its own waits add up to more than the suite's 300 s default, and as the unit's first test it
# also carries the session's Spark and cluster start: on the shared machine at load 40 it hit
# 300 s mid-wait, and the interrupt broke the shared session for every pipeline test after it
@pytest.mark.timeout(900)
def test_analytics_reports_the_elections_of_a_kill_and_a_controlled_shutdown(spark, pipeline, topic_name, tmp_path):
    from praha.cli.main import main

    pipeline.create_topic(topic_name, 3, 3, {"min.insync.replicas": "2"})
    controller = pipeline.controller()
    leaders = {p["partition"]: p["leader"] for p in pipeline.partitions(topic_name)}
    # SIGKILL the leader of a partition that the controller does not lead
    killed_p = next(p for p, b in sorted(leaders.items()) if b != controller)
    killed = leaders[killed_p]
    pipeline.cluster.kill_broker(killed)
    wait_for(lambda: pipeline.leader(topic_name, killed_p) not in (-1, killed), 60, what="re-election after the kill")
    pipeline.restart(killed)
    pipeline.wait_ready(topic_name, 3, full_isr=True, timeout=90)
    # controlled shutdown of a broker that leads something
    leaders = {p["partition"]: p["leader"] for p in pipeline.partitions(topic_name)}
    stopped_p, stopped = next((p, b) for p, b in sorted(leaders.items()) if b != killed)
    assert pipeline.cluster.stop_broker(stopped, timeout=60), "controlled shutdown did not finish cleanly"
    pipeline.restart(stopped)
    pipeline.wait_ready(topic_name, 3, full_isr=True, timeout=90)

    # the command: tables on stdout, CSV + Parquet + PNG on disk (one Spark job, the session is shared)
    out = tmp_path / "analysis"
    assert main(["analyze", "state-change-log", "--path", str(pipeline.directory), "--out", str(out)]) == 0

    def table(name: str) -> list[dict]:
        with open(out / f"{name}.csv") as f:
            return list(csv.DictReader(f))

    mine = [e for e in table("elections") if e["partition"].rsplit("-", 1)[0] == topic_name]
    kinds = {(e["partition"], e["kind"]) for e in mine}
    assert (f"{topic_name}-{killed_p}", "offline") in kinds
    assert (f"{topic_name}-{stopped_p}", "controlled_shutdown") in kinds
    assert {e["kind"] for e in mine if e["partition"] == f"{topic_name}-0"} >= {"new"}
    assert not any(e["unclean"] == "True" for e in mine)
    assert all(int(e["leader"]) != killed for e in mine
               if e["kind"] == "offline" and e["partition"] == f"{topic_name}-{killed_p}")

    periods = [p for p in table("offline_periods") if p["partition"] == f"{topic_name}-{killed_p}"]
    assert periods
    assert all(int(p["dead_leader"]) == killed and int(p["duration_ms"]) >= 0 for p in periods)
    row = next(r for r in table("partitions") if r["partition"] == f"{topic_name}-{killed_p}")
    assert int(row["offline"]) >= 1
    assert int(row["elections"]) >= 2
    assert int(row["offline_periods"]) >= 1
    by_broker = {int(r["broker"]): r for r in table("brokers")}
    assert int(by_broker[stopped]["controlled_shutdowns"]) >= 1
    assert int(by_broker[killed]["seen_dead"]) >= 1
    assert table("controllers")

    assert (out / "partitions.parquet").is_dir()
    assert any((out / "partitions.parquet").glob("*.parquet"))
    assert spark.read.parquet(str(out / "brokers.parquet")).count() == 3
    assert (out / "offline_partitions.png").stat().st_size > 10_000
