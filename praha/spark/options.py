"""Options of the praha data source: Spark's Kafka source names and meanings, checked early.

Everything a user can get wrong in an option is caught here, before any task runs, and
reported as `OptionError` naming the option (Spark shows it inside an
AnalysisException). Checks that need the cluster (does the topic exist?) live in
`praha.spark.planning`; this module is pure.

Offsets are kept as `{TopicPartition: int}` with Kafka's sentinels: -2 earliest,
-1 latest, the same numbers Spark's JSON offsets use.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from praha.common import TopicPartition
from praha.errors import ConfigError

if TYPE_CHECKING:
    from praha.spark.security import Security

EARLIEST, LATEST = -2, -1

#: consumer settings Spark's Kafka source refuses, and what to use instead
_REFUSED_CONSUMER = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "key.deserializer": "keys are always read as bytes; deserialize with DataFrame operations",
    "value.deserializer": "values are always read as bytes; deserialize with DataFrame operations",
    "enable.auto.commit": "the source does not commit offsets to the cluster; progress lives in the checkpoint",
    "interceptor.classes": "consumer interceptors are not supported",
}
_REFUSED_PRODUCER = {
    "key.serializer": "write keys as binary or string columns; they are sent as bytes",
    "value.serializer": "write values as binary or string columns; they are sent as bytes",
}

#: defaults that differ from Spark's Kafka source, because praha reads without a Java
#: consumer's internal retries: the budgets below must outlast a broker failover
#: (ZooKeeper session timeout + election), which takes seconds.
DEFAULT_OFFSET_RETRIES = 60
DEFAULT_OFFSET_RETRY_INTERVAL_MS = 500
DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_PARTITION_FETCH_BYTES = 8 * 1024 * 1024
DEFAULT_TRANSACTIONAL_ID_PREFIX = "praha-spark"
#: Spark's default `maxTriggerDelay` (15 minutes)
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000


def _plaintext() -> Security:
    from praha.spark.security import Security

    return Security()


class OptionError(ConfigError, ValueError):
    """A bad data source option; the message starts with the option's name."""

    def __init__(self, option: str, problem: str):
        super().__init__(f"praha data source option '{option}': {problem}")
        self.option = option


@dataclass(frozen=True)
class Subscription:
    """Which partitions to read: exactly one of assign / subscribe / subscribePattern."""

    kind: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        if self.kind == "subscribePattern":
            return re.fullmatch(self.pattern or "", topic) is not None
        return topic in self.topics

    @property
    def named_topics(self) -> tuple[str, ...]:
        """Topics named literally (assign, subscribe): these must exist."""
        if self.kind == "assign":
            return tuple(sorted({tp.topic for tp in self.assigned}))
        return self.topics


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends: earliest, latest, per-partition offsets, per-partition
    timestamps, or one timestamp for every partition. `option` names its source."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamps" | "timestamp"
    option: str
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int = -1


@dataclass(frozen=True)
class ReadOptions:
    bootstrap: tuple[tuple[str, int], ...]
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    #: `minOffsetsPerTrigger`: wait for this many new offsets, at most `max_trigger_delay_ms`
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    offset_retries: int = DEFAULT_OFFSET_RETRIES
    offset_retry_interval_ms: int = DEFAULT_OFFSET_RETRY_INTERVAL_MS
    partition_fetch_bytes: int = DEFAULT_PARTITION_FETCH_BYTES
    client_id: str = "praha-spark"
    #: `kafka.isolation.level=read_committed`: read up to the last stable offset, without
    #: the records of aborted transactions
    read_committed: bool = False
    #: `kafka.security.protocol`, `kafka.sasl.*`, `kafka.ssl.*` (secrets hidden from repr)
    security: Security = field(default_factory=_plaintext)


@dataclass(frozen=True)
class WriteOptions:
    bootstrap: tuple[tuple[str, int], ...]
    topic: str | None
    producer_config: Mapping[str, str] = field(repr=False)
    #: `exactlyOnce`: each task writes in a transaction with a marker of its batch
    exactly_once: bool = False
    transactional_id_prefix: str = DEFAULT_TRANSACTIONAL_ID_PREFIX
    #: a batch write's id (made on the driver); streaming writes use the query's id
    write_id: str | None = None
    #: test hooks: first task attempts fail (praha.spark.exactly_once.FAIL_FIRST_ATTEMPT_OPTION);
    #: the driver fails the commit of this micro-batch, after its tasks wrote, as a crash would
    fail_first_attempt: str | None = None
    fail_commit_of_batch: int | None = None
    security: Security = field(default_factory=_plaintext)


