"""The house rules, checked from the code.

The allowed arrows between praha's packages are written once, in `ALLOWED` below, and
`docs/architecture.md` shows the same table. Every `import praha.x` or `from praha.x import`
counts, wherever it is written (module top, function body, `if TYPE_CHECKING:`), because a
lazy import is still a dependency a reader has to follow.

Test modules are imported by basename (pytest's default import mode, which the test
helper imports rely on), so two test files with one name break collection of the suite.
"""
from __future__ import annotations

import ast
import functools
from collections import Counter, defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRAHA = ROOT / "praha"

_BASE = {"common", "errors"}
#: package -> the praha packages it may import (besides itself). Top-level modules
#: (praha/config.py, praha/statelog.py, ...) count as packages of their own name.
ALLOWED: dict[str, set[str]] = {
    "__main__": {"cli"},
    "cli": {"console", "chaos", "analytics", "cluster", "admin", "broker", "security", "spark",
            "zk", "protocol",
            "log", "config", "statelog", "topic_rules"} | _BASE,
    "console": {"analytics", "cluster", "admin", "zk", "protocol", "encoding"} | _BASE,
    "chaos": {"testing", "cluster", "admin", "zk", "protocol", "log", "config", "statelog"} | _BASE,
    "analytics": {"spark"} | _BASE,
    "testing": {"cluster", "admin", "zk", "protocol", "config", "encoding"} | _BASE,
    "cluster": {"admin", "security", "zk", "protocol", "config"} | _BASE,
    "admin": {"zk", "protocol", "config", "topic_rules"} | _BASE,
    "broker": {"controller", "coordinator", "registry", "security", "log", "zk", "protocol", "config",
               "statelog", "topic_rules"} | _BASE,
    "registry": {"security", "zk", "protocol", "config"} | _BASE,
    "coordinator": {"log", "zk", "protocol", "config", "statelog", "encoding"} | _BASE,
    "controller": {"zk", "protocol", "config", "statelog"} | _BASE,
    "security": {"zk", "protocol", "config"} | _BASE,
    "spark": {"protocol", "encoding"} | _BASE,
    "zk": {"config", "topic_rules"} | _BASE,
    "protocol": {"encoding"} | _BASE,
    "log": {"config", "encoding"} | _BASE,
    "config": _BASE,
    "topic_rules": {"config"} | _BASE,
    "statelog": _BASE,
    "common": {"errors"},
    "encoding": {"errors"},
    "errors": set(),
    "praha": set(),  # praha/__init__.py
}

#: finer rules: (importing package, imported package) -> the importing modules allowed to
#: (None: any) and the imported modules they may use (None: any)
ONLY_THROUGH: dict[tuple[str, str], tuple[set[str] | None, set[str] | None]] = {
    # the broker hosts the controller; nothing else in it drives the controller directly
    ("broker", "controller"): ({"praha.broker.server"}, None),
    # the Spark source and sink are clients: they speak the wire protocol (and read records) and nothing else
    ("spark", "protocol"): (None,
                            {"praha.protocol.client", "praha.protocol.errors",
                             "praha.protocol",
                                   # TLS and SASL of the reader's connections (kafka.security.protocol, kafka.sasl.*)
                                   "praha.protocol.client_security",
                                   # the generated messages it sends and reads (Metadata, ListOffsets, Fetch)
                                   "praha.protocol.messages.gen.metadata",
                                   "praha.protocol.messages.gen.produce_fetch"}),
}

#: the broker's rooms (its subpackages) -> the rooms each may import. The hall (modules directly
#: in praha/broker: server, metrics, dynamic config, ...) wires the rooms together and may import
#: any of them; no room imports the hall. docs/architecture.md shows the same table.
BROKER_ROOMS: dict[str, set[str]] = {
    "handlers": {"network", "replication", "share", "quotas"},
    "network": {"quotas"},
    "share": {"replication"},
    "replication": {"quotas"},
    "quotas": set(),
}

#: packages whose modules must not import each other in a cycle
NO_MODULE_CYCLES = ("controller", "broker", "cli", "protocol", "coordinator", "zk", "log")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "praha"


