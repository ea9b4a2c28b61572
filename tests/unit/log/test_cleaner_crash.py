"""A crash at each step of the cleaner's swap, then the log reopened from its files.

The pass is stopped right after a step (files left exactly as the step leaves them, the
Log object abandoned as a SIGKILL would), and a new Log opens the directory: it must hold
either the log before cleaning or the log after it, with no `.cleaned`, `.swap` or
`.deleted` file left and the same log end; the latest value of every key is never lost.
"""
from __future__ import annotations

import os
import shutil

import pytest
from cleaner_helpers import fill, keyed, records_of

from praha.log import Log, LogConfig
from praha.log.cleaner import CleaningAbortedError, LogCleaningPass
from praha.log.offset_map import OffsetMap

CONFIG = LogConfig(segment_bytes=1 << 20, cleanup_policy="compact", file_delete_delay_ms=0)


def build(path: str) -> Log:
    lg = Log(path, CONFIG)
    for _ in range(3):
        fill(lg, rounds=4, keys=5)
        lg.roll()
    lg.append_as_leader(keyed([(b"k1", b"active")]), 0)
    lg.flush()
    return lg


def latest(records: list[tuple[int, bytes | None, bytes | None]]) -> dict[bytes | None, tuple[int, bytes | None]]:
    return {k: (o, v) for o, k, v in records}


@pytest.fixture
def states(tmp_path):
    """(before, after) record lists of the same log cleaned without a crash."""
    ref = build(str(tmp_path / "ref-0"))
    before = records_of(ref)
    p = LogCleaningPass(ref, OffsetMap(1 << 20), 10_000)
    p.clean(0, ref.active_segment.base_offset)
    after = records_of(ref)
    assert len(after) < len(before)
    assert p.stats.groups_swapped == 1
    ref.close()
    return before, after


def crash(path: str, step: str) -> Log:
    lg = build(path)
    p = LogCleaningPass(lg, OffsetMap(1 << 20), 10_000, crash_after=step)
    with pytest.raises(CleaningAbortedError, match="simulated crash"):
        p.clean(0, lg.active_segment.base_offset)
    return lg  # abandoned, not closed: as if the process died


def leftovers(path: str) -> list[str]:
    return [n for n in os.listdir(path) if n.endswith((".cleaned", ".swap", ".deleted"))]


@pytest.mark.parametrize(("step", "expect"), [("cleaned", "before"), ("swap", "after"), ("deleted", "after")])
def test_crash_after_each_swap_step(tmp_path, states, step, expect):
    before, after = states
    path = str(tmp_path / "t-0")
    old = crash(path, step)
    suffix = {"cleaned": ".cleaned", "swap": ".swap", "deleted": ".swap"}[step]
    assert any(n.endswith(suffix) for n in os.listdir(path))
    reopened = Log(path, CONFIG)
    got = records_of(reopened)
    assert got == (before if expect == "before" else after)
    assert latest(got) == latest(before)
    assert reopened.log_end_offset == old.log_end_offset
    assert leftovers(path) == []
    reopened.close()


@pytest.mark.parametrize("renamed", ["indexes", "log"])
def test_crash_in_the_middle_of_dropping_the_swap_suffix(tmp_path, states, renamed):
    """Step 4 renames the indexes, then the log; a crash between (or with only the log
    renamed, in any order the file system chose) still ends with the cleaned log."""
    _, after = states
    path = str(tmp_path / "t-0")
    old = crash(path, "deleted")
    for name in os.listdir(path):
        if name.endswith(".swap") and (name.endswith(".log.swap") == (renamed == "log")):
            os.rename(os.path.join(path, name), os.path.join(path, name[: -len(".swap")]))
    reopened = Log(path, CONFIG)
    assert records_of(reopened) == after
    assert reopened.log_end_offset == old.log_end_offset
    assert leftovers(path) == []
    reopened.close()


def test_crash_after_swap_with_an_emptied_first_segment(tmp_path):
    """A swap whose output is empty still replaces the segment it was cut from."""
    path = str(tmp_path / "t-0")
    lg = Log(path, CONFIG)
    lg.append_as_leader(keyed([(b"a", b"1")]), 0)
    lg.roll()
    lg.append_as_leader(keyed([(b"a", b"2")]), 0)
    lg.roll()
    lg.append_as_leader(keyed([(b"b", b"1")]), 0)
    lg.flush()
    copy = str(tmp_path / "copy-0")
    shutil.copytree(path, copy)
    p = LogCleaningPass(lg, OffsetMap(1 << 20), 10_000, crash_after="swap")
    with pytest.raises(CleaningAbortedError):
        p.clean(0, 2)
    reopened = Log(path, CONFIG)
    assert records_of(reopened) == [(1, b"a", b"2"), (2, b"b", b"1")]
    assert leftovers(path) == []
    reopened.close()
