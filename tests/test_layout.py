"""Test modules are imported by basename (pytest's default import mode, which the test
helper imports rely on), so two test files with one name break collection of the suite."""
from collections import Counter
from pathlib import Path


def test_test_module_names_are_unique():
    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert not [n for n, c in names.items() if c > 1]
