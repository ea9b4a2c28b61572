"""BrokerConnection against a tiny in-test server on 127.0.0.1 (real sockets, threads)."""
from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

import pytest
from kafka.protocol.producer import ProduceRequest
from protocol_samples import record_batch

from praha.protocol.client import BrokerConnection, api_versions
from praha.protocol.controller_apis import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from praha.protocol.errors import (
    BrokerConnectionError,
    BrokerTimeoutError,
    InvalidResponseError,
    UnsupportedVersionError,
)
from praha.protocol.framing import DecodedRequest, decode_request, encode_response, parse_frame_size
from praha.protocol.registry import api_versions_response, unsupported_version_response

Handler = Callable[[DecodedRequest, socket.socket], "bytes | bytearray | None"]


def recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


class TinyServer:
    """Accepts connections and answers each decoded request with `handler`'s bytes."""

    def __init__(self, handler: Handler, supported: dict[int, tuple[int, int]] | None = None):
        self.handler = handler
        self.supported = supported
        self.seen: list[DecodedRequest] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)  # accept() polls, so close() is prompt
        self.port = self.listener.getsockname()[1]
        self.threads: list[threading.Thread] = []
        self.conns: list[socket.socket] = []
        self.stopping = threading.Event()
        self._spawn(self._accept_loop)

    def _spawn(self, target, *args) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        t.start()
        self.threads.append(t)

    def _accept_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            self.conns.append(conn)
            self._spawn(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        try:
            while True:
                prefix = recv_exact(conn, 4)
                if prefix is None:
                    return
                body = recv_exact(conn, parse_frame_size(prefix))
                if body is None:
                    return
                try:
                    decoded = decode_request(body, self.supported)
                except UnsupportedVersionError as e:
                    if not e.is_api_versions:
                        raise AssertionError(f"only ApiVersions may ask for an unsupported version: {e}") from e
                    conn.sendall(encode_response(e.header, unsupported_version_response(self.supported), 0))
                    continue
                self.seen.append(decoded)
                out = self.handler(decoded, conn)
                if out:
                    conn.sendall(out)
        except OSError:
            return

    def close(self) -> None:
        self.stopping.set()
        self.threads[0].join(timeout=5)  # the accept loop
        self.listener.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        for t in self.threads:
            t.join(timeout=5)


@pytest.fixture
def serve():
    servers: list[TinyServer] = []

    def start(handler: Handler, supported=None) -> TinyServer:
        s = TinyServer(handler, supported)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


def answer(decoded: DecodedRequest, response) -> bytearray:
    return encode_response(decoded.header, response, decoded.api_version)


def controlled_shutdown_handler(decoded, _conn):
    C = ControlledShutdownResponse
    return answer(decoded, C(error_code=0, remaining_partitions=[
        C.RemainingPartition(topic_name="t", partition_index=decoded.request.broker_id)]))


def test_send_round_trips_and_counts_correlation_ids(serve):
    server = serve(controlled_shutdown_handler)
    with BrokerConnection("127.0.0.1", server.port, timeout=5, client_id="ctl") as conn:
        for broker_id in (1, 2, 3):
            resp = conn.send(ControlledShutdownRequest(broker_id=broker_id, broker_epoch=9), 3)
            assert resp.remaining_partitions[0].partition_index == broker_id
    assert [d.header.correlation_id for d in server.seen] == [0, 1, 2]
    assert {d.header.client_id for d in server.seen} == {"ctl"}
    assert server.seen[0].request.broker_epoch == 9


def test_shared_request_object_from_many_threads(serve):
    """The controller may hand one UpdateMetadata object to every broker's sender thread."""
    server = serve(lambda d, c: answer(d, UpdateMetadataResponse(error_code=0)))
    request = UpdateMetadataRequest(controller_id=1, controller_epoch=1, broker_epoch=1, live_brokers=[])
    errors: list[BaseException] = []

    def sender():
        try:
            with BrokerConnection("127.0.0.1", server.port, timeout=5) as conn:
                for _ in range(20):
                    assert conn.send(request, 6).error_code == 0
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=sender) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert len(server.seen) == 80


def test_timeout_closes_the_connection_then_reconnects(serve):
    state = {"silent": True}

    def handler(decoded, conn):
        if state["silent"]:
            return None
        return controlled_shutdown_handler(decoded, conn)

    server = serve(handler)
    conn = BrokerConnection("127.0.0.1", server.port, timeout=0.3)
    try:
        with pytest.raises(BrokerTimeoutError):
            conn.send(ControlledShutdownRequest(broker_id=1), 3)
        assert not conn.connected
        state["silent"] = False
        assert conn.send(ControlledShutdownRequest(broker_id=5), 3).remaining_partitions[0].partition_index == 5
    finally:
        conn.close()


def test_peer_closing_is_a_connection_error(serve):
    def hang_up(decoded, conn):
        conn.shutdown(socket.SHUT_RDWR)
        return None

    server = serve(hang_up)
    with BrokerConnection("127.0.0.1", server.port, timeout=5) as conn:
        with pytest.raises(BrokerConnectionError) as e:
            conn.send(ControlledShutdownRequest(broker_id=1), 3)
        assert not isinstance(e.value, BrokerTimeoutError)
        assert not conn.connected


def test_refused_connection():
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    conn = BrokerConnection("127.0.0.1", port, timeout=2)
    with pytest.raises(BrokerConnectionError):
        conn.connect()
    with pytest.raises(BrokerConnectionError):
        conn.send(ControlledShutdownRequest(broker_id=1), 3)


@pytest.mark.parametrize("bad", ["correlation", "size", "garbage"])
def test_bad_responses(serve, bad):
    def handler(decoded, _conn):
        if bad == "correlation":
            return struct.pack(">iih", 6, decoded.header.correlation_id + 1, 0)
        if bad == "size":
            return struct.pack(">i", 2**31 - 1)
        return struct.pack(">ii", 6, decoded.header.correlation_id) + b"\x00\x05"  # 5 remaining partitions, no bytes

    server = serve(handler)
    with BrokerConnection("127.0.0.1", server.port, timeout=5) as conn:
        with pytest.raises(InvalidResponseError):
            conn.send(ControlledShutdownRequest(broker_id=1), 3)
        assert not conn.connected


def test_produce_acks_zero_gets_no_response(serve):
    server = serve(lambda d, c: None if not d.expects_response else controlled_shutdown_handler(d, c))
    P = ProduceRequest
    produce = P(transactional_id=None, acks=0, timeout_ms=1000, topic_data=[P.TopicProduceData(
        name="t", partition_data=[P.TopicProduceData.PartitionProduceData(index=0, records=record_batch(1))])])
    with BrokerConnection("127.0.0.1", server.port, timeout=5) as conn:
        assert conn.send(produce, 9) is None
        assert conn.send(ControlledShutdownRequest(broker_id=2), 3).remaining_partitions[0].partition_index == 2
    assert [d.api_key for d in server.seen] == [0, 7]


def test_api_versions_helper(serve):
    supported = {18: (0, 3), 3: (0, 12), 4: (4, 4), 7: (3, 3)}
    server = serve(lambda d, c: answer(d, api_versions_response(supported)), supported)
    assert api_versions("127.0.0.1", server.port) == supported
    assert server.seen[0].api_version == 3


def test_api_versions_helper_falls_back(serve):
    supported = {18: (0, 2), 3: (0, 12)}
    server = serve(lambda d, c: answer(d, api_versions_response(supported)), supported)
    assert api_versions("127.0.0.1", server.port) == supported
    assert [d.api_version for d in server.seen] == [2]  # v3 was refused before decoding
