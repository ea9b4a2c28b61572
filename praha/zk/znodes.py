"""ZooKeeper paths and JSON codecs, byte-compatible with Apache Kafka 2.x/3.x (ZooKeeper mode).

The layout is Kafka's, so Kafka's own tools can read a praha cluster's ZooKeeper:
encoders write what Kafka writes (compact JSON, Kafka's key order); decoders accept
every version Kafka wrote and raise `ZNodeDecodeError(path, reason)` — and never any
other exception — on garbage, wrong types or unknown future versions, so a caller needs
one `except` for a corrupt znode.
"""
from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from praha.common import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
    now_ms,
)
from praha.errors import ZNodeDecodeError

# ---------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
BROKER_SEQUENCE_ID_PATH = "/brokers/seqid"
ADMIN_PATH = "/admin"
DELETE_TOPICS_PATH = "/admin/delete_topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
CONFIG_PATH = "/config"
CONFIG_TOPICS_PATH = "/config/topics"
CONFIG_CLIENTS_PATH = "/config/clients"
CONFIG_USERS_PATH = "/config/users"
CONFIG_BROKERS_PATH = "/config/brokers"
CONFIG_IPS_PATH = "/config/ips"
#: praha's home for GROUP config overrides (Kafka keeps them in KRaft only; ZooKeeper mode had none)
CONFIG_GROUPS_PATH = "/config/groups"
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
CLUSTER_PATH = "/cluster"
CLUSTER_ID_PATH = "/cluster/id"
CONSUMERS_PATH = "/consumers"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
#: praha's own: the last leader epoch of each deleted topic, so a topic re-created under the
#: same name starts above it (librdkafka ignores metadata whose leader epoch went backwards,
#: topic id or not, and would keep producing to the old leader: librdkafka issue 4898)
RETIRED_LEADER_EPOCHS_PATH = "/praha/retired_leader_epochs"
#: praha's own: each share partition's durable state (KIP-932), one znode per (group, topic, partition)
SHARE_GROUP_STATE_PATH = "/praha/share_group_state"
#: the config entity `/config/brokers/<default>`: settings for every broker without its own
DEFAULT_BROKER_ENTITY = "<default>"

#: Persistent paths a Kafka broker creates at start-up (KafkaZkClient.PersistentZkPaths),
#: parents before children. `/cluster/id` is not here: it carries data, see `cluster_id`.
PERSISTENT_PATHS: tuple[str, ...] = (
    CONSUMERS_PATH,
    BROKER_IDS_PATH,
    TOPICS_PATH,
    CONFIG_CHANGES_PATH,
    DELETE_TOPICS_PATH,
    BROKER_SEQUENCE_ID_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    PRODUCER_ID_BLOCK_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
    CONFIG_TOPICS_PATH,
    CONFIG_CLIENTS_PATH,
    CONFIG_USERS_PATH,
    CONFIG_BROKERS_PATH,
    CONFIG_IPS_PATH,
    CLUSTER_PATH,
)

controller_path = CONTROLLER_PATH
controller_epoch_path = CONTROLLER_EPOCH_PATH


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions/{partition}/state"


def tp_state_path(tp: TopicPartition) -> str:
    return partition_state_path(tp.topic, tp.partition)


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{topic}"


def retired_leader_epoch_path(topic: str) -> str:
    return f"{RETIRED_LEADER_EPOCHS_PATH}/{topic}"


def config_topic_path(topic: str) -> str:
    return f"{CONFIG_TOPICS_PATH}/{topic}"


def config_broker_path(broker: int | str) -> str:
    return f"{CONFIG_BROKERS_PATH}/{broker}"


def config_group_path(group: str) -> str:
    return f"{CONFIG_GROUPS_PATH}/{group}"


def isr_change_path(name: str) -> str:
    """Path of one notification given its child name (`isr_change_0000000042`)."""
    return f"{ISR_CHANGE_NOTIFICATION_PATH}/{name}"


