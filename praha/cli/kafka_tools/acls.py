"""kafka-acls: add, remove and list ACLs over the admin API (CreateAcls, DescribeAcls,
DeleteAcls), with Kafka 3.9's options (`--producer`/`--consumer` conveniences included)
and output."""
from __future__ import annotations

import argparse
import sys

from praha.admin.cluster_admin import AclRow
from praha.cli.kafka_tools.base import KafkaToolParser, add_connection
from praha.errors import PrahaError
from praha.security.acl import CLUSTER_NAME, AclOperation, PatternType, PermissionType, ResourceType

DESCRIPTION = """\
This tool helps to manage acls on kafka (Kafka's kafka-acls, through the admin API).

examples:
  kafka-acls --bootstrap-server B --add --allow-principal User:alice --operation Read --topic t
  kafka-acls --bootstrap-server B --add --allow-principal User:bob --producer --topic t
  kafka-acls --bootstrap-server B --list --topic t
  kafka-acls --bootstrap-server B --remove --allow-principal User:alice --operation Read --topic t --force
"""
NEWLINE = "\n"


def parser() -> KafkaToolParser:
    p = KafkaToolParser("kafka-acls", DESCRIPTION)
    add_connection(p, required=False)
    p.add_argument("--authorizer-properties", help="not with praha's kafka-acls: use --bootstrap-server "
                                                   "(or `praha acls --zookeeper`)")
    for action in ("add", "remove", "list"):
        p.add_argument(f"--{action}", action="store_true", help=f"{action} ACLs")
    p.add_argument("--topic", action="append", help="a topic ('*': all topics)")
    p.add_argument("--group", action="append", help="a consumer group ('*': all groups)")
    p.add_argument("--transactional-id", action="append", help="a transactional id ('*': all)")
    p.add_argument("--delegation-token", action="append", help="a delegation token id")
    p.add_argument("--user-principal", action="append", help="a user resource (CreateTokens/DescribeTokens)")
    p.add_argument("--cluster", action="store_true", help="the cluster")
    p.add_argument("--resource-pattern-type", default="literal",
                   choices=["any", "match", "literal", "prefixed", "ANY", "MATCH", "LITERAL", "PREFIXED"],
                   help="literal or prefixed for --add; any or match too for --list and --remove (default literal)")
    p.add_argument("--allow-principal", action="append", default=[], metavar="User:NAME")
    p.add_argument("--deny-principal", action="append", default=[], metavar="User:NAME")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST", help="default * with a principal")
    p.add_argument("--deny-host", action="append", default=[], metavar="HOST", help="default * with a principal")
    p.add_argument("--operation", action="append", default=[], metavar="OP",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
                        "IdempotentWrite, CreateTokens, DescribeTokens, All (default All)")
    p.add_argument("--producer", action="store_true", help="WRITE, DESCRIBE, CREATE on the topics (and WRITE, "
                                                           "DESCRIBE on the transactional ids)")
    p.add_argument("--consumer", action="store_true", help="READ, DESCRIBE on the topics; READ on the groups")
    p.add_argument("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
    p.add_argument("--principal", action="append", default=[], help="--list: only this principal's ACLs")
    p.add_argument("--force", action="store_true", help="--remove without asking")
    return p


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    out = [(ResourceType.TOPIC, t) for t in args.topic or []]
    out += [(ResourceType.GROUP, g) for g in args.group or []]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id or []]
    out += [(ResourceType.DELEGATION_TOKEN, t) for t in args.delegation_token or []]
    out += [(ResourceType.USER, u) for u in args.user_principal or []]
    if args.cluster:
        out.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return out


def _pattern(rtype: int, name: str, ptype: int) -> str:
    return (f"ResourcePattern(resourceType={ResourceType(rtype).name}, name={name}, "
            f"patternType={PatternType(ptype).name})")


def _entry(a: AclRow) -> str:
    return (f"(principal={a.principal}, host={a.host}, operation={AclOperation(a.operation).name}, "
            f"permissionType={PermissionType(a.permission).name})")


def _block(head: str, rows: list[AclRow]) -> str:
    """Kafka's layout: `HEAD: `, then the entries tab-indented, a space after the last."""
    return f"{head}: {NEWLINE} {NEWLINE.join(chr(9) + _entry(a) for a in rows)} {NEWLINE}"


def _entries(p: KafkaToolParser, args: argparse.Namespace, operations: list[AclOperation]) -> list[
        tuple[str, str, AclOperation, PermissionType]]:
    out = []
    for principals, hosts, permission in ((args.allow_principal, args.allow_host, PermissionType.ALLOW),
                                          (args.deny_principal, args.deny_host, PermissionType.DENY)):
        for principal in principals:
            if ":" not in principal:
                raise PrahaError(f"expected a string in format principalType:principalName but got {principal}")
            out += [(principal, h, op, permission) for h in (hosts or ["*"]) for op in operations]
    return out


def _operations(names: list[str]) -> list[AclOperation]:
    try:
        return [AclOperation.from_name(o) for o in names] or [AclOperation.ALL]
    except ValueError as e:
        raise PrahaError(str(e)) from None


