"""The transactional workload's own logic, without a cluster: the declared clients cover what
issue 20 asks for, their command lines, the history merge and summary, the long_pause kind
only where it means something, and the headline figures of a txn campaign."""
from __future__ import annotations

import json

import pytest

from praha.chaos.config import CampaignConfig
from praha.chaos.history import ANOMALIES, check
from praha.chaos.report import _txn_headline, _txn_line
from praha.chaos.txn import CLIENTS, INPUT_TOPICS, OUTPUT_TOPIC, command, merge, summarize


def test_the_clients_cover_both_libraries_modes_isolation_levels_and_a_ctp_stage():
    producers = [c for c in CLIENTS if c.role == "producer"]
    consumers = [c for c in CLIENTS if c.role == "consumer"]
    assert {c.lib for c in producers} == {"confluent", "kafka-python"}
    assert sum(c.lib == "confluent" for c in producers) > sum(c.lib == "kafka-python" for c in producers)
    assert {c.lib for c in consumers} == {"confluent", "kafka-python"}
    assert {c.mode for c in consumers} == {"assign", "subscribe"}
    assert {c.isolation for c in consumers} == {"read_committed", "read_uncommitted"}
    subscribers = [c for c in consumers if c.mode == "subscribe"]
    assert len(subscribers) >= 2
    assert len({c.group for c in subscribers}) == 1  # a group that rebalances
    (ctp,) = [c for c in CLIENTS if c.role == "ctp"]
    assert ctp.group
    assert ctp.isolation == "read_committed"
    assert len({c.name for c in CLIENTS}) == len(CLIENTS)


def test_command_lines():
    by_name = {c.name: c for c in CLIENTS}
    p = command(by_name["p2"], ["--bootstrap", "h:1"], "/x/p2.jsonl", 7)  # type: ignore[arg-type]
    assert p[1:3] == ["-m", "praha.chaos.txnclient"]
    assert p[p.index("--lib") + 1] == "kafka-python"
    assert p[p.index("--topics") + 1] == ",".join(INPUT_TOPICS)
    c = command(by_name["c1"], ["--bootstrap", "h:1"], "/x/c1.jsonl", 7)  # type: ignore[arg-type]
    assert OUTPUT_TOPIC in c[c.index("--topics") + 1]
    assert c[c.index("--isolation") + 1] == "read_uncommitted"
    x = command(by_name["x0"], ["--bootstrap", "h:1"], "/x/x0.jsonl", 7)  # type: ignore[arg-type]
    assert x[x.index("--output-topic") + 1] == OUTPUT_TOPIC
    assert "--group" in x


def test_the_client_help_explains(capsys):
    from praha.chaos.txnclient import main

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "consume-transform-produce" in out
    assert "--isolation" in out


def test_histories_merge_in_time_order_keeping_each_files_order(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"op": "poll", "process": "a", "t": t}) + "\n" for t in (1.0, 3.0, 5.0)))
    b.write_text("".join(json.dumps({"op": "poll", "process": "b", "t": t}) + "\n" for t in (2.0, 4.0))
                 + '{"op": "po')  # a torn last line (a SIGKILLed client)
    assert [o["t"] for o in merge([a, b])] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_summary_counts_transactions_by_outcome_and_polled_records():
    ops = [
        {"op": "txn", "type": "ok", "txn": "T1", "sends": [{"partition": "t-0", "value": "a", "offset": 0}] * 3},
        {"op": "txn", "type": "fail", "txn": "T2", "sends": []},
        {"op": "txn", "type": "info", "txn": "T3", "sends": []},
        {"op": "poll", "records": {"t-0": [[0, "a"], [1, "b"]], "t-1": [[0, "c"]]}},
    ]
    s = summarize(ops)
    assert (s.committed_txns, s.aborted_txns, s.indeterminate_txns, s.acked, s.polled, s.ops) == (1, 1, 1, 3, 3, 4)


def test_long_pause_only_with_the_txn_workload_and_unknown_workloads_refused():
    assert "long_pause" not in CampaignConfig().effective_kinds()
    assert "long_pause" in CampaignConfig(workload="txn").effective_kinds()
    with pytest.raises(ValueError, match="unknown workload"):
        CampaignConfig(workload="bank").validate()


def test_the_queue_workloads_schedules_are_unchanged_by_the_new_kind():
    """Seeds recorded before long_pause existed replay the same faults (it is filtered out)."""
    from praha.chaos.config import ALL_KINDS

    before = CampaignConfig(kinds=tuple(k for k in ALL_KINDS if k != "long_pause")).effective_kinds()
    assert CampaignConfig().effective_kinds() == before
    assert CampaignConfig(netns=True, zk_ensemble=3).effective_kinds() == \
        CampaignConfig(netns=True, zk_ensemble=3, kinds=tuple(k for k in ALL_KINDS if k != "long_pause")
                       ).effective_kinds()


def test_txn_headline_and_summary_line():
    fig = {**summarize([]).__dict__, **check([]).to_json()}
    head = _txn_headline(fig)
    assert set(head) >= {"committed_txns", "aborted_txns", "polled", "anomalies"}
    assert set(head["anomalies"]) == set(ANOMALIES)
    assert "anomalies: none" in _txn_line(fig)
    assert _txn_headline(None) == {}


