"""kafka-topics: list, describe, create, delete topics and add partitions, over the admin
APIs (Metadata, CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
ListPartitionReassignments), with Kafka 3.9's options, output and exits."""
from __future__ import annotations

import argparse
import re

from praha.cli.kafka_tools.base import KafkaToolParser, add_connection
from praha.errors import PrahaError
from praha.topic_rules import is_internal_topic

DESCRIPTION = """\
Create, delete, describe, or change a topic (Kafka's kafka-topics, through the admin API).

examples:
  kafka-topics --bootstrap-server B --create --topic t --partitions 3 --replication-factor 3 --config k=v
  kafka-topics --bootstrap-server B --describe --topic t
  kafka-topics --bootstrap-server B --alter --topic t --partitions 6
  kafka-topics --bootstrap-server B --list --exclude-internal
"""
ACTIONS = ("create", "list", "alter", "describe", "delete")
#: --describe's partition reports, and what each shows
REPORTS = {"under_replicated_partitions": "partitions whose ISR is smaller than their replicas",
           "unavailable_partitions": "partitions whose leader is not available",
           "under_min_isr_partitions": "partitions whose ISR is smaller than min.insync.replicas",
           "at_min_isr_partitions": "partitions whose ISR equals min.insync.replicas"}


def parser() -> KafkaToolParser:
    p = KafkaToolParser("kafka-topics", DESCRIPTION)
    add_connection(p, required=False)
    for a in ACTIONS:
        p.add_argument(f"--{a}", action="store_true", help=f"{a} topics")
    p.add_argument("--topic", help="the topic to create, alter, describe or delete; a regular expression except "
                                   "for --create (--list and --describe: all topics without it)")
    p.add_argument("--topic-id", help="the topic id to describe")
    p.add_argument("--config", action="append", metavar="NAME=VALUE",
                   help="a topic config override for --create; repeatable")
    p.add_argument("--delete-config", metavar="NAME", help="not with --bootstrap-server (use kafka-configs)")
    p.add_argument("--partitions", type=int, metavar="N", help="partitions of a new topic, or the new total (--alter)")
    p.add_argument("--replication-factor", type=int, metavar="N", help="replicas per partition (--create)")
    p.add_argument("--replica-assignment", metavar="B1:B2,B3:B4",
                   help="manual assignment: partitions separated by ',', their replicas by ':'")
    for report, says in REPORTS.items():
        p.add_argument("--" + report.replace("_", "-"), action="store_true", help=f"--describe: only {says}")
    p.add_argument("--topics-with-overrides", action="store_true",
                   help="--describe: only topics with config overrides")
    p.add_argument("--if-exists", action="store_true", help="--alter, --delete, --describe: only if the topic exists")
    p.add_argument("--if-not-exists", action="store_true", help="--create: only if the topic does not exist")
    p.add_argument("--exclude-internal", action="store_true", help="--list, --describe: leave out internal topics")
    p.add_argument("--partition-size-limit-per-response", type=int, help="accepted, as Kafka's (no effect)")
    return p


def _can_only_go_with(p: KafkaToolParser, args: argparse.Namespace, option: str, actions: tuple[str, ...]) -> None:
    if getattr(args, option) in (None, False):
        return
    for a in ACTIONS:
        if getattr(args, a) and a not in actions:
            p.fail(f'Option "[{option.replace("_", "-")}]" can\'t be used with option "[{a}]"')


