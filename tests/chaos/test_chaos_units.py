"""The chaos harness's own logic, without a cluster: schedules replay from their seed, and
each invariant check flags exactly what it should on hand-made evidence."""
from __future__ import annotations

import json

import pytest

from praha.chaos import invariants as inv
from praha.chaos.access import ClientAccess
from praha.chaos.config import ALL_KINDS, CampaignConfig
from praha.chaos.ledger import GroupLedger, Ledger
from praha.chaos.observers import HighWatermarkMonitor, HwState, Incarnation
from praha.chaos.report import HEADLINE_KEYS, _group_line, headline, summary_text
from praha.chaos.schedule import build_schedule, resolve
from praha.chaos.timeline import Timeline

TP = ("t", 0)


def test_same_seed_same_schedule_other_seed_other_schedule():
    kinds = CampaignConfig().effective_kinds()
    assert build_schedule(7, 50, kinds) == build_schedule(7, 50, kinds)
    assert build_schedule(7, 50, kinds) != build_schedule(8, 50, kinds)
    assert {p.kind for p in build_schedule(7, 200, kinds)} == set(kinds)


def test_member_kills_only_with_an_ensemble():
    assert "zk_member_kill" not in CampaignConfig(zk_ensemble=1).effective_kinds()
    assert "zk_member_kill" in CampaignConfig(zk_ensemble=3).effective_kinds()
    with pytest.raises(ValueError, match="at least 3 brokers"):
        CampaignConfig(brokers=2).validate()
    with pytest.raises(ValueError, match="unknown fault kinds .*meteor"):
        CampaignConfig(kinds=("kill", "meteor")).validate()


def test_resolve_picks_among_sorted_candidates():
    assert resolve(0.0, [3, 1, 2]) == 1
    assert resolve(0.99, [3, 1, 2]) == 3
    assert resolve(0.5, []) is None


def ledger_with(acks: dict[str, tuple[int, int]]) -> tuple[Ledger, Timeline]:
    tl = Timeline()
    ledger = Ledger(tl)
    for rid, (partition, offset) in acks.items():
        ledger.on_sent()
        ledger.on_ack(rid, ("t", partition), offset)
    return ledger, tl


def final_read(records: dict[int, str]) -> inv.FinalRead:
    return inv.FinalRead(records={TP: dict(records)}, high_watermarks={TP: len(records)})


def test_an_acknowledged_record_missing_from_its_offset_is_lost():
    ledger, tl = ledger_with({"p0-0": (0, 0), "p0-1": (0, 1)})
    f = inv.check_records(ledger, final_read({0: "p0-0", 1: "p9-9"}), HwState(), tl)
    assert (f.acked, f.lost) == (2, 1)
    assert [v.invariant for v in tl.violations] == ["acked_record_lost"]


def test_an_acknowledgement_without_an_offset_is_judged_by_presence():
    """Found by the first --netns campaign (seed 7): librdkafka confirmed an idempotent write
    without an offset (None), and the order check crashed on it."""
    ledger, tl = ledger_with({"p0-0": (0, 0), "p0-1": (0, -1), "p0-2": (0, -1)})
    f = inv.check_records(ledger, final_read({0: "p0-0", 1: "p0-1"}), HwState(), tl)
    assert (f.acked_offset_unknown, f.lost, f.out_of_order) == (2, 1, 0)
    assert [v.invariant for v in tl.violations] == ["acked_record_lost"]


def test_a_clean_log_passes():
    ledger, tl = ledger_with({"p0-0": (0, 0), "p0-1": (0, 1)})
    ledger.on_served(TP, 0, "p0-0")
    f = inv.check_records(ledger, final_read({0: "p0-0", 1: "p0-1"}), HwState(max_hw={TP: 2}), tl)
    assert (f.lost, f.duplicated, f.divergent_offsets, f.out_of_order) == (0, 0, 0, 0)
    assert tl.violations == []


def test_a_record_stored_twice_is_a_violation_with_idempotent_producers():
    ledger, tl = ledger_with({"p0-0": (0, 1)})
    f = inv.check_records(ledger, final_read({0: "p0-0", 1: "p0-0"}), HwState(), tl)
    assert f.duplicated == 1
    assert [v.invariant for v in tl.violations] == ["duplicated"]


