"""How many examples a property test (hypothesis) draws.

Each test states its full count; `make test` draws a third of it (`PRAHA_FUZZ_SCALE=0.33`,
so the whole suite stays inside its time budget) and `make fuzz` draws every example of
every property test. Run by hand, a test draws its full count."""
from __future__ import annotations

import os

#: the share of each test's full count drawn in this run
SCALE = float(os.environ.get("PRAHA_FUZZ_SCALE", "1"))


def examples(full: int) -> int:
    """`full` scaled by `PRAHA_FUZZ_SCALE`, never below 25."""
    return max(25, round(full * SCALE))
