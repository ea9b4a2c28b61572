"""Connection limits on a real broker (issue 15 §4), under Kafka's config names: a per-IP
limit (with an override for one address) closes the connection over it and leaves other
addresses alone; idle connections are closed after `connections.max.idle.ms`; a request
that stops arriving mid-frame (or trickles in a byte a second) is closed after
`praha.partial.request.timeout.ms`; `max.connection.creation.rate` delays, not refuses.
Clients connect from other loopback addresses (127.0.0.2, …) so the cluster's own
connections from 127.0.0.1 do not count against the limits being tested."""
from __future__ import annotations

import socket
import struct
import time

import pytest

from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration

API_VERSIONS = struct.pack(">hhih", 18, 0, 7, 4) + b"test"
FRAME = struct.pack(">i", len(API_VERSIONS)) + API_VERSIONS


def connect(port: int, source: str) -> socket.socket:
    s = socket.socket()
    s.settimeout(10)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def served(s: socket.socket) -> bool:
    """True if the broker answers an ApiVersions request on `s`; False if it closed it."""
    try:
        s.sendall(FRAME)
        head = s.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return False
        size = struct.unpack(">i", head)[0]
        return len(s.recv(size, socket.MSG_WAITALL)) == size
    except (TimeoutError, ConnectionError):
        return False


def closed_by_broker(s: socket.socket, within: float) -> float | None:
    """Seconds until the broker closes `s` (we send nothing), or None if it stays open."""
    s.settimeout(within)
    t = time.monotonic()
    try:
        return time.monotonic() - t if s.recv(1) == b"" else None
    except TimeoutError:
        return None
    except ConnectionError:
        return time.monotonic() - t


@pytest.fixture(scope="module")
def broker(module_cluster):
    overrides = {"max.connections.per.ip": "1000", "max.connections.per.ip.overrides": "127.0.0.2:3",
                 "connections.max.idle.ms": "1500", "praha.partial.request.timeout.ms": "1500",
                 "offsets.topic.replication.factor": "1"}
    return module_cluster(1, overrides, store=False).brokers[1]


@pytest.fixture(scope="module")
def broker_port(broker):
    return broker.port


def test_per_ip_limit_and_its_override(broker_port):
    socks = [connect(broker_port, "127.0.0.2") for _ in range(3)]
    try:
        assert all(served(s) for s in socks)
        extra = connect(broker_port, "127.0.0.2")
        assert not served(extra), "a 4th connection from 127.0.0.2 is over its override of 3"
        extra.close()
        other = connect(broker_port, "127.0.0.3")  # another address is not affected
        assert served(other)
        other.close()
        socks.pop().close()

        def slot_back() -> bool:  # once the broker has seen the close, a new connection is served
            again = connect(broker_port, "127.0.0.2")
            if served(again):
                socks.append(again)
                return True
            again.close()
            return False

        wait_for(slot_back, 10, interval=0.1, what="the closed connection's slot given back")
    finally:
        for s in socks:
            s.close()


def test_idle_connections_are_closed_and_busy_ones_kept(broker_port):
    idle, busy = connect(broker_port, "127.0.0.4"), connect(broker_port, "127.0.0.4")
    try:
        assert served(idle)
        assert served(busy)
        t = time.monotonic()
        for _ in range(8):  # 4 s of a request every 0.5 s: never idle for 1.5 s
            time.sleep(0.5)
            assert served(busy)
        elapsed = time.monotonic() - t
        gone = closed_by_broker(idle, 0.1)
        assert gone is not None, f"an idle connection was still open after {elapsed:.1f} s"
    finally:
        idle.close()
        busy.close()


def test_stalled_and_trickling_requests_are_closed(broker_port):
    stalled, trickle = connect(broker_port, "127.0.0.5"), connect(broker_port, "127.0.0.5")
    try:
        stalled.sendall(FRAME[:6])  # the size and two bytes of the body, then nothing
        t = time.monotonic()
        for byte in FRAME[:10]:  # a byte every 0.5 s: a request that would take 10 s to arrive
            try:
                trickle.sendall(bytes([byte]))
            except ConnectionError:
                break
            time.sleep(0.5)
        assert closed_by_broker(trickle, 3.0) is not None, "the trickling request was waited on"
        assert closed_by_broker(stalled, max(0.1, 4.0 - (time.monotonic() - t))) is not None
    finally:
        stalled.close()
        trickle.close()


def test_closed_and_refused_connections_are_counted(broker):
    """What the tests above did is in the broker's Prometheus figures, where operators look."""
    from praha.testing.cluster import scrape_metrics
    metrics = scrape_metrics(broker.actual_metrics_port)
    assert metrics["praha_broker_connections_refused"] >= 1
    assert metrics["praha_broker_connections_closed_idle"] >= 1
    assert metrics["praha_broker_connections_closed_partial_request"] >= 2


def test_creation_rate_delays_new_connections(make_cluster):
    cluster = make_cluster(1, {"max.connection.creation.rate": "5", "offsets.topic.replication.factor": "1"})
    port = cluster.load().brokers[1].port
    time.sleep(1.0)  # the cluster's own connections have been made
    t = time.monotonic()
    socks = [connect(port, "127.0.0.6") for _ in range(10)]
    try:
        assert all(served(s) for s in socks), "a throttled connection is served in its turn, not refused"
        assert time.monotonic() - t >= 1.5, "10 connections at 5 per second take about 2 s"
    finally:
        for s in socks:
            s.close()
