"""The compression codecs of Kafka's record batches (attributes bits 0-2), one home for
the broker's log (validation, the cleaner) and every reader of batches (the Spark source).

gzip comes from the standard library; snappy (raw blocks, or the xerial framing Java
producers write), lz4 (frame format) and zstd from pyarrow, which praha depends on and
imports only when a batch needs it. A codec pyarrow lacks reports `codec_available`
False and raises `CodecUnavailableError` when used: the log then keeps such batches
whole and unread.
"""
from __future__ import annotations

import gzip
import struct
from types import ModuleType
from typing import Any

from praha.encoding.varint import Buffer, read_uvarlong
from praha.errors import CorruptLogError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_I32 = struct.Struct(">i")


class CodecUnavailableError(CorruptLogError):
    """The batch's codec is unknown or not available here; its records cannot be read."""


_pa: list[ModuleType | None] = []  # pyarrow once looked for (None: not installed)


def _pyarrow() -> ModuleType | None:
    if not _pa:
        try:
            import pyarrow
        except ImportError:  # pragma: no cover - pyarrow is a dependency
            _pa.append(None)
        else:
            _pa.append(pyarrow)
    return _pa[0]


def codec_available(codec: int) -> bool:
    if codec in (NONE, GZIP):
        return True
    pa = _pyarrow()
    if pa is None or codec not in CODEC_NAMES:
        return False
    return bool(pa.Codec.is_available(CODEC_NAMES[codec]))


def _require(codec: int) -> ModuleType:
    pa = _pyarrow()
    if pa is None or not codec_available(codec):
        raise CodecUnavailableError(f"compression codec {CODEC_NAMES.get(codec, codec)} not available")
    return pa


def decompress(codec: int, data: Buffer) -> bytes:
    """A batch's records section, decompressed."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return gzip.decompress(data)
    pa = _require(codec)
    if codec == SNAPPY:
        view = bytes(data)
        snappy = pa.Codec("snappy")
        if not view.startswith(_XERIAL_MAGIC):
            return _snappy_block(snappy, view)
        parts = []  # xerial framing: 16-byte header, then [int32 size][block]...
        pos = len(_XERIAL_HEADER)
        while pos + 4 <= len(view):
            (n,) = _I32.unpack_from(view, pos)
            parts.append(_snappy_block(snappy, view[pos + 4: pos + 4 + n]))
            pos += 4 + n
        return b"".join(parts)
    with pa.CompressedInputStream(pa.BufferReader(pa.py_buffer(data)), CODEC_NAMES[codec]) as stream:
        return bytes(stream.read())


def _snappy_block(snappy: Any, block: bytes) -> bytes:
    size, _ = read_uvarlong(block, 0)  # a raw snappy block starts with its decompressed length
    return bytes(snappy.decompress(block, decompressed_size=size, asbytes=True))


def compress(codec: int, data: bytes, like: Buffer | None = None) -> bytes:
    """`data` compressed with `codec`; for snappy, framed like `like` (the original payload)."""
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    pa = _require(codec)
    if codec == SNAPPY:
        snappy = pa.Codec("snappy")
        if like is not None and bytes(memoryview(like)[:len(_XERIAL_MAGIC)]) == _XERIAL_MAGIC:
            out = [_XERIAL_HEADER]
            for i in range(0, len(data), _XERIAL_BLOCK):
                block = snappy.compress(data[i:i + _XERIAL_BLOCK], asbytes=True)
                out.append(_I32.pack(len(block)))
                out.append(block)
            return b"".join(out)
        return bytes(snappy.compress(data, asbytes=True))
    return bytes(pa.Codec(CODEC_NAMES[codec]).compress(data, asbytes=True))
