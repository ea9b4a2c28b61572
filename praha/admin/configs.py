"""Dynamic config of topics and brokers, as kafka-configs.sh wrote it in ZooKeeper mode.

Altering an entity's config:
1. check the entity: a topic must exist (and not be marked for deletion); a broker is an
   id or `<default>` (all brokers);
2. check every key and value (topics: Kafka's topic configs; brokers: the dynamic
   settings praha applies) and that every key to delete is set — before writing;
3. write the merged config to `/config/topics/<t>` or `/config/brokers/<id>`, with the
   change notice every broker watches (`praha.zk.admin_zk.write_config`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from praha.config import FOLLOWER_THROTTLED_RATE, LEADER_THROTTLED_RATE
from praha.errors import ConfigError, InvalidRequestError, UnknownTopicError
from praha.topic_rules import check_compaction_lags, check_min_insync_replicas, validate_topic_config
from praha.zk import znodes as zn
from praha.zk.admin_zk import BROKERS, TOPICS, config_path, read_config, write_config
from praha.zk.store import ZkStore

#: broker settings praha reads from `/config/brokers/...` while running
BROKER_DYNAMIC_CONFIGS = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)


def _check_entity(store: ZkStore, entity_type: str, name: str) -> None:
    if entity_type == TOPICS:
        if store.exists(zn.topic_path(name)) is None:
            raise UnknownTopicError(f"topic {name!r} does not exist")
        if store.exists(zn.delete_topic_path(name)) is not None:
            raise InvalidRequestError(f"topic {name!r} is marked for deletion")
    elif entity_type == BROKERS:
        if name != zn.DEFAULT_BROKER_ENTITY and not (name.isdigit() and int(name) >= 0):
            raise InvalidRequestError(f"broker must be a non-negative id or {zn.DEFAULT_BROKER_ENTITY}, not {name!r}")
        if name != zn.DEFAULT_BROKER_ENTITY and store.get_broker(int(name)) is None:
            live = sorted(store.get_live_brokers()[0])
            raise InvalidRequestError(f"broker {name} is not registered (live brokers: "
                                      f"{', '.join(map(str, live)) or 'none'}); use --entity-default for all brokers")
    else:
        config_path(entity_type, name)  # raises


def _check_values(entity_type: str, add: Mapping[str, str]) -> dict[str, str]:
    if entity_type == TOPICS:
        return validate_topic_config(add)
    out = {}
    for key, value in add.items():
        if key not in BROKER_DYNAMIC_CONFIGS:
            raise ConfigError(f"{key!r} cannot be changed while brokers run; dynamic broker configs: "
                              f"{', '.join(BROKER_DYNAMIC_CONFIGS)}")
        value = str(value).strip()
        if not value.isdigit() or int(value) <= 0:
            raise ConfigError(f"invalid value {value!r} for {key}: expected a positive number of bytes/s")
        out[key] = value
    return out


def describe(store: ZkStore, entity_type: str, name: str) -> dict[str, str]:
    _check_entity(store, entity_type, name)
    return read_config(store, entity_type, name)


def alter(store: ZkStore, entity_type: str, name: str, add: Mapping[str, str], delete: Iterable[str]) -> dict[str, str]:
    """Set `add` and remove `delete` in the entity's config; returns the new config."""
    delete = list(dict.fromkeys(delete))
    if not add and not delete:
        raise InvalidRequestError("nothing to alter: give --add-config and/or --delete-config")
    both = sorted(set(add) & set(delete))
    if both:
        raise InvalidRequestError(f"{', '.join(both)} both added and deleted")
    _check_entity(store, entity_type, name)
    checked = _check_values(entity_type, add)
    current = read_config(store, entity_type, name)
    if entity_type == TOPICS and "min.insync.replicas" in checked:
        assignment = store.get_topic_assignments([name])[0].get(name)
        if assignment is not None and assignment.partitions:
            check_min_insync_replicas(checked, min(len(a.replicas) for a in assignment.partitions.values()))
    missing = [k for k in delete if k not in current]
    if missing:
        raise InvalidRequestError(f"cannot delete {', '.join(missing)}: not set for {entity_type}/{name}")
    new = {k: v for k, v in current.items() if k not in delete}
    new.update(checked)
    if entity_type == TOPICS:
        check_compaction_lags(new)
    write_config(store, entity_type, name, new)
    return new


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
