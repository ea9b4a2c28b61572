"""Kafka's ACL model and AclAuthorizer's decision, without I/O.

An ACL binds a resource pattern (type, name, LITERAL or PREFIXED) to an entry (principal,
host, operation, ALLOW or DENY). Deciding whether principal P on host H may do O on
resource R (`decide`):
  1. a super user (`super.users`) may do anything;
  2. the ACLs that match R: LITERAL with R's name or the wildcard "*", PREFIXED whose name
     starts R's; none at all: `allow.everyone.if.no.acl.found`;
  3. a DENY for P (or User:*) from H (or *) on O (or All) refuses — deny beats allow;
  4. an ALLOW for O (or All) permits; Describe is implied by Read, Write, Delete, Alter;
     DescribeConfigs by AlterConfigs (Kafka's implied operations).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7

    @property
    def zk_name(self) -> str:
        """The name in ZooKeeper paths and kafka-acls output: Topic, Group, Cluster, TransactionalId."""
        return _TYPE_NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> ResourceType:
        key = name.replace("_", "").replace("-", "").lower()
        for t, n in _TYPE_NAMES.items():
            if n.lower() == key:
                return t
        raise ValueError(f"unknown resource type {name!r}")


_TYPE_NAMES = {ResourceType.TOPIC: "Topic", ResourceType.GROUP: "Group", ResourceType.CLUSTER: "Cluster",
               ResourceType.TRANSACTIONAL_ID: "TransactionalId", ResourceType.DELEGATION_TOKEN: "DelegationToken",
               ResourceType.USER: "User"}
#: the resource types an AclAuthorizer stores
STORED_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID,
                ResourceType.DELEGATION_TOKEN, ResourceType.USER)


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14

    @property
    def zk_name(self) -> str:
        """Kafka's JSON/CLI spelling: Read, ClusterAction, DescribeConfigs, All, ..."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_name(cls, name: str) -> AclOperation:
        key = name.replace("_", "").replace("-", "").lower()
        for op in cls:
            if op.zk_name.lower() == key:
                return op
        raise ValueError(f"unknown operation {name!r}")


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3

    @property
    def zk_name(self) -> str:
        return self.name.capitalize()


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Does this stored pattern cover the concrete resource `name`?"""
        if self.type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.name == name or self.name == WILDCARD
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.name)


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True, slots=True)
class AclFilter:
    """DescribeAcls / DeleteAcls filters: None or ANY matches anything; MATCH on the pattern
    type matches every pattern that would cover the name."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    def matches(self, b: AclBinding) -> bool:
        p, e = b.pattern, b.entry
        if self.resource_type not in (ResourceType.ANY, p.type):
            return False
        if self.pattern_type == PatternType.MATCH:
            if self.name is not None and not p.matches(p.type, self.name):
                return False
        else:
            if self.pattern_type not in (PatternType.ANY, p.pattern_type):
                return False
            if self.name is not None and self.name != p.name:
                return False
        return ((self.principal is None or self.principal == e.principal)
                and (self.host is None or self.host == e.host)
                and self.operation in (AclOperation.ANY, e.operation)
                and self.permission in (PermissionType.ANY, e.permission))


#: operations that imply another (Kafka's AclAuthorizer)
_IMPLIED_BY = {
    AclOperation.DESCRIBE: {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                            AclOperation.ALTER},
    AclOperation.DESCRIBE_CONFIGS: {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS},
}


@dataclass(frozen=True)
class AuthorizerConfig:
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    @classmethod
    def parse(cls, super_users: str, allow_everyone: bool) -> AuthorizerConfig:
        """`super.users` is semicolon-separated principals ("User:admin;User:broker")."""
        return cls(frozenset(s.strip() for s in super_users.split(";") if s.strip()), allow_everyone)


def decide(bindings: Iterable[AclBinding], config: AuthorizerConfig, principal: str, host: str,
           operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
    """May `principal` from `host` do `operation` on the resource? (AclAuthorizer.authorize)"""
    if principal in config.super_users:
        return True
    matching = [b.entry for b in bindings if b.pattern.matches(resource_type, name)]
    if not matching:
        return config.allow_everyone_if_no_acl_found
    mine = [e for e in matching if e.principal in (principal, WILDCARD_PRINCIPAL) and e.host in (host, WILDCARD)]
    if any(e.permission == PermissionType.DENY and e.operation in (operation, AclOperation.ALL) for e in mine):
        return False
    allowed = _IMPLIED_BY.get(operation, {operation})
    return any(e.permission == PermissionType.ALLOW and (e.operation in allowed or e.operation == AclOperation.ALL)
               for e in mine)