# ------------------------------------------------------------------------------ helpers
def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _get(opts: dict[str, str], name: str) -> str | None:
    return opts.get(name.lower())


def parse_bootstrap(opts: dict[str, str]) -> tuple[tuple[str, int], ...]:
    name = "kafka.bootstrap.servers"
    text = _get(opts, name)
    if not text or not text.strip():
        raise OptionError(name, "is required (a comma-separated list of HOST:PORT of the cluster's brokers)")
    out = []
    for item in text.split(","):
        item = item.strip()
        if "://" in item:
            item = item.split("://", 1)[1]
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise OptionError(name, f"expected HOST:PORT entries, got {item!r}")
        out.append((host.strip("[]"), int(port)))
    return tuple(out)


def _bool(opts: dict[str, str], name: str, default: bool) -> bool:
    text = _get(opts, name)
    if text is None:
        return default
    v = text.strip().lower()
    if v not in ("true", "false"):
        raise OptionError(name, f"must be true or false, got {text!r}")
    return v == "true"


def _positive_int(opts: dict[str, str], name: str, default: int | None = None, minimum: int = 1) -> int | None:
    text = _get(opts, name)
    if text is None:
        return default
    try:
        v = int(text.strip())
    except ValueError:
        raise OptionError(name, f"must be an integer, got {text!r}") from None
    if v < minimum:
        raise OptionError(name, f"must be at least {minimum}, got {v}")
    return v


def _json(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise OptionError(name, f"is not valid JSON ({e.msg} at position {e.pos}): {text!r}") from None


def _partition_map(name: str, text: str, what: str) -> dict[TopicPartition, int]:
    """`{"topicA": {"0": 23, "1": -1}}` → {TopicPartition: int}."""
    data = _json(name, text)
    if not isinstance(data, dict) or not data:
        raise OptionError(name, f'expected a JSON object like {{"topicA": {{"0": {what}}}}}, got {text!r}')
    out: dict[TopicPartition, int] = {}
    for topic, parts in data.items():
        if not isinstance(parts, dict) or not parts:
            raise OptionError(name, f"topic {topic!r} needs an object of partition → {what}, got {parts!r}")
        for p, v in parts.items():
            try:
                partition = int(p)
            except (TypeError, ValueError):
                raise OptionError(name, f"partition {p!r} of topic {topic!r} is not an integer") from None
            if partition < 0:
                raise OptionError(name, f"partition {partition} of topic {topic!r} is negative")
            if isinstance(v, bool) or not isinstance(v, int):
                raise OptionError(name, f"{what} for {topic}-{partition} must be an integer, got {v!r}")
            out[TopicPartition(topic, partition)] = v
    return out


# ------------------------------------------------------------------------------ read
def parse_subscription(opts: dict[str, str]) -> Subscription:
    given = [k for k in ("assign", "subscribe", "subscribePattern") if _get(opts, k) is not None]
    if len(given) != 1:
        what = "none was given" if not given else "got " + " and ".join(given)
        raise OptionError(given[-1] if given else "subscribe",
                          f"exactly one of 'assign', 'subscribe', 'subscribePattern' must be set; {what}")
    kind = given[0]
    text = _get(opts, kind) or ""
    if kind == "subscribe":
        topics = tuple(t.strip() for t in text.split(",") if t.strip())
        if not topics:
            raise OptionError(kind, "needs at least one topic name (comma-separated)")
        return Subscription(kind, topics=topics)
    if kind == "subscribePattern":
        if not text.strip():
            raise OptionError(kind, "needs a regular expression")
        try:
            re.compile(text)
        except re.error as e:
            raise OptionError(kind, f"is not a valid regular expression: {e}") from None
        return Subscription(kind, pattern=text)
    data = _json(kind, text)
    if not isinstance(data, dict) or not data:
        raise OptionError(kind, f'expected a JSON object like {{"topicA": [0, 1]}}, got {text!r}')
    tps: list[TopicPartition] = []
    for topic, parts in data.items():
        if not isinstance(parts, list) or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0
                                                  for p in parts):
            raise OptionError(kind, f"topic {topic!r} needs a list of partition numbers, got {parts!r}")
        tps.extend(TopicPartition(topic, p) for p in parts)
    if not tps:
        raise OptionError(kind, "assigns no partitions")
    return Subscription(kind, topics=tuple(sorted({tp.topic for tp in tps})), assigned=tuple(sorted(set(tps))))


