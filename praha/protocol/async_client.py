"""An asyncio Kafka client connection for brokers talking to brokers (followers to leaders).

One request at a time on a raw non-blocking socket; the answer is read straight into one
reusable buffer, so a fetch response crosses from the kernel into Python once.
"""
from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections.abc import Callable
from typing import Any, cast

from praha.errors import ErrorCode, PrahaError
from praha.protocol.client_security import PLAINTEXT, ClientSecurity, SaslAuthenticationError, sasl_tokens
from praha.protocol.framing import decode_response, encode_request
from praha.protocol.messages.gen.metadata import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from praha.protocol.messages.runtime import WireMessage

_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")

class AsyncConnection:
    """A Kafka protocol client on a raw non-blocking socket: one request at a time.

    Responses are read with `sock_recv_into` straight into one reusable buffer: a
    follower's fetch response crosses from the kernel into Python exactly once (asyncio
    streams would copy each megabyte three or four times). `send(..., raw=True)`
    returns a view into that buffer, valid until the next request.

    With TLS (`security.ssl_context`) the socket's bytes go through an `ssl.SSLObject`
    over memory buffers (asyncio's socket calls take no SSL sockets): decrypted straight
    into the same buffer. With SASL, the exchange runs right after connecting."""

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float, max_response_bytes: int = 1 << 30,
                 security: ClientSecurity = PLAINTEXT):
        self.security = security
        self._tls: ssl.SSLObject | None = None
        self._tls_in = self._tls_out = ssl.MemoryBIO()
        self.host, self.port = host, port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self._sock: socket.socket | None = None
        self._buf = bytearray(1 << 16)
        self._next_id = 0

    @property
    def connected(self) -> bool:
        return self._sock is not None

    async def connect(self) -> None:
        if self._sock is not None:
            return
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        family, _, proto, _, addr = infos[0]
        s = socket.socket(family, socket.SOCK_STREAM, proto)
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await asyncio.wait_for(loop.sock_connect(s, addr), self.timeout_s)
        except BaseException:
            s.close()
            raise
        self._sock = s
        try:
            if self.security.ssl_context is not None:
                await asyncio.wait_for(self._tls_handshake(loop), self.timeout_s)
            if self.security.sasl_mechanism:
                await self._authenticate()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._tls = None

    async def _tls_handshake(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self.security.ssl_context is not None
        self._tls_in, self._tls_out = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = self.security.ssl_context.wrap_bio(self._tls_in, self._tls_out, server_hostname=self.host)
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                await self._tls_flush(loop)
                await self._tls_feed(loop)
        await self._tls_flush(loop)
        self._tls = tls

    async def _tls_flush(self, loop: asyncio.AbstractEventLoop) -> None:
        data = self._tls_out.read()
        if data:
            assert self._sock is not None
            await loop.sock_sendall(self._sock, data)

    async def _tls_feed(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self._sock is not None
        data = await loop.sock_recv(self._sock, 1 << 16)
        if not data:
            raise ConnectionError(f"{self.host}:{self.port} closed the connection")
        self._tls_in.write(data)

    async def _authenticate(self) -> None:
        """SaslHandshake v1, then SaslAuthenticate until the mechanism's exchange ends."""
        mechanism = self.security.sasl_mechanism
        handshake = await self.send(SaslHandshakeRequest(mechanism=mechanism), 1, SaslHandshakeResponse)
        if handshake.error_code != ErrorCode.NONE:
            raise SaslAuthenticationError(f"{self.host}:{self.port} refused SASL mechanism {mechanism} "
                                          f"(error {handshake.error_code}; enabled: {handshake.mechanisms})")
        tokens = sasl_tokens(self.security)
        token = tokens(None)
        while token is not None:
            answer = await self.send(SaslAuthenticateRequest(auth_bytes=token), 1, SaslAuthenticateResponse)
            if answer.error_code != ErrorCode.NONE:
                raise SaslAuthenticationError(f"{self.host}:{self.port}: {answer.error_message}")
            token = tokens(bytes(answer.auth_bytes or b""))

    async def send(self, request: Any, version: int, response_cls: Any = None, timeout_s: float | None = None,
                   raw: bool = False, frame_for: Callable[[int], bytes] | None = None) -> Any:
        """Send `request` (or the frame `frame_for` builds from the correlation id) and wait
        for the answer: decoded, or with `raw` the body as a view into the buffer."""
        await self.connect()
        assert self._sock is not None
        loop = asyncio.get_running_loop()
        cid = self._next_id
        self._next_id = (cid + 1) & 0x7FFFFFFF
        frame = frame_for(cid) if frame_for is not None else encode_request(request, version, cid, self.client_id)
        try:
            if self._tls is not None:
                self._tls.write(frame)
                await self._tls_flush(loop)
            else:
                await loop.sock_sendall(self._sock, frame)
            async with asyncio.timeout(timeout_s or self.timeout_s):  # no task per request, unlike wait_for
                body = await self._read_frame(loop)
        except BaseException:
            self.close()
            raise
        (got,) = _CORRELATION.unpack_from(body, 0)
        if got != cid:
            self.close()
            raise PrahaError(f"correlation id {got} from {self.host}:{self.port}, expected {cid}")
        if raw:
            return body
        if isinstance(response_cls, type) and issubclass(response_cls, WireMessage):
            return decode_response(response_cls, body, version)
        return response_cls.decode(bytes(body), version=version, header=True)

    async def _read_frame(self, loop: asyncio.AbstractEventLoop) -> memoryview:
        if self._tls is None:
            return await self._read_plain_frame(loop)
        head = await self._read_into(loop, 4)
        (size,) = _SIZE.unpack_from(head, 0)
        if not 4 <= size <= self.max_response_bytes:
            raise PrahaError(f"bad response frame size {size} from {self.host}:{self.port}")
        return await self._read_into(loop, size)

    async def _read_plain_frame(self, loop: asyncio.AbstractEventLoop) -> memoryview:
        """The size and as much of the body as has arrived in one read (the peer answers one
        request at a time, so nothing after this answer can be in the socket), then the rest."""
        sock = self._sock
        assert sock is not None
        view = memoryview(self._buf)
        got = 0
        while got < 4:
            k = await loop.sock_recv_into(sock, view[got:])
            if k == 0:
                raise ConnectionError(f"{self.host}:{self.port} closed the connection")
            got += k
        (size,) = _SIZE.unpack_from(self._buf, 0)
        if not 4 <= size <= self.max_response_bytes:
            raise PrahaError(f"bad response frame size {size} from {self.host}:{self.port}")
        end = 4 + size
        if got > end:
            raise PrahaError(f"{got - end} bytes from {self.host}:{self.port} after the answer")
        if len(self._buf) < end:
            grown = bytearray(max(end, 2 * len(self._buf)))
            grown[:got] = view[:got]
            self._buf = grown
            view = memoryview(grown)
        while got < end:
            k = await loop.sock_recv_into(sock, view[got:end])
            if k == 0:
                raise ConnectionError(f"{self.host}:{self.port} closed the connection")
            got += k
        return view[4:end]

    async def _read_into(self, loop: asyncio.AbstractEventLoop, n: int) -> memoryview:
        if len(self._buf) < n:
            self._buf = bytearray(max(n, 2 * len(self._buf)))
        view = memoryview(self._buf)[:n]
        got = 0
        sock = self._sock
        assert sock is not None
        tls = self._tls
        while got < n:
            if tls is not None:
                try:
                    k = cast(int, tls.read(n - got, view[got:]))  # with a buffer: the count read
                except ssl.SSLWantReadError:
                    await self._tls_feed(loop)
                    continue
                if k == 0:
                    raise ConnectionError(f"{self.host}:{self.port} closed the TLS session")
                got += k
                continue
            k = await loop.sock_recv_into(sock, view[got:])
            if k == 0:
                raise ConnectionError(f"{self.host}:{self.port} closed the connection")
            got += k
        return view