def test_seed_210_each_copy_of_a_duplicate_names_its_producer_epoch_and_sequence(tmp_path):
    """Seed 210's duplicates were told apart only by hand from the segment files: the first
    copies were producer 0, epoch 1, sequences 2254-2255, the second ones epoch 2, sequences
    0-1 — librdkafka's resend after an epoch bump, which no leader can recognise, not a retry
    appended twice. The violation now names each copy's batch, read from a replica's files."""
    from praha.log.records import encode_records

    d = tmp_path / "broker-4" / "t-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(
        encode_records(0, [(None, b"p1-30762", 1)], producer_id=0, producer_epoch=1, base_sequence=2254,
                       leader_epoch=26)
        + encode_records(1, [(None, b"p0-30768", 1)], producer_id=1000, producer_epoch=0, base_sequence=9)
        + encode_records(2, [(None, b"p1-30762", 1)], producer_id=0, producer_epoch=2, base_sequence=0,
                         leader_epoch=26))
    final = final_read({0: "p1-30762", 1: "p0-30768", 2: "p1-30762"})
    inv.describe_copies({4: [tmp_path / "broker-4"]}, final)
    ledger, tl = ledger_with({"p1-30762": (0, 2), "p0-30768": (0, 1)})
    f = inv.check_records(ledger, final, HwState(), tl)
    assert f.duplicated == 1
    copies = f.duplicated_examples["p1-30762"]["batches"]
    assert [(c["offset"], c["producer_id"], c["producer_epoch"], c["base_sequence"]) for c in copies] == [
        (0, 0, 1, 2254), (2, 0, 2, 0)]
    [v] = tl.violations  # the client's resend is its own kind; the same epoch twice stays the leader's
    assert v.invariant == "duplicated_client_resend"
    assert "p1-30762" in v.details["examples"]


def test_a_duplicate_under_one_producer_epoch_stays_the_leaders_violation(tmp_path):
    from praha.log.records import encode_records

    d = tmp_path / "broker-1" / "t-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(
        encode_records(0, [(None, b"p1-7", 1)], producer_id=0, producer_epoch=1, base_sequence=7)
        + encode_records(1, [(None, b"p1-7", 1)], producer_id=0, producer_epoch=1, base_sequence=7))
    final = final_read({0: "p1-7", 1: "p1-7"})
    inv.describe_copies({1: [tmp_path / "broker-1"]}, final)
    ledger, tl = ledger_with({"p1-7": (0, 1)})
    assert inv.check_records(ledger, final, HwState(), tl).duplicated == 1
    assert [v.invariant for v in tl.violations] == ["duplicated"]


def resent_batches(n: int) -> bytes:
    """n records in one batch of producer 0 at epoch 0, and the same n again renumbered under
    epoch 1 (librdkafka's resend after an epoch bump)."""
    from praha.log.records import encode_records

    values = [(None, f"p0-{i}".encode(), 1) for i in range(n)]
    return (encode_records(0, values, producer_id=0, producer_epoch=0, base_sequence=3019, leader_epoch=22)
            + encode_records(n, values, producer_id=0, producer_epoch=1, base_sequence=0, leader_epoch=24))


def test_seed_217_every_id_stored_twice_is_examined_not_the_first_20(tmp_path):
    """Seed 217 stored 44 ids twice, all under two producer epochs, but the judge read the
    batches of 20 ids only and called the other 24 plain `duplicated`. Every id is judged now;
    only the examples are capped."""
    n = 44
    d = tmp_path / "broker-1" / "t-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(resent_batches(n))
    final = final_read({**{i: f"p0-{i}" for i in range(n)}, **{n + i: f"p0-{i}" for i in range(n)}})
    inv.describe_copies({1: [tmp_path / "broker-1"]}, final)
    assert len(final.copies) == n
    ledger, tl = ledger_with({f"p0-{i}": (0, n + i) for i in range(n)})
    assert inv.check_records(ledger, final, HwState(), tl).duplicated == n
    [v] = tl.violations
    assert v.invariant == "duplicated_client_resend"
    assert v.message.startswith(f"{n} record ids")
    assert len(v.details["examples"]) == inv.EXAMPLES