ISR_CHANGE_SEQUENCE_PREFIX_PATH = f"{ISR_CHANGE_NOTIFICATION_PATH}/{ISR_CHANGE_PREFIX}"


def log_dir_event_path(name: str) -> str:
    """Path of one log-dir event notification given its child name (`log_dir_event_0000000007`)."""
    return f"{LOG_DIR_EVENT_NOTIFICATION_PATH}/{name}"


LOG_DIR_EVENT_SEQUENCE_PREFIX_PATH = f"{LOG_DIR_EVENT_NOTIFICATION_PATH}/{LOG_DIR_EVENT_PREFIX}"


def topic_from_path(path: str) -> str:
    """The topic named by `/brokers/topics/<t>[/...]`."""
    return path[len(TOPICS_PATH) + 1:].split("/", 1)[0]


# ---------------------------------------------------------------------------------------
# JSON helpers
# ---------------------------------------------------------------------------------------
def _dumps(obj: Any) -> bytes:
    """Compact JSON as Jackson writes it (no spaces, UTF-8 kept)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encode_retired_leader_epoch(leader_epoch: int) -> bytes:
    return _dumps({"version": 1, "leader_epoch": leader_epoch})


def decode_retired_leader_epoch(path: str, data: bytes | None) -> int:
    obj = _parse(path, data)
    epoch = obj.get("leader_epoch") if isinstance(obj, dict) else None
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not 0 <= epoch < 2**31 - 1:
        raise ZNodeDecodeError(path, f"leader_epoch must be an int32 >= 0, got {epoch!r}")
    return epoch


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def _parse(path: str, data: bytes | None) -> Any:
    if data is None or len(data) == 0:
        raise ZNodeDecodeError(path, "empty data")
    try:
        return json.loads(bytes(data).decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ZNodeDecodeError(path, f"not JSON: {e}") from None


def _object(path: str, data: bytes | None) -> dict[str, Any]:
    obj = _parse(path, data)
    if not isinstance(obj, dict):
        raise ZNodeDecodeError(path, f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _req(path: str, obj: Mapping[str, Any], key: str) -> Any:
    if key not in obj:
        raise ZNodeDecodeError(path, f"missing field {key!r}")
    return obj[key]


def _int(path: str, obj: Mapping[str, Any], key: str) -> int:
    v = _req(path, obj, key)
    if not _is_int(v):
        raise ZNodeDecodeError(path, f"field {key!r} must be an integer, got {v!r}")
    return int(v)


def _str(path: str, obj: Mapping[str, Any], key: str) -> str:
    v = _req(path, obj, key)
    if not isinstance(v, str):
        raise ZNodeDecodeError(path, f"field {key!r} must be a string, got {v!r}")
    return v


def _int_list(path: str, v: Any, what: str) -> tuple[int, ...]:
    if not isinstance(v, list) or not all(_is_int(x) for x in v):
        raise ZNodeDecodeError(path, f"{what} must be a list of integers, got {v!r}")
    return tuple(v)


def _dict(path: str, v: Any, what: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ZNodeDecodeError(path, f"{what} must be a JSON object, got {v!r}")
    return v


def _version(path: str, obj: Mapping[str, Any], accepted: Iterable[int], default: int | None = None) -> int:
    if "version" not in obj and default is not None:
        return default
    v = _int(path, obj, "version")
    if v not in accepted:
        raise ZNodeDecodeError(path, f"unsupported version {v}")
    return v



# ---------------------------------------------------------------------------------------
# /controller and /controller_epoch
# ---------------------------------------------------------------------------------------
_INT_RE = re.compile(rb"-?[0-9]+")


def encode_controller(broker_id: int, timestamp_ms: int | None = None) -> bytes:
    ts = now_ms() if timestamp_ms is None else timestamp_ms
    return _dumps({"version": 1, "brokerid": broker_id, "timestamp": str(ts)})


def decode_controller(data: bytes | None, path: str = CONTROLLER_PATH) -> int:
    """The active controller's broker id; accepts the legacy plain-integer form."""
    if data is not None and _INT_RE.fullmatch(bytes(data).strip()):
        return int(bytes(data).strip())
    obj = _object(path, data)
    # version 2 is Kafka 3.4+'s KRaft-migration form (adds kraftControllerEpoch)
    _version(path, obj, (1, 2), default=1)
    return _int(path, obj, "brokerid")


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes | None, path: str = CONTROLLER_EPOCH_PATH) -> int:
    if data is None or not _INT_RE.fullmatch(bytes(data)):
        raise ZNodeDecodeError(path, f"not an ASCII integer: {data!r:.60}")
    epoch = int(data)
    if epoch < 0:
        raise ZNodeDecodeError(path, f"negative controller epoch {epoch}")
    return epoch


