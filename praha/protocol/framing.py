"""Request framing for a Kafka-protocol server (and the header half of a client).

A request on the wire is `int32 size | header | body`. The server reads the 4-byte size,
checks it before allocating anything (a hostile or confused peer can claim 2 GiB), reads
that many bytes, and hands them to `decode_request`. Every way a frame can be wrong ends
in a `praha.errors.InvalidRequestError` subclass, never a stray struct/Index/Unicode
error, so the network loop needs exactly one `except` to stay up.

Header versions follow Kafka: v0 (no client id) only for ControlledShutdown v0, v2
(tagged fields after the client id) when the API version is flexible, v1 otherwise. The
client id keeps its old int16 length prefix even in v2. Responses use header v1 when
flexible, except ApiVersions, which always answers with header v0 so that a client that
asked at a version the server lacks can still read the answer.
"""
from __future__ import annotations

import struct
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar, overload

from praha.encoding.varint import MalformedVarintError, read_uvarint, skip_tagged_fields
from praha.errors import ErrorCode, InvalidRequestError
from praha.protocol.api_keys import ApiKey
from praha.protocol.errors import (
    MalformedRequestError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from praha.protocol.header import RequestHeader
from praha.protocol.messages.runtime import WireFormatError, WireMessage
from praha.protocol.produce import MAX_VERSION as PRODUCE_MAX
from praha.protocol.produce import MIN_VERSION as PRODUCE_MIN
from praha.protocol.produce import ProduceRequestView, decode_produce
from praha.protocol.registry import APIS, ApiSpec, header_version

#: Kafka's `socket.request.max.bytes` default: the largest request frame accepted.
MAX_REQUEST_BYTES = 100 * 1024 * 1024
FRAME_SIZE_BYTES = 4
#: Kafka's KafkaPrincipal.ANONYMOUS name: every request's principal without authentication
ANONYMOUS_PRINCIPAL = "ANONYMOUS"


_SIZE = struct.Struct(">i")
_FIXED_HEADER = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_FIXED_RESPONSE_HEADER = struct.Struct(">ii")  # size, correlation id
_FLEXIBLE_RESPONSE_HEADER = struct.Struct(">iib")  # size, correlation id, no tagged fields
# objects in kafka-python's manner (the Fetch answer, controller_wire's) keep version and
# header on themselves while encoding: the lock keeps threads that encode one apart
_ENCODE_LOCK = threading.Lock()

Bytes = bytes | bytearray | memoryview
#: what a request frame decodes to: a generated message, or Produce's view of the frame
RequestBody = WireMessage | ProduceRequestView
_Body = TypeVar("_Body", bound=RequestBody)
_Message = TypeVar("_Message", bound=WireMessage)


class FrameInPieces(Protocol):
    """A response frame that is not one buffer (the socket server's `SegmentedFrame`: bytes
    and file regions for sendfile): its size, its bytes when they must be copied, and the
    regions it owns released by `close`."""

    def __len__(self) -> int: ...

    def __bytes__(self) -> bytes: ...

    def close(self) -> None: ...


#: a framed response, ready to send: one buffer, or pieces
Frame = bytes | bytearray | FrameInPieces


class SelfFramingResponse(Protocol):
    """A response that frames itself (the broker's Fetch answer, whose records may stay in
    files): what `encode_response` uses of it."""

    _header: None
    API_VERSION: int

    def with_header(self, correlation_id: int = 0) -> None: ...

    def encode(self, header: bool = True, framed: bool = True) -> bytes | FrameInPieces: ...


#: what a handler answers with and `encode_response` frames
Response = WireMessage | SelfFramingResponse


@dataclass(frozen=True, slots=True)
class Session:
    """Who sends a connection's requests, and over which listener (Kafka's RequestContext):
    fixed once the connection is authenticated."""

    principal: str = f"User:{ANONYMOUS_PRINCIPAL}"
    listener: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    #: the client's address, as Kafka writes it ("/127.0.0.1")
    client_host: str = ""


ANONYMOUS = Session()


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    """A request ready for a handler: its header and the generated message object
    (for Produce a `ProduceRequestView` with the same field names)."""

    header: RequestHeader
    request: RequestBody
    #: the client's address as the socket server saw it (a group member's `client_host`)
    client_host: str = ""
    session: Session = ANONYMOUS
    #: the frame's size without its size prefix (what a produce counts against its quota)
    size: int = 0

    @property
    def principal(self) -> str:
        """The session's user name (`User:alice` → "alice"; ANONYMOUS without
        authentication): what user quotas are keyed by."""
        return self.session.principal.partition(":")[2] or ANONYMOUS_PRINCIPAL

    @property
    def api_key(self) -> int:
        return self.header.api_key

    @property
    def api_version(self) -> int:
        return self.header.api_version

    def body(self, cls: type[_Body]) -> _Body:
        """The request as the handler's own message class (the route table sends each API
        to its handler, so anything else is a routing slip, not bad input)."""
        r = self.request
        if not isinstance(r, cls):
            raise TypeError(f"{type(r).__name__} handed to a {cls.__name__} handler")
        return r

    @property
    def expects_response(self) -> bool:
        """False only for requests answered with silence (Produce with acks=0)."""
        return bool(self.request.expect_response())


def parse_frame_size(prefix: Bytes, max_bytes: int = MAX_REQUEST_BYTES) -> int:
    """The body size announced by a 4-byte frame prefix, checked before any allocation."""
    if len(prefix) != FRAME_SIZE_BYTES:
        raise InvalidRequestError(f"frame prefix must be 4 bytes, got {len(prefix)}")
    size: int = _SIZE.unpack(prefix)[0]
    if size < 0:
        raise InvalidRequestError(f"invalid negative frame size {size}")
    if size > max_bytes:
        raise InvalidRequestError(f"frame size {size} exceeds the maximum of {max_bytes} bytes")
    return size


def parse_request_header(body: Bytes) -> RequestHeader:
    """Parse the header at the start of a frame body (for any known or unknown API key).

    Raises MalformedRequestError; once the first 8 bytes are there the error carries a
    header with the correlation id, so the caller can still log or answer it."""
    api_key, api_version, correlation_id = _fixed_header(body)
    hv = header_version(api_key, api_version)
    partial = RequestHeader(api_key, api_version, correlation_id, "", hv, _FIXED_HEADER.size)
    try:
        return _rest_of_header(body, partial)
    except MalformedRequestError:
        raise
    except Exception as e:  # any decoding slip is a bad request, never a crash
        raise MalformedRequestError(f"bad request header: {e!r}", partial) from e


def decode_request(body: Bytes, supported: Mapping[int, tuple[int, int]] | None = None,
                   session: Session = ANONYMOUS) -> DecodedRequest:
    """Decode one frame body (without the size prefix) into header + request object.

    `supported` is the server's {api_key: (min, max)}; without it every API in the
    registry is accepted at every version its schema knows. Raises UnknownApiKeyError,
    UnsupportedVersionError (both carry the header) or MalformedRequestError."""
    api_key, api_version, correlation_id = _fixed_header(body)
    spec = APIS.get(api_key)
    if spec is None or (supported is not None and api_key not in supported):
        raise UnknownApiKeyError(f"unknown or disabled api key {api_key}",
                                 _lenient_header(body, api_key, api_version, correlation_id))
    lo, hi = spec.min_version, spec.max_version
    if supported is not None:
        lo, hi = max(lo, supported[api_key][0]), min(hi, supported[api_key][1])
    if not lo <= api_version <= hi:
        raise UnsupportedVersionError(
            f"{spec.name} v{api_version} is not supported (supported: v{lo}-v{hi})",
            _lenient_header(body, api_key, api_version, correlation_id))
    header = parse_request_header(body)
    return DecodedRequest(header, _decode_body(spec, body, header), session.client_host, session, size=len(body))


@overload
def encode_response(header: RequestHeader, response: WireMessage, api_version: int) -> bytearray: ...
@overload
def encode_response(header: RequestHeader, response: SelfFramingResponse, api_version: int
                    ) -> bytes | FrameInPieces: ...
@overload
def encode_response(header: RequestHeader, response: Response, api_version: int) -> Frame: ...
def encode_response(header: RequestHeader, response: Response, api_version: int) -> Frame:
    """Frame a response for `header`'s request: size prefix, response header, body.

    A generated message gives a bytearray, ready for sendall; Fetch's own response
    (`protocol/fetch.py`) frames itself, possibly as a SegmentedFrame for sendfile. The
    same response object may be encoded again, even from several threads (a cached
    ApiVersions answer): encoding does not touch the object."""
    if not isinstance(response, WireMessage):
        with _ENCODE_LOCK:
            response._header = None
            response.API_VERSION = api_version
            response.with_header(correlation_id=header.correlation_id)
            return response.encode(header=True, framed=True)
    # response header v1 (tagged fields) when flexible; ApiVersions always answers with v0
    flexible = response.is_flexible(api_version) and header.api_key != ApiKey.API_VERSIONS
    packer = _FLEXIBLE_RESPONSE_HEADER if flexible else _FIXED_RESPONSE_HEADER
    out = bytearray(packer.size)
    response.encode_into(out, api_version)
    if flexible:
        packer.pack_into(out, 0, len(out) - 4, header.correlation_id, 0)
    else:
        packer.pack_into(out, 0, len(out) - 4, header.correlation_id)
    return out


def decode_response(response_cls: type[_Message], data: Bytes, api_version: int) -> _Message:
    """A response frame's body (after the size prefix): its header skipped, the message decoded."""
    pos = 4  # the correlation id, checked by the caller
    if response_cls.API_KEY == ApiKey.API_VERSIONS:
        # KIP-511: a server without this version answers UNSUPPORTED_VERSION at v0
        if len(data) >= pos + 2 and _INT16.unpack_from(data, pos)[0] == ErrorCode.UNSUPPORTED_VERSION:
            api_version = 0
    elif response_cls.is_flexible(api_version):
        pos = skip_tagged_fields(data, pos)
    return response_cls.decode_from(data, api_version, pos)[0]


def encode_request_header(api_key: int, api_version: int, correlation_id: int, client_id: str | None) -> bytes:
    """A request header in the version Kafka uses for this API version."""
    fixed = _FIXED_HEADER.pack(api_key, api_version, correlation_id)
    hv = header_version(api_key, api_version)
    if hv == 0:
        return fixed
    if client_id is None:
        cid = _INT16.pack(-1)
    else:
        raw = client_id.encode("utf-8")
        cid = _INT16.pack(len(raw)) + raw
    return fixed + cid + (b"\x00" if hv == 2 else b"")


def encode_request(request: WireMessage, api_version: int, correlation_id: int,
                   client_id: str | None = "praha") -> bytes:
    """A complete request frame (size, header, body); the request object is not touched,
    so one request object may be sent on several connections."""
    body = request.encode(api_version)
    header = encode_request_header(request.API_KEY, api_version, correlation_id, client_id)
    return b"".join((_SIZE.pack(len(header) + len(body)), header, body))


# -- internals ---------------------------------------------------------------------------

def _fixed_header(body: Bytes) -> tuple[int, int, int]:
    if len(body) < _FIXED_HEADER.size:
        raise MalformedRequestError(f"request of {len(body)} bytes is shorter than a header")
    return _FIXED_HEADER.unpack_from(body, 0)


def _rest_of_header(body: Bytes, partial: RequestHeader) -> RequestHeader:
    pos = partial.size
    if partial.header_version == 0:
        return partial
    client_id, pos = _read_client_id(body, pos, partial)
    if partial.header_version == 2:
        pos = _skip_tagged_fields(body, pos, partial)
    return RequestHeader(partial.api_key, partial.api_version, partial.correlation_id,
                         client_id, partial.header_version, pos)


def _lenient_header(body: Bytes, api_key: int, api_version: int, correlation_id: int) -> RequestHeader:
    """The header as far as it parses: enough to answer an unsupported request."""
    hv = header_version(api_key, api_version)
    partial = RequestHeader(api_key, api_version, correlation_id, "", hv, _FIXED_HEADER.size)
    try:
        return _rest_of_header(body, partial)
    except Exception:
        return partial


def _read_client_id(body: Bytes, pos: int, partial: RequestHeader) -> tuple[str, int]:
    if pos + 2 > len(body):
        raise MalformedRequestError("truncated client id", partial)
    (n,) = _INT16.unpack_from(body, pos)
    pos += 2
    if n == -1:  # Kafka reads a null client id as ""
        return "", pos
    if n < 0 or pos + n > len(body):
        raise MalformedRequestError(f"bad client id length {n}", partial)
    # Java decodes client ids leniently; so do we (invalid bytes become U+FFFD).
    return bytes(body[pos:pos + n]).decode("utf-8", errors="replace"), pos + n


def _read_uvarint(body: Bytes, pos: int, partial: RequestHeader) -> tuple[int, int]:
    try:
        return read_uvarint(body, pos)
    except MalformedVarintError as e:
        raise MalformedRequestError(str(e), partial) from None


def _skip_tagged_fields(body: Bytes, pos: int, partial: RequestHeader) -> int:
    try:
        return skip_tagged_fields(body, pos)
    except MalformedVarintError as e:
        raise MalformedRequestError(str(e), partial) from None


def _decode_body(spec: ApiSpec, body: Bytes, header: RequestHeader) -> RequestBody:
    """Decode with the generated decoder, which checks every length against the frame
    (Produce: `praha.protocol.produce`, which leaves the records where they are).
    Trailing bytes are tolerated, as Kafka does."""
    if header.api_key == ApiKey.PRODUCE and PRODUCE_MIN <= header.api_version <= PRODUCE_MAX:
        return decode_produce(body, header)  # records stay views of the frame
    version = header.api_version
    try:
        request, _ = spec.request.decode_from(memoryview(body), version, header.size)
    except WireFormatError as e:
        raise MalformedRequestError(f"malformed {spec.name} v{version} body: {e}", header) from e
    return request


__all__ = [
    "MAX_REQUEST_BYTES", "FRAME_SIZE_BYTES", "RequestHeader", "DecodedRequest",
    "parse_frame_size", "parse_request_header", "decode_request", "encode_response",
    "encode_request_header", "encode_request", "decode_response",
]
