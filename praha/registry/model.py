"""The registry's vocabulary: schema types, compatibility levels, modes, and what is stored."""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from praha.errors import ConfigError


class SchemaType(StrEnum):
    AVRO = "AVRO"
    JSON = "JSON"
    PROTOBUF = "PROTOBUF"


class Compatibility(StrEnum):
    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @property
    def transitive(self) -> bool:
        return self.value.endswith("_TRANSITIVE")

    @property
    def backward(self) -> bool:
        """The new schema must read data written with the earlier ones."""
        return self.value.startswith(("BACKWARD", "FULL"))

    @property
    def forward(self) -> bool:
        """The earlier schemas must read data written with the new one."""
        return self.value.startswith(("FORWARD", "FULL"))


class Mode(StrEnum):
    READWRITE = "READWRITE"
    READONLY = "READONLY"
    READONLY_OVERRIDE = "READONLY_OVERRIDE"
    IMPORT = "IMPORT"

    @property
    def writable(self) -> bool:
        return self in (Mode.READWRITE, Mode.IMPORT)


DEFAULT_COMPATIBILITY = Compatibility.BACKWARD
DEFAULT_MODE = Mode.READWRITE


@dataclass(frozen=True)
class Reference:
    """A schema's reference to another subject's version, under the name the schema imports it by."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class SchemaVersion:
    """One version of a subject, as a `_schemas` SCHEMA record holds it."""

    subject: str
    version: int
    id: int
    schema_type: SchemaType
    schema: str
    references: tuple[Reference, ...] = ()
    deleted: bool = False

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type is not SchemaType.AVRO:
            out["schemaType"] = self.schema_type.value
        if self.references:
            out["references"] = [r.to_json() for r in self.references]
        out["schema"] = self.schema
        return out


def parse_listener(text: str) -> tuple[str, str, int] | None:
    """`schema.registry.listeners` as (scheme, host, port); None when it is empty (off);
    ConfigError naming the key when it is not http(s)://HOST:PORT."""
    first = text.split(",")[0].strip()
    if not first:
        return None
    parts = urlsplit(first)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None:
        raise ConfigError(f"schema.registry.listeners: expected http://HOST:PORT or https://HOST:PORT, got {first!r}")
    return parts.scheme, parts.hostname, port
