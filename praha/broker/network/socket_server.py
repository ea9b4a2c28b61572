"""The broker's socket server: Kafka framing over asyncio, one request at a time per connection.

Per connection (`FrameConnection`): read the 4-byte size (checked before allocating: a
huge or negative size closes the connection), read the body (a large one straight into
a buffer of its own, so the kernel's copy is nearly the only one), decode it, await the
handler, write the response.
Like Kafka, a connection's requests are processed in order and its responses go back in
order. Any bad frame costs only that connection: ApiVersions at an unknown version gets
Kafka's v0 UNSUPPORTED_VERSION answer; anything else malformed is logged (counted) and
the connection closed. Other clients are unaffected.

A response is bytes, or a `SegmentedFrame`: bytes and file regions in order (a Fetch
answer whose records stay in the segment files). Its bytes go through the transport as
usual; each region goes with the event loop's sendfile (os.sendfile once the transport's
buffer is empty), so record bytes are neither copied into the process nor buffered by
asyncio. A region the file no longer fully holds (cut by a truncation meanwhile) cannot
complete the announced frame: the connection is closed, as Kafka does. Where sendfile is
refused, the region is read and written like any bytes — always on a TLS listener, whose
bytes must pass through the TLS layer (PLAINTEXT keeps the zero-copy path).

One `SocketServer` per listener (`listeners`): before its first request a connection is
authenticated as its listener says (`authentication`: the TLS client certificate, the
SASL exchange), and every request it sends carries that `Session`.

Client quotas (KIP-219): a handler may answer `Muted(response, ms)`; the response goes out
at once (carrying its `throttle_time_ms`) and then the connection is muted: no further
request of it is read or handled for `ms`. An optional `RequestThrottler` (the broker's
request-time quota) wraps the handlers while it is active.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from praha.broker.network.authentication import AuthenticationFailed, sasl_authenticate, transport_session
from praha.broker.network.connection_quotas import ConnectionLimits, ConnectionQuotas, Refusal
from praha.errors import ErrorCode, InvalidRequestError
from praha.protocol.api_keys import ApiKey
from praha.protocol.error_response import error_response
from praha.protocol.errors import UnsupportedVersionError
from praha.protocol.fetch import Region
from praha.protocol.framing import (
    FRAME_SIZE_BYTES,
    DecodedRequest,
    Session,
    decode_request,
    encode_response,
    parse_frame_size,
)
from praha.protocol.registry import unsupported_version_response
from praha.security.listener import PLAINTEXT_LISTENER, ListenerSecurity
from praha.security.principal import NoMappingRuleError
from praha.security.sasl import SaslAuthenticator, ScramLookup

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Muted:
    """A handler's answer (None: no response, as for acks=0) after which the connection is
    muted for `mute_ms` (a client over its quota, KIP-219)."""

    response: Any
    mute_ms: int


class RequestThrottler(Protocol):
    """What the socket server needs of the request-time quota (`praha.broker.network.throttling`)."""

    @property
    def active(self) -> bool: ...

    def run(self, request: DecodedRequest, handler: Callable[[DecodedRequest], Awaitable[Any]]) -> Awaitable[Any]: ...


class SegmentedFrame:
    """A response frame in pieces: `bytes` and file regions, in wire order; `size` counts
    every byte (size prefix included). It owns its regions: `close()` releases them."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: Sequence[bytes | Region], size: int):
        self.parts = parts
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        """The whole frame, regions read from their files (tests, copying fallback)."""
        return b"".join(p if isinstance(p, bytes) else p.read() for p in self.parts)

    def close(self) -> None:
        for p in self.parts:
            if not isinstance(p, bytes):
                p.close()


def _cork(transport: asyncio.Transport, on: bool) -> asyncio.Transport | None:
    """Set TCP_CORK (Linux) on the transport's socket; the transport, or None where corking
    is unavailable."""
    sock = transport.get_extra_info("socket")
    cork = getattr(socket, "TCP_CORK", None)
    if sock is None or cork is None:
        return None
    try:
        sock.setsockopt(socket.IPPROTO_TCP, cork, 1 if on else 0)
    except OSError:  # not TCP (a Unix socket in a test), or closed meanwhile
        return None
    return transport


