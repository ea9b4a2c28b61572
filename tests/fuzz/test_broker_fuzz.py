"""A live broker against hostile clients: it answers or closes that connection, and keeps
serving everyone else, without allocating what a frame merely claims.

One real broker (its own ZooKeeper chroot, a 1-partition topic `fuzz`). Each example
opens a fresh connection and sends one frame: well-formed requests of every API key and
version the broker knows (controller requests with a stale controller epoch, admin
requests as validate-only, so the fuzzer cannot take over the cluster), the same frames
mutated or truncated, random bytes, unknown keys. The answer must be a frame with the
request's correlation id or a closed connection, within a few seconds. After every
example a long-lived "bystander" connection must still be served; at the end the
broker's RSS must not have grown beyond a bound.
"""
from __future__ import annotations

import socket
import struct
import threading
import time

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record import MemoryRecordsBuilder
from schema_strategies import every_api_version, request_strategy
from test_decoder_fuzz import MUTATION, mutate

from praha.common import ReplicaAssignment, TopicAssignment
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.protocol.framing import encode_request
from praha.testing.cluster import wait_for
from praha.testing.fuzz import examples

pytestmark = pytest.mark.integration

PAIRS = every_api_version()
LIVE = settings(max_examples=examples(150), deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
ANSWER_TIMEOUT_S = 5.0
RSS_GROWTH_BOUND_MB = 60.0
TOPIC = "fuzz"


class Broker:
    def __init__(self, pid: int, port: int):
        self.pid = pid
        self.port = port
        self.bystander = BrokerConnection("127.0.0.1", port, timeout=5.0)

    def rss_mb(self) -> float:
        return psutil.Process(self.pid).memory_info().rss / 2**20

    def still_serving(self) -> None:
        """The long-lived bystander connection, and a fresh one, are both answered."""
        resp = self.bystander.send(ApiVersionsRequest(client_software_name="bystander",
                                                      client_software_version="1"), 3)
        assert resp.error_code == 0
        with BrokerConnection("127.0.0.1", self.port, timeout=5.0) as fresh:
            md = fresh.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                                            allow_auto_topic_creation=False), 9)
            assert md.topics[0].error_code == 0


@pytest.fixture(scope="module")
def broker(module_cluster):
    c = module_cluster(1)
    b = c.brokers[1]
    c.store.create_topic(TOPIC, TopicAssignment({0: ReplicaAssignment((1,))}), {})
    target = Broker(b.pid, b.port)
    try:
        wait_for(lambda: target.still_serving() is None, 30, what="topic fuzz served")
        target.rss_start = target.rss_mb()
        yield target
    finally:
        target.bystander.close()


