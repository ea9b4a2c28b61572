"""The one short chaos campaign of `make test`: 3 brokers on hosts of their own (`--netns`),
the transactional workload (`--workload txn`) beside the queue one, 5 seeded faults of
five kinds — a partition, a long_pause of a broker together with a transactional producer
(past the transaction timeout and the ZooKeeper session), a flaky link delaying and
reordering what clients and peers send to a broker, a one-way cut, a group member SIGKILLed.

Runs `praha chaos --json` as a user would and judges its last line. Safety figures
(acknowledged records lost, divergent offsets, dual-controller acceptances, group commits
gone backwards, acknowledged records the group never got, every anomaly of the
transactional history) must be zero whatever happens; any violation must be one listed in
known_issues.py (then the test xfails with its reason) — anything else fails with the
campaign's summary. Without root (no namespaces) the same campaign runs on loopback over the
kinds that need no namespaces. Every other kind runs in `make chaos`.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from known_issues import KNOWN_OPEN

from praha.chaos.history import ANOMALIES
from praha.chaos.txnclient import TRANSACTION_TIMEOUT_MS

pytestmark = pytest.mark.integration

#: with --netns --workload txn, 5 faults: one_way, member_kill, flaky_link (a delay: 169 ms + up to 905 ms
#: of jitter), long_pause, partition (praha.chaos.schedule; the network plans draw from
#: Random(f"{seed}-{index}") after the fault injector's pick of a data partition)
SEED = 1862
FAULTS = 5
#: without namespaces, over kinds that need none: pause, zk_expire, stale_controller, long_pause, member_kill
LOOPBACK_SEED = 29
LOOPBACK_KINDS = "long_pause,zk_expire,pause,member_kill,stale_controller"


def run_chaos(tmp_path, *args: str, timeout: float = 600) -> tuple[dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "praha", "chaos", "--dir", str(tmp_path), "--json", *args],
        capture_output=True, text=True, timeout=timeout,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"praha chaos ended without its JSON line (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    assert lines[-1].startswith("{"), (
        f"praha chaos ended without its JSON line (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    )
    return json.loads(lines[-1]), proc.stdout + proc.stderr[-2000:]


#: where a failed run's campaign directory is kept (pytest's temp directories rotate; git-ignored)
KEPT = Path(__file__).resolve().parents[2] / ".praha" / "chaos-failures"


def keep(tmp_path: Path, head: dict | None) -> str:
    """Copy the campaign directory out of pytest's rotating temp and say what a failure needs:
    where it is, the violations with their examples (the lost ids, the partition end the final
    read found for them), and the final read's own note."""
    dest = KEPT / f"test_short_campaign-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    lines = [f"campaign directory kept at {dest}", f"load {Path('/proc/loadavg').read_text().strip()}"]
    try:
        shutil.copytree(tmp_path, dest, symlinks=True, ignore_dangling_symlinks=True, dirs_exist_ok=True)
    except (shutil.Error, OSError) as e:  # a file gone while copying: keep what was copied
        lines.append(f"copied in part: {str(e)[:500]}")
    try:
        report = json.loads(Path(head["report"]).read_text()) if head else {}
    except (OSError, KeyError, ValueError) as e:
        return "\n".join([*lines, f"no report: {e!r}"])
    for v in report.get("violations", []):
        lines.append(f"violation {json.dumps(v)[:4000]}")
    lines += [f"note {json.dumps(e)}" for e in report.get("events", []) if "final read" in str(e.get("what", ""))]
    return "\n".join(lines)


def judge(head: dict, output: str) -> None:
    assert head["lost"] == 0, output
    assert head["divergent_offsets"] == 0, output
    assert head["dual_controller_acceptances"] == 0, output
    assert head["group_commit_regressions"] == 0, output
    assert head["group_undelivered"] == 0, output
    unknown = set(head["violation_kinds"]) - set(KNOWN_OPEN)
    assert not unknown, f"new violations {sorted(unknown)}:\n{output}"
    if head["violations"]:
        pytest.xfail("; ".join(KNOWN_OPEN[k] for k in head["violation_kinds"]))


