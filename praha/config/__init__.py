"""One place for configuration: every broker and topic setting defined once.

- `model`: what a setting is (type, validator, dynamic level, importance, synonyms);
- `topic_defs`, `broker_defs`: the two tables (a new setting is one line);
- `dynamic`: which broker settings change while brokers run, and praha's live subset;
- `broker_config`: `BrokerConfig`, `server.properties` parsed and validated by the table;
- `docs`: docs/configuration.md, generated from the tables.
"""
from __future__ import annotations

from praha.config.broker_config import (
    ACL_AUTHORIZERS,
    DEFAULT_PROTOCOL_MAP,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_REPLICAS,
    LISTENER_PREFIX,
    SECURITY_PROTOCOLS,
    BrokerConfig,
    canonical_host_name,
    parse_ip_overrides,
    parse_listeners,
    parse_properties,
    parse_protocol_map,
    unknown_keys,
)
from praha.config.broker_defs import BROKER_CONFIG_BY_NAME, BROKER_CONFIG_DEFS, CONSUMER_GROUP_ASSIGNORS
from praha.config.dynamic import (
    CLEANER_KEYS,
    CLUSTER_LEVEL_LISTENER_CONFIGS,
    DYNAMIC_BROKER_KEYS,
    DYNAMIC_LISTENER_CONFIGS,
    DYNAMIC_LOG_KEYS,
    DYNAMIC_LOG_TOPIC_CONFIGS,
    DYNAMIC_SECURITY_CONFIGS,
    FOLLOWER_THROTTLED_RATE,
    KAFKA_DYNAMIC_BROKER_CONFIGS,
    LEADER_THROTTLED_RATE,
    LISTENER_MECHANISM_CONFIGS,
    THROTTLE_RATE_KEYS,
)
from praha.config.model import (
    HOUR,
    LONG_MAX,
    MINUTE,
    ConfigDef,
    ConfigSource,
    ConfigType,
    Dynamic,
    Importance,
    ResolvedValue,
    Synonym,
    first_synonym,
    kafka_string,
    parse_value,
    resolve_topic_config,
)
from praha.config.topic_defs import TOPIC_CONFIG_BY_NAME, TOPIC_CONFIG_DEFS

#: the old name of a topic setting's definition
TopicConfigDef = ConfigDef

__all__ = [
    "CONSUMER_GROUP_ASSIGNORS",
    "ACL_AUTHORIZERS", "BROKER_CONFIG_BY_NAME", "BROKER_CONFIG_DEFS", "CLEANER_KEYS", "CLUSTER_LEVEL_LISTENER_CONFIGS",
    "DEFAULT_PROTOCOL_MAP", "DYNAMIC_BROKER_KEYS", "DYNAMIC_LISTENER_CONFIGS", "DYNAMIC_LOG_KEYS",
    "DYNAMIC_LOG_TOPIC_CONFIGS", "DYNAMIC_SECURITY_CONFIGS", "FOLLOWER_THROTTLED_RATE", "FOLLOWER_THROTTLED_REPLICAS",
    "HOUR", "KAFKA_DYNAMIC_BROKER_CONFIGS", "LEADER_THROTTLED_RATE", "LEADER_THROTTLED_REPLICAS",
    "LISTENER_MECHANISM_CONFIGS", "LISTENER_PREFIX", "LONG_MAX", "MINUTE", "SECURITY_PROTOCOLS", "THROTTLE_RATE_KEYS",
    "TOPIC_CONFIG_BY_NAME", "TOPIC_CONFIG_DEFS", "BrokerConfig", "ConfigDef", "ConfigSource", "ConfigType", "Dynamic",
    "Importance", "ResolvedValue", "Synonym", "TopicConfigDef", "canonical_host_name", "first_synonym",
    "kafka_string", "parse_ip_overrides", "parse_listeners", "parse_properties", "parse_protocol_map",
    "parse_value", "resolve_topic_config", "unknown_keys",
]
