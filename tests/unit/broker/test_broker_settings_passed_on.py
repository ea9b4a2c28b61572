"""The settings BrokerConfig passes on to the logs and the cleaner: Kafka's precedence
among synonyms (ms > minutes > hours) holds, and keys read there are not called unknown."""
from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

from praha.broker.replication.replica_manager import cleaner_config_of, log_config_of
from praha.config import BROKER_CONFIG_BY_NAME, BrokerConfig
from praha.log.cleaner import CleanerConfig
from praha.log.config import LogConfig

BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/x"}


def config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_dict({**BASE, **{k.replace("_", "."): v for k, v in props.items()}})


def test_hours_alone_set_retention_and_roll():
    lc = log_config_of(config(log_retention_hours="1", log_roll_hours="2"))
    assert (lc.retention_ms, lc.segment_ms) == (3_600_000, 7_200_000)


def test_ms_beats_minutes_beats_hours():
    assert log_config_of(config(log_retention_minutes="5", log_retention_hours="1")).retention_ms == 300_000
    assert log_config_of(config(log_retention_ms="1000", log_retention_minutes="5")).retention_ms == 1000
    assert log_config_of(config(log_roll_ms="500", log_roll_hours="2")).segment_ms == 500


def test_a_value_set_in_code_is_passed_on():
    assert log_config_of(BrokerConfig(broker_id=1, log_segment_bytes=2048)).segment_bytes == 2048


def test_cleaner_settings_are_honoured_and_not_called_unknown(caplog):
    with caplog.at_level(logging.WARNING, logger="praha.config"):
        cfg = config(log_cleaner_threads="3", log_cleaner_backoff_ms="100", log_retention_hours="1",
                     replica_socket_timeout_ms="9000")
    assert caplog.records == []
    assert (cleaner_config_of(cfg).threads, cleaner_config_of(cfg).backoff_ms) == (3, 100)
    assert cfg.replica_socket_timeout_ms == 9000


def test_an_unknown_key_is_reported_once_in_one_line(caplog):
    with caplog.at_level(logging.WARNING, logger="praha.config"):
        cfg = BrokerConfig.from_dict({**BASE, "no.such.key": "1", "another.one": "2", "log.cleaner.threads": "2"})
    assert [r.getMessage() for r in caplog.records] == [
        "2 unknown configuration keys ignored: another.one, no.such.key"]
    assert cfg.unknown["no.such.key"] == "1"


class Recording(Mapping[str, str]):
    """A property map that remembers every key asked for."""

    def __init__(self) -> None:
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return False

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def test_every_key_the_logs_and_cleaner_read_is_known():
    props = Recording()
    LogConfig.from_broker_config(props)
    CleanerConfig.from_broker_config(props)
    assert {"log.retention.hours", "log.cleaner.threads", "log.segment.bytes"} <= props.asked
    assert props.asked - set(BROKER_CONFIG_BY_NAME) == set()
