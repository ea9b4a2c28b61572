"""Per-log settings with Kafka's names and defaults.

Broker-level keys (`log.segment.bytes`, `log.roll.ms`, ...) give the defaults; topic
overrides (`segment.bytes`, `segment.ms`, ...) replace them per topic. Which broker keys
set which topic setting, in what unit and precedence, and Kafka's defaults, are the
topic table's (`praha.config.topic_defs`). `cleanup.policy`
and the compaction settings say whether retention deletes and whether the cleaner
compacts (see `praha.log.cleaner`). Both parsers
ignore keys they do not know (other modules own them) and raise `ConfigError` on bad
values.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from praha.config import TOPIC_CONFIG_BY_NAME, first_synonym, parse_value
from praha.errors import ConfigError

DAY_MS = 24 * 3600 * 1000
MAX_SEGMENT_BYTES = 2**31 - 1  # index positions are 32-bit
LONG_MAX = 2**63 - 1
CLEANUP_POLICIES = ("compact", "delete")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def parse_cleanup_policy(value: str) -> str:
    """Kafka's `cleanup.policy` list (`delete`, `compact`, `compact,delete`, any order or
    spacing), normalised to a sorted comma-joined string; ConfigError otherwise."""
    parts = [p.strip() for p in str(value).split(",") if p.strip()]
    if not parts or any(p not in CLEANUP_POLICIES for p in parts):
        raise ConfigError(f"Invalid value {value} for configuration cleanup.policy: "
                          f"String must be one of: {', '.join(CLEANUP_POLICIES)}")
    return ",".join(sorted(set(parts)))


def _default(topic_config: str) -> Any:
    d = TOPIC_CONFIG_BY_NAME[topic_config]
    return parse_value(d, d.default)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """A log's settings by their topic names' fields; each default is the topic table's."""

    segment_bytes: int = _default("segment.bytes")
    segment_ms: int = _default("segment.ms")
    retention_ms: int = _default("retention.ms")
    retention_bytes: int = _default("retention.bytes")
    index_interval_bytes: int = _default("index.interval.bytes")
    max_message_bytes: int = _default("max.message.bytes")
    file_delete_delay_ms: int = _default("file.delete.delay.ms")
    cleanup_policy: str = _default("cleanup.policy")
    min_cleanable_dirty_ratio: float = _default("min.cleanable.dirty.ratio")
    min_compaction_lag_ms: int = _default("min.compaction.lag.ms")
    max_compaction_lag_ms: int = _default("max.compaction.lag.ms")
    delete_retention_ms: int = _default("delete.retention.ms")
    #: how far a CreateTime record's timestamp may lie before / after the broker's clock
    timestamp_before_max_ms: int = _default("message.timestamp.before.max.ms")
    timestamp_after_max_ms: int = _default("message.timestamp.after.max.ms")
    #: CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the leader's clock
    timestamp_type: str = _default("message.timestamp.type")

    @property
    def log_append_time(self) -> bool:
        return self.timestamp_type == "LogAppendTime"

    @property
    def compact(self) -> bool:
        """The cleaner compacts this log (`cleanup.policy` holds `compact`)."""
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        """Retention deletes old segments (`cleanup.policy` holds `delete`)."""
        return "delete" in self.cleanup_policy.split(",")

    def __post_init__(self) -> None:
        if not 14 <= self.segment_bytes <= MAX_SEGMENT_BYTES:
            raise ConfigError(f"segment.bytes must be in [14, {MAX_SEGMENT_BYTES}], got {self.segment_bytes}")
        if self.segment_ms < 1:
            raise ConfigError(f"segment.ms must be positive, got {self.segment_ms}")
        if self.index_interval_bytes < 0:
            raise ConfigError("index.interval.bytes must be ≥ 0")
        if self.max_message_bytes < 0:
            raise ConfigError("max.message.bytes must be ≥ 0")
        if self.file_delete_delay_ms < 0:
            raise ConfigError("file.delete.delay.ms must be ≥ 0")
        object.__setattr__(self, "cleanup_policy", parse_cleanup_policy(self.cleanup_policy))
        if not 0 <= self.min_cleanable_dirty_ratio <= 1:
            raise ConfigError(f"min.cleanable.dirty.ratio must be in [0, 1], got {self.min_cleanable_dirty_ratio}")
        if self.min_compaction_lag_ms < 0:
            raise ConfigError("min.compaction.lag.ms must be ≥ 0")
        if self.max_compaction_lag_ms < 1:
            raise ConfigError("max.compaction.lag.ms must be ≥ 1")
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise ConfigError(f"conflict topic config setting min.compaction.lag.ms ({self.min_compaction_lag_ms}) "
                              f"> max.compaction.lag.ms ({self.max_compaction_lag_ms})")
        if self.delete_retention_ms < 0:
            raise ConfigError("delete.retention.ms must be ≥ 0")
        if self.timestamp_type not in TIMESTAMP_TYPES:
            raise ConfigError(f"Invalid value {self.timestamp_type} for configuration message.timestamp.type: "
                              f"String must be one of: {', '.join(TIMESTAMP_TYPES)}")
        if self.timestamp_before_max_ms < 0 or self.timestamp_after_max_ms < 0:
            raise ConfigError("message.timestamp.before.max.ms and message.timestamp.after.max.ms must be ≥ 0")

    def with_overrides(self, topic_config: Mapping[str, str | int]) -> LogConfig:
        """This config with topic-level overrides (Kafka topic config names) applied."""
        changes = _parse(topic_config, _TOPIC_KEYS)
        return dataclasses.replace(self, **changes) if changes else self

    @classmethod
    def from_broker_config(cls, props: Mapping[str, str | int]) -> LogConfig:
        """Defaults from broker properties: for each topic setting, the broker synonym that
        wins by Kafka's precedence (ms > minutes > hours), converted to the topic's unit."""
        given: dict[str, str] = {}
        for topic_key in _TOPIC_KEYS:
            hit = first_synonym(TOPIC_CONFIG_BY_NAME[topic_key], props)  # type: ignore[arg-type]
            if hit is not None:
                given[topic_key] = hit[0].to_topic_value(str(hit[1]).strip())
        changes = _parse(given, _TOPIC_KEYS)
        base = cls()
        return dataclasses.replace(base, **changes) if changes else base


_TOPIC_KEYS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "max.message.bytes": "max_message_bytes",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "cleanup.policy": "cleanup_policy",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "delete.retention.ms": "delete_retention_ms",
    "message.timestamp.before.max.ms": "timestamp_before_max_ms",
    "message.timestamp.after.max.ms": "timestamp_after_max_ms",
    "message.timestamp.type": "timestamp_type",
}

_STR_FIELDS = {"cleanup_policy", "timestamp_type"}
_FLOAT_FIELDS = {"min_cleanable_dirty_ratio"}


def _parse(props: Mapping[str, str | int], keys: Mapping[str, str]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for key, field in keys.items():
        if key not in props:
            continue
        value = props[key]
        if field == "cleanup_policy":
            changes[field] = parse_cleanup_policy(str(value))
        elif field in _STR_FIELDS:
            changes[field] = str(value).strip()
        elif field in _FLOAT_FIELDS:
            try:
                changes[field] = float(value)
            except (TypeError, ValueError):
                raise ConfigError(f"{key} must be a number, got {value!r}") from None
        else:
            changes[field] = _to_int(key, value)
    return changes


def _to_int(key: str, value: str | int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be an integer, got {value!r}") from None
