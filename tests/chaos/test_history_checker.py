"""The queue-history checker (praha/chaos/history.py) on hand-made histories: a clean one
stays clean, and each of Jepsen's anomalies, planted alone, is found and named."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from praha.chaos.history import ANOMALIES, check


def send(proc, value, part="t-0", offset=None, typ="ok", txn=None, t=1.0, reads=(), commit_t=None, more=()):
    sends = [{"partition": part, "value": value, "offset": offset}, *more]
    return {"op": "txn", "process": proc, "type": typ, "txn": txn, "invoke_t": t - 0.5, "commit_t": commit_t,
            "t": t, "sends": sends, "reads": list(reads)}


def poll(proc, records, t=5.0, isolation="read_committed"):
    return {"op": "poll", "process": proc, "type": "ok", "isolation": isolation, "t": t, "records": records}


def clean_history():
    return [
        send("p0", "a", offset=0, t=1.0),
        send("p0", "b", offset=1, t=1.1),
        send("p1", "x", part="t-1", offset=0, txn="T1", t=1.2, commit_t=1.15,
             more=[{"partition": "t-0", "value": "y", "offset": 2}]),
        send("p1", "z", part="t-0", offset=4, typ="fail", txn="T2", t=1.3),  # aborted: offset 3 is its marker
        send("p2", "w", part="t-0", offset=None, typ="info", t=1.4),          # indeterminate, never seen: fine
        send("p3", "q", part="t-1", offset=1, txn="T3", t=1.5, reads=["a"], commit_t=1.45),  # consume-transform-produce
        poll("c0", {"t-0": [[0, "a"], [1, "b"]]}, t=2.0),
        poll("c0", {"t-0": [[2, "y"]], "t-1": [[0, "x"], [1, "q"]]}, t=3.0),
        {"op": "assign", "process": "c0", "t": 3.5},
        poll("c0", {"t-0": [[0, "a"]]}, t=4.0),                                 # re-read after a rebalance
        poll("c1", {"t-0": [[0, "a"], [1, "b"], [2, "y"], [4, "z"]]}, isolation="read_uncommitted"),
        {"op": "commit", "process": "c0", "group": "g", "type": "ok", "t": 4.1, "offsets": {"t-0": 3}},
        {"op": "commit", "process": "c0", "group": "g", "type": "ok", "t": 4.2, "offsets": {"t-0": 3}},
    ]


def found(history) -> dict[str, int]:
    return {k: n for k, n in check(history).counts.items() if n}


def test_a_clean_history_is_clean():
    v = check(clean_history())
    assert v.clean, v.to_json()
    assert v.ops == len(clean_history())
    assert set(v.counts) == set(ANOMALIES)


PLANTED = {
    "lost_write": [send("p0", "a", offset=0), send("p0", "b", offset=1), poll("c0", {"t-0": [[1, "b"]]})],
    "duplicate": [send("p0", "a", offset=0), poll("c0", {"t-0": [[0, "a"], [1, "a"]]}, isolation="read_uncommitted")],
    "inconsistent_offsets": [send("p0", "a", offset=0), send("p1", "b", offset=0)],
    "aborted_read": [send("p0", "a", offset=0, typ="fail", txn="T1"), poll("c0", {"t-0": [[0, "a"]]})],
    "torn_transaction": [send("p0", "a", offset=0, txn="T1", commit_t=0.9,
                              more=[{"partition": "t-0", "value": "b", "offset": 2}]),
                         send("p1", "c", offset=1), poll("c0", {"t-0": [[0, "a"], [1, "c"], [3, "d"]]})],
    "poll_skip": [send("p0", "a", offset=0), send("p0", "b", offset=1), send("p0", "c", offset=2),
                  poll("c0", {"t-0": [[0, "a"]]}, t=2.0), poll("c0", {"t-0": [[2, "c"]]}, t=3.0)],
    "nonmonotonic_poll": [send("p0", "a", offset=0), send("p0", "b", offset=1),
                          poll("c0", {"t-0": [[0, "a"], [1, "b"]]}, t=2.0), poll("c0", {"t-0": [[0, "a"]]}, t=3.0)],
    "nonmonotonic_send": [send("p0", "a", offset=5, t=1.0), send("p0", "b", offset=3, t=2.0)],
    "committed_offset_regression": [
        {"op": "commit", "process": "c0", "group": "g", "type": "ok", "t": 1.0, "offsets": {"t-0": 9}},
        {"op": "commit", "process": "c1", "group": "g", "type": "ok", "t": 2.0, "offsets": {"t-0": 4}}],
    "precommitted_read": [send("p0", "a", offset=0, txn="T1", t=9.0, commit_t=8.0),
                          poll("c0", {"t-0": [[0, "a"]]}, t=5.0)],
    "g1c": [send("p0", "a", offset=0, txn="T1", reads=["d"], commit_t=1.0,
                 more=[{"partition": "t-1", "value": "b", "offset": 0}]),
            send("p1", "d", part="t-1", offset=1, txn="T2", reads=["a"], commit_t=1.0)],
}


@pytest.mark.parametrize("anomaly", ANOMALIES)
def test_each_planted_anomaly_is_found(anomaly):
    v = check(PLANTED[anomaly])
    assert v.counts[anomaly] >= 1, v.to_json()
    assert v.examples[anomaly]


def test_only_the_planted_anomaly_for_the_precise_ones():
    for anomaly in ("lost_write", "aborted_read", "nonmonotonic_send", "committed_offset_regression",
                    "precommitted_read", "g1c"):
        assert set(found(PLANTED[anomaly])) == {anomaly}, (anomaly, found(PLANTED[anomaly]))


def test_a_torn_transaction_also_shows_as_the_lost_write_and_the_skip_it_implies():
    assert found(PLANTED["torn_transaction"]) == {"torn_transaction": 1, "lost_write": 1, "poll_skip": 1}


def test_an_indeterminate_write_once_or_never_but_not_twice():
    once = [send("p0", "a", typ="info"), poll("c0", {"t-0": [[0, "a"]]})]
    assert check(once).clean
    twice = [send("p0", "a", typ="info"), poll("c0", {"t-0": [[0, "a"], [1, "a"]]})]
    assert found(twice) == {"duplicate": 1}


def test_write_write_cycles_alone_are_g0_allowed():
    h = [send("p0", "a", offset=0, txn="T1", more=[{"partition": "t-1", "value": "b", "offset": 1}]),
         send("p1", "c", offset=1, txn="T2", more=[{"partition": "t-1", "value": "d", "offset": 0}])]
    v = check(h)
    assert v.clean
    assert v.g0_cycles == 1


def test_praha_chaos_check_rechecks_a_saved_history(tmp_path):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text("".join(json.dumps(o) + "\n" for o in clean_history()) + '{"op": "po')  # torn last line
    bad.write_text("".join(json.dumps(o) + "\n" for o in PLANTED["aborted_read"]))
    run = lambda p: subprocess.run([sys.executable, "-m", "praha", "chaos", "check", str(p)],  # noqa: E731
                                   capture_output=True, text=True, timeout=60)
    ok, ko = run(good), run(bad)
    assert ok.returncode == 0
    assert json.loads(ok.stdout)["anomalies"]["aborted_read"] == 0
    assert ko.returncode == 1
    assert json.loads(ko.stdout)["anomalies"]["aborted_read"] == 1
    missing = run(tmp_path / "none.jsonl")
    assert missing.returncode == 1
    assert not missing.stdout
    assert "no such history file" in missing.stderr


# Seed 216 (nonmonotonic_poll 423): the kafka-python consumer c2 (assign, read_committed) had read
# chaos-txn-out-1 to 579 from the new leader (epoch 4, whose first record, the commit marker,
# is at 580); the old leader, SIGSTOPped at epoch 3 with its log ending at 580, woke up and
# still named itself leader at epoch 3 in its Metadata answer until the controller's
# LeaderAndIsr reached it; kafka-python took that older epoch (Kafka's Java client keeps the
# newer one), fetched 581 there, got OFFSET_OUT_OF_RANGE (as Kafka 3.9 answers: the offset is
# above the log end, or the last fetched epoch 4 is unknown there), and auto_offset_reset
# moved it to 0: it read 47..579 again. The client now records that reset.
SEED_216 = [
    send("x0", "a", offset=1, txn="T1", commit_t=0.9, more=[{"partition": "t-0", "value": "b", "offset": 2}]),
    poll("c2", {"t-0": [[1, "a"], [2, "b"]]}, t=2.0),
]


def test_seed_216_a_consumers_reset_after_offset_out_of_range_is_its_own_rewind():
    reset = {"op": "reset", "process": "c2", "partition": "t-0", "from": 4, "to": 0, "t": 2.5}
    again = poll("c2", {"t-0": [[1, "a"], [2, "b"]]}, t=3.0)
    v = check([*SEED_216, reset, again])
    assert v.clean, v.to_json()
    assert v.offset_resets == 1
    assert v.to_json()["reset_examples"] == [{"process": "c2", "partition": "t-0", "from": 4, "to": 0}]
    # without the recorded reset the same polls are the anomaly seed 216 reported
    assert found([*SEED_216, again]) == {"nonmonotonic_poll": 2}


@pytest.mark.parametrize(("reset", "again", "anomaly"), [
    # a reset on another partition, or by another process, excuses nothing here
    ({"partition": "t-9"}, [[1, "a"]], "nonmonotonic_poll"),
    ({"process": "c9"}, [[1, "a"]], "nonmonotonic_poll"),
    # refused at an offset the consumer had already read: no answer a correct broker gives
    ({"from": 2}, [[1, "a"]], "nonmonotonic_poll"),
    # moved to 2, read below it
    ({"to": 2}, [[1, "a"]], "nonmonotonic_poll"),
    # moved to 0, then skipped the visible record at 1
    ({}, [[2, "b"]], "poll_skip"),
])
def test_a_reset_excuses_only_the_rewind_it_names(reset, again, anomaly):
    op = {"op": "reset", "process": "c2", "partition": "t-0", "from": 4, "to": 0, "t": 2.5, **reset}
    v = check([*SEED_216, op, poll("c2", {"t-0": again}, t=3.0)])
    assert v.counts[anomaly] >= 1, v.to_json()


def test_a_reset_forward_excuses_no_skip():
    h = [*SEED_216, send("x0", "c", offset=3), poll("c2", {"t-0": [[1, "a"], [2, "b"]]}, t=2.0),
         {"op": "reset", "process": "c2", "partition": "t-0", "from": 3, "to": 4, "t": 2.5},
         poll("c2", {"t-0": [[4, "d"]]}, t=3.0)]
    assert check(h).counts["poll_skip"] == 1


def test_librdkafka_resets_are_read_from_its_log_lines():
    from praha.chaos.txn import librdkafka_resets

    head = "%4|1795778951.311|OFFSET|rdkafka#consumer-1| [thrd:198.18.0.14:9092/2]: chaos-txn-out-1 [1]: "
    why = ": fetch failed due to requested offset not available on the broker: Broker: Offset out of range"
    text = "\n".join([
        head + "offset reset (at offset 581 (leader epoch 4), broker 2) to offset BEGINNING (leader epoch -1)" + why,
        head + "offset reset (at offset 9 (leader epoch 4), broker 2) to cached BEGINNING offset offset 3 "
               "(leader epoch -1)" + why,
        head + "offset reset (at offset 7 (leader epoch 4), broker 2) to offset END (leader epoch -1)" + why,
        head + "offset reset (at offset 5, broker 2) to offset BEGINNING: no previously committed offset: Local: "
               "No offset stored",
        "%6|1795778951.400|FAIL|rdkafka#consumer-1| [thrd:main]: Disconnected",
    ])
    assert librdkafka_resets("c0", text) == [
        {"op": "reset", "process": "c0", "partition": "chaos-txn-out-1-1", "from": 581, "to": 0, "t": 1795778951.311},
        {"op": "reset", "process": "c0", "partition": "chaos-txn-out-1-1", "from": 9, "to": 3, "t": 1795778951.311}]
