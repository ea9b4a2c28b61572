"""Confluent's Schema Registry REST API: every route in one table (`ROUTES`: method, path,
handler, whether it writes, whether it reads the newest state), and the handlers, which
see a `Call` and a `Registry` and return (status, JSON body)."""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from praha.registry import errors
from praha.registry.errors import RegistryError
from praha.registry.model import Compatibility, Mode, Reference, SchemaType, SchemaVersion
from praha.registry.rules import compatibility_problems, parse_type
from praha.registry.state import LATEST, RegistryState, Write, parse_version

Body = Any
Answer = tuple[int, Body]


class Store(Protocol):
    """What the handlers need of the storage (the `_schemas` topic, or a test's fake)."""

    lock: threading.Lock

    def catch_up(self) -> None: ...

    def append(self, writes: list[Write]) -> None: ...


@dataclass
class Call:
    method: str
    params: dict[str, str]
    query: dict[str, str]
    raw_body: bytes = b""
    user: str = "ANONYMOUS"
    _json: Any = field(default=None, repr=False)

    def body(self) -> dict[str, Any]:
        """The JSON object sent (400 when it is not JSON, or not an object)."""
        if self._json is None:
            try:
                self._json = json.loads(self.raw_body or b"{}")
            except ValueError as e:
                raise errors.bad_request(f"Unexpected character in the request body: {e}") from e
            if not isinstance(self._json, dict):
                raise errors.bad_request("The request body must be a JSON object")
        return dict(self._json)

    def flag(self, name: str) -> bool:
        return self.query.get(name, "false").strip().lower() == "true"


class Registry:
    """One broker's registry: its state, its store, and (on the primary) the id source."""

    def __init__(self, state: RegistryState, store: Store, allocate_id: Callable[[int], int]):
        self.state, self.store, self.allocate_id = state, store, allocate_id
        self.write_lock = threading.Lock()  # the primary applies one write at a time

    def write(self, plan: Callable[[], tuple[Answer, list[Write]]]) -> Answer:
        """Catch up, decide on the state, write the records: on the primary only."""
        with self.write_lock:
            self.store.catch_up()
            with self.store.lock:
                answer, writes = plan()
            self.store.append(writes)
            return answer


# ---------------------------------------------------------------------- helpers
def _references(body: dict[str, Any]) -> tuple[Reference, ...]:
    refs = body.get("references") or []
    if not isinstance(refs, list):
        raise errors.bad_request("references must be a list")
    out = []
    for r in refs:
        if not isinstance(r, dict) or not {"name", "subject", "version"} <= set(r):
            raise errors.invalid_schema("a reference needs name, subject and version")
        try:
            out.append(Reference(str(r["name"]), str(r["subject"]), int(r["version"])))
        except (TypeError, ValueError):
            raise errors.invalid_schema(f"reference version {r['version']!r} is not a number") from None
    return tuple(out)


def _schema_text(body: dict[str, Any]) -> str:
    text = body.get("schema")
    if not isinstance(text, str):
        raise errors.invalid_schema("the body needs a \"schema\" string")
    return text


def _formatted(reg: Registry, v: SchemaVersion, fmt: str | None) -> str:
    """`format=serialized` of a Protobuf schema: its base64 FileDescriptorProto."""
    if v.schema_type is SchemaType.PROTOBUF and fmt == "serialized":
        from praha.registry.protobuf_rules import ProtobufSchema

        parsed = reg.state.parse(v.schema_type, v.schema, v.references)
        assert isinstance(parsed, ProtobufSchema)
        return parsed.serialized()
    return v.schema


def _version_body(reg: Registry, v: SchemaVersion, fmt: str | None = None) -> dict[str, Any]:
    out = v.to_json()
    out["schema"] = _formatted(reg, v, fmt)
    return out


