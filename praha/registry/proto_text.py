"""A `.proto` file (proto2 / proto3) parsed into the `FileDescriptorProto` protoc would make,
for the part of the language a schema uses: package, imports, messages (nested), enums,
fields with labels and options, `map<,>`, `oneof`, `reserved`; options, extensions and
services are read past. Names are resolved with protobuf's scoping rules against this file
and its imports (the schema's references, and the well-known types)."""
from __future__ import annotations

import re
from collections.abc import Callable

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor_pb2 import FieldDescriptorProto as FD
from google.protobuf.descriptor_pb2 import FileDescriptorProto as FDP

from praha.registry.errors import invalid_schema

SCALARS = {
    "double": FD.TYPE_DOUBLE, "float": FD.TYPE_FLOAT, "int64": FD.TYPE_INT64, "uint64": FD.TYPE_UINT64,
    "int32": FD.TYPE_INT32, "fixed64": FD.TYPE_FIXED64, "fixed32": FD.TYPE_FIXED32, "bool": FD.TYPE_BOOL,
    "string": FD.TYPE_STRING, "bytes": FD.TYPE_BYTES, "uint32": FD.TYPE_UINT32, "sfixed32": FD.TYPE_SFIXED32,
    "sfixed64": FD.TYPE_SFIXED64, "sint32": FD.TYPE_SINT32, "sint64": FD.TYPE_SINT64,
}
LABELS = {"optional": FD.LABEL_OPTIONAL, "required": FD.LABEL_REQUIRED, "repeated": FD.LABEL_REPEATED}
_TOKEN = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')|([A-Za-z_][\w.]*|\.[A-Za-z_][\w.]*)'
    r"|(-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))|([{}\[\]()<>;=,:\-+])",
    re.S,
)


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise invalid_schema(f"unexpected character {text[pos]!r} at offset {pos}")
        pos = m.end()
        tok = next((g for g in m.groups() if g is not None), None)
        if tok is not None:
            out.append(tok)
    return out


class _Parser:
    def __init__(self, text: str, name: str):
        self.toks = _tokens(text)
        self.i = 0
        self.fd = FDP(name=name)
        self.unresolved: list[tuple[FD, str, str]] = []  # field, type name, scope

    def peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def take(self, expected: str | None = None) -> str:
        if self.i >= len(self.toks):
            raise invalid_schema("unexpected end of the .proto text")
        tok = self.toks[self.i]
        if expected is not None and tok != expected:
            raise invalid_schema(f"expected {expected!r}, found {tok!r}")
        self.i += 1
        return tok

    def skip_statement(self) -> None:
        """Past the next `;` or a balanced `{...}` block."""
        depth = 0
        while True:
            tok = self.take()
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
                if depth == 0:
                    return
            elif tok == ";" and depth == 0:
                return

    def skip_brackets(self) -> None:
        if self.peek() == "[":
            while self.take() != "]":
                pass

    def parse(self) -> FDP:
        while self.i < len(self.toks):
            tok = self.take()
            if tok == "syntax" or tok == "edition":
                self.take("=")
                self.fd.syntax = self.take().strip("\"'")
                self.take(";")
            elif tok == "package":
                self.fd.package = self.take()
                self.take(";")
            elif tok == "import":
                if self.peek() in ("public", "weak"):
                    self.take()
                self.fd.dependency.append(self.take().strip("\"'"))
                self.take(";")
            elif tok == "message":
                self.message(self.fd.message_type.add(), self.scope(""))
            elif tok == "enum":
                self.enum(self.fd.enum_type.add())
            elif tok in ("option", "service", "extend"):
                self.skip_statement()
            elif tok == ";":
                continue
            else:
                raise invalid_schema(f"unexpected {tok!r} at the top level")
        if self.fd.syntax == "proto2":
            self.fd.ClearField("syntax")  # protoc leaves proto2 unset
        fd: FDP = self.fd
        return fd

    def scope(self, inner: str) -> str:
        base = f".{self.fd.package}" if self.fd.package else ""
        return f"{base}.{inner}" if inner else base

    def message(self, msg: descriptor_pb2.DescriptorProto, parent_scope: str) -> None:
        msg.name = self.take()
        scope = f"{parent_scope}.{msg.name}"
        self.take("{")
        while self.peek() != "}":
            tok = self.peek()
            if tok == "message":
                self.take()
                self.message(msg.nested_type.add(), scope)
            elif tok == "enum":
                self.take()
                self.enum(msg.enum_type.add())
            elif tok == "oneof":
                self.take()
                index = len(msg.oneof_decl)
                msg.oneof_decl.add().name = self.take()
                self.take("{")
                while self.peek() != "}":
                    if self.peek() == "option":
                        self.skip_statement()
                        continue
                    self.field(msg, scope, FD.LABEL_OPTIONAL, index)
                self.take("}")
            elif tok == "reserved":
                self.take()
                self.reserved(msg)
            elif tok in ("option", "extensions", "extend"):
                self.skip_statement()
            elif tok == ";":
                self.take()
            else:
                self.field(msg, scope, None, None)
        self.take("}")
        for f in msg.field:  # protoc gives each proto3 `optional` field a synthetic oneof, after the real ones
            if f.proto3_optional:
                f.oneof_index = len(msg.oneof_decl)
                msg.oneof_decl.add().name = f"_{f.name}"

    def reserved(self, msg: descriptor_pb2.DescriptorProto) -> None:
        while True:
            tok = self.take()
            if tok.startswith(("\"", "'")):
                msg.reserved_name.append(tok.strip("\"'"))
            elif tok.lstrip("-").isdigit():
                start = end = int(tok)
                if self.peek() == "to":
                    self.take()
                    last = self.take()
                    end = 536870911 if last == "max" else int(last)
                r = msg.reserved_range.add()
                r.start, r.end = start, end + 1
            if self.take() == ";":
                return

    def field(self, msg: descriptor_pb2.DescriptorProto, scope: str, label: int | None, oneof: int | None) -> None:
        tok = self.take()
        proto3_optional = False
        if tok in LABELS:
            label = LABELS[tok]
            proto3_optional = tok == "optional" and self.fd.syntax == "proto3"
            tok = self.take()
        f = msg.field.add()
        if tok == "map":
            self.take("<")
            key = self.take()
            self.take(",")
            value = self.take()
            self.take(">")
            f.name = self.take()
            entry = msg.nested_type.add()
            entry.name = "".join(p[:1].upper() + p[1:] for p in f.name.split("_")) + "Entry"
            entry.options.map_entry = True
            for num, (fname, ftype) in enumerate((("key", key), ("value", value)), 1):
                ef = entry.field.add(name=fname, number=num, label=FD.LABEL_OPTIONAL, json_name=fname)
                self.set_type(ef, ftype, f"{scope}.{entry.name}")
            f.label = FD.LABEL_REPEATED
            f.type = FD.TYPE_MESSAGE
            f.type_name = f"{scope}.{entry.name}"
        else:
            f.name = self.take()
            f.label = label if label is not None else FD.LABEL_OPTIONAL
            self.set_type(f, tok, scope)
        self.take("=")
        f.number = int(self.take(), 0)
        f.json_name = _json_name(f.name)
        self.skip_brackets()
        self.take(";")
        if oneof is not None:
            f.oneof_index = oneof
        elif proto3_optional:
            f.proto3_optional = True

    def set_type(self, f: FD, name: str, scope: str) -> None:
        if name in SCALARS:
            f.type = SCALARS[name]
        else:
            self.unresolved.append((f, name, scope))

    def enum(self, e: descriptor_pb2.EnumDescriptorProto) -> None:
        e.name = self.take()
        self.take("{")
        while self.peek() != "}":
            tok = self.take()
            if tok in ("option", "reserved"):
                self.i -= 1
                self.skip_statement()
                continue
            if tok == ";":
                continue
            self.take("=")
            e.value.add(name=tok, number=int(self.take(), 0))
            self.skip_brackets()
            self.take(";")
        self.take("}")


