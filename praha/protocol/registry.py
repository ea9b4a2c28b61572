"""Which Kafka APIs praha can speak, and the classes that encode them.

One table, api key → request/response class, for every API a praha broker or controller
may serve. Whether a broker actually serves an API, and at which versions, is the
broker's call: it passes a `{api_key: (min, max)}` table to `decode_request` and to
`api_versions_response`, so what it advertises and what it accepts never disagree.

The classes are praha's own, generated from its message definitions
(`praha/protocol/messages/`); version ranges are those of the definitions.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from praha.errors import ConfigError, ErrorCode
from praha.protocol.api_keys import ApiKey
from praha.protocol.messages.gen import MESSAGES
from praha.protocol.messages.gen.metadata import ApiVersionsResponse
from praha.protocol.messages.runtime import WireMessage

#: replica ids of Fetch/ListOffsets that are not brokers: a consumer (reads below the high
#: watermark, from the leader) and Kafka's debugging id (any replica's own log, for tools)
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API: its classes and the versions its definition describes."""

    api_key: int
    name: str
    request: type[WireMessage]
    response: type[WireMessage]
    min_version: int
    max_version: int

    def is_flexible(self, version: int) -> bool:
        return self.request.is_flexible(version)


def _spec(request: type[WireMessage], response: type[WireMessage]) -> ApiSpec:
    name = request.__name__.removesuffix("Request")
    return ApiSpec(request.API_KEY, name, request, response,
                   max(request.MIN_VERSION, response.MIN_VERSION), min(request.MAX_VERSION, response.MAX_VERSION))


#: api key → ApiSpec for every API praha may serve (or send: the controller's).
APIS: dict[int, ApiSpec] = {key: _spec(req, resp) for key, (req, resp) in sorted(MESSAGES.items())}


def request_class(api_key: int) -> type[WireMessage]:
    return APIS[api_key].request


def response_class(api_key: int) -> type[WireMessage]:
    return APIS[api_key].response


def schema_versions() -> dict[int, tuple[int, int]]:
    """Every registered API at every version its schema describes."""
    return {k: (s.min_version, s.max_version) for k, s in APIS.items()}


def header_version(api_key: int, api_version: int) -> int:
    """Request header version Kafka uses: 0 for ControlledShutdown v0, 2 if flexible, else 1.

    Unknown keys get 1: their correlation id sits at the same offset either way."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    spec = APIS.get(api_key)
    return 2 if spec is not None and spec.is_flexible(api_version) else 1


def check_supported(supported: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Validate a broker's version table against the schemas; a typo must fail at start-up."""
    out: dict[int, tuple[int, int]] = {}
    for key, (lo, hi) in supported.items():
        spec = APIS.get(key)
        if spec is None:
            raise ConfigError(f"api key {key} is not in praha's protocol registry")
        if not spec.min_version <= lo <= hi <= spec.max_version:
            raise ConfigError(f"{spec.name} versions {lo}-{hi} outside the schema's "
                              f"{spec.min_version}-{spec.max_version}")
        out[key] = (lo, hi)
    return out


def api_versions_response(supported: Mapping[int, tuple[int, int]],
                          error_code: int = ErrorCode.NONE,
                          throttle_time_ms: int = 0) -> ApiVersionsResponse:
    """The ApiVersions answer advertising exactly `supported` (checked by check_supported).

    The caller picks the encoding version (the request's, or 0 after UNSUPPORTED_VERSION)."""
    table = check_supported(supported)
    keys = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(table.items())]
    return ApiVersionsResponse(error_code=int(error_code), api_keys=keys,
                               throttle_time_ms=throttle_time_ms)


def unsupported_version_response(supported: Mapping[int, tuple[int, int]]) -> ApiVersionsResponse:
    """Kafka's answer to ApiVersions at a version it lacks (KIP-511): encode it at v0."""
    return api_versions_response(supported, error_code=ErrorCode.UNSUPPORTED_VERSION)


__all__ = [
    "ApiSpec", "APIS", "request_class", "response_class",
    "schema_versions", "header_version", "check_supported", "api_versions_response",
    "unsupported_version_response",
]
