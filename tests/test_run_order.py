"""The parallel run's plan (tests/conftest.py): every unit in the table of durations exists,
and a file is one unit except in a directory declared one unit."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("tests_conftest", ROOT / "tests" / "conftest.py")
assert _spec is not None
assert _spec.loader is not None
plan = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plan)


def test_every_timed_unit_exists():
    missing = [u for u in plan.SECONDS if not (ROOT / u).exists()]
    assert not missing, f"tests/conftest.py SECONDS names units that do not exist: {missing}"
    assert all((ROOT / d).is_dir() for d in plan.ONE_UNIT)


def test_a_file_is_one_unit_and_a_declared_directory_is_one():
    assert plan.unit_of("tests/integration/test_acls.py::test_x") == "tests/integration/test_acls.py"
    assert plan.unit_of("tests/integration/test_acls.py::TestA::test_x[1]") == "tests/integration/test_acls.py"
    assert plan.unit_of("tests/pipeline/test_read.py::test_x") == "tests/pipeline"
    assert plan.unit_of("tests/pipeline/test_source_units.py::test_y[a-b]") == "tests/pipeline"
