"""Admin writes to ZooKeeper (Kafka's `AdminZkClient`), shared by the admin tools
(`praha.admin`, the CLI) and the broker's admin APIs (CreateTopics, DeleteTopics,
CreatePartitions), so neither imports the other.

Each call only writes znodes; the controller (or, for configs, every broker) does the rest.
The checks are `praha.topic_rules` (no I/O) and all precede the first write, so a refused
request changes nothing:
  - topic creation: 1. read live brokers and existing topics; 2. `plan_topic`; 3. unless
    validate-only, `/config/topics/<t>` then `/brokers/topics/<t>` (`ZkStore.create_topic`),
    whose appearance the controller watches;
  - deletion: 1. the topic must exist and not be marked already; 2. create
    `/admin/delete_topics/<t>` (the controller watches its children);
  - expansion: 1. read `/brokers/topics/<t>` with its zkVersion; 2. `plan_new_partitions`;
    3. write the whole assignment back, conditional on that zkVersion, so a concurrent
    change (another expansion, a reassignment finishing) is never lost;
  - config write: 1. replace `/config/topics/<t>` or `/config/brokers/<id>`; 2. create a
    change notice `/config/changes/config_change_<seq>` naming the entity, which every
    broker watches and answers by re-reading that config.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from praha.common import ReplicaAssignment, TopicAssignment, TopicPartition, new_topic_id
from praha.config import (
    BROKER_CONFIG_BY_NAME,
    CLUSTER_LEVEL_LISTENER_CONFIGS,
    DYNAMIC_BROKER_KEYS,
    DYNAMIC_LISTENER_CONFIGS,
    DYNAMIC_LOG_KEYS,
    DYNAMIC_SECURITY_CONFIGS,
    KAFKA_DYNAMIC_BROKER_CONFIGS,
    LISTENER_MECHANISM_CONFIGS,
)
from praha.config.group_defs import GROUP_CONFIG_BY_NAME
from praha.errors import (
    ConcurrentModificationError,
    ConfigError,
    InvalidRequestError,
    PrahaError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicError,
)
from praha.topic_rules import (
    check_compaction_lags,
    check_min_insync_replicas,
    plan_new_partitions,
    plan_topic,
    validate_topic_config,
)
from praha.zk import znodes as zn
from praha.zk.ops import CreateOp, SetDataOp, WriteOutcome
from praha.zk.store import ZkStore

TOPICS, BROKERS, GROUPS = "topics", "brokers", "groups"
ENTITY_TYPES = (TOPICS, BROKERS, GROUPS)
CONFIG_CHANGE_SEQUENCE_PATH = f"{zn.CONFIG_CHANGES_PATH}/{zn.CONFIG_CHANGE_PREFIX}"


# ------------------------------------------------------------------------------- topics
def create_topic(store: ZkStore, name: str, partitions: int | None, replication_factor: int | None,
                 config: Mapping[str, str] | None = None, assignment: Mapping[int, Sequence[int]] | None = None,
                 validate_only: bool = False, default_partitions: int = 1,
                 default_replication_factor: int = 1) -> TopicAssignment:
    """Check and (unless `validate_only`) create a topic; returns its assignment."""
    brokers, _ = store.get_live_brokers()
    existing = set(store.get_all_topics())
    plan, cfg = plan_topic(
        name, partitions, replication_factor, set(brokers), existing, config, assignment,
        default_partitions, default_replication_factor,
    )
    if not validate_only:
        plan.topic_id = new_topic_id()  # kept in the topic znode (version 3), as Kafka 2.8+
        store.create_topic(name, plan, cfg)
    return plan


def create_topic_if_absent(store: ZkStore, name: str, partitions: int, replication_factor: int,
                           config: Mapping[str, str] | None = None) -> bool:
    """Create the topic unless it exists (a broker creating it on a client's behalf, where a
    concurrent creation by another broker is success too); True if this call created it."""
    try:
        create_topic(store, name, partitions, replication_factor, config, default_partitions=partitions,
                     default_replication_factor=replication_factor)
        return True
    except TopicExistsError:
        return False


def delete_topic(store: ZkStore, topic: str) -> None:
    """Mark `topic` for deletion by creating `/admin/delete_topics/<t>`."""
    if store.exists(zn.topic_path(topic)) is None:
        raise UnknownTopicError(f"Topic '{topic}' does not exist.")
    # a create in a multi tells "already there" apart atomically (no exists-then-create race)
    result = store.multi([CreateOp(zn.delete_topic_path(topic))])[0]
    if result.outcome is WriteOutcome.NODE_EXISTS:
        raise TopicAlreadyMarkedForDeletionError(f"Topic '{topic}' is already marked for deletion.")
    if result.outcome is WriteOutcome.NO_NODE:  # /admin/delete_topics itself is missing
        store.ensure_persistent_paths()
        return delete_topic(store, topic)
    if not result.ok:
        raise PrahaError(f"could not mark topic '{topic}' for deletion: {result.outcome.value} {result.error or ''}")


def reassigning_partitions(store: ZkStore) -> set[TopicPartition]:
    """Partitions named in `/admin/reassign_partitions` (an unreadable znode counts as none)."""
    try:
        return set(store.get_reassignments())
    except PrahaError:
        return set()


def read_assignment(store: ZkStore, topic: str) -> tuple[TopicAssignment | None, int]:
    """`/brokers/topics/<t>` and its zkVersion ((None, -1) if absent)."""
    got = store.get_data(zn.topic_path(topic))
    if got is None:
        return None, -1
    data, stat = got
    return zn.decode_topic_assignment(data, zn.topic_path(topic)), stat.version


def add_partitions(store: ZkStore, topic: str, total: int, assignment: Sequence[Sequence[int]] | None = None,
                   validate_only: bool = False) -> dict[int, tuple[int, ...]]:
    """Grow `topic` to `total` partitions; returns the new partitions' replicas."""
    current, version = read_assignment(store, topic)
    marked = current is not None and store.exists(zn.delete_topic_path(topic)) is not None
    brokers, _ = store.get_live_brokers()
    added = plan_new_partitions(topic, current, total, set(brokers), assignment, marked,
                                reassigning_partitions(store) if current is not None else ())
    if validate_only:
        return added
    assert current is not None  # plan_new_partitions refuses an absent topic
    partitions: dict[int, ReplicaAssignment] = dict(current.partitions)
    partitions.update({p: ReplicaAssignment(r) for p, r in added.items()})
    result = store.set_topic_assignment(topic, TopicAssignment(partitions, current.topic_id), expected_version=version)
    if result.outcome is WriteOutcome.BAD_VERSION:
        raise ConcurrentModificationError(
            f"Topic '{topic}' was modified while adding partitions; nothing was written, try again.")
    if result.outcome is WriteOutcome.NO_NODE:
        raise UnknownTopicError(f"Topic '{topic}' does not exist.")
    if not result.ok:
        raise PrahaError(f"could not write the assignment of '{topic}': {result.outcome.value} {result.error or ''}")
    return added


