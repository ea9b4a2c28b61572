"""kafka-delete-records, kafka-log-dirs, kafka-broker-api-versions and
kafka-leader-election: Kafka's options around praha's wire clients (DeleteRecords,
DescribeLogDirs, ApiVersions, ElectLeaders to the controller Metadata names)."""
from __future__ import annotations

import argparse
from pathlib import Path

from praha.cli.kafka_tools.base import KafkaToolParser, add_connection
from praha.errors import PrahaError


def run_delete_records(argv: list[str]) -> int:
    from praha.cli.records_tools import cmd_delete_records

    p = KafkaToolParser("kafka-delete-records", "This tool helps to delete records of the given partitions down "
                        "to the specified offset (Kafka's kafka-delete-records).\n\n"
                        'offset JSON file: {"partitions": [{"topic": "t", "partition": 0, "offset": 42}], '
                        '"version": 1}; offset -1 means the high watermark')
    add_connection(p)
    p.add_argument("--offset-json-file", required=True, type=Path, help="REQUIRED: the offset per partition")
    args = p.parse(argv)
    args.timeout = 30.0
    return int(cmd_delete_records(args))


def _id_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,2,3, got {text!r}") from None


def run_log_dirs(argv: list[str]) -> int:
    from praha.cli.records_tools import cmd_log_dirs

    p = KafkaToolParser("kafka-log-dirs", "This tool helps to query log directory usage on the specified brokers "
                        "(Kafka's kafka-log-dirs).")
    add_connection(p)
    p.add_argument("--describe", action="store_true", help="describe the specified log directories")
    p.add_argument("--broker-list", type=_id_list, help="brokers to query, e.g. 0,1,2 (default: all)")
    p.add_argument("--topic-list", default="", help="topics to query, e.g. t1,t2 (default: all)")
    args = p.parse(argv)
    if not args.describe:
        p.fail('Missing required argument "[describe]"')
    return int(cmd_log_dirs(args))


def run_broker_api_versions(argv: list[str]) -> int:
    from praha.admin.client_status import broker_api_versions
    from praha.cli.admin_tools import print_api_versions
    from praha.cli.options import security_of

    p = KafkaToolParser("kafka-broker-api-versions", "This tool helps to retrieve broker version information "
                        "(Kafka's kafka-broker-api-versions).")
    add_connection(p)
    args = p.parse(argv)
    return print_api_versions(broker_api_versions(args.bootstrap_server, security=security_of(args)))


def run_leader_election(argv: list[str]) -> int:
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.admin.leader_election import ELECTION_TYPES, elect_via_api, format_results, parse_election_json
    from praha.cli.options import security_of
    from praha.common import TopicPartition

    p = KafkaToolParser("kafka-leader-election", "This tool attempts to elect a new leader for a set of topic "
                        "partitions: preferred replicas, or any live replica of an offline partition (unclean) "
                        "(Kafka's kafka-leader-election).")
    add_connection(p, config_flag="--admin.config", required=False)
    p.add_argument("--election-type", type=str.lower, choices=["preferred", "unclean"],
                   help="REQUIRED: preferred (the first replica leads again) or unclean (an offline partition is "
                        "led by any live replica)")
    p.add_argument("--topic", help="the topic of the partition to elect for (with --partition)")
    p.add_argument("--partition", type=int, help="the partition (REQUIRED with --topic)")
    p.add_argument("--all-topic-partitions", action="store_true", help="every eligible partition")
    p.add_argument("--path-to-json-file", type=Path, help='{"partitions": [{"topic": "foo", "partition": 1}]}')
    args = p.parse(argv)
    missing = [o for o, v in (("bootstrap-server", args.bootstrap_server), ("election-type", args.election_type))
               if not v]
    if missing:
        raise PrahaError("Missing required option(s): " + ", ".join(missing))
    chosen = [o for o, v in (("all-topic-partitions", args.all_topic_partitions), ("topic", args.topic),
                             ("path-to-json-file", args.path_to_json_file)) if v]
    if len(chosen) != 1:
        raise PrahaError("One and only one of the following options is required: all-topic-partitions, topic, "
                         "path-to-json-file")
    if args.topic and args.partition is None:
        raise PrahaError("Missing required option(s): partition")
    if args.partition is not None and not args.topic:
        raise PrahaError("Option partition is only allowed if topic is used")
    partitions: set[TopicPartition] | None = None
    if args.topic:
        partitions = {TopicPartition(args.topic, args.partition)}
    elif args.path_to_json_file:
        try:
            partitions = parse_election_json(args.path_to_json_file.read_text())
        except OSError as e:
            raise PrahaError(f"cannot read {args.path_to_json_file}: {e.strerror}") from None
    security = security_of(args)
    with ClusterAdmin(args.bootstrap_server, security=security, client_id="kafka-leader-election") as admin:
        results = elect_via_api(admin.controller_locator(), partitions, 30.0, ELECTION_TYPES[args.election_type],
                                security)
    lines, failed = format_results(results, args.election_type.upper())
    print("\n".join(lines))
    if failed:
        raise PrahaError(f"{failed} replica(s) could not be elected")
    return 0
