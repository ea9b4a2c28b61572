"""Listener settings: names, protocol map, advertised listeners, the inter-broker listener,
per-listener overrides (Kafka's checks and names)."""
import pytest

from praha.config import BrokerConfig
from praha.errors import ConfigError

BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/tmp/x"}


def cfg(**props):
    return BrokerConfig.from_dict({**BASE, **{k.replace("_", "."): v for k, v in props.items()}})


def test_several_listeners_with_a_protocol_map():
    c = BrokerConfig.from_dict({**BASE, "listeners": "INTERNAL://127.0.0.1:9091,EXTERNAL://127.0.0.1:9092",
                                "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL",
                                "inter.broker.listener.name": "INTERNAL",
                                "advertised.listeners": "EXTERNAL://broker1.example:19092",
                                "listener.name.external.ssl.client.auth": "required"})
    assert [(e.listener, e.security_protocol, e.port) for e in c.endpoints] == [
        ("INTERNAL", "PLAINTEXT", 9091), ("EXTERNAL", "SASL_SSL", 9092)]
    assert [(e.listener, e.host, e.port) for e in c.advertised_endpoints] == [
        ("INTERNAL", "127.0.0.1", 9091), ("EXTERNAL", "broker1.example", 19092)]
    assert c.inter_broker_listener == "INTERNAL"
    assert c.listener_value("EXTERNAL", "ssl.client.auth") == "required"
    assert c.listener_value("INTERNAL", "ssl.client.auth") == "none"
    assert not c.unknown  # listener.name.* settings are known, not warned about


def test_security_inter_broker_protocol_names_the_listener():
    c = BrokerConfig.from_dict({**BASE, "listeners": "PLAINTEXT://:1,SSL://:2",
                                "security.inter.broker.protocol": "SSL"})
    assert c.inter_broker_listener == "SSL"


@pytest.mark.parametrize(("props", "words"), [
    ({"listeners": "FOO://127.0.0.1:1"}, "no security protocol defined for listener FOO"),
    ({"listeners": "PLAINTEXT://:1,PLAINTEXT://:2"}, "once"),
    ({"listeners": "PLAINTEXT://:1,SSL://:1"}, "own port"),
    ({"listeners": "A://:1", "listener.security.protocol.map": "A:TLS"}, "unknown security protocol"),
    ({"listeners": "SSL://:1"}, "inter.broker.listener.name: PLAINTEXT"),
    ({"listeners": "PLAINTEXT://:1", "advertised.listeners": "SSL://h:1"}, "not among listeners"),
    ({"listeners": "PLAINTEXT://:1,SSL://:2", "inter.broker.listener.name": "SSL",
      "security.inter.broker.protocol": "SSL"}, "only one of"),
    ({"ssl.client.auth": "maybe"}, "ssl.client.auth"),
])
def test_refused(props, words):
    with pytest.raises(ConfigError, match=words):
        BrokerConfig.from_dict({**BASE, **props})


def test_an_empty_listener_host_binds_every_interface_and_advertises_the_host_name():
    import socket

    c = BrokerConfig.from_dict({**BASE, "listeners": "PLAINTEXT://:9092"})
    assert c.endpoints[0].host == ""  # the socket binds "" : every interface, as Kafka does
    assert c.advertised_endpoints[0].host == socket.getfqdn()
    told = BrokerConfig.from_dict({**BASE, "listeners": "PLAINTEXT://:9092",
                                   "advertised.listeners": "PLAINTEXT://broker1.example:9092"})
    assert told.advertised_endpoints[0].host == "broker1.example"
