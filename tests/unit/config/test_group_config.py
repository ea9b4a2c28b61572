"""GROUP resource configs: Kafka 4's names and checks (`GroupConfig.validate`), each override
bounded by the broker's `group.consumer.min/max.*`, the session longer than the interval."""
from __future__ import annotations

import pytest

from praha.config import BrokerConfig
from praha.config.group_defs import int_broker_settings, validate_group_config
from praha.errors import ConfigError, ErrorCode

BROKER = {n: int(BrokerConfig.from_dict({"broker.id": "0", "zookeeper.connect": "127.0.0.1:2181"}).value_of(n) or 0)
          for n in int_broker_settings()}


def test_kafkas_defaults_bound_the_overrides():
    assert {k: v for k, v in BROKER.items() if k.startswith("group.consumer.")} == {
        "group.consumer.session.timeout.ms": 45000,
        "group.consumer.heartbeat.interval.ms": 5000,
        "group.consumer.min.session.timeout.ms": 45000,
        "group.consumer.max.session.timeout.ms": 60000,
        "group.consumer.min.heartbeat.interval.ms": 5000,
        "group.consumer.max.heartbeat.interval.ms": 15000,
    }
    assert validate_group_config({"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"},
                                 BROKER) == {"consumer.session.timeout.ms": 50000,
                                             "consumer.heartbeat.interval.ms": 6000}
    assert validate_group_config({}, BROKER) == {}


@pytest.mark.parametrize(("values", "message"), [
    ({"consumer.fetch.bytes": "1"}, "Unknown group config name: consumer.fetch.bytes"),
    ({"consumer.session.timeout.ms": "soon"}, "Not a number"),
    ({"consumer.session.timeout.ms": "44999"},
     "must be greater than or equal to group.consumer.min.session.timeout.ms"),
    ({"consumer.session.timeout.ms": "60001"}, "must be less than or equal to group.consumer.max.session.timeout.ms"),
    ({"consumer.heartbeat.interval.ms": "100"}, "must be greater than or equal to group.consumer.min.heartbeat"),
    ({"consumer.heartbeat.interval.ms": "15001"}, "must be less than or equal to group.consumer.max.heartbeat"),
])
def test_bad_values_get_invalid_config_naming_the_rule(values, message):
    with pytest.raises(ConfigError, match=message) as e:
        validate_group_config(values, BROKER)
    assert e.value.code == ErrorCode.INVALID_CONFIG


def test_the_session_must_outlast_the_interval_with_the_broker_value_for_an_unset_one():
    short = {**BROKER, "group.consumer.session.timeout.ms": 6000, "group.consumer.min.heartbeat.interval.ms": 1}
    with pytest.raises(ConfigError, match="consumer.session.timeout.ms must be greater than consumer.heartbeat"):
        validate_group_config({"consumer.heartbeat.interval.ms": "7000"}, short)
    assert validate_group_config({"consumer.heartbeat.interval.ms": "7000", "consumer.session.timeout.ms": "50000"},
                                 short)


def test_share_group_configs_kafka_42s_names_bounds_and_values():
    assert {k: v for k, v in BROKER.items() if k.startswith("group.share.")} == {
        "group.share.session.timeout.ms": 45000, "group.share.heartbeat.interval.ms": 5000,
        "group.share.record.lock.duration.ms": 30000,
        "group.share.min.session.timeout.ms": 45000, "group.share.max.session.timeout.ms": 60000,
        "group.share.min.heartbeat.interval.ms": 5000, "group.share.max.heartbeat.interval.ms": 15000,
        "group.share.min.record.lock.duration.ms": 15000, "group.share.max.record.lock.duration.ms": 60000}
    assert validate_group_config({"share.auto.offset.reset": " Earliest", "share.isolation.level": "read_committed",
                                  "share.record.lock.duration.ms": "20000"}, BROKER) == {
        "share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed",
        "share.record.lock.duration.ms": 20000}


@pytest.mark.parametrize(("values", "message"), [
    ({"share.auto.offset.reset": "sometimes"}, "String must be one of: latest, earliest"),
    ({"share.isolation.level": "dirty"}, "String must be one of: read_uncommitted, read_committed"),
    ({"share.record.lock.duration.ms": "1000"}, "must be greater than or equal to group.share.min.record.lock"),
    ({"share.record.lock.duration.ms": "60001"}, "must be less than or equal to group.share.max.record.lock"),
    ({"share.heartbeat.interval.ms": "15000", "share.session.timeout.ms": "45000"}, None),
    ({"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "15001"}, "less than or equal"),
])
def test_bad_share_values_get_invalid_config(values, message):
    if message is None:
        assert validate_group_config(values, BROKER)
        return
    with pytest.raises(ConfigError, match=message) as e:
        validate_group_config(values, BROKER)
    assert e.value.code == ErrorCode.INVALID_CONFIG


def test_a_share_session_must_outlast_its_interval():
    short = {**BROKER, "group.share.min.session.timeout.ms": 1}
    with pytest.raises(ConfigError, match="share.session.timeout.ms must be greater than share.heartbeat"):
        validate_group_config({"share.session.timeout.ms": "5000"}, short)
