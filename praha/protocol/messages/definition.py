"""praha's definitions of Kafka's messages: the model and the reader of the `.wire` files.

Every request and response praha serves or sends is written down once, in a small text
format (`*.wire` next to this module), and everything else is derived from it: the generated
codecs (`generate.py` → `gen/`), the version ranges of the registry, the development check
against Apache Kafka's own definitions (`bench/wire_check.py`).

The format, one field a line, nesting by two spaces::

    api 68 ConsumerGroupHeartbeat 0-1 flexible=0+
    request
      group_id: string
      instance_id: string nullable default=null
      subscribed_topic_regex: string 1+ nullable default=null
      topics: [TopicPartitions] nullable default=null
        topic_id: uuid
        partitions: [int32]
      struct TopicPartitions               # a struct several fields share, referenced by name

A field is `name: type [versions] [nullable[=versions]] [tag=N[@versions]] [default=X]`.
Versions are `N`, `N+`, `N-M` or `none`; omitted, a field exists in every version. Types are
Kafka's (`bool int8 int16 uint16 int32 int64 float64 string bytes records uuid`), `[T]` an
array, a capitalised name a struct (its fields indented below, or a shared `struct`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from praha.errors import ConfigError

HERE = Path(__file__).parent
PRIMITIVES = frozenset({"bool", "int8", "int16", "uint16", "int32", "int64", "float64",
                        "string", "bytes", "records", "uuid"})
#: no version is this high; `N+` means N..OPEN
OPEN = 32767


class MessageKind(Enum):
    REQUEST = "request"
    RESPONSE = "response"


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; `lo > hi` is the empty range (`none`)."""

    lo: int
    hi: int

    @staticmethod
    def parse(text: str) -> Versions:
        if text == "none":
            return NONE
        if text.endswith("+"):
            return Versions(int(text[:-1]), OPEN)
        lo, _, hi = text.partition("-")
        return Versions(int(lo), int(hi or lo))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    def __str__(self) -> str:
        if self.lo > self.hi:
            return "none"
        if self.hi == OPEN:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = Versions(1, 0)
ALL = Versions(0, OPEN)


