"""Dynamic config of topics and brokers, as kafka-configs.sh wrote it in ZooKeeper mode.

Altering an entity's config:
1. check the entity: a topic must exist (and not be marked for deletion); a broker is an
   id or `<default>` (all brokers);
2. check every key and value (topics: Kafka's topic configs; brokers: the dynamic
   settings praha applies) and that every key to delete is set — before writing;
3. write the merged config to `/config/topics/<t>` or `/config/brokers/<id>`, with the
   change notice every broker watches.
The checks and the write are `praha.zk.admin_zk.alter_config`, which the broker's
AlterConfigs and IncrementalAlterConfigs use too: the command and the API are two views of
one thing. Client quotas (`--entity-type users|clients`) go through `praha.zk.quota_zk`,
as the broker's AlterClientQuotas does.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from praha.config import ConfigSource
from praha.errors import ErrorCode, InvalidRequestError, PrahaError
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.zk.admin_zk import alter_config, check_config_entity, read_config
from praha.zk.quota_entities import (
    CLIENT_ID,
    USER,
    MatchType,
    QuotaEntity,
    check_text_alteration,
    entity_from_wire,
    filter_from_wire,
)
from praha.zk.quota_zk import describe_client_quotas, read_entity_config, write_entity_config
from praha.zk.store import ZkStore


def describe(store: ZkStore, entity_type: str, name: str) -> dict[str, str]:
    check_config_entity(store, entity_type, name)
    return read_config(store, entity_type, name)


def alter(store: ZkStore, entity_type: str, name: str, add: Mapping[str, str], delete: Iterable[str]) -> dict[str, str]:
    """Set `add` and remove `delete` in the entity's config; returns the new config."""
    delete = list(dict.fromkeys(delete))
    if not add and not delete:
        raise InvalidRequestError("nothing to alter: give --add-config and/or --delete-config")
    return alter_config(store, entity_type, name, add, delete)


def parse_config_list(text: str) -> dict[str, str]:
    """"k1=v1,k2=[a,b]" (Kafka's --add-config syntax: square brackets keep commas)."""
    items: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur))
    out: dict[str, str] = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidRequestError(f"expected key=value in --add-config, got {item!r}")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        out[key.strip()] = value
    return out


# ------------------------------------------------------------------------------- client quotas
QUOTA_ENTITY_TYPES = {"users": USER, "clients": CLIENT_ID}


def _quota_types(entity_types: Sequence[str]) -> list[str]:
    if len(set(entity_types)) != len(entity_types):
        raise InvalidRequestError(f"--entity-type {entity_types[0]} given twice")
    unknown = [t for t in entity_types if t not in QUOTA_ENTITY_TYPES]
    if unknown:
        raise InvalidRequestError(f"Unexpected entity type {unknown[0]}: only users and clients go together")
    return [QUOTA_ENTITY_TYPES[t] for t in entity_types]


def quota_entity(entity_types: Sequence[str], names: Sequence[str | None]) -> list[tuple[str, str | None]]:
    """kafka-configs' `--entity-type users|clients` (one each, either first) paired with
    `--entity-name N` / `--entity-default` (None), as wire components."""
    if len(entity_types) != len(names):
        raise InvalidRequestError("Exactly one entity name must be specified for every entity type")
    return list(zip(_quota_types(entity_types), names))


def describe_quotas(store: ZkStore, entity_types: Sequence[str], names: Sequence[str | None]
                    ) -> dict[QuotaEntity, dict[str, float]]:
    """kafka-configs --describe for users/clients: only entities of exactly these types; a
    type given a name (or the default) matches it, one without any name matches every one."""
    if len(names) > len(entity_types):
        raise InvalidRequestError("More entity names specified than entity types")
    components: list[tuple[str, int, str | None]] = []
    for i, kind in enumerate(_quota_types(entity_types)):
        if i >= len(names):
            components.append((kind, MatchType.ANY, None))
        else:
            name = names[i]
            components.append((kind, MatchType.DEFAULT if name is None else MatchType.EXACT, name))
    return describe_client_quotas(store, filter_from_wire(components, True))


