"""Client quota entities and keys as Kafka 3.9 stores them in ZooKeeper: rules, no I/O.

An entity is a user, a client id, or a user with a client id; either name may be the
default (`<default>`). Its config lives at `/config/clients/<id>`, `/config/users/<user>`
or `/config/users/<user>/clients/<id>`, names sanitized as Kafka's `Sanitizer` does
(URL-encoded, `*` and space as `%2A` and `%20`). Here:
- `QuotaEntity` (sanitized components; the ZooKeeper path, the change notice's entity
  path, the wire form),
- `check_alteration`: an AlterClientQuotas entry checked with Kafka's messages,
- `QuotaFilter`: a DescribeClientQuotas filter (exact / default / any, `strict`),
- `USER_KEY_HANDLERS` / `CLIENT_KEY_HANDLERS`: the keys each entity type takes, one
  handler per key (the SCRAM credentials of users add theirs to the users table).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from urllib.parse import quote, unquote_plus

from praha.errors import ErrorCode, PrahaError

USER, CLIENT_ID, IP = "user", "client-id", "ip"
DEFAULT = "<default>"
CLIENTS_TYPE, USERS_TYPE = "clients", "users"  # ZooKeeper's config types (`/config/<type>`)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"


class QuotaError(PrahaError):
    """Bad quota input: Kafka answers INVALID_REQUEST."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_REQUEST):
        super().__init__(message, code)


@dataclass(frozen=True, slots=True)
class KeyHandler:
    """One config key an entity takes: how a value is checked and stored, given as a number
    (AlterClientQuotas) or as text (`praha configs --add-config`). A key of another kind
    (a user's SCRAM credentials) brings its own handler with `from_number` refusing."""

    name: str
    doc: str
    #: number → the string stored in ZooKeeper; raises QuotaError
    from_number: Callable[[str, float], str]
    #: --add-config text → the string stored in ZooKeeper; raises QuotaError
    from_text: Callable[[str, str], str]


def _positive(key: str, value: float) -> None:
    # Kafka's ZooKeeper mode stores any number; its controller (KRaft, Kafka 4) refuses
    # these, and a negative rate cannot be enforced: praha refuses them as the controller does.
    if math.isnan(value) or value <= 0.0:
        raise QuotaError(f"Quota {key} must be greater than 0")


def _long_value(key: str, value: float) -> str:
    _positive(key, value)
    if math.isinf(value) or value > 2**63 - 1:
        raise QuotaError(f"Proposed value for {key} is too large for a LONG.")
    as_int = int(value + 1e-6)
    if abs(as_int - value) > 1e-6:
        raise QuotaError(f"Configuration {key} must be a LONG value")
    return str(as_int)


def _double_value(key: str, value: float) -> str:
    _positive(key, value)
    if math.isinf(value):
        raise QuotaError(f"Proposed value for {key} is too large for a DOUBLE.")
    return repr(float(value))


def _number(key: str, text: str) -> float:
    """kafka-configs' parse of a quota value given as text."""
    try:
        return float(text)
    except ValueError:
        raise QuotaError(f"Cannot parse quota configuration value for {key}: {text}") from None


def _quota_key(name: str, doc: str, store: Callable[[str, float], str]) -> KeyHandler:
    return KeyHandler(name, doc, store, lambda key, text: store(key, _number(key, text)))


#: Kafka's QuotaConfigs.userAndClientQuotaConfigs()
CLIENT_KEY_HANDLERS: dict[str, KeyHandler] = {h.name: h for h in (
    _quota_key(PRODUCER_BYTE_RATE, "A rate representing the upper bound (bytes/sec) for producer traffic.",
               _long_value),
    _quota_key(CONSUMER_BYTE_RATE, "A rate representing the upper bound (bytes/sec) for consumer traffic.",
               _long_value),
    _quota_key(REQUEST_PERCENTAGE, "A percentage representing the upper bound of time spent for processing "
               "requests.", _double_value),
    _quota_key(CONTROLLER_MUTATION_RATE, "The rate at which mutations are accepted for the create topics request, "
               "the create partitions request and the delete topics request (stored; not enforced by praha).",
               _double_value),
)}
#: a user takes the client quotas and, once authentication exists, its SCRAM credentials
USER_KEY_HANDLERS: dict[str, KeyHandler] = dict(CLIENT_KEY_HANDLERS)
QUOTA_KEYS = frozenset(CLIENT_KEY_HANDLERS)


