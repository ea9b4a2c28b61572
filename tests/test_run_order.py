"""The parallel run's plan (tests/conftest.py): every unit in the table of durations exists,
and files are grouped as declared (a file is one unit; the files that use a shared session
fixture are one unit together)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("tests_conftest", ROOT / "tests" / "conftest.py")
assert _spec is not None and _spec.loader is not None
plan = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plan)


class _Item:
    def __init__(self, nodeid: str, *fixtures: str):
        self.nodeid, self.fixturenames = nodeid, list(fixtures)


def test_every_timed_unit_exists():
    shared = set(plan.SHARED_SESSION_FIXTURES.values())
    missing = [u for u in plan.SECONDS if u not in shared and not (ROOT / u).is_file()]
    assert not missing, f"tests/conftest.py SECONDS names units that do not exist: {missing}"


def test_a_file_is_one_unit_and_files_sharing_a_session_fixture_are_one():
    items = [_Item("tests/a/test_x.py::test_1"), _Item("tests/a/test_x.py::test_2", "zookeeper"),
             _Item("tests/p/test_units.py::test_pure"),
             _Item("tests/p/test_read.py::test_plain"), _Item("tests/p/test_read.py::test_spark", "spark"),
             _Item("tests/p/test_sink.py::test_one", "pipeline", "spark")]
    assert plan.unit_of(items) == {
        "tests/a/test_x.py::test_1": "tests/a/test_x.py", "tests/a/test_x.py::test_2": "tests/a/test_x.py",
        "tests/p/test_units.py::test_pure": "tests/p/test_units.py",
        "tests/p/test_read.py::test_plain": "spark", "tests/p/test_read.py::test_spark": "spark",
        "tests/p/test_sink.py::test_one": "spark"}
