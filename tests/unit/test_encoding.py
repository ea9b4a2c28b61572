"""praha.encoding: the one home of Kafka's varints and batch compression codecs, checked
against kafka-python's independent encoder and by round trips through every codec."""
from __future__ import annotations

import pytest
from kafka.record.util import decode_varint, encode_varint

from praha.encoding import compression, varint
from praha.errors import ErrorCode

EDGES = [0, 1, -1, 63, -64, 64, -65, 127, 128, 300, -300, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]


@pytest.mark.parametrize("n", EDGES)
def test_zigzag_varints_match_kafka_python(n):
    theirs = bytearray()
    encode_varint(n, theirs.append)
    assert varint.write_varint(n) == bytes(theirs)
    out = bytearray(b"x")
    varint.append_varint(out, n)
    assert out == b"x" + theirs
    assert varint.read_varint(theirs, 0) == (n, len(theirs))
    assert varint.unzigzag(varint.read_uvarlong(theirs, 0)[0]) == decode_varint(theirs, 0)[0] == n


@pytest.mark.parametrize("n", [0, 1, 127, 128, 16383, 16384, 2**32 - 1])
def test_unsigned_varints_round_trip(n):
    b = varint.write_uvarint(n)
    assert varint.read_uvarint(b + b"tail", 0) == (n, len(b))
    out = bytearray()
    varint.append_uvarint(out, n)
    assert bytes(out) == b


def test_bad_varints_are_corrupt_messages():
    with pytest.raises(varint.MalformedVarintError) as e:
        varint.read_uvarint(b"\x80\x80", 0)  # runs off the end
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(varint.MalformedVarintError):
        varint.read_uvarint(b"\xff" * 6, 0)  # longer than an int32's 5 bytes
    with pytest.raises(varint.MalformedVarintError):
        varint.read_uvarint(b"\x05\x80", 1, end=2)  # stops at `end`, not the buffer's end
    with pytest.raises(ValueError, match="does not fit"):
        varint.write_uvarint(2**32)
    with pytest.raises(varint.MalformedVarintError):
        varint.skip_tagged_fields(b"\x01\x00\x05ab", 0)  # a tagged field of 5 bytes with 2 there
    assert varint.skip_tagged_fields(b"\x01\x00\x02abZ", 0) == 5


PLAIN = b"".join(b"record %d with a body that compresses; " % i for i in range(3000))


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4,
                                   compression.ZSTD])
def test_every_codec_round_trips(codec):
    if not compression.codec_available(codec):
        pytest.skip(f"{compression.CODEC_NAMES[codec]} is not in this pyarrow")
    packed = compression.compress(codec, PLAIN)
    if codec != compression.NONE:
        assert len(packed) < len(PLAIN) // 4
    assert compression.decompress(codec, memoryview(packed)) == PLAIN


def test_snappy_keeps_the_xerial_framing_java_producers_use():
    if not compression.codec_available(compression.SNAPPY):
        pytest.skip("snappy is not in this pyarrow")
    like = b"\x82SNAPPY\x00" + bytes(8)
    framed = compression.compress(compression.SNAPPY, PLAIN, like=like)
    assert framed.startswith(b"\x82SNAPPY\x00")
    assert len(PLAIN) > 32 * 1024  # so it holds more than one block
    assert compression.decompress(compression.SNAPPY, framed) == PLAIN
    assert compression.decompress(compression.SNAPPY, compression.compress(compression.SNAPPY, PLAIN)) == PLAIN


def test_an_unknown_codec_is_refused_as_corrupt():
    assert not compression.codec_available(7)
    with pytest.raises(compression.CodecUnavailableError) as e:
        compression.decompress(7, b"abc")
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
