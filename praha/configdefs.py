"""Kafka's topic config definitions (3.9): name, type, default, broker synonyms, a short doc.

One table that DescribeConfigs answers from, so a topic's value is reported with the
source Kafka would name: the topic's own override, a dynamic broker config (this broker's,
then the cluster-wide `<default>`), the broker's `server.properties`, or Kafka's default.
A broker synonym may carry a unit: `log.retention.hours=1` is `retention.ms=3600000`.
The synonyms are listed in Kafka's precedence order (`ServerTopicConfigSynonyms`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

LONG_MAX = 2**63 - 1


class ConfigType(IntEnum):
    """DescribeConfigs v3 `config_type`."""

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


@dataclass(frozen=True, slots=True)
class Synonym:
    """A broker config that sets a topic config's default; `scale` converts its unit."""

    name: str
    scale: int = 1

    def to_topic_value(self, raw: str) -> str:
        if self.scale == 1:
            return raw
        try:
            return str(int(raw) * self.scale)
        except ValueError:
            return raw


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    name: str
    type: ConfigType
    default: str | None
    synonyms: tuple[Synonym, ...]
    doc: str


HOUR, MINUTE = 3_600_000, 60_000


def _log(name: str) -> Synonym:
    return Synonym(f"log.{name}")


def _d(name: str, type_: ConfigType, default: str | None, doc: str, *synonyms: Synonym) -> TopicConfigDef:
    return TopicConfigDef(name, type_, default, synonyms, doc)


