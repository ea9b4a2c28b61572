"""The seeded fault schedule: which fault, against which target, for how long, when.

The schedule is a pure function of (seed, number of faults, kinds, session timeout), so
a campaign is replayed by giving the same seed. Targets are stored as a number in
[0, 1) and resolved against the candidates at injection time (live brokers sorted by
id, or the current controller), which keeps a replay faithful even though which broker
is controller at a given moment depends on timing.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from praha.chaos.config import KIND_WEIGHTS


@dataclass(frozen=True)
class PlannedFault:
    index: int
    kind: str
    pick: float  # resolves to a target among the candidates at injection time
    hold_s: float  # how long the fault lasts beyond what the kind needs (e.g. session expiry)
    gap_s: float  # pause after healing, before the next fault
    prefer_controller: bool  # for pause / zk_expire: aim at the controller (the zombie case)
    outlive_session: bool  # for kills and controlled restarts: stay down until ZooKeeper noticed

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def build_schedule(seed: int, faults: int, kinds: Sequence[str], min_gap_s: float = 0.5,
                   max_gap_s: float = 2.5) -> list[PlannedFault]:
    """`faults` planned faults; the same arguments always give the same list."""
    rng = random.Random(seed)
    kinds = list(kinds)
    weights = [KIND_WEIGHTS.get(k, 1) for k in kinds]
    plan = []
    for i in range(faults):
        kind = rng.choices(kinds, weights)[0]
        plan.append(PlannedFault(
            index=i,
            kind=kind,
            pick=rng.random(),
            hold_s=round(rng.uniform(0.2, 2.0), 2),
            gap_s=round(rng.uniform(min_gap_s, max_gap_s), 2),
            prefer_controller=rng.random() < 0.5,
            outlive_session=rng.random() < 0.5,
        ))
    return plan


def resolve(pick: float, candidates: Sequence[int]) -> int | None:
    """The candidate a pick in [0, 1) designates (None when there is none)."""
    ordered = sorted(candidates)
    if not ordered:
        return None
    return ordered[min(int(pick * len(ordered)), len(ordered) - 1)]