def _json_name(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _declared(fd: FDP) -> dict[str, int]:
    """Full name (with a leading dot) -> TYPE_MESSAGE / TYPE_ENUM, of every type `fd` declares."""
    out: dict[str, int] = {}
    base = f".{fd.package}" if fd.package else ""

    def walk(msgs: list[descriptor_pb2.DescriptorProto], enums: list[descriptor_pb2.EnumDescriptorProto],
             scope: str) -> None:
        for e in enums:
            out[f"{scope}.{e.name}"] = FD.TYPE_ENUM
        for m in msgs:
            out[f"{scope}.{m.name}"] = FD.TYPE_MESSAGE
            walk(list(m.nested_type), list(m.enum_type), f"{scope}.{m.name}")

    walk(list(fd.message_type), list(fd.enum_type), base)
    return out


def parse_proto(text: str, name: str, imported: Callable[[str], FDP | None]) -> FDP:
    """The descriptor of `text`; `imported(file name)` gives an import's descriptor."""
    parser = _Parser(text, name)
    fd = parser.parse()
    known = _declared(fd)
    for dep in fd.dependency:
        dep_fd = imported(dep)
        if dep_fd is None:
            raise invalid_schema(f"import {dep!r} is neither a reference nor a well-known type")
        known.update(_declared(dep_fd))
    for f, tname, scope in parser.unresolved:
        full = _resolve(tname, scope, known)
        if full is None:
            raise invalid_schema(f"field {f.name}: unknown type {tname}")
        f.type = known[full]
        f.type_name = full
    return fd


def _resolve(name: str, scope: str, known: dict[str, int]) -> str | None:
    if name.startswith("."):
        return name if name in known else None
    parts = scope.split(".")
    while True:
        candidate = ".".join([*parts, name]) if parts != [""] else f".{name}"
        if not candidate.startswith("."):
            candidate = "." + candidate
        if candidate in known:
            return candidate
        if not parts or parts == [""]:
            return None
        parts = parts[:-1]