def check(p: KafkaToolParser, args: argparse.Namespace) -> str:
    actions = [a for a in ACTIONS if getattr(args, a)]
    if len(actions) != 1:
        p.fail("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    if not args.bootstrap_server:
        raise PrahaError("--bootstrap-server must be specified")
    action = actions[0]
    if action not in ("list", "describe") and not args.topic:
        p.fail('Missing required argument "[topic]"')
    if action == "alter":
        if args.config:
            p.fail('Option "[config]" can\'t be used with option "[alter]" (the kafka-configs CLI supports '
                   "altering topic configs with a --bootstrap-server option)")
        if args.partitions is None:
            p.fail('Missing required argument "[partitions]"')
    if args.delete_config:
        p.fail('Option "[delete-config]" can\'t be used with option "[bootstrap-server]"')
    _can_only_go_with(p, args, "config", ("create",))
    _can_only_go_with(p, args, "partitions", ("alter", "create"))
    _can_only_go_with(p, args, "replication_factor", ("create",))
    _can_only_go_with(p, args, "replica_assignment", ("alter", "create"))
    if action == "create" and args.replica_assignment:
        for other in ("partitions", "replication_factor"):
            if getattr(args, other) is not None:
                p.fail(f'Option "[replica-assignment]" can\'t be used with option "[{other.replace("_", "-")}]"')
    for report in [*REPORTS, "topics_with_overrides"]:
        _can_only_go_with(p, args, report, ("describe",))
    _can_only_go_with(p, args, "if_exists", ("alter", "delete", "describe"))
    _can_only_go_with(p, args, "if_not_exists", ("create",))
    _can_only_go_with(p, args, "exclude_internal", ("list", "describe"))
    return action


def _include(pattern: str | None) -> re.Pattern[str] | None:
    """Kafka's IncludeList: a Java regex, ',' meaning '|', surrounding quotes dropped."""
    if not pattern:
        return None
    text = pattern.strip().strip('"').strip("'").replace(",", "|")
    try:
        return re.compile(text)
    except re.error as e:
        raise PrahaError(f"Invalid topic pattern {pattern!r}: {e}") from None


def _matching(md: object, args: argparse.Namespace) -> list[str]:
    names = sorted(t.name for t in md.topics if t.error_code == 0)  # type: ignore[attr-defined]
    wanted = _include(args.topic)
    return [n for n in names
            if (wanted is None or wanted.fullmatch(n)) and not (args.exclude_internal and is_internal_topic(n))]


def run(argv: list[str]) -> int:
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.cli.options import security_of

    p = parser()
    args = p.parse(argv)
    action = check(p, args)
    with ClusterAdmin(args.bootstrap_server, security=security_of(args), client_id="kafka-topics") as admin:
        if action == "create":
            return _create(admin, args)
        md = admin.metadata(None)
        topics = _matching(md, args)
        if action != "list" and args.topic and not topics and not args.if_exists and not args.topic_id:
            raise PrahaError(f"Topic '{_optional(args.topic)}' does not exist as expected")
        if action == "list":
            print("\n".join(topics))  # an empty line when there is none, as Kafka's
            return 0
        if action == "delete":
            if topics:
                admin.delete_topics(topics)
            return 0
        if action == "alter":
            for name in topics:
                _alter(admin, md, name, args)
            return 0
        return _describe(admin, md, topics, args)


def _optional(value: str) -> str:
    """Kafka prints the topic of its error as Java's Optional does."""
    return f"Optional[{value}]"


def _create(admin: object, args: argparse.Namespace) -> int:
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.errors import ErrorCode

    assert isinstance(admin, ClusterAdmin)
    if args.replication_factor is not None and not 1 <= args.replication_factor <= 32767:
        raise PrahaError("The replication factor must be between 1 and 32767 inclusive")
    if args.partitions is not None and args.partitions < 1:
        raise PrahaError("The partitions must be greater than 0")
    configs: dict[str, str] = {}
    for item in args.config or []:
        parts = re.split(r"\s*=\s*", item)
        if len(parts) != 2:
            raise PrahaError('requirement failed: Invalid topic config: all configs to be added must be in the '
                             'format "key=val".')
        configs[parts[0].strip()] = parts[1].strip()
    assignment = _parse_assignment(args.replica_assignment) if args.replica_assignment else None
    if "." in args.topic or "_" in args.topic:
        print("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
              "collide. To avoid issues it is best to use either, but not both.")
    try:
        admin.create_topic(args.topic, args.partitions if args.partitions is not None else -1,
                           args.replication_factor if args.replication_factor is not None else -1, assignment, configs)
    except PrahaError as e:
        if not (e.code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists):
            raise
        return 0
    print(f"Created topic {args.topic}.")
    return 0


def _parse_assignment(text: str) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, item in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in item.split(":")]
        except ValueError:
            raise PrahaError(f'For input string: "{item}"') from None
        dupes = sorted({b for b in brokers if brokers.count(b) > 1})
        if dupes:
            raise PrahaError("Partition replica lists may not contain duplicate entries: " + ",".join(map(str, dupes)))
        if out and len(brokers) != len(out[0]):
            raise PrahaError(f"Partition {i} has different replication factor: {brokers}")
        out[i] = brokers
    return out