def alter_quotas(store: ZkStore, entity_types: Sequence[str], names: Sequence[str | None], add: Mapping[str, str],
                 delete: Iterable[str]) -> dict[str, str]:
    """kafka-configs --alter for users/clients: the entity and every value checked
    (`check_text_alteration`, the same rules as AlterClientQuotas) before the write. Returns
    the new config."""
    delete = list(dict.fromkeys(delete))
    if not add and not delete:
        raise InvalidRequestError("nothing to alter: give --add-config and/or --delete-config")
    entity = entity_from_wire(quota_entity(entity_types, names))
    new = check_text_alteration(entity, read_entity_config(store, entity), add, delete)
    write_entity_config(store, entity, new)
    return new


# ------------------------------------------------------------------------------- --describe --all
#: Kafka's ConfigEntry.ConfigSource names (what kafka-configs prints), by wire value
_SOURCE_NAMES = {ConfigSource.TOPIC_CONFIG: "DYNAMIC_TOPIC_CONFIG"}


@dataclass(frozen=True, slots=True)
class ConfigLine:
    """One config as DescribeConfigs reports it, with its synonyms (source name, key, value)."""

    name: str
    value: str | None
    sensitive: bool
    synonyms: tuple[tuple[str, str, str | None], ...]
    source: int = ConfigSource.UNKNOWN

    def render(self) -> str:
        """kafka-configs' line: `  k=v sensitive=false synonyms={SOURCE:k=v, ...}`."""
        syn = ", ".join(f"{source}:{name}={_null(value)}" for source, name, value in self.synonyms)
        return f"  {self.name}={_null(self.value)} sensitive={str(self.sensitive).lower()} synonyms={{{syn}}}"


def _null(value: str | None) -> str:
    return "null" if value is None else value


def _source_name(source: int) -> str:
    try:
        s = ConfigSource(source)
    except ValueError:
        return "UNKNOWN"
    return _SOURCE_NAMES.get(s, s.name)


def describe_all(bootstrap: str, entity_type: str, name: str, timeout: float = 10.0,
                 security: ClientSecurity = PLAINTEXT, sources: Collection[int] | None = None) -> list[ConfigLine]:
    """Every config of a topic or broker (`name`; "" for the brokers' `<default>`) with its
    source and synonyms, as the broker's DescribeConfigs reports them: a broker's own
    settings are asked of that broker, as kafka-configs does."""
    from praha.admin.client_status import fetch_metadata
    from praha.protocol.client import BrokerConnection
    from praha.protocol.messages.gen.admin import DescribeConfigsRequest

    first = bootstrap.split(",")[0]
    host, _, port = first.rpartition(":")
    if entity_type in ("brokers", "broker-loggers") and name:
        md = fetch_metadata(first, [], timeout, security)
        broker = next((b for b in md.brokers if str(b.node_id) == name), None)
        if broker is None:
            raise InvalidRequestError(f"broker {name} is not a live broker of the cluster")
        host, port = broker.host, str(broker.port)
    rtype = {"topics": 2, "brokers": 4, "broker-loggers": 8}[entity_type]
    request = DescribeConfigsRequest(
        resources=[DescribeConfigsRequest.DescribeConfigsResource(resource_type=rtype, resource_name=name,
                                                                 configuration_keys=None)],
        include_synonyms=True, include_documentation=False)
    with BrokerConnection(host, int(port), timeout=timeout, security=security) as conn:
        response = conn.send(request, 4)
    result = response.results[0]
    if result.error_code:
        raise PrahaError(result.error_message or f"DescribeConfigs failed with error {result.error_code}",
                         ErrorCode(result.error_code))
    return sorted((ConfigLine(c.name, c.value, bool(c.is_sensitive),
                              tuple((_source_name(s.source), s.name, s.value) for s in c.synonyms or []),
                              c.config_source)
                   for c in result.configs if sources is None or c.config_source in sources), key=lambda c: c.name)
