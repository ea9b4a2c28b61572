"""ACLs in ZooKeeper, exactly as Kafka's AclAuthorizer keeps them.

- literal: `/kafka-acl/<Type>/<name>`; prefixed: `/kafka-acl-extended/prefixed/<Type>/<name>`;
  each {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
  "operation":"Read","host":"*"}]}
- change notices: literal `/kafka-acl-changes/acl_changes_<seq>` holding "<Type>:<name>";
  prefixed `/kafka-acl-extended-changes/acl_changes_<seq>` holding {"version":1,
  "resourceType":"Topic","name":"…","patternType":"PREFIXED"}.
"""
from __future__ import annotations

import json

from praha.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)

LITERAL_ROOT = "/kafka-acl"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"


def type_root(pattern_type: PatternType, resource_type: ResourceType) -> str:
    root = PREFIXED_ROOT if pattern_type == PatternType.PREFIXED else LITERAL_ROOT
    return f"{root}/{resource_type.zk_name}"


def resource_path(pattern: ResourcePattern) -> str:
    return f"{type_root(pattern.pattern_type, pattern.type)}/{pattern.name}"


def encode_acls(entries: list[AccessControlEntry]) -> bytes:
    return json.dumps({"version": 1, "acls": [
        {"principal": e.principal, "permissionType": e.permission.zk_name, "operation": e.operation.zk_name,
         "host": e.host} for e in entries]}, separators=(",", ":")).encode()


def decode_acls(pattern: ResourcePattern, data: bytes | None) -> list[AclBinding]:
    if not data:
        return []
    obj = json.loads(data)
    out = []
    for a in obj.get("acls", []):
        entry = AccessControlEntry(a["principal"], a["host"], AclOperation.from_name(a["operation"]),
                                   PermissionType[a["permissionType"].upper()])
        out.append(AclBinding(pattern, entry))
    return out


def change_notice(pattern: ResourcePattern) -> tuple[str, bytes]:
    """(sequential node prefix, data) of the notice for a change to `pattern`'s ACLs."""
    if pattern.pattern_type == PatternType.LITERAL:
        return f"{LITERAL_CHANGES}/{CHANGE_PREFIX}", f"{pattern.type.zk_name}:{pattern.name}".encode()
    data = {"version": 1, "resourceType": pattern.type.zk_name, "name": pattern.name,
            "patternType": pattern.pattern_type.name}
    return f"{EXTENDED_CHANGES}/{CHANGE_PREFIX}", json.dumps(data, separators=(",", ":")).encode()
