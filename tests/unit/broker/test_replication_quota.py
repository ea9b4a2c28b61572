"""The reassignment throttle's pure parts: parsing Kafka's config values, the byte budget,
and config change notices."""
import pytest

from praha.broker.dynamic_config import notice_sequence
from praha.broker.quotas.replication_quota import ReplicationQuota, parse_rate, parse_throttled_replicas
from praha.errors import ZNodeDecodeError
from praha.zk import znodes as zn


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_throttled_replicas_values():
    spec = parse_throttled_replicas("0:1, 1:2,0:3")
    assert spec.covers(0, 1)
    assert spec.covers(1, 2)
    assert spec.covers(0, 3)
    assert not spec.covers(1, 1)
    assert not spec.covers(0, 2)
    assert parse_throttled_replicas("*").covers(7, 9)
    assert parse_throttled_replicas("").empty
    assert parse_throttled_replicas(None).empty
    for bad, item in (("0", "0"), ("a:1", "a:1"), ("0:1,x", "x"), ("1:-2", "1:-2")):
        with pytest.raises(ValueError, match=f"throttled replica '{item}' is not partition:broker"):
            parse_throttled_replicas(bad)


def test_rate_values():
    assert parse_rate(None) is None
    assert parse_rate(" ") is None
    assert parse_rate("1000") == 1000
    for bad, says in (("0", "positive number of bytes/s, not 0"), ("-5", "positive number of bytes/s, not -5"),
                      ("fast", "invalid literal for int")):
        with pytest.raises(ValueError, match=says):
            parse_rate(bad)


def test_budget_holds_back_until_the_debt_is_paid():
    clock = Clock()
    q = ReplicationQuota(1000, clock=clock)
    assert not q.exceeded()  # a full second's worth to start
    q.record(600)
    assert not q.exceeded()
    q.record(2400)  # overdrawn: 2000 bytes of debt
    assert q.exceeded()
    assert q.seconds_until_available() == pytest.approx(2.0, abs=0.01)
    clock.t += 1.0
    assert q.exceeded()
    clock.t += 1.01
    assert not q.exceeded()
    clock.t += 100  # refills to one second's worth, no more
    q.record(1001)
    assert q.exceeded()
    assert q.throttled_bytes == 4001


def test_long_run_rate_is_the_limit_whatever_the_fetch_size():
    clock = Clock()
    q = ReplicationQuota(10_000, clock=clock)
    fetched = 0
    for _ in range(10_000):  # a fetcher loop polling every 10 ms, fetching 64 KiB when allowed
        if not q.exceeded():
            q.record(65536)
            fetched += 65536
        clock.t += 0.01
    assert 10_000 * 100 <= fetched <= 10_000 * 100 + 10_000 + 65536


def test_unlimited_and_rate_changes():
    clock = Clock()
    q = ReplicationQuota(None, clock=clock)
    q.record(10**9)
    assert not q.exceeded()
    assert q.seconds_until_available() == 0
    q.set_rate(100)
    assert not q.exceeded()  # a new rate starts with a full bucket
    q.record(1000)
    assert q.exceeded()
    q.set_rate(None)
    assert not q.exceeded()


def test_config_change_notices():
    data = zn.encode_config_change("topics/t1")
    assert data == b'{"version":2,"entity_path":"topics/t1"}'
    assert zn.decode_config_change(data) == ("topics", "t1")
    assert zn.decode_config_change(b'{"version":2,"entity_path":"brokers/<default>"}') == ("brokers", "<default>")
    assert zn.decode_config_change(b'{"version":1,"entity_type":"topics","entity_name":"x"}') == ("topics", "x")
    for bad in (b"", b"{", b'{"version":2}', b'{"version":2,"entity_path":"topics"}', b'{"version":3}', b"[]"):
        with pytest.raises(ZNodeDecodeError):
            zn.decode_config_change(bad)
    assert notice_sequence("config_change_0000000042") == 42
    assert notice_sequence("config_change_x") is None
    assert notice_sequence("other") is None
