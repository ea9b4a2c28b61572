"""Stand-in brokers: a tiny threaded Kafka-framed sink per broker on 127.0.0.1 that answers
LeaderAndIsr / UpdateMetadata / StopReplica with error_code 0 and records when it answered
(optionally the request bodies, decoded after the measurement), registers its ephemeral
`/brokers/ids/<id>` znode in a ZooKeeper session of its own (closing it is the broker's
death) and sends a ControlledShutdown request like a real broker."""
from __future__ import annotations

import socket
import socketserver
import struct
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from praha.common import (
    BrokerInfo,
    EndPoint,
    TopicPartition,
)
from praha.protocol.controller_apis import (
    ControlledShutdownRequest,
    LeaderAndIsrResponse,
    StopReplicaResponse,
    UpdateMetadataResponse,
)
from praha.protocol.framing import decode_request, encode_response, parse_request_header
from praha.zk.store import ZkStore

from .constants import CONTROLLED_SHUTDOWN_VERSION, LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA


# ------------------------------------------------------------------------- stand-in brokers
@dataclass(slots=True)
class Received:
    api_key: int
    t_in: float       # wall time the whole request was read
    t_out: float      # wall time just before the answer was written
    size: int
    body: bytes | None = None  # kept only for the API keys the stand-in was asked to keep


class _SinkHandler(socketserver.BaseRequestHandler):
    """Reads Kafka frames; answers the three controller APIs with error_code 0, records
    their arrival; closes the connection on anything else (e.g. a follower's Fetch)."""

    def handle(self) -> None:
        sink: StandInBroker = self.server.sink  # type: ignore[attr-defined]
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while not sink.closing:
            prefix = _recv_exact(sock, 4)
            if prefix is None:
                return
            (size,) = struct.unpack(">i", prefix)
            if size < 0 or size > 512 << 20:
                return
            body = _recv_exact(sock, size)
            if body is None:
                return
            t_in = time.time()
            try:
                header = parse_request_header(body)
            except Exception:  # noqa: BLE001 - not a frame we understand
                return
            if header.api_key == LEADER_AND_ISR:
                resp = LeaderAndIsrResponse(error_code=0, partition_errors=[])
            elif header.api_key == UPDATE_METADATA:
                resp = UpdateMetadataResponse(error_code=0)
            elif header.api_key == STOP_REPLICA:
                resp = StopReplicaResponse(error_code=0, partition_errors=[])
            else:
                return
            sink.record(header.api_key, size, t_in, body)
            sock.sendall(encode_response(header, resp, header.api_version))


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(min(n - len(buf), 1 << 20))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


class StandInBroker:
    """A broker that only answers the controller. `keep` = API keys whose request bodies
    are kept (to be decoded after the measurement, never while it runs)."""

    def __init__(self, broker_id: int, keep: Iterable[int] = ()):
        self.broker_id = broker_id
        self.keep = frozenset(keep)
        self.closing = False
        self._lock = threading.Lock()
        self.received: list[tuple[int, float, int]] = []  # (api key, wall time answered, bytes)
        self.requests: list[Received] = []
        self.server = _Server(("127.0.0.1", 0), _SinkHandler)
        self.server.sink = self  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2},
                                       name=f"stand-in-{broker_id}", daemon=True)
        #: the ZooKeeper session holding this stand-in's registration, if it has its own
        self.session: ZkStore | None = None
        self.epoch = -1

    def start(self) -> StandInBroker:
        self.thread.start()
        return self

    def info(self) -> BrokerInfo:
        return BrokerInfo(self.broker_id, (EndPoint("127.0.0.1", self.port),))

    def record(self, api_key: int, size: int, t_in: float | None = None, body: bytes | None = None) -> None:
        t = time.time()
        with self._lock:
            self.received.append((api_key, t, size))
            self.requests.append(Received(api_key, t if t_in is None else t_in, t, size,
                                          body if api_key in self.keep else None))

    def first_after(self, api_key: int, t0: float) -> tuple[float, int] | None:
        with self._lock:
            return next(((t, n) for k, t, n in self.received if k == api_key and t >= t0), None)

    def since(self, t0: float, api_key: int | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.t_in >= t0 and (api_key is None or r.api_key == api_key)]

    def forget(self) -> None:
        """Drop what was recorded (between trials)."""
        with self._lock:
            self.received.clear()
            self.requests.clear()

    # -- registration in a ZooKeeper session of its own -------------------------------------
    def register_own_session(self, zk_connect: str, session_timeout_ms: int = 30000) -> int:
        """Register `/brokers/ids/<id>` in a new session; returns the broker epoch (czxid)."""
        self.close_session()
        self.session = ZkStore(zk_connect, session_timeout_ms=session_timeout_ms,
                               connection_timeout_ms=30000).start()
        self.epoch = self.session.register_broker(self.info())
        return self.epoch

    def close_session(self) -> None:
        """Close the session: ZooKeeper deletes the ephemeral znode at once (the broker "dies")."""
        s, self.session = self.session, None
        if s is not None:
            s.stop()

    def controlled_shutdown(self, host: str, port: int, timeout: float = 120.0):
        """Send ControlledShutdown v3 with this broker's epoch, as a real broker does; returns
        the response (error_code, remaining_partitions)."""
        from praha.protocol.client import BrokerConnection

        conn = BrokerConnection(host, port, timeout=timeout)
        try:
            conn.connect()
            return conn.send(ControlledShutdownRequest(broker_id=self.broker_id, broker_epoch=self.epoch),
                             CONTROLLED_SHUTDOWN_VERSION)
        finally:
            conn.close()

    def stop(self) -> None:
        self.closing = True
        self.close_session()
        self.server.shutdown()
        self.server.server_close()


def leader_and_isr_partitions(body: bytes) -> list[tuple[TopicPartition, int, int]]:
    """(partition, leader, leader epoch) of every partition state in a LeaderAndIsr request body."""
    req = decode_request(body).request
    return [(TopicPartition(ts.topic_name, p.partition_index), p.leader, p.leader_epoch)
            for ts in (req.topic_states or []) for p in (ts.partition_states or [])]


def stop_replica_partitions(body: bytes) -> list[tuple[TopicPartition, bool]]:
    req = decode_request(body).request
    return [(TopicPartition(ts.topic_name, p.partition_index), bool(p.delete_partition))
            for ts in (req.topic_states or []) for p in (ts.partition_states or [])]


