"""What a setting is: its type, validator, dynamic level, importance and synonyms.

Every broker and topic setting is one `ConfigDef` (`praha.config.broker_defs`,
`praha.config.topic_defs`); parsing `server.properties`, AlterConfigs' checks,
DescribeConfigs and docs/configuration.md all read those two tables. Values are kept
as Kafka spells them (strings) until `parse_value` turns one into its Python type,
so a refused value is named with its key the way Kafka's ConfigDef does.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Protocol

from praha.errors import ConfigError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
HOUR, MINUTE = 3_600_000, 60_000


class ConfigType(IntEnum):
    """DescribeConfigs v3 `config_type` (Kafka's ConfigDef.Type)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """Where a reported value came from (DescribeConfigs `config_source`)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class Importance(Enum):
    """Kafka's ConfigDef.Importance: how much an operator should care."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Dynamic(Enum):
    """Where AlterConfigs may change a broker setting while brokers run (Kafka's
    DynamicBrokerConfig update modes); topic settings are always per topic."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"  # only with a broker id (or per listener)
    CLUSTER_WIDE = "cluster-wide"  # with a broker id or at `<default>`


class Validator(Protocol):
    def check(self, name: str, value: object) -> None: ...

    def describe(self) -> str: ...


def invalid(name: str, value: object, why: str) -> ConfigError:
    """Kafka's ConfigException wording, naming the key."""
    return ConfigError(f"Invalid value {value} for configuration {name}: {why}")


@dataclass(frozen=True, slots=True)
class Range:
    """Kafka's `atLeast` / `between` (inclusive)."""

    low: float | None = None
    high: float | None = None

    def check(self, name: str, value: object) -> None:
        assert isinstance(value, (int, float))
        if self.low is not None and value < self.low:
            raise invalid(name, value, f"Value must be at least {_num(self.low)}")
        if self.high is not None and value > self.high:
            raise invalid(name, value, f"Value must be no more than {_num(self.high)}")

    def describe(self) -> str:
        if self.high is None:
            return f"[{_num(self.low)},...]"
        return f"[{_num(self.low) if self.low is not None else '...'},...,{_num(self.high)}]"


@dataclass(frozen=True, slots=True)
class OneOf:
    """Kafka's `in(...)` (`ValidString`); `ignore_case` as `CaseInsensitiveValidString`."""

    choices: tuple[str, ...]
    ignore_case: bool = False

    def check(self, name: str, value: object) -> None:
        v = str(value)
        ok = v.lower() in {c.lower() for c in self.choices} if self.ignore_case else v in self.choices
        if not ok:
            raise invalid(name, value, f"String must be one of: {', '.join(self.choices)}")

    def describe(self) -> str:
        return "[" + ", ".join(self.choices) + "]"


@dataclass(frozen=True, slots=True)
class ValidList:
    """Kafka's `ValidList`: a non-empty comma-separated list of the given items."""

    choices: tuple[str, ...]

    def check(self, name: str, value: object) -> None:
        parts = [p.strip() for p in str(value).split(",")]
        if not str(value).strip() or any(p not in self.choices for p in parts):
            raise invalid(name, value, f"String must be one of: {', '.join(self.choices)}")

    def describe(self) -> str:
        return "[" + ", ".join(self.choices) + "]"


@dataclass(frozen=True, slots=True)
class KafkaVersion:
    """A Kafka release or inter-broker protocol version (`0.10.2`, `2.8`, `3.0-IV1`)."""

    def check(self, name: str, value: object) -> None:
        if not _KAFKA_VERSION.match(str(value)):
            raise invalid(name, value, f"Version `{value}` is not a valid version")

    def describe(self) -> str:
        return "[0.8.0, ..., 3.9]"


_KAFKA_VERSION = re.compile(r"^(0\.(8|9|10|11)(\.[0-9])?(\.[0-9])?|[1-3]\.[0-9])(-IV[0-9])?$")


def _num(x: float | None) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


@dataclass(frozen=True, slots=True)
class Synonym:
    """A broker setting that sets a topic setting's default; `scale` converts its unit
    (`log.retention.hours` is hours, `retention.ms` milliseconds)."""

    name: str
    scale: int = 1

    def to_topic_value(self, raw: str) -> str:
        if self.scale == 1:
            return raw
        try:
            n = int(raw)
        except ValueError:
            return raw
        return str(n * self.scale) if n >= 0 else "-1"  # Kafka: a negative time is "forever"


Value = bool | int | float | str | None


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One setting, defined once. `default` is Kafka's spelling (None: no default);
    `synonyms` (topic settings) are the broker settings that give its default, in
    Kafka's precedence order (`ServerTopicConfigSynonyms`: ms before minutes before hours)."""

    name: str
    type: ConfigType
    default: str | None
    doc: str
    validator: Validator | None = None
    dynamic: Dynamic = Dynamic.READ_ONLY
    importance: Importance = Importance.MEDIUM
    synonyms: tuple[Synonym, ...] = ()
    #: False: praha does not act on it; a broker setting is still accepted and reported as
    #: Kafka does, a topic setting is reported but refused (tiered storage, codec levels)
    applied: bool = True

    def parse(self, raw: object) -> Value:
        """The value as its type, validated (ConfigError naming the key otherwise)."""
        return parse_value(self, raw)

    @property
    def sensitive(self) -> bool:
        return self.type == ConfigType.PASSWORD


def parse_value(d: ConfigDef, raw: object) -> Value:
    if raw is None:
        return None
    s = str(raw).strip()
    value: Value
    if d.type == ConfigType.BOOLEAN:
        low = s.lower()
        if low not in ("true", "false", "1", "0", "yes", "no"):
            raise invalid(d.name, raw, "Expected value to be either true or false")
        value = low in ("true", "1", "yes")
    elif d.type in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
        try:
            value = int(s)
        except ValueError:
            raise invalid(d.name, raw, "Not a number of type " + d.type.name) from None
        limit = {ConfigType.SHORT: 2**15 - 1, ConfigType.INT: INT_MAX, ConfigType.LONG: LONG_MAX}[d.type]
        if not -limit - 1 <= value <= limit:
            raise invalid(d.name, raw, "Not a number of type " + d.type.name)
    elif d.type == ConfigType.DOUBLE:
        try:
            value = float(s)
        except ValueError:
            raise invalid(d.name, raw, "Not a number of type DOUBLE") from None
    else:
        value = s
    if d.validator is not None:
        d.validator.check(d.name, value)
    return value


def kafka_string(value: object) -> str:
    """How Kafka spells a typed value (booleans lower-case, lists comma-separated)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (tuple, list)):
        return ",".join(map(kafka_string, value))
    return "" if value is None else str(value)


@dataclass(frozen=True, slots=True)
class ResolvedValue:
    name: str
    value: str | None
    source: ConfigSource


def first_synonym(d: ConfigDef, values: Mapping[str, str]) -> tuple[Synonym, str] | None:
    """The synonym of `d` that `values` sets and that wins by Kafka's precedence."""
    for s in d.synonyms:
        if s.name in values:
            return s, values[s.name]
    return None


def resolve_topic_config(d: ConfigDef, override: Mapping[str, str], dynamic_broker: Mapping[str, str],
                         dynamic_default: Mapping[str, str], static: Mapping[str, str]) -> list[ResolvedValue]:
    """Every place a value of `d` is set, most to least specific; the first is in effect.
    Broker values are converted to the topic config's unit; the last is always Kafka's default."""
    out: list[ResolvedValue] = []
    if d.name in override:
        out.append(ResolvedValue(d.name, override[d.name], ConfigSource.TOPIC_CONFIG))
    layers: tuple[tuple[Mapping[str, str], ConfigSource], ...] = (
        (dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (static, ConfigSource.STATIC_BROKER_CONFIG),
    )
    for values, source in layers:
        for s in d.synonyms:
            if s.name in values:
                out.append(ResolvedValue(s.name, s.to_topic_value(values[s.name]), source))
    out.append(ResolvedValue(d.synonyms[0].name if d.synonyms else d.name, d.default, ConfigSource.DEFAULT_CONFIG))
    return out
