"""Per-log settings with Kafka's names and defaults.

Broker-level keys (`log.segment.bytes`, `log.roll.ms`, ...) give the defaults; topic
overrides (`segment.bytes`, `segment.ms`, ...) replace them per topic. Both parsers
ignore keys they do not know (other modules own them) and raise `ConfigError` on bad
values.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping

from praha.errors import ConfigError

DAY_MS = 24 * 3600 * 1000
MAX_SEGMENT_BYTES = 2**31 - 1  # index positions are 32-bit


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1 << 30  # log.segment.bytes / segment.bytes
    segment_ms: int = 7 * DAY_MS  # log.roll.ms / segment.ms
    retention_ms: int = 7 * DAY_MS  # log.retention.ms / retention.ms (-1: keep forever)
    retention_bytes: int = -1  # log.retention.bytes / retention.bytes (-1: no limit)
    index_interval_bytes: int = 4096  # log.index.interval.bytes / index.interval.bytes
    max_message_bytes: int = 1048588  # message.max.bytes / max.message.bytes
    file_delete_delay_ms: int = 60_000  # log.segment.delete.delay.ms / file.delete.delay.ms

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

    def with_overrides(self, topic_config: Mapping[str, str | int]) -> "LogConfig":
        """This config with topic-level overrides (Kafka topic config names) applied."""
        changes = {}
        for key, field in _TOPIC_KEYS.items():
            if key in topic_config:
                changes[field] = _to_int(key, topic_config[key])
        return dataclasses.replace(self, **changes) if changes else self

    @classmethod
    def from_broker_config(cls, props: Mapping[str, str | int]) -> "LogConfig":
        """Defaults from broker properties, honouring Kafka's ms > minutes > hours precedence."""
        base = cls()
        changes: dict[str, int] = {}
        for key, field in _BROKER_KEYS.items():
            if key in props:
                changes[field] = _to_int(key, props[key])
        if "log.roll.ms" not in props and "log.roll.hours" in props:
            changes["segment_ms"] = _to_int("log.roll.hours", props["log.roll.hours"]) * 3600 * 1000
        if "log.retention.ms" not in props:
            if "log.retention.minutes" in props:
                changes["retention_ms"] = _to_int("log.retention.minutes", props["log.retention.minutes"]) * 60_000
            elif "log.retention.hours" in props:
                changes["retention_ms"] = _to_int("log.retention.hours", props["log.retention.hours"]) * 3600 * 1000
        return dataclasses.replace(base, **changes) if changes else base


_TOPIC_KEYS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "max.message.bytes": "max_message_bytes",
    "file.delete.delay.ms": "file_delete_delay_ms",
}

_BROKER_KEYS = {
    "log.segment.bytes": "segment_bytes",
    "log.roll.ms": "segment_ms",
    "log.retention.ms": "retention_ms",
    "log.retention.bytes": "retention_bytes",
    "log.index.interval.bytes": "index_interval_bytes",
    "message.max.bytes": "max_message_bytes",
    "log.segment.delete.delay.ms": "file_delete_delay_ms",
}


def _to_int(key: str, value: str | int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be an integer, got {value!r}") from None
