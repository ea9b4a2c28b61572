"""The share-group workload's invariants (issue 23), judged without I/O on what the members
wrote (praha/chaos/share_member.py), what the producer was told and the share partitions'
durable state at the end.

A share group hands each record to one member at a time; faults may deliver it again (a
member killed while holding it, a leader failover), but what was acknowledged must stay
acknowledged. Every invariant is declared in INVARIANTS with what it forbids.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from praha.chaos.share_member import Intent, intent

Tp = tuple[str, int]
Rec = tuple[str, int, int]  # topic, partition, offset

#: the share-partition record states the durable state may hold (praha/zk/share_state.py)
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4

#: every invariant of the workload → what a violation of it means
INVARIANTS: dict[str, str] = {
    "share_undelivered": "a record the producer was told is stored was never delivered to any member, "
                         "yet the share partition moved past it",
    "share_unfinished": "a record below the high watermark is neither acknowledged nor archived at the end",
    "share_accepted_twice": "the leader confirmed an accept of one record twice (an acknowledged record delivered "
                            "again and accepted again)",
    "share_redelivered_after_ack": "a record delivered after the leader confirmed its accept or reject",
    "share_delivery_count_over_limit": "a record delivered with a delivery count above the group's limit",
    "share_archived_unacknowledged": "a record finished though no member acknowledged it and it was not "
                                     "delivered up to the delivery count limit",
    "share_divergent_value": "a member got a value at an offset other than the one the producer was told",
    "share_workload": "the workload proved nothing (no record accepted) or did not drain within its bound",
}


@dataclass
class Delivery:
    member: str
    w: int  # wall ms the member wrote it down
    delivery_count: int
    value: str


@dataclass
class Ack:
    member: str
    w: int
    kind: str


@dataclass
class ShareHistory:
    """What the members reported, per record."""
    deliveries: dict[Rec, list[Delivery]] = field(default_factory=dict)
    sent: dict[Rec, list[Ack]] = field(default_factory=dict)  # acknowledgements sent (any outcome)
    confirmed: dict[Rec, list[Ack]] = field(default_factory=dict)  # acknowledgements the leader confirmed
    failed: int = 0
    unknown: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    def add(self, member: str, e: dict[str, Any]) -> None:
        ev, w = e.get("ev"), int(e.get("w") or 0)
        if ev == "got":
            for t, p, o, v, dc in e["recs"]:
                self.deliveries.setdefault((t, int(p), int(o)), []).append(Delivery(member, w, int(dc), str(v)))
        elif ev in ("ack", "acked"):
            into = self.sent if ev == "ack" else self.confirmed
            for t, p, o, kind in e["recs"]:
                into.setdefault((t, int(p), int(o)), []).append(Ack(member, w, str(kind)))
        elif ev == "ack_failed":
            self.failed += len(e.get("recs", []))
        elif ev == "ack_unknown":
            self.unknown += len(e.get("recs", []))
        if ev in ("ack_failed", "ack_unknown", "error"):
            key = str(e.get("error", "?"))[:80]
            self.errors[key] = self.errors.get(key, 0) + 1


@dataclass(frozen=True)
class FinalState:
    """A share partition's durable state at the end: start offset and (first, last, state, count) batches."""
    start_offset: int
    batches: tuple[tuple[int, int, int, int], ...] = ()

    def done(self, offset: int) -> bool:
        if offset < self.start_offset:
            return True
        return any(a <= offset <= b and st in (ACKNOWLEDGED, ARCHIVED) for a, b, st, _ in self.batches)


@dataclass
class ShareVerdict:
    records: int = 0  # offsets below the high watermarks
    produced: int = 0  # of them, acknowledged to the producer
    delivered: int = 0  # distinct records delivered to some member
    deliveries: int = 0
    redelivered: int = 0  # records delivered more than once
    accepted: int = 0  # records whose accept the leader confirmed
    rejected: int = 0
    poison: int = 0  # records every member releases
    finished: int = 0  # acknowledged or archived in the final state
    max_delivery_count: int = 0
    acks_failed: int = 0
    acks_unknown: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    violations: dict[str, list[str]] = field(default_factory=dict)

    def violate(self, kind: str, example: str) -> None:
        assert kind in INVARIANTS, kind
        self.violations.setdefault(kind, []).append(example)

    def counts(self) -> dict[str, int]:
        return {k: len(self.violations.get(k, [])) for k in INVARIANTS}


