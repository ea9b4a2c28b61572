"""decode_request on random and mutated frames: only the typed errors may come out."""
from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_samples import valid_bodies

from praha.errors import InvalidRequestError
from praha.protocol.framing import DecodedRequest, decode_request
from praha.protocol.registry import APIS
from praha.testing.fuzz import examples

BODIES = valid_bodies()
SUPPORTED = {k: (s.min_version, s.max_version) for k, s in APIS.items() if k not in (1, 46)}
FUZZ = settings(max_examples=examples(300), deadline=2000, suppress_health_check=[HealthCheck.too_slow])


def check(body: bytes, supported=None) -> None:
    try:
        out = decode_request(body, supported)
    except InvalidRequestError:
        return
    assert isinstance(out, DecodedRequest)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(body):
    check(body)


@FUZZ
@given(st.sampled_from(sorted(APIS)), st.integers(-2, 20), st.binary(max_size=300))
def test_valid_header_random_body(api_key, version, rest):
    body = struct.pack(">hhih", api_key, version, 1, 1) + b"c" + rest
    check(body)
    check(body, SUPPORTED)


mutation = st.tuples(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]),
                     st.integers(0, 10_000), st.integers(0, 255))


@FUZZ
@given(st.sampled_from(BODIES), st.lists(mutation, min_size=1, max_size=6))
def test_mutated_valid_frames(body, mutations):
    data = bytearray(body)
    for op, where, value in mutations:
        i = where % (len(data) + 1)
        if op == "flip" and i < len(data):
            data[i] ^= 1 << (value % 8)
        elif op == "set" and i < len(data):
            data[i] = value
        elif op == "insert":
            data[i:i] = bytes([value])
        elif op == "delete" and i < len(data):
            del data[i]
        elif op == "truncate":
            del data[i:]
    check(bytes(data))
    check(bytes(data), SUPPORTED)


@FUZZ
@given(st.sampled_from(BODIES), st.integers(8, 64), st.binary(min_size=1, max_size=64))
def test_valid_header_garbage_tail(body, keep, junk):
    check(body[:keep] + junk)
