"""The `_schemas` topic's records in the formats Confluent's registry writes, so tools that
know that topic read praha's too. Keys are JSON with a fixed field order (compaction keeps
the last record per key byte string); values are JSON, a null value deletes the key."""
from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from praha.registry.model import Compatibility, Mode, Reference, SchemaType, SchemaVersion

TOPIC = "_schemas"


class KeyType(StrEnum):
    SCHEMA = "SCHEMA"
    CONFIG = "CONFIG"
    MODE = "MODE"
    NOOP = "NOOP"
    DELETE_SUBJECT = "DELETE_SUBJECT"
    CLEAR_SUBJECT = "CLEAR_SUBJECT"


@dataclass(frozen=True)
class Key:
    keytype: KeyType
    subject: str | None = None
    version: int | None = None

    def encode(self) -> bytes:
        if self.keytype is KeyType.SCHEMA:
            d: dict[str, Any] = {"keytype": "SCHEMA", "subject": self.subject, "version": self.version, "magic": 1}
        elif self.keytype is KeyType.NOOP:
            d = {"keytype": "NOOP", "magic": 0}
        else:
            d = {"keytype": self.keytype.value, "subject": self.subject, "magic": 0}
        return json.dumps(d, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Key | None:
        """None for a key this registry does not know (skipped, as Confluent's does)."""
        try:
            d = json.loads(raw)
            return cls(KeyType(d["keytype"]), d.get("subject"), d.get("version"))
        except (ValueError, KeyError, TypeError):
            return None


def schema_value(v: SchemaVersion) -> bytes:
    return json.dumps({**v.to_json(), "deleted": v.deleted}, separators=(",", ":")).encode()


def decode_schema_value(raw: bytes) -> SchemaVersion:
    d = json.loads(raw)
    return SchemaVersion(
        subject=d["subject"], version=int(d["version"]), id=int(d["id"]),
        schema_type=SchemaType(d.get("schemaType") or "AVRO"), schema=d["schema"],
        references=tuple(Reference(r["name"], r["subject"], int(r["version"])) for r in d.get("references") or ()),
        deleted=bool(d.get("deleted", False)),
    )


def config_value(level: Compatibility) -> bytes:
    return json.dumps({"compatibilityLevel": level.value}, separators=(",", ":")).encode()


def mode_value(mode: Mode) -> bytes:
    return json.dumps({"mode": mode.value}, separators=(",", ":")).encode()


def noop_value() -> bytes:
    return b"{}"
