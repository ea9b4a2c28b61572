"""Client quota configs in ZooKeeper (Kafka's AdminZkClient for users and clients), shared
by the broker's DescribeClientQuotas / AlterClientQuotas and `praha configs --entity-type
clients|users`, so the API and the command are two views of one thing.

Altering one entity: 1. read its config (`QuotaEntity.zk_path`); 2. apply the operations
with `check_alteration` (every check before any write); 3. unless validate-only, write the
whole config back (parents created empty, as Kafka's createRecursive does) and create the
change notice `/config/changes/config_change_<seq>` naming `clients/<id>`, `users/<u>` or
`users/<u>/clients/<id>`, which every broker watches.
Describing: every quota znode is read (three levels: clients, users, users' clients) and
filtered by `QuotaFilter`, which gives the same answer as Kafka's targeted reads.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from praha.errors import PrahaError, ZNodeDecodeError
from praha.zk import znodes as zn
from praha.zk.admin_zk import notify_config_change
from praha.zk.ops import CreateOp, SetDataOp, WriteOutcome
from praha.zk.quota_entities import (
    CLIENTS_TYPE,
    QuotaEntity,
    QuotaFilter,
    QuotaOp,
    check_alteration,
    quota_values,
)
from praha.zk.store import ZkStore


def read_entity_config(store: ZkStore, entity: QuotaEntity) -> dict[str, str]:
    got = store.get_data(entity.zk_path)
    return {} if got is None else zn.decode_config(got[0], entity.zk_path)


def read_all_quota_configs(store: ZkStore) -> dict[QuotaEntity, dict[str, str]]:
    """Every user, client and user+client config in ZooKeeper (unreadable ones skipped)."""
    clients = store.get_children(zn.CONFIG_CLIENTS_PATH) or []
    users = store.get_children(zn.CONFIG_USERS_PATH) or []
    entities = [QuotaEntity(client_id=c) for c in clients] + [QuotaEntity(user=u) for u in users]
    user_clients = store.get_children_bulk([f"{zn.CONFIG_USERS_PATH}/{u}/{CLIENTS_TYPE}" for u in users])
    for u in users:
        for c in user_clients.get(f"{zn.CONFIG_USERS_PATH}/{u}/{CLIENTS_TYPE}") or []:
            entities.append(QuotaEntity(user=u, client_id=c))
    got = store.get_data_bulk([e.zk_path for e in entities])
    out: dict[QuotaEntity, dict[str, str]] = {}
    for e in entities:
        item = got.get(e.zk_path)
        if item is None:
            continue
        try:
            out[e] = zn.decode_config(item[0], e.zk_path)
        except ZNodeDecodeError:
            continue
    return out


def describe_client_quotas(store: ZkStore, quota_filter: QuotaFilter) -> dict[QuotaEntity, dict[str, float]]:
    """The entities matching the filter that have at least one quota, with their values."""
    out = {}
    for entity, config in read_all_quota_configs(store).items():
        values = quota_values(config)
        if values and quota_filter.matches(entity):
            out[entity] = values
    return out


def alter_client_quotas(store: ZkStore, entity: QuotaEntity, ops: Iterable[QuotaOp],
                        validate_only: bool = False) -> dict[str, str]:
    """Apply `ops` to the entity's config; returns the new config. Raises QuotaError (nothing written)."""
    new = check_alteration(entity, read_entity_config(store, entity), ops)
    if not validate_only:
        write_entity_config(store, entity, new)
    return new


def write_entity_config(store: ZkStore, entity: QuotaEntity, config: Mapping[str, str]) -> None:
    """Replace the entity's config (creating its parents) and notify every broker."""
    path = entity.zk_path
    data = zn.encode_config(config)
    result = store.multi([SetDataOp(path, data)])[0]
    if result.outcome is WriteOutcome.NO_NODE:
        parent = path.rsplit("/", 1)[0]
        if parent != zn.CONFIG_USERS_PATH and parent != zn.CONFIG_CLIENTS_PATH:
            store.ensure_paths([parent])  # /config/users/<u>/clients (empty, as Kafka creates it)
        result = store.multi([CreateOp(path, data)])[0]
        if result.outcome is WriteOutcome.NODE_EXISTS:  # created meanwhile by another writer
            result = store.multi([SetDataOp(path, data)])[0]
    if not result.ok:
        raise PrahaError(f"could not write {path}: {result.outcome.value} {result.error or ''}")
    entity_type, _, name = entity.entity_path.partition("/")
    notify_config_change(store, entity_type, name)
