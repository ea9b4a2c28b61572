"""meta.properties: Kafka's v0 format, and the start-up refusals of another broker's or cluster's data."""
from __future__ import annotations

import pytest

from praha.errors import ConfigError
from praha.log.meta_properties import BrokerMetadata, check, format_meta, parse, read_all, write_missing

KAFKA_WRITTEN = "#\n#Wed Nov 25 03:50:14 UTC 2026\ncluster.id=K21CdXN_ROGaaQLR4QT6eg\nversion=0\nbroker.id=1\n"


def test_reads_what_kafka_writes_and_writes_what_it_reads():
    meta = parse(KAFKA_WRITTEN)
    assert meta == BrokerMetadata(1, "K21CdXN_ROGaaQLR4QT6eg")
    assert parse(format_meta(meta).decode()) == meta
    assert parse("version=0\n") is None
    assert parse("broker.id=x") is None


def test_another_brokers_or_clusters_data_is_refused_in_kafkas_words():
    mine = BrokerMetadata(1, "c1")
    check({"/a": mine, "/b": mine}, 1, "c1")
    check({}, 1, "c1")
    with pytest.raises(ConfigError, match="Configured broker.id 2 doesn't match stored broker.id 1 in meta.properties"):
        check({"/a": mine}, 2, "c1")
    with pytest.raises(ConfigError, match="The Cluster ID c2 doesn't match stored clusterId c1 in meta.properties"):
        check({"/a": mine}, 1, "c2")
    with pytest.raises(ConfigError, match="BrokerMetadata is not consistent across log.dirs"):
        check({"/a": mine, "/b": BrokerMetadata(3, "c1")}, 1, "c1")


def test_written_to_every_dir_missing_it(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "meta.properties").write_text(KAFKA_WRITTEN)
    found = read_all([str(a), str(b), str(tmp_path / "absent")])
    assert set(found) == {str(a)}
    meta = BrokerMetadata(1, "K21CdXN_ROGaaQLR4QT6eg")
    assert write_missing([str(a), str(b)], meta, found) == []
    assert (a / "meta.properties").read_text() == KAFKA_WRITTEN  # the same content: left as it is
    assert parse((b / "meta.properties").read_text()) == meta
    failed = write_missing([str(tmp_path / "absent")], meta, {})
    assert [d for d, _ in failed] == [str(tmp_path / "absent")]