def _offset_spec(opts: dict[str, str], prefix: str, default: str) -> OffsetSpec:
    """`startingTimestamp` > `startingOffsetsByTimestamp` > `startingOffsets` (Spark's order);
    likewise for `ending*`."""
    name = f"{prefix}Timestamp"
    text = _get(opts, name)
    if text is not None:
        try:
            ts = int(text.strip())
        except ValueError:
            raise OptionError(name, f"must be a timestamp in milliseconds, got {text!r}") from None
        if ts < 0:
            raise OptionError(name, f"must not be negative, got {ts}")
        return OffsetSpec("timestamp", name, timestamp=ts)
    name = f"{prefix}OffsetsByTimestamp"
    text = _get(opts, name)
    if text is not None:
        stamps = _partition_map(name, text, "timestamp")
        bad = [f"{tp}" for tp, ts in stamps.items() if ts < 0]
        if bad:
            raise OptionError(name, f"timestamps must not be negative ({', '.join(bad)})")
        return OffsetSpec("timestamps", name, offsets=stamps)
    name = f"{prefix}Offsets"
    text = _get(opts, name)
    if text is None:
        return OffsetSpec(default, name)
    v = text.strip().lower()
    if v in ("earliest", "latest"):
        return OffsetSpec(v, name)
    offsets = _partition_map(name, text, "offset")
    bad = [f"{tp}={o}" for tp, o in offsets.items() if o < EARLIEST]
    if bad:
        raise OptionError(name, f"offsets must be >= 0, or -2 (earliest) / -1 (latest); got {', '.join(bad)}")
    return OffsetSpec("offsets", name, offsets=offsets)


def _check_consumer_options(opts: dict[str, str]) -> None:
    for key, hint in _REFUSED_CONSUMER.items():
        if f"kafka.{key}" in opts:
            raise OptionError(f"kafka.{key}", f"is not supported: {hint}")


