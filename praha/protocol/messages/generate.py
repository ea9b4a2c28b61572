"""Generate the typed codecs in `gen/` from the definitions (`*.wire`): `make wire`.

One module per `.wire` file; per message a dataclass (its structs nested in it, named as in
Kafka's definitions, fields in snake_case) and, per version, one encoder and one decoder
function of straight code: consecutive fixed-width fields are packed with one
`struct.Struct`, compact or classic lengths and nullability are decided here, not at run
time. Versions whose code is the same share a function. The output is committed;
`tests/unit/protocol/test_wire_generated.py` fails when it differs from a fresh generation.

    python -m praha.protocol.messages.generate [--check]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from praha.protocol.messages.definition import HERE, Api, Field, Message, load_all

GEN = HERE / "gen"
_FIXED = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q",
          "float64": "d", "uuid": "16s"}
_SIZES = {"?": 1, "b": 1, "h": 2, "H": 2, "i": 4, "q": 8, "d": 8, "16s": 16}
_PYTYPE = {"bool": "bool", "int8": "int", "int16": "int", "uint16": "int", "int32": "int", "int64": "int",
           "float64": "float", "string": "str", "bytes": "bytes", "records": "bytes", "uuid": "uuid.UUID"}


@dataclass
class Node:
    """A message or one of its structs: its class name, its code id, its fields."""

    cls: str  # the name in its enclosing class
    ident: str  # unique in the module: functions are _e_<ident>_<n> / _d_<ident>_<n>
    fields: list[Field]
    children: dict[str, Node] = field(default_factory=dict)  # struct type → node, this scope
    child_of: dict[str, Node] = field(default_factory=dict)  # field name → node


def _build(cls: str, ident: str, fields: list[Field], shared: tuple[str, ...] = (),
           root: Node | None = None) -> Node:
    """The class tree: a struct is nested where it is used, a shared one in the message's class."""
    node = Node(cls, ident, fields)
    top = root or node
    for f in fields:
        if f.is_struct:
            scope = top if f.element in shared else node
            child = scope.children.get(f.element)
            if child is None:
                child = _build(f.element, f"{scope.ident}_{f.element}", f.fields, shared, top)
                scope.children[f.element] = child
            node.child_of[f.name] = child
    return node


def _nullable_anywhere(f: Field) -> bool:
    return f.nullable.lo <= min(f.nullable.hi, f.versions.hi) and f.nullable.hi >= f.versions.lo or f.default == "null"


def _annotation(f: Field, struct_name: str) -> str:
    inner = struct_name if f.is_struct else _PYTYPE[f.element]
    t = f"list[{inner}]" if f.is_array else inner
    # a uuid may be given as None: the zero id (kafka-python's leniency, which handlers use)
    return f"{t} | None" if _nullable_anywhere(f) or f.type in ("records", "uuid") else t


def _factory(f: Field, struct_name: str) -> str | None:
    """What makes a field's default when it must be a fresh value per instance (a list or a
    struct), None when the default is a plain expression (`_value`)."""
    if f.default == "null" or (f.type == "records" and f.default is None):
        return None
    if f.is_array:
        return "list"
    if f.is_struct:
        return struct_name
    return None


def _value(f: Field) -> str:
    """The default as a plain expression (tagged-field comparisons, absent fields)."""
    if f.default == "null" or (f.type == "records" and f.default is None):
        return "None"
    if f.is_array:
        return "[]"
    if f.is_struct:
        return "_NEW"  # replaced by the caller with the struct's constructor
    d = f.default
    t = f.type
    if t == "bool":
        return "True" if d == "true" else "False"
    if t in ("string",):
        return repr(d or "")
    if t in ("bytes",):
        return "b''"
    if t == "uuid":
        return "ZERO_UUID"
    if t == "float64":
        return repr(float(d or 0))
    return str(int(d, 0)) if d else "0"