# ------------------------------------------------------------------------------- names
def sanitize(name: str) -> str:
    """Kafka's `Sanitizer.sanitize`: a name safe as a znode name (and a metric tag)."""
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return unquote_plus(name)


def sanitize_entity_name(name: str | None) -> str:
    """None (the default entity) → `<default>`, else the sanitized name."""
    return DEFAULT if name is None else sanitize(name)


def desanitize_entity_name(name: str) -> str | None:
    return None if name == DEFAULT else desanitize(name)


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """A quota entity by its sanitized components (`<default>` for a default, None when
    the entity has no such component)."""

    user: str | None = None
    client_id: str | None = None

    @property
    def config_type(self) -> str:
        return USERS_TYPE if self.user is not None else CLIENTS_TYPE

    @property
    def entity_path(self) -> str:
        """`clients/<id>`, `users/<user>` or `users/<user>/clients/<id>`: the change notice's path."""
        if self.user is None:
            return f"{CLIENTS_TYPE}/{self.client_id}"
        if self.client_id is None:
            return f"{USERS_TYPE}/{self.user}"
        return f"{USERS_TYPE}/{self.user}/{CLIENTS_TYPE}/{self.client_id}"

    @property
    def zk_path(self) -> str:
        return f"/config/{self.entity_path}"

    @property
    def key_handlers(self) -> dict[str, KeyHandler]:
        return USER_KEY_HANDLERS if self.user is not None and self.client_id is None else CLIENT_KEY_HANDLERS

    def wire(self) -> list[tuple[str, str | None]]:
        """[(entity type, name or None for the default)], user first (Kafka's order)."""
        out: list[tuple[str, str | None]] = []
        if self.user is not None:
            out.append((USER, desanitize_entity_name(self.user)))
        if self.client_id is not None:
            out.append((CLIENT_ID, desanitize_entity_name(self.client_id)))
        return out

    def describe(self) -> str:
        """kafka-configs' wording: "user-principal 'u', client-id 'c'", "the default client-id"."""
        parts = []
        for kind, name in self.wire():
            label = "user-principal" if kind == USER else "client-id"
            parts.append(f"the default {label}" if name is None else f"{label} '{name}'")
        return ", ".join(parts)


def entity_from_path(entity_path: str) -> QuotaEntity | None:
    """The entity a change notice names ("clients/x", "users/u", "users/u/clients/x"), or None."""
    parts = entity_path.split("/")
    if len(parts) == 2 and parts[0] == CLIENTS_TYPE and parts[1]:
        return QuotaEntity(client_id=parts[1])
    if len(parts) == 2 and parts[0] == USERS_TYPE and parts[1]:
        return QuotaEntity(user=parts[1])
    if len(parts) == 4 and parts[0] == USERS_TYPE and parts[2] == CLIENTS_TYPE and parts[1] and parts[3]:
        return QuotaEntity(user=parts[1], client_id=parts[3])
    return None


