"""One door to the three schema types: parse (with references), canonical forms, and the
compatibility of a new schema with a subject's earlier ones at a level.

The parsers (fastavro, jsonschema, protobuf) are imported on the first schema, not when the
broker starts: most brokers of a test suite never see one."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from praha.registry.errors import invalid_schema
from praha.registry.model import Compatibility, SchemaType

if TYPE_CHECKING:
    from praha.registry.avro_rules import AvroSchema
    from praha.registry.json_rules import JsonSchema
    from praha.registry.protobuf_rules import ProtobufSchema

Parsed = Union["AvroSchema", "JsonSchema", "ProtobufSchema"]


@dataclass(frozen=True)
class ResolvedReference:
    """A reference's import name, and the referenced schema's text (its own references
    resolved before it in the list handed to `parse`)."""

    name: str
    schema_type: SchemaType
    schema: str


def parse_type(value: object) -> SchemaType:
    if value is None:
        return SchemaType.AVRO
    try:
        return SchemaType(str(value).upper())
    except ValueError:
        raise invalid_schema(f"unknown schema type {value!r}; this registry supports "
                             f"{', '.join(t.value for t in SchemaType)}") from None


def parse(schema_type: SchemaType, text: str, references: Sequence[ResolvedReference] = ()) -> Parsed:
    """The parsed schema; RegistryError 42201 (invalid schema) when it is not one."""
    if not isinstance(text, str) or not text.strip():
        raise invalid_schema("the schema is empty")
    if schema_type is SchemaType.AVRO:
        from praha.registry.avro_rules import AvroSchema
        return AvroSchema(text, [r.schema for r in references])
    if schema_type is SchemaType.JSON:
        from praha.registry.json_rules import JsonSchema
        return JsonSchema(text, [r.schema for r in references])
    from praha.registry.protobuf_rules import ProtobufSchema
    return ProtobufSchema(text, {r.name: r.schema for r in references})


def canonical(parsed: Parsed, normalize: bool) -> str:
    """The text two registrations of the same schema share (so they share an id)."""
    return parsed.normalized() if normalize else parsed.canonical()


def _reads(reader: Parsed, writer: Parsed) -> list[str]:
    from praha.registry.avro_rules import AvroSchema, can_read
    from praha.registry.json_rules import JsonSchema, reader_accepts
    from praha.registry.protobuf_rules import ProtobufSchema, differences

    if isinstance(reader, AvroSchema) and isinstance(writer, AvroSchema):
        return can_read(reader, writer)
    if isinstance(reader, JsonSchema) and isinstance(writer, JsonSchema):
        return reader_accepts(reader, writer)
    if isinstance(reader, ProtobufSchema) and isinstance(writer, ProtobufSchema):
        return differences(writer, reader)
    return ["the schema type changed"]


def compatibility_problems(level: Compatibility, new: Parsed, earlier: Sequence[Parsed]) -> list[str]:
    """[] when `new` may follow `earlier` (oldest first) at `level`: the latest one only,
    or all of them when the level is transitive."""
    if level is Compatibility.NONE or not earlier:
        return []
    against = list(earlier) if level.transitive else [earlier[-1]]
    problems: list[str] = []
    for old in reversed(against):
        if level.backward:
            problems += [f"BACKWARD: {p}" for p in _reads(new, old)]
        if level.forward:
            problems += [f"FORWARD: {p}" for p in _reads(old, new)]
    return problems
