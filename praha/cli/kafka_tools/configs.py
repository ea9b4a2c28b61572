"""kafka-configs: describe and alter topic and broker configs (DescribeConfigs,
IncrementalAlterConfigs), client quotas of users, client ids and IPs (Describe/
AlterClientQuotas) and users' SCRAM credentials (Describe/AlterUserScramCredentials), all
over the admin API, with Kafka 3.9's options and output."""
from __future__ import annotations

import argparse
import os
from decimal import Decimal

from praha.cli.kafka_tools.base import KafkaToolParser, add_connection
from praha.config import ConfigSource
from praha.errors import ErrorCode, PrahaError
from praha.zk.quota_entities import CLIENT_ID, IP, QUOTA_KEYS, USER, MatchType

DESCRIPTION = """\
Add/Remove entity config for a topic or broker, or describe it (Kafka's kafka-configs,
through the admin API).

examples:
  kafka-configs --bootstrap-server B --entity-type topics --entity-name t --alter --add-config retention.ms=60000
  kafka-configs --bootstrap-server B --entity-type topics --entity-name t --describe [--all]
  kafka-configs --bootstrap-server B --entity-type brokers --entity-default --alter --add-config log.cleaner.threads=2
  kafka-configs --bootstrap-server B --entity-type users --entity-name alice --alter \\
      --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]'
  kafka-configs --bootstrap-server B --entity-type users --entity-name alice --entity-type clients \\
      --entity-name c1 --alter --add-config producer_byte_rate=1048576
  kafka-configs --bootstrap-server B --entity-type clients --entity-default --describe
"""
ENTITY_TYPES = ("topics", "clients", "users", "brokers", "broker-loggers", "ips", "client-metrics")
#: the source a --describe without --all shows, per entity (Kafka's dynamic sources)
DYNAMIC_SOURCE = {"topics": ConfigSource.TOPIC_CONFIG, "brokers": ConfigSource.DYNAMIC_BROKER_CONFIG,
                  "<default>": ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG}
#: DescribeConfigs / IncrementalAlterConfigs resource types
RESOURCE_TYPE = {"topics": 2, "brokers": 4, "broker-loggers": 8}
#: client quota entity types, in the order Kafka names them ("user-principal 'u', client-id 'c'")
QUOTA_TYPE = {"users": USER, "clients": CLIENT_ID, "ips": IP}
QUOTA_LABEL = {USER: "user-principal", CLIENT_ID: "client-id", IP: "ip"}
#: the one quota an IP takes (Kafka's QuotaConfig.ipConfigs)
IP_CONNECTION_RATE = "connection_creation_rate"
#: shorthands, in the order Kafka appends them to --entity-type/--entity-name
SHORTHANDS = (("topic", "topics"), ("client", "clients"), ("user", "users"), ("broker", "brokers"),
              ("broker_logger", "broker-loggers"), ("ip", "ips"))
DEFAULT_SHORTHANDS = (("client_defaults", "clients"), ("user_defaults", "users"), ("broker_defaults", "brokers"),
                      ("ip_defaults", "ips"))
SET, DELETE = 0, 1


def parser() -> KafkaToolParser:
    p = KafkaToolParser("kafka-configs", DESCRIPTION)
    add_connection(p, required=False)
    p.add_argument("--zookeeper", help="not with praha's kafka-configs: use --bootstrap-server (or `praha configs "
                                       "--zookeeper` for ZooKeeper)")
    p.add_argument("--describe", action="store_true", help="list configs for the given entity")
    p.add_argument("--alter", action="store_true", help="alter the configuration for the entity")
    p.add_argument("--entity-type", action="append", choices=ENTITY_TYPES, help="type of entity")
    p.add_argument("--entity-name", action="append", dest="names",
                   help="name of entity (topic name, broker id, user principal, client id, IP)")
    p.add_argument("--entity-default", action="append_const", const="", dest="names",
                   help="the default entity (brokers, users, clients, ips)")
    p.add_argument("--topic", help="same as --entity-type topics --entity-name TOPIC")
    p.add_argument("--broker", help="same as --entity-type brokers --entity-name ID")
    p.add_argument("--user", help="same as --entity-type users --entity-name USER")
    p.add_argument("--client", help="same as --entity-type clients --entity-name CLIENT_ID")
    p.add_argument("--ip", help="same as --entity-type ips --entity-name IP")
    p.add_argument("--broker-logger", dest="broker_logger",
                   help="same as --entity-type broker-loggers --entity-name ID")
    p.add_argument("--broker-defaults", action="store_true", help="same as --entity-type brokers --entity-default")
    p.add_argument("--user-defaults", action="store_true", help="same as --entity-type users --entity-default")
    p.add_argument("--client-defaults", action="store_true", help="same as --entity-type clients --entity-default")
    p.add_argument("--ip-defaults", action="store_true", help="same as --entity-type ips --entity-default")
    p.add_argument("--add-config", metavar="k1=v1,k2=[v1,v2]", help="configs to set; brackets keep commas")
    p.add_argument("--add-config-file", metavar="FILE", help="a properties file of configs to set")
    p.add_argument("--delete-config", metavar="k1,k2", help="configs to remove")
    p.add_argument("--all", action="store_true", help="--describe: every config, not only the dynamic ones")
    p.add_argument("--force", action="store_true", help="accepted, as Kafka's")
    return p


