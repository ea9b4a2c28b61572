"""The Schema Registry's pure rules, each from its specification: Avro's schema resolution
(the specification's "Schema Resolution" section), JSON Schema's content models (as
Confluent defines JSON Schema compatibility), Protobuf's wire-format rules, the
compatibility levels, canonical forms, and the `.proto` parser."""
from __future__ import annotations

import base64
import json

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from praha.registry.errors import RegistryError
from praha.registry.model import Compatibility, SchemaType
from praha.registry.protobuf_rules import ProtobufSchema
from praha.registry.rules import ResolvedReference, canonical, compatibility_problems, parse


def avro(obj) -> object:
    return parse(SchemaType.AVRO, json.dumps(obj))


def rec(*fields, name="R") -> dict:
    return {"type": "record", "name": name, "fields": list(fields)}


def reads(reader, writer) -> bool:
    return not compatibility_problems(Compatibility.BACKWARD, reader, [writer])


# ------------------------------------------------------------------------------ Avro
@pytest.mark.parametrize(("writer", "reader", "ok"), [
    ("int", "long", True), ("int", "float", True), ("int", "double", True), ("long", "float", True),
    ("long", "double", True), ("float", "double", True), ("string", "bytes", True), ("bytes", "string", True),
    ("long", "int", False), ("double", "float", False), ("int", "string", False), ("boolean", "int", False),
    ("null", "null", True),
])
def test_avro_primitive_promotions(writer, reader, ok):
    assert reads(avro(rec({"name": "f", "type": reader})), avro(rec({"name": "f", "type": writer}))) is ok