def _alter(admin: object, md: object, name: str, args: argparse.Namespace) -> None:
    from praha.admin.cluster_admin import ClusterAdmin

    assert isinstance(admin, ClusterAdmin)
    current = next(len(t.partitions) for t in md.topics if t.name == name)  # type: ignore[attr-defined]
    new = None
    if args.replica_assignment:
        parsed = _parse_assignment(args.replica_assignment)
        new = [parsed[i] for i in sorted(parsed) if i >= current]
    admin.create_partitions(name, args.partitions, new)


def _ids(values: object) -> str:
    return ",".join(str(v) for v in values)  # type: ignore[attr-defined]


def _describe(admin: object, md: object, topics: list[str], args: argparse.Namespace) -> int:
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.admin.configs import describe_all
    from praha.common import TopicPartition, topic_id_text
    from praha.config import ConfigSource

    assert isinstance(admin, ClusterAdmin)
    by_name = {t.name: t for t in md.topics}  # type: ignore[attr-defined]
    if args.topic_id:
        topics = [n for n, t in by_name.items() if topic_id_text(t.topic_id) == args.topic_id]
        if not topics and not args.if_exists:
            raise PrahaError(f"TopicId '{_optional(args.topic_id)}' does not exist as expected")
    live = {b.node_id for b in md.brokers}  # type: ignore[attr-defined]
    try:
        moving = admin.list_reassignments([TopicPartition(n, p.partition_index) for n in topics
                                           for p in by_name[n].partitions])
    except PrahaError:
        moving = {}  # as Kafka: reassignments unknown (unsupported, not authorised) are left out
    reports = [r for r in REPORTS if getattr(args, r)]
    for name in topics:
        t = by_name[name]
        configs = describe_all(args.bootstrap_server, "topics", name, security=admin.security)
        overrides = [c for c in configs if c.source != ConfigSource.DEFAULT_CONFIG]
        min_isr = int(next((c.value for c in configs if c.name == "min.insync.replicas" and c.value), "1"))
        parts = sorted(t.partitions, key=lambda p: p.partition_index)
        if not reports and (not args.topics_with_overrides or overrides) and parts:
            first = parts[0]
            ra = moving.get(TopicPartition(name, first.partition_index))
            rf = len(ra.replicas) - len(ra.adding) if ra else len(first.replica_nodes)
            text = topic_id_text(t.topic_id)  # Kafka's tool leaves the zero id out
            tid = f"\tTopicId: {text}" if text else ""
            print(f"Topic: {name}{tid}\tPartitionCount: {len(parts)}\tReplicationFactor: {rf}\tConfigs: "
                  + ",".join(f"{c.name}={c.value}" for c in overrides))
        if args.topics_with_overrides:
            continue
        for part in parts:
            has_leader = part.leader_id >= 0
            ra = moving.get(TopicPartition(name, part.partition_index))
            rf = len(ra.replicas) - len(ra.adding) if ra else len(part.replica_nodes)
            shown = not reports or any((
                args.under_replicated_partitions and rf > len(part.isr_nodes),
                args.unavailable_partitions and (not has_leader or part.leader_id not in live),
                args.under_min_isr_partitions and (not has_leader or len(part.isr_nodes) < min_isr),
                args.at_min_isr_partitions and len(part.isr_nodes) == min_isr))
            if not shown:
                continue
            line = (f"\tTopic: {name}\tPartition: {part.partition_index}"
                    f"\tLeader: {part.leader_id if has_leader else 'none'}"
                    f"\tReplicas: {_ids(part.replica_nodes)}\tIsr: {_ids(part.isr_nodes)}")
            if ra:
                line += f"\tAdding Replicas: {_ids(ra.adding)}\tRemoving Replicas: {_ids(ra.removing)}"
            print(line + "\tElr: N/A\tLastKnownElr: N/A")
    return 0