def _entities(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Kafka's entity types and names: --entity-type's then the shorthands', in Kafka's
    order; names "" for a default (--entity-default, --user-defaults, ...)."""
    types = list(args.entity_type or [])
    names = list(args.names or [])
    for attr, kind in SHORTHANDS:
        if getattr(args, attr) is not None:
            types.append(kind)
            names.append(getattr(args, attr))
    for attr, kind in DEFAULT_SHORTHANDS:
        if getattr(args, attr):
            types.append(kind)
            names.append("")
    return types, names


def _entity(p: KafkaToolParser, args: argparse.Namespace, types: list[str], names: list[str]
            ) -> tuple[str, str | None]:
    """A topic or broker entity: (type, name; "" the brokers' default, None every one)."""
    if len(set(types)) != 1:
        raise PrahaError(f"Only one of --entity-type {','.join(sorted(set(types)))} may be given here: "
                         "users, clients and ips go together, topics and brokers alone")
    kind = types[0]
    if kind not in RESOURCE_TYPE:
        raise PrahaError(f"--entity-type {kind} is not served by praha's kafka-configs "
                         "(topics, brokers, broker-loggers, users, clients and ips are)")
    if len(names) > 1:
        p.fail("Only one of --entity-name or --entity-default may be given")
    if names and names[0] == "" and kind != "brokers":
        p.fail("--entity-default is only for --entity-type brokers, users, clients and ips")
    if args.alter and not names:
        p.fail(f"an entity name must be specified with --alter of {kind}")
    return kind, (names[0] if names else None)


def run(argv: list[str]) -> int:
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.cli.options import security_of

    p = parser()
    args = p.parse(argv)
    p.refuse_zookeeper(args.zookeeper, "praha configs")
    if args.describe == args.alter:
        p.fail("Command must include exactly one action: --describe, --alter")
    if not args.bootstrap_server:
        p.fail("One of the required --bootstrap-server or --zookeeper arguments must be specified")
    if args.describe and (args.add_config or args.delete_config or args.add_config_file):
        p.fail('Option "[add-config]" can\'t be used with option "[describe]"')
    if args.all and not args.describe:
        p.fail('Option "[all]" can\'t be used with option "[alter]"')
    types, names = _entities(args)
    if not types:
        p.fail("Must specify --entity-type when --entity-name is given" if names else "--entity-type must be specified")
    if len(names) > len(types):
        p.fail("An entity name must be specified with each --entity-type")
    security = security_of(args)
    if all(t in QUOTA_TYPE for t in types):
        if args.all:
            p.fail('Option "[all]" is for topics and brokers')
        with ClusterAdmin(args.bootstrap_server, security=security, client_id="kafka-configs") as admin:
            if args.describe:
                return _describe_quotas_and_users(admin, types, names)
            return _alter_quotas_or_users(p, admin, args, types, names)
    kind, name = _entity(p, args, types, names)
    if kind in ("brokers", "broker-loggers") and name and not name.isdigit():
        raise PrahaError(f"The entity name for {kind} must be a valid integer broker id, found: {name}")
    with ClusterAdmin(args.bootstrap_server, security=security, client_id="kafka-configs") as admin:
        if args.describe:
            return _describe(admin, args, kind, name)
        return _alter(admin, args, kind, name or "")


def _describe(admin: object, args: argparse.Namespace, kind: str, name: str | None) -> int:
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.admin.configs import describe_all

    assert isinstance(admin, ClusterAdmin)
    if name is not None:
        entities = [name]
    elif kind == "topics":
        entities = sorted(t.name for t in admin.metadata(None).topics if t.error_code == 0)
    else:
        entities = [str(b.node_id) for b in sorted(admin.metadata(()).brokers, key=lambda b: b.node_id)]
        entities += [""] if kind == "brokers" else []
    for entity in entities:
        source: ConfigSource | None
        if kind == "brokers" and entity == "":
            print(f"Default configs for {kind} in the cluster are:")
            source = DYNAMIC_SOURCE["<default>"]
        else:
            print(f"{'All' if args.all else 'Dynamic'} configs for {kind[:-1]} {entity} are:")
            source = DYNAMIC_SOURCE.get(kind)
        # a logger's level is always dynamic: every logger is shown
        lines = describe_all(args.bootstrap_server, kind, entity, security=admin.security,
                             sources=None if args.all or source is None else {source})
        for line in lines:
            print(line.render())
    return 0


def _alter(admin: object, args: argparse.Namespace, kind: str, name: str) -> int:
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.admin.configs import describe_all, parse_config_list
    from praha.security.client_properties import read_properties

    assert isinstance(admin, ClusterAdmin)
    add = parse_config_list(args.add_config or "")
    if args.add_config_file:
        add.update(read_properties(args.add_config_file))
    delete = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
    both = sorted(set(add) & set(delete))
    if both:
        raise PrahaError(f"Invalid config(s): {','.join(both)} cannot be both added and deleted")
    current = {c.name for c in describe_all(args.bootstrap_server, kind, name, security=admin.security)}
    missing = [k for k in delete if k not in current] if kind == "topics" else []
    if missing:
        raise PrahaError(f"Invalid config(s): {','.join(missing)}")
    broker = None
    if kind in ("brokers", "broker-loggers") and name:
        node = next((b for b in admin.metadata(()).brokers if str(b.node_id) == name), None)
        if node is None:
            raise PrahaError(f"broker {name} is not a live broker of the cluster")
        broker = (node.host, node.port)
    ops = [(k, SET, v) for k, v in add.items()] + [(k, DELETE, None) for k in delete]
    admin.alter_configs(RESOURCE_TYPE[kind], name, ops, broker)
    if name:
        print(f"Completed updating config for {kind[:-1]} {name}.")
    else:
        print(f"Completed updating default config for {kind} in the cluster.")
    return 0


# ------------------------------------------------------------------------------ users, clients, ips
def java_double(x: float) -> str:
    """A double as Java prints it (Kafka's tool prints quota values so): 1048576.0, 1.048576E7."""
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(float(x))
    d = Decimal(repr(float(x))).normalize()
    sign, digits, exponent = d.as_tuple()
    shift = len(digits) - 1
    mantissa = "".join(map(str, digits))
    text = mantissa[0] + "." + (mantissa[1:] or "0")
    return ("-" if sign else "") + f"{text}E{int(exponent) + shift}"


def _describe_quotas_and_users(admin: object, types: list[str], names: list[str]) -> int:
    """Kafka's describe of users/clients/ips: every matching entity's quotas (strict: only
    entities of exactly these types), then, for users alone and not their default, the
    SCRAM credentials of the named users (or of all)."""
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.protocol.scram import ScramMechanism

    assert isinstance(admin, ClusterAdmin)
    components = []
    for i, kind in enumerate(types):
        name = names[i] if i < len(names) else None
        match = MatchType.ANY if name is None else MatchType.DEFAULT if name == "" else MatchType.EXACT
        components.append((QUOTA_TYPE[kind], int(match), name or None))
    found = admin.describe_client_quotas(components, strict=True)
    order = {t: i for i, t in enumerate(QUOTA_LABEL)}
    for entity, values in sorted(found, key=lambda e: sorted((order[t], n or "") for t, n in e[0])):
        parts = sorted(entity, key=lambda tn: order[tn[0]])
        label = ", ".join(f"{QUOTA_LABEL[t]} '{n}'" if n is not None else f"the default {QUOTA_LABEL[t]}"
                          for t, n in parts)
        print(f"Quota configs for {label} are " + ", ".join(f"{k}={java_double(v)}" for k, v in sorted(values.items())))
    if "clients" not in types and "ips" not in types and "" not in names:
        for user, code, message, infos in admin.describe_scram(names):
            if code:
                print(f"Error retrieving SCRAM credential configs for user-principal '{user}': "
                      f"{_exception_name(code)}: {message or ''}")
                continue
            listed = ", ".join(f"{m.mechanism_name if (m := ScramMechanism.by_wire_id(mid)) else mid}"
                               f"=iterations={iterations}" for mid, iterations in infos)
            print(f"SCRAM credential configs for user-principal '{user}' are {listed}")
    return 0


def _exception_name(code: int) -> str:
    """Kafka's exception class for an error code: RESOURCE_NOT_FOUND → ResourceNotFoundException."""
    try:
        name = ErrorCode(code).name
    except ValueError:
        return f"KafkaException (error code {code})"
    return "".join(w.capitalize() for w in name.split("_")) + "Exception"


def _alter_quotas_or_users(p: KafkaToolParser, admin: object, args: argparse.Namespace, types: list[str],
                           names: list[str]) -> int:
    """Kafka's alter of users/clients/ips: quota keys through AlterClientQuotas, or (users
    only) SCRAM credentials through AlterUserScramCredentials, never both at once."""
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.admin.configs import parse_config_list
    from praha.cli.users import mechanism_of, parse_scram_specs, split_scram
    from praha.security.client_properties import read_properties

    assert isinstance(admin, ClusterAdmin)
    if len(names) != len(types):
        p.fail("An entity name or --entity-default must be specified with --alter of users, clients or ips")
    add = parse_config_list(args.add_config or "")
    if args.add_config_file:
        add.update(read_properties(args.add_config_file))
    delete = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
    scram_add, quota_add, scram_delete, quota_delete = split_scram(add, delete)
    if "ips" in types:
        unknown = sorted(k for k in [*add, *delete] if k != IP_CONNECTION_RATE)
        if unknown:
            raise PrahaError("Only connection quota configs can be added for 'ip' using --bootstrap-server. "
                             f"Unexpected config names: {','.join(unknown)}")
    unknown = sorted(k for k in [*quota_add, *quota_delete] if k not in QUOTA_KEYS | {IP_CONNECTION_RATE})
    if unknown:
        raise PrahaError(f"Only quota configs can be added for '{types[0]}' using --bootstrap-server. "
                         f"Unexpected config names: Set({', '.join(unknown)})")
    if (quota_add or quota_delete) and (scram_add or scram_delete):
        raise PrahaError("Cannot alter quota configs and SCRAM credentials in one command")
    if quota_add or quota_delete:
        ops: list[tuple[str, float | None]] = []
        for k, v in quota_add.items():
            try:
                ops.append((k, float(v)))
            except ValueError:
                raise PrahaError(f"Cannot parse quota configuration value for {k}: {v}") from None
        ops += [(k, None) for k in quota_delete]
        admin.alter_client_quotas([(QUOTA_TYPE[t], n or None) for t, n in zip(types, names)], ops)
    elif scram_add or scram_delete:
        if types != ["users"] or names[0] == "":
            raise PrahaError("SCRAM credentials are altered for one named user (--entity-type users --entity-name U)")
        user = names[0]
        specs = parse_scram_specs(scram_add)
        upserts = []
        for mechanism, (password, iterations) in specs.items():
            salt = os.urandom(32)
            upserts.append((user, mechanism.wire_id, iterations, salt,
                            mechanism.salted_password(password, salt, iterations)))
        deletions = [(user, mechanism_of(k).wire_id) for k in scram_delete]
        admin.alter_scram(upserts, deletions)
    else:
        p.fail("At least one of --add-config, --add-config-file or --delete-config must be specified with --alter")
    if names[0]:
        print(f"Completed updating config for {types[0][:-1]} {names[0]}.")
    else:
        print(f"Completed updating default config for {types[0]} in the cluster.")
    return 0

