"""JSON Schema: parsing, canonical forms, and compatibility as Confluent defines it for
JSON Schema: a reader schema is compatible with a writer schema when every document the
writer's schema accepts is accepted by the reader's. The content model decides what an
absent property means: an open model (`additionalProperties` absent or true) lets the
writer put any property there, a closed one (`additionalProperties: false`) none."""
from __future__ import annotations

import json
from typing import Any

import jsonschema

from praha.registry.errors import invalid_schema

_BOUNDS_UP = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")  # reader may not lower
_BOUNDS_DOWN = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")  # reader may not raise


class JsonSchema:
    def __init__(self, text: str, references: list[str]):
        try:
            self.raw = json.loads(text)
        except ValueError as e:
            raise invalid_schema(f"not JSON: {e}") from e
        if not isinstance(self.raw, (dict, bool)):
            raise invalid_schema("a JSON schema is an object or a boolean")
        try:
            jsonschema.validators.validator_for(self.raw).check_schema(self.raw)
        except jsonschema.SchemaError as e:
            raise invalid_schema(f"{e.message} at {'/'.join(map(str, e.path)) or '/'}") from e
        self.references = [json.loads(r) for r in references]

    def canonical(self) -> str:
        return json.dumps(self.raw, separators=(",", ":"))

    def normalized(self) -> str:
        """Key order does not count in JSON Schema."""
        return json.dumps(self.raw, separators=(",", ":"), sort_keys=True)

    def resolve(self, node: Any) -> Any:
        """A local `$ref` (`#/definitions/X`, `#/$defs/X`) replaced by its target."""
        seen = 0
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#") \
                and seen < 32:
            target: Any = self.raw
            for part in node["$ref"].lstrip("#").strip("/").split("/"):
                if not part:
                    continue
                if not isinstance(target, dict) or part not in target:
                    return node
                target = target[part]
            node, seen = target, seen + 1
        return node


def _types(s: dict[str, Any]) -> set[str] | None:
    t = s.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


class _Checker:
    def __init__(self, reader: JsonSchema, writer: JsonSchema):
        self.reader, self.writer = reader, writer
        self.problems: list[str] = []
        self.depth = 0

    def fail(self, path: str, message: str) -> None:
        self.problems.append(f"{path or '#'}: {message}")

    def check(self, r: Any, w: Any, path: str) -> None:
        r, w = self.reader.resolve(r), self.writer.resolve(w)
        self.depth += 1
        try:
            if self.depth > 64:
                return
            self._check(r, w, path)
        finally:
            self.depth -= 1

    def _check(self, r: Any, w: Any, path: str) -> None:
        if r is True or r == {}:
            return  # the reader accepts anything
        if w is False:
            return  # the writer accepts nothing
        if r is False:
            return self.fail(path, "the reader accepts nothing")
        if w is True:
            w = {}
        rt, wt = _types(r), _types(w)
        if rt is not None:
            widened = rt | ({"integer"} if "number" in rt else set())
            if wt is None:
                self.fail(path, f"the writer accepts any type, the reader only {sorted(rt)}")
            elif not wt <= widened:
                self.fail(path, f"type narrowed from {sorted(wt)} to {sorted(rt)}")
        for key in _BOUNDS_UP:
            if key in r and (key not in w or w[key] > r[key]):
                self.fail(path, f"{key} lowered to {r[key]}")
        for key in _BOUNDS_DOWN:
            if key in r and (key not in w or w[key] < r[key]):
                self.fail(path, f"{key} raised to {r[key]}")
        for key in ("pattern", "format", "multipleOf", "const"):
            if key in r and r.get(key) != w.get(key):
                self.fail(path, f"{key} changed to {r[key]!r}")
        if "enum" in r:
            if "enum" not in w:
                self.fail(path, "enum added")
            else:
                missing = [v for v in w["enum"] if v not in r["enum"]]
                if missing:
                    self.fail(path, f"enum values removed: {missing}")
        if "items" in r or "items" in w:
            ri, wi = r.get("items", True), w.get("items", True)
            if isinstance(ri, (dict, bool)) and isinstance(wi, (dict, bool)):
                self.check(ri, wi, f"{path}/items")
        if rt is None or "object" in rt or "properties" in r or "properties" in w:
            self._object(r, w, path)

    def _object(self, r: dict[str, Any], w: dict[str, Any], path: str) -> None:
        rprops, wprops = r.get("properties", {}), w.get("properties", {})
        radd, wadd = r.get("additionalProperties", True), w.get("additionalProperties", True)
        for name, rp in rprops.items():
            p = f"{path}/properties/{name}"
            if name in wprops:
                self.check(rp, wprops[name], p)
            elif wadd is False:
                pass  # the writer never wrote it: a property added to a closed model
            else:  # the writer may have written anything under that name
                self.check(rp, wadd, p) if isinstance(wadd, dict) and wadd else (
                    None if rp is True or rp == {} else self.fail(p, "property added to an open content model"))
        for name, wp in wprops.items():
            if name in rprops:
                continue
            p = f"{path}/properties/{name}"
            if radd is False:
                self.fail(p, "property removed from a closed content model")
            elif isinstance(radd, dict):
                self.check(radd, wp, p)
        if radd is False and wadd is not False:
            self.fail(path, "additionalProperties closed: the writer's open model may have written any property")
        elif isinstance(radd, dict) and radd and wadd is not False:
            self.check(radd, wadd if isinstance(wadd, dict) else {}, f"{path}/additionalProperties")
        added = [n for n in r.get("required", []) if n not in w.get("required", [])]
        for name in added:
            if "default" not in (rprops.get(name) or {}):
                self.fail(f"{path}/required", f"required property {name} added")


def reader_accepts(reader: JsonSchema, writer: JsonSchema) -> list[str]:
    """[] when every document `writer` accepts is accepted by `reader`."""
    checker = _Checker(reader, writer)
    checker.check(reader.raw, writer.raw, "")
    return checker.problems
