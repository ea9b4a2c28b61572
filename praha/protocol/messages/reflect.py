"""A generated class's definition: its fields, for code that walks any message (the
error answer of any API, sample requests in tests)."""
from __future__ import annotations

import functools
from typing import Any

from praha.protocol.messages.definition import Field, load_all


@functools.cache
def _table() -> dict[type, list[Field]]:
    from praha.protocol.messages.gen import MESSAGES

    out: dict[type, list[Field]] = {}

    def walk(top: type, cls: type, fields: list[Field]) -> None:
        out.setdefault(cls, fields)
        for f in fields:
            if f.is_struct:
                sub = getattr(cls, f.element, None) or getattr(top, f.element)
                walk(top, sub, f.fields)

    for key, api in load_all().items():
        req, resp = MESSAGES[key]
        walk(req, req, api.request.fields)
        walk(resp, resp, api.response.fields)
    return out


def fields_of(message: Any) -> list[Field]:
    """The fields of a generated message or struct (class or instance), in wire order."""
    cls = message if isinstance(message, type) else type(message)
    return _table()[cls]


def struct_class(owner: Any, f: Field, top: Any) -> Any:
    """The class of struct field `f` of `owner` (a shared struct hangs on the message, `top`)."""
    return getattr(owner, f.element, None) or getattr(top, f.element)


__all__ = ["fields_of", "struct_class"]
