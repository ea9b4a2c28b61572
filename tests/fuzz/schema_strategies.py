"""Hypothesis strategies for well-formed Kafka requests of any API key and version.

Built from the JSON schemas kafka-python ships (the same ones Kafka's own generator
reads): for a (request class, version) every field present in that version gets a value
of its type — ints over their whole range, strings, bytes, booleans, UUIDs, nested
structs and arrays (short, so examples stay small), null where the version allows it.
A plain module, not a conftest, so its name cannot clash with other test directories.
"""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from kafka.protocol.schemas.fields.array import ArrayField
from kafka.protocol.schemas.fields.simple import SimpleField
from kafka.protocol.schemas.fields.struct import StructField
from kafka.protocol.schemas.fields.struct_array import StructArrayField

from praha.protocol.registry import APIS

MAX_ITEMS = 3

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _simple(field: SimpleField, version: int, item: bool = False) -> st.SearchStrategy[Any]:
    t = field.type_str
    if t in _INTS:
        bits = _INTS[t]
        base = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    elif t == "uint16":
        base = st.integers(0, 2**16 - 1)
    elif t == "bool":
        base = st.booleans()
    elif t == "float64":
        base = st.floats(allow_nan=False)
    elif t == "uuid":
        base = st.uuids()
    elif t == "string":
        base = st.text(max_size=12)
    elif t in ("bytes", "records"):
        base = st.binary(max_size=24)
    else:
        base = st.none()
    if field.nullable_for_version_q(version) and not item:  # an array's items inherit its nullability
        return st.none() | base
    return base


def field_strategy(field: Any, version: int) -> st.SearchStrategy[Any]:
    if isinstance(field, StructArrayField):
        items = st.lists(struct_strategy(field, version), max_size=MAX_ITEMS)
    elif isinstance(field, ArrayField):
        items = st.lists(_simple(field.array_of, version, item=True), max_size=MAX_ITEMS)
    elif isinstance(field, StructField):
        items = struct_strategy(field, version)
    else:
        return _simple(field, version)
    if field.nullable_for_version_q(version):
        return st.none() | items
    return items


def _fields(struct: Any) -> list[Any]:
    fields = struct.fields
    return list(fields.values()) if isinstance(fields, dict) else list(fields or ())


def struct_strategy(struct: Any, version: int) -> st.SearchStrategy[Any]:
    fields = {f.name: field_strategy(f, version) for f in _fields(struct) if f.for_version_q(version)}
    return st.fixed_dictionaries(fields).map(lambda kw: struct.data_class(**kw))


def request_strategy(api_key: int, version: int) -> st.SearchStrategy[Any]:
    """A request object of `api_key` that encodes at `version`."""
    cls = APIS[api_key].request
    fields = {f.name: field_strategy(f, version) for f in _fields(cls._struct) if f.for_version_q(version)}
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))


def every_api_version() -> list[tuple[int, int]]:
    """Every (api key, version) the registry knows, within the schemas' valid range."""
    return [(k, v) for k, spec in sorted(APIS.items()) for v in range(spec.min_version, spec.max_version + 1)]