def test_avro_a_field_the_reader_adds_needs_a_default():
    old = avro(rec({"name": "a", "type": "int"}))
    assert reads(avro(rec({"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""})), old)
    assert not reads(avro(rec({"name": "a", "type": "int"}, {"name": "b", "type": "string"})), old)


def test_avro_a_field_the_writer_has_and_the_reader_lacks_is_ignored():
    new, old = avro(rec({"name": "a", "type": "int"})), avro(rec({"name": "a", "type": "int"},
                                                                 {"name": "b", "type": "int"}))
    assert not compatibility_problems(Compatibility.BACKWARD, new, [old])
    assert compatibility_problems(Compatibility.FORWARD, new, [old])  # old readers need b, which has no default
    assert compatibility_problems(Compatibility.FULL, new, [old])


def test_avro_enum_symbols():
    w = avro({"type": "enum", "name": "E", "symbols": ["A", "B"]})
    assert reads(avro({"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}), w)
    assert not reads(avro({"type": "enum", "name": "E", "symbols": ["A"]}), w)
    assert reads(avro({"type": "enum", "name": "E", "symbols": ["A", "Z"], "default": "Z"}), w)


def test_avro_unions():
    assert reads(avro(["null", "string"]), avro("string"))  # the writer's type is a branch
    assert reads(avro(["null", "long"]), avro("int"))  # ... after promotion
    assert not reads(avro(["null", "string"]), avro("int"))
    assert reads(avro(["null", "string", "int"]), avro(["null", "string"]))  # every writer branch readable
    assert not reads(avro(["null", "string"]), avro(["null", "string", "int"]))
    assert reads(avro("long"), avro(["int"]))  # a one-branch writer union read as its type
    assert not reads(avro("string"), avro(["null", "string"]))


def test_avro_named_types_fixed_arrays_maps():
    assert not reads(avro({"type": "fixed", "name": "F", "size": 4}), avro({"type": "fixed", "name": "F", "size": 8}))
    assert not reads(avro({"type": "fixed", "name": "G", "size": 4}), avro({"type": "fixed", "name": "F", "size": 4}))
    assert not reads(avro(rec(name="B")), avro(rec(name="A")))
    assert reads(avro({"type": "record", "name": "B", "aliases": ["A"], "fields": []}), avro(rec(name="A")))
    renamed = avro(rec({"name": "new", "type": "int", "aliases": ["old"]}))
    assert reads(renamed, avro(rec({"name": "old", "type": "int"})))
    assert reads(avro({"type": "array", "items": "long"}), avro({"type": "array", "items": "int"}))
    assert not reads(avro({"type": "map", "values": "int"}), avro({"type": "map", "values": "long"}))
    assert not reads(avro({"type": "array", "items": "int"}), avro({"type": "map", "values": "int"}))


def test_avro_recursive_types_terminate():
    node = {"type": "record", "name": "Node", "fields": [{"name": "v", "type": "int"},
                                                          {"name": "next", "type": ["null", "Node"]}]}
    assert reads(avro(node), avro(node))


def test_avro_canonical_forms_and_invalid_schemas():
    a = avro(rec({"name": "a", "type": "int", "doc": "x"}))
    b = parse(SchemaType.AVRO, json.dumps(rec({"name": "a", "type": "int", "doc": "x"}), indent=4))
    c = avro(rec({"name": "a", "type": "int"}))
    assert canonical(a, False) == canonical(b, False) != canonical(c, False)
    assert canonical(a, True) == canonical(c, True)  # Parsing Canonical Form drops doc
    for bad in ('{"type": "recrd"}', "not json", '{"type": "record", "name": "R"}', '"Unknown"', " "):
        with pytest.raises(RegistryError) as e:
            parse(SchemaType.AVRO, bad)
        assert e.value.error_code == 42201


def test_avro_references_supply_named_types():
    ref = ResolvedReference("praha.Money", SchemaType.AVRO,
                            json.dumps({"type": "record", "name": "Money", "namespace": "praha",
                                        "fields": [{"name": "cents", "type": "long"}]}))
    parsed = parse(SchemaType.AVRO, json.dumps(rec({"name": "price", "type": "praha.Money"})), [ref])
    assert reads(parsed, parsed)
    with pytest.raises(RegistryError):
        parse(SchemaType.AVRO, json.dumps(rec({"name": "price", "type": "praha.Money"})))


# ------------------------------------------------------------------------------ JSON Schema
def js(obj) -> object:
    return parse(SchemaType.JSON, json.dumps(obj))


def obj(props: dict, closed: bool = False, required=()) -> dict:
    out = {"type": "object", "properties": props, "required": list(required)}
    if closed:
        out["additionalProperties"] = False
    return out


def test_json_open_and_closed_content_models():
    base = {"a": {"type": "string"}}
    added = {"a": {"type": "string"}, "b": {"type": "integer"}}
    # adding a property: an open writer may already have written anything under that name
    assert not reads(js(obj(added)), js(obj(base)))
    assert reads(js(obj(added)), js(obj(base, closed=True)))
    # removing a property: an open reader still accepts it, a closed one does not
    assert reads(js(obj(base)), js(obj(added)))
    assert not reads(js(obj(base, closed=True)), js(obj(added, closed=True)))
    # closing an open model
    assert not reads(js(obj(base, closed=True)), js(obj(base)))


def test_json_required_types_bounds_enums():
    base = obj({"a": {"type": "string"}}, closed=True)
    assert not reads(js(obj({"a": {"type": "string"}}, closed=True, required=["a"])), js(base))
    with_default = obj({"a": {"type": "string", "default": "x"}}, closed=True, required=["a"])
    assert reads(js(with_default), js(base))
    assert reads(js({"type": "number"}), js({"type": "integer"}))
    assert not reads(js({"type": "integer"}), js({"type": "number"}))
    assert not reads(js({"type": "string", "maxLength": 5}), js({"type": "string", "maxLength": 10}))
    assert reads(js({"type": "string", "maxLength": 10}), js({"type": "string", "maxLength": 5}))
    assert not reads(js({"type": "integer", "minimum": 5}), js({"type": "integer", "minimum": 0}))
    assert reads(js({"enum": ["a", "b", "c"]}), js({"enum": ["a", "b"]}))
    assert not reads(js({"enum": ["a"]}), js({"enum": ["a", "b"]}))
    assert not reads(js({"type": "array", "items": {"type": "integer"}}),
                     js({"type": "array", "items": {"type": "number"}}))


def test_json_canonical_forms_and_invalid_schemas():
    assert canonical(js({"type": "string", "maxLength": 3}), True) == canonical(js({"maxLength": 3, "type": "string"}),
                                                                                 True)
    for bad in ('{"type": 5}', "[1]", "nope", '{"properties": {"a": {"type": "strin"}}}'):
        with pytest.raises(RegistryError) as e:
            parse(SchemaType.JSON, bad)
        assert e.value.error_code == 42201


# ------------------------------------------------------------------------------ Protobuf
def proto(text: str, refs=()) -> ProtobufSchema:
    parsed = parse(SchemaType.PROTOBUF, text, refs)
    assert isinstance(parsed, ProtobufSchema)
    return parsed


def msg(body: str, package: str = "shop", syntax: str = "proto3") -> ProtobufSchema:
    return proto(f'syntax = "{syntax}"; package {package}; message Order {{ {body} }}')


def test_proto_text_parses_to_a_usable_descriptor():
    text = '''
    syntax = "proto3";
    package shop.v1;
    import "google/protobuf/timestamp.proto";
    // an order
    message Order {
      string id = 1;
      repeated Line lines = 2;
      map<string, int64> tags = 3;
      google.protobuf.Timestamp at = 4;
      Status status = 5;
      oneof payment { string card = 6; string iban = 7; }
      optional string note = 8 [deprecated = true];
      message Line { string sku = 1; uint32 qty = 2; }
      reserved 20 to 25;
      reserved "old";
    }
    enum Status { UNKNOWN = 0; PAID = 1; }
    '''
    fd = proto(text).descriptor
    pool = descriptor_pool.DescriptorPool()
    from google.protobuf import timestamp_pb2
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fd)
    Order = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.v1.Order"))
    o = Order(id="x", status=1, card="4111")
    o.lines.add(sku="s", qty=2)
    o.tags["k"] = 7
    o.at.seconds = 5
    o.note = "n"
    back = Order.FromString(o.SerializeToString())
    assert back.lines[0].qty == 2
    assert back.tags["k"] == 7
    assert back.WhichOneof("payment") == "card"
    assert back.HasField("note")


def test_proto_base64_descriptor_and_text_share_a_canonical_form():
    text = 'syntax = "proto3"; package p; message M { string a = 1; int64 b = 2; }'
    serialized = proto(text).serialized()
    assert canonical(proto(serialized), False) == canonical(proto(text), False)
    fd = descriptor_pb2.FileDescriptorProto()
    fd.ParseFromString(base64.b64decode(serialized))
    assert [f.name for f in fd.message_type[0].field] == ["a", "b"]


@pytest.mark.parametrize(("old", "new", "ok"), [
    ("string a = 1;", "string renamed = 1;", True),  # names are not on the wire
    ("string a = 1;", "string a = 1; int32 b = 2;", True),  # added
    ("string a = 1; int32 b = 2;", "string a = 1;", True),  # removed
    ("int32 a = 1;", "int64 a = 1;", True),  # one varint group
    ("string a = 1;", "bytes a = 1;", True),
    ("sint32 a = 1;", "sint64 a = 1;", True),
    ("fixed32 a = 1;", "sfixed32 a = 1;", True),
    ("int32 a = 1;", "string a = 1;", False),
    ("int32 a = 1;", "sint32 a = 1;", False),  # zigzag differs
    ("int32 a = 1;", "fixed32 a = 1;", False),
    ("int32 a = 1;", "repeated int32 a = 1;", False),
    ("string a = 1; string b = 2;", "oneof o { string a = 1; string b = 2; }", False),  # several into a oneof
    ("string a = 1;", "oneof o { string a = 1; }", True),  # one field into a new oneof
    ("Inner a = 1; message Inner { int32 x = 1; } message Other { int32 x = 1; }",
     "Other a = 1; message Inner { int32 x = 1; } message Other { int32 x = 1; }", False),
])
def test_proto_field_rules(old, new, ok):
    assert reads(msg(new), msg(old)) is ok


def test_proto_messages_packages_required_and_existing_oneofs():
    assert not reads(proto('syntax = "proto3"; package p; message A { int32 x = 1; }'),
                     proto('syntax = "proto3"; package p; message A { int32 x = 1; } message B { int32 y = 1; }'))
    assert not reads(msg("int32 a = 1;", package="q"), msg("int32 a = 1;", package="p"))
    assert not reads(msg("optional int32 a = 1; required int32 b = 2;", syntax="proto2"),
                     msg("optional int32 a = 1;", syntax="proto2"))
    assert not reads(msg("oneof o { int32 a = 1; int32 b = 2; }"), msg("int32 a = 1; oneof o { int32 b = 2; }"))


def test_proto_invalid_text():
    for bad in ("message {", 'syntax = "proto3"; message M { Missing m = 1; }', "garbage !", " ",
                'syntax = "proto3"; import "nowhere.proto"; message M { int32 a = 1; }'):
        with pytest.raises(RegistryError) as e:
            parse(SchemaType.PROTOBUF, bad)
        assert e.value.error_code == 42201


def test_proto_references_resolve_imports():
    ref = ResolvedReference("money.proto", SchemaType.PROTOBUF,
                            'syntax = "proto3"; package fin; message Money { int64 cents = 1; }')
    fd = proto('syntax = "proto3"; package shop; import "money.proto"; message Order { fin.Money price = 1; }',
               [ref]).descriptor
    assert fd.message_type[0].field[0].type_name == ".fin.Money"


# ------------------------------------------------------------------------------ levels
def test_levels_transitive_and_not():
    v1 = avro(rec({"name": "f", "type": "int"}))
    v2 = avro(rec())
    v3 = avro(rec({"name": "f", "type": "string", "default": ""}))
    assert not compatibility_problems(Compatibility.BACKWARD, v3, [v1, v2])
    assert compatibility_problems(Compatibility.BACKWARD_TRANSITIVE, v3, [v1, v2])
    assert not compatibility_problems(Compatibility.NONE, avro("string"), [v1])
    assert compatibility_problems(Compatibility.FORWARD_TRANSITIVE, v3, [v1, v2])
    assert compatibility_problems(Compatibility.FULL_TRANSITIVE, v3, [v1, v2])
    assert compatibility_problems(Compatibility.BACKWARD, js({"type": "string"}), [v1])  # type changed