def entity_from_wire(components: Sequence[tuple[str, str | None]]) -> QuotaEntity:
    """An AlterClientQuotas entity, checked as Kafka does (INVALID_REQUEST with its message)."""
    if not components:
        raise QuotaError("Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for kind, name in components:
        if kind in seen:
            raise QuotaError(f"Invalid client quota entity, duplicate entity entry {kind}")
        if kind not in (USER, CLIENT_ID, IP):
            raise QuotaError(f"Unhandled client quota entity type: {kind}")
        if name is not None and name == "":
            raise QuotaError(f"Empty {kind} not supported")
        seen[kind] = name
    if IP in seen:
        if len(seen) > 1:
            raise QuotaError(
                "Invalid quota entity combination, IP entity should not be used with user/client ID entity."
            )
        raise QuotaError("IP quotas (connection_creation_rate) are not supported by praha; "
                         "see max.connections.per.ip and max.connection.creation.rate")
    return QuotaEntity(user=sanitize_entity_name(seen[USER]) if USER in seen else None,
                       client_id=sanitize_entity_name(seen[CLIENT_ID]) if CLIENT_ID in seen else None)


@dataclass(frozen=True, slots=True)
class QuotaOp:
    key: str
    value: float
    remove: bool = False


def check_alteration(entity: QuotaEntity, current: Mapping[str, str], ops: Iterable[QuotaOp]) -> dict[str, str]:
    """The entity's config after `ops` (Kafka's ZkAdminManager.alterClientQuotas: a removal
    is never refused, a value needs a known key and a valid number). Raises QuotaError."""
    new = dict(current)
    handlers = entity.key_handlers
    for op in ops:
        if op.remove:
            new.pop(op.key, None)
            continue
        handler = handlers.get(op.key)
        if handler is None:
            raise QuotaError(f"Invalid configuration key {op.key}")
        new[op.key] = handler.from_number(op.key, float(op.value))
    return new


def check_text_alteration(entity: QuotaEntity, current: Mapping[str, str], add: Mapping[str, str],
                          delete: Iterable[str]) -> dict[str, str]:
    """kafka-configs' --add-config / --delete-config on an entity: every key must be one the
    entity takes, every key deleted must be set. Returns the new config; raises QuotaError."""
    delete = list(delete)
    handlers = entity.key_handlers
    unknown = [k for k in [*add, *delete] if k not in handlers]
    if unknown:
        raise QuotaError(f"Invalid config(s): {','.join(unknown)}; {entity.config_type} take "
                         f"{', '.join(sorted(handlers))}")
    missing = [k for k in delete if k not in current]
    if missing:
        raise QuotaError(f"Invalid config(s): {','.join(missing)} (not set for {entity.describe()})")
    new = {k: v for k, v in current.items() if k not in delete}
    new.update({key: handlers[key].from_text(key, text) for key, text in add.items()})
    return new


def quota_values(config: Mapping[str, str]) -> dict[str, float]:
    """The client quota values of an entity's config, as numbers (other keys skipped)."""
    out = {}
    for key, value in config.items():
        if key in QUOTA_KEYS:
            try:
                out[key] = float(value)
            except ValueError:
                continue  # hand-written garbage: not a quota anyone can enforce
    return out


# ------------------------------------------------------------------------------- describe filters
class MatchType(IntEnum):
    EXACT = 0
    DEFAULT = 1
    ANY = 2


@dataclass(frozen=True, slots=True)
class QuotaFilter:
    """A DescribeClientQuotas filter: per entity type, the sanitized name it wants (`<default>`
    for the default), or `ANY_NAME` for any; `strict` excludes entities with other components."""

    user: str | None = None
    client_id: str | None = None
    strict: bool = False
    #: an IP filter: praha stores no IP quotas
    nothing: bool = False

    def matches(self, entity: QuotaEntity) -> bool:
        return not self.nothing and _component_matches(self.user, entity.user, self.strict) and \
            _component_matches(self.client_id, entity.client_id, self.strict)


ANY_NAME = "\x00any"  # never a sanitized name


def _component_matches(wanted: str | None, have: str | None, strict: bool) -> bool:
    if wanted is None:
        return have is None or not strict
    if wanted == ANY_NAME:
        return have is not None
    return have == wanted


def filter_from_wire(components: Sequence[tuple[str, int, str | None]], strict: bool) -> QuotaFilter:
    """A DescribeClientQuotas request's components, checked as Kafka 3.9 does."""
    wanted: dict[str, str] = {}
    for kind, match_type, match in components:
        if kind == "":
            raise QuotaError("Unexpected empty filter component entity type")
        if kind not in (USER, CLIENT_ID, IP):
            raise QuotaError(f"Custom entity type '{kind}' not supported", ErrorCode.UNSUPPORTED_VERSION)
        if kind in wanted:
            label = {USER: "user", CLIENT_ID: "client", IP: "ip"}[kind]
            raise QuotaError(f"Duplicate {label} filter component entity type")
        if match_type == MatchType.EXACT:
            if match is None:
                raise QuotaError(f"Unexpected null match for an exact {kind} filter component")
            wanted[kind] = sanitize(match)
        elif match_type == MatchType.DEFAULT:
            wanted[kind] = DEFAULT
        elif match_type == MatchType.ANY:
            wanted[kind] = ANY_NAME
        else:
            raise QuotaError(f"Unexpected match type: {match_type}")
    if IP in wanted and (USER in wanted or CLIENT_ID in wanted):
        raise QuotaError("Invalid entity filter component combination, IP filter component should not be used "
                         "with user or clientId filter component.")
    if IP in wanted:  # praha stores no IP quotas: an IP filter matches nothing
        return QuotaFilter(nothing=True)
    return QuotaFilter(user=wanted.get(USER), client_id=wanted.get(CLIENT_ID), strict=strict)
