"""GROUP resource configs (Kafka 4's `GroupConfig`, consumer-protocol part): what a group may
override of the broker's `group.consumer.*`, and Kafka's checks of the values.

A group's overrides live in `/config/groups/<group>` (praha's place: Kafka keeps them in its
KRaft metadata only), are written with IncrementalAlterConfigs/AlterConfigs on a GROUP resource
and read by DescribeConfigs; each falls back to its broker setting.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from praha.errors import ConfigError


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    #: the broker setting that gives the value when the group sets none
    broker_default: str
    #: the broker settings bounding it: (minimum, maximum)
    bounds: tuple[str, str]
    doc: str


GROUP_CONFIG_DEFS: tuple[GroupConfigDef, ...] = (
    GroupConfigDef("consumer.session.timeout.ms", "group.consumer.session.timeout.ms",
                   ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
                   "how long a member of this consumer group may go without a heartbeat"),
    GroupConfigDef("consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms",
                   ("group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"),
                   "how often a member of this consumer group heartbeats"),
)
GROUP_CONFIG_BY_NAME = {d.name: d for d in GROUP_CONFIG_DEFS}


def validate_group_config(values: Mapping[str, str], broker: Mapping[str, int]) -> dict[str, int]:
    """The group's whole override set (after the change), checked as Kafka does: known names,
    integers, each within its broker bounds, the session longer than the heartbeat interval
    (an unset one counts at its broker value). `broker`: broker setting name -> value."""
    out: dict[str, int] = {}
    for name, raw in values.items():
        d = GROUP_CONFIG_BY_NAME.get(name)
        if d is None:
            raise ConfigError(f"Unknown group config name: {name}")
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type INT") from None
        low, high = (broker[b] for b in d.bounds)
        if value < low:
            raise ConfigError(f"{name} must be greater than or equal to {d.bounds[0]} ({low})")
        if value > high:
            raise ConfigError(f"{name} must be less than or equal to {d.bounds[1]} ({high})")
        out[name] = value
    effective = {d.name: out.get(d.name, broker[d.broker_default]) for d in GROUP_CONFIG_DEFS}
    if effective["consumer.session.timeout.ms"] <= effective["consumer.heartbeat.interval.ms"]:
        raise ConfigError("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")
    return out
