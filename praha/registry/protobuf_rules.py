"""Protobuf: a schema is a `.proto` file's text or its `FileDescriptorProto`, serialized and
base64-encoded (what confluent-kafka's ProtobufSerializer registers). Compatibility follows
the wire format: fields are known by number, so renaming a field or adding and removing
one is compatible; a field number whose type changes is not, except within the groups the
wire format decodes alike; a removed message, a changed package, a required field added
or removed, and fields moved into a oneof are not."""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor_pb2 import FieldDescriptorProto as FD
from google.protobuf.descriptor_pb2 import FileDescriptorProto as FDP
from google.protobuf.message import DecodeError

from praha.registry.errors import invalid_schema
from praha.registry.proto_text import parse_proto

#: scalar types a changed field may move between: the wire format reads them alike
COMPATIBLE_SCALARS = [
    {FD.TYPE_INT32, FD.TYPE_UINT32, FD.TYPE_INT64, FD.TYPE_UINT64, FD.TYPE_BOOL},
    {FD.TYPE_SINT32, FD.TYPE_SINT64},
    {FD.TYPE_FIXED32, FD.TYPE_SFIXED32},
    {FD.TYPE_FIXED64, FD.TYPE_SFIXED64},
    {FD.TYPE_STRING, FD.TYPE_BYTES},
]
_NAMED = (FD.TYPE_MESSAGE, FD.TYPE_ENUM, FD.TYPE_GROUP)


def well_known(name: str) -> FDP | None:
    """The descriptor of a well-known import (google/protobuf/*.proto) the protobuf package ships."""
    from google.protobuf import (  # noqa: F401 - importing registers them in the default pool
        any_pb2,
        duration_pb2,
        empty_pb2,
        struct_pb2,
        timestamp_pb2,
        wrappers_pb2,
    )
    try:
        fd = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        return None
    out = FDP()
    fd.CopyToProto(out)
    return out


def decode_descriptor(text: str) -> FDP | None:
    """A base64 serialized FileDescriptorProto, or None if `text` is not one."""
    stripped = text.strip()
    if not stripped or any(c.isspace() for c in stripped) or "{" in stripped or ";" in stripped:
        return None
    try:
        raw = base64.b64decode(stripped, validate=True)
        fd = FDP()
        fd.ParseFromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return fd


class ProtobufSchema:
    def __init__(self, text: str, references: dict[str, str], name: str = "schema.proto"):
        """`references`: import name -> the referenced schema's text."""
        ref_fds: dict[str, FDP] = {}

        def imported(dep: str) -> FDP | None:
            if dep in ref_fds:
                return ref_fds[dep]
            if dep in references:
                ref_fds[dep] = ProtobufSchema(references[dep], {k: v for k, v in references.items() if k != dep},
                                              dep).descriptor
                return ref_fds[dep]
            return well_known(dep)

        fd = decode_descriptor(text)
        if fd is None:
            fd = parse_proto(text, name, imported)
        else:
            for dep in fd.dependency:
                if imported(dep) is None:
                    raise invalid_schema(f"import {dep!r} is neither a reference nor a well-known type")
        if not fd.message_type and not fd.enum_type:
            raise invalid_schema("the .proto declares no message")
        self.descriptor = fd

    def serialized(self) -> str:
        """The base64 FileDescriptorProto (`format=serialized`)."""
        return base64.standard_b64encode(self.descriptor.SerializeToString(deterministic=True)).decode("ascii")

    def canonical(self) -> str:
        fd = FDP()
        fd.CopyFrom(self.descriptor)
        fd.ClearField("name")
        return base64.standard_b64encode(fd.SerializeToString(deterministic=True)).decode("ascii")

    normalized = canonical


def _messages(fd: FDP) -> dict[str, descriptor_pb2.DescriptorProto]:
    out: dict[str, descriptor_pb2.DescriptorProto] = {}

    def walk(msgs: list[descriptor_pb2.DescriptorProto], scope: str) -> None:
        for m in msgs:
            if m.options.map_entry:
                continue
            out[f"{scope}.{m.name}"] = m
            walk(list(m.nested_type), f"{scope}.{m.name}")

    walk(list(fd.message_type), f".{fd.package}" if fd.package else "")
    return out


