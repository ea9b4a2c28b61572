"""AclAuthorizer's decisions (pure): literal, wildcard and prefixed patterns, deny beats
allow, implied operations, hosts, super users, allow.everyone.if.no.acl.found; filters;
the ZooKeeper formats."""
import json

import pytest

from praha.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclFilter,
    AclOperation,
    AuthorizerConfig,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    decide,
)
from praha.security.acl_codec import change_notice, decode_acls, encode_acls, resource_path

T, G = ResourceType.TOPIC, ResourceType.GROUP
OP, ALLOW, DENY = AclOperation, PermissionType.ALLOW, PermissionType.DENY
CFG = AuthorizerConfig.parse("User:admin;User:broker", False)


def acl(name, principal, op, perm=ALLOW, host="*", rtype=T, pattern=PatternType.LITERAL):
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, perm))


def may(bindings, principal, op, name, rtype=T, host="10.0.0.1", cfg=CFG):
    return decide(bindings, cfg, principal, host, op, rtype, name)


def test_literal_allow_and_nothing_else():
    b = [acl("orders", "User:alice", OP.WRITE)]
    assert may(b, "User:alice", OP.WRITE, "orders")
    assert not may(b, "User:alice", OP.READ, "orders")
    assert not may(b, "User:bob", OP.WRITE, "orders")
    assert not may(b, "User:alice", OP.WRITE, "orders2")


def test_no_acl_for_the_resource():
    assert not may([], "User:alice", OP.READ, "t")
    assert may([], "User:alice", OP.READ, "t", cfg=AuthorizerConfig(frozenset(), True))
    # an ACL on the resource for someone else: the no-ACL rule no longer applies
    assert not may([acl("t", "User:bob", OP.READ)], "User:alice", OP.READ, "t", cfg=AuthorizerConfig(frozenset(), True))


def test_super_users_bypass_even_deny():
    assert may([acl("t", "User:admin", OP.ALL, DENY)], "User:admin", OP.DELETE, "t")


def test_deny_beats_allow_and_wildcards():
    b = [acl("*", "User:*", OP.ALL), acl("t", "User:alice", OP.WRITE, DENY)]
    assert not may(b, "User:alice", OP.WRITE, "t")
    assert may(b, "User:alice", OP.READ, "t")
    assert may(b, "User:bob", OP.WRITE, "t")


def test_prefixed():
    b = [acl("pay-", "User:alice", OP.WRITE, pattern=PatternType.PREFIXED)]
    assert may(b, "User:alice", OP.WRITE, "pay-eu")
    assert not may(b, "User:alice", OP.WRITE, "payroll")
    assert not may(b + [acl("pay-eu", "User:alice", OP.WRITE, DENY)], "User:alice", OP.WRITE, "pay-eu")


@pytest.mark.parametrize("granted", [OP.READ, OP.WRITE, OP.DELETE, OP.ALTER, OP.DESCRIBE, OP.ALL])
def test_describe_is_implied(granted):
    assert may([acl("t", "User:a", granted)], "User:a", OP.DESCRIBE, "t")


def test_describe_configs_implied_by_alter_configs_only():
    assert may([acl("t", "User:a", OP.ALTER_CONFIGS)], "User:a", OP.DESCRIBE_CONFIGS, "t")
    assert not may([acl("t", "User:a", OP.READ)], "User:a", OP.DESCRIBE_CONFIGS, "t")


def test_deny_on_describe_is_not_implied_by_a_read_deny():
    b = [acl("t", "User:a", OP.DESCRIBE), acl("t", "User:a", OP.READ, DENY)]
    assert may(b, "User:a", OP.DESCRIBE, "t")
    assert not may(b, "User:a", OP.READ, "t")


def test_hosts():
    b = [acl("t", "User:a", OP.READ, host="10.0.0.1")]
    assert may(b, "User:a", OP.READ, "t", host="10.0.0.1")
    assert not may(b, "User:a", OP.READ, "t", host="10.0.0.2")


def test_resource_types_are_apart():
    assert not may([acl("x", "User:a", OP.READ)], "User:a", OP.READ, "x", rtype=G)


def test_filters():
    b1 = acl("pay-", "User:a", OP.WRITE, pattern=PatternType.PREFIXED)
    b2 = acl("pay-eu", "User:b", OP.READ)
    assert AclFilter().matches(b1)
    assert AclFilter().matches(b2)
    assert AclFilter(T, "pay-eu", PatternType.MATCH).matches(b1)
    assert not AclFilter(T, "pay-eu", PatternType.LITERAL).matches(b1)
    assert AclFilter(principal="User:b").matches(b2)
    assert not AclFilter(principal="User:b").matches(b1)


def test_zookeeper_formats_are_kafkas():
    pattern = ResourcePattern(T, "orders")
    entry = AccessControlEntry("User:alice", "*", OP.DESCRIBE_CONFIGS, ALLOW)
    data = json.loads(encode_acls([entry]))
    assert data == {"version": 1, "acls": [{"principal": "User:alice", "permissionType": "Allow",
                                            "operation": "DescribeConfigs", "host": "*"}]}
    assert decode_acls(pattern, encode_acls([entry])) == [AclBinding(pattern, entry)]
    assert resource_path(pattern) == "/kafka-acl/Topic/orders"
    assert resource_path(ResourcePattern(G, "g", PatternType.PREFIXED)) == "/kafka-acl-extended/prefixed/Group/g"
    assert resource_path(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "x")) == "/kafka-acl/TransactionalId/x"
    assert change_notice(pattern) == ("/kafka-acl-changes/acl_changes_", b"Topic:orders")
    path, data2 = change_notice(ResourcePattern(T, "pay-", PatternType.PREFIXED))
    assert path == "/kafka-acl-extended-changes/acl_changes_"
    assert json.loads(data2) == {"version": 1, "resourceType": "Topic", "name": "pay-", "patternType": "PREFIXED"}
