"""The server-side assignors of KIP-848: `uniform` (the default) and `range`. Pure functions.

Both are sticky: a member keeps what it had in the previous target assignment as long as it
still subscribes to the topic, the partition still exists and keeping it leaves the
assignment balanced. So one member leaving moves only its own partitions, and a member
joining takes partitions only from the members above their share.

- `uniform` spreads all partitions of all subscribed topics so that any two members able to
  hold a partition differ by at most one partition (Kafka's UniformAssignor).
- `range` works topic by topic: a topic's partitions are shared among the members subscribed
  to it, each getting `n // m` and the first `n % m` one more (Kafka's RangeAssignor), so
  co-partitioned topics line up.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from praha.config import CONSUMER_GROUP_ASSIGNORS
from praha.coordinator.group.consumer.model import Assignment


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor sees of a member: the topics it subscribes to and what it had."""

    topics: frozenset[uuid.UUID]
    current: Assignment


#: member id -> its assignment
GroupAssignment = dict[str, dict[uuid.UUID, frozenset[int]]]
Assignor = Callable[[Mapping[str, MemberSpec], Mapping[uuid.UUID, int]], GroupAssignment]


def _freeze(owned: dict[str, dict[uuid.UUID, set[int]]]) -> GroupAssignment:
    return {m: {t: frozenset(p) for t, p in a.items() if p} for m, a in owned.items()}


def uniform(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]) -> GroupAssignment:
    """Every partition to the least-loaded member that may hold it; sticky, then balanced by moves."""
    owned: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    load = dict.fromkeys(members, 0)
    taken: set[tuple[uuid.UUID, int]] = set()
    # 1. keep what is still valid, up to the member's fair share of what it can hold
    eligible_count = {m: sum(topics.get(t, 0) for t in spec.topics) for m, spec in members.items()}
    total = sum(topics.get(t, 0) for t in set().union(*(s.topics for s in members.values()))) if members else 0
    fair = -(-total // len(members)) if members else 0
    for m in sorted(members):
        spec = members[m]
        for tid in sorted(spec.current, key=lambda t: t.bytes):
            if tid not in spec.topics or tid not in topics:
                continue
            for p in sorted(spec.current[tid]):
                if p < topics[tid] and (tid, p) not in taken and load[m] < min(fair, eligible_count[m]):
                    owned[m].setdefault(tid, set()).add(p)
                    taken.add((tid, p))
                    load[m] += 1
    # 2. the rest, each to the least-loaded member subscribed to its topic
    by_topic: dict[uuid.UUID, list[str]] = {}
    for m in sorted(members):
        for tid in members[m].topics:
            by_topic.setdefault(tid, []).append(m)
    for tid in sorted(by_topic, key=lambda t: t.bytes):
        if tid not in topics:
            continue
        candidates = by_topic[tid]
        for p in range(topics[tid]):
            if (tid, p) in taken:
                continue
            m = min(candidates, key=lambda c: (load[c], c))
            owned[m].setdefault(tid, set()).add(p)
            load[m] += 1
    # 3. heterogeneous subscriptions: move partitions until no eligible member is two below an owner
    for _ in range(total + 1):
        moved = False
        for src in sorted(members, key=lambda c: (-load[c], c)):
            for tid in sorted(owned[src], key=lambda t: t.bytes):
                lighter = [c for c in by_topic.get(tid, ()) if load[c] + 1 < load[src]]
                if not lighter or not owned[src][tid]:
                    continue
                dst = min(lighter, key=lambda c: (load[c], c))
                p = max(owned[src][tid])
                owned[src][tid].discard(p)
                owned[dst].setdefault(tid, set()).add(p)
                load[src] -= 1
                load[dst] += 1
                moved = True
                break
            if moved:
                break
        if not moved:
            break
    return _freeze(owned)


def range_(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]) -> GroupAssignment:
    """Per topic, `n // m` partitions each and one more for the first `n % m` members; sticky."""
    owned: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for tid in sorted(topics, key=lambda t: t.bytes):
        subs = sorted(m for m, spec in members.items() if tid in spec.topics)
        if not subs:
            continue
        n = topics[tid]
        base, extra = divmod(n, len(subs))
        # members that already hold more than the base keep the extra slots first (stickiness)
        holding = {m: {p for p in members[m].current.get(tid, frozenset()) if p < n} for m in subs}
        by_claim = sorted(subs, key=lambda m: (-len(holding[m]), m))
        quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_claim)}
        taken: set[int] = set()
        for m in subs:
            keep = sorted(holding[m] - taken)[:quota[m]]
            owned[m][tid] = set(keep)
            taken.update(keep)
        free = [p for p in range(n) if p not in taken]
        for m in subs:
            while len(owned[m][tid]) < quota[m] and free:
                owned[m][tid].add(free.pop(0))
    return _freeze(owned)


#: the assignors a broker may offer (`group.consumer.assignors`), by the name clients use
ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_}
DEFAULT_ASSIGNORS = CONSUMER_GROUP_ASSIGNORS  # the broker config names the same ones