def partitions_with_leaders(store: ZkStore, topic: str, partitions: Collection[int]) -> set[int]:
    """Which of `partitions` have a leader on a live broker (for waiting after an expansion)."""
    brokers, _ = store.get_live_brokers()
    states, _ = store.get_partition_states([TopicPartition(topic, p) for p in partitions])
    return {tp.partition for tp, s in states.items() if s.leader_and_isr.leader in brokers}


# ------------------------------------------------------------------------------- configs
def config_path(entity_type: str, name: str) -> str:
    if entity_type == TOPICS:
        return zn.config_topic_path(name)
    if entity_type == BROKERS:
        return zn.config_broker_path(name)
    if entity_type == GROUPS:
        return zn.config_group_path(name)
    raise InvalidRequestError(f"entity type must be one of {', '.join(ENTITY_TYPES)}, not {entity_type!r}")


def notify_config_change(store: ZkStore, entity_type: str, name: str) -> None:
    """Kafka's change notice, so brokers re-read the entity's config."""
    store.multi([CreateOp(CONFIG_CHANGE_SEQUENCE_PATH, zn.encode_config_change(f"{entity_type}/{name}"),
                          sequential=True)])


def read_config(store: ZkStore, entity_type: str, name: str) -> dict[str, str]:
    path = config_path(entity_type, name)
    got = store.get_data(path)
    return {} if got is None else zn.decode_config(got[0], path)


def check_config_entity(store: ZkStore, entity_type: str, name: str) -> None:
    """The entity must exist: a topic not marked for deletion, a registered broker or `<default>`."""
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
    elif entity_type == GROUPS:
        if not name or "/" in name:
            raise InvalidRequestError(f"invalid group id {name!r}")  # any group id, existing or not, as Kafka
    else:
        config_path(entity_type, name)  # raises


