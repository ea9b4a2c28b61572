"""The Kafka wire protocol as praha speaks it.

`controller_apis` adds the controller-to-broker messages kafka-python lacks, `registry`
maps api keys to message classes, `framing` turns frames into requests and responses into
frames for a server, and `client` is a blocking connection for the controller and tools.

Importing the package first hardens kafka-python's generated decoders (`_hardening`).
"""
from praha.protocol import _hardening  # noqa: F401  (must run before any decoder is built)
from praha.protocol.client import BrokerConnection, api_versions
from praha.protocol.errors import (
    BrokerConnectionError,
    BrokerTimeoutError,
    InvalidResponseError,
    MalformedRequestError,
    UnknownApiKeyError,
    UnsupportedRequestError,
    UnsupportedVersionError,
)
from praha.protocol.framing import (
    MAX_REQUEST_BYTES,
    DecodedRequest,
    RequestHeader,
    decode_request,
    encode_request,
    encode_response,
    parse_frame_size,
    parse_request_header,
)
from praha.protocol.registry import (
    APIS,
    api_versions_response,
    check_supported,
    request_class,
    response_class,
    unsupported_version_response,
)

__all__ = [
    "BrokerConnection", "api_versions",
    "BrokerConnectionError", "BrokerTimeoutError", "InvalidResponseError",
    "MalformedRequestError", "UnknownApiKeyError", "UnsupportedRequestError",
    "UnsupportedVersionError",
    "MAX_REQUEST_BYTES", "DecodedRequest", "RequestHeader", "decode_request",
    "encode_request", "encode_response", "parse_frame_size", "parse_request_header",
    "APIS", "api_versions_response", "check_supported", "request_class", "response_class",
    "unsupported_version_response",
]