def test_praha_chaos_check_rejudges_a_saved_campaigns_copies(tmp_path, capsys):
    """`praha chaos check DIR` judges every id a saved campaign stored twice from its replicas'
    files, where the campaign then lived (log.dirs re-rooted at the directory given)."""
    from praha.cli.main import main
    from praha.log.records import encode_records

    root = tmp_path / "seed-217-copy"
    (root / "cluster" / "broker-1" / "data" / "chaos-data-0-1").mkdir(parents=True)
    (root / "cluster" / "broker-1" / "server.properties").write_text(
        "broker.id=1\nlog.dirs=/elsewhere/seed-217/cluster/broker-1/data,/elsewhere/seed-217/disks/broker-1\n")
    log = root / "cluster" / "broker-1" / "data" / "chaos-data-0-1" / "00000000000000000000.log"
    log.write_bytes(resent_batches(22) + encode_records(44, [(None, b"p1-5", 1)], producer_id=1, producer_epoch=0,
                                                        base_sequence=5)
                    + encode_records(45, [(None, b"p1-5", 1)], producer_id=1, producer_epoch=0, base_sequence=5))
    capsys.readouterr()
    assert main(["chaos", "check", str(root)]) == 1
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["history"] is None
    assert {k: out["copies"][k] for k in ("stored_twice", "duplicated_client_resend", "duplicated", "unexamined")} \
        == {"stored_twice": 23, "duplicated_client_resend": 22, "duplicated": 1, "unexamined": 0}
    assert list(out["copies"]["examples"]["duplicated"]) == ["p1-5"]
    (tmp_path / "empty").mkdir()
    assert main(["chaos", "check", str(tmp_path / "empty")]) == 1
    assert capsys.readouterr().err.strip().endswith("not a campaign directory (no cluster/ with the brokers' log dirs)")


def test_acknowledgements_out_of_send_order_are_a_nonmonotonic_send():
    ledger, tl = ledger_with({"p0-0": (0, 1), "p0-1": (0, 0)})
    f = inv.check_records(ledger, final_read({0: "p0-1", 1: "p0-0"}), HwState(), tl)
    assert f.out_of_order == 1
    assert [v.invariant for v in tl.violations] == ["nonmonotonic_send"]


def test_the_campaign_producers_are_idempotent():
    import logging

    from praha.chaos.workload import producer_config

    cfg = producer_config(ClientAccess("127.0.0.1:1"), logging.getLogger("t"))
    assert cfg["enable.idempotence"] is True
    assert cfg["acks"] == "all"


def test_a_hole_below_the_high_watermark():
    ledger, tl = ledger_with({})
    final = inv.FinalRead(records={TP: {0: "a", 2: "c"}}, high_watermarks={TP: 3})
    f = inv.check_records(ledger, final, HwState(), tl)
    assert f.offset_gaps == 1
    assert [v.invariant for v in tl.violations] == ["offset_gap"]


def test_an_offset_served_twice_with_different_records_diverges():
    ledger, tl = ledger_with({})
    ledger.on_served(TP, 5, "p0-5")
    ledger.on_served(TP, 5, "p0-5")
    assert tl.violations == []
    ledger.on_served(TP, 5, "p1-7")
    assert [v.invariant for v in tl.violations] == ["divergent_offset"]


def test_an_offset_served_then_changed_in_the_final_log_diverges():
    ledger, tl = ledger_with({})
    ledger.on_served(TP, 0, "p0-0")
    f = inv.check_records(ledger, final_read({0: "p1-0"}), HwState(), tl)
    assert f.divergent_offsets == 1


def test_a_high_watermark_going_back_within_a_leader_epoch():
    tl = Timeline()
    mon = HighWatermarkMonitor.__new__(HighWatermarkMonitor)
    mon.timeline, mon.state = tl, HwState()
    mon.observe(TP, 1, 3, 100)
    mon.observe(TP, 1, 3, 120)
    mon.observe(TP, 2, 4, 90)  # a new leader catching up: a dip, not a violation
    assert tl.violations == []
    assert mon.state.cross_epoch_dips == 1
    mon.observe(TP, 1, 3, 110)
    assert [v.invariant for v in tl.violations] == ["hw_regressed"]


