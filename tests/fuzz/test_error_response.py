"""Every API the broker serves, at every version it serves, has an answer for a request
that failed as a whole (`praha.protocol.error_response`): it encodes, a client decodes
it, and the error is where the client looks (top level, or every entry that mirrors one
of the request's)."""
from __future__ import annotations

from typing import Any

import pytest

from praha.broker.handlers.routes import SERVED_VERSIONS
from praha.errors import ErrorCode
from praha.protocol.error_response import error_response, fields_of
from praha.protocol.framing import decode_response, encode_response
from praha.protocol.header import RequestHeader
from praha.protocol.registry import response_class
from praha.testing.fake_broker import sample_request

SERVED = [(k, v) for k, (lo, hi) in sorted(SERVED_VERSIONS.items()) for v in range(lo, hi + 1)]
def error_codes(obj: Any, version: int) -> list[int]:
    """Every error_code in a decoded response at `version`, depth first."""
    out = []
    for f in fields_of(obj):
        if version not in f.versions:
            continue
        value = getattr(obj, f.name, None)
        if f.name.endswith("error_code"):
            out.append(value)
        elif f.is_struct and f.is_array and value:
            for item in value:
                out.extend(error_codes(item, version))
    return out


@pytest.mark.parametrize(("api_key", "version"), SERVED)
def test_every_served_api_answers_a_failed_request(api_key, version):
    request = sample_request(api_key, version)
    response = error_response(api_key, version, request, ErrorCode.UNKNOWN_SERVER_ERROR, "boom")
    frame = bytes(encode_response(RequestHeader(api_key, version, 7, "c"), response, version))
    cls = response_class(api_key)
    answer = decode_response(cls, frame[4:], version)
    codes = error_codes(answer, version)
    assert codes, answer
    assert set(codes) == {ErrorCode.UNKNOWN_SERVER_ERROR}, answer