# ---------------------------------------------------------------------------------------
# /brokers/ids/<id>
# ---------------------------------------------------------------------------------------
BROKER_ZNODE_VERSION = 5
_ENDPOINT_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


def endpoint_connection_string(ep: EndPoint) -> str:
    host = f"[{ep.host}]" if ":" in ep.host else ep.host
    return f"{ep.listener}://{host}:{ep.port}"


def parse_endpoint(path: str, s: Any, protocol_map: Mapping[str, str] | None) -> EndPoint:
    if not isinstance(s, str):
        raise ZNodeDecodeError(path, f"endpoint must be a string, got {s!r}")
    m = _ENDPOINT_RE.match(s)
    if not m:
        raise ZNodeDecodeError(path, f"unparseable endpoint {s!r}")
    listener, host, port = m.group(1), m.group(2), int(m.group(3))
    if protocol_map is None:
        protocol = listener.upper()  # before v4 the listener name is the security protocol
    elif listener in protocol_map:
        protocol = protocol_map[listener]
    else:
        raise ZNodeDecodeError(path, f"no security protocol for listener {listener!r}")
    return EndPoint(host, port, listener, protocol)


def encode_broker(info: BrokerInfo, *, jmx_port: int = -1, timestamp_ms: int | None = None,
                  features: Mapping[str, tuple[int, int]] | None = None) -> bytes:
    """Version 5 registration; `host`/`port` name the first PLAINTEXT endpoint (as Kafka)."""
    plaintext = next((e for e in info.endpoints if e.security_protocol == "PLAINTEXT"), None)
    obj: dict[str, Any] = {
        "features": {name: {"min_version": lo, "max_version": hi} for name, (lo, hi) in (features or {}).items()},
        "listener_security_protocol_map": {e.listener: e.security_protocol for e in info.endpoints},
        "endpoints": [endpoint_connection_string(e) for e in info.endpoints],
        "jmx_port": jmx_port,
        "port": plaintext.port if plaintext else -1,
        "host": plaintext.host if plaintext else None,
        "version": BROKER_ZNODE_VERSION,
        "timestamp": str(now_ms() if timestamp_ms is None else timestamp_ms),
    }
    if info.rack is not None:
        obj["rack"] = info.rack
    return _dumps(obj)


def decode_broker(broker_id: int, data: bytes | None, epoch: int = -1, path: str | None = None) -> BrokerInfo:
    """A registration of any version 1–5; `epoch` is the znode's czxid, given by the caller."""
    path = path or broker_path(broker_id)
    obj = _object(path, data)
    version = _version(path, obj, range(1, BROKER_ZNODE_VERSION + 1))
    if version == 1:
        host, port = _str(path, obj, "host"), _int(path, obj, "port")
        endpoints: tuple[EndPoint, ...] = (EndPoint(host, port),)
    else:
        protocol_map = None
        if version >= 4 and obj.get("listener_security_protocol_map") is not None:
            raw = _dict(path, obj["listener_security_protocol_map"], "listener_security_protocol_map")
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
                raise ZNodeDecodeError(path, "listener_security_protocol_map must map strings to strings")
            protocol_map = raw
        eps = _req(path, obj, "endpoints")
        if not isinstance(eps, list) or not eps:
            raise ZNodeDecodeError(path, f"endpoints must be a non-empty list, got {eps!r}")
        endpoints = tuple(parse_endpoint(path, e, protocol_map) for e in eps)
    rack = obj.get("rack") if version >= 3 else None
    if rack is not None and not isinstance(rack, str):
        raise ZNodeDecodeError(path, f"rack must be a string, got {rack!r}")
    if version >= 5 and obj.get("features") is not None:
        _dict(path, obj["features"], "features")
    return BrokerInfo(broker_id, endpoints, rack, epoch)


