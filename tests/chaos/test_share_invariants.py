"""The share-group workload's judge (praha/chaos/share_invariants.py), without a cluster: each
declared invariant is violated by a history built to break it, and a clean history breaks none."""
from __future__ import annotations

import pytest

from praha.chaos.share_invariants import INVARIANTS, FinalState, ShareHistory, judge, share_line
from praha.chaos.share_member import Intent, intent

T = "chaos-share-0"
LIMIT = 4


def value_with(fate: Intent, start: int = 0) -> str:
    return next(v for i in range(start, 100_000) if intent(v := f"sp0-{i}") is fate)


def got(h: ShareHistory, member: str, w: int, offset: int, value: str, dc: int = 1, partition: int = 0) -> None:
    h.add(member, {"ev": "got", "w": w, "recs": [[T, partition, offset, value, dc]]})


def ack(h: ShareHistory, member: str, w: int, offset: int, kind: str, confirmed: bool = True) -> None:
    h.add(member, {"ev": "ack", "w": w, "recs": [[T, 0, offset, kind]]})
    if confirmed:
        h.add(member, {"ev": "acked", "w": w + 1, "recs": [[T, 0, offset, kind]]})


def clean_history() -> tuple[ShareHistory, dict, list[str]]:
    """Three records: one accepted, one rejected, one poison released up to the limit."""
    a, r, p = value_with(Intent.ACCEPT), value_with(Intent.REJECT), value_with(Intent.RELEASE)
    h = ShareHistory()
    got(h, "s0.0", 10, 0, a)
    ack(h, "s0.0", 11, 0, "accept")
    got(h, "s1.0", 10, 1, r)
    ack(h, "s1.0", 11, 1, "reject")
    for dc in range(1, LIMIT + 1):
        got(h, f"s{dc % 2}.0", 20 + dc * 10, 2, p, dc)
        ack(h, f"s{dc % 2}.0", 21 + dc * 10, 2, "release")
    produced = {(T, 0, 0): a, (T, 0, 1): r, (T, 0, 2): p}
    return h, produced, [a, r, p]


def test_a_clean_history_breaks_nothing_and_counts_what_happened():
    h, produced, _ = clean_history()
    v = judge(h, produced, {(T, 0): FinalState(3)}, {(T, 0): 3}, LIMIT)
    assert v.violations == {}
    assert (v.records, v.delivered, v.accepted, v.rejected, v.poison, v.finished) == (3, 3, 1, 1, 1, 3)
    assert v.redelivered == 1
    assert v.max_delivery_count == LIMIT
    assert v.deliveries == 2 + LIMIT
    assert "violations: none" in share_line({**v.__dict__, "violations": v.counts(), "drained": True,
                                             "drain_s": 1.0, "members_started": 2, "members_killed": 0})


def test_every_invariant_is_declared_with_its_meaning():
    assert all(k.startswith("share_") and len(text) > 20 for k, text in INVARIANTS.items())


def broken(kind: str) -> set[str]:
    h, produced, (a, _r, p) = clean_history()
    final, high = FinalState(3), 3
    if kind == "share_unfinished":
        final = FinalState(1, ((1, 1, 2, 1), (2, 2, 0, 4)))  # the poison still available
    elif kind == "share_accepted_twice":
        got(h, "s2.0", 50, 0, a, 2)
        ack(h, "s2.0", 51, 0, "accept")
    elif kind == "share_redelivered_after_ack":
        got(h, "s2.0", 500, 1, h.deliveries[(T, 0, 1)][0].value, 2)  # the rejected record again
        ack(h, "s2.0", 501, 1, "reject", confirmed=False)
    elif kind == "share_delivery_count_over_limit":
        got(h, "s2.0", 500, 2, p, LIMIT + 1)
    elif kind == "share_archived_unacknowledged":
        other = value_with(Intent.ACCEPT, start=int(a.split("-")[1]) + 1)
        produced[(T, 0, 3)] = other
        got(h, "s2.0", 60, 3, other)  # delivered once, never acknowledged, yet finished
        final, high = FinalState(4), 4
    elif kind == "share_undelivered":
        produced[(T, 0, 3)] = "sp0-999999"
        final, high = FinalState(4), 4
    elif kind == "share_divergent_value":
        got(h, "s2.0", 5, 0, "sp0-elsewhere", 1)
    elif kind == "share_workload":
        h = ShareHistory()
        produced = {}
        final, high = FinalState(0), 0
    v = judge(h, produced, {(T, 0): final}, {(T, 0): high}, LIMIT)
    return set(v.violations)


@pytest.mark.parametrize("kind", sorted(INVARIANTS))
def test_each_invariant_catches_its_violation(kind):
    assert kind in broken(kind)


def test_a_record_archived_at_the_limit_with_its_last_delivery_unrecorded_is_not_lost():
    """A member SIGKILLed before writing down the last delivery: one below the limit is allowed."""
    h, produced, (a, _r, _p) = clean_history()
    other = value_with(Intent.ACCEPT, start=int(a.split("-")[1]) + 1)
    produced[(T, 0, 3)] = other
    for dc in range(1, LIMIT):
        got(h, "s3.0", 60 + dc, 3, other, dc)
    v = judge(h, produced, {(T, 0): FinalState(4)}, {(T, 0): 4}, LIMIT)
    assert v.violations == {}


def test_a_failed_acknowledgement_is_not_a_confirmation():
    """An accept refused (the lock had expired) and the record accepted by another member: once."""
    h, produced, (a, _r, _p) = clean_history()
    h.add("s2.0", {"ev": "got", "w": 1, "recs": [[T, 0, 0, a, 1]]})
    h.add("s2.0", {"ev": "ack", "w": 30, "recs": [[T, 0, 0, "accept"]]})
    h.add("s2.0", {"ev": "ack_failed", "w": 31, "recs": [[T, 0, 0, "accept"]], "error": "INVALID_RECORD_STATE"})
    v = judge(h, produced, {(T, 0): FinalState(3)}, {(T, 0): 3}, LIMIT)
    assert v.violations == {}
    assert v.acks_failed == 1
    assert v.errors == {"INVALID_RECORD_STATE": 1}


def test_the_fates_are_fixed_by_the_value_and_mostly_accept():
    values = [f"sp0-{i}" for i in range(2000)]
    fates = [intent(v) for v in values]
    assert fates == [intent(v) for v in values]
    assert fates.count(Intent.ACCEPT) > 1800
    assert fates.count(Intent.REJECT) > 20
    assert fates.count(Intent.RELEASE) > 10


def test_only_a_share_campaign_gives_the_brokers_the_share_settings():
    from praha.chaos.config import CampaignConfig
    from praha.chaos.environment import broker_overrides
    from praha.chaos.share_config import BROKER_SETTINGS

    share = broker_overrides(CampaignConfig(workload="share"))
    assert {k: share[k] for k in BROKER_SETTINGS} == BROKER_SETTINGS
    assert not set(BROKER_SETTINGS) & set(broker_overrides(CampaignConfig(workload="queue")))
    with pytest.raises(ValueError, match="unknown workload"):
        CampaignConfig(workload="shared").validate()