def _bindings(p: KafkaToolParser, args: argparse.Namespace, ptype: PatternType) -> dict[
        tuple[int, str], list[AclRow]]:
    """{(resource type, name): ACLs}: the resources' --operation ACLs, or --producer/--consumer's."""
    resources = _resources(args)
    out: dict[tuple[int, str], list[AclRow]] = {}

    def put(rtype: ResourceType, name: str, ops: list[AclOperation]) -> None:
        rows = [AclRow(rtype, name, ptype, pr, h, op, perm) for pr, h, op, perm in _entries(p, args, ops)]
        out.setdefault((rtype, name), []).extend(rows)

    if args.producer or args.consumer:
        topics = [n for t, n in resources if t == ResourceType.TOPIC]
        if not topics:
            p.fail("With --producer or --consumer you must specify a --topic")
        if args.producer:
            for t in topics:
                put(ResourceType.TOPIC, t, [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE])
            for n in [n for t, n in resources if t == ResourceType.TRANSACTIONAL_ID]:
                put(ResourceType.TRANSACTIONAL_ID, n, [AclOperation.WRITE, AclOperation.DESCRIBE])
            if args.idempotent:
                put(ResourceType.CLUSTER, CLUSTER_NAME, [AclOperation.IDEMPOTENT_WRITE])
        if args.consumer:
            groups = [n for t, n in resources if t == ResourceType.GROUP]
            if not groups:
                p.fail("With --consumer you must specify a --group")
            for t in topics:
                put(ResourceType.TOPIC, t, [AclOperation.READ, AclOperation.DESCRIBE])
            for g in groups:
                put(ResourceType.GROUP, g, [AclOperation.READ])
        return out
    ops = _operations(args.operation)
    for rtype, name in resources:
        put(rtype, name, ops)
    return out


def run(argv: list[str]) -> int:
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.cli.options import security_of

    p = parser()
    args = p.parse(argv)
    p.refuse_zookeeper(args.authorizer_properties, "praha acls")
    if [args.add, args.remove, args.list].count(True) != 1:
        p.fail("Command must include exactly one action: --list, --add, --remove. ")
    if not args.bootstrap_server:
        p.fail("You must specify --bootstrap-server")
    ptype = PatternType[args.resource_pattern_type.upper()]
    if args.add and ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
        p.fail(f"A '--resource-pattern-type' value of '{ptype.name}' is not valid when adding acls.")
    if args.list and (args.allow_principal or args.deny_principal or args.operation):
        p.fail('Option "[list]" can\'t be used with option "[allow-principal]"')
    if not args.list and not _resources(args):
        p.fail("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or "
               "--delegation-token <Delegation Token ID>")
    with ClusterAdmin(args.bootstrap_server, security=security_of(args), client_id="kafka-acls") as admin:
        if args.add:
            if not args.allow_principal and not args.deny_principal:
                p.fail("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
            for (rtype, name), rows in _bindings(p, args, ptype).items():
                print(_block(f"Adding ACLs for resource `{_pattern(rtype, name, ptype)}`", rows))
                admin.create_acls(rows)
            return 0
        if args.remove:
            return _remove(p, admin, args, ptype)
        return _list(admin, args, ptype)


def _filter_text(rtype: int, name: str, ptype: PatternType) -> str:
    return (f"ResourcePatternFilter(resourceType={ResourceType(rtype).name}, name={name}, "
            f"patternType={ptype.name})")


def _confirm(args: argparse.Namespace, question: str) -> bool:
    if args.force:
        return True
    print(question)
    return sys.stdin.readline().strip().lower() == "y"


def _remove(p: KafkaToolParser, admin: object, args: argparse.Namespace, ptype: PatternType) -> int:
    from praha.admin.cluster_admin import ClusterAdmin

    assert isinstance(admin, ClusterAdmin)
    with_entries = bool(args.allow_principal or args.deny_principal)
    for (rtype, name), rows in (_bindings(p, args, ptype) if with_entries else
                                {r: [] for r in _resources(args)}).items():
        filt = _filter_text(rtype, name, ptype)
        if rows:
            question = (f"Are you sure you want to remove ACLs: {NEWLINE} "
                        f"{NEWLINE.join(chr(9) + _entry(a) for a in rows)} {NEWLINE} from resource filter "
                        f"`{filt}`? (y/n)")
        else:
            question = f"Are you sure you want to delete all ACLs for resource filter `{filt}`? (y/n)"
        if not _confirm(args, question):
            continue
        admin.delete_acls(rows or [AclRow(rtype, name, ptype, "", "", AclOperation.ANY, PermissionType.ANY)])
    return 0


def _list(admin: object, args: argparse.Namespace, ptype: PatternType) -> int:
    from praha.admin.cluster_admin import ClusterAdmin

    assert isinstance(admin, ClusterAdmin)
    resources = _resources(args)
    filters = [AclRow(t, n, ptype, "", "", AclOperation.ANY, PermissionType.ANY) for t, n in resources] or [
        AclRow(ResourceType.ANY, "", PatternType.ANY, "", "", AclOperation.ANY, PermissionType.ANY)]
    found: dict[tuple[int, str, int], list[AclRow]] = {}
    for f in filters:
        for a in admin.describe_acls(f):
            found.setdefault((a.resource_type, a.name, a.pattern_type), []).append(a)
    principals = args.principal or [None]
    for principal in principals:
        if principal is not None:
            print(f"ACLs for principal `{principal}`")
        for (rtype, name, pt), rows in sorted(found.items()):
            shown = [a for a in rows if principal is None or a.principal == principal]
            if shown:
                print(_block(f"Current ACLs for resource `{_pattern(rtype, name, pt)}`", shown))
    return 0
