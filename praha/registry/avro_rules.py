"""Avro: parsing, canonical forms, and schema resolution (the Avro specification's
"Schema Resolution" section) as the compatibility rule: can a reader schema read what a
writer schema wrote?"""
from __future__ import annotations

import json
from typing import Any

import fastavro
from fastavro.schema import to_parsing_canonical_form

from praha.registry.errors import invalid_schema

PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
#: writer type -> reader types it is promoted to (the specification's list)
PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
              "string": {"bytes"}, "bytes": {"string"}}


class AvroSchema:
    """A parsed Avro schema with its named types (its references' too)."""

    def __init__(self, text: str, references: list[str]):
        named: dict[str, Any] = {}
        try:
            for ref in references:
                fastavro.parse_schema(json.loads(ref), named_schemas=named, _write_hint=False)
            self.raw = json.loads(text)
            _check_attributes(self.raw)
            self.parsed = fastavro.parse_schema(self.raw, named_schemas=named, _write_hint=False)
        except (ValueError, TypeError, KeyError, AttributeError) as e:  # JSONDecodeError is a ValueError
            raise invalid_schema(f"{type(e).__name__}: {e}") from e
        except Exception as e:  # noqa: BLE001 - fastavro's own SchemaParseException / UnknownType
            raise invalid_schema(f"{type(e).__name__}: {e}") from e
        self.named = named

    def canonical(self) -> str:
        """As registered (whitespace does not count): the same text registered twice gets one id."""
        return json.dumps(self.raw, separators=(",", ":"))

    def normalized(self) -> str:
        """The specification's Parsing Canonical Form (`normalize=true`)."""
        return str(to_parsing_canonical_form(self.parsed))


#: attributes the specification requires of each complex type (fastavro lets some go)
REQUIRED = {"record": ("name", "fields"), "error": ("name", "fields"), "enum": ("name", "symbols"),
            "fixed": ("name", "size"), "array": ("items",), "map": ("values",)}


def _check_attributes(node: Any) -> None:
    if isinstance(node, list):
        for branch in node:
            _check_attributes(branch)
    elif isinstance(node, dict):
        kind = node.get("type")
        missing = [a for a in REQUIRED.get(kind, ()) if a not in node] if isinstance(kind, str) else []
        if missing:
            raise ValueError(f"a {kind} needs {', '.join(missing)}")
        if kind in ("record", "error"):
            if not isinstance(node["fields"], list):
                raise ValueError("a record's fields must be a list")
            for f in node["fields"]:
                if not isinstance(f, dict) or "name" not in f or "type" not in f:
                    raise ValueError(f"a field needs a name and a type: {f!r}")
                _check_attributes(f["type"])
        elif kind in ("array", "map"):
            _check_attributes(node["items" if kind == "array" else "values"])
        elif not isinstance(kind, str):
            _check_attributes(kind)


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class _Resolver:
    def __init__(self, reader: AvroSchema, writer: AvroSchema):
        self.rnamed, self.wnamed = reader.named, writer.named
        self.assumed: set[tuple[str, str]] = set()
        self.problems: list[str] = []

    def _deref(self, s: Any, named: dict[str, Any]) -> Any:
        if isinstance(s, str) and s not in PRIMITIVES:
            return named.get(s, s)
        return s

    @staticmethod
    def _kind(s: Any) -> str:
        if isinstance(s, list):
            return "union"
        if isinstance(s, dict):
            return str(s["type"]) if s["type"] in ("record", "error", "enum", "fixed", "array", "map") \
                else _Resolver._kind(s["type"])
        return str(s)

    def check(self, r: Any, w: Any, path: str) -> bool:
        r, w = self._deref(r, self.rnamed), self._deref(w, self.wnamed)
        rk, wk = self._kind(r), self._kind(w)
        if isinstance(r, dict) and rk in PRIMITIVES:
            r = r["type"]
        if isinstance(w, dict) and wk in PRIMITIVES:
            w = w["type"]
        if wk == "union":  # every branch the writer may have written must be readable
            return all([self.check(r, branch, path) for branch in w])
        if rk == "union":  # the writer's type must match one of the reader's branches
            saved = list(self.problems)
            for branch in r:
                self.problems = []
                if self.check(branch, w, path):
                    self.problems = saved
                    return True
            self.problems = saved + [f"{path}: reader's union has no branch for the writer's {wk}"]
            return False
        if rk in PRIMITIVES or wk in PRIMITIVES:
            if rk == wk or rk in PROMOTIONS.get(wk, set()):
                return True
            return self._fail(path, f"the writer's {wk} cannot be read as {rk}")
        if rk != wk and not (rk in ("record", "error") and wk in ("record", "error")):
            return self._fail(path, f"the writer's {wk} cannot be read as {rk}")
        if rk in ("record", "error", "enum", "fixed") and not self._names_match(r, w):
            return self._fail(path, f"name mismatch: the reader expects {r['name']}, the writer wrote {w['name']}")
        if rk == "array":
            return self.check(r["items"], w["items"], f"{path}/items")
        if rk == "map":
            return self.check(r["values"], w["values"], f"{path}/values")
        if rk == "fixed":
            return r["size"] == w["size"] or self._fail(path, f"fixed size {w['size']} read as {r['size']}")
        if rk == "enum":
            missing = [s for s in w["symbols"] if s not in r["symbols"]]
            if missing and "default" not in r:
                return self._fail(path, f"the reader's enum {r['name']} lacks symbols {missing} and has no default")
            return True
        return self._record(r, w, path)

    def _names_match(self, r: dict[str, Any], w: dict[str, Any]) -> bool:
        if _short(r["name"]) == _short(w["name"]):
            return True
        return any(_short(a) == _short(w["name"]) for a in r.get("aliases", []))

    def _record(self, r: dict[str, Any], w: dict[str, Any], path: str) -> bool:
        pair = (r["name"], w["name"])
        if pair in self.assumed:  # a recursive type: assume it holds while checking it
            return True
        self.assumed.add(pair)
        wfields = {f["name"]: f for f in w["fields"]}
        ok = True
        for f in r["fields"]:
            names = [f["name"], *f.get("aliases", [])]
            wf = next((wfields[n] for n in names if n in wfields), None)
            if wf is None:
                if "default" not in f:
                    ok = self._fail(f"{path}/{f['name']}", f"the reader's field {f['name']} is missing from the "
                                                           "writer's record and has no default")
                continue
            ok = self.check(f["type"], wf["type"], f"{path}/{f['name']}") and ok
        return ok

    def _fail(self, path: str, message: str) -> bool:
        self.problems.append(f"{path or '/'}: {message}")
        return False


def can_read(reader: AvroSchema, writer: AvroSchema) -> list[str]:
    """[] when `reader` reads everything `writer` writes; otherwise what stops it."""
    resolver = _Resolver(reader, writer)
    resolver.check(reader.parsed, writer.parsed, "")
    return resolver.problems