def _sendfile_now(transport: asyncio.Transport, part: Region) -> tuple[int, bool]:
    """Send as much of `part` as the socket takes now, with os.sendfile straight from the
    file: no event-loop round trip when the socket has room (the usual case for a
    follower's or consumer's fetch). Returns (bytes sent, whether any remain to send);
    nothing is sent while earlier bytes wait in the transport's buffer (they go first).
    A region the file no longer holds (truncated meanwhile) stops short with none remaining."""
    if transport.get_write_buffer_size() or transport.is_closing():
        return 0, True
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0, True
    out = sock.fileno()
    sent = 0
    while sent < part.size:
        try:
            n = os.sendfile(out, part.fd, part.position + sent, part.size - sent)
        except (BlockingIOError, InterruptedError):
            return sent, True
        if n == 0:  # the file ends before the region does
            return sent, False
        sent += n
    return sent, False


class _Descriptor:
    """The file object `loop.sendfile` wants: a descriptor (it sends at explicit offsets
    and only moves the file position, which pread/pwrite users never look at)."""

    __slots__ = ("_fd",)
    mode = "rb"

    def __init__(self, fd: int):
        self._fd = fd

    def fileno(self) -> int:
        return self._fd


class FrameConnection(asyncio.BufferedProtocol):
    """One client connection: Kafka frames in, responses out, with flow control both ways.

    Frames are read with `recv_into` (asyncio's buffered protocol): small ones into a
    staging buffer, from which each is copied out, and the body of a large one (over
    `STAGING_BYTES`) straight into a `bytearray` of its own, so its bytes are copied once,
    by the kernel, plus once per 4x growth of that buffer (which keeps it within 4x of
    what the peer has sent). Each body is handed over as a writable `bytearray` that the
    request owns (Produce stamps offsets into it). Reading pauses while waiting frames and
    the body being read hold `QUEUE_BYTES` (the client's later requests stay in the
    kernel's socket buffer); writing has asyncio's flow control (`drain`)."""

    STAGING_BYTES = 64 * 1024
    #: a large body's buffer holds at most 4x the bytes that have arrived (at least this
    #: much), growing 4x at a time: a peer that only announces a huge frame gets little
    BODY_START_BYTES = 256 * 1024
    #: read ahead of the request being handled: up to this much in complete frames and
    #: the body being read (Kafka reads nothing more until the answer is out)
    QUEUE_BYTES = 1 << 20

    def __init__(self, max_frame_bytes: int, on_connect: Callable[[FrameConnection], None] | None = None,
                 tls: bool = False):
        self.max_frame_bytes = max_frame_bytes
        self.tls = tls
        self.on_connect = on_connect  # called once the transport is attached
        self.transport: asyncio.Transport | None = None
        #: allocated when bytes arrive and dropped once every staged frame is taken out,
        #: so that an idle connection holds no buffer
        self._stage: bytearray | None = None
        self._start = 0  # first unconsumed byte in the staging buffer
        self._end = 0  # end of the bytes read into it
        self._body: bytearray | None = None  # a large frame's body being read in place
        self._body_filled = 0
        self._body_size = 0
        self._frames: deque[bytearray] = deque()
        self._frames_in = 0  # frames completed so far
        self._queued_bytes = 0
        self._error: InvalidRequestError | None = None
        self._closed = False  # the transport is gone
        self._eof = False  # the peer sends no more
        self._paused_reading = False
        self._frame_waiter: asyncio.Future[None] | None = None
        self._write_paused = False
        self._drain_waiter: asyncio.Future[None] | None = None
        #: for the server's timers (monotonic time): the last bytes received, when the
        #: request now arriving began (None: no partial request), whether one is being handled
        self.last_active = 0.0
        self.partial_since: float | None = None
        self.handling = False

    # ---------------------------------------------------------------- asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.last_active = time.monotonic()
        if self.on_connect is not None:
            self.on_connect(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._body is not None:
            return memoryview(self._body)[self._body_filled:]
        if self._stage is None:
            self._stage = bytearray(self.STAGING_BYTES)
        return memoryview(self._stage)[self._end:]

    def buffer_updated(self, nbytes: int) -> None:
        frames_before = self._frames_in
        body = self._body
        if body is not None:
            self._body_filled += nbytes
            if self._body_filled == self._body_size:
                self._queue(body)
                self._body = None
            elif self._body_filled == len(body):  # the peer has sent this much: grow
                grown = bytearray(min(self._body_size, 4 * len(body)))
                grown[:self._body_filled] = body
                self._body = grown
        else:
            self._end += nbytes
        self._take_staged_frames()
        now = time.monotonic()
        self.last_active = now
        if self._body is None and self._end == 0:
            self._stage = None  # nothing partial is staged: release the buffer
            self.partial_since = None
        elif self.partial_since is None or self._frames_in != frames_before:
            self.partial_since = now  # a new request began arriving
        if self._error is not None:  # nothing after a refused size can be framed
            self._pause_reading()
            self._wake_reader()
        elif self._read_ahead_full():
            self._pause_reading()

    def eof_received(self) -> bool:
        """The peer is done sending: its complete frames are still answered (a client may
        half-close after its last request), then the request loop closes."""
        self._eof = True
        if self._body is None and self._end == 0:
            self._stage = None  # the buffer this last (empty) read was offered
        self._wake_reader()
        return not self.tls  # keep the transport open for the answers (TLS has no half-close)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._stage = self._body = None  # nothing more will be read
        self._wake_reader()
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_exception(ConnectionResetError("connection lost"))

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    # ---------------------------------------------------------------- the request loop's side
    async def next_frame(self) -> bytearray | None:
        """The next request body; None once the peer has gone. Raises InvalidRequestError
        for a frame size that is refused (after the frames before it)."""
        while not self._frames:
            if self._error is not None:
                raise self._error
            if self._closed or self._eof:
                return None
            self._resume_reading()
            self._frame_waiter = asyncio.get_running_loop().create_future()
            try:
                await self._frame_waiter
            finally:
                self._frame_waiter = None
        frame = self._frames.popleft()
        self._queued_bytes -= len(frame)
        if self._error is None and not self._read_ahead_full():
            self._resume_reading()
        return frame

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    async def drain(self) -> None:
        if self._closed:
            raise ConnectionResetError("connection lost")
        if self._write_paused:
            self._drain_waiter = asyncio.get_running_loop().create_future()
            try:
                await self._drain_waiter
            finally:
                self._drain_waiter = None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    # ---------------------------------------------------------------- internals
    def _take_staged_frames(self) -> None:
        stage = self._stage
        if stage is None:
            return
        while self._body is None and self._error is None:
            available = self._end - self._start
            if available < FRAME_SIZE_BYTES:
                break
            try:
                size = parse_frame_size(stage[self._start:self._start + FRAME_SIZE_BYTES], self.max_frame_bytes)
            except InvalidRequestError as e:
                self._error = e
                break
            begin = self._start + FRAME_SIZE_BYTES
            if available - FRAME_SIZE_BYTES >= size:  # whole frame staged: copy it out
                self._queue(stage[begin:begin + size])
                self._start = begin + size
            elif FRAME_SIZE_BYTES + size > len(stage):  # large: read the rest straight into its body
                have = self._end - begin
                body = bytearray(min(size, max(self.BODY_START_BYTES, 4 * have)))
                body[:have] = stage[begin:self._end]
                self._body, self._body_filled, self._body_size = body, have, size
                self._start = self._end = 0
            else:
                break
        if self._start == self._end:
            self._start = self._end = 0
        elif self._start and self._body is None:  # keep a partial frame at the front
            rest = self._end - self._start
            stage[:rest] = stage[self._start:self._end]
            self._start, self._end = 0, rest

    def _read_ahead_full(self) -> bool:
        """Frames wait and, with the body being read, hold `QUEUE_BYTES`: read no further.
        (With nothing queued the body being read is what the request loop waits for.)"""
        if not self._frames:
            return False
        return self._queued_bytes + (self._body_filled if self._body is not None else 0) >= self.QUEUE_BYTES

    def _queue(self, frame: bytearray) -> None:
        self._frames.append(frame)
        self._frames_in += 1
        self._queued_bytes += len(frame)
        self._wake_reader()

    def _wake_reader(self) -> None:
        if self._frame_waiter is not None and not self._frame_waiter.done():
            self._frame_waiter.set_result(None)

    def _pause_reading(self) -> None:
        if not self._paused_reading and self.transport is not None and not self._closed:
            self._paused_reading = True
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        if self._paused_reading and self.transport is not None and not self._closed and not self._eof:
            self._paused_reading = False
            if self.partial_since is not None:
                self.partial_since = time.monotonic()
            self.transport.resume_reading()


class ApiTable(Protocol):
    """What the socket server needs of the broker's API table (`praha.broker.handlers.routes`)."""

    @property
    def handlers(self) -> Mapping[int, Callable[[DecodedRequest], Awaitable[Any]]]: ...

    @property
    def versions(self) -> Mapping[int, tuple[int, int]]: ...


class SocketServer:
    """One listener: accepts connections within `limits` (see `connection_quotas`),
    authenticates each as its `security` says (TLS, SASL: `authentication`) and serves it
    with its request loop; a sweeper closes idle connections and requests that stall
    mid-frame (a TLS handshake has `TLS_HANDSHAKE_TIMEOUT_S`)."""

    TLS_HANDSHAKE_TIMEOUT_S = 10.0

    def __init__(self, handlers: ApiTable, host: str, port: int, max_request_bytes: int,
                 limits: ConnectionLimits | None = None, throttler: RequestThrottler | None = None,
                 security: ListenerSecurity = PLAINTEXT_LISTENER, scram_lookup: ScramLookup | None = None,
                 connection_quotas: ConnectionQuotas | None = None):
        self.handlers = handlers
        self.throttler = throttler
        #: connections muted after a response for a client over its quota
        self.mutes = 0
        self.security = security
        self.scram_lookup = scram_lookup
        #: connections closed because they did not authenticate
        self.failed_authentications = 0
        #: shared by a broker's listeners (max.connections counts them all)
        self.connection_quotas = connection_quotas or ConnectionQuotas(limits or ConnectionLimits())
        #: connections closed by the sweeper: idle too long / a request stalled mid-frame
        self.closed_idle = 0
        self.closed_partial = 0
        self._sweeper: asyncio.Task[None] | None = None
        self.host = host
        self.port = port
        self.max_request_bytes = max_request_bytes
        self.server: asyncio.base_events.Server | None = None
        self.connections = 0
        self.requests = 0
        self.bad_requests = 0
        #: requests whose handler raised (answered with UNKNOWN_SERVER_ERROR)
        self.handler_failures = 0
        #: regions sent with sendfile / written after a copying read (sendfile refused)
        self.regions_sent = 0
        self.regions_copied = 0
        self._open: set[FrameConnection] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        tls = self.security.ssl_context
        self.server = await loop.create_server(lambda: FrameConnection(self.max_request_bytes, self._start_serving,
                                                                       tls is not None),
                                               self.host, self.port, reuse_address=True, backlog=1024, ssl=tls,
                                               ssl_handshake_timeout=self.TLS_HANDSHAKE_TIMEOUT_S if tls else None)
        sock = self.server.sockets[0]
        self.port = sock.getsockname()[1]
        self._sweeper = loop.create_task(self._sweep())

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self.server is not None:
            self.server.close()
            for conn in list(self._open):
                conn.close()
            await self.server.wait_closed()

    def _start_serving(self, conn: FrameConnection) -> None:
        peer = conn.transport.get_extra_info("peername") if conn.transport is not None else None
        ip = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        verdict = self.connection_quotas.admit(ip)
        if isinstance(verdict, Refusal):
            refused = sum(self.connection_quotas.refused.values())
            level = logging.WARNING if refused <= 20 or refused % 1000 == 0 else logging.DEBUG
            log.log(level, "closing connection from %s: %s reached (%d refused so far)", peer, verdict.value, refused)
            conn.close()
            return
        task = asyncio.get_running_loop().create_task(self._serve(conn, peer, ip, verdict))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, conn: FrameConnection, peer: object, ip: str, delay: float) -> None:
        self.connections += 1
        self._open.add(conn)
        try:
            if delay > 0:  # max.connection.creation.rate: served in its turn, not refused
                conn._pause_reading()
                await asyncio.sleep(delay)
            session = await self._authenticate(conn, peer, ip)
            if session is None:
                return
            while True:
                try:
                    body = await conn.next_frame()
                except InvalidRequestError as e:
                    self._bad(peer, e)
                    return
                if body is None:
                    return
                conn.handling = True
                try:
                    response, mute_ms = await self._handle(body, peer, session)
                finally:
                    conn.handling = False
                    conn.last_active = time.monotonic()
                if response is False:
                    return
                if isinstance(response, SegmentedFrame):
                    if not await self._send_frame(conn, response, peer):
                        return
                elif response is not None:
                    conn.write(response)
                    await conn.drain()
                if mute_ms > 0:
                    await self._mute(conn, mute_ms)
        except asyncio.CancelledError:
            raise
        except ConnectionError:
            return
        except Exception:  # noqa: BLE001 - one connection's failure must not reach the server
            log.exception("connection from %s failed", peer)
        finally:
            self._open.discard(conn)
            conn.close()
            self.connections -= 1
            self.connection_quotas.release(ip)

    async def _sweep(self) -> None:
        """Close connections idle for `connections.max.idle.ms` (no request in progress, no
        bytes) and those whose request began arriving `partial.request.timeout` ago."""
        limits = self.connection_quotas.limits
        period = max(0.05, min(limits.max_idle_ms, limits.partial_request_timeout_ms) / 4000.0)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            idle = partial = 0
            for conn in list(self._open):
                if conn.partial_since is not None:  # (its clock restarts whenever we resume reading)
                    waited_ms = (now - conn.partial_since) * 1000
                    if not conn._paused_reading and waited_ms > limits.partial_request_timeout_ms:
                        partial += 1
                        conn.close()
                    continue
                if not conn.handling and (now - conn.last_active) * 1000 > limits.max_idle_ms:
                    idle += 1
                    conn.close()
            if idle or partial:
                self.closed_idle += idle
                self.closed_partial += partial
                log.info("closed %d idle connections (connections.max.idle.ms %d) and %d with a request stalled "
                         "mid-frame (praha.partial.request.timeout.ms %d)", idle, limits.max_idle_ms, partial,
                         limits.partial_request_timeout_ms)

    async def _authenticate(self, conn: FrameConnection, peer: object, ip: str) -> Session | None:
        """The connection's session, or None when it failed to authenticate (then closed)."""
        security = self.security
        try:
            session = transport_session(security, conn, f"/{ip}")
            if not security.uses_sasl:
                return session
            if self.scram_lookup is None:
                raise AuthenticationFailed("no SCRAM credential source")
            auth = SaslAuthenticator(security, self.scram_lookup)
            versions = self.handlers.versions
            return await sasl_authenticate(conn, auth, session, versions, self.handlers.handlers[ApiKey.API_VERSIONS])
        except (AuthenticationFailed, NoMappingRuleError) as e:
            self.failed_authentications += 1
            failed = self.failed_authentications
            level = logging.INFO if failed <= 20 or failed % 1000 == 0 else logging.DEBUG
            log.log(level, "closing connection from %s on listener %s: %s (%d failed authentications so far)",
                    peer, security.name, e, failed)
            return None

    async def _mute(self, conn: FrameConnection, mute_ms: int) -> None:
        """Read and handle nothing more of this connection for `mute_ms` (KIP-219)."""
        self.mutes += 1
        conn._pause_reading()
        conn.handling = True  # not idle: the sweeper leaves it alone
        try:
            await asyncio.sleep(mute_ms / 1000.0)
        finally:
            conn.handling = False
            conn.last_active = time.monotonic()

    async def _handle(self, body: bytes | bytearray, peer: object, session: Session
                      ) -> tuple[bytes | SegmentedFrame | None | Literal[False], int]:
        """(response bytes, None for no response or False to close the connection; the
        milliseconds to mute the connection for after it)."""
        handlers = self.handlers
        try:
            decoded = decode_request(body, handlers.versions, session)
        except UnsupportedVersionError as e:
            if e.api_key == ApiKey.API_VERSIONS:
                resp = unsupported_version_response(handlers.versions)
                return bytes(encode_response(e.header, resp, 0)), 0
            self._bad(peer, e)
            return False, 0
        except InvalidRequestError as e:
            self._bad(peer, e)
            return False, 0
        self.requests += 1
        handler = handlers.handlers[decoded.api_key]
        throttler = self.throttler
        try:
            if throttler is not None and throttler.active:
                response = await throttler.run(decoded, handler)
            else:
                response = await handler(decoded)
        except (asyncio.CancelledError, ConnectionError):
            raise
        except Exception as e:  # noqa: BLE001 - Kafka answers the API's error response and keeps the connection
            response = self._failed(decoded, peer, e)
            if response is None:
                return False, 0
        mute_ms = 0
        if type(response) is Muted:
            response, mute_ms = response.response, response.mute_ms
        if response is None or not decoded.expects_response:
            return None, mute_ms
        frame = encode_response(decoded.header, response, decoded.api_version)
        if isinstance(frame, SegmentedFrame):
            return frame, mute_ms
        return bytes(frame), mute_ms

    async def _send_frame(self, conn: FrameConnection, frame: SegmentedFrame, peer: object) -> bool:
        """Write a segmented frame; False if the connection must close (or already has).

        The socket is corked meanwhile (TCP_CORK), so the small pieces between the file
        regions leave with the region bytes instead of as segments of their own: on
        loopback each segment costs the sender the receiver's TCP work and a wake-up."""
        loop = asyncio.get_running_loop()
        transport = conn.transport
        corked = None if transport is None or self.security.uses_tls else _cork(transport, True)
        try:
            if transport is None:
                return False
            for part in frame.parts:
                if isinstance(part, bytes):
                    conn.write(part)
                    continue
                if self.security.uses_tls:  # the bytes must pass through TLS: no sendfile
                    sent = -1
                else:
                    sent, more = _sendfile_now(transport, part)
                    if more:  # the socket's buffer filled: the event loop sends the rest
                        try:
                            sent += await loop.sendfile(transport, cast(Any, _Descriptor(part.fd)),
                                                        part.position + sent, part.size - sent, fallback=False)
                        except RuntimeError:  # includes SendfileNotAvailableError
                            if transport.is_closing() or sent:
                                return False
                            sent = -1
                if sent == -1:
                    self.regions_copied += 1
                    conn.write(part.read())
                    await conn.drain()
                elif sent != part.size:
                    log.warning("closing connection from %s: a file region shrank during the send "
                                "(%d of %d bytes; truncated meanwhile)", peer, sent, part.size)
                    return False
                else:
                    self.regions_sent += 1
            await conn.drain()
            return True
        except ConnectionError:
            return False
        finally:
            if corked is not None and not corked.is_closing():
                _cork(corked, False)  # whatever is still held leaves now
            frame.close()

    def _failed(self, decoded: DecodedRequest, peer: object, error: Exception) -> Any:
        """A handler raised: the API's answer with UNKNOWN_SERVER_ERROR (Kafka's
        `getErrorResponse`), or None when the request expects no answer (acks=0: Kafka
        closes the connection, the client's only sign of the failure)."""
        self.handler_failures += 1
        failures = self.handler_failures
        if failures <= 20 or failures % 1000 == 0:
            log.exception("%s v%d from %s failed (%d handler failures so far)", ApiKey(decoded.api_key).name,
                          decoded.api_version, peer, failures)
        if not decoded.expects_response:
            return None
        return error_response(decoded.api_key, decoded.api_version, decoded.request, ErrorCode.UNKNOWN_SERVER_ERROR,
                              f"Unexpected server error: {type(error).__name__}")

    def _bad(self, peer: object, error: Exception) -> None:
        self.bad_requests += 1
        level = logging.WARNING if self.bad_requests <= 20 or self.bad_requests % 1000 == 0 else logging.DEBUG
        log.log(level, "closing connection from %s: %s (%d bad requests so far)", peer, error, self.bad_requests)