def check_config_values(entity_type: str, add: Mapping[str, str], name: str = "<default>") -> dict[str, str]:
    """Kafka's validation of the values set: topic configs by their definitions; broker
    configs by Kafka 3.9's dynamic rules (`broker_dynamic_refusal`); the ones praha applies
    while running are checked for their values too: the throttle rates (positive bytes/s)
    and the broker-wide defaults of log configs, checked as the topic config they set."""
    if entity_type == TOPICS:
        return validate_topic_config(add)
    if entity_type == GROUPS:
        unknown = sorted(set(add) - set(GROUP_CONFIG_BY_NAME))
        if unknown:
            raise ConfigError(f"Unknown group config name: {unknown[0]}")
        return {k: str(v).strip() for k, v in add.items()}  # values: the broker checks them against its bounds
    refusal = broker_dynamic_refusal(add, per_broker=name != "<default>")
    if refusal:
        raise ConfigError(refusal)
    out = {}
    for key, value in add.items():
        value = str(value).strip()
        if key in DYNAMIC_LOG_KEYS:
            out[key] = validate_topic_config({DYNAMIC_LOG_KEYS[key]: value})[DYNAMIC_LOG_KEYS[key]]
            continue
        if key in DYNAMIC_BROKER_KEYS and (not value.isdigit() or int(value) <= 0):
            raise ConfigError(f"invalid value {value!r} for {key}: expected a positive number of bytes/s")
        d = BROKER_CONFIG_BY_NAME.get(_listener_base(key) or key)
        if d is not None:
            d.parse(value)  # the table's type and valid values (ConfigError naming the key)
        out[key] = value
    return out


def _listener_base(key: str) -> str | None:
    """`listener.name.<l>.<setting>` → setting (a mechanism's: its last part); None otherwise."""
    if not key.startswith("listener.name."):
        return None
    rest = key[len("listener.name."):].partition(".")[2]
    return next((m for m in LISTENER_MECHANISM_CONFIGS if rest.endswith("." + m)), rest)


def broker_dynamic_refusal(keys: Collection[str], per_broker: bool) -> str | None:
    """Why Kafka 3.9 would refuse to change these broker settings dynamically (its
    DynamicBrokerConfig.validateConfigs), or None: a setting that is not dynamic; a TLS
    store without a listener prefix; a per-broker setting at the cluster-wide default."""
    def dynamic(key: str) -> bool:
        b = _listener_base(key)
        if b is not None:
            return b in DYNAMIC_LISTENER_CONFIGS or b in LISTENER_MECHANISM_CONFIGS
        return key in KAFKA_DYNAMIC_BROKER_CONFIGS or key in DYNAMIC_BROKER_KEYS or key in DYNAMIC_LOG_KEYS

    static = sorted(k for k in keys if not dynamic(k))
    if static:
        return f"Cannot update these configs dynamically: {', '.join(static)}"
    unprefixed = sorted(k for k in keys if k in DYNAMIC_SECURITY_CONFIGS)
    if unprefixed:
        return ("These security configs can be dynamically updated only per-listener using the listener prefix: "
                + ", ".join(unprefixed))
    if not per_broker:
        broker_only = sorted(
            k
            for k in keys
            if (_listener_base(k) or k) not in CLUSTER_LEVEL_LISTENER_CONFIGS
            and (_listener_base(k) is not None or k in DYNAMIC_LISTENER_CONFIGS | DYNAMIC_SECURITY_CONFIGS)
        )
        if broker_only:
            return ("Cannot update these configs at default cluster level, broker id must be specified: "
                    + ", ".join(broker_only))
    return None


def alter_config(store: ZkStore, entity_type: str, name: str, add: Mapping[str, str], delete: Collection[str],
                 replace: bool = False, validate_only: bool = False) -> dict[str, str]:
    """Set `add` and remove `delete` (or, with `replace`, make `add` the whole config, as
    the legacy AlterConfigs does); every check before the write. Returns the new config."""
    both = sorted(set(add) & set(delete))
    if both:
        raise InvalidRequestError(f"{', '.join(both)} both added and deleted")
    check_config_entity(store, entity_type, name)
    checked = check_config_values(entity_type, add, name)
    current = {} if replace else read_config(store, entity_type, name)
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
    if not validate_only:
        write_config(store, entity_type, name, new)
    return new


def write_config(store: ZkStore, entity_type: str, name: str, config: Mapping[str, str]) -> None:
    """Replace the entity's config and notify the brokers."""
    path = config_path(entity_type, name)
    data = zn.encode_config(config)
    result = store.multi([SetDataOp(path, data)])[0]
    if result.outcome is WriteOutcome.NO_NODE and entity_type == GROUPS:
        store.multi([CreateOp(zn.CONFIG_GROUPS_PATH, b"")])  # its first group config (exists already: no matter)
    if result.outcome is WriteOutcome.NO_NODE:
        result = store.multi([CreateOp(path, data)])[0]
    if not result.ok:
        raise PrahaError(f"could not write {path}: {result.outcome.value}")
    notify_config_change(store, entity_type, name)
