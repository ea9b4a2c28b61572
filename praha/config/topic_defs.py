"""Kafka's topic settings (3.9), defined once: name, type, default, bounds, broker synonyms, a doc.

DescribeConfigs answers from this table, so a topic's value is reported with the source
Kafka would name: the topic's own override, a dynamic broker config (this broker's, then
the cluster-wide `<default>`), the broker's `server.properties`, or Kafka's default. A
broker synonym may carry a unit: `log.retention.hours=1` is `retention.ms=3600000`. The
synonyms are listed in Kafka's precedence order (`ServerTopicConfigSynonyms`).
A new topic setting is one `_d(...)` line.
"""
from __future__ import annotations

from praha.config.model import (
    HOUR,
    INT_MAX,
    LONG_MAX,
    MINUTE,
    ConfigDef,
    ConfigType,
    KafkaVersion,
    OneOf,
    Range,
    Synonym,
    Validator,
    ValidList,
)


def _log(name: str) -> Synonym:
    return Synonym(f"log.{name}")


def _d(name: str, type_: ConfigType, default: str | None, doc: str, *synonyms: Synonym,
       validator: Validator | None = None, applied: bool = True) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, validator=validator, synonyms=synonyms, applied=applied)


T = ConfigType
TOPIC_CONFIG_DEFS: tuple[ConfigDef, ...] = (
    _d("cleanup.policy", T.LIST, "delete",
       "delete old segments by time/size, compact to the last value per key, or both",
       _log("cleanup.policy"), validator=ValidList(("compact", "delete"))),
    _d("compression.type", T.STRING, "producer", "the codec the broker stores batches in; 'producer' keeps theirs",
       Synonym("compression.type"),
       validator=OneOf(("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"))),
    _d("compression.gzip.level", T.INT, "9", "gzip level when the topic recompresses",
       Synonym("compression.gzip.level"),
       applied=False),
    _d("compression.lz4.level", T.INT, "9", "lz4 level when the topic recompresses", Synonym("compression.lz4.level"),
       applied=False),
    _d("compression.zstd.level", T.INT, "3", "zstd level when the topic recompresses",
       Synonym("compression.zstd.level"),
       applied=False),
    _d("delete.retention.ms", T.LONG, "86400000", "how long a tombstone survives compaction",
       Synonym("log.cleaner.delete.retention.ms"), validator=Range(0)),
    _d("file.delete.delay.ms", T.LONG, "60000", "wait before a deleted segment's files are removed",
       Synonym("log.segment.delete.delay.ms"), validator=Range(0)),
    _d("flush.messages", T.LONG, str(LONG_MAX), "fsync after this many records (the default leaves it to the OS)",
       Synonym("log.flush.interval.messages"), validator=Range(1)),
    _d("flush.ms", T.LONG, str(LONG_MAX), "fsync after this long (the default leaves it to the OS)",
       Synonym("log.flush.interval.ms"), Synonym("log.flush.scheduler.interval.ms"), validator=Range(0)),
    _d("follower.replication.throttled.replicas", T.LIST, "", "replicas whose follower fetches are throttled"),
    _d("index.interval.bytes", T.INT, "4096", "bytes between offset index entries", _log("index.interval.bytes"),
       validator=Range(0)),
    _d("leader.replication.throttled.replicas", T.LIST, "", "replicas whose leader serves throttled fetches"),
    _d("local.retention.bytes", T.LONG, "-2", "tiered storage: local bytes kept (-2: as retention.bytes)",
       _log("local.retention.bytes"), applied=False),
    _d("local.retention.ms", T.LONG, "-2", "tiered storage: local time kept (-2: as retention.ms)",
       _log("local.retention.ms"), applied=False),
    _d("max.compaction.lag.ms", T.LONG, str(LONG_MAX), "a record is compacted at the latest this long after written",
       Synonym("log.cleaner.max.compaction.lag.ms"), validator=Range(1)),
    _d("max.message.bytes", T.INT, "1048588", "the largest record batch the topic accepts",
       Synonym("message.max.bytes"), validator=Range(0)),
    _d("message.downconversion.enable", T.BOOLEAN, "true", "down-convert for old consumers",
       _log("message.downconversion.enable")),
    _d("message.format.version", T.STRING, "3.0-IV1", "deprecated; ignored for new message formats",
       _log("message.format.version"), validator=KafkaVersion()),
    _d("message.timestamp.after.max.ms", T.LONG, str(LONG_MAX), "how far in the future a record's timestamp may be",
       _log("message.timestamp.after.max.ms"), validator=Range(0)),
    _d("message.timestamp.before.max.ms", T.LONG, str(LONG_MAX), "how far in the past a record's timestamp may be",
       _log("message.timestamp.before.max.ms"), validator=Range(0)),
    _d("message.timestamp.difference.max.ms", T.LONG, str(LONG_MAX), "deprecated: the largest timestamp skew accepted",
       _log("message.timestamp.difference.max.ms"), validator=Range(0)),
    _d("message.timestamp.type", T.STRING, "CreateTime",
       "CreateTime keeps the producer's; LogAppendTime stamps on append",
       _log("message.timestamp.type"), validator=OneOf(("CreateTime", "LogAppendTime"))),
    _d("min.cleanable.dirty.ratio", T.DOUBLE, "0.5", "the dirty share of a log that makes it worth compacting",
       Synonym("log.cleaner.min.cleanable.ratio"), validator=Range(0, 1)),
    _d("min.compaction.lag.ms", T.LONG, "0", "a record stays uncompacted at least this long",
       Synonym("log.cleaner.min.compaction.lag.ms"), validator=Range(0)),
    _d("min.insync.replicas", T.INT, "1", "in-sync replicas an acks=all write needs", Synonym("min.insync.replicas"),
       validator=Range(1)),
    _d("preallocate", T.BOOLEAN, "false", "preallocate segment files", _log("preallocate")),
    _d("remote.log.copy.disable", T.BOOLEAN, "false", "tiered storage: stop copying segments to remote storage",
       applied=False),
    _d("remote.log.delete.on.disable", T.BOOLEAN, "false", "tiered storage: delete remote data when disabled",
       applied=False),
    _d("remote.storage.enable", T.BOOLEAN, "false", "tiered storage for this topic", applied=False),
    _d("retention.bytes", T.LONG, "-1", "the size a partition may reach before old segments go (-1: no limit)",
       _log("retention.bytes")),
    _d("retention.ms", T.LONG, "604800000", "how long a record is kept (-1: forever)",
       _log("retention.ms"), Synonym("log.retention.minutes", MINUTE), Synonym("log.retention.hours", HOUR),
       validator=Range(-1)),
    _d("segment.bytes", T.INT, "1073741824", "the size of one segment file", _log("segment.bytes"),
       validator=Range(14, INT_MAX)),
    _d("segment.index.bytes", T.INT, "10485760", "the size of a segment's offset index", _log("index.size.max.bytes"),
       validator=Range(4, INT_MAX)),
    _d("segment.jitter.ms", T.LONG, "0", "random jitter subtracted from segment.ms",
       _log("roll.jitter.ms"), Synonym("log.roll.jitter.hours", HOUR), validator=Range(0)),
    _d("segment.ms", T.LONG, "604800000", "a segment is rolled at the latest this long after its first record",
       _log("roll.ms"), Synonym("log.roll.hours", HOUR), validator=Range(1)),
    _d("unclean.leader.election.enable", T.BOOLEAN, "false", "elect an out-of-sync replica rather than none",
       Synonym("unclean.leader.election.enable")),
)

TOPIC_CONFIG_BY_NAME: dict[str, ConfigDef] = {d.name: d for d in TOPIC_CONFIG_DEFS}