def test_an_indeterminate_write_read_uncommitted_only_is_no_skip_for_read_committed():
    """An unknown-outcome transaction that in fact aborted: a read_uncommitted consumer saw its
    value, a read_committed one rightly passed over it."""
    h = [
        {"op": "txn", "process": "p0", "type": "ok", "txn": "T1", "t": 1.0,
         "sends": [{"partition": "t-0", "value": "a", "offset": 0}]},
        {"op": "txn", "process": "p1", "type": "info", "txn": "T2", "t": 1.1,
         "sends": [{"partition": "t-0", "value": "x", "offset": None}]},
        {"op": "txn", "process": "p0", "type": "ok", "txn": "T3", "t": 1.2,
         "sends": [{"partition": "t-0", "value": "b", "offset": 3}]},
        {"op": "poll", "process": "c1", "type": "ok", "isolation": "read_uncommitted", "t": 2.0,
         "records": {"t-0": [[0, "a"], [1, "x"], [3, "b"]]}},
        {"op": "poll", "process": "c0", "type": "ok", "isolation": "read_committed", "t": 2.0,
         "records": {"t-0": [[0, "a"]]}},
        {"op": "poll", "process": "c0", "type": "ok", "isolation": "read_committed", "t": 3.0,
         "records": {"t-0": [[3, "b"]]}},
    ]
    assert check(h).clean, check(h).to_json()
    # the same value shown committed to some read_committed reader: now passing over it is a skip
    h.append({"op": "poll", "process": "c2", "type": "ok", "isolation": "read_committed", "t": 4.0,
              "records": {"t-0": [[1, "x"]]}})
    assert check(h).counts["poll_skip"] == 1


def test_seed_203_a_transaction_whose_writer_never_completed_it_is_no_poll_skip():
    """Seed 203 (--netns, 5 brokers, 16 faults, --workload txn): kafka-python's producer p2
    hung in commit_transaction() after its coordinator's broker was SIGSTOPped; its
    transaction p2-t177 had written chaos-txn-0-0 offset 491 and never reached the history.
    The coordinator aborted it at its timeout, so every read_committed reader rightly passed
    over 491 — which the checker called a poll skip (a value nobody's operation wrote counted
    as visible). It is indeterminate: visible only if a read_committed poll showed it."""
    p = "chaos-txn-0-0"
    h = [
        {"op": "txn", "process": "p1", "type": "ok", "txn": "p1-t223", "t": 1.0,
         "sends": [{"partition": p, "value": "p1-t223-0", "offset": 489}]},
        {"op": "txn", "process": "p1", "type": "ok", "txn": "p1-t224", "t": 2.0,
         "sends": [{"partition": p, "value": "p1-t224-3", "offset": 492}]},
        {"op": "poll", "process": "c1", "type": "ok", "isolation": "read_uncommitted", "t": 3.0,
         "records": {p: [[489, "p1-t223-0"], [491, "p2-t177-0"], [492, "p1-t224-3"]]}},
        {"op": "poll", "process": "c0", "type": "ok", "isolation": "read_committed", "t": 1.5,
         "records": {p: [[489, "p1-t223-0"]]}},
        {"op": "poll", "process": "c0", "type": "ok", "isolation": "read_committed", "t": 3.5,
         "records": {p: [[492, "p1-t224-3"]]}},
    ]
    assert check(h).clean, check(h).to_json()
    h.append({"op": "poll", "process": "c2", "type": "ok", "isolation": "read_committed", "t": 4.0,
              "records": {p: [[491, "p2-t177-0"]]}})  # shown committed after all: c0 skipped it
    assert check(h).counts["poll_skip"] == 1


def test_a_kafka_python_transaction_end_that_never_returns_is_indeterminate(monkeypatch):
    """kafka-python 3.0.12 waits for EndTxn without a timeout (the seed 203 hang): bounded."""
    import threading

    from praha.chaos import txnclient

    monkeypatch.setattr(txnclient, "END_TXN_WAIT_S", 0.2)
    never = threading.Event()
    assert txnclient._bounded(lambda: None) is True
    assert txnclient._bounded(lambda: (_ for _ in ()).throw(RuntimeError("fenced"))) is False
    assert txnclient._bounded(lambda: never.wait(30)) is None
    never.set()


def test_kinds_asked_for_by_name_that_cannot_run_are_refused_with_the_option_they_need():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "praha", "chaos", "--kinds", "long_pause,partition,kill",
                          "--faults", "1"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert not out.stdout
    assert "long_pause needs --workload txn" in out.stderr
    assert "partition needs --netns" in out.stderr
    assert CampaignConfig(workload="txn", netns=True).missing() == {
        "zk_member_kill": "--zk-ensemble 3",
        "forged_zk_write": "--secure-zookeeper (or --secure)",
    }


def test_a_client_that_never_worked_is_a_problem_of_the_campaign(tmp_path):
    """A workload that proved nothing must not pass: clients idle before the faults are listed
    (and judged as a `txn_workload` violation by the campaign)."""
    from praha.chaos.access import ClientAccess
    from praha.chaos.timeline import Timeline
    from praha.chaos.txn import TxnWorkload

    w = TxnWorkload(tmp_path, lambda _role: ClientAccess("127.0.0.1:1"), Timeline(), 1)
    for spec in CLIENTS:
        if spec.name == "c2":
            continue
        op = ({"op": "txn", "type": "ok", "t": 1.0, "sends": []} if spec.writes
              else {"op": "poll", "type": "ok", "t": 1.0, "records": {}})
        (w.dir / f"{spec.name}.jsonl").write_text(json.dumps(op) + "\n")
    assert not w.wait_working(0.5)
    assert len(w.problems) == 1
    assert "['c2']" in w.problems[0]
    (w.dir / "c2.jsonl").write_text(json.dumps({"op": "poll", "type": "ok", "t": 2.0, "records": {}}) + "\n")
    w.problems.clear()
    assert w.wait_working(5)
    assert not w.problems