# ---------------------------------------------------------------------------------------
# /brokers/topics/<t>
# ---------------------------------------------------------------------------------------
def encode_topic_assignment(assignment: TopicAssignment) -> bytes:
    """Version 2, or 3 when the topic has an id (as Kafka 2.8+)."""
    parts = sorted(assignment.partitions.items())
    obj: dict[str, Any] = {
        "version": 3 if assignment.topic_id is not None else 2,
        "partitions": {str(p): list(a.replicas) for p, a in parts},
        "adding_replicas": {str(p): list(a.adding) for p, a in parts if a.adding},
        "removing_replicas": {str(p): list(a.removing) for p, a in parts if a.removing},
    }
    if assignment.topic_id is not None:
        obj["topic_id"] = assignment.topic_id
    return _dumps(obj)


def _partition_map(path: str, v: Any, what: str) -> dict[int, tuple[int, ...]]:
    out: dict[int, tuple[int, ...]] = {}
    for key, replicas in _dict(path, v, what).items():
        if not re.fullmatch(r"[0-9]+", key):
            raise ZNodeDecodeError(path, f"{what}: partition id {key!r} is not a non-negative integer")
        out[int(key)] = _int_list(path, replicas, f"{what}[{key}]")
    return out


def decode_topic_assignment(data: bytes | None, path: str = TOPICS_PATH) -> TopicAssignment:
    obj = _object(path, data)
    _version(path, obj, (1, 2, 3))
    replicas = _partition_map(path, _req(path, obj, "partitions"), "partitions")
    adding = _partition_map(path, obj.get("adding_replicas") or {}, "adding_replicas")
    removing = _partition_map(path, obj.get("removing_replicas") or {}, "removing_replicas")
    topic_id = obj.get("topic_id")
    if topic_id is not None and not isinstance(topic_id, str):
        raise ZNodeDecodeError(path, f"topic_id must be a string, got {topic_id!r}")
    return TopicAssignment(
        {p: ReplicaAssignment(r, adding.get(p, ()), removing.get(p, ())) for p, r in replicas.items()},
        topic_id,
    )


# ---------------------------------------------------------------------------------------
# /brokers/topics/<t>/partitions/<p>/state
# ---------------------------------------------------------------------------------------
def encode_partition_state(state: LeaderIsrAndControllerEpoch) -> bytes:
    lai = state.leader_and_isr
    return _dumps({"controller_epoch": state.controller_epoch, "leader": lai.leader, "version": 1,
                   "leader_epoch": lai.leader_epoch, "isr": list(lai.isr)})


def decode_partition_state(data: bytes | None, zk_version: int, path: str = "partition state"
                           ) -> LeaderIsrAndControllerEpoch:
    """Leader/ISR of one partition; extra keys (e.g. `leader_recovery_state`) are ignored."""
    obj = _object(path, data)
    _version(path, obj, (1,), default=1)
    lai = LeaderAndIsr(
        leader=_int(path, obj, "leader"),
        isr=_int_list(path, _req(path, obj, "isr"), "isr"),
        leader_epoch=_int(path, obj, "leader_epoch"),
        zk_version=zk_version,
    )
    return LeaderIsrAndControllerEpoch(lai, _int(path, obj, "controller_epoch"))


# ---------------------------------------------------------------------------------------
# partition lists: reassignment, preferred election, ISR change notifications
# ---------------------------------------------------------------------------------------
def _partition_entries(path: str, data: bytes | None) -> list[dict[str, Any]]:
    obj = _object(path, data)
    _version(path, obj, (1,))
    entries = _req(path, obj, "partitions")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ZNodeDecodeError(path, "partitions must be a list of objects")
    return entries