T = ConfigType
TOPIC_CONFIG_DEFS: tuple[TopicConfigDef, ...] = (
    _d("cleanup.policy", T.LIST, "delete", "delete old segments by time/size, compact to the last value per key, or both",
       _log("cleanup.policy")),
    _d("compression.type", T.STRING, "producer", "the codec the broker stores batches in; 'producer' keeps theirs",
       Synonym("compression.type")),
    _d("compression.gzip.level", T.INT, "9", "gzip level when the topic recompresses", Synonym("compression.gzip.level")),
    _d("compression.lz4.level", T.INT, "9", "lz4 level when the topic recompresses", Synonym("compression.lz4.level")),
    _d("compression.zstd.level", T.INT, "3", "zstd level when the topic recompresses", Synonym("compression.zstd.level")),
    _d("delete.retention.ms", T.LONG, "86400000", "how long a tombstone survives compaction",
       Synonym("log.cleaner.delete.retention.ms")),
    _d("file.delete.delay.ms", T.LONG, "60000", "wait before a deleted segment's files are removed",
       Synonym("log.segment.delete.delay.ms")),
    _d("flush.messages", T.LONG, str(LONG_MAX), "fsync after this many records (the default leaves it to the OS)",
       Synonym("log.flush.interval.messages")),
    _d("flush.ms", T.LONG, str(LONG_MAX), "fsync after this long (the default leaves it to the OS)",
       Synonym("log.flush.interval.ms"), Synonym("log.flush.scheduler.interval.ms")),
    _d("follower.replication.throttled.replicas", T.LIST, "", "replicas whose follower fetches are throttled"),
    _d("index.interval.bytes", T.INT, "4096", "bytes between offset index entries", _log("index.interval.bytes")),
    _d("leader.replication.throttled.replicas", T.LIST, "", "replicas whose leader serves throttled fetches"),
    _d("local.retention.bytes", T.LONG, "-2", "tiered storage: local bytes kept (-2: as retention.bytes)",
       _log("local.retention.bytes")),
    _d("local.retention.ms", T.LONG, "-2", "tiered storage: local time kept (-2: as retention.ms)",
       _log("local.retention.ms")),
    _d("max.compaction.lag.ms", T.LONG, str(LONG_MAX), "a record is compacted at the latest this long after written",
       Synonym("log.cleaner.max.compaction.lag.ms")),
    _d("max.message.bytes", T.INT, "1048588", "the largest record batch the topic accepts",
       Synonym("message.max.bytes")),
    _d("message.downconversion.enable", T.BOOLEAN, "true", "down-convert for old consumers",
       _log("message.downconversion.enable")),
    _d("message.format.version", T.STRING, "3.0-IV1", "deprecated; ignored for new message formats",
       _log("message.format.version")),
    _d("message.timestamp.after.max.ms", T.LONG, str(LONG_MAX), "how far in the future a record's timestamp may be",
       _log("message.timestamp.after.max.ms")),
    _d("message.timestamp.before.max.ms", T.LONG, str(LONG_MAX), "how far in the past a record's timestamp may be",
       _log("message.timestamp.before.max.ms")),
    _d("message.timestamp.difference.max.ms", T.LONG, str(LONG_MAX), "deprecated: the largest timestamp skew accepted",
       _log("message.timestamp.difference.max.ms")),
    _d("message.timestamp.type", T.STRING, "CreateTime", "CreateTime keeps the producer's; LogAppendTime stamps on append",
       _log("message.timestamp.type")),
    _d("min.cleanable.dirty.ratio", T.DOUBLE, "0.5", "the dirty share of a log that makes it worth compacting",
       Synonym("log.cleaner.min.cleanable.ratio")),
    _d("min.compaction.lag.ms", T.LONG, "0", "a record stays uncompacted at least this long",
       Synonym("log.cleaner.min.compaction.lag.ms")),
    _d("min.insync.replicas", T.INT, "1", "in-sync replicas an acks=all write needs", Synonym("min.insync.replicas")),
    _d("preallocate", T.BOOLEAN, "false", "preallocate segment files", _log("preallocate")),
    _d("remote.log.copy.disable", T.BOOLEAN, "false", "tiered storage: stop copying segments to remote storage"),
    _d("remote.log.delete.on.disable", T.BOOLEAN, "false", "tiered storage: delete remote data when disabled"),
    _d("remote.storage.enable", T.BOOLEAN, "false", "tiered storage for this topic (not served by praha)"),
    _d("retention.bytes", T.LONG, "-1", "the size a partition may reach before old segments go (-1: no limit)",
       _log("retention.bytes")),
    _d("retention.ms", T.LONG, "604800000", "how long a record is kept (-1: forever)",
       _log("retention.ms"), Synonym("log.retention.minutes", MINUTE), Synonym("log.retention.hours", HOUR)),
    _d("segment.bytes", T.INT, "1073741824", "the size of one segment file", _log("segment.bytes")),
    _d("segment.index.bytes", T.INT, "10485760", "the size of a segment's offset index", _log("index.size.max.bytes")),
    _d("segment.jitter.ms", T.LONG, "0", "random jitter subtracted from segment.ms",
       _log("roll.jitter.ms"), Synonym("log.roll.jitter.hours", HOUR)),
    _d("segment.ms", T.LONG, "604800000", "a segment is rolled at the latest this long after its first record",
       _log("roll.ms"), Synonym("log.roll.hours", HOUR)),
    _d("unclean.leader.election.enable", T.BOOLEAN, "false", "elect an out-of-sync replica rather than none",
       Synonym("unclean.leader.election.enable")),
)

TOPIC_CONFIG_BY_NAME: dict[str, TopicConfigDef] = {d.name: d for d in TOPIC_CONFIG_DEFS}

#: the broker configs praha applies while running (`/config/brokers/...`); every other
#: broker setting is read-only as far as DescribeConfigs is concerned, and dynamic values
#: ZooKeeper may hold for them are not reported as in effect (they are not)
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
THROTTLE_RATE_KEYS: tuple[str, ...] = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)

#: the topic configs whose broker-wide default can change while brokers run (Kafka's
#: DynamicLogConfig): those praha's logs and partitions apply, by their broker name
DYNAMIC_LOG_TOPIC_CONFIGS: tuple[str, ...] = (
    "cleanup.policy", "delete.retention.ms", "file.delete.delay.ms", "index.interval.bytes",
    "max.compaction.lag.ms", "max.message.bytes", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
    "min.insync.replicas", "retention.bytes", "retention.ms", "segment.bytes", "segment.ms",
)
#: broker name → topic name, e.g. "log.retention.ms" → "retention.ms" (same unit)
DYNAMIC_LOG_KEYS: dict[str, str] = {
    TOPIC_CONFIG_BY_NAME[t].synonyms[0].name: t for t in DYNAMIC_LOG_TOPIC_CONFIGS}