def _schema_body(reg: Registry, v: SchemaVersion, fmt: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if v.schema_type is not SchemaType.AVRO:
        out["schemaType"] = v.schema_type.value
    if v.references:
        out["references"] = [r.to_json() for r in v.references]
    out["schema"] = _formatted(reg, v, fmt)
    return out


def _schema_id(call: Call) -> int:
    try:
        return int(call.params["id"])
    except ValueError:
        raise errors.schema_not_found() from None


def _level(value: Any) -> Compatibility:
    try:
        return Compatibility(str(value).upper())
    except ValueError:
        raise errors.invalid_compatibility(value) from None


def _mode(value: Any) -> Mode:
    try:
        return Mode(str(value).upper())
    except ValueError:
        raise errors.invalid_mode(value) from None


# ---------------------------------------------------------------------- reads
def root(reg: Registry, call: Call) -> Answer:
    return 200, {}


def list_subjects(reg: Registry, call: Call) -> Answer:
    return 200, reg.state.subjects(call.flag("deleted"), call.query.get("subjectPrefix", ""))


def list_versions(reg: Registry, call: Call) -> Answer:
    return 200, [v.version for v in reg.state.live_versions(call.params["subject"], call.flag("deleted"))]


def get_version(reg: Registry, call: Call) -> Answer:
    v = reg.state.get_version(call.params["subject"], parse_version(call.params["version"]), call.flag("deleted"))
    return 200, _version_body(reg, v, call.query.get("format"))


def get_version_schema(reg: Registry, call: Call) -> Answer:
    v = reg.state.get_version(call.params["subject"], parse_version(call.params["version"]), call.flag("deleted"))
    return 200, json.loads(v.schema) if v.schema_type is not SchemaType.PROTOBUF else v.schema


def referenced_by(reg: Registry, call: Call) -> Answer:
    v = reg.state.get_version(call.params["subject"], parse_version(call.params["version"]))
    return 200, reg.state.referenced_by(v.subject, v.version)


def latest_with_metadata(reg: Registry, call: Call) -> Answer:
    """No metadata is stored: the latest version answers a query without key/value filters."""
    if call.query.get("key") or call.query.get("value"):
        raise errors.schema_not_found("No schema with that metadata")
    v = reg.state.get_version(call.params["subject"], LATEST, call.flag("deleted"))
    return 200, _version_body(reg, v, call.query.get("format"))


def lookup(reg: Registry, call: Call) -> Answer:
    subject, body = call.params["subject"], call.body()
    schema_type = parse_type(body.get("schemaType"))
    refs = _references(body)
    reg.state.live_versions(subject, deleted=call.flag("deleted"))  # 40401 first
    parsed = reg.state.parse(schema_type, _schema_text(body), refs)
    found = reg.state.lookup(subject, parsed, schema_type, refs, call.flag("normalize"), call.flag("deleted"))
    if found is None:
        raise errors.schema_not_found()
    return 200, _version_body(reg, found, call.query.get("format"))


def get_schema(reg: Registry, call: Call) -> Answer:
    return 200, _schema_body(reg, reg.state.schema_by_id(_schema_id(call)), call.query.get("format"))


def get_schema_text(reg: Registry, call: Call) -> Answer:
    v = reg.state.schema_by_id(_schema_id(call))
    return 200, json.loads(v.schema) if v.schema_type is not SchemaType.PROTOBUF else v.schema


def schema_subjects(reg: Registry, call: Call) -> Answer:
    sid = _schema_id(call)
    reg.state.schema_by_id(sid)
    uses = reg.state.uses_of(sid, call.flag("deleted"))
    return 200, sorted({v.subject for v in uses if v.subject.startswith(call.query.get("subject", ""))})


def schema_versions(reg: Registry, call: Call) -> Answer:
    sid = _schema_id(call)
    reg.state.schema_by_id(sid)
    return 200, [{"subject": v.subject, "version": v.version} for v in reg.state.uses_of(sid, call.flag("deleted"))]


def schema_types(reg: Registry, call: Call) -> Answer:
    return 200, [t.value for t in SchemaType]


def contexts(reg: Registry, call: Call) -> Answer:
    return 200, ["."]


def check_compatibility(reg: Registry, call: Call) -> Answer:
    subject, body = call.params["subject"], call.body()
    schema_type = parse_type(body.get("schemaType"))
    new = reg.state.parse(schema_type, _schema_text(body), _references(body))
    level = reg.state.compatibility(subject)
    if "version" in call.params:
        v = reg.state.get_version(subject, parse_version(call.params["version"]))
        earlier = [reg.state.parse(v.schema_type, v.schema, v.references)]
        level = Compatibility(level.value.replace("_TRANSITIVE", ""))
    else:
        earlier = reg.state.parsed_history(subject)
    problems = compatibility_problems(level, new, earlier)
    out: dict[str, Any] = {"is_compatible": not problems}
    if call.flag("verbose"):
        out["messages"] = problems
    return 200, out


def get_config(reg: Registry, call: Call) -> Answer:
    subject = call.params.get("subject")
    if subject is not None and subject not in reg.state.configs and not call.flag("defaultToGlobal"):
        raise errors.subject_config_not_found(subject)
    return 200, {"compatibilityLevel": reg.state.compatibility(subject).value}


def get_mode(reg: Registry, call: Call) -> Answer:
    subject = call.params.get("subject")
    if subject is not None and subject not in reg.state.modes and not call.flag("defaultToGlobal"):
        raise errors.subject_mode_not_found(subject)
    return 200, {"mode": reg.state.mode(subject).value}


# ---------------------------------------------------------------------- writes (on the primary)
def register(reg: Registry, call: Call) -> Answer:
    subject, body = call.params["subject"], call.body()
    schema_type = parse_type(body.get("schemaType"))
    text, refs = _schema_text(body), _references(body)
    wanted_id = body.get("id") if isinstance(body.get("id"), int) and body.get("id", 0) > 0 else None
    wanted_version = body.get("version") if isinstance(body.get("version"), int) and body.get("version", 0) > 0 \
        else None

    def plan() -> tuple[Answer, list[Write]]:
        r = reg.state.plan_registration(subject, schema_type, text, refs, call.flag("normalize"), wanted_id,
                                        wanted_version)
        v = r.version
        if r.new_id:
            v = replace(v, id=reg.allocate_id(reg.state.max_id))
        answer = (200, {"id": v.id, "version": v.version, "subject": subject})
        return answer, [RegistryState.schema_write(v)] if r.written else []

    return reg.write(plan)


def delete_subject(reg: Registry, call: Call) -> Answer:
    def plan() -> tuple[Answer, list[Write]]:
        versions, writes = reg.state.plan_delete_subject(call.params["subject"], call.flag("permanent"))
        return (200, versions), writes

    return reg.write(plan)


def delete_version(reg: Registry, call: Call) -> Answer:
    version = parse_version(call.params["version"])

    def plan() -> tuple[Answer, list[Write]]:
        deleted, writes = reg.state.plan_delete_version(call.params["subject"], version, call.flag("permanent"))
        return (200, deleted), writes

    return reg.write(plan)


def put_config(reg: Registry, call: Call) -> Answer:
    body, subject = call.body(), call.params.get("subject")
    level = _level(body.get("compatibility", body.get("compatibilityLevel")))

    def plan() -> tuple[Answer, list[Write]]:
        return (200, {"compatibility": level.value}), [RegistryState.config_write(subject, level)]

    return reg.write(plan)


def _delete_setting(reg: Registry, subject: str | None, field: str, held: Callable[[], bool],
                    not_found: Callable[[str], RegistryError], current: Callable[[], str],
                    write: Callable[[], Write]) -> Answer:
    """DELETE /config[/{s}] and /mode[/{s}]: the setting in force before is the answer."""

    def plan() -> tuple[Answer, list[Write]]:
        if subject is not None and not held():
            raise not_found(subject)
        return (200, {field: current()}), [write()]

    return reg.write(plan)


def delete_config(reg: Registry, call: Call) -> Answer:
    s = call.params.get("subject")
    return _delete_setting(reg, s, "compatibilityLevel", lambda: s in reg.state.configs,
                           errors.subject_config_not_found,
                           lambda: reg.state.compatibility(s).value, lambda: RegistryState.config_write(s, None))


def put_mode(reg: Registry, call: Call) -> Answer:
    body, subject = call.body(), call.params.get("subject")
    mode = _mode(body.get("mode"))

    def plan() -> tuple[Answer, list[Write]]:
        if mode is Mode.IMPORT and reg.state.subjects() and not call.flag("force") and subject is None:
            raise errors.not_permitted("Cannot import since found existing subjects")
        return (200, {"mode": mode.value}), [RegistryState.mode_write(subject, mode)]

    return reg.write(plan)


def delete_mode(reg: Registry, call: Call) -> Answer:
    s = call.params.get("subject")
    return _delete_setting(reg, s, "mode", lambda: s in reg.state.modes, errors.subject_mode_not_found,
                           lambda: reg.state.mode(s).value, lambda: RegistryState.mode_write(s, None))


Handler = Callable[[Registry, Call], Answer]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: str
    handler: Handler
    writes: bool = False
    fresh: bool = False  # a list or "latest": read only once caught up with `_schemas`

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.pattern) + "/?$")


