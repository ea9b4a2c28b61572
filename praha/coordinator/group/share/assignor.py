"""The share-group assignor (Kafka's SimpleAssignor idea): partitions are shared, not owned.

With fewer members than partitions, each partition goes to one member, spread evenly; with
more members than partitions, every member still gets one, so several members read the same
partition (its share partition hands each of them different records). Pure function.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping

#: member id -> topic id -> partitions
ShareAssignment = dict[str, dict[uuid.UUID, frozenset[int]]]


def assign(subscriptions: Mapping[str, frozenset[uuid.UUID]], topics: Mapping[uuid.UUID, int]) -> ShareAssignment:
    """Each topic's partitions among the members subscribed to it, round robin in sorted order;
    when a topic has fewer partitions than subscribers, the extra members share them too."""
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in subscriptions}
    for tid in sorted(topics, key=lambda t: t.bytes):
        n = topics[tid]
        members = sorted(m for m, subs in subscriptions.items() if tid in subs)
        if not members or n <= 0:
            continue
        for i in range(max(n, len(members))):
            out[members[i % len(members)]].setdefault(tid, set()).add(i % n)
    return {m: {t: frozenset(p) for t, p in a.items()} for m, a in out.items()}
