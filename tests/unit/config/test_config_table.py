"""The one table of settings (`praha.config`): every default parses with its type, the
validators refuse with the key's name, Kafka's precedence holds in every synonym group,
every key praha reads is in the table, and docs/configuration.md is the table's."""
from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from praha.broker.replication.replica_manager import log_config_of
from praha.config import (
    BROKER_CONFIG_BY_NAME,
    BROKER_CONFIG_DEFS,
    CLEANER_KEYS,
    CLUSTER_LEVEL_LISTENER_CONFIGS,
    DYNAMIC_BROKER_KEYS,
    DYNAMIC_LISTENER_CONFIGS,
    DYNAMIC_SECURITY_CONFIGS,
    TOPIC_CONFIG_BY_NAME,
    TOPIC_CONFIG_DEFS,
    BrokerConfig,
    ConfigSource,
    ConfigType,
    Dynamic,
    parse_value,
    resolve_topic_config,
    unknown_keys,
)
from praha.config.broker_config import setting
from praha.config.describe import resolve_broker_config
from praha.config.docs import render
from praha.errors import ConfigError
from praha.log.cleaner import CleanerConfig
from praha.log.config import LogConfig
from praha.zk.admin_zk import BROKERS, broker_dynamic_refusal, check_config_values

ROOT = Path(__file__).resolve().parents[3]
BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/x"}
PY_TYPE = {ConfigType.BOOLEAN: bool, ConfigType.INT: int, ConfigType.SHORT: int, ConfigType.LONG: int,
           ConfigType.DOUBLE: float, ConfigType.STRING: str, ConfigType.LIST: str, ConfigType.CLASS: str,
           ConfigType.PASSWORD: str}
MULTI_SYNONYM = [d for d in TOPIC_CONFIG_DEFS if len(d.synonyms) > 1]


def test_every_default_parses_with_its_type_and_passes_its_validator():
    """One test over every setting (not one per setting: each test has a cost in `make test`)."""
    bad = []
    for d in BROKER_CONFIG_DEFS + TOPIC_CONFIG_DEFS:
        try:
            ok = d.default is None or isinstance(parse_value(d, d.default), PY_TYPE[d.type])
        except ConfigError as e:
            ok, d = False, dataclasses.replace(d, doc=f"{d.doc}: {e}")
        if not ok or not d.doc.strip():
            bad.append(f"{d.name}: default {d.default!r} ({d.type.name}), doc {d.doc!r}")
    assert bad == []
    assert len(BROKER_CONFIG_DEFS) > 150
    assert len(TOPIC_CONFIG_DEFS) > 30


def test_names_are_unique_and_every_field_is_bound_to_the_table():
    assert len(BROKER_CONFIG_BY_NAME) == len(BROKER_CONFIG_DEFS)
    assert len(TOPIC_CONFIG_BY_NAME) == len(TOPIC_CONFIG_DEFS)
    fields = [f for f in dataclasses.fields(BrokerConfig) if "key" in f.metadata]
    assert len(fields) > 90
    for f in fields:
        d = BROKER_CONFIG_BY_NAME[f.metadata["key"]]
        convert = f.metadata.get("convert")
        parsed = parse_value(d, d.default)
        assert f.default == (convert(parsed) if convert else parsed), d.name


