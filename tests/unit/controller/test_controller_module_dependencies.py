"""The modules of praha/controller depend on each other one way: no import cycle (counting
imports under TYPE_CHECKING and inside functions), and only `controller.py` itself knows the
`Controller` — the flows get their services, never the seat holder."""
from __future__ import annotations

import ast
from pathlib import Path

import praha.controller

PACKAGE = Path(praha.controller.__file__).parent


def _imports(path: Path) -> set[str]:
    """Modules of praha.controller that `path` imports, anywhere in the file."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "praha.controller":
                out.update(alias.name for alias in node.names)
            elif node.module.startswith("praha.controller."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[2] for a in node.names if a.name.startswith("praha.controller."))
    return out


def _graph() -> dict[str, set[str]]:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    return {p.stem: _imports(p) & modules - {p.stem} for p in PACKAGE.glob("*.py")}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return path[path.index(module):] + [module]
        if module in done:
            return None
        for dep in sorted(graph.get(module, ())):
            if (found := visit(dep, path + [module])) is not None:
                return found
        done.add(module)
        return None

    for module in sorted(graph):
        if (found := visit(module, [])) is not None:
            return found
    return None


def test_no_import_cycle_among_the_controller_modules():
    graph = _graph()
    assert "flows" in graph["controller"]
    assert _cycle(graph) is None


def test_no_controller_module_imports_controller_py():
    assert sorted(m for m, deps in _graph().items() if "controller" in deps) == []


def test_a_cycle_is_found():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