def test_final_high_watermark_below_one_reported_during_the_run():
    ledger, tl = ledger_with({})
    inv.check_records(ledger, final_read({0: "a"}), HwState(max_hw={TP: 5}), tl)
    assert [v.invariant for v in tl.violations] == ["hw_regressed"]


def scl(event: str, broker: int, controller: int, epoch: int, t: int, **kw) -> dict:
    return {"time_ms": t, "broker_id": broker, "controller_id": controller, "controller_epoch": epoch,
            "event": event, **kw}


def test_controller_logs_clean():
    tl = Timeline()
    logs = {1: [scl("ControllerElected", 1, 1, 1, 1), scl("LeaderAndIsrReceived", 1, 1, 1, 2),
                scl("ControllerRequestAccepted", 1, -1, 2, 3, api_key=6)],
            2: [scl("ControllerElected", 2, 2, 2, 3), scl("LeaderAndIsrRefused", 2, 1, 1, 4)]}
    f = inv.check_controllers(logs, tl)
    assert f.dual_controller_acceptances == 0
    assert tl.violations == []
    assert f.refused_stale == 1
    assert sorted(f.epochs) == [1, 2]


def test_two_controllers_with_one_epoch():
    tl = Timeline()
    f = inv.check_controllers({1: [scl("ControllerElected", 1, 1, 4, 1)],
                               2: [scl("ControllerElected", 2, 2, 4, 2)]}, tl)
    assert f.dual_controller_acceptances == 1
    assert [v.invariant for v in tl.violations] == ["two_controllers_same_epoch"]


def test_an_older_epoch_accepted_after_a_newer_one():
    tl = Timeline()
    logs = {3: [scl("ControllerRequestAccepted", 3, -1, 5, 1, api_key=6),
                scl("BrokerStarted", 3, -1, -1, 2),
                scl("ControllerRequestAccepted", 3, -1, 4, 3, api_key=4)]}
    f = inv.check_controllers(logs, tl)
    assert f.dual_controller_acceptances == 1
    assert [v.invariant for v in tl.violations] == ["stale_epoch_accepted"]


def test_leader_and_isr_from_a_broker_that_does_not_own_the_epoch():
    tl = Timeline()
    logs = {1: [scl("ControllerElected", 1, 1, 2, 1)], 3: [scl("LeaderAndIsrReceived", 3, 2, 2, 2)]}
    assert inv.check_controllers(logs, tl).dual_controller_acceptances == 1


def test_state_change_logs_survive_torn_lines(tmp_path):
    d = tmp_path / "broker-1" / "data"
    d.mkdir(parents=True)
    (d / "state-change.log").write_text(json.dumps(scl("ControllerElected", 1, 1, 1, 1)) + "\n{\"time_ms\": 12")
    assert len(inv.read_state_change_logs(tmp_path)[1]) == 1


def test_memory_bound_and_growth():
    tl = Timeline()
    incs = {(1, 10): Incarnation(1, 10, 0.0, [(0.0, 50.0), (70.0, 60.0), (200.0, 70.0)]),
            (2, 11): Incarnation(2, 11, 0.0, [(0.0, 50.0), (70.0, 60.0), (200.0, 900.0)])}
    f = inv.check_memory(incs, 400.0, 200.0, tl)
    assert f.peak_mb["broker 2 pid 11"] == 900.0
    assert sorted(v.invariant for v in tl.violations) == ["memory_bound", "memory_growth"]


def test_segment_reader_flags_an_id_twice_in_one_batch(tmp_path):
    from kafka.record import MemoryRecordsBuilder

    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for v in (b"p0-1", b"p0-2", b"p0-1"):
        b.append(timestamp=1, key=None, value=v, headers=[])
    b.close()
    (tmp_path / "00000000000000000000.log").write_bytes(bytes(b.buffer()))
    records, in_batch = inv.read_segment_records(tmp_path)
    assert records == {0: "p0-1", 1: "p0-2", 2: "p0-1"}
    assert in_batch == [(0, "p0-1")]


def write_segment(d, values):
    from kafka.record import MemoryRecordsBuilder

    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for v in values:
        b.append(timestamp=1, key=None, value=v.encode(), headers=[])
    b.close()
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(bytes(b.buffer()))