@pytest.mark.parametrize(("key", "value", "message"), [
    ("num.partitions", "0", "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ("num.partitions", "many", "Invalid value many for configuration num.partitions: Not a number of type INT"),
    ("num.partitions", "3000000000", "configuration num.partitions: Not a number of type INT"),
    ("auto.create.topics.enable", "maybe", "configuration auto.create.topics.enable: Expected value to be either"),
    ("ssl.client.auth", "always", "configuration ssl.client.auth: String must be one of: none, requested, required"),
    ("log.cleanup.policy", "shred", "configuration log.cleanup.policy: String must be one of: compact, delete"),
    ("log.retention.hours", "soon", "configuration log.retention.hours: Not a number of type INT"),
    ("log.cleaner.threads", "-1", "configuration log.cleaner.threads: Value must be at least 0"),
    ("log.cleaner.min.cleanable.ratio", "1.5", "log.cleaner.min.cleanable.ratio: Value must be no more than 1"),
    ("log.segment.bytes", "5", "configuration log.segment.bytes: Value must be at least 14"),
])
def test_server_properties_values_are_checked_by_the_table(key, value, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        BrokerConfig.from_dict({**BASE, key: value})


def test_table_settings_without_a_field_are_kept_typed_checked_and_described():
    cfg = BrokerConfig.from_dict({**BASE, "num.io.threads": " 16 ", "log.retention.hours": "1"})
    assert (cfg.value_of("num.io.threads"), cfg.value_of("log.retention.hours")) == ("16", "1")
    assert cfg.value_of("log.retention.ms") is None  # Kafka: no default, hours decide
    assert cfg.static_values()["log.retention.hours"] == "1"
    assert cfg.unknown == {}


@pytest.mark.parametrize("d", MULTI_SYNONYM, ids=lambda d: d.name)
def test_each_synonym_group_follows_kafkas_precedence(d):
    """Every synonym set: the first in the group's order wins (ms > minutes > hours); with
    it removed the next one does; each converted to the topic setting's unit."""
    values = {s.name: str(i + 2) for i, s in enumerate(d.synonyms)}
    for i, s in enumerate(d.synonyms):
        given = {k: v for k, v in values.items() if k not in [x.name for x in d.synonyms[:i]]}
        top = resolve_topic_config(d, {}, {}, {}, given)[0]
        assert (top.name, top.value, top.source) == (s.name, str(int(values[s.name]) * s.scale),
                                                     ConfigSource.STATIC_BROKER_CONFIG)
    assert [s.name for s in d.synonyms] == sorted((s.name for s in d.synonyms),
                                                  key=lambda n: [x.scale for x in d.synonyms if x.name == n][0])


def test_the_synonym_groups_are_kafkas():
    assert {d.name: [s.name for s in d.synonyms] for d in MULTI_SYNONYM} == {
        "flush.ms": ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
        "retention.ms": ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
        "segment.jitter.ms": ["log.roll.jitter.ms", "log.roll.jitter.hours"],
        "segment.ms": ["log.roll.ms", "log.roll.hours"],
    }


@pytest.mark.parametrize(("props", "retention_ms", "segment_ms", "jitter"), [
    ({"log.retention.hours": "1"}, 3_600_000, 604_800_000, None),
    ({"log.retention.minutes": "5", "log.retention.hours": "1"}, 300_000, 604_800_000, None),
    ({"log.retention.ms": "1000", "log.retention.minutes": "5", "log.retention.hours": "1"}, 1000, 604_800_000, None),
    ({"log.retention.hours": "-1"}, -1, 604_800_000, None),
    ({"log.roll.hours": "2"}, 604_800_000, 7_200_000, None),
    ({"log.roll.ms": "500", "log.roll.hours": "2"}, 604_800_000, 500, None),
    ({"log.roll.jitter.hours": "1"}, 604_800_000, 604_800_000, "3600000"),
    ({"log.roll.jitter.ms": "7", "log.roll.jitter.hours": "1"}, 604_800_000, 604_800_000, "7"),
])
def test_server_properties_synonyms_reach_the_logs_and_describe_configs(props, retention_ms, segment_ms, jitter):
    cfg = BrokerConfig.from_dict({**BASE, **props})
    lc = log_config_of(cfg)
    assert (lc.retention_ms, lc.segment_ms) == (retention_ms, segment_ms)
    static = cfg.static_values()
    for topic_key, want in (("retention.ms", retention_ms), ("segment.ms", segment_ms)):
        assert resolve_topic_config(TOPIC_CONFIG_BY_NAME[topic_key], {}, {}, {}, static)[0].value == str(want)
    if jitter is not None:
        assert resolve_topic_config(TOPIC_CONFIG_BY_NAME["segment.jitter.ms"], {}, {}, {}, static)[0].value == jitter


def test_every_synonym_and_every_key_praha_reads_is_a_broker_setting(caplog):
    synonyms = {s.name for d in TOPIC_CONFIG_DEFS for s in d.synonyms}
    assert synonyms | set(CLEANER_KEYS) | set(DYNAMIC_BROKER_KEYS) <= set(BROKER_CONFIG_BY_NAME)
    # a whole server.properties of table keys, each at its default: nothing is called unknown
    props = {d.name: d.default for d in BROKER_CONFIG_DEFS if d.default is not None}
    with caplog.at_level(logging.WARNING, logger="praha.config"):
        BrokerConfig.from_dict({**props, **BASE})
    assert caplog.records == []


def test_log_config_defaults_are_the_tables():
    for f in dataclasses.fields(LogConfig):
        assert getattr(LogConfig(), f.name) is not None
    assert LogConfig().retention_ms == int(TOPIC_CONFIG_BY_NAME["retention.ms"].default or 0)


def test_dynamic_levels_agree_with_alterconfigs():
    """What the table calls cluster-wide AlterConfigs accepts at `<default>`; per-broker only
    with a broker id; read-only nowhere. The listener sets are the table's dynamic ones."""
    for d in BROKER_CONFIG_DEFS:
        if d.name in DYNAMIC_SECURITY_CONFIGS:
            assert d.dynamic is Dynamic.PER_BROKER, d.name
            continue  # only with a listener prefix
        per_broker, default = broker_dynamic_refusal([d.name], True), broker_dynamic_refusal([d.name], False)
        if d.dynamic is Dynamic.READ_ONLY:
            assert per_broker, d.name
            assert "Cannot update these configs dynamically" in per_broker, d.name
        elif d.dynamic is Dynamic.PER_BROKER:
            assert per_broker is None, d.name
            assert default, d.name
        else:
            assert per_broker is None, d.name
            assert default is None, d.name
    listener = (DYNAMIC_LISTENER_CONFIGS | DYNAMIC_SECURITY_CONFIGS) - CLUSTER_LEVEL_LISTENER_CONFIGS
    assert {d.name for d in BROKER_CONFIG_DEFS if d.dynamic is Dynamic.PER_BROKER} == listener
    assert all(BROKER_CONFIG_BY_NAME[k].dynamic is Dynamic.CLUSTER_WIDE for k in DYNAMIC_BROKER_KEYS)


def test_configuration_page_is_generated_from_the_tables():
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert page == render(), "docs/configuration.md is stale: run `make docs`"
    assert "| `log.retention.hours` | int | 168 |" in page


@pytest.mark.parametrize(("key", "value", "message"), [
    ("log.cleaner.threads", "many", "Invalid value many for configuration log.cleaner.threads: Not a number"),
    ("num.io.threads", "0", "Invalid value 0 for configuration num.io.threads: Value must be at least 1"),
    ("listener.name.plaintext.sasl.login.refresh.buffer.seconds", "3601",
     "configuration sasl.login.refresh.buffer.seconds: Value must be no more than 3600"),
])
def test_dynamic_broker_values_are_checked_by_the_table(key, value, message):
    """AlterConfigs on a broker: a dynamic setting's value is refused (INVALID_CONFIG) by its
    type and valid values, per listener too; a good one passes unchanged."""
    with pytest.raises(ConfigError, match=message):
        check_config_values(BROKERS, {key: value}, "1")
    assert check_config_values(BROKERS, {"log.cleaner.threads": "2"}, "1") == {"log.cleaner.threads": "2"}


def test_cleaner_defaults_are_the_tables():
    c = CleanerConfig()
    for key, got in zip(CLEANER_KEYS, (c.enable, c.threads, c.dedupe_buffer_size, c.io_max_bytes_per_second,
                                       c.backoff_ms, c.io_buffer_load_factor), strict=True):
        want = parse_value(BROKER_CONFIG_BY_NAME[key], BROKER_CONFIG_BY_NAME[key].default)
        assert got == want or (got == float("inf") and want == 1.7976931348623157e308), key  # Double.MAX_VALUE


def test_a_field_may_convert_its_checked_value():
    """How a setting with its own Python form is bound (e.g. KIP-848's assignor list)."""
    @dataclasses.dataclass
    class WithList(BrokerConfig):
        super_user_list: tuple[str, ...] = setting("super.users", convert=lambda v: tuple(filter(None, v.split(";"))))

    assert WithList().super_user_list == ()
    cfg = WithList.from_dict({**BASE, "super.users": "User:a;User:b"})
    assert cfg.super_user_list == ("User:a", "User:b")
    assert cfg.value_of("super.users") == "User:a,User:b"


def test_broker_describe_lists_a_settings_synonyms_as_kafka_does():
    """Kafka's ConfigHelper: the group's values source by source, from the setting's own first."""
    cfg = BrokerConfig.from_dict({**BASE, "log.retention.hours": "1"})
    in_effect = {d.name: cfg.value_of(d.name) for d in BROKER_CONFIG_DEFS}
    static = cfg.static_values()

    def layers(key: str, dyn: dict[str, str] | None = None, default: dict[str, str] | None = None,
               per_broker: bool = True) -> list[tuple[str, str | None, ConfigSource]]:
        return [(r.name, r.value, r.source) for r in resolve_broker_config(
            key, per_broker, dyn or {}, default or {}, static, in_effect)]

    S, D = ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG
    assert layers("log.retention.hours") == [("log.retention.hours", "1", S), ("log.retention.hours", "168", D)]
    assert layers("log.retention.ms") == [("log.retention.ms", None, D)]  # unset: the hours are not its own
    assert layers("log.retention.ms", dyn={"log.retention.ms": "5"}) == [
        ("log.retention.ms", "5", ConfigSource.DYNAMIC_BROKER_CONFIG), ("log.retention.hours", "1", S),
        ("log.retention.hours", "168", D)]
    assert layers("log.retention.ms", default={"log.retention.ms": "7"}, per_broker=False) == [
        ("log.retention.ms", "7", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
    assert layers("num.io.threads", dyn={"num.io.threads": "9"}) == [("num.io.threads", "8", D)]  # not applied live
    assert layers("broker.id") == [("broker.id", "1", S), ("broker.id", "-1", D)]
    assert layers("broker.id", per_broker=False) == []


def test_unknown_keys_are_those_outside_the_table():
    """What `praha cluster up --broker-config` warns about and a broker logs once: every key
    praha honours (synonyms, cleaner, listener overrides) is known."""
    assert unknown_keys(["log.retention.hours", "log.cleaner.threads", "listener.name.internal.ssl.client.auth",
                         "num.io.threads", "zz.nope", "log.retention.hourz"]) == ["log.retention.hourz", "zz.nope"]


def test_the_cleaner_reads_its_settings_by_the_table(caplog):
    """A bad (dynamic) value is logged and the table's default used: the cleaner keeps running."""
    with caplog.at_level(logging.WARNING, logger="praha.log.cleaner"):
        cc = CleanerConfig.from_broker_config({"log.cleaner.threads": "many", "log.cleaner.backoff.ms": "20"})
    assert (cc.threads, cc.backoff_ms, cc.io_max_bytes_per_second) == (1, 20, float("inf"))
    assert [r.getMessage() for r in caplog.records] == [
        "ignoring log.cleaner.threads='many': Invalid value many for configuration log.cleaner.threads: "
        "Not a number of type INT"]