def _real_oneof(m: descriptor_pb2.DescriptorProto, f: descriptor_pb2.FieldDescriptorProto) -> str | None:
    if not f.HasField("oneof_index") or f.proto3_optional:
        return None
    return str(m.oneof_decl[f.oneof_index].name)


def _short(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1]


def differences(original: ProtobufSchema, update: ProtobufSchema) -> list[str]:
    """The incompatible differences when data written with `original` is read with `update`
    (BACKWARD checks (old, new); FORWARD (new, old))."""
    a, b = original.descriptor, update.descriptor
    problems: list[str] = []
    if a.package != b.package:
        problems.append(f"PACKAGE_CHANGED: {a.package!r} to {b.package!r}")
    old_msgs, new_msgs = _messages(a), _messages(b)
    for name, om in old_msgs.items():
        nm = new_msgs.get(name)
        if nm is None:
            problems.append(f"MESSAGE_REMOVED: {name.lstrip('.')}")
            continue
        _message_differences(name.lstrip("."), om, nm, problems)
    return problems


def _message_differences(name: str, om: descriptor_pb2.DescriptorProto, nm: descriptor_pb2.DescriptorProto,
                         problems: list[str]) -> None:
    old_fields = {f.number: f for f in om.field}
    new_fields = {f.number: f for f in nm.field}
    old_oneofs = {o.name for o in om.oneof_decl}
    moved: dict[str, int] = {}
    where: Callable[[descriptor_pb2.FieldDescriptorProto], str] = lambda f: f"{name}.{f.name} (#{f.number})"  # noqa: E731
    for num, of in old_fields.items():
        nf = new_fields.get(num)
        if nf is None:
            if of.label == FD.LABEL_REQUIRED:
                problems.append(f"REQUIRED_FIELD_REMOVED: {where(of)}")
            continue
        if (of.type in _NAMED) != (nf.type in _NAMED) or (of.type == FD.TYPE_MESSAGE) != (nf.type == FD.TYPE_MESSAGE):
            problems.append(f"FIELD_KIND_CHANGED: {where(of)}")
        elif of.type in _NAMED:
            if _short(of.type_name) != _short(nf.type_name):
                problems.append(f"FIELD_NAMED_TYPE_CHANGED: {where(of)} from {of.type_name} to {nf.type_name}")
        elif of.type != nf.type and not any(of.type in g and nf.type in g for g in COMPATIBLE_SCALARS):
            problems.append(f"FIELD_SCALAR_KIND_CHANGED: {where(of)} from {FD.Type.Name(of.type)} to "
                            f"{FD.Type.Name(nf.type)}")
        if (of.label == FD.LABEL_REPEATED) != (nf.label == FD.LABEL_REPEATED):
            problems.append(f"FIELD_LABEL_CHANGED: {where(of)} repeated and singular")
        if (of.label == FD.LABEL_REQUIRED) != (nf.label == FD.LABEL_REQUIRED):
            problems.append(f"{'REQUIRED_FIELD_ADDED' if nf.label == FD.LABEL_REQUIRED else 'REQUIRED_FIELD_REMOVED'}"
                            f": {where(of)}")
        old_oneof, new_oneof = _real_oneof(om, of), _real_oneof(nm, nf)
        if old_oneof is None and new_oneof is not None:
            if new_oneof in old_oneofs:
                problems.append(f"FIELD_MOVED_TO_EXISTING_ONEOF: {where(of)} into {new_oneof}")
            else:
                moved[new_oneof] = moved.get(new_oneof, 0) + 1
    for oneof, count in moved.items():
        if count > 1:
            problems.append(f"MULTIPLE_FIELDS_MOVED_TO_ONEOF: {count} fields of {name} into {oneof}")
    for num, nf in new_fields.items():
        if num not in old_fields and nf.label == FD.LABEL_REQUIRED:
            problems.append(f"REQUIRED_FIELD_ADDED: {where(nf)}")
