"""Typed errors of the wire layer.

A server must tell three cases apart because Kafka answers them differently: a request it
cannot parse (close the connection), an API key it does not know (close the connection),
and a known API at a version it does not serve (ApiVersions: answer v0 with
UNSUPPORTED_VERSION; anything else: close). The errors raised after the header was read
carry it, so the server still knows the correlation id to answer with.

A client must tell a slow broker from a dead one only loosely: either way the connection
is closed and the caller reconnects, so both are `BrokerConnectionError`s.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from praha.errors import ErrorCode, InvalidRequestError, PrahaError

if TYPE_CHECKING:
    from praha.protocol.header import RequestHeader


class MalformedRequestError(InvalidRequestError):
    """The frame or its body does not parse; `header` is set if the header itself did."""

    def __init__(self, message: str, header: RequestHeader | None = None):
        super().__init__(message)
        self.header = header

    @property
    def correlation_id(self) -> int | None:
        return None if self.header is None else self.header.correlation_id


class UnsupportedRequestError(InvalidRequestError):
    """The header parsed, but this server does not serve that API key or version."""

    code = ErrorCode.UNSUPPORTED_VERSION

    def __init__(self, message: str, header: RequestHeader):
        super().__init__(message)
        self.header = header

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    @property
    def api_key(self) -> int:
        return self.header.api_key

    @property
    def api_version(self) -> int:
        return self.header.api_version


class UnknownApiKeyError(UnsupportedRequestError):
    """No API with this key is served; Kafka closes the connection."""

    code = ErrorCode.INVALID_REQUEST


class UnsupportedVersionError(UnsupportedRequestError):
    """A known API at a version outside the served range.

    For ApiVersions the server answers with an ApiVersions v0 response carrying
    UNSUPPORTED_VERSION and its ranges (see `registry.unsupported_version_response`)."""

    @property
    def is_api_versions(self) -> bool:
        return self.header.api_key == 18


class BrokerConnectionError(PrahaError):
    """A connection to a broker could not be made, broke, or returned nonsense.

    The connection is closed when this is raised; the caller reconnects."""

    code = ErrorCode.NETWORK_EXCEPTION


class BrokerTimeoutError(BrokerConnectionError):
    """No (complete) response within the timeout; the connection was closed, because a
    late response would otherwise be read as the answer to the next request."""

    code = ErrorCode.REQUEST_TIMED_OUT


class InvalidResponseError(BrokerConnectionError):
    """The broker answered with a frame that does not decode or does not match."""
