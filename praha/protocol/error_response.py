"""Any API's answer that a request failed as a whole (Kafka's `AbstractRequest.getErrorResponse`).

Kafka answers a request its handler could not serve (an unexpected exception) with the
API's own response carrying the error, and keeps the connection. Here that answer is built
from the schemas rather than written per API: the response's top-level `error_code` (and
`error_message`) when it has one; otherwise its arrays mirror the request's (topics,
partitions, groups, resources...) with the error in every entry, the names and indexes
copied across, so a client sees the error where it looks for it.
"""
from __future__ import annotations

import functools
import uuid
from typing import Any

from praha.errors import ErrorCode
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.definition import Api, Field, load_all
from praha.protocol.messages.reflect import fields_of, struct_class
from praha.protocol.messages.runtime import WireMessage
from praha.protocol.registry import response_class

#: response field → the request fields that hold the same thing, in the order tried
_SAME_AS: dict[str, tuple[str, ...]] = {
    "name": ("name", "topic", "topic_name"),
    "topic": ("topic", "name", "topic_name"),
    "topic_name": ("topic_name", "name", "topic"),
    "partition_index": ("partition_index", "partition", "index"),
    "partition": ("partition", "partition_index", "index"),
    "index": ("index", "partition_index", "partition"),
    "group_id": ("group_id", "group", "key"),
    "resource_name": ("resource_name", "name"),
    "resource_type": ("resource_type",),
    "entity": ("entity",),
    "user": ("name", "user"),
}
#: response array → the request arrays it answers, tried before the only array there
_ANSWERS: dict[str, tuple[str, ...]] = {
    "responses": ("topic_data", "topics"),
    "partition_responses": ("partition_data", "partitions"),
    "results": ("topics", "resources", "groups", "creations", "filters", "deletions", "upsertions"),
    "partitions": ("partitions", "partition_data", "partition_indexes"),
    "topics": ("topics", "topic_data"),
    "groups": ("groups", "group_ids", "groups_names"),
    "transactional_states": ("transactional_ids",),
    "results_by_topic_v3_and_below": ("v3_and_below_topics",),
    "results_by_transaction": ("transactions",),
    "topic_results": ("topics",),
    "results_by_partition": ("partitions",),
}


def error_response(api_key: int, api_version: int, request: object, code: ErrorCode,
                   message: str | None = None) -> WireMessage:
    """The response object (of `api_key`, for `api_version`) saying `request` failed with `code`."""
    cls = response_class(api_key)
    api = _definitions()[api_key]
    return cls(**_answer(cls, cls, api.response.fields, request, api.request.fields, api_version, code, message))


def refusal(req: DecodedRequest, code: ErrorCode, message: str | None = None) -> WireMessage:
    """The answer to a handler's refusal of the whole of `req` (its API's own response with
    `code` where the client looks for it): one way for every handler, not one per API."""
    return error_response(req.api_key, req.api_version, req.request, code, message)


@functools.cache
def _definitions() -> dict[int, Api]:
    return load_all()


def _answer(top: Any, cls: Any, fields: list[Field], request: Any, request_fields: list[Field] | None,
            version: int, code: ErrorCode, message: str | None) -> dict[str, Any]:
    fields = [f for f in fields if version in f.versions]
    whole = any(f.name == "error_code" for f in fields)  # a top-level error answers for everything
    out: dict[str, Any] = {}
    for f in fields:
        if f.name == "error_code" or f.name.endswith("_error_code"):
            out[f.name] = int(code)
        elif f.name == "error_message":
            out[f.name] = message
        elif f.is_struct and f.is_array:
            answers = not whole and _carries_errors(f.fields)
            items, item_fields = _request_items(f.name, request, request_fields, version) if answers else ([], None)
            sub = struct_class(cls, f, top)
            out[f.name] = [sub(**_answer(top, sub, f.fields, item, item_fields, version, code, message))
                           for item in items]
        elif f.is_struct or f.is_array:
            continue  # their defaults (an empty or null array)
        elif request is not None:
            value = _copied(f, request, version)
            if value is not None:
                out[f.name] = value
    return out


def _request_items(name: str, request: Any, request_fields: list[Field] | None,
                   version: int) -> tuple[list[Any], list[Field] | None]:
    """The request entries a response array answers, and their fields (None for plain values)."""
    if request is None or request_fields is None:
        return [], None
    arrays = [f for f in request_fields if f.is_array and version in f.versions]
    by_name = {f.name: f for f in arrays}
    candidates = [by_name[n] for n in _ANSWERS.get(name, (name,)) if n in by_name]
    if not candidates and len(arrays) == 1:
        candidates = arrays
    for f in candidates:
        items = getattr(request, f.name, None)
        if items:
            return list(items), (f.fields if f.is_struct else None)
    return [], None


def _carries_errors(fields: list[Field]) -> bool:
    """The struct, or one nested in it, has an error code (brokers, say, have none)."""
    return any(f.name.endswith("error_code") or (f.is_struct and f.is_array and _carries_errors(f.fields))
               for f in fields)


def _copied(field: Field, entry: Any, version: int) -> Any:
    """The value of a response field that the request entry also holds (a name, an index);
    a plain entry (a partition index, a group id) is the value of its first matching field."""
    if isinstance(entry, (str, int, uuid.UUID)):
        return entry if _fits(field, entry) and _plain_matches(field) else None
    for n in _SAME_AS.get(field.name, (field.name,)):
        value = getattr(entry, n, None)
        if value is not None and _fits(field, value):
            return value
    return None


def _fits(field: Field, value: Any) -> bool:
    t = field.type
    if t == "bool":
        return isinstance(value, bool)
    if t in ("int8", "int16", "int32", "int64", "uint16"):
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "string":
        return isinstance(value, str)
    if t == "uuid":
        return isinstance(value, uuid.UUID)
    return False


def _plain_matches(field: Field) -> bool:
    return "partition" in field.name or field.name in ("index", "group_id", "name", "key",
                                                       "transactional_id", "topic_id")


__all__ = ["error_response", "fields_of"]
