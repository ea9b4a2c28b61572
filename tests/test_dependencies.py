"""Every third-party module praha imports belongs to a distribution pyproject.toml declares.

The Spark source imported numpy without declaring it: it worked wherever pandas or pyspark's
extras had brought numpy in, and failed on executors given only praha's own dependencies
(found by the `spark.archives` test). Declared once, checked here."""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: parts of praha that run only under an extra, and that extra (the test harness needs pytest)
EXTRA_FOR = {"praha/testing/": "test"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(extra: str | None = None) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + (project["optional-dependencies"][extra] if extra else [])
    return {_canonical(re.split(r"[=<>\[ ;]", d, maxsplit=1)[0]) for d in deps}


def _imported_modules(under: str = "praha/", skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Top-level module name -> the first file importing it, over `under` (generated code included)."""
    found: dict[str, str] = {}
    for path in sorted(ROOT.glob(under + "**/*.py")):
        if str(path.relative_to(ROOT)).startswith(skip):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.partition(".")[0], str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_is_a_declared_dependency():
    owners = packages_distributions()
    missing = {}
    parts = [("praha/", None, tuple(EXTRA_FOR)), *((under, extra, ()) for under, extra in EXTRA_FOR.items())]
    for under, extra, skip in parts:
        missing.update(_undeclared(owners, _declared(extra), _imported_modules(under, skip)))
    assert not missing, f"imported by praha but not in pyproject.toml's dependencies: {missing}"


def _undeclared(owners: dict, declared: set[str], imported: dict[str, str]) -> dict[str, tuple[str, list[str]]]:
    missing = {}
    for module, where in imported.items():
        if module == "praha" or module in sys.stdlib_module_names or module == "__future__":
            continue
        dists = {_canonical(d) for d in owners.get(module, [])}
        assert dists, f"{module} (imported by {where}) belongs to no installed distribution"
        if not dists & declared:
            missing[module] = (where, sorted(dists))
    return missing
