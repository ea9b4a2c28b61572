"""Dynamic config of topics and brokers, as kafka-configs.sh wrote it in ZooKeeper mode.

Altering an entity's config:
1. check the entity: a topic must exist (and not be marked for deletion); a broker is an
   id or `<default>` (all brokers);
2. check every key and value (topics: Kafka's topic configs; brokers: the dynamic
   settings praha applies) and that every key to delete is set — before writing;
3. write the merged config to `/config/topics/<t>` or `/config/brokers/<id>`;
4. write a change notice `/config/changes/config_change_<seq>` naming the entity, which
   every broker watches and answers by re-reading that config (`praha.broker.dynamic_config`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from praha.admin.topics import validate_topic_config
from praha.broker.quota import DEFAULT_BROKER_ENTITY, FOLLOWER_THROTTLED_RATE, LEADER_THROTTLED_RATE
from praha.errors import ConfigError, InvalidRequestError, PrahaError, UnknownTopicError
from praha.zk import znodes as zn
from praha.zk.ops import CreateOp, SetDataOp, WriteOutcome

TOPICS, BROKERS = "topics", "brokers"
ENTITY_TYPES = (TOPICS, BROKERS)
#: broker settings praha reads from `/config/brokers/...` while running
BROKER_DYNAMIC_CONFIGS = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)
CONFIG_CHANGE_SEQUENCE_PATH = f"{zn.CONFIG_CHANGES_PATH}/{zn.CONFIG_CHANGE_PREFIX}"


def config_path(entity_type: str, name: str) -> str:
    if entity_type == TOPICS:
        return zn.config_topic_path(name)
    if entity_type == BROKERS:
        return zn.config_broker_path(name)
    raise InvalidRequestError(f"entity type must be one of {', '.join(ENTITY_TYPES)}, not {entity_type!r}")


def notify_config_change(store, entity_type: str, name: str) -> None:
    """Kafka's change notice, so brokers re-read the entity's config."""
    store.multi([CreateOp(CONFIG_CHANGE_SEQUENCE_PATH, zn.encode_config_change(f"{entity_type}/{name}"),
                          sequential=True)])


def read_config(store, entity_type: str, name: str) -> dict[str, str]:
    path = config_path(entity_type, name)
    got = store.get_data(path)
    return {} if got is None else zn.decode_config(got[0], path)


def write_config(store, entity_type: str, name: str, config: Mapping[str, str]) -> None:
    """Replace the entity's config and notify the brokers."""
    path = config_path(entity_type, name)
    data = zn.encode_config(config)
    result = store.multi([SetDataOp(path, data)])[0]
    if result.outcome is WriteOutcome.NO_NODE:
        result = store.multi([CreateOp(path, data)])[0]
    if not result.ok:
        raise PrahaError(f"could not write {path}: {result.outcome.value}")
    notify_config_change(store, entity_type, name)


def _check_entity(store, entity_type: str, name: str) -> None:
    if entity_type == TOPICS:
        if store.exists(zn.topic_path(name)) is None:
            raise UnknownTopicError(f"topic {name!r} does not exist")
        if store.exists(zn.delete_topic_path(name)) is not None:
            raise InvalidRequestError(f"topic {name!r} is marked for deletion")
    elif entity_type == BROKERS:
        if name != DEFAULT_BROKER_ENTITY and not (name.isdigit() and int(name) >= 0):
            raise InvalidRequestError(f"broker must be a non-negative id or {DEFAULT_BROKER_ENTITY}, not {name!r}")
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


def describe(store, entity_type: str, name: str) -> dict[str, str]:
    _check_entity(store, entity_type, name)
    return read_config(store, entity_type, name)


def alter(store, entity_type: str, name: str, add: Mapping[str, str], delete: Iterable[str]) -> dict[str, str]:
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
    missing = [k for k in delete if k not in current]
    if missing:
        raise InvalidRequestError(f"cannot delete {', '.join(missing)}: not set for {entity_type}/{name}")
    new = {k: v for k, v in current.items() if k not in delete}
    new.update(checked)
    write_config(store, entity_type, name, new)
    return new


def parse_config_list(text: str) -> dict[str, str]:
    """"k1=v1,k2=[a,b]" (Kafka's --add-config syntax: square brackets keep commas)."""
    items, depth, cur = [], 0, []
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
