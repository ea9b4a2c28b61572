"""A small blocking Kafka-protocol client: one socket, one request in flight.

Used by the controller's channel manager (one sender thread per broker, as in Kafka's
RequestSendThread) and by CLI tools. Blocking keeps it obvious: `send` writes one frame
and reads exactly one response frame. Any failure (refused, reset, timeout, a frame that
does not decode or answers another request) closes the socket and raises a
`BrokerConnectionError`; the next `send` reconnects. Closing on timeout matters: a late
answer would otherwise be read as the answer to the next request.
"""
from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Any, TypeVar

from praha.errors import ErrorCode
from praha.protocol.api_keys import ApiKey
from praha.protocol.client_security import PLAINTEXT, ClientSecurity, SaslAuthenticationError, sasl_tokens
from praha.protocol.errors import BrokerConnectionError, BrokerTimeoutError, InvalidResponseError
from praha.protocol.framing import MAX_REQUEST_BYTES, decode_response, encode_request
from praha.protocol.messages.gen.metadata import ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest
from praha.protocol.messages.runtime import WireMessage
from praha.protocol.registry import APIS

_Message = TypeVar("_Message", bound=WireMessage)

DEFAULT_TIMEOUT = 30.0
#: Responses (Fetch) can be as large as requests; the same cap guards the allocation.
MAX_RESPONSE_BYTES = MAX_REQUEST_BYTES
_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")