def _tp(path: str, entry: Mapping[str, Any]) -> TopicPartition:
    return TopicPartition(_str(path, entry, "topic"), _int(path, entry, "partition"))


def encode_reassignment(reassignment: Mapping[TopicPartition, Iterable[int]]) -> bytes:
    return _dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(r)} for tp, r in reassignment.items()]})


def decode_reassignment(data: bytes | None, path: str = REASSIGN_PARTITIONS_PATH
                        ) -> dict[TopicPartition, tuple[int, ...]]:
    """Target replicas per partition; `log_dirs` is tolerated and ignored; duplicates are an error."""
    out: dict[TopicPartition, tuple[int, ...]] = {}
    for entry in _partition_entries(path, data):
        tp = _tp(path, entry)
        if tp in out:
            raise ZNodeDecodeError(path, f"duplicate partition {tp}")
        out[tp] = _int_list(path, _req(path, entry, "replicas"), f"replicas of {tp}")
    return out


def encode_partition_set(partitions: Iterable[TopicPartition]) -> bytes:
    """The `{"version":1,"partitions":[{"topic","partition"}]}` form (preferred election, ISR change)."""
    return _dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition} for tp in sorted(partitions)]})


def decode_partition_set(data: bytes | None, path: str) -> set[TopicPartition]:
    return {_tp(path, e) for e in _partition_entries(path, data)}


encode_preferred_election = encode_partition_set
encode_isr_change = encode_partition_set


def decode_preferred_election(data: bytes | None, path: str = PREFERRED_REPLICA_ELECTION_PATH
                              ) -> set[TopicPartition]:
    return decode_partition_set(data, path)


def decode_isr_change(data: bytes | None, path: str = ISR_CHANGE_NOTIFICATION_PATH) -> set[TopicPartition]:
    return decode_partition_set(data, path)


# ---------------------------------------------------------------------------------------
# /log_dir_event_notification/log_dir_event_<seq>
# ---------------------------------------------------------------------------------------
#: Kafka's LogDirEventNotificationHandler.LogDirFailureEvent, the only event there is
LOG_DIR_FAILURE_EVENT = 1