S, V = "/subjects/{subject}", "/subjects/{subject}/versions"
ROUTES: tuple[Route, ...] = (
    Route("GET", "", root),
    Route("GET", "/subjects", list_subjects, fresh=True),
    Route("GET", V, list_versions, fresh=True),
    Route("POST", V, register, writes=True),
    Route("GET", V + "/{version}", get_version, fresh=True),
    Route("GET", V + "/{version}/schema", get_version_schema, fresh=True),
    Route("GET", V + "/{version}/referencedby", referenced_by, fresh=True),
    Route("DELETE", V + "/{version}", delete_version, writes=True),
    Route("GET", S + "/metadata", latest_with_metadata, fresh=True),
    Route("POST", S, lookup),
    Route("DELETE", S, delete_subject, writes=True),
    Route("GET", "/schemas/types", schema_types),
    Route("GET", "/schemas/ids/{id}", get_schema),
    Route("GET", "/schemas/ids/{id}/schema", get_schema_text),
    Route("GET", "/schemas/ids/{id}/subjects", schema_subjects, fresh=True),
    Route("GET", "/schemas/ids/{id}/versions", schema_versions, fresh=True),
    Route("POST", "/compatibility/subjects/{subject}/versions/{version}", check_compatibility, fresh=True),
    Route("POST", "/compatibility/subjects/{subject}/versions", check_compatibility, fresh=True),
    Route("GET", "/config", get_config, fresh=True),
    Route("PUT", "/config", put_config, writes=True),
    Route("DELETE", "/config", delete_config, writes=True),
    Route("GET", "/config/{subject}", get_config, fresh=True),
    Route("PUT", "/config/{subject}", put_config, writes=True),
    Route("DELETE", "/config/{subject}", delete_config, writes=True),
    Route("GET", "/mode", get_mode, fresh=True),
    Route("PUT", "/mode", put_mode, writes=True),
    Route("DELETE", "/mode", delete_mode, writes=True),
    Route("GET", "/mode/{subject}", get_mode, fresh=True),
    Route("PUT", "/mode/{subject}", put_mode, writes=True),
    Route("DELETE", "/mode/{subject}", delete_mode, writes=True),
    Route("GET", "/contexts", contexts),
)
_COMPILED = [(r, r.regex) for r in ROUTES]


def match(method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    """The route for a request, with its path parameters (URL-decoded by the caller)."""
    for route, rx in _COMPILED:
        m = rx.match(path)
        if m is not None and route.method == method:
            return route, m.groupdict()
    return None


def path_known(path: str) -> bool:
    return any(rx.match(path) for _, rx in _COMPILED)


def answer(reg: Registry, route: Route, call: Call) -> Answer:
    """Run a read with read-your-writes: a fresh route after catching up; any other read
    that finds nothing, again after catching up (no stale 404)."""
    if route.fresh:
        reg.store.catch_up()
    try:
        with reg.store.lock:
            return route.handler(reg, call)
    except RegistryError as e:
        if e.status != 404 or route.fresh:
            raise
    reg.store.catch_up()
    with reg.store.lock:
        return route.handler(reg, call)
