"""A broker setting's value as DescribeConfigs reports it, with its synonyms (no I/O).

Kafka lists, source by source (this broker's dynamic value, the cluster-wide dynamic one,
`server.properties`, the default), every member of the setting's synonym group that is
set (`log.retention.ms`, `.minutes`, `.hours`), then drops what comes before the setting's
own first entry: `log.retention.hours` shows a `log.retention.ms` it loses to no more than
`log.retention.ms` shows hours that would only apply without it.
"""
from __future__ import annotations

from collections.abc import Mapping

from praha.config.broker_defs import BROKER_CONFIG_BY_NAME
from praha.config.dynamic import DYNAMIC_BROKER_KEYS
from praha.config.model import ConfigSource, ResolvedValue
from praha.config.topic_defs import TOPIC_CONFIG_DEFS

#: a broker setting → its synonym group, in Kafka's precedence (a group of one for most)
_GROUPS: dict[str, tuple[str, ...]] = {
    s.name: tuple(x.name for x in d.synonyms) for d in TOPIC_CONFIG_DEFS if len(d.synonyms) > 1 for s in d.synonyms}


def synonym_group(key: str) -> tuple[str, ...]:
    return _GROUPS.get(key, (key,))


def resolve_broker_config(key: str, per_broker: bool, dynamic_broker: Mapping[str, str],
                          dynamic_default: Mapping[str, str], static: Mapping[str, str],
                          in_effect: Mapping[str, str | None]) -> list[ResolvedValue]:
    """The layers of `key`, the first in effect; empty when nothing is set (at `<default>`).
    Only the settings praha applies while running have dynamic layers (the others' values in
    ZooKeeper are not in effect); `in_effect` gives the values set in code or by default."""
    names = synonym_group(key)
    live = [n for n in names if n in DYNAMIC_BROKER_KEYS]
    out: list[ResolvedValue] = []
    if per_broker:
        out += [ResolvedValue(n, dynamic_broker[n], ConfigSource.DYNAMIC_BROKER_CONFIG) for n in live
                if n in dynamic_broker]
    out += [ResolvedValue(n, dynamic_default[n], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG) for n in live
            if n in dynamic_default]
    if per_broker:
        for n in names:
            d = BROKER_CONFIG_BY_NAME.get(n)
            if n in static:
                out.append(ResolvedValue(n, static[n], ConfigSource.STATIC_BROKER_CONFIG))
            elif d is not None and in_effect.get(n) != d.default:  # set in code
                out.append(ResolvedValue(n, in_effect.get(n), ConfigSource.STATIC_BROKER_CONFIG))
        for n in names:
            d = BROKER_CONFIG_BY_NAME.get(n)
            if d is not None and d.default is not None:
                out.append(ResolvedValue(n, d.default, ConfigSource.DEFAULT_CONFIG))
    first = next((i for i, r in enumerate(out) if r.name == key), None)
    if first is None:
        return [ResolvedValue(key, None, ConfigSource.DEFAULT_CONFIG)] if per_broker else []
    return out[first:]
