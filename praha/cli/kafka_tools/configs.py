"""kafka-configs: describe and alter topic and broker configs over the admin API
(DescribeConfigs, IncrementalAlterConfigs), with Kafka 3.9's options and output; client
and user quotas and SCRAM credentials are `praha configs`' (through ZooKeeper)."""
from __future__ import annotations

import argparse

from praha.cli.kafka_tools.base import KafkaToolParser, add_connection
from praha.config import ConfigSource
from praha.errors import PrahaError

DESCRIPTION = """\
Add/Remove entity config for a topic or broker, or describe it (Kafka's kafka-configs,
through the admin API).

examples:
  kafka-configs --bootstrap-server B --entity-type topics --entity-name t --alter --add-config retention.ms=60000
  kafka-configs --bootstrap-server B --entity-type topics --entity-name t --describe [--all]
  kafka-configs --bootstrap-server B --entity-type brokers --entity-default --alter --add-config log.cleaner.threads=2
"""
ENTITY_TYPES = ("topics", "clients", "users", "brokers", "broker-loggers", "ips", "client-metrics")
#: the source a --describe without --all shows, per entity (Kafka's dynamic sources)
DYNAMIC_SOURCE = {"topics": ConfigSource.TOPIC_CONFIG, "brokers": ConfigSource.DYNAMIC_BROKER_CONFIG,
                  "<default>": ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG}
#: DescribeConfigs / IncrementalAlterConfigs resource types
RESOURCE_TYPE = {"topics": 2, "brokers": 4}
SET, DELETE = 0, 1


def parser() -> KafkaToolParser:
    p = KafkaToolParser("kafka-configs", DESCRIPTION)
    add_connection(p, required=False)
    p.add_argument("--zookeeper", help="not with praha's kafka-configs: use --bootstrap-server (or `praha configs "
                                       "--zookeeper` for ZooKeeper)")
    p.add_argument("--describe", action="store_true", help="list configs for the given entity")
    p.add_argument("--alter", action="store_true", help="alter the configuration for the entity")
    p.add_argument("--entity-type", action="append", choices=ENTITY_TYPES, help="type of entity")
    p.add_argument("--entity-name", action="append", help="name of entity (topic name, broker id)")
    p.add_argument("--entity-default", action="store_true", help="the default of every broker")
    p.add_argument("--topic", help="same as --entity-type topics --entity-name TOPIC")
    p.add_argument("--broker", help="same as --entity-type brokers --entity-name ID")
    p.add_argument("--broker-defaults", action="store_true", help="same as --entity-type brokers --entity-default")
    p.add_argument("--add-config", metavar="k1=v1,k2=[v1,v2]", help="configs to set; brackets keep commas")
    p.add_argument("--add-config-file", metavar="FILE", help="a properties file of configs to set")
    p.add_argument("--delete-config", metavar="k1,k2", help="configs to remove")
    p.add_argument("--all", action="store_true", help="--describe: every config, not only the dynamic ones")
    p.add_argument("--force", action="store_true", help="accepted, as Kafka's")
    return p


def _entity(p: KafkaToolParser, args: argparse.Namespace) -> tuple[str, str | None]:
    """(entity type, name; None for brokers' default and for "every topic/broker")."""
    types = list(args.entity_type or [])
    names = list(args.entity_name or [])
    if args.topic is not None:
        types, names = types + ["topics"], names + [args.topic]
    if args.broker is not None:
        types, names = types + ["brokers"], names + [args.broker]
    default = args.entity_default or args.broker_defaults
    if args.broker_defaults:
        types.append("brokers")
    if not types:
        p.fail("Must specify --entity-type when --entity-name is given" if names else "--entity-type must be specified")
    if len(set(types)) != 1:
        raise PrahaError(f"Only one of --entity-type {','.join(sorted(set(types)))} may be given here: "
                         "users and clients together are `praha configs`")
    kind = types[0]
    if kind not in RESOURCE_TYPE:
        raise PrahaError(f"--entity-type {kind}: praha's kafka-configs alters topics and brokers; client and user "
                         "quotas and SCRAM credentials are `praha configs`")
    if len(names) > 1 or (names and default):
        p.fail("Only one of --entity-name or --entity-default may be given")
    if default and kind != "brokers":
        p.fail("--entity-default is only for --entity-type brokers here")
    if args.alter and not names and not default:
        p.fail("an entity name must be specified with --alter of topics")
    return kind, (names[0] if names else ("" if default else None))


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
    kind, name = _entity(p, args)
    if kind == "brokers" and name and not name.isdigit():
        raise PrahaError(f"The entity name for brokers must be a valid integer broker id, found: {name}")
    security = security_of(args)
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
        entities = [str(b.node_id) for b in sorted(admin.metadata(()).brokers, key=lambda b: b.node_id)] + [""]
    for entity in entities:
        if kind == "brokers" and entity == "":
            print(f"Default configs for {kind} in the cluster are:")
            source = DYNAMIC_SOURCE["<default>"]
        else:
            print(f"{'All' if args.all else 'Dynamic'} configs for {kind[:-1]} {entity} are:")
            source = DYNAMIC_SOURCE[kind]
        lines = describe_all(args.bootstrap_server, kind, entity, security=admin.security,
                             sources=None if args.all else {source})
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
    if kind == "brokers" and name:
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