def test_replicas_in_a_second_log_dir_are_compared(tmp_path):
    """Blind spot found with a 30-fault seed: only each broker's first log dir was read, so a
    replica on the full_disk tmpfs dir looked empty (16,408 'divergent' offsets that could be
    neither confirmed nor ruled out) and a real divergence there went unseen."""
    dirs = {b: [tmp_path / f"b{b}" / "data", tmp_path / f"b{b}" / "small"] for b in (1, 2, 3)}
    write_segment(dirs[1][0] / "t-0", ["a", "b"])
    write_segment(dirs[2][1] / "t-0", ["a", "b"])  # on broker 2's second dir
    write_segment(dirs[3][1] / "t-0", ["a", "x"])  # diverges, on the second dir too
    final = inv.FinalRead(records={TP: {0: "a", 1: "b"}}, high_watermarks={TP: 2})
    tl = Timeline()
    assert inv.check_replicas(dirs, {TP: (1, 2, 3)}, final, tl) == 1
    assert [v.invariant for v in tl.violations] == ["replica_divergence"]
    assert tl.violations[0].details["examples"][0]["replicas"] == {"1": "b", "2": "b", "3": "x"}
    tl = Timeline()
    assert inv.check_replicas(dirs, {TP: (1, 2)}, final, tl) == 0
    assert tl.violations == []


def test_broker_log_dirs_come_from_its_log_dirs_setting(tmp_path):
    from praha.cluster.local import BrokerProcess

    plain = BrokerProcess(id=1, port=1, metrics_port=2, dir=str(tmp_path))
    assert plain.log_dirs == [tmp_path / "data"]
    two = BrokerProcess(id=1, port=1, metrics_port=2, dir=str(tmp_path), overrides={"log.dirs": "/a,/b"})
    assert [str(d) for d in two.log_dirs] == ["/a", "/b"]


def minimal_report(cfg: CampaignConfig, **more_figures) -> dict:
    figures = {k: 0 for k in HEADLINE_KEYS if k != "seed"}
    figures.update({
        "faults_by_kind": {}, "faults_failed": 0, "sent": 0, "failed": 0, "read": 0, "out_of_order": 0,
        "replica_divergent_offsets": 0, "hw_samples": 0, "hw_regressions": 0, "hw_cross_epoch_dips": 0,
        "controller_failovers": 0, "controller_epochs": [], "failover_ms_median": 0.0, "failover_ms_max": 0.0,
        "no_controller_s": 0.0, "stale_requests_refused": 0, "unavailable_s_total": 0.0, "unavailable_worst": "-",
        "rss_peak_mb": 0.0, **more_figures,
    })
    return {"seed": cfg.seed, "config": cfg.to_json(), "duration_s": 1.0, "figures": figures,
            "admin": {}, "health": {"healthy": True, "waited_s": 0.0, "problems": []}, "violations": []}


def test_headline_and_summary_have_the_promised_keys():
    report = minimal_report(CampaignConfig(seed=3))
    head = headline(report)
    assert set(HEADLINE_KEYS) <= set(head)
    assert head["seed"] == 3
    assert "seed 3" in summary_text(report)
    assert set(ALL_KINDS) >= set(report["config"]["kinds"])


# ---------------------------------------------------------------------------- the consumer group
def group_with(commits=(), observed=(), delivered=(), final=None) -> GroupLedger:
    """commits/observed: (offset, t, member); final: the last OffsetFetch for TP (None: no answer)."""
    g = GroupLedger()
    for off, t, member in commits:
        g.on_commit(TP, off, t, member)
    for off, t, member in observed:
        g.on_observed(TP, off, t, member)
    for off, rid in delivered:
        g.on_delivered(TP, off, rid)
    if final is not None:
        g.final_committed[TP] = final
    return g


def test_a_clean_group_passes():
    ledger, tl = ledger_with({"p0-0": (0, 0), "p0-1": (0, 1)})
    g = group_with(commits=[(1, 1.0, "m0.0"), (2, 2.0, "m0.0")], observed=[(-1, 0.5, "m0.0"), (2, 3.0, "m1.0")],
                   delivered=[(0, "p0-0"), (1, "p0-1"), (1, "p0-1")], final=2)
    f = inv.check_group(g, ledger, tl)
    assert tl.violations == []
    assert (f.commits_acked, f.observed, f.delivered, f.deliveries, f.undelivered) == (2, 2, 2, 3, 0)


