"""The schema registry as Confluent documents its REST API (subjects, versions, compatibility,
schemas by id), a diff between two versions, and values in Confluent's wire format (magic
byte 0, a 4-byte schema id, the payload) decoded with their schema: JSON schemas as JSON,
Avro with a small binary decoder (`decode_avro`, pure)."""
from __future__ import annotations

import difflib
import io
import json
import ssl
import struct
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from praha.encoding.varint import MalformedVarintError, read_varint
from praha.errors import PrahaError

TIMEOUT_S = 5.0


class RegistryError(PrahaError):
    pass


@dataclass(frozen=True)
class SchemaVersion:
    subject: str
    version: int
    id: int
    schema_type: str
    schema: str

    @property
    def pretty(self) -> str:
        try:
            return json.dumps(json.loads(self.schema), indent=2, sort_keys=False)
        except ValueError:
            return self.schema


class Registry:
    """A registry reached at one of several URLs (every broker of a praha cluster serves one);
    a URL that does not answer is skipped and the one that did is tried first next time."""

    def __init__(self, urls: str, ca_file: str | None = None):
        self.urls = [u.strip().rstrip("/") for u in urls.split(",") if u.strip()]
        if not self.urls:
            raise RegistryError("no schema registry URL given")
        self._context = ssl.create_default_context(cafile=ca_file) if ca_file else None
        self._by_id: dict[int, tuple[str, Any]] = {}

    @property
    def url(self) -> str:
        return self.urls[0]

    def _get(self, path: str) -> Any:
        failures = []
        for url in list(self.urls):
            try:
                with urllib.request.urlopen(url + path, timeout=TIMEOUT_S, context=self._context) as r:
                    body = json.loads(r.read())
            except urllib.error.HTTPError as e:
                try:
                    err = json.loads(e.read())
                    message = f"{err.get('error_code')}: {err.get('message')}"
                except ValueError:
                    message = str(e)
                raise RegistryError(f"schema registry {path}: {message}") from None
            except (OSError, ValueError) as e:
                failures.append(f"{url}: {e}")
                continue
            if url != self.urls[0]:
                self.urls.remove(url)
                self.urls.insert(0, url)
            return body
        raise RegistryError(f"no schema registry answered ({'; '.join(failures)})")

    def subjects(self) -> list[str]:
        return sorted(self._get("/subjects"))

    def versions(self, subject: str) -> list[int]:
        return sorted(self._get(f"/subjects/{_q(subject)}/versions"))

    def version(self, subject: str, version: int | str) -> SchemaVersion:
        d = self._get(f"/subjects/{_q(subject)}/versions/{version}")
        return SchemaVersion(d["subject"], d["version"], d["id"], d.get("schemaType", "AVRO"), d["schema"])

    def compatibility(self, subject: str | None = None) -> str:
        path = "/config" if subject is None else f"/config/{_q(subject)}?defaultToGlobal=true"
        d = self._get(path)
        return str(d.get("compatibilityLevel") or d.get("compatibility") or "?")

    def schema_by_id(self, schema_id: int) -> tuple[str, Any]:
        if schema_id not in self._by_id:
            d = self._get(f"/schemas/ids/{schema_id}")
            self._by_id[schema_id] = (d.get("schemaType", "AVRO"), json.loads(d["schema"]))
        return self._by_id[schema_id]

    def decode(self, data: bytes) -> str:
        """A value in Confluent's wire format, decoded with its schema (or why not)."""
        if len(data) < 5 or data[0] != 0:
            return "(not in the schema registry's wire format) " + data[:512].decode("utf-8", "replace")
        (schema_id,) = struct.unpack(">I", data[1:5])
        try:
            kind, schema = self.schema_by_id(schema_id)
        except RegistryError as e:
            return f"(schema {schema_id}: {e})"
        payload = data[5:]
        try:
            if kind == "JSON":
                value = json.loads(payload)
            elif kind == "AVRO":
                value = decode_avro(schema, io.BytesIO(payload))
            else:
                return f"(schema {schema_id} is {kind}; shown as hex) {payload.hex(' ')}"
        except (ValueError, KeyError, struct.error, EOFError) as e:
            return f"(schema {schema_id}: the value does not decode: {e})"
        return f"schema {schema_id} ({kind})\n" + json.dumps(value, indent=2, ensure_ascii=False, default=str)


def diff(a: SchemaVersion, b: SchemaVersion) -> list[str]:
    return list(difflib.unified_diff(a.pretty.splitlines(), b.pretty.splitlines(),
                                     f"{a.subject} v{a.version}", f"{b.subject} v{b.version}", lineterm=""))


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


# ------------------------------------------------------------------------------ Avro binary
def _long(buf: io.BytesIO) -> int:
    """Avro's long: a zigzag varint, Kafka's record varint."""
    try:
        value, pos = read_varint(buf.getbuffer(), buf.tell())
    except MalformedVarintError:
        raise EOFError("truncated varint") from None
    buf.seek(pos)
    return value


def _bytes(buf: io.BytesIO) -> bytes:
    n = _long(buf)
    data = buf.read(n)
    if len(data) != n:
        raise EOFError("truncated bytes")
    return data


def decode_avro(schema: Any, buf: io.BytesIO, names: dict[str, Any] | None = None) -> Any:
    """One Avro datum (the binary encoding of the Avro specification)."""
    names = {} if names is None else names
    if isinstance(schema, list):  # a union: the branch index, then the branch
        return decode_avro(schema[_long(buf)], buf, names)
    if isinstance(schema, str):
        primitive = _PRIMITIVES.get(schema)
        if primitive is not None:
            return primitive(buf)
        return decode_avro(names[schema], buf, names)
    kind = schema["type"]
    if kind in ("record", "error"):
        names[schema["name"]] = schema
        return {f["name"]: decode_avro(f["type"], buf, names) for f in schema["fields"]}
    if kind == "enum":
        names[schema["name"]] = schema
        return schema["symbols"][_long(buf)]
    if kind == "fixed":
        names[schema["name"]] = schema
        return buf.read(schema["size"]).hex()
    if kind in ("array", "map"):
        out: Any = [] if kind == "array" else {}
        while True:
            n = _long(buf)
            if n == 0:
                return out
            if n < 0:
                n = -n
                _long(buf)  # the block's size in bytes
            for _ in range(n):
                if kind == "array":
                    out.append(decode_avro(schema["items"], buf, names))
                else:
                    k = _bytes(buf).decode()
                    out[k] = decode_avro(schema["values"], buf, names)
    return decode_avro(kind, buf, names)  # {"type": "string", "logicalType": ...}


_PRIMITIVES: dict[str, Any] = {
    "null": lambda buf: None,
    "boolean": lambda buf: buf.read(1) == b"\x01",
    "int": _long,
    "long": _long,
    "float": lambda buf: struct.unpack("<f", buf.read(4))[0],
    "double": lambda buf: struct.unpack("<d", buf.read(8))[0],
    "bytes": lambda buf: _bytes(buf).hex(),
    "string": lambda buf: _bytes(buf).decode("utf-8", "replace"),
}