@pytest.mark.timeout(660)  # the campaign's own bound (600 s) governs, not the suite's 300 s default
def test_short_campaign(tmp_path):
    from praha.chaos import leftovers
    from praha.cluster import netns

    on_hosts = not (netns.unavailable_reason() or not shutil.which("nft"))
    seed = SEED if on_hosts else LOOPBACK_SEED
    args = ["--brokers", "3", "--faults", str(FAULTS), "--seed", str(seed), "--workload", "txn",
            "--session-timeout-ms", "3000"]
    head = None
    try:
        head, output = run_chaos(tmp_path, *args, *(["--netns"] if on_hosts else ["--kinds", LOOPBACK_KINDS]))
        check_campaign(head, output, seed, on_hosts)
    except (AssertionError, subprocess.TimeoutExpired) as e:  # the next failure explains itself
        leftovers.cleanup_leftovers()  # nothing of the campaign writes while its directory is copied
        raise AssertionError(f"{e}\n{keep(tmp_path, head)}") from None
    finally:
        leftovers.cleanup_leftovers()  # a campaign killed by the timeout: its processes, mounts, namespaces


def check_campaign(head: dict, output: str, seed: int, on_hosts: bool) -> None:
    from praha.cluster import netns

    assert head["seed"] == seed, output
    assert head["faults"] == FAULTS, output
    kinds = set(head["fault_kinds"])
    assert {"long_pause", "member_kill"} <= kinds, output
    assert head["acked"] > 1000, output
    # an id stored twice under one producer epoch fails here; one re-sent by librdkafka under a new
    # epoch (librdkafka#4953, 2 of 4 runs at load 13-24 on 2026-11-27) is judged below: known, xfail
    assert "duplicated" not in head["violation_kinds"], output
    # the transactional workload ran through the faults and its history is clean
    assert head["committed_txns"] > 20, output
    assert head["aborted_txns"] > 5, output
    assert head["polled"] > head["txn_values_committed"], output
    assert set(head["anomalies"]) == set(ANOMALIES), output
    assert not any(head["anomalies"].values()), output
    report = json.loads(open(head["report"]).read())
    (pause,) = [f for f in report["faults"] if f["kind"] == "long_pause"]
    assert pause["ok"], output
    assert pause["details"]["writer"], output
    assert pause["details"]["session_expired"], output
    assert pause["details"]["hold_s"] > TRANSACTION_TIMEOUT_MS / 1000, output
    history = Path(report["paths"]["history"])
    ops = [json.loads(line) for line in history.read_text().splitlines()]
    assert {o["process"] for o in ops} >= {"p0", "p1", "p2", "c0", "c1", "c2", "c3", "c4", "x0", "final"}
    assert any(o["op"] == "txn" and o["process"] == "x0" and o["type"] == "ok" and o["reads"] for o in ops), output
    group = report["figures"]["group"]
    assert group["member_kills"] >= 1, output
    assert group["commits_acked"] > 100, output
    assert group["caught_up"], output
    if on_hosts:
        from praha.chaos.netfaults import PARTITION_SHAPES

        assert {"partition", "flaky_link", "one_way"} <= kinds, output
        (part,) = [f for f in report["faults"] if f["kind"] == "partition"]
        assert part["ok"], output
        assert part["details"]["shape"] in PARTITION_SHAPES, output
        assert part["details"]["drops"], output
        (flaky,) = [f for f in report["faults"] if f["kind"] == "flaky_link"]
        assert flaky["ok"], output
        assert flaky["details"]["detour"]["jitter_ms"] > 0, output
        delayed = int(flaky["details"]["proxy"].split()[1])  # "forwarded N delayed chunks"
        assert delayed > 0, output
        layout = json.loads((Path(head["report"]).parent / "netns.json").read_text())
        assert not {n["netns"] for n in layout["nodes"]} & netns.existing_names()[0]
    judge(head, output)