def test_the_final_offset_fetch_below_an_acknowledged_commit_is_a_regression():
    ledger, tl = ledger_with({})
    f = inv.check_group(group_with(commits=[(5, 1.0, "m0.0"), (9, 2.0, "m0.0")], final=5), ledger, tl)
    assert f.commit_regressions == 1
    assert [v.invariant for v in tl.violations] == ["group_commit_regressed"]
    assert tl.violations[0].details["examples"][0]["acknowledged"] == 9


def test_no_final_answer_for_a_committed_partition_is_a_regression():
    ledger, tl = ledger_with({})
    inv.check_group(group_with(commits=[(5, 1.0, "m0.0")]), ledger, tl)
    assert [v.invariant for v in tl.violations] == ["group_commit_regressed"]


def test_a_member_told_less_than_was_acknowledged_before_it_asked():
    ledger, tl = ledger_with({})
    # m1 asked at 3.0, after m0's commit of 9 was acknowledged (2.0), and was told 5
    g = group_with(commits=[(5, 1.0, "m0.0"), (9, 2.0, "m0.0")], observed=[(5, 3.0, "m1.0")], final=9)
    f = inv.check_group(g, ledger, tl)
    assert f.commit_regressions == 1
    assert [v.invariant for v in tl.violations] == ["group_commit_regressed"]


def test_an_answer_to_a_fetch_sent_before_the_acknowledgement_is_not_judged_against_it():
    ledger, tl = ledger_with({})
    g = group_with(commits=[(9, 2.0, "m0.0")], observed=[(5, 1.5, "m1.0")], final=9)
    inv.check_group(g, ledger, tl)
    assert tl.violations == []


def test_observed_committed_offsets_going_back_between_generations():
    ledger, tl = ledger_with({})
    g = group_with(observed=[(7, 1.0, "m0.0"), (4, 2.0, "m1.0")], final=7)
    f = inv.check_group(g, ledger, tl)
    assert f.observed_regressions == 1
    assert [v.invariant for v in tl.violations] == ["group_observed_regressed"]


def test_an_acknowledged_record_the_group_never_got():
    ledger, tl = ledger_with({"p0-0": (0, 0), "p0-1": (0, 1)})
    g = group_with(commits=[(1, 1.0, "m0.0")], delivered=[(0, "p0-0")], final=1)
    f = inv.check_group(g, ledger, tl)
    assert f.undelivered == 1
    assert [v.invariant for v in tl.violations] == ["acked_record_not_delivered"]
    assert tl.violations[0].details["examples"][0]["id"] == "p0-1"


def test_commit_dips_between_members_are_counted_not_judged():
    ledger, tl = ledger_with({})
    f = inv.check_group(group_with(commits=[(9, 1.0, "m0.0"), (8, 1.1, "m1.0")], final=9), ledger, tl)
    assert f.commit_dips == 1
    assert tl.violations == []