class Module:
    """One generated module's text, built message by message."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.structs: dict[str, str] = {}  # format → constant name
        self.body: list[str] = []
        self.funcs: dict[str, str] = {}  # function text (name-free) → name

    def packer(self, fmt: str) -> str:
        if fmt not in self.structs:
            self.structs[fmt] = f"_S{len(self.structs)}"
        return self.structs[fmt]

    def func(self, prefix: str, ident: str, version: int, signature: str, lines: list[str]) -> str:
        """Name of a function with this body: an earlier identical one is reused."""
        text = "\n".join(lines)
        key = f"{prefix}{ident}|{text}"
        name = self.funcs.get(key)
        if name is None:
            name = f"{prefix}{ident}_v{version}"
            self.funcs[key] = name
            self.body.append(f"def {name}{signature}:")
            self.body += [f"    {ln}" for ln in lines]
            self.body.append("")
            self.body.append("")
        return name

    # --- classes -------------------------------------------------------------------------

    def class_lines(self, node: Node, indent: str, msg: Message | None, qual: str) -> list[str]:
        base = "(WireMessage)" if msg is not None else "(WireStruct)"
        out = [f"{indent}class {node.cls}{base}:"]
        inner = indent + "    "
        out.append(f"{inner}__slots__ = ({''.join(repr(f.name) + ', ' for f in node.fields)})")
        if msg is not None:
            flex = msg.flexible.lo if msg.flexible.lo <= msg.flexible.hi else 32767
            out += [f"{inner}API_KEY: ClassVar[int] = {msg.api_key}",
                    f"{inner}MIN_VERSION: ClassVar[int] = {msg.versions.lo}",
                    f"{inner}MAX_VERSION: ClassVar[int] = {msg.versions.hi}",
                    f"{inner}FLEXIBLE_FROM: ClassVar[int] = {flex}", ""]
        for child in node.children.values():
            if child.ident in self._module_level:
                out.append(f"{inner}{child.cls} = {self._quals[child.ident]}")
            else:
                out += self.class_lines(child, inner, None, f"{qual}.{child.cls}")
            out.append("")
        # a shared struct is also reachable from every struct that uses it (as kafka-python nests it)
        own = {c.ident for c in node.children.values()}
        aliased = {c.ident: c for c in node.child_of.values() if c.ident in self._module_level and c.ident not in own}
        for used in aliased.values():
            out += [f"{inner}{used.cls} = {self._quals[used.ident]}", ""]
        params, assigns = ["self"], []
        for f in node.fields:
            ref, full = "", ""
            if f.is_struct:
                child = node.child_of[f.name]
                ref = self._quals[child.ident] if child.ident in self._module_level else child.cls
                full = self._quals[child.ident] if child.ident in self._module_level else f"{qual}.{child.cls}"
            out.append(f"{inner}{f.name}: {_annotation(f, ref)}")
            make = _factory(f, full)
            if make is not None:
                params.append(f"{f.name}: {_annotation(f, ref)} = _FACTORY")
                assigns.append(f"self.{f.name} = {make}() if {f.name} is _FACTORY else {f.name}")
            else:
                params.append(f"{f.name}: {_annotation(f, ref)} = {_value(f)}")
                assigns.append(f"self.{f.name} = {f.name}")
        # written out rather than made by @dataclass at import: every broker, tool and client
        # process imports every message class, and the decorator's runtime code generation
        # cost about 0.3 CPU-seconds per process (equality and repr: WireStruct)
        out += ["", f"{inner}def __init__({', '.join(params)}) -> None:"]
        out += [f"{inner}    {a}" for a in assigns] or [f"{inner}    pass"]
        return out

    # --- encoders ------------------------------------------------------------------------

    def write(self, node: Node, f: Field, v: int, flex: bool, val: str, out: str, depth: int) -> list[str]:
        """Lines writing the value `val` of field f to bytearray `out`."""
        t = f.element
        if f.is_array:
            e = f"e{depth}"
            lines = [f"xs{depth} = {val}"]
            if flex:
                lines += [f"if xs{depth} is None:", f"    {out} += b'\\x00'", "else:",
                          f"    {out} += uvarint(len(xs{depth}) + 1)"]
            else:
                lines += [f"if xs{depth} is None:", f"    {out} += b'\\xff\\xff\\xff\\xff'", "else:",
                          f"    {out} += I32.pack(len(xs{depth}))"]
            if t in _FIXED and t != "uuid":
                lines.append(f"    {out} += _pack(f'>{{len(xs{depth})}}{_FIXED[t]}', *xs{depth})")
            else:
                lines.append(f"    for {e} in xs{depth}:")
                lines += [f"        {ln}" for ln in self.write_one(node, f, t, v, flex, e, out, depth + 1)]
            return lines
        if f.is_struct and f.nullable_at(v):
            return [f"if {val} is None:", f"    {out} += b'\\xff'", "else:",
                    f"    {out} += b'\\x01'"] + [
                f"    {ln}" for ln in self.write_one(node, f, t, v, flex, val, out, depth)]
        return self.write_one(node, f, t, v, flex, val, out, depth)

    def write_one(self, node: Node, f: Field, t: str, v: int, flex: bool, val: str, out: str,
                  depth: int) -> list[str]:
        if t in _FIXED:
            if t == "uuid":
                return [f"{out} += uuid_bytes({val})"]
            return [f"{out} += {self.packer('>' + _FIXED[t])}.pack({val})"]
        if t == "string":
            return [f"write_{'compact_' if flex else ''}string({out}, {val})"]
        if t in ("bytes", "records"):
            return [f"write_{'compact_' if flex else ''}bytes({out}, {val})"]
        child_node = node.child_of[f.name]
        child, qual = self.encoder(child_node, v, flex), self._quals[child_node.ident]
        # a plain tuple in field order is accepted too, as kafka-python did
        return [f"{child}({val} if {val}.__class__ is {qual} else {qual}(*{val}), {out})"]

    def encoder(self, node: Node, v: int, flex: bool) -> str:
        lines: list[str] = []
        run: list[Field] = []

        def flush() -> None:
            if run:
                fmt = ">" + "".join(_FIXED[f.type] for f in run)
                vals = ", ".join(f"uuid_bytes(o.{f.name})" if f.type == "uuid" else f"o.{f.name}" for f in run)
                lines.append(f"out += {self.packer(fmt)}.pack({vals})")
                run.clear()

        present = [f for f in node.fields if v in f.versions]
        for f in present:
            if f.tagged_at(v):
                continue
            if f.type in _FIXED:
                run.append(f)
                continue
            flush()
            lines += self.write(node, f, v, flex, f"o.{f.name}", "out", 0)
        flush()
        if flex:
            tagged = sorted((f for f in present if f.tagged_at(v)), key=lambda f: f.tag or 0)
            if not tagged:
                lines.append("out += b'\\x00'")
            else:
                lines.append("tg: list[tuple[int, bytearray]] = []")
                for f in tagged:
                    dflt = _value(f)
                    if f.is_struct and not f.is_array and dflt == "_NEW":
                        cond = f"o.{f.name} != {self.qualname(node, f)}()"
                    elif f.is_array and dflt == "[]":
                        cond = f"o.{f.name}"
                    else:
                        cond = f"o.{f.name} != {dflt}"
                    lines += [f"if {cond}:", "    t = bytearray()"]
                    lines += [f"    {ln}" for ln in self.write(node, f, v, flex, f"o.{f.name}", "t", 0)]
                    lines.append(f"    tg.append(({f.tag}, t))")
                lines.append("write_tagged(out, tg)")
        if not lines:
            lines.append("pass")
        return self.func("_e_", node.ident, v, "(o: Any, out: bytearray) -> None", lines)

    def qualname(self, node: Node, f: Field) -> str:
        return self._quals[node.child_of[f.name].ident]

    # --- decoders ------------------------------------------------------------------------

    def read(self, node: Node, f: Field, v: int, flex: bool, var: str, depth: int) -> list[str]:
        """Lines reading field f into `var`, advancing `p`."""
        t = f.element
        nullable = f.nullable_at(v)
        if f.is_array:
            n = f"n{depth}"
            lines = [f"{n}, p = read_{'compact_' if flex else ''}count(b, p)", f"if {n} < 0:"]
            lines.append(f"    {var} = None" if nullable else f"    raise null_field({f.name!r})")
            lines.append("else:")
            if t in _FIXED and t != "uuid":
                size = _SIZES[_FIXED[t]]
                lines += [f"    {var} = list(_unpack_from(f'>{{{n}}}{_FIXED[t]}', b, p))", f"    p += {size} * {n}"]
            else:
                e = f"e{depth}"
                lines += [f"    {var} = []", f"    for _ in range({n}):"]
                lines += [f"        {ln}" for ln in self.read_one(node, f, t, v, flex, e, depth + 1, True)]
                lines.append(f"        {var}.append({e})")
            return lines
        if f.is_struct and nullable:
            child = self.decoder(node.child_of[f.name], v, flex)
            return ["if b[p] == 255:", "    p += 1", f"    {var} = None", "else:",
                    f"    {var}, p = {child}(b, p + 1)"]
        return self.read_one(node, f, t, v, flex, var, depth, nullable)

    def read_one(self, node: Node, f: Field, t: str, v: int, flex: bool, var: str, depth: int,
                 nullable: bool) -> list[str]:
        if t in _FIXED:
            fmt = _FIXED[t]
            if t == "uuid":
                return [f"{var} = _uuid(bytes=bytes(b[p:p + 16]))", "p += 16"]
            return [f"({var},) = {self.packer('>' + fmt)}.unpack_from(b, p)", f"p += {_SIZES[fmt]}"]
        if t == "string":
            lines = [f"{var}, p = read_{'compact_' if flex else ''}string(b, p)"]
        elif t in ("bytes", "records"):
            lines = [f"{var}, p = read_{'compact_' if flex else ''}bytes(b, p)"]
        else:
            return [f"{var}, p = {self.decoder(node.child_of[f.name], v, flex)}(b, p)"]
        if not nullable and t != "records":
            lines += [f"if {var} is None:", f"    raise null_field({f.name!r})"]
        return lines

    def decoder(self, node: Node, v: int, flex: bool) -> str:
        lines: list[str] = []
        names = {f.name: f"f{i}" for i, f in enumerate(node.fields)}
        run: list[Field] = []

        def flush() -> None:
            if run:
                fmt = ">" + "".join(_FIXED[f.type] for f in run)
                lhs = ", ".join(names[f.name] for f in run) + ("," if len(run) == 1 else "")
                lines.append(f"{lhs} = {self.packer(fmt)}.unpack_from(b, p)")
                lines.append(f"p += {sum(_SIZES[_FIXED[f.type]] for f in run)}")
                for f in run:
                    if f.type == "uuid":
                        lines.append(f"{names[f.name]} = _uuid(bytes={names[f.name]})")
                run.clear()

        for f in node.fields:
            if v not in f.versions or f.tagged_at(v):
                dflt = _value(f)
                if dflt == "_NEW":
                    dflt = f"{self._quals[node.child_of[f.name].ident]}()"
                lines.append(f"{names[f.name]} = {dflt}")
                continue
            if f.type in _FIXED:
                run.append(f)
                continue
            flush()
            lines += self.read(node, f, v, flex, names[f.name], 0)
        flush()
        if flex:
            tagged = [f for f in node.fields if f.tagged_at(v)]
            if not tagged:
                lines.append("p = skip_tagged(b, p)")
            else:
                lines += ["nt, p = read_uvarint(b, p)", "for _ in range(nt):",
                          "    tag, p = read_uvarint(b, p)", "    size, p = read_uvarint(b, p)",
                          "    end = p + size", "    if end > len(b):",
                          "        raise WireFormatError('tagged field past the end')"]
                for i, f in enumerate(tagged):
                    lines.append(f"    {'if' if i == 0 else 'elif'} tag == {f.tag}:")
                    lines += [f"        {ln}" for ln in self.read(node, f, v, flex, names[f.name], 0)]
                lines.append("    p = end")
        args = ", ".join(names[f.name] for f in node.fields)
        lines.append(f"return {self._quals[node.ident]}({args}), p")
        return self.func("_d_", node.ident, v, "(b: Any, p: int) -> tuple[Any, int]", lines)

    # --- a whole message -----------------------------------------------------------------

    def message(self, msg: Message) -> None:
        root = _build(msg.name, msg.name, msg.fields, msg.shared)
        self._quals: dict[str, str] = {}
        # shared structs are module-level classes (their users nest at any depth), aliased in the message
        self._module_level = {c.ident for c in root.children.values() if c.cls in msg.shared}

        def quals(node: Node, qual: str) -> None:
            self._quals[node.ident] = qual
            for child in node.children.values():
                quals(child, f"{msg.name}_{child.cls}" if child.ident in self._module_level else f"{qual}.{child.cls}")
        quals(root, msg.name)
        done: set[str] = set()

        def shared_first(node: Node) -> None:
            for child in node.children.values():
                shared_first(child)
            for f in node.fields:
                used = node.child_of.get(f.name)
                if used is not None and used.ident in self._module_level and used.ident not in done:
                    done.add(used.ident)
                    shared_first(used)
                    saved, used.cls = used.cls, self._quals[used.ident]
                    self.body += self.class_lines(used, "", None, used.cls) + ["", ""]
                    used.cls = saved
        shared_first(root)
        self.body += self.class_lines(root, "", msg, msg.name)
        self.body += ["", ""]
        encs, decs = [], []
        for v in range(msg.versions.lo, msg.versions.hi + 1):
            flex = msg.is_flexible(v)
            encs.append(self.encoder(root, v, flex))
            decs.append(self.decoder(root, v, flex))
        self.body.append(f"{msg.name}._ENCODERS = ({', '.join(encs)},)")
        self.body.append(f"{msg.name}._DECODERS = ({', '.join(decs)},)")
        self.body += ["", ""]

    def text(self, apis: list[Api]) -> str:
        head = [
            f'"""Generated by praha/protocol/messages/generate.py from {self.source}: do not edit (make wire)."""',
            "# ruff: noqa",
            "# mypy: ignore-errors",
            "from __future__ import annotations",
            "",
            "import struct",
            "import uuid",
            "from praha.protocol.messages.runtime import FACTORY as _FACTORY",
            "from struct import pack as _pack",
            "from struct import unpack_from as _unpack_from",
            "from typing import Any, ClassVar",
            "from uuid import UUID as _uuid",
            "",
            "from praha.protocol.messages.runtime import (",
            "    I32, ZERO_UUID, WireFormatError, WireMessage, WireStruct, null_field, read_bytes, read_compact_bytes,",
            "    read_compact_count, read_compact_string, read_count, read_string, read_uvarint, skip_tagged,",
            "    uuid_bytes, uvarint, write_bytes, write_compact_bytes, write_compact_string, write_string,"
            " write_tagged,",
            ")",
            "",
        ]
        consts = [f"{name} = struct.Struct({fmt!r})" for fmt, name in self.structs.items()]
        names = [m.name for a in apis for m in (a.request, a.response)]
        tail = ["__all__ = [" + ", ".join(repr(n) for n in names) + "]", ""]
        return "\n".join(head + consts + ["", ""] + self.body + tail)


def generate() -> dict[Path, str]:
    """Every generated file's path and text."""
    by_source: dict[str, list[Api]] = {}
    for api in load_all().values():
        by_source.setdefault(api.source, []).append(api)
    files: dict[Path, str] = {}
    index = ['"""Generated by praha/protocol/messages/generate.py: every message class by api key."""',
             "# ruff: noqa: I001",
             "from __future__ import annotations", ""]
    table = []
    for source, apis in sorted(by_source.items()):
        mod = Module(source)
        for api in apis:
            mod.message(api.request)
            mod.message(api.response)
        stem = source.removesuffix(".wire")
        files[GEN / f"{stem}.py"] = mod.text(apis)
        index.append(f"from praha.protocol.messages.gen.{stem} import (")
        index += [f"    {a.name}Request, {a.name}Response," for a in apis]
        index.append(")")
        table += [f"    {a.key}: ({a.name}Request, {a.name}Response)," for a in apis]
    index += ["from praha.protocol.messages.runtime import WireMessage", "",
              "#: api key → (request class, response class)",
              "MESSAGES: dict[int, tuple[type[WireMessage], type[WireMessage]]] = {"]
    index += sorted(table, key=lambda line: int(line.split(":")[0]))
    index += ["}", ""]
    files[GEN / "__init__.py"] = "\n".join(index)
    return files


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="generate praha/protocol/messages/gen/ from the .wire definitions")
    p.add_argument("--check", action="store_true", help="only report whether gen/ is up to date")
    args = p.parse_args(argv)
    files = generate()
    stale = [path for path, text in files.items() if not path.exists() or path.read_text() != text]
    extra = [path for path in GEN.glob("*.py") if path not in files]
    if args.check:
        for path in stale + extra:
            print(f"out of date: {path}")
        return 1 if stale or extra else 0
    GEN.mkdir(exist_ok=True)
    for path in stale:
        path.write_text(files[path])
    for path in extra:
        path.unlink()
    print(f"{len(files)} files, {len(stale)} rewritten, {len(extra)} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