@dataclass(slots=True)
class Field:
    """One field: its snake_case name, Kafka type, and where it exists, is nullable, is tagged."""

    name: str
    type: str  # "int32", "[int32]", "Topic", "[Topic]"
    versions: Versions = ALL
    nullable: Versions = NONE
    tag: int | None = None
    tagged: Versions = NONE
    default: str | None = None  # as written: "null", "-1", "true", "" ...
    fields: list[Field] = field(default_factory=list)  # a struct's, after shared structs resolved

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[")

    @property
    def element(self) -> str:
        return self.type[1:-1] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element not in PRIMITIVES

    def nullable_at(self, version: int) -> bool:
        return version in self.nullable and version in self.versions

    def tagged_at(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged and version in self.versions


@dataclass(slots=True)
class Message:
    """A request or response of one API."""

    api_key: int
    name: str  # "ConsumerGroupHeartbeatRequest"
    kind: MessageKind
    versions: Versions
    flexible: Versions
    fields: list[Field]
    #: struct types declared with `struct` (several fields use them): top-level classes of the message
    shared: tuple[str, ...] = ()

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    name: str  # "ConsumerGroupHeartbeat"
    request: Message
    response: Message
    source: str  # the .wire file, for messages


_FIELD = re.compile(r"^(?P<name>[a-z][a-z0-9_]*):\s+(?P<type>\[?[A-Za-z][A-Za-z0-9]*\]?)(?P<rest>.*)$")
_API = re.compile(r"^api\s+(?P<key>\d+)\s+(?P<name>[A-Za-z]+)\s+(?P<versions>\S+)\s+flexible=(?P<flexible>\S+)$")


def _strip(line: str) -> str:
    return line.split("#", 1)[0].rstrip()


def _parse_field(text: str, where: str) -> Field:
    m = _FIELD.match(text)
    if m is None:
        raise ConfigError(f"{where}: not a field: {text!r}")
    f = Field(m["name"], m["type"])
    for word in m["rest"].split():
        key, eq, value = word.partition("=")
        if not eq and re.fullmatch(r"\d+(\+|-\d+)?|none", word):
            f.versions = Versions.parse(word)
        elif key == "nullable":
            f.nullable = Versions.parse(value) if eq else ALL
        elif key == "tag":
            num, _, tv = value.partition("@")
            f.tag, f.tagged = int(num), (Versions.parse(tv) if tv else ALL)
        elif key == "default":
            f.default = value[1:-1] if value.startswith('"') else value
        else:
            raise ConfigError(f"{where}: unknown word {word!r}")
    return f


def _parse_block(lines: list[tuple[int, int, str]], where: str) -> tuple[list[Field], dict[str, Field]]:
    """Fields at the first line's indent, each with its indented children; shared structs apart."""
    fields: list[Field] = []
    shared: dict[str, Field] = {}
    i = 0
    while i < len(lines):
        lineno, indent, text = lines[i]
        j = i + 1
        while j < len(lines) and lines[j][1] > indent:
            j += 1
        children, nested_shared = _parse_block(lines[i + 1:j], where) if j > i + 1 else ([], {})
        shared.update(nested_shared)
        if text.startswith("struct "):
            name = text.split()[1]
            shared[name] = Field(name, name, fields=children)
        else:
            f = _parse_field(text, f"{where}:{lineno}")
            f.fields = children
            fields.append(f)
        i = j
    return fields, shared


def _resolve(fields: list[Field], shared: dict[str, Field], where: str) -> None:
    for f in fields:
        if f.is_struct and not f.fields:
            if f.element not in shared:
                raise ConfigError(f"{where}: {f.name} has type {f.element}, which has no fields")
            f.fields = [Field(c.name, c.type, c.versions, c.nullable, c.tag, c.tagged, c.default, c.fields)
                        for c in shared[f.element].fields]
        _resolve(f.fields, shared, where)


def parse(text: str, source: str = "<text>") -> list[Api]:
    """Every API in one `.wire` text."""
    apis: list[Api] = []
    header: re.Match[str] | None = None
    sections: dict[str, list[tuple[int, int, str]]] = {}
    current: list[tuple[int, int, str]] | None = None

    def close() -> None:
        if header is None:
            return
        msgs = []
        for kind in MessageKind:
            block = sections.get(kind.value)
            if block is None:
                raise ConfigError(f"{source}: {header['name']} has no {kind.value}")
            fields, shared = _parse_block(block, source)
            _resolve(fields, shared, source)
            msgs.append(Message(int(header["key"]), header["name"] + kind.value.capitalize(), kind,
                                Versions.parse(header["versions"]), Versions.parse(header["flexible"]), fields,
                                tuple(shared)))
        apis.append(Api(int(header["key"]), header["name"], msgs[0], msgs[1], source))

    for lineno, raw in enumerate(text.splitlines(), 1):
        line = _strip(raw)
        if not line:
            continue
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if indent == 0:
            if body.startswith("api "):
                close()
                header = _API.match(body)
                if header is None:
                    raise ConfigError(f"{source}:{lineno}: bad api line {body!r}")
                sections, current = {}, None
            elif body in ("request", "response"):
                current = sections.setdefault(body, [])
            else:
                raise ConfigError(f"{source}:{lineno}: expected api/request/response, got {body!r}")
        elif current is None:
            raise ConfigError(f"{source}:{lineno}: field outside request/response")
        else:
            current.append((lineno, indent, body))
    close()
    return apis


def load_all(directory: Path = HERE) -> dict[int, Api]:
    """Every API praha defines, by api key (a key defined twice is an error)."""
    out: dict[int, Api] = {}
    for path in sorted(directory.glob("*.wire")):
        for api in parse(path.read_text(), path.name):
            if api.key in out:
                raise ConfigError(f"api key {api.key} defined in {out[api.key].source} and {path.name}")
            out[api.key] = api
    return out


def snake(camel: str) -> str:
    """Kafka's CamelCase field name in snake_case, as kafka-python spells it."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()


__all__ = ["Api", "Field", "Message", "MessageKind", "Versions", "NONE", "ALL", "OPEN", "PRIMITIVES",
           "parse", "load_all", "snake"]
