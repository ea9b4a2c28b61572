"""Client quota decisions (Kafka's ClientQuotaManager): the windowed rate, Kafka's throttle
time formula on Kafka's own test figures, the order in which quotas apply, and the entity,
key and filter rules of AlterClientQuotas / DescribeClientQuotas."""
from __future__ import annotations

import pytest

from praha.broker.quotas.client_quota import (
    ANONYMOUS,
    ClientQuotaManager,
    ClientQuotas,
    QuotaType,
    QuotaWindow,
    WindowedRate,
    throttle_time_ms,
)
from praha.errors import ErrorCode
from praha.zk.quota_entities import (
    DEFAULT,
    MatchType,
    QuotaEntity,
    QuotaError,
    QuotaOp,
    check_alteration,
    desanitize,
    entity_from_path,
    entity_from_wire,
    filter_from_wire,
    sanitize,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now

    def sleep(self, ms: int) -> None:
        self.now += ms


def test_throttle_time_is_kafkas_formula():
    # O * W / (W + X) = T  =>  X = (O - T) / T * W
    assert throttle_time_ms(600.0, 500.0, 10_500) == 2100
    assert throttle_time_ms(500.0, 500.0, 10_000) == 0


def test_quota_violation_as_in_kafkas_client_quota_manager_test():
    """ClientQuotaManagerTest.testQuotaViolation: 400 bytes/s under a 500 bytes/s quota is
    never throttled; a spike to 600 bytes/s over 10.5 s of windows is throttled 2100 ms."""
    clock = Clock()
    m = ClientQuotaManager(QuotaType.PRODUCE, QuotaWindow(11, 1000), clock)
    m.update_quota(QuotaEntity(None, DEFAULT), 500.0)
    for _ in range(10):
        assert m.record(ANONYMOUS, "unknown", 400) == 0
        clock.sleep(1000)
    # a spike: 400*10 + 2300 = 6300 bytes / 10.5 s (the last window half complete) = 600 bytes/s
    clock.sleep(500)
    assert m.record(ANONYMOUS, "unknown", 2300) == 2100
    clock.sleep(2100)
    for _ in range(10):
        m.record(ANONYMOUS, "unknown", 400)
        clock.sleep(1000)
    assert m.record(ANONYMOUS, "unknown", 0) == 0  # the bursty sample has rolled over
    m.update_quota(QuotaEntity(None, DEFAULT), None)
    m.update_quota(QuotaEntity(None, "limited"), 500.0)
    assert m.record(ANONYMOUS, "limited", 10**6) > 0
    assert m.record(ANONYMOUS, "other", 10**9) == 0  # no quota applies to another client id


def test_window_counts_at_least_samples_minus_one_whole_windows_and_forgets_old_samples():
    clock = Clock()
    rate = WindowedRate(QuotaWindow(11, 1000))
    rate.record(10_000, clock())
    assert rate.window_size_ms(clock()) == 10_000  # a first burst is spread over 10 windows
    assert rate.measure(clock()) == pytest.approx(1000.0)
    clock.sleep(11_000)  # samples*window later the burst has expired
    assert rate.measure(clock()) == 0.0


def test_unrecord_takes_a_throttled_fetch_back():
    clock = Clock()
    m = ClientQuotaManager(QuotaType.FETCH, QuotaWindow(11, 1000), clock)
    m.update_quota(QuotaEntity(client_id=DEFAULT), 100.0)
    assert m.max_value_in_window(ANONYMOUS, "c") == 1000.0  # 100 B/s * 10 windows
    assert m.record(ANONYMOUS, "c", 5000) > 0
    m.unrecord(ANONYMOUS, "c", 5000)
    assert m.record(ANONYMOUS, "c", 500) == 0


def test_request_time_throttle_is_capped_at_one_window():
    clock = Clock()
    quotas = ClientQuotas.create(QuotaWindow(11, 1000), clock)
    quotas.apply_entity_config(QuotaEntity(client_id="busy"), {"request_percentage": 1.0})
    assert quotas.request.record(ANONYMOUS, "busy", 10_000.0) == 1000
    assert quotas.produce.record(ANONYMOUS, "busy", 10**9) == 0  # no byte quota for it


def test_no_quota_set_records_nothing():
    m = ClientQuotaManager(QuotaType.PRODUCE, clock_ms=lambda: 0)
    assert not m.enabled
    assert m.record(ANONYMOUS, "c", 10**12) == 0
    assert m.max_value_in_window(ANONYMOUS, "c") is None
    assert not m._rates


@pytest.mark.parametrize(("present", "expected"), [
    ({QuotaEntity("u", "c"): 1, QuotaEntity("u", DEFAULT): 2, QuotaEntity("u", None): 3}, 1),
    ({QuotaEntity("u", DEFAULT): 2, QuotaEntity("u", None): 3, QuotaEntity(None, "c"): 7}, 2),
    ({QuotaEntity("u", None): 3, QuotaEntity(DEFAULT, "c"): 4, QuotaEntity(None, "c"): 7}, 3),
    ({QuotaEntity(DEFAULT, "c"): 4, QuotaEntity(DEFAULT, DEFAULT): 5, QuotaEntity(DEFAULT, None): 6}, 4),
    ({QuotaEntity(DEFAULT, DEFAULT): 5, QuotaEntity(DEFAULT, None): 6, QuotaEntity(None, "c"): 7}, 5),
    ({QuotaEntity(DEFAULT, None): 6, QuotaEntity(None, "c"): 7}, 6),
    ({QuotaEntity(None, "c"): 7, QuotaEntity(None, DEFAULT): 8}, 7),
    ({QuotaEntity(None, DEFAULT): 8, QuotaEntity("someone-else", None): 9}, 8),
    ({QuotaEntity("someone-else", None): 9}, None),
])
def test_resolution_order_is_kafkas(present, expected):
    m = ClientQuotaManager(QuotaType.PRODUCE, clock_ms=lambda: 0)
    for entity, value in present.items():
        m.update_quota(entity, float(value))
    assert m.quota_limit(m.metric_tags("u", "c")) == (None if expected is None else float(expected))


def test_names_are_sanitized_as_kafkas_sanitizer():
    assert sanitize("user with spaces") == "user%20with%20spaces"
    assert sanitize("a*b~c.d-e_f") == "a%2Ab%7Ec.d-e_f"
    assert sanitize("CN=x,O=y") == "CN%3Dx%2CO%3Dy"
    assert desanitize(sanitize("ü/<default>")) == "ü/<default>"
    assert QuotaEntity(user=sanitize("a b"), client_id=DEFAULT).zk_path == "/config/users/a%20b/clients/<default>"
    assert entity_from_path("users/u/clients/c") == QuotaEntity("u", "c")
    assert entity_from_path("clients/<default>") == QuotaEntity(None, DEFAULT)
    assert entity_from_path("topics/t") is None
    assert entity_from_path("users/u/other/c") is None


@pytest.mark.parametrize(("components", "message"), [
    ([], "Invalid empty client quota entity"),
    ([("user", "")], "Empty user not supported"),
    ([("client-id", "")], "Empty client-id not supported"),
    ([("", "name")], "Unhandled client quota entity type: "),
    ([("group", "g")], "Unhandled client quota entity type: group"),
    ([("user", "a"), ("user", "b")], "Invalid client quota entity, duplicate entity entry user"),
    ([("user", "a"), ("ip", "1.2.3.4")], "Invalid quota entity combination"),
])
def test_bad_entities_are_kafkas_invalid_request(components, message):
    with pytest.raises(QuotaError) as e:
        entity_from_wire(components)
    assert e.value.code == ErrorCode.INVALID_REQUEST
    assert message in str(e.value)


@pytest.mark.parametrize(("op", "message"), [
    (QuotaOp("bad", 1.0), "Invalid configuration key bad"),
    (QuotaOp("producer_byte_rate", -1.0), "Quota producer_byte_rate must be greater than 0"),
    (QuotaOp("consumer_byte_rate", 0.0), "Quota consumer_byte_rate must be greater than 0"),
    (QuotaOp("producer_byte_rate", 10000.5), "Configuration producer_byte_rate must be a LONG value"),
    (QuotaOp("request_percentage", float("nan")), "must be greater than 0"),
])
def test_bad_values_are_refused(op, message):
    with pytest.raises(QuotaError, match=message):
        check_alteration(QuotaEntity(user="u"), {}, [op])


def test_alteration_stores_kafkas_strings_and_removes_quietly():
    new = check_alteration(QuotaEntity(client_id="c"), {"consumer_byte_rate": "5"},
                           [QuotaOp("producer_byte_rate", 1048576.0), QuotaOp("request_percentage", 12.5),
                            QuotaOp("consumer_byte_rate", 0, remove=True), QuotaOp("not_set", 0, remove=True)])
    assert new == {"producer_byte_rate": "1048576", "request_percentage": "12.5"}


def test_describe_filters_exact_default_any_and_strict():
    entities = [QuotaEntity("u1", None), QuotaEntity("u1", "c1"), QuotaEntity(None, "c1"),
                QuotaEntity(DEFAULT, None), QuotaEntity(None, DEFAULT), QuotaEntity("u2", DEFAULT)]

    def pick(components, strict):
        f = filter_from_wire(components, strict)
        return [e for e in entities if f.matches(e)]

    assert pick([("user", MatchType.EXACT, "u1")], False) == [QuotaEntity("u1", None), QuotaEntity("u1", "c1")]
    assert pick([("user", MatchType.EXACT, "u1")], True) == [QuotaEntity("u1", None)]
    assert pick([("client-id", MatchType.DEFAULT, None)], False) == [QuotaEntity(None, DEFAULT),
                                                                     QuotaEntity("u2", DEFAULT)]
    assert pick([("user", MatchType.ANY, None)], True) == [QuotaEntity("u1", None), QuotaEntity(DEFAULT, None)]
    assert pick([], False) == entities
    assert pick([], True) == []
    assert pick([("ip", MatchType.ANY, None)], False) == []
    with pytest.raises(QuotaError, match="Duplicate user filter component entity type"):
        pick([("user", 0, "a"), ("user", 2, None)], False)
    with pytest.raises(QuotaError, match="Custom entity type 'other' not supported") as e:
        pick([("other", 0, "a")], False)
    assert e.value.code == ErrorCode.UNSUPPORTED_VERSION
    with pytest.raises(QuotaError, match="Invalid entity filter component combination"):
        pick([("ip", 2, None), ("user", 2, None)], False)


# --------------------------------------------------------------------------- request-time quota
def test_busy_timer_counts_running_time_not_waiting_time():
    import asyncio
    import time

    from praha.broker.network.throttling import BusyTimer

    async def handler():
        await asyncio.sleep(0.2)  # parked: not busy
        end = time.perf_counter() + 0.05
        while time.perf_counter() < end:  # busy
            pass
        return "answer"

    async def run():
        timer = BusyTimer(handler())
        return await timer, timer.busy_ns

    answer, busy_ns = asyncio.run(run())
    assert answer == "answer"
    assert 0.04e9 <= busy_ns < 0.15e9


def test_request_quota_throttles_and_sets_throttle_time_but_exempts_controller_requests():
    import asyncio
    from types import SimpleNamespace

    from praha.broker.network.socket_server import Muted
    from praha.broker.network.throttling import RequestQuotaThrottler
    from praha.protocol.api_keys import ApiKey

    clock = Clock()
    quotas = ClientQuotas.create(QuotaWindow(11, 1000), clock)
    throttler = RequestQuotaThrottler(quotas)
    assert not throttler.active
    quotas.apply_entity_config(QuotaEntity(client_id="busy"), {"request_percentage": 0.001})
    assert throttler.active

    def request(api_key, client_id="busy"):
        return SimpleNamespace(api_key=api_key, principal=ANONYMOUS, request=SimpleNamespace(replica_id=-1),
                               header=SimpleNamespace(client_id=client_id))

    async def handler(_req):
        sum(range(20000))  # some CPU time
        return SimpleNamespace(throttle_time_ms=0)

    async def run(req):
        return await throttler.run(req, handler)

    got = asyncio.run(run(request(ApiKey.METADATA)))
    assert type(got) is Muted
    assert 0 < got.mute_ms <= 1000
    assert got.response.throttle_time_ms == got.mute_ms
    assert quotas.request.stats.throttled == 1
    assert type(asyncio.run(run(request(ApiKey.LEADER_AND_ISR)))) is not Muted  # a cluster action
    assert type(asyncio.run(run(request(ApiKey.METADATA, "idle")))) is not Muted  # no quota for it


def test_the_connection_is_muted_after_a_throttled_response_and_others_are_not():
    """KIP-219: the throttled answer goes out at once; that connection's next request is
    read only after the throttle time; another connection is served meanwhile."""
    import asyncio
    import socket
    import struct
    import time
    from types import SimpleNamespace

    from kafka.protocol.metadata import ApiVersionsRequest

    from praha.broker.network.socket_server import Muted, SocketServer
    from praha.protocol.framing import encode_request
    from praha.protocol.registry import api_versions_response

    versions = {18: (0, 3)}

    async def handler(req):
        response = api_versions_response(versions)
        if req.header.client_id == "throttled":
            response.throttle_time_ms = 1000
            return Muted(response, 1000)
        return response

    def ask(sock: socket.socket, client_id: str) -> tuple[float, bytes]:
        sock.sendall(encode_request(ApiVersionsRequest(), 3, 1, client_id))
        data = bytearray()
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            data += sock.recv(65536)
        return time.monotonic(), bytes(data)

    def client(port: int, _server) -> tuple[float, float, float]:
        with socket.create_connection(("127.0.0.1", port)) as a, socket.create_connection(("127.0.0.1", port)) as b:
            start = time.monotonic()
            first, _ = ask(a, "throttled")
            a.sendall(encode_request(ApiVersionsRequest(), 3, 2, "throttled"))  # waits out the mute
            other, _ = ask(b, "other")
            data = bytearray()
            while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                data += a.recv(65536)
            return first - start, other - start, time.monotonic() - start

    async def go():
        server = SocketServer(SimpleNamespace(versions=versions, handlers={18: handler}), "127.0.0.1", 0, 1 << 20)
        await server.start()
        try:
            return await asyncio.get_running_loop().run_in_executor(None, client, server.port, server), server.mutes
        finally:
            await server.stop()

    (first, other, second), mutes = asyncio.run(go())
    # the throttled answer and the other client's at once; the muted connection's next one after the throttle
    assert first < 1.0
    assert other < 1.0 <= second
    assert mutes >= 1


def test_text_alteration_is_kafka_configs_rules():
    from praha.zk.quota_entities import check_text_alteration

    entity = QuotaEntity(client_id="c")
    assert check_text_alteration(entity, {"consumer_byte_rate": "5"}, {"producer_byte_rate": "1048576"},
                                 ["consumer_byte_rate"]) == {"producer_byte_rate": "1048576"}
    for add, delete, message in [({"producer_byte_rate": "fast"}, [], "Cannot parse quota configuration value"),
                                 ({"producer_byte_rate": "-1"}, [], "must be greater than 0"),
                                 ({"retention.ms": "1"}, [], r"Invalid config\(s\): retention.ms"),
                                 ({}, ["request_percentage"], "not set for client-id 'c'")]:
        with pytest.raises(QuotaError, match=message):
            check_text_alteration(entity, {}, add, delete)