def parse_read_options(options: Mapping[str, str], streaming: bool | None = None) -> ReadOptions:
    """Validate and parse. `streaming` None checks what both modes share (at `load()`)."""
    opts = _lower(options)
    _check_consumer_options(opts)
    bootstrap = parse_bootstrap(opts)
    sub = parse_subscription(opts)
    starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest")
    ending = _offset_spec(opts, "ending", "latest")
    strategy = (_get(opts, "startingOffsetsByTimestampStrategy") or "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError("startingOffsetsByTimestampStrategy", f"must be 'error' or 'latest', got {strategy!r}")
    if streaming is False:
        if starting.kind == "latest":
            raise OptionError(starting.option, "cannot be 'latest' for a batch query (it would read nothing)")
        if starting.kind == "offsets" and any(o == LATEST for o in starting.offsets.values()):
            bad = [str(tp) for tp, o in starting.offsets.items() if o == LATEST]
            raise OptionError(starting.option, f"-1 (latest) is not allowed in a batch query ({', '.join(bad)})")
        if ending.kind == "earliest":
            raise OptionError(ending.option, "cannot be 'earliest' for a batch query (it would read nothing)")
        if ending.kind == "offsets" and any(o == EARLIEST for o in ending.offsets.values()):
            bad = [str(tp) for tp, o in ending.offsets.items() if o == EARLIEST]
            raise OptionError(ending.option, f"-2 (earliest) is not allowed as an ending offset ({', '.join(bad)})")
    if streaming is True:
        for name in ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp"):
            if _get(opts, name) is not None:
                raise OptionError(name, "is for batch queries only; a streaming query has no end")
    if sub.kind == "assign":
        for spec in (starting, ending):
            if spec.kind in ("offsets", "timestamps"):
                extra = sorted(str(tp) for tp in spec.offsets if tp not in set(sub.assigned))
                missing = sorted(str(tp) for tp in sub.assigned if tp not in spec.offsets)
                if extra or missing:
                    raise OptionError(spec.option, "must name exactly the assigned partitions"
                                      + (f"; not assigned: {', '.join(extra)}" if extra else "")
                                      + (f"; missing: {', '.join(missing)}" if missing else ""))
    elif sub.kind == "subscribe":
        for spec in (starting, ending):
            if spec.kind in ("offsets", "timestamps"):
                extra = sorted({tp.topic for tp in spec.offsets if tp.topic not in sub.topics})
                if extra:
                    raise OptionError(spec.option, f"names topics that are not subscribed: {', '.join(extra)}")
    min_partitions = _positive_int(opts, "minPartitions")
    max_per_partition = _positive_int(opts, "maxRecordsPerPartition")
    max_per_trigger = _positive_int(opts, "maxOffsetsPerTrigger")
    min_per_trigger = _positive_int(opts, "minOffsetsPerTrigger")
    delay_text = _get(opts, "maxTriggerDelay")
    delay_ms = parse_duration_ms("maxTriggerDelay", delay_text) if delay_text is not None \
        else DEFAULT_MAX_TRIGGER_DELAY_MS
    if min_per_trigger is not None and max_per_trigger is not None and min_per_trigger > max_per_trigger:
        raise OptionError("minOffsetsPerTrigger", f"({min_per_trigger}) must not exceed maxOffsetsPerTrigger "
                          f"({max_per_trigger})")
    from praha.spark.security import parse_security

    security = parse_security(opts)
    return ReadOptions(
        bootstrap=bootstrap, subscription=sub, starting=starting, ending=ending,
        timestamp_strategy=strategy,
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        include_headers=_bool(opts, "includeHeaders", False),
        min_partitions=min_partitions, max_records_per_partition=max_per_partition,
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger, max_trigger_delay_ms=delay_ms,
        poll_timeout_ms=_positive_int(opts, "kafkaConsumer.pollTimeoutMs", DEFAULT_POLL_TIMEOUT_MS) or 0,
        offset_retries=_positive_int(opts, "fetchOffset.numRetries", DEFAULT_OFFSET_RETRIES, minimum=0) or 0,
        offset_retry_interval_ms=_positive_int(opts, "fetchOffset.retryIntervalMs",
                                               DEFAULT_OFFSET_RETRY_INTERVAL_MS, minimum=0) or 0,
        partition_fetch_bytes=_positive_int(opts, "kafka.max.partition.fetch.bytes",
                                            DEFAULT_PARTITION_FETCH_BYTES) or DEFAULT_PARTITION_FETCH_BYTES,
        client_id=_client_id(opts),
        read_committed=_isolation(opts),
        security=security,
    )


def _client_id(opts: dict[str, str]) -> str:
    """`kafka.client.id`; else the group id the user named (`kafka.group.id`, `groupIdPrefix`),
    so per-client quotas and broker logs can tell pipelines apart. praha reads without
    joining a group, so no group ACL is ever checked."""
    group = _get(opts, "kafka.group.id")
    prefix = _get(opts, "groupIdPrefix")
    for name, v in (("kafka.group.id", group), ("groupIdPrefix", prefix)):
        if v is not None and not v.strip():
            raise OptionError(name, "must not be empty")
    return (_get(opts, "kafka.client.id") or (group.strip() if group else None)
            or (f"{prefix.strip()}-praha-spark" if prefix else "praha-spark"))


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|sec|second|seconds|m|min|minute|minutes|h|hour|hours)?\s*$", re.I)
_UNIT_MS = {"ms": 1, "s": 1000, "sec": 1000, "second": 1000, "seconds": 1000, "m": 60_000, "min": 60_000,
            "minute": 60_000, "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000}


def parse_duration_ms(name: str, text: str) -> int:
    """Spark's time strings: `15m`, `30s`, `500ms`, `1 hour` (a bare number is milliseconds)."""
    m = _DURATION.match(text)
    if m is None:
        raise OptionError(name, f"must be a duration like 500ms, 30s, 15m or 1h, got {text!r}")
    return int(m.group(1)) * _UNIT_MS[(m.group(2) or "ms").lower()]


def _isolation(opts: dict[str, str]) -> bool:
    """`kafka.isolation.level` as the Java consumer takes it: True for read_committed."""
    text = (_get(opts, "kafka.isolation.level") or "read_uncommitted").strip().lower()
    if text not in ("read_uncommitted", "read_committed"):
        raise OptionError("kafka.isolation.level", f"must be read_uncommitted or read_committed, got {text!r}")
    return text == "read_committed"


# ------------------------------------------------------------------------------ write
#: librdkafka settings that carry Java-only names in Spark pipelines; mapped or dropped
_JAVA_ONLY = {"key.serializer", "value.serializer", "max.block.ms", "buffer.memory", "block.on.buffer.full"}


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    opts = _lower(options)
    for key, hint in _REFUSED_PRODUCER.items():
        if f"kafka.{key}" in opts:
            raise OptionError(f"kafka.{key}", f"is not supported: {hint}")
    bootstrap = parse_bootstrap(opts)
    topic = _get(opts, "topic")
    if topic is not None and not topic.strip():
        raise OptionError("topic", "must not be empty")
    from praha.spark.security import SECURITY_OPTIONS, parse_security

    security = parse_security(opts)
    config: dict[str, str] = {"acks": "all"}
    for k, v in options.items():
        lk = str(k).lower()
        if lk.startswith("kafka.") and lk != "kafka.bootstrap.servers":
            name = str(k)[len("kafka."):]
            if name.lower() not in _JAVA_ONLY and name.lower() not in SECURITY_OPTIONS:
                config[name] = str(v)
    config["bootstrap.servers"] = ",".join(f"{h}:{p}" for h, p in bootstrap)
    if config.get("acks", "all").lower() not in ("all", "-1", "1", "0"):
        raise OptionError("kafka.acks", f"must be all, -1, 1 or 0, got {config['acks']!r}")
    exactly_once = _bool(opts, "exactlyOnce", False)
    prefix = _get(opts, "transactionalIdPrefix") or DEFAULT_TRANSACTIONAL_ID_PREFIX
    fail_first = _get(opts, "praha.test.failFirstAttempt")
    if exactly_once:
        _check_exactly_once(config, prefix, fail_first)
    fail_commit = _get(opts, "praha.test.failCommitOfBatch")
    if fail_commit is not None and not fail_commit.strip().isdigit():
        raise OptionError("praha.test.failCommitOfBatch", f"must be a batch id, got {fail_commit!r}")
    return WriteOptions(bootstrap=bootstrap, topic=topic.strip() if topic else None, producer_config=config,
                        exactly_once=exactly_once, transactional_id_prefix=prefix.strip(),
                        fail_first_attempt=fail_first,
                        fail_commit_of_batch=int(fail_commit) if fail_commit is not None else None,
                        security=security)


def _check_exactly_once(config: Mapping[str, str], prefix: str, fail_first: str | None) -> None:
    """What `exactlyOnce=true` needs of the producer settings: the sink names each task's
    transactional id itself, and a transaction is written with acks=all and idempotence."""
    if "transactional.id" in config:
        raise OptionError("kafka.transactional.id", "is set by the sink for each task with exactlyOnce=true; "
                          "use 'transactionalIdPrefix' to name them")
    if config.get("acks", "all").lower() not in ("all", "-1"):
        raise OptionError("kafka.acks", f"must be all with exactlyOnce=true, got {config['acks']!r}")
    if config.get("enable.idempotence", "true").lower() == "false":
        raise OptionError("kafka.enable.idempotence", "cannot be false with exactlyOnce=true")
    if not prefix.strip() or not re.fullmatch(r"[A-Za-z0-9._-]+", prefix.strip()):
        raise OptionError("transactionalIdPrefix", f"must be letters, digits, '.', '_' or '-', got {prefix!r}")
    if fail_first not in (None, "beforeCommit", "afterCommit"):
        raise OptionError("praha.test.failFirstAttempt", f"must be beforeCommit or afterCommit, got {fail_first!r}")