def judge(history: ShareHistory, produced: dict[Rec, str], final: dict[Tp, FinalState | None],
          high_watermarks: dict[Tp, int], limit: int) -> ShareVerdict:
    """Every record below the high watermarks: delivered, acknowledged or archived, never
    confirmed twice nor delivered after its confirmation, its delivery counts bounded."""
    v = ShareVerdict(produced=len(produced), acks_failed=history.failed, acks_unknown=history.unknown,
                     errors=dict(history.errors))
    records = [(t, p, o) for (t, p), hw in sorted(high_watermarks.items()) for o in range(hw)]
    v.records = len(records)
    for rec in records:
        _judge_record(v, rec, history, produced.get(rec), final.get(rec[:2]), limit)
    v.deliveries = sum(len(d) for d in history.deliveries.values())
    if v.accepted == 0:
        v.violate("share_workload", "no record was accepted")
    return v


def _judge_record(v: ShareVerdict, rec: Rec, h: ShareHistory, value: str | None, state: FinalState | None,
                  limit: int) -> None:
    name = f"{rec[0]}-{rec[1]}@{rec[2]}"
    got = h.deliveries.get(rec, [])
    confirmed = h.confirmed.get(rec, [])
    sent = h.sent.get(rec, [])
    done = state is not None and state.done(rec[2])
    v.finished += done
    if got:
        v.delivered += 1
        v.redelivered += len(got) > 1
        top = max(d.delivery_count for d in got)
        v.max_delivery_count = max(v.max_delivery_count, top)
        if top > limit:
            v.violate("share_delivery_count_over_limit", f"{name} delivered with count {top} (limit {limit})")
    for d in got:
        if value is not None and d.value != value:
            v.violate("share_divergent_value", f"{name}: {d.member} got {d.value!r}, the producer stored {value!r}")
    accepts = [a for a in confirmed if a.kind == Intent.ACCEPT.value]
    v.accepted += bool(accepts)
    v.rejected += any(a.kind == Intent.REJECT.value for a in confirmed)
    what = value if value is not None else (got[0].value if got else None)
    v.poison += what is not None and intent(what) is Intent.RELEASE
    if len(accepts) > 1:
        v.violate("share_accepted_twice", f"{name} accepted by {[a.member for a in accepts]}")
    final_acks = [a for a in confirmed if a.kind != Intent.RELEASE.value]
    if final_acks:
        first = min(a.w for a in final_acks)
        late = [d for d in got if d.w > first]
        if late:
            v.violate("share_redelivered_after_ack",
                      f"{name} {final_acks[0].kind}ed (confirmed to {final_acks[0].member}), then delivered to "
                      f"{late[0].member} with count {late[0].delivery_count} {late[0].w - first} ms later")
    if not done:
        v.violate("share_unfinished", f"{name} neither acknowledged nor archived"
                                      + ("" if got else " (never delivered)"))
        return
    if not got:
        if value is not None:
            v.violate("share_undelivered", f"{name} ({value!r}) never delivered, yet finished")
        return
    if not any(a.kind != Intent.RELEASE.value for a in sent) and max(d.delivery_count for d in got) < limit - 1:
        # archived only by the delivery count limit: the last delivery may have gone unrecorded
        # (its member SIGKILLed before writing it down), so one below the limit is allowed
        v.violate("share_archived_unacknowledged",
                  f"{name} finished after {len(got)} deliveries (highest count "
                  f"{max(d.delivery_count for d in got)}, limit {limit}) without an accept or reject")


def share_line(s: dict[str, Any]) -> str:
    """The summary's line for the share workload."""
    bad = {k: n for k, n in s["violations"].items() if n}
    return (f"  share group: {s['members_started']} members started ({s['members_killed']} SIGKILLed); "
            f"{s['records']} records ({s['produced']} acknowledged to the producer), {s['delivered']} delivered "
            f"({s['deliveries']} deliveries, {s['redelivered']} more than once, highest count "
            f"{s['max_delivery_count']}), {s['accepted']} accepted, {s['rejected']} rejected, {s['poison']} poison, "
            f"{s['finished']} finished; drained {'yes' if s['drained'] else 'NO'} in {s['drain_s']:.1f}s; "
            f"violations: {', '.join(f'{k} {n}' for k, n in sorted(bad.items())) or 'none'}")