# ------------------------------------------------------------------------------ helpers
def exchange(port: int, data: bytes, close_after_send: bool = False) -> tuple[str, int | None]:
    """Send raw bytes; ("answer", correlation id) | ("closed", None) | ("silent", None)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_S)
    try:
        try:
            s.sendall(data)
            if close_after_send:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            return "closed", None
        try:
            head = _recv_exact(s, 4)
            if head is None:
                return "closed", None
            (size,) = struct.unpack(">i", head)
            body = _recv_exact(s, size)
            if body is None or size < 4:
                return "closed", None
            return "answer", struct.unpack(">i", body[:4])[0]
        except TimeoutError:
            return "silent", None
        except OSError:
            return "closed", None
    finally:
        s.close()


def _recv_exact(s: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def tame(api_key: int, request):
    """Keep a well-formed request from changing the cluster or parking for minutes."""
    if api_key in (4, 5, 6):  # LeaderAndIsr, StopReplica, UpdateMetadata: a deposed controller's
        request.controller_epoch = 0
    if api_key == 7:  # ControlledShutdown of a broker that does not exist
        request.broker_id = 9999
    if api_key in (19, 37) and hasattr(request, "validate_only"):  # CreateTopics, CreatePartitions
        request.validate_only = True
    if api_key == 0:  # Produce: bounded wait
        request.timeout_ms = min(abs(request.timeout_ms or 0), 1000)
    if api_key == 1:  # Fetch: bounded wait
        request.max_wait_ms = min(abs(request.max_wait_ms or 0), 100)
    for attr in ("timeout_ms",):
        if hasattr(request, attr) and api_key not in (0,) and getattr(request, attr, None) is not None:
            setattr(request, attr, min(abs(getattr(request, attr)), 1000))
    return request


@st.composite
def tame_frames(draw) -> tuple[int, int, int, bytes]:
    api_key, version = draw(st.sampled_from(PAIRS))
    request = tame(api_key, draw(request_strategy(api_key, version)))
    correlation_id = draw(st.integers(0, 2**31 - 1))
    return api_key, version, correlation_id, encode_request(request, version, correlation_id, "fuzz")


def check_outcome(outcome: tuple[str, int | None], correlation_id: int | None, may_be_silent: bool) -> None:
    kind, got = outcome
    if kind == "answer" and correlation_id is not None:
        assert got == correlation_id, f"answer carries correlation id {got}, sent {correlation_id}"
    if kind == "silent":
        assert may_be_silent, "no answer and no close within the timeout"


# ------------------------------------------------------------------------------ fuzzing
@LIVE
@given(tame_frames())
def test_well_formed_requests_of_every_api_and_version(broker, frame):
    api_key, _version, correlation_id, data = frame
    outcome = exchange(broker.port, data)
    check_outcome(outcome, correlation_id, may_be_silent=api_key == 0)  # Produce acks=0 gets no answer
    broker.still_serving()


@LIVE
@given(tame_frames(), st.lists(MUTATION, min_size=1, max_size=4))
def test_mutated_requests(broker, frame, mutations):
    _api_key, _version, _cid, data = frame
    body = mutate(data[4:], mutations)
    outcome = exchange(broker.port, struct.pack(">i", len(body)) + body)
    # a mutation may turn any request into a Produce (api key 0), perhaps with acks=0
    check_outcome(outcome, None, may_be_silent=len(body) >= 2 and body[:2] == b"\x00\x00")
    broker.still_serving()


@LIVE
@given(tame_frames(), st.data())
def test_truncated_frames_then_hang_up(broker, frame, data):
    _key, _version, _cid, raw = frame
    cut = data.draw(st.integers(0, len(raw) - 1))
    outcome = exchange(broker.port, raw[:cut], close_after_send=True)
    assert outcome[0] in ("closed", "answer")
    broker.still_serving()


@LIVE
@given(st.binary(min_size=1, max_size=300))
def test_random_bytes(broker, blob):
    exchange(broker.port, struct.pack(">i", len(blob)) + blob, close_after_send=True)
    broker.still_serving()


@pytest.mark.parametrize("api_key", [-1, 8, 9, 11, 12, 99, 32767])
def test_unknown_api_keys_close_the_connection(broker, api_key):
    body = struct.pack(">hhih", api_key, 0, 5, 0)
    assert exchange(broker.port, struct.pack(">i", len(body)) + body)[0] == "closed"
    broker.still_serving()


def test_api_versions_at_an_unknown_version_is_answered(broker):
    body = struct.pack(">hhih", 18, 99, 42, 0)
    assert exchange(broker.port, struct.pack(">i", len(body)) + body) == ("answer", 42)


# ------------------------------------------------------------------------------ lengths
@pytest.mark.parametrize("size", [-1, -(2**31), 2**31 - 1, 100 * 2**20 + 1])
def test_impossible_frame_sizes_close_at_once(broker, size):
    t0 = time.monotonic()
    assert exchange(broker.port, struct.pack(">i", size) + b"\x00" * 16)[0] == "closed"
    assert time.monotonic() - t0 < 2.0
    broker.still_serving()


def test_a_large_declared_frame_is_not_allocated_up_front(broker):
    """Twenty connections each announce 90 MiB (under the limit) and send 1 KiB."""
    before = broker.rss_mb()
    socks = []
    try:
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
            s.sendall(struct.pack(">i", 90 * 2**20) + b"\x00" * 1024)
            socks.append(s)
        time.sleep(1.0)
        broker.still_serving()
        grown = broker.rss_mb() - before
        assert grown < 40, f"RSS grew {grown:.0f} MB for 20 x 90 MiB declared frames"
    finally:
        for s in socks:
            s.close()
    broker.still_serving()


# ------------------------------------------------------------------------------ record batches
def batch(n: int = 3) -> bytearray:
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for i in range(n):
        b.append(timestamp=1_700_000_000_000 + i, key=None, value=b"v%d" % i, headers=[])
    b.close()
    return bytearray(b.buffer())


def produce(broker: Broker, records: bytes) -> tuple[int, int]:
    P = ProduceRequest
    req = P(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[P.TopicProduceData(
        name=TOPIC, partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=bytes(records))])])
    with BrokerConnection("127.0.0.1", broker.port, timeout=10) as c:
        r = c.send(req, 9).responses[0].partition_responses[0]
    return r.error_code, r.base_offset


CRC_AT = 17  # baseOffset 8, batchLength 4, partitionLeaderEpoch 4, magic 1, then the CRC


@pytest.mark.parametrize("corruption", ["crc", "body", "record_count", "batch_length_short", "batch_length_long",
                                        "magic", "truncated"])
def test_corrupt_batches_are_refused_and_nothing_is_appended(broker, corruption):
    code, before = produce(broker, batch())
    assert code == 0
    bad = batch()
    if corruption == "crc":
        bad[CRC_AT] ^= 0xFF
    elif corruption == "body":
        bad[-1] ^= 0x01
    elif corruption == "record_count":
        bad[57:61] = struct.pack(">i", -5)
    elif corruption == "batch_length_short":
        bad[8:12] = struct.pack(">i", 10)
    elif corruption == "batch_length_long":
        bad[8:12] = struct.pack(">i", 2**31 - 1)
    elif corruption == "magic":
        bad[16] = 7
    elif corruption == "truncated":
        bad = bad[:-5]
    code, _ = produce(broker, bad)
    assert code in (ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD, ErrorCode.UNSUPPORTED_VERSION), code
    code, after = produce(broker, batch())
    assert code == 0, "the refused batch took offsets"
    assert after == before + 3, "the refused batch took offsets"
    broker.still_serving()


# ------------------------------------------------------------------------------ bystanders
def test_a_storm_of_bad_connections_does_not_delay_a_good_client(broker):
    stop = threading.Event()

    def storm() -> None:
        blobs = [b"\xff\xff\xff\xff", struct.pack(">i", 12) + b"\x00" * 12, struct.pack(">i", 50) + b"\x01" * 10]
        i = 0
        while not stop.is_set():
            try:
                exchange(broker.port, blobs[i % len(blobs)], close_after_send=True)
            except OSError:
                pass
            i += 1

    threads = [threading.Thread(target=storm, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        worst = 0.0
        for _ in range(30):
            t0 = time.monotonic()
            broker.still_serving()
            worst = max(worst, time.monotonic() - t0)
        assert worst < 2.0, f"a good client waited {worst:.2f}s during the storm"
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)


def test_memory_stayed_bounded(broker):
    """Runs last in this module: everything above did not grow the broker beyond the bound."""
    grown = broker.rss_mb() - broker.rss_start
    assert grown < RSS_GROWTH_BOUND_MB, f"broker RSS grew {grown:.0f} MB during the fuzzing"
