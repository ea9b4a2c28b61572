"""Hypothesis strategies for well-formed Kafka requests of any API key and version.

Built from praha's message definitions (`praha/protocol/messages/`): for a (request class,
version) every field present in that version gets a value of its type — ints over their
whole range, strings, bytes, booleans, UUIDs, nested structs and arrays (short, so examples
stay small), null where the version allows it. A plain module, not a conftest, so its name
cannot clash with other test directories.
"""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from praha.protocol.messages.definition import Field
from praha.protocol.messages.reflect import fields_of, struct_class
from praha.protocol.registry import APIS

MAX_ITEMS = 3

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _simple(t: str, nullable: bool) -> st.SearchStrategy[Any]:
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
    return st.none() | base if nullable else base


def field_strategy(top: Any, owner: Any, field: Field, version: int) -> st.SearchStrategy[Any]:
    nullable = field.nullable_at(version)
    if field.is_struct:
        one = struct_strategy(top, struct_class(owner, field, top), field.fields, version)
        items = st.lists(one, max_size=MAX_ITEMS) if field.is_array else one
    elif field.is_array:  # an array's items do not inherit its nullability
        items = st.lists(_simple(field.element, False), max_size=MAX_ITEMS)
    else:
        return _simple(field.type, nullable)
    return st.none() | items if nullable else items


def struct_strategy(top: Any, cls: Any, fields: list[Field], version: int) -> st.SearchStrategy[Any]:
    strategies = {f.name: field_strategy(top, cls, f, version) for f in fields if version in f.versions}
    return st.fixed_dictionaries(strategies).map(lambda kw: cls(**kw))


def request_strategy(api_key: int, version: int) -> st.SearchStrategy[Any]:
    """A request object of `api_key` that encodes at `version`."""
    cls = APIS[api_key].request
    return struct_strategy(cls, cls, fields_of(cls), version)


def every_api_version() -> list[tuple[int, int]]:
    """Every (api key, version) the registry knows, within the definitions' valid range."""
    return [(k, v) for k, spec in sorted(APIS.items()) for v in range(spec.min_version, spec.max_version + 1)]
