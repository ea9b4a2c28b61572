"""`make chaos` (praha/chaos/suite.py), checked without running it: its seeded schedules add up
to at least 1,000 faults, every campaign runs the transactional workload, and every fault kind
is drawn by some campaign that can run it."""
from __future__ import annotations

from collections import Counter

from praha.chaos.config import ALL_KINDS
from praha.chaos.schedule import build_schedule
from praha.chaos.suite import SUITE, main


def _kinds_drawn() -> Counter[str]:
    drawn: Counter[str] = Counter()
    for c in SUITE:
        cfg = c.config()
        cfg.validate()
        drawn.update(p.kind for p in build_schedule(c.seed, c.faults, cfg.effective_kinds(), cfg.min_gap_s,
                                                     cfg.max_gap_s))
    return drawn


def test_make_chaos_is_a_thousand_transactional_faults_of_every_kind():
    assert sum(c.faults for c in SUITE) >= 1000
    assert all(c.config().workload == "txn" for c in SUITE)
    drawn = _kinds_drawn()
    assert sum(drawn.values()) == sum(c.faults for c in SUITE)
    assert set(drawn) == set(ALL_KINDS), sorted(set(ALL_KINDS) - set(drawn))
    assert len({c.seed for c in SUITE}) == len(SUITE)
    assert any(c.secure for c in SUITE)
    assert any(c.zk_ensemble == 3 and c.netns for c in SUITE)


def test_list_prints_the_command_lines_and_runs_nothing(capsys):
    assert main(["--list", "--only", "203"]) == 0
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert "--seed 203" in line
    assert "--secure" in line
    assert "--workload txn" in line
    assert "--netns" in line