class BrokerConnection:
    """A blocking connection to one broker. Thread-safe, but serialises requests."""

    def __init__(self, host: str, port: int, timeout: float = DEFAULT_TIMEOUT,
                 client_id: str = "praha", max_response_bytes: int = MAX_RESPONSE_BYTES,
                 security: ClientSecurity = PLAINTEXT):
        self.security = security
        self.host = host
        self.port = port
        self.timeout = timeout
        self.client_id = client_id
        self.max_response_bytes = max_response_bytes
        self._sock: socket.socket | None = None
        self._next_correlation_id = 0
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port}, connected={self.connected})"

    def __enter__(self) -> BrokerConnection:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def connect(self) -> None:
        """Open the socket if it is not open; raises BrokerConnectionError/BrokerTimeoutError."""
        with self._lock:
            if self._sock is not None:
                return
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            except TimeoutError as e:
                raise BrokerTimeoutError(f"connect to {self.host}:{self.port} timed out") from e
            except OSError as e:
                raise BrokerConnectionError(f"cannot connect to {self.host}:{self.port}: {e}") from e
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            security = self.security
            if security.ssl_context is not None:
                try:
                    sock = security.ssl_context.wrap_socket(sock, server_hostname=self.host)
                except OSError as e:
                    sock.close()
                    raise BrokerConnectionError(f"TLS handshake with {self.host}:{self.port} failed: {e}") from e
            self._sock = sock
            if security.sasl_mechanism:
                try:
                    self._authenticate()
                except BaseException:
                    self.close()
                    raise

    def _authenticate(self) -> None:
        """SaslHandshake v1, then SaslAuthenticate until the mechanism's exchange ends."""
        mechanism = self.security.sasl_mechanism
        handshake = self.send(SaslHandshakeRequest(mechanism=mechanism), 1)
        if handshake.error_code != ErrorCode.NONE:
            raise SaslAuthenticationError(f"{self.host}:{self.port} refused SASL mechanism {mechanism} "
                                          f"(error {handshake.error_code}; enabled: {handshake.mechanisms})",
                                          code=_known_code(handshake.error_code))
        tokens = sasl_tokens(self.security)
        token = tokens(None)
        while token is not None:
            answer = self.send(SaslAuthenticateRequest(auth_bytes=token), 1)
            if answer.error_code != ErrorCode.NONE:
                raise SaslAuthenticationError(f"{self.host}:{self.port}: {answer.error_message}",
                                              code=_known_code(answer.error_code))
            token = tokens(bytes(answer.auth_bytes or b""))

    def close(self) -> None:
        with self._lock:
            sock, self._sock = self._sock, None
            if sock is not None:
                try:
                    sock.close()
                except OSError:
                    pass

    def send(self, request: WireMessage, api_version: int, timeout: float | None = None) -> Any:
        """Send `request` at `api_version` and return the decoded response.

        Connects first if needed. Returns None for requests that get no answer (Produce
        with acks=0). `timeout` (default: the connection's) bounds the whole exchange."""
        spec = APIS.get(request.API_KEY)
        if spec is None:
            raise BrokerConnectionError(f"api key {request.API_KEY} is not in the registry")
        with self._lock:
            self.connect()
            correlation_id = self._take_correlation_id()
            frame = encode_request(request, api_version, correlation_id, self.client_id)
            deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
            try:
                self._send_all(frame, deadline)
                if not request.expect_response():
                    return None
                data = self._read_frame(deadline)
                return self._decode(spec.response, data, api_version, correlation_id)
            except BaseException:
                self.close()
                raise

    # -- internals -----------------------------------------------------------------------

    def _take_correlation_id(self) -> int:
        cid = self._next_correlation_id
        self._next_correlation_id = (cid + 1) & 0x7FFFFFFF
        return cid

    def _socket(self, deadline: float) -> socket.socket:
        sock = self._sock
        if sock is None:
            raise BrokerConnectionError(f"connection to {self.host}:{self.port} is closed")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrokerTimeoutError(f"request to {self.host}:{self.port} timed out")
        sock.settimeout(remaining)
        return sock

    def _send_all(self, frame: bytes, deadline: float) -> None:
        view = memoryview(frame)
        while view:
            try:
                sent = self._socket(deadline).send(view)
            except TimeoutError as e:
                raise BrokerTimeoutError(f"send to {self.host}:{self.port} timed out") from e
            except OSError as e:
                raise BrokerConnectionError(f"send to {self.host}:{self.port} failed: {e}") from e
            view = view[sent:]

    def _recv_exact(self, n: int, deadline: float) -> bytearray:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            try:
                k = self._socket(deadline).recv_into(view[got:])
            except TimeoutError as e:
                raise BrokerTimeoutError(f"no response from {self.host}:{self.port} in time") from e
            except OSError as e:
                raise BrokerConnectionError(f"read from {self.host}:{self.port} failed: {e}") from e
            if k == 0:
                raise BrokerConnectionError(f"{self.host}:{self.port} closed the connection")
            got += k
        return buf

    def _read_frame(self, deadline: float) -> bytearray:
        (size,) = _SIZE.unpack(self._recv_exact(4, deadline))
        if not 4 <= size <= self.max_response_bytes:
            raise InvalidResponseError(f"bad response frame size {size} from {self.host}:{self.port}")
        return self._recv_exact(size, deadline)

    def _decode(self, response_cls: type[_Message], data: bytearray, api_version: int, correlation_id: int
                ) -> _Message:
        (got,) = _CORRELATION.unpack_from(data, 0)
        if got != correlation_id:
            raise InvalidResponseError(f"response correlation id {got}, expected {correlation_id}")
        try:
            return decode_response(response_cls, data, api_version)
        except Exception as e:
            raise InvalidResponseError(
                f"malformed {response_cls.__name__} v{api_version} from {self.host}:{self.port}: {e!r}") from e


def api_versions(host: str, port: int, timeout: float = 5.0, client_id: str = "praha",
                 security: ClientSecurity = PLAINTEXT) -> dict[int, tuple[int, int]]:
    """The broker's {api_key: (min, max)}, asking at ApiVersions v3 and falling back (as
    clients do) to the highest version the broker names if it answers UNSUPPORTED_VERSION."""
    version = 3
    with BrokerConnection(host, port, timeout=timeout, client_id=client_id, security=security) as conn:
        for _ in range(2):
            request = ApiVersionsRequest(client_software_name="praha", client_software_version="0.1.0")
            response = conn.send(request, version)
            ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
            if response.error_code == ErrorCode.UNSUPPORTED_VERSION and ApiKey.API_VERSIONS in ranges:
                version = min(version, ranges[ApiKey.API_VERSIONS][1])
                continue
            if response.error_code != ErrorCode.NONE:
                raise BrokerConnectionError(f"ApiVersions failed with error {response.error_code}",
                                            code=_known_code(response.error_code))
            return ranges
    raise BrokerConnectionError(f"{host}:{port} rejected every ApiVersions version")


def _known_code(code: int) -> ErrorCode | None:
    try:
        return ErrorCode(code)
    except ValueError:
        return None


__all__ = ["BrokerConnection", "api_versions", "DEFAULT_TIMEOUT", "MAX_RESPONSE_BYTES"]
