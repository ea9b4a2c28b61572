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
one thing.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from praha.errors import InvalidRequestError
from praha.zk.admin_zk import alter_config, check_config_entity, read_config
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
