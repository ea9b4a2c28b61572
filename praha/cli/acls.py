"""`praha acls`: add, remove and list ACLs as Kafka's kafka-acls does (over ZooKeeper, like
`kafka-acls --authorizer-properties zookeeper.connect=…`); every broker applies a change
as soon as its change notice arrives.

  praha acls --add --allow-principal User:alice [--allow-host H] [--deny-principal P] [--deny-host H]
             --operation Read [--operation Write] (--topic T | --group G | --cluster | --transactional-id X)
             [--resource-pattern-type literal|prefixed]
  praha acls --remove  (same options; what they match is removed)
  praha acls --list [--topic T | --group G | --cluster | --transactional-id X] [--principal P]
"""
from __future__ import annotations

import argparse
from typing import Any

from praha.cli.options import CliError, add_cluster_options, zk_session_of
from praha.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)


def register(sub: Any) -> None:
    p = sub.add_parser("acls", help="add, remove or list ACLs (kafka-acls)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--add", action="store_true", help="add the ACLs described")
    g.add_argument("--remove", action="store_true", help="remove the ACLs described")
    g.add_argument("--list", action="store_true", help="list ACLs (of the resource given, or all)")
    r = p.add_mutually_exclusive_group()
    r.add_argument("--topic", help="a topic (or '*'; a prefix with --resource-pattern-type prefixed)")
    r.add_argument("--group", help="a consumer group")
    r.add_argument("--transactional-id", help="a transactional id")
    r.add_argument("--cluster", action="store_true", help="the cluster")
    p.add_argument("--resource-pattern-type", default="literal", choices=["literal", "prefixed", "any", "match"],
                   help="how the name matches resources (default literal)")
    p.add_argument("--allow-principal", action="append", default=[], metavar="User:NAME")
    p.add_argument("--deny-principal", action="append", default=[], metavar="User:NAME")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST", help="default *")
    p.add_argument("--deny-host", action="append", default=[], metavar="HOST", help="default *")
    p.add_argument("--operation", action="append", default=[], metavar="OP",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                        "AlterConfigs, IdempotentWrite, All")
    p.add_argument("--principal", help="--list: only this principal's ACLs")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_acls)


def _resource(args: argparse.Namespace) -> tuple[ResourceType, str] | None:
    if args.topic is not None:
        return ResourceType.TOPIC, args.topic
    if args.group is not None:
        return ResourceType.GROUP, args.group
    if args.transactional_id is not None:
        return ResourceType.TRANSACTIONAL_ID, args.transactional_id
    if args.cluster:
        return ResourceType.CLUSTER, CLUSTER_NAME
    return None


def _entries(args: argparse.Namespace) -> list[AccessControlEntry]:
    try:
        ops = [AclOperation.from_name(o) for o in args.operation] or [AclOperation.ALL]
    except ValueError as e:
        raise CliError(str(e)) from None
    out: list[AccessControlEntry] = []
    for principals, hosts, permission in ((args.allow_principal, args.allow_host, PermissionType.ALLOW),
                                          (args.deny_principal, args.deny_host, PermissionType.DENY)):
        for principal in principals:
            if ":" not in principal:
                raise CliError(f"principal {principal!r} must be of the form User:NAME")
            out.extend(AccessControlEntry(principal, h, op, permission) for h in (hosts or ["*"]) for op in ops)
    return out


def _print(bindings: list[AclBinding], verb: str) -> None:
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        by_pattern.setdefault(b.pattern, []).append(b.entry)
    for pattern, entries in sorted(by_pattern.items(), key=lambda kv: (kv[0].type, kv[0].name, kv[0].pattern_type)):
        print(f"{verb} ACLs for resource `ResourcePattern(resourceType={pattern.type.name}, name={pattern.name}, "
              f"patternType={pattern.pattern_type.name})`: ")
        for e in entries:
            print(f" \t(principal={e.principal}, host={e.host}, operation={e.operation.name}, "
                  f"permissionType={e.permission.name})")
        print()


def cmd_acls(args: argparse.Namespace) -> int:
    from praha.security.acl_store import add_acls, load_all, remove_acls

    resource = _resource(args)
    pattern_type = PatternType[args.resource_pattern_type.upper()]
    if args.add:
        if resource is None:
            raise CliError("--add needs a resource: --topic, --group, --transactional-id or --cluster")
        if pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise CliError("--add takes --resource-pattern-type literal or prefixed")
        entries = _entries(args)
        if not entries:
            raise CliError("--add needs --allow-principal or --deny-principal")
        pattern = ResourcePattern(resource[0], resource[1], pattern_type)
        with zk_session_of(args) as store:
            add_acls(store, pattern, entries)
        _print([AclBinding(pattern, e) for e in entries], "Adding")
        return 0
    rtype, name = resource if resource is not None else (ResourceType.ANY, None)
    if args.remove:
        if resource is None:
            raise CliError("--remove needs a resource: --topic, --group, --transactional-id or --cluster")
        entries = _entries(args) if (args.allow_principal or args.deny_principal) else []
        with zk_session_of(args) as store:
            removed: list[AclBinding] = []
            filters = [AclFilter(rtype, name, pattern_type, e.principal, e.host, e.operation, e.permission)
                       for e in entries] or [AclFilter(rtype, name, pattern_type)]
            for f in filters:
                removed += remove_acls(store, f)
        _print(removed, "Removed")
        return 0
    with zk_session_of(args) as store:
        bindings = load_all(store)
    f = AclFilter(rtype, name, pattern_type if resource is not None else PatternType.ANY, args.principal)
    _print([b for b in bindings if f.matches(b)], "Current")
    return 0
