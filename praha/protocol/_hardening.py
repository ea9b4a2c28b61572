"""Make kafka-python's generated decoders safe for input from untrusted peers.

kafka-python 3.0.12 compiles one decoder per message and version. Two spots in that
generated code cost time quadratic in the frame size, so one hostile 1 MB frame could
hold a broker thread for ~20 s, and a 100 MiB one for hours:

- unsigned varints are read without the 5-byte limit Kafka enforces, so a run of 0xFF
  bytes builds an ever-growing integer;
- every struct that carries tagged fields copies *the rest of the frame* into a BytesIO
  before reading its tags.

This module swaps the two code emitters for bounded, linear ones (same results for every
valid input). It runs when `praha.protocol` is imported, before any decoder is compiled;
decoders compiled earlier in the process are dropped so they are rebuilt safely.
"""
from __future__ import annotations

import gc
import io
from typing import Any

from kafka.protocol.schemas.fields import struct as _struct_mod
from kafka.protocol.schemas.fields.codecs import types as _types

from praha.protocol.varint import MalformedVarintError, read_uvarint

_MAX_VARINT_SHIFT = 28  # 5 bytes of 7 bits: the most an int32 varint may take


def _emit_bounded_uvarint(cls: Any, ctx: Any, var_name: str, indent: str) -> None:
    b = ctx.next_var("b")
    shift = ctx.next_var("sh")
    ctx.emit(indent, f"{var_name} = 0")
    ctx.emit(indent, f"{shift} = 0")
    ctx.emit(indent, "while True:")
    ctx.emit(indent, f"    {b} = data[pos]")
    ctx.emit(indent, "    pos += 1")
    ctx.emit(indent, f"    {var_name} |= ({b} & 0x7f) << {shift}")
    ctx.emit(indent, f"    if not ({b} & 0x80): break")
    ctx.emit(indent, f"    {shift} += 7")
    ctx.emit(indent, f"    if {shift} > {_MAX_VARINT_SHIFT}: raise ValueError('varint longer than 5 bytes')")


def _read_uvarint(data: Any, pos: int) -> tuple[int, int]:
    try:
        return read_uvarint(data, pos)
    except MalformedVarintError as e:
        raise ValueError(str(e)) from None


def decode_tagged_fields(tagged: Any, data: Any, pos: int, version: int) -> tuple[dict[str, Any], int]:
    """Read a tagged-field section at `pos`, copying only each field's own bytes."""
    count, pos = _read_uvarint(data, pos)
    out: dict[str, Any] = {}
    for _ in range(count):
        tag, pos = _read_uvarint(data, pos)
        size, pos = _read_uvarint(data, pos)
        end = pos + size
        if end > len(data):
            raise ValueError("tagged field runs past the end of the frame")
        chunk = bytes(data[pos:end])
        field = tagged._tags.get(tag)
        if field is None:
            out[f"_{tag}"] = chunk
        else:
            out[field.name] = field.decode(io.BytesIO(chunk), version=version, compact=True, tagged=None)
        pos = end
    return out, pos


def _emit_linear_tagged_decode(self: Any, ctx: Any, var_name: str, indent: str, version: int) -> None:
    tf_var = ctx.next_var("tf")
    ctx.globs[tf_var] = self.tagged_fields(version)
    ctx.globs["_praha_decode_tagged"] = decode_tagged_fields
    ctx.emit(indent, f"_tfd, pos = _praha_decode_tagged({tf_var}, data, pos, {version})")
    ctx.emit(indent, "if _tfd:")
    ctx.emit(indent, "    for _tk, _tv in _tfd.items():")
    ctx.emit(indent, '        if _tk.startswith("_"):')
    ctx.emit(indent, f"            if {var_name}.unknown_tags is None: {var_name}.unknown_tags = {{}}")
    ctx.emit(indent, f"            {var_name}.unknown_tags[_tk] = _tv")
    ctx.emit(indent, "        else:")
    ctx.emit(indent, f"            if {var_name}.tags is None: {var_name}.tags = set()")
    ctx.emit(indent, f"            {var_name}.tags.add(_tk)")
    ctx.emit(indent, f"            setattr({var_name}, _tk, _tv)")


def _drop_compiled_decoders() -> None:
    for obj in gc.get_objects():
        if isinstance(obj, _struct_mod.StructField):
            cache = obj._compiled_encoders
            for key in [k for k in cache if isinstance(k, tuple) and k and k[0] == "decode"]:
                del cache[key]


def apply() -> None:
    """Install the bounded emitters once; fail loudly if kafka-python changed shape."""
    if getattr(_types.UnsignedVarInt32, "_praha_hardened", False):
        return
    for owner, name in ((_types.UnsignedVarInt32, "emit_decode_from"),
                        (_struct_mod.StructField, "_emit_tagged_decode")):
        if not hasattr(owner, name):
            raise ImportError(f"kafka-python changed: {owner.__name__}.{name} is gone; "
                              "praha.protocol._hardening needs updating")
    _types.UnsignedVarInt32.emit_decode_from = classmethod(_emit_bounded_uvarint)
    _struct_mod.StructField._emit_tagged_decode = _emit_linear_tagged_decode
    _types.UnsignedVarInt32._praha_hardened = True
    _drop_compiled_decoders()


apply()
