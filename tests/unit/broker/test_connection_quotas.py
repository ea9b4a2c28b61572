"""Connection limits as Kafka names them: broker-wide and per-IP counts (with overrides),
given back on close, and the creation rate as a delay rather than a refusal."""
from __future__ import annotations

import pytest

from praha.broker.network.connection_quotas import ConnectionLimits, ConnectionQuotas, Refusal
from praha.config import BrokerConfig, parse_ip_overrides
from praha.errors import ConfigError


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_per_ip_limit_with_overrides_and_release():
    q = ConnectionQuotas(ConnectionLimits(max_per_ip=2, per_ip_overrides={"127.0.0.9": 0, "127.0.0.5": 3}))
    assert q.admit("127.0.0.1") == 0.0
    assert q.admit("127.0.0.1") == 0.0
    assert q.admit("127.0.0.1") is Refusal.IP_LIMIT
    assert q.admit("127.0.0.2") == 0.0  # another address has its own count
    assert q.admit("127.0.0.9") is Refusal.IP_LIMIT  # an override of 0 refuses that host
    assert [q.admit("127.0.0.5") for _ in range(4)][-1] is Refusal.IP_LIMIT
    q.release("127.0.0.1")
    assert q.connections_of("127.0.0.1") == 1
    assert q.admit("127.0.0.1") == 0.0
    assert q.refused[Refusal.IP_LIMIT] == 3


def test_broker_limit_counts_every_address():
    q = ConnectionQuotas(ConnectionLimits(max_connections=2))
    assert q.admit("127.0.0.1") == 0.0
    assert q.admit("127.0.0.2") == 0.0
    assert q.admit("127.0.0.3") is Refusal.BROKER_LIMIT
    q.release("127.0.0.2")
    assert q.open == 1
    assert q.admit("127.0.0.3") == 0.0


def test_creation_rate_delays_instead_of_refusing():
    clock = Clock()
    q = ConnectionQuotas(ConnectionLimits(max_creation_rate=10), clock)
    delays = [q.admit("127.0.0.1") for _ in range(5)]
    assert delays == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    clock.now += 10  # a quiet spell: no debt carried
    assert q.admit("127.0.0.1") == 0.0
    assert q.throttled == 4


def test_overrides_syntax_and_broker_config():
    assert parse_ip_overrides("127.0.0.1:5, hostA:0") == {"127.0.0.1": 5, "hostA": 0}
    with pytest.raises(ValueError, match="expected host:count, got '127.0.0.1'"):
        parse_ip_overrides("127.0.0.1")
    cfg = BrokerConfig.from_properties("broker.id=1\nzookeeper.connect=127.0.0.1:2181\n"
                                       "max.connections.per.ip=7\nmax.connections.per.ip.overrides=127.0.0.2:1\n"
                                       "connections.max.idle.ms=5000")
    limits = ConnectionLimits.from_broker_config(cfg)
    assert (limits.limit_for("127.0.0.1"), limits.limit_for("127.0.0.2"), limits.max_idle_ms) == (7, 1, 5000)
    with pytest.raises(ConfigError, match="overrides"):
        BrokerConfig.from_properties("broker.id=1\nzookeeper.connect=127.0.0.1:2181\n"
                                     "max.connections.per.ip.overrides=nonsense")