def _imports() -> dict[str, set[str]]:
    """module -> praha modules it imports (a `from praha.x import name` also counts
    `praha.x.name` when that is a module)."""
    modules = {_module_name(p): p for p in PRAHA.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for mod, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for t in targets:
                if t.startswith("praha") and t in modules and t != mod:
                    graph[mod].add(t)
        graph.setdefault(mod, set())
    return graph


@functools.cache
def graph() -> dict[str, set[str]]:
    """The import graph, parsed on first use: every xdist worker imports this module while
    collecting, and only the one that runs it should pay for parsing all of praha."""
    return _imports()


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(edges):
        if v not in index:
            visit(v)
    return found


def test_every_package_is_in_the_table():
    packages = {_package(m) for m in graph()}
    assert packages <= set(ALLOWED), f"add these to ALLOWED (and docs/architecture.md): {packages - set(ALLOWED)}"


def test_packages_import_only_what_the_table_allows():
    wrong = sorted(
        f"{mod} imports {dst}"
        for mod, targets in graph().items()
        for dst in targets
        if _package(dst) != _package(mod) and _package(dst) not in ALLOWED.get(_package(mod), set())
    )
    assert not wrong, "imports against the layering table:\n" + "\n".join(wrong)


def test_no_cycle_between_packages():
    edges: dict[str, set[str]] = defaultdict(set)
    for mod, targets in graph().items():
        edges[_package(mod)] |= {_package(t) for t in targets if _package(t) != _package(mod)}
    assert not _cycles(edges)


@pytest.mark.parametrize("package", NO_MODULE_CYCLES)
def test_no_cycle_between_modules_of(package):
    inside = {m: {t for t in ts if _package(t) == package and not _is_package_init(t)}
              for m, ts in graph().items() if _package(m) == package and not _is_package_init(m)}
    assert not _cycles(inside)


def _is_package_init(module: str) -> bool:
    return (ROOT / Path(*module.split(".")) / "__init__.py").exists()


@pytest.mark.parametrize(("src", "dst"), sorted(ONLY_THROUGH))
def test_narrow_crossings(src, dst):
    importers, imported = ONLY_THROUGH[(src, dst)]
    wrong = sorted(
        f"{mod} imports {t}"
        for mod, targets in graph().items() if _package(mod) == src
        for t in targets if _package(t) == dst
        and ((importers is not None and mod not in importers) or (imported is not None and t not in imported))
    )
    assert not wrong


def _room(module: str) -> str | None:
    """The broker room a module lives in; "" for the hall; None outside the broker."""
    parts = module.split(".")
    if parts[:2] != ["praha", "broker"]:
        return None
    return parts[2] if len(parts) > 3 or (len(parts) == 3 and _is_package_init(module)) else ""


def test_every_broker_room_is_in_the_table():
    rooms = {r for m in graph() if (r := _room(m))}
    assert rooms == set(BROKER_ROOMS), f"rooms on disk {sorted(rooms)}, table {sorted(BROKER_ROOMS)}"


def test_broker_rooms_import_only_what_the_table_allows():
    wrong = sorted(
        f"{mod} imports {dst}"
        for mod, targets in graph().items() if _room(mod)
        for dst in targets
        if (room := _room(dst)) is not None and room != _room(mod) and room not in BROKER_ROOMS[_room(mod) or ""]
    )
    assert not wrong, "imports against the broker's rooms table (a room never imports the hall):\n" + "\n".join(wrong)


def test_architecture_doc_shows_the_broker_rooms():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    for room, allowed in BROKER_ROOMS.items():
        line = next((ln for ln in doc.splitlines() if ln.startswith(f"| `broker/{room}/` |")), None)
        assert line is not None, f"docs/architecture.md has no row for broker/{room}/"
        named = {w.strip("` ").removeprefix("broker/").rstrip("/") for w in line.split("|")[3].split(",") if w.strip()}
        assert named == allowed, f"broker/{room}/: doc says {sorted(named)}, table says {sorted(allowed)}"


def test_architecture_doc_shows_the_table():
    """docs/architecture.md carries the same arrows, so the prose cannot drift from the rule."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    for package, allowed in ALLOWED.items():
        if package in ("praha", "__main__"):
            continue
        line = next((ln for ln in doc.splitlines() if ln.startswith(f"| `{package}` |")), None)
        assert line is not None, f"docs/architecture.md has no row for {package}"
        named = {w.strip("` ") for w in line.split("|")[3].split(",") if w.strip()}
        assert named == allowed, f"{package}: doc says {sorted(named)}, table says {sorted(allowed)}"


def test_test_module_names_are_unique():
    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert not [n for n, c in names.items() if c > 1]


def _uses_of_any(tree: ast.AST) -> list[int]:
    """Lines naming `typing.Any`: as a name, an attribute, an import, or inside a quoted annotation."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "Any" or isinstance(node, ast.Attribute) and node.attr == "Any":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "Any" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "Any" in node.value:
            try:  # a quoted annotation ("list[Any]"); prose in a docstring does not parse
                quoted = ast.parse(node.value, mode="eval")
            except SyntaxError:
                continue
            lines.extend(node.lineno for _ in _uses_of_any(quoted))
    return lines


def test_the_handlers_use_no_any():
    """Handlers take and return the generated message classes (praha/protocol/messages/gen),
    which cover every version of their API, so nothing in `broker/handlers/` needs `Any`;
    mypy then checks every field a handler reads or answers. No allowlist: a handler that
    needs several messages' shapes names them in a Protocol (see `group._TopicToCommit`)."""
    found = [f"{path.relative_to(ROOT)}:{line}"
             for path in sorted((PRAHA / "broker" / "handlers").rglob("*.py"))
             for line in _uses_of_any(ast.parse(path.read_text(), str(path)))]
    assert not found, "typing.Any in the handlers:\n" + "\n".join(found)


def test_the_framing_uses_no_any():
    """`protocol/framing.py` frames and unframes every request and response: it gives the
    generated message class it was asked for (issue 21), so callers keep their types."""
    path = PRAHA / "protocol" / "framing.py"
    found = list(_uses_of_any(ast.parse(path.read_text(), str(path))))
    assert not found, f"typing.Any in protocol/framing.py at lines {found}"


def test_no_kafka_protocol_import_under_praha():
    """The wire format is praha's own (`protocol/messages/`): kafka-python's codecs
    (`kafka.protocol`) stay an independent client in the tests, never a part of praha,
    lazily imported or not."""
    found = []
    for path in sorted(PRAHA.rglob("*.py")):
        source = path.read_text()
        if "kafka.protocol" not in source and "from kafka import" not in source:
            continue  # parsing every file (the generated codecs are large) costs seconds
        for node in ast.walk(ast.parse(source, str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)] \
                if isinstance(node, ast.ImportFrom) else []
            if any(n == "kafka.protocol" or n.startswith("kafka.protocol.") for n in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, "kafka.protocol imported under praha/:\n" + "\n".join(found)


def test_the_any_check_sees_every_spelling():
    """The check above would fail on each way `Any` can be written."""
    spellings = ("from typing import Any", "x: Any = 1", "import typing\nx: typing.Any", 'def f() -> "list[Any]": ...')
    for source in spellings:
        assert _uses_of_any(ast.parse(source)), source
    assert not _uses_of_any(ast.parse('"""Any answer the API has."""\nx: int = 1'))
