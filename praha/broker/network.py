"""The broker's socket server: Kafka framing over asyncio, one request at a time per connection.

Per connection: read the 4-byte size (checked before allocating: a huge or negative size
closes the connection), read the body, decode it, await the handler, write the response.
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
refused, the region is read and written like any bytes.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Protocol

from praha.errors import InvalidRequestError
from praha.protocol.errors import UnsupportedVersionError
from praha.protocol.framing import decode_request, encode_response, parse_frame_size
from praha.protocol.registry import unsupported_version_response

if TYPE_CHECKING:
    from praha.broker.handlers import RequestHandlers

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18


class Region(Protocol):
    """Part of a file to send (`praha.log.log.FileRegion`)."""

    fd: int
    position: int
    size: int

    def read(self) -> bytes: ...
    def close(self) -> None: ...


class SegmentedFrame:
    """A response frame in pieces: `bytes` and file regions, in wire order; `size` counts
    every byte (size prefix included). It owns its regions: `close()` releases them."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: "list[bytes | Region]", size: int):
        self.parts = parts
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        """The whole frame, regions read from their files (tests, copying fallback)."""
        return b"".join(p if type(p) is bytes else p.read() for p in self.parts)

    def close(self) -> None:
        for p in self.parts:
            if type(p) is not bytes:
                p.close()


class _Descriptor:
    """The file object `loop.sendfile` wants: a descriptor (it sends at explicit offsets
    and only moves the file position, which pread/pwrite users never look at)."""

    __slots__ = ("_fd",)
    mode = "rb"

    def __init__(self, fd: int):
        self._fd = fd

    def fileno(self) -> int:
        return self._fd


class SocketServer:
    def __init__(self, handlers: "RequestHandlers", host: str, port: int, max_request_bytes: int):
        self.handlers = handlers
        self.host = host
        self.port = port
        self.max_request_bytes = max_request_bytes
        self.server: asyncio.base_events.Server | None = None
        self.connections = 0
        self.requests = 0
        self.bad_requests = 0
        #: regions sent with sendfile / written after a copying read (sendfile refused)
        self.regions_sent = 0
        self.regions_copied = 0
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(
            self._serve, self.host, self.port, reuse_address=True, limit=1 << 20, backlog=1024
        )
        sock = self.server.sockets[0]
        self.port = sock.getsockname()[1]

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            for w in list(self._writers):
                w.close()
            await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        peer = writer.get_extra_info("peername")
        try:
            while True:
                try:
                    prefix = await reader.readexactly(4)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                try:
                    size = parse_frame_size(prefix, self.max_request_bytes)
                    body = await reader.readexactly(size)
                except InvalidRequestError as e:
                    self._bad(peer, e)
                    return
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                response = await self._handle(body, peer)
                if response is None:
                    continue
                if response is False:
                    return
                if type(response) is SegmentedFrame:
                    if not await self._send_frame(writer, response, peer):
                        return
                    continue
                writer.write(response)
                await writer.drain()
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one connection's failure must not reach the server
            log.exception("connection from %s failed", peer)
        finally:
            self._writers.discard(writer)
            writer.close()
            self.connections -= 1

    async def _handle(self, body: bytes, peer) -> bytes | None | bool:
        """Response bytes, None for no response, False to close the connection."""
        handlers = self.handlers
        try:
            decoded = decode_request(body, handlers.versions)
        except UnsupportedVersionError as e:
            if e.api_key == API_VERSIONS_KEY:
                resp = unsupported_version_response(handlers.versions)
                return bytes(encode_response(e.header, resp, 0))
            self._bad(peer, e)
            return False
        except InvalidRequestError as e:
            self._bad(peer, e)
            return False
        self.requests += 1
        handler = handlers.handlers[decoded.api_key]
        response = await handler(decoded)
        if response is None or not decoded.expects_response:
            return None
        frame = encode_response(decoded.header, response, decoded.api_version)
        if type(frame) is SegmentedFrame:
            return frame
        return bytes(frame)

    async def _send_frame(self, writer: asyncio.StreamWriter, frame: SegmentedFrame, peer) -> bool:
        """Write a segmented frame; False if the connection must close (or already has)."""
        loop = asyncio.get_running_loop()
        transport = writer.transport
        try:
            for part in frame.parts:
                if type(part) is bytes:
                    writer.write(part)
                    continue
                try:
                    sent = await loop.sendfile(transport, _Descriptor(part.fd), part.position, part.size,
                                               fallback=False)
                except RuntimeError:  # includes SendfileNotAvailableError
                    if transport.is_closing():
                        return False
                    sent = -1
                if sent == -1:
                    self.regions_copied += 1
                    writer.write(part.read())
                    await writer.drain()
                elif sent != part.size:
                    log.warning("closing connection from %s: a file region shrank during the send "
                                "(%d of %d bytes; truncated meanwhile)", peer, sent, part.size)
                    return False
                else:
                    self.regions_sent += 1
            await writer.drain()
            return True
        except ConnectionError:
            return False
        finally:
            frame.close()

    def _bad(self, peer, error: Exception) -> None:
        self.bad_requests += 1
        level = logging.WARNING if self.bad_requests <= 20 or self.bad_requests % 1000 == 0 else logging.DEBUG
        log.log(level, "closing connection from %s: %s (%d bad requests so far)", peer, error, self.bad_requests)
