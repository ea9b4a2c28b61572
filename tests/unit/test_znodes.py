"""Znode paths and codecs: Kafka's exact bytes, legacy versions, and garbage → ZNodeDecodeError only."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from praha.common import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from praha.errors import PrahaError, ZNodeDecodeError
from praha.testing.fuzz import examples
from praha.zk import znodes as zn

TP0 = TopicPartition("t", 0)


# -- paths -------------------------------------------------------------------------------------
def test_paths_are_kafkas():
    assert zn.controller_path == "/controller"
    assert zn.controller_epoch_path == "/controller_epoch"
    assert zn.broker_path(3) == "/brokers/ids/3"
    assert zn.topic_path("t") == "/brokers/topics/t"
    assert zn.partitions_path("t") == "/brokers/topics/t/partitions"
    assert zn.partition_path("t", 2) == "/brokers/topics/t/partitions/2"
    assert zn.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert zn.tp_state_path(TopicPartition("t", 2)) == "/brokers/topics/t/partitions/2/state"
    assert zn.delete_topic_path("t") == "/admin/delete_topics/t"
    assert zn.config_topic_path("t") == "/config/topics/t"
    assert zn.ISR_CHANGE_NOTIFICATION_PATH == "/isr_change_notification"
    assert zn.ISR_CHANGE_PREFIX == "isr_change_"
    assert zn.isr_change_path("isr_change_0000000001") == "/isr_change_notification/isr_change_0000000001"
    assert zn.REASSIGN_PARTITIONS_PATH == "/admin/reassign_partitions"
    assert zn.PREFERRED_REPLICA_ELECTION_PATH == "/admin/preferred_replica_election"
    assert zn.topic_from_path("/brokers/topics/abc/partitions/1/state") == "abc"
    for p in ("/brokers/ids", "/brokers/topics", "/brokers/seqid", "/config/topics", "/config/changes",
              "/config/brokers", "/admin/delete_topics", "/isr_change_notification",
              "/log_dir_event_notification", "/latest_producer_id_block"):
        assert p in zn.PERSISTENT_PATHS
    assert zn.CLUSTER_ID_PATH == "/cluster/id"


# -- /controller, /controller_epoch ------------------------------------------------------------------
def test_controller_bytes_and_legacy():
    data = zn.encode_controller(1, timestamp_ms=1700000000000)
    assert data == b'{"version":1,"brokerid":1,"timestamp":"1700000000000"}'
    assert zn.decode_controller(data) == 1
    assert zn.decode_controller(b"7") == 7  # pre-0.8.2 plain integer
    assert zn.decode_controller(b'{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":4}') == 3000
    assert zn.decode_controller(b'{"version":1,"brokerid":-1,"timestamp":"1"}') == -1


def test_controller_epoch():
    assert zn.encode_controller_epoch(12) == b"12"
    assert zn.decode_controller_epoch(b"12") == 12
    assert zn.decode_controller_epoch(b"0") == 0


# -- brokers ---------------------------------------------------------------------------------------
def test_broker_v5_bytes():
    info = BrokerInfo(1, (EndPoint("127.0.0.1", 9092),))
    data = zn.encode_broker(info, timestamp_ms=1700000000000)
    assert data == (b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
                    b'"endpoints":["PLAINTEXT://127.0.0.1:9092"],"jmx_port":-1,"port":9092,'
                    b'"host":"127.0.0.1","version":5,"timestamp":"1700000000000"}')
    assert zn.decode_broker(1, data, epoch=42) == BrokerInfo(1, (EndPoint("127.0.0.1", 9092),), None, 42)


def test_broker_round_trip_rack_listeners_ipv6():
    info = BrokerInfo(2, (EndPoint("::1", 9093, "INTERNAL", "SSL"), EndPoint("h", 9092)), rack="r1", epoch=5)
    data = zn.encode_broker(info, features={"metadata.version": (1, 7)})
    obj = json.loads(data)
    assert obj["endpoints"] == ["INTERNAL://[::1]:9093", "PLAINTEXT://h:9092"]
    assert obj["host"] == "h"
    assert obj["port"] == 9092
    assert obj["rack"] == "r1"
    assert obj["features"] == {"metadata.version": {"min_version": 1, "max_version": 7}}
    assert zn.decode_broker(2, data, epoch=5) == info


def test_broker_without_plaintext_has_null_host():
    info = BrokerInfo(3, (EndPoint("h", 9093, "SSL", "SSL"),))
    obj = json.loads(zn.encode_broker(info))
    assert obj["host"] is None
    assert obj["port"] == -1
    assert zn.decode_broker(3, zn.encode_broker(info)) == BrokerInfo(3, (EndPoint("h", 9093, "SSL", "SSL"),))


@pytest.mark.parametrize(("data", "expected"), [
    (b'{"jmx_port":-1,"timestamp":"1","host":"h1","version":1,"port":9092}', (EndPoint("h1", 9092),), ),
    (b'{"jmx_port":-1,"timestamp":"1","endpoints":["PLAINTEXT://h2:9092"],"host":"h2","version":2,"port":9092}',
     (EndPoint("h2", 9092),)),
    (b'{"jmx_port":-1,"timestamp":"1","endpoints":["SSL://h3:9093"],"host":null,"version":3,"port":-1,'
     b'"rack":"rk"}', (EndPoint("h3", 9093, "SSL", "SSL"),)),
    (b'{"listener_security_protocol_map":{"CLIENT":"SASL_PLAINTEXT"},"endpoints":["CLIENT://h4:9094"],'
     b'"jmx_port":9999,"host":null,"timestamp":"1","port":-1,"version":4}',
     (EndPoint("h4", 9094, "CLIENT", "SASL_PLAINTEXT"),)),
])
def test_broker_legacy_versions(data, expected):
    info = zn.decode_broker(9, data, epoch=77)
    assert info.endpoints == expected
    assert info.epoch == 77
    assert info.id == 9
    assert info.rack == ("rk" if b'"rack"' in data else None)


# -- topics --------------------------------------------------------------------------------------
def test_topic_assignment_bytes():
    a = TopicAssignment({0: ReplicaAssignment((1, 2, 3))})
    data = zn.encode_topic_assignment(a)
    assert data == b'{"version":2,"partitions":{"0":[1,2,3]},"adding_replicas":{},"removing_replicas":{}}'
    assert zn.decode_topic_assignment(data) == a


def test_topic_assignment_reassigning_and_topic_id():
    a = TopicAssignment({1: ReplicaAssignment((2, 3, 4, 1), adding=(4,), removing=(1,)),
                         0: ReplicaAssignment((1, 2))}, topic_id="q3yN9SCxRlKX8nJgXkrZxg")
    data = zn.encode_topic_assignment(a)
    obj = json.loads(data)
    assert obj["version"] == 3
    assert obj["topic_id"] == "q3yN9SCxRlKX8nJgXkrZxg"
    assert list(obj["partitions"]) == ["0", "1"]
    assert obj["adding_replicas"] == {"1": [4]}
    assert obj["removing_replicas"] == {"1": [1]}
    assert zn.decode_topic_assignment(data) == a


def test_topic_assignment_v1():
    a = zn.decode_topic_assignment(b'{"version":1,"partitions":{"1":[2],"0":[1,2]}}')
    assert a.partitions == {0: ReplicaAssignment((1, 2)), 1: ReplicaAssignment((2,))}
    assert a.topic_id is None


# -- partition state --------------------------------------------------------------------------------
def test_partition_state_bytes_and_extra_keys():
    s = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, (1, 2, 3), 0, 4), 1)
    data = zn.encode_partition_state(s)
    assert data == b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}'
    assert zn.decode_partition_state(data, zk_version=4) == s
    newer = b'{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":5,"isr":[2],"leader_recovery_state":0}'
    assert zn.decode_partition_state(newer, 9) == LeaderIsrAndControllerEpoch(LeaderAndIsr(2, (2,), 5, 9), 3)


# -- admin znodes ---------------------------------------------------------------------------------------
def test_reassignment():
    r = {TP0: (2, 3, 4), TopicPartition("u", 1): (1,)}
    data = zn.encode_reassignment(r)
    assert data.startswith(b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3,4]}')
    assert zn.decode_reassignment(data) == r
    with_dirs = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2],"log_dirs":["any"]}]}'
    assert zn.decode_reassignment(with_dirs) == {TP0: (2,)}


def test_partition_sets():
    tps = {TP0, TopicPartition("u", 3)}
    data = zn.encode_isr_change(tps)
    assert data == b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}'
    assert zn.decode_isr_change(data) == tps
    assert zn.decode_preferred_election(zn.encode_preferred_election(tps)) == tps
    assert zn.decode_preferred_election(b'{"version":1,"partitions":[]}') == set()


def test_config_and_cluster_id():
    data = zn.encode_config({"retention.ms": "1000"})
    assert data == b'{"version":1,"config":{"retention.ms":"1000"}}'
    assert zn.decode_config(data) == {"retention.ms": "1000"}
    assert zn.decode_config(b"") == {}
    assert zn.decode_config(b'{"version":1}') == {}
    assert zn.encode_cluster_id("abc") == b'{"version":"1","id":"abc"}'
    assert zn.decode_cluster_id(b'{"version":"1","id":"abc"}') == "abc"


# -- garbage ----------------------------------------------------------------------------------------------
DECODERS = {
    "controller": lambda d: zn.decode_controller(d),
    "controller_epoch": lambda d: zn.decode_controller_epoch(d),
    "broker": lambda d: zn.decode_broker(1, d),
    "topic": lambda d: zn.decode_topic_assignment(d),
    "state": lambda d: zn.decode_partition_state(d, 0),
    "reassignment": lambda d: zn.decode_reassignment(d),
    "preferred": lambda d: zn.decode_preferred_election(d),
    "isr_change": lambda d: zn.decode_isr_change(d),
    "config": lambda d: zn.decode_config(d),
    "cluster_id": lambda d: zn.decode_cluster_id(d),
}
COMMON_GARBAGE = [b"\xff\xfe", b"not json", b"[1,2]", b"null", b'"str"', b"{", b'{"a":NaN}', b"[" * 5000]
SPECIFIC_GARBAGE = {
    "controller": [b"", b"{}", b'{"version":1,"brokerid":"1"}', b'{"version":9,"brokerid":1}', b"1.5",
                   b'{"version":1,"brokerid":true}'],
    "controller_epoch": [b"", b"1.0", b" 1", b"1_0", b"one", b'{"epoch":1}'],
    "broker": [b"", b"{}", b'{"version":6,"host":"h","port":1}', b'{"version":1,"host":"h"}',
               b'{"version":1,"host":"h","port":"9092"}', b'{"version":2,"endpoints":[]}',
               b'{"version":2,"endpoints":["garbage"]}', b'{"version":2,"endpoints":[7]}',
               b'{"version":4,"endpoints":["X://h:1"],"listener_security_protocol_map":{"Y":"PLAINTEXT"}}',
               b'{"version":3,"endpoints":["PLAINTEXT://h:1"],"rack":5}',
               b'{"version":4,"endpoints":["X://h:1"],"listener_security_protocol_map":[]}',
               b'{"version":"5","endpoints":["PLAINTEXT://h:1"]}'],
    "topic": [b"", b'{"version":2}', b'{"version":4,"partitions":{}}', b'{"version":2,"partitions":[]}',
              b'{"version":2,"partitions":{"x":[1]}}', b'{"version":2,"partitions":{"-1":[1]}}',
              b'{"version":2,"partitions":{"0":[1,"2"]}}', b'{"version":2,"partitions":{"0":1}}',
              b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{"0":[true]}}',
              b'{"version":3,"partitions":{"0":[1]},"topic_id":5}'],
    "state": [b"", b"{}", b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0}',
              b'{"controller_epoch":1,"leader":"1","version":1,"leader_epoch":0,"isr":[1]}',
              b'{"controller_epoch":1,"leader":1,"version":2,"leader_epoch":0,"isr":[1]}',
              b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1.5]}',
              b'{"controller_epoch":null,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}'],
    "reassignment": [b"", b'{"version":1}', b'{"version":2,"partitions":[]}', b'{"version":1,"partitions":{}}',
                     b'{"version":1,"partitions":[1]}', b'{"version":1,"partitions":[{"topic":"t","partition":0}]}',
                     b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},'
                     b'{"topic":"t","partition":0,"replicas":[2]}]}',
                     b'{"version":1,"partitions":[{"topic":1,"partition":0,"replicas":[1]}]}'],
    "preferred": [b"", b'{"version":1,"partitions":[{"topic":"t"}]}', b'{"version":1,"partitions":"t"}'],
    "isr_change": [b"", b'{"version":1,"partitions":[{"topic":"t","partition":"0"}]}'],
    "config": [b'{"version":2,"config":{}}', b'{"version":1,"config":[]}', b'{"version":1,"config":{"a":1}}'],
    "cluster_id": [b"", b'{"version":"1"}', b'{"version":"2","id":"x"}', b'{"version":"1","id":7}',
                   b'{"version":true,"id":"x"}'],
}


@pytest.mark.parametrize(("kind", "data"), [(k, d) for k in DECODERS for d in COMMON_GARBAGE + SPECIFIC_GARBAGE[k]])
def test_garbage_raises_decode_error(kind, data):
    with pytest.raises(ZNodeDecodeError) as info:
        DECODERS[kind](data)
    assert isinstance(info.value, PrahaError)
    assert info.value.reason


def test_decode_error_names_path():
    with pytest.raises(ZNodeDecodeError) as info:
        zn.decode_partition_state(b"x", 0, zn.partition_state_path("t", 0))
    assert info.value.path == "/brokers/topics/t/partitions/0/state"
    assert "/brokers/topics/t/partitions/0/state" in str(info.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**40) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["version", "brokerid", "partitions", "topic", "partition", "replicas", "leader", "isr",
                         "leader_epoch", "controller_epoch", "endpoints", "host", "port", "config", "id", "0",
                         "adding_replicas", "listener_security_protocol_map", "rack", "topic_id", "x"]),
        inner, max_size=6),
    max_leaves=20)


@settings(max_examples=examples(300), deadline=None)
@given(value=json_values, raw=st.binary(max_size=40))
def test_fuzz_only_decode_errors(value, raw):
    for data in (json.dumps(value).encode(), raw):
        for decode in DECODERS.values():
            try:
                decode(data)
            except ZNodeDecodeError:
                pass
