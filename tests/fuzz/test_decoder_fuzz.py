"""The wire decoder against hostile frames, for every API key and version praha knows.

Structure-aware: hypothesis builds well-formed requests of each (api key, version) from
the schemas, so mutations land deep inside real structures (array counts, string
lengths, tagged fields, record bytes). What may come out of `decode_request` is a
decoded request or an `InvalidRequestError` — never another exception, never a large
allocation (tracemalloc), never more than a moment of CPU.
"""
from __future__ import annotations

import struct
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_strategies import every_api_version, request_strategy

from praha.errors import InvalidRequestError
from praha.protocol.errors import UnknownApiKeyError, UnsupportedVersionError
from praha.protocol.framing import MAX_REQUEST_BYTES, decode_request, encode_request, parse_frame_size
from praha.protocol.produce import ProduceRequestView, produce_fields
from praha.protocol.registry import APIS
from praha.testing.fuzz import examples

PAIRS = every_api_version()
FUZZ = settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.data_too_large])


MAX_DECODE_S = 0.5
MAX_DECODE_BYTES = 4 << 20


@st.composite
def valid_frames(draw) -> tuple[int, int, bytes]:
    api_key, version = draw(st.sampled_from(PAIRS))
    request = draw(request_strategy(api_key, version))
    frame = encode_request(request, version, draw(st.integers(0, 2**31 - 1)), draw(st.none() | st.text(max_size=8)))
    return api_key, version, frame[4:]


def decode_safely(body: bytes, supported=None):
    """decode_request under a time and memory budget; only typed errors may escape."""
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        return decode_request(body, supported)
    except InvalidRequestError:
        return None
    finally:
        elapsed = time.monotonic() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert elapsed < MAX_DECODE_S, f"decoding {len(body)} bytes took {elapsed:.2f}s"
        assert peak < MAX_DECODE_BYTES, f"decoding {len(body)} bytes allocated {peak} bytes"


def test_the_fuzzer_covers_every_api_and_version():
    keys = {k for k, _ in PAIRS}
    assert keys == set(APIS)
    assert len(PAIRS) == sum(s.max_version - s.min_version + 1 for s in APIS.values())


@FUZZ
@given(valid_frames())
def test_every_api_and_version_round_trips(frame):
    api_key, version, body = frame
    decoded = decode_request(body)
    assert (decoded.api_key, decoded.api_version) == (api_key, version)
    if isinstance(decoded.request, ProduceRequestView):  # parsed by hand: compare with the generated decode
        theirs = APIS[api_key].request.decode_from(body, version, decoded.header.size)[0]
        assert produce_fields(decoded.request) == produce_fields(theirs)
        return
    again = encode_request(decoded.request, version, decoded.header.correlation_id, decoded.header.client_id)
    assert again[4:] == body or decode_request(again[4:]).request == decoded.request


MUTATION = st.tuples(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "int32", "int16", "varint"]),
                     st.integers(0, 10_000), st.integers(0, 255),
                     st.sampled_from([-1, -2, -(2**31), 2**31 - 1, 2**30, 0x10000, 65535, -32768]))


def mutate(body: bytes, mutations) -> bytes:
    data = bytearray(body)
    for op, where, value, count in mutations:
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
        elif op == "int32" and i + 4 <= len(data):  # a count or length turned negative or huge
            data[i:i + 4] = struct.pack(">i", count if -(2**31) <= count < 2**31 else -1)
        elif op == "int16" and i + 2 <= len(data):
            data[i:i + 2] = struct.pack(">h", max(-32768, min(32767, count)))
        elif op == "varint":  # a compact length of up to 2^35
            data[i:i] = b"\xff\xff\xff\xff\x0f"
    return bytes(data)


@FUZZ
@given(valid_frames(), st.lists(MUTATION, min_size=1, max_size=5))
def test_mutated_frames_give_a_request_or_a_typed_error(frame, mutations):
    _, _, body = frame
    decode_safely(mutate(body, mutations))


@FUZZ
@given(valid_frames(), st.data())
def test_truncated_frames_are_refused(frame, data):
    _, _, body = frame
    cut = data.draw(st.integers(0, max(0, len(body) - 1)))
    decode_safely(body[:cut])


@FUZZ
@given(st.integers(-(2**15), 2**15 - 1), st.integers(-(2**15), 2**15 - 1), st.binary(max_size=200))
def test_any_header_with_random_body(api_key, version, rest):
    body = struct.pack(">hhih", api_key, version, 7, 1) + b"x" + rest
    decode_safely(body)
    decode_safely(body, {18: (0, 4), 3: (0, 12)})


@pytest.mark.parametrize("api_key", [-1, 38, 57, 58, 85, 999, 32767])  # keys praha does not define
def test_unknown_api_keys(api_key):
    with pytest.raises(UnknownApiKeyError):
        decode_request(struct.pack(">hhih", api_key, 0, 1, 0))


@pytest.mark.parametrize("api_key", sorted(APIS))
def test_versions_outside_the_schema_are_unsupported(api_key):
    spec = APIS[api_key]
    for version in (spec.min_version - 1, spec.max_version + 1, -1, 32767):
        if spec.min_version <= version <= spec.max_version:
            continue
        with pytest.raises(UnsupportedVersionError):
            decode_request(struct.pack(">hhih", api_key, version, 1, 0))


@pytest.mark.parametrize("count", [-2, -(2**31), 2**31 - 1, 2**24])
def test_huge_or_negative_array_counts_allocate_nothing(count):
    """Metadata v4 with a topics count of `count` and no topics behind it: refused, or (a
    negative count of a nullable array, as Java reads it) an absent list — nothing allocated."""
    body = struct.pack(">hhih", 3, 4, 1, 0) + struct.pack(">i", count) + b"\x01"
    decoded = decode_safely(body)
    assert decoded is None or (count < 0 and not decoded.request.topics)


@pytest.mark.parametrize("length", [-2, -(2**15), 2**15 - 1])
def test_negative_or_overlong_string_lengths(length):
    """Metadata v4, one topic whose name length is `length`: refused, or (negative: kafka-python
    reads any negative string length as null, even for a non-nullable field, where Java
    refuses) a null name, which the handlers must then tolerate (tests/fuzz/test_broker_fuzz.py)."""
    body = struct.pack(">hhih", 3, 4, 1, 0) + struct.pack(">ih", 1, length) + b"ab\x01"
    decoded = decode_safely(body)
    assert decoded is None or (length < 0 and decoded.request.topics[0].name is None)


def test_huge_compact_lengths_in_flexible_versions():
    """Metadata v12 (flexible): a compact array count and string length of 2^32."""
    header = struct.pack(">hhih", 3, 12, 1, 0) + b"\x00"
    for tail in (b"\xff\xff\xff\xff\x0f", b"\x02" + b"\x00" * 16 + b"\xff\xff\xff\xff\x0f", b"\xff" * 100_000):
        assert decode_safely(header + tail) is None


@pytest.mark.parametrize("size", [-1, -(2**31), MAX_REQUEST_BYTES + 1, 2**31 - 1])
def test_frame_sizes_are_checked_before_anything_is_read(size):
    with pytest.raises(InvalidRequestError):
        parse_frame_size(struct.pack(">i", size))


def test_a_large_frame_of_varint_bytes_decodes_in_linear_time():
    """1 MB of 0xff where a flexible request expects varints: refused quickly."""
    body = struct.pack(">hhih", 3, 12, 1, 0) + b"\x00" + b"\xff" * (1 << 20)
    t0 = time.monotonic()
    with pytest.raises(InvalidRequestError):
        decode_request(body)
    assert time.monotonic() - t0 < 1.0