def test_group_ledger_from_member_files_skips_a_torn_line(tmp_path):
    from praha.chaos.group import ConsumerGroup

    tl = Timeline()
    group = ConsumerGroup(tmp_path, ClientAccess("127.0.0.1:1"), ["t"], tl)
    w = tl.start_wall_ms
    lines = [{"ev": "assign", "w": w, "tps": [["t", 0]]}, {"ev": "observed", "w": w + 10, "tp": ["t", 0], "o": -1},
             {"ev": "served", "w": w + 20, "tp": ["t", 0], "recs": [[0, "p0-0"], [1, "p0-1"]]},
             {"ev": "commit", "w": w + 30, "sent": w + 25, "tp": ["t", 0], "o": 2}]
    (group.dir / "m0.0.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"ev": "serv')
    g = group.collect()
    assert g.delivered == {"p0-0", "p0-1"}
    assert g.assignments == 1
    assert [(c.offset, c.member) for c in g.commits[TP]] == [(2, "m0.0")]
    assert g.observed[TP][0].offset == -1


def test_the_summary_reports_the_group():
    from dataclasses import asdict

    g = asdict(inv.GroupFigures(members_started=4, member_kills=1, commits_acked=10, undelivered=2))
    line = _group_line(g)
    assert "4 members started (1 SIGKILLed)" in line
    assert "undelivered acknowledged 2" in line


def test_group_kinds_only_with_a_group():
    assert {"member_kill", "coordinator_kill"} <= set(CampaignConfig().effective_kinds())
    assert not {"member_kill", "coordinator_kill"} & set(CampaignConfig(group_members=0).effective_kinds())


def test_duplicated_after_an_epoch_bump_seed_7_netns():
    """Finding of `praha chaos --netns --brokers 3 --faults 8 --seed 7` (partition, one_way,
    flaky_link, zk_expire, kill): 324 ids stored twice. librdkafka timed a batch out
    (message.timeout.ms 10 s) while a request of it was possibly persisted — the leader had
    appended it behind the network fault — then bumped the producer epoch and re-sent the rest
    of that batch with sequence numbers of the new epoch, which no broker can recognise as a
    resend. The producers now keep messages longer than any fault (and its heal) lasts; the
    same seed then stores 10,883 acknowledged ids once each."""
    import logging

    from praha.chaos.workload import producer_config

    cfg = producer_config(ClientAccess("127.0.0.1:1"), logging.getLogger("t"))
    assert cfg["message.timeout.ms"] > CampaignConfig().heal_timeout_s * 1000


def test_the_replay_line_names_netns_and_the_workload_and_no_default_kinds():
    from praha.chaos.history import check
    from praha.chaos.txn import summarize

    txn = {**summarize([]).__dict__, **check([]).to_json()}
    text = summary_text(minimal_report(CampaignConfig(seed=5, netns=True, workload="txn"), txn=txn))
    assert "--seed 5 --netns --workload txn)" in text
    assert "--kinds" not in text
    assert "transactions: 0 committed" in text
    assert "--kinds long_pause" in summary_text(minimal_report(CampaignConfig(seed=5, workload="txn",
                                                                               kinds=("long_pause",))))


def test_the_plot_has_a_latency_panel_with_the_transactional_workload(tmp_path):
    """A Jepsen-style panel: every transaction's latency, ok / fail / indeterminate, faults shaded."""
    pytest.importorskip("matplotlib")
    from praha.chaos.plot import plot_timeline

    report = minimal_report(CampaignConfig(seed=5, workload="txn"))
    report["faults"] = [{"kind": "long_pause", "target": 1, "start_t": 2.0, "healed_t": 6.0}]
    with_txn = tmp_path / "txn.png"
    lat = [(1.0, 0.4, "ok"), (3.0, 12.0, "info"), (4.0, 0.002, "fail")]
    assert plot_timeline(report, [1.0, 2.0], {}, with_txn, lat) == with_txn

    from matplotlib.image import imread

    assert imread(with_txn).shape[0] == (11 + 2) * 90  # one panel more than the 11-inch plot, at 90 dpi


def test_campaign_brokers_run_no_schema_registry_so_a_restart_waits_for_none():
    """A cheaper fault cycle: a broker a fault restarts neither imports nor starts the registry,
    and `wait_until_ready` (which waits for a running registry to listen) waits for none."""
    from praha.chaos.environment import broker_overrides
    from praha.cluster.local import BrokerProcess

    overrides = broker_overrides(CampaignConfig())
    assert overrides["schema.registry.listeners"] == ""
    b = BrokerProcess(id=1, port=9092, metrics_port=9404, dir="/x",
                      overrides={"schema.registry.listeners": "http://127.0.0.1:1", **overrides})
    assert b.schema_registry == ""


# ---------------------------------------------------------------------------- leftovers of a killed campaign
def test_a_process_belongs_to_a_campaign_by_its_directory_or_its_arguments():
    from praha.chaos.leftovers import belongs

    root = "/w/.praha/chaos/seed-7-1"
    assert belongs(root, f"{root}/cluster/broker-2", ["python", "-m", "praha.broker"])  # a broker runs there
    assert belongs(root, "/w", ["python", "-m", "praha.chaos.member", "--out", f"{root}/group/m0.0.jsonl"])
    assert belongs(root, "/", ["java", f"-Dzookeeper.log.dir={root}/zookeeper/zk1", "QuorumPeerMain"])
    assert not belongs(root, "/w", ["python", "-m", "praha", "chaos", "--dir", "/w/.praha/chaos"])
    assert not belongs(root, "/w/.praha/chaos/seed-7-10", ["python"])  # a sibling whose name extends it
    assert not belongs(root, "/w/.praha/chaos/seed-7-1x/cluster", ["python"])


def test_mounts_below_a_campaign_deepest_first_with_escaped_names():
    from praha.chaos.leftovers import mounts_below

    text = ("tmpfs /dev/shm tmpfs rw 0 0\n"
            "tmpfs /w/c/seed-1/disks/broker-1 tmpfs rw,size=32768k 0 0\n"
            "tmpfs /w/c/seed-1/disks/broker-1/inner tmpfs rw 0 0\n"
            "tmpfs /w/c/seed-1/disks/my\\040disk tmpfs rw 0 0\n"
            "tmpfs /w/c/seed-10/disks/broker-1 tmpfs rw 0 0\n"
            "tmpfs /w/c/seed-1 tmpfs rw 0 0\n")
    assert mounts_below("/w/c/seed-1", text) == [
        "/w/c/seed-1/disks/broker-1/inner", "/w/c/seed-1/disks/broker-1", "/w/c/seed-1/disks/my disk"]


def test_a_claim_is_its_owners_only_while_that_very_process_lives(tmp_path, monkeypatch):
    import os

    from praha.chaos import leftovers

    monkeypatch.setattr(leftovers, "REGISTRY", tmp_path / "registry")
    assert leftovers.start_ticks_of("12 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 9") == 4242
    mine = leftovers.claim(tmp_path / "campaign")
    assert leftovers.claims() == [mine]
    assert leftovers.owner_alive(mine)
    reused = leftovers.Claim(os.getpid(), mine.start_ticks - 1, mine.root)  # the same pid, another process
    assert not leftovers.owner_alive(reused)
    leftovers.release(mine)
    assert leftovers.claims() == []


def test_seed_101_a_refused_commit_is_retried_with_nothing_new_served():
    """Seed 101's group "did not catch up": its last commits met COORDINATOR_LOAD_IN_PROGRESS
    and, with the producers stopped, were never sent again. Owed offsets stay due until
    acknowledged, and go with a revoke (the next owner commits them)."""
    from praha.chaos.member import Owed

    a, b = ("chaos-data-0", 0), ("chaos-data-1", 0)
    owed = Owed()
    owed.processed({a: 15121, b: 15100})
    assert owed.due() == {a: 15121, b: 15100}  # the commit is sent ... and refused
    owed.processed({})  # nothing new served
    assert owed.due() == {a: 15121, b: 15100}  # still due: sent again
    owed.seen_committed(a, 15121)
    assert owed.due() == {b: 15100}
    owed.processed({a: 15130})
    owed.revoked([b])
    assert owed.due() == {a: 15130}
    owed.seen_committed(a, 15200)  # observed committed further (by a previous owner): nothing owed below it
    owed.processed({a: 15150})
    assert owed.due() == {}


def test_the_final_read_stops_only_at_a_settled_end_past_every_acknowledgement():
    """The final read's stop rule (session 14's one unexplained `lost`): an end found once may be
    a new leader's stale high watermark, below offsets the previous leader acknowledged."""
    ledger, _ = ledger_with({"p0-0": (0, 4), "p0-1": (0, 9), "p1-0": (1, 2), "p1-1": (1, -1)})
    wanted = inv.acked_ends(ledger.snapshot_acked())
    assert wanted == {("t", 0): 10, ("t", 1): 3}
    ends = {("t", 0): 10, ("t", 1): 3}
    assert not inv.read_settled(None, ends, wanted)  # found once: ask again
    assert inv.read_settled(dict(ends), ends, wanted)
    assert not inv.read_settled({**ends, ("t", 0): 8}, ends, wanted)  # still moving
    lagging = {("t", 0): 7, ("t", 1): 3}
    assert not inv.read_settled(dict(lagging), lagging, wanted)  # still, but below what was acknowledged
    assert inv.read_settled(dict(lagging), lagging, {})
