"""Authorised-operations fields (KIP-430) of Metadata, DescribeCluster and DescribeGroups.

A client that asks (`include_*_authorized_operations`) gets a 32-bit field with bit n set
for each ACL operation code n it may perform on the resource. With no authoriser
configured, Kafka's `AuthHelper.authorizedOperations` answers every operation the resource
type supports (`AclEntry.supportedOperations`); a client that does not ask gets the schema's
default, Integer.MIN_VALUE. This module is that answer; an authoriser narrows it. The
fields are kafka-python bit fields: a set of bit positions, None for Integer.MIN_VALUE.
"""
from __future__ import annotations

from enum import Enum, IntEnum


class AclOperation(IntEnum):
    """Kafka's AclOperation codes (the bit positions of the fields)."""
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


class ResourceKind(Enum):
    TOPIC = "topic"
    GROUP = "group"
    CLUSTER = "cluster"


_O = AclOperation
SUPPORTED: dict[ResourceKind, frozenset[AclOperation]] = {
    ResourceKind.TOPIC: frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
                                   _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
    ResourceKind.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE}),
    ResourceKind.CLUSTER: frozenset({_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
                                     _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE}),
}

def authorized_operations(kind: ResourceKind, requested: bool) -> set[int] | None:
    """The field for one resource when no authoriser is configured (None: not asked for)."""
    return {int(op) for op in SUPPORTED[kind]} if requested else None
