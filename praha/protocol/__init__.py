"""The Kafka wire protocol as praha speaks it.

`messages/` holds praha's definition of every message and the codecs generated from them,
`controller_apis` names the controller-to-broker versions praha speaks, `registry` maps api
keys to message classes, `framing` turns frames into requests and responses into frames for
a server, and `client` is a blocking connection for the controller and tools.
"""
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