def encode_log_dir_event(broker_id: int) -> bytes:
    """A broker's log directory failed (Kafka's LogDirEventNotificationSequenceZNode)."""
    return _dumps({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes | None, path: str = LOG_DIR_EVENT_NOTIFICATION_PATH) -> int:
    """The broker id a log-dir event notification names."""
    obj = _object(path, data)
    _version(path, obj, (1,), default=1)
    return _int(path, obj, "broker")


# ---------------------------------------------------------------------------------------
# /config/topics/<t>, /cluster/id
# ---------------------------------------------------------------------------------------
def encode_config(config: Mapping[str, str]) -> bytes:
    return _dumps({"version": 1, "config": {str(k): str(v) for k, v in config.items()}})


def decode_config(data: bytes | None, path: str = CONFIG_TOPICS_PATH) -> dict[str, str]:
    """Config overrides; an empty znode means none (as Kafka)."""
    if data is None or len(data) == 0:
        return {}
    obj = _object(path, data)
    _version(path, obj, (1,), default=1)
    config = obj.get("config")
    if config is None:
        return {}
    config = _dict(path, config, "config")
    if not all(isinstance(v, str) for v in config.values()):
        raise ZNodeDecodeError(path, "config values must be strings")
    return dict(config)


# ---------------------------------------------------------------------------------------
# /config/changes/config_change_<seq>
# ---------------------------------------------------------------------------------------
def encode_config_change(entity_path: str) -> bytes:
    """A change notice (v2) naming the entity whose config changed, e.g. "topics/t"."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes | None, path: str = CONFIG_CHANGES_PATH) -> tuple[str, str]:
    """(entity type, entity name) of a notice: v2 `entity_path` "type/name", or v1
    `entity_type` + `entity_name` (Kafka 0.10)."""
    obj = _object(path, data)
    version = _version(path, obj, (1, 2), default=1)
    if version == 2:
        entity_type, sep, name = _str(path, obj, "entity_path").partition("/")
        if not sep or not entity_type or not name:
            raise ZNodeDecodeError(path, "entity_path must be <type>/<name>")
        return entity_type, name
    return _str(path, obj, "entity_type"), _str(path, obj, "entity_name")


# ---------------------------------------------------------------------------------------
# /latest_producer_id_block
# ---------------------------------------------------------------------------------------
def encode_producer_id_block(broker_id: int, block_start: int, block_end: int) -> bytes:
    """The last block of producer ids handed to a broker (Kafka writes the ids as strings)."""
    return _dumps({"version": 1, "broker": broker_id, "block_start": str(block_start), "block_end": str(block_end)})


def decode_producer_id_block(data: bytes | None, path: str = PRODUCER_ID_BLOCK_PATH) -> tuple[int, int, int]:
    """(broker, block start, block end), inclusive."""
    obj = _object(path, data)
    _version(path, obj, (1,), default=1)
    broker = _int(path, obj, "broker")
    bounds = []
    for key in ("block_start", "block_end"):
        v = _req(path, obj, key)
        if isinstance(v, str) and v.lstrip("-").isdigit():
            v = int(v)
        if not _is_int(v) or v < 0:
            raise ZNodeDecodeError(path, f"field {key!r} must be a non-negative id, got {v!r}")
        bounds.append(v)
    if bounds[1] < bounds[0]:
        raise ZNodeDecodeError(path, f"block end {bounds[1]} is below its start {bounds[0]}")
    return broker, bounds[0], bounds[1]


def new_cluster_id() -> str:
    """Kafka's form: a random UUID in unpadded URL-safe base64 (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | None, path: str = CLUSTER_ID_PATH) -> str:
    obj = _object(path, data)
    version = obj.get("version", "1")
    if str(version) != "1" or isinstance(version, bool):
        raise ZNodeDecodeError(path, f"unsupported version {version!r}")
    return _str(path, obj, "id")


# ---------------------------------------------------------------------------------------
# codec by path
# ---------------------------------------------------------------------------------------
def decoder_for_path(path: str) -> Callable[[bytes], Any]:
    """The reference decoder of the znode at `path` (to tell a corrupt znode from a valid
    one without knowing what it holds). ValueError for a path without a known codec."""
    parts = path.strip("/").split("/")
    if path == CONTROLLER_PATH:
        return lambda d: decode_controller(d, path)
    if path == CONTROLLER_EPOCH_PATH:
        return lambda d: decode_controller_epoch(d, path)
    if path == REASSIGN_PARTITIONS_PATH:
        return lambda d: decode_reassignment(d, path)
    if path == PREFERRED_REPLICA_ELECTION_PATH:
        return lambda d: decode_preferred_election(d, path)
    if path == CLUSTER_ID_PATH:
        return lambda d: decode_cluster_id(d, path)
    if path.startswith(ISR_CHANGE_NOTIFICATION_PATH + "/"):
        return lambda d: decode_isr_change(d, path)
    if path.startswith(LOG_DIR_EVENT_NOTIFICATION_PATH + "/"):
        return lambda d: decode_log_dir_event(d, path)
    if path.startswith(CONFIG_TOPICS_PATH + "/"):
        return lambda d: decode_config(d, path)
    if path.startswith(BROKER_IDS_PATH + "/") and parts[-1].isdigit():
        return lambda d: decode_broker(int(parts[-1]), d, path=path)
    if path.startswith(TOPICS_PATH + "/"):
        if len(parts) == 3:
            return lambda d: decode_topic_assignment(d, path)
        if len(parts) == 6 and parts[5] == "state":
            return lambda d: decode_partition_state(d, 0, path)
    raise ValueError(f"no codec known for {path}")