DYNAMIC_BROKER_KEYS: tuple[str, ...] = THROTTLE_RATE_KEYS + tuple(DYNAMIC_LOG_KEYS)
DYNAMIC_BROKER_DEFAULTS: dict[str, str] = {
    LEADER_THROTTLED_RATE: str(LONG_MAX), FOLLOWER_THROTTLED_RATE: str(LONG_MAX),
    **{b: TOPIC_CONFIG_BY_NAME[t].default or "" for b, t in DYNAMIC_LOG_KEYS.items()}}

# ---- what Kafka 3.9 lets AlterConfigs change on a broker (DynamicBrokerConfig) ---------------
#: TLS key and trust stores: only per listener (`listener.name.<l>.ssl.keystore.location`)
DYNAMIC_SECURITY_CONFIGS: frozenset[str] = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.type", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.certificates",
})
#: a listener's settings, changed as `listener.name.<l>.<setting>` (DynamicListenerConfig)
DYNAMIC_LISTENER_CONFIGS: frozenset[str] = frozenset({
    "listeners", "listener.security.protocol.map", "principal.builder.class",
    "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keystore.type",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
    "ssl.client.auth", "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "max.connections", "max.connection.creation.rate", "num.network.threads",
})
#: per-listener settings given per SASL mechanism: `listener.name.<l>.<mechanism>.<setting>`
LISTENER_MECHANISM_CONFIGS: tuple[str, ...] = (
    "sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
    "sasl.server.callback.handler.class", "connections.max.reauth.ms",
)
#: listener settings that may also be set cluster-wide (the rest need a broker id)
CLUSTER_LEVEL_LISTENER_CONFIGS: frozenset[str] = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"})
#: every other broker setting Kafka 3.9 changes while running (cleaner, thread pools,
#: socket server, producer state, replication, reporters); the logs' defaults are
#: DYNAMIC_LOG_KEYS' and their synonyms
KAFKA_DYNAMIC_BROKER_CONFIGS: frozenset[str] = frozenset({
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
    "num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads",
    "metric.reporters", "max.connections.per.ip", "max.connections.per.ip.overrides",
    "producer.id.expiration.ms", "transaction.partition.verification.enable",
    "replica.alter.log.dirs.io.max.bytes.per.second", "follower.fetch.last.tiered.offset.enable",
    "remote.log.index.file.cache.total.size.bytes", "remote.fetch.max.wait.ms",
    "remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second",
    "remote.log.reader.threads", "config.providers",
    "log.message.timestamp.type", "log.message.downconversion.enable", "log.preallocate", "log.index.size.max.bytes",
    "log.flush.interval.messages", "log.flush.interval.ms", "log.roll.jitter.ms", "log.retention.minutes",
    "log.retention.hours", "log.roll.hours", "compression.type", "unclean.leader.election.enable",
    "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
    "log.message.timestamp.difference.max.ms", "log.local.retention.ms", "log.local.retention.bytes",
} | set(DYNAMIC_SECURITY_CONFIGS) | set(DYNAMIC_LISTENER_CONFIGS))

#: the broker settings the log cleaner reads (Kafka's CleanerConfig names; `praha.log.cleaner`)
CLEANER_KEYS: tuple[str, ...] = (
    "log.cleaner.enable", "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms", "log.cleaner.io.buffer.load.factor",
)
#: broker settings that `BrokerConfig` passes through rather than names: the topic configs'
#: broker synonyms (the logs' defaults, `praha.log.config`), the cleaner's, the dynamic ones.
#: They are known: a broker must not call them unknown.
BROKER_KEYS_READ_ELSEWHERE: frozenset[str] = frozenset(
    {s.name for d in TOPIC_CONFIG_DEFS for s in d.synonyms} | set(CLEANER_KEYS) | set(DYNAMIC_BROKER_KEYS))


@dataclass(frozen=True, slots=True)
class ResolvedValue:
    name: str
    value: str | None
    source: ConfigSource


def resolve_topic_config(d: TopicConfigDef, override: Mapping[str, str], dynamic_broker: Mapping[str, str],
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

