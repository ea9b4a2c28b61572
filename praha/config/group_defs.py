"""GROUP resource configs (Kafka 4's `GroupConfig`, the consumer- and share-group parts): what a
group may override of the broker's `group.consumer.*`, `group.share.*` and `share.*`, and
Kafka's checks of the values.

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
    #: an integer's bounding broker settings: (minimum, maximum); () for a string
    bounds: tuple[str, ...]
    doc: str
    #: a string's allowed values (compared ignoring case)
    choices: tuple[str, ...] = ()

    @property
    def is_int(self) -> bool:
        return bool(self.bounds)


GROUP_CONFIG_DEFS: tuple[GroupConfigDef, ...] = (
    GroupConfigDef("consumer.session.timeout.ms", "group.consumer.session.timeout.ms",
                   ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
                   "how long a member of this consumer group may go without a heartbeat"),
    GroupConfigDef("consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms",
                   ("group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"),
                   "how often a member of this consumer group heartbeats"),
    # KIP-932 share groups (Kafka 4.2's share part of GroupConfig)
    GroupConfigDef("share.session.timeout.ms", "group.share.session.timeout.ms",
                   ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
                   "how long a member of this share group may go without a heartbeat"),
    GroupConfigDef("share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms",
                   ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
                   "how often a member of this share group heartbeats"),
    GroupConfigDef("share.record.lock.duration.ms", "group.share.record.lock.duration.ms",
                   ("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"),
                   "how long a member of this share group holds a record it acquired"),
    GroupConfigDef("share.auto.offset.reset", "share.auto.offset.reset", (),
                   "where this share group starts on a partition it has no state for", ("latest", "earliest")),
    GroupConfigDef("share.isolation.level", "share.isolation.level", (),
                   "whether this share group skips aborted transactions",
                   ("read_uncommitted", "read_committed")),
)
#: (session, interval): the session must be longer (Kafka's GroupConfig.validate)
SESSION_OVER_INTERVAL = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                         ("share.session.timeout.ms", "share.heartbeat.interval.ms"))
GROUP_CONFIG_BY_NAME = {d.name: d for d in GROUP_CONFIG_DEFS}


def int_broker_settings() -> set[str]:
    """The broker settings integer group configs fall back to and are bounded by."""
    return {n for d in GROUP_CONFIG_DEFS if d.is_int for n in (d.broker_default, *d.bounds)}


def validate_group_config(values: Mapping[str, str], broker: Mapping[str, int]) -> dict[str, int | str]:
    """The group's whole override set (after the change), checked as Kafka does: known names,
    integers each within its broker bounds, strings among their values (lower-cased), each
    session longer than its heartbeat interval (an unset one counts at its broker value).
    `broker`: the integer broker settings (`int_broker_settings`) -> value."""
    out: dict[str, int | str] = {}
    for name, raw in values.items():
        d = GROUP_CONFIG_BY_NAME.get(name)
        if d is None:
            raise ConfigError(f"Unknown group config name: {name}")
        if not d.is_int:
            text = str(raw).strip().lower()
            if text not in d.choices:
                raise ConfigError(f"Invalid value {raw} for configuration {name}: String must be one of: "
                                  + ", ".join(d.choices))
            out[name] = text
            continue
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
    effective = {d.name: out.get(d.name, broker[d.broker_default]) for d in GROUP_CONFIG_DEFS if d.is_int}
    for session, interval in SESSION_OVER_INTERVAL:
        if int(effective[session]) <= int(effective[interval]):
            raise ConfigError(f"{session} must be greater than {interval}")
    return out
