"""Operator tools: Kafka's kafka-topics.sh --delete/--alter, kafka-reassign-partitions.sh
and kafka-leader-election.sh, against a praha cluster's ZooKeeper.

  praha topics delete --topic T [--if-exists] [--wait]
  praha topics alter --topic T --partitions N [--replica-assignment 1:2,2:3,...] [--no-wait]
  praha reassign generate --topics-to-move-json-file F --broker-list 1,2,3
  praha reassign execute --reassignment-json-file F [--throttle BYTES_PER_SEC]
  praha reassign verify --reassignment-json-file F [--preserve-throttles]
  praha reassign cancel [--reassignment-json-file F] [--preserve-throttles]
  praha reassign list
  praha elect-leaders --election-type preferred|unclean
        (--all-topic-partitions | --topic T [--partition P] | --path-to-json-file F) [--via-zookeeper]
  praha configs --entity-type topics|brokers (--entity-name N | --entity-default)
        (--describe [--all] | --alter [--add-config k=v,...] [--delete-config k,...])
  praha configs --entity-type clients|users (--entity-name N | --entity-default)
        [--entity-type clients (--entity-name N | --entity-default)]
        (--describe | --alter [--add-config producer_byte_rate=N,...] [--delete-config k,...])
  praha configs --entity-type users --entity-name U --alter \
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=P]' | --delete-config SCRAM-SHA-512

Each command parses and checks all its input before writing anything; a refusal prints
`error: ...` and exits 1. Output and JSON files follow Kafka's tools. Writes go to
ZooKeeper as Kafka's tools did in ZooKeeper mode; cancel and (by default) elect-leaders
talk to the active controller (AlterPartitionReassignments, ElectLeaders), whose address
ZooKeeper gives.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from praha.cli.options import CliError, add_cluster_options, zk_session_of

if TYPE_CHECKING:
    from praha.admin.client_status import BrokerApis
    from praha.admin.reassign import LogDirPlan, PartitionProgress
    from praha.protocol.client_security import ClientSecurity
    from praha.zk.store import ZkStore


# ------------------------------------------------------------------------------ registration
def register_topic_commands(t: Any) -> None:
    """`praha topics delete|alter` (called from praha.cli.topics.register)."""
    p = t.add_parser("delete", help="mark a topic for deletion (the controller deletes it)")
    p.add_argument("--topic", required=True, help="the topic to delete")
    p.add_argument("--if-exists", action="store_true", help="succeed quietly if the topic does not exist")
    p.add_argument("--wait", action="store_true", help="wait until the topic is gone")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait with --wait (default 60)")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_topics_delete)

    p = t.add_parser("alter", help="add partitions to a topic (the count can only grow)")
    p.add_argument("--topic", required=True, help="the topic to grow")
    p.add_argument("--partitions", type=int, required=True, help="the new total number of partitions")
    p.add_argument("--replica-assignment", metavar="1:2:3,2:3:1",
                   help="manual placement of the new partitions (or of all, as Kafka 2.x: the existing "
                        "ones are then ignored); partitions separated by ',', replicas by ':'")
    p.add_argument("--if-exists", action="store_true", help="succeed quietly if the topic does not exist")
    p.add_argument("--no-wait", action="store_true", help="return once the znode is written")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for leaders (default 60)")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_topics_alter)


def register(sub: Any) -> None:
    """`praha reassign ...`, `praha elect-leaders`, `praha configs`, `praha api-versions`."""
    p = sub.add_parser("api-versions", help="the API versions every live broker serves (kafka-broker-api-versions)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_cluster_options(p)
    p.set_defaults(fn=cmd_api_versions)

    r = sub.add_parser("reassign", help="move partition replicas between brokers (kafka-reassign-partitions)"
                       ).add_subparsers(dest="sub", required=True)
    p = r.add_parser("generate", help="propose a placement of the given topics on the given brokers (writes nothing)")
    p.add_argument("--topics-to-move-json-file", type=Path, required=True,
                   help='{"version":1,"topics":[{"topic":"foo"},...]}')
    p.add_argument("--broker-list", required=True, help="target brokers, e.g. 1,2,3")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_reassign_generate)

    p = r.add_parser("execute", help="start the reassignment in a JSON plan")
    p.add_argument("--reassignment-json-file", type=Path, required=True,
                   help='{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,3]},...]}')
    p.add_argument("--throttle", type=_positive_int, metavar="BYTES_PER_SEC",
                   help="limit replication traffic of the moving replicas (removed by verify when done)")
    add_cluster_options(p, bootstrap=False)
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds to wait for replicas given a log dir to be created (default 10)")
    p.set_defaults(fn=cmd_reassign_execute)

    p = r.add_parser("verify", help="status of each partition of a plan; removes throttles when all are done")
    p.add_argument("--reassignment-json-file", type=Path, required=True, help="the plan given to execute")
    p.add_argument("--preserve-throttles", action="store_true", help="keep the throttle configs")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_reassign_verify)

    p = r.add_parser("cancel", help="cancel reassignments in flight (the plan's, or all) via the controller")
    p.add_argument("--reassignment-json-file", type=Path, help="only the partitions of this plan")
    p.add_argument("--preserve-throttles", action="store_true", help="keep the throttle configs")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the controller (default 30)")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_reassign_cancel)

    p = r.add_parser("list", help="reassignments in flight and their progress")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_reassign_list)

    p = sub.add_parser("elect-leaders", help="move leadership back to preferred replicas, or bring offline "
                                             "partitions back (kafka-leader-election)")
    p.add_argument("--election-type", required=True, type=str.lower, choices=["preferred", "unclean"],
                   help="preferred: the first replica of each partition leads again; unclean: an offline "
                        "partition is led by any live replica, even one out of sync (its missing records are lost)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    g.add_argument("--topic", help="every partition of this topic (or --partition)")
    g.add_argument("--path-to-json-file", type=Path, help='{"partitions":[{"topic":"foo","partition":1},...]}')
    p.add_argument("--partition", type=int, help="with --topic: only this partition")
    p.add_argument("--via-zookeeper", action="store_true",
                   help="write /admin/preferred_replica_election instead of calling the controller's ElectLeaders")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the election (default 30)")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_elect_leaders)

    p = sub.add_parser("configs", help="show or change topic, broker and client quota configs while the "
                                       "cluster runs (kafka-configs)")
    p.add_argument("--entity-type", required=True, action="append", choices=["topics", "brokers", "clients", "users"],
                   help="what to configure; users and clients may be given together (a user's quota for one "
                        "client id)")
    p.add_argument("--entity-name", dest="entity_names", action="append", metavar="NAME",
                   help="the topic, broker id, client id or user (one per --entity-type, in order)")
    p.add_argument("--entity-default", dest="entity_names", action="append_const", const=None,
                   help="brokers: the default for every broker; clients/users: the default client id or user")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--describe", action="store_true", help="print the entity's config overrides (or quotas)")
    g.add_argument("--alter", action="store_true", help="change them (brokers apply the change at once)")
    p.add_argument("--all", action="store_true",
                   help="with --describe, topics and brokers: every config with its value, source and synonyms")
    p.add_argument("--add-config", default="", metavar="k1=v1,k2=[a,b]",
                   help="configs to set; square brackets keep commas inside a value")
    p.add_argument("--delete-config", default="", metavar="k1,k2", help="configs to remove")
    add_cluster_options(p)
    p.set_defaults(fn=cmd_configs)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes per second, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"the throttle must be positive, got {value}")
    return value


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise CliError(f"cannot read the {what} {path}: {e.strerror or e}") from None


def _session(args: argparse.Namespace) -> AbstractContextManager[ZkStore]:
    return zk_session_of(args)


# ------------------------------------------------------------------------------ topics
def cmd_topics_delete(args: argparse.Namespace) -> int:
    from praha.errors import UnknownTopicError
    from praha.zk import znodes as zn
    from praha.zk.admin_zk import delete_topic

    with _session(args) as store:
        try:
            delete_topic(store, args.topic)
        except UnknownTopicError:
            if args.if_exists:
                return 0
            raise
        print(f"Topic {args.topic} is marked for deletion.")
        print("Note: This will have no impact if delete.topic.enable is not set to true.")
        if not args.wait:
            return 0
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            if store.exists(zn.topic_path(args.topic)) is None:
                print(f"Topic {args.topic} is deleted.")
                return 0
            time.sleep(0.2)
    raise CliError(f"topic {args.topic} is marked for deletion but still exists after {args.timeout:.0f}s "
                   "(`praha topics describe` shows it; the controller deletes it when all its replicas can go)")


def cmd_topics_alter(args: argparse.Namespace) -> int:
    from praha.errors import UnknownTopicError
    from praha.topic_rules import parse_replica_assignment
    from praha.zk.admin_zk import add_partitions, partitions_with_leaders

    given = None
    if args.replica_assignment:
        parsed = parse_replica_assignment(args.replica_assignment)
        given = [parsed[p] for p in sorted(parsed)]
    with _session(args) as store:
        try:
            added = add_partitions(store, args.topic, args.partitions, given)
        except UnknownTopicError:
            if args.if_exists:
                return 0
            raise
        print("WARNING: If partitions are increased for a topic that has a key, the partition logic "
              "or ordering of the messages will be affected")
        print("Adding partitions succeeded!")
        if args.no_wait:
            return 0
        deadline = time.monotonic() + args.timeout
        led, shown = set(), -1
        while time.monotonic() < deadline:
            led = partitions_with_leaders(store, args.topic, added)
            if len(led) == len(added):
                print(f"Topic {args.topic} now has {args.partitions} partitions, all with leaders.")
                return 0
            if len(led) != shown:
                print(f"  {len(led)}/{len(added)} new partitions have leaders", file=sys.stderr, flush=True)
                shown = len(led)
            time.sleep(0.2)
    raise CliError(f"partitions were added to {args.topic} but only {len(led)}/{len(added)} new ones got a leader "
                   f"within {args.timeout:.0f}s")


# ------------------------------------------------------------------------------ reassign
def cmd_reassign_generate(args: argparse.Namespace) -> int:
    from praha.admin.reassign import format_plan, generate, parse_broker_list, parse_topics_to_move

    topics = parse_topics_to_move(_read(args.topics_to_move_json_file, "topics-to-move file"))
    brokers = parse_broker_list(args.broker_list)
    with _session(args) as store:
        current, proposed = generate(store, topics, brokers)
    print(f"Current partition replica assignment\n{format_plan(current)}\n")
    print(f"Proposed partition reassignment configuration\n{format_plan(proposed)}")
    return 0


def cmd_reassign_execute(args: argparse.Namespace) -> int:
    from praha.admin.reassign import execute, format_plan, parse_log_dirs, parse_plan

    text = _read(args.reassignment_json_file, "reassignment file")
    plan = parse_plan(text)
    log_dirs = parse_log_dirs(text)
    throttle = args.throttle if args.throttle is not None else -1
    with _session(args) as store:
        result = execute(store, plan, throttle)
        live, _ = store.get_live_brokers() if log_dirs else ({}, {})
    print(f"Current partition replica assignment\n\n{format_plan(result.current)}\n\n"
          "Save this to use as the --reassignment-json-file option during rollback")
    if throttle >= 0:
        print("Warning: You must run --verify periodically, until the reassignment completes, "
              "to ensure the throttle is removed.")
        print(f"The inter-broker throttle limit was set to {throttle} B/s")
    tps = sorted(plan)
    print(f"Successfully started partition reassignment{'s' if len(tps) > 1 else ''} for "
          + ",".join(map(str, tps)))
    if log_dirs:
        start_log_dir_moves({b: (i.host, i.port) for b, i in live.items()}, log_dirs, args.timeout)
    return 0


def start_log_dir_moves(brokers: dict[int, tuple[str, int]], log_dirs: LogDirPlan, timeout: float,
                        security: ClientSecurity | None = None) -> None:
    """AlterReplicaLogDirs for the replicas a reassignment places in a named log dir, with
    Kafka's lines: the moves started, then a refusal naming each that failed."""
    from praha.admin.records import alter_replica_log_dirs
    from praha.protocol.client_security import PLAINTEXT

    outcome = alter_replica_log_dirs(brokers, log_dirs, timeout, security or PLAINTEXT)
    started = sorted(k for k, err in outcome.items() if err is None)
    if started:
        print(f"Successfully started log directory move{'s' if len(started) > 1 else ''} for: "
              + ",".join(f"{tp}-{b}" for tp, b in started))
    failed = sorted((k, err) for k, err in outcome.items() if err is not None)
    if failed:
        raise CliError("Failed to move the log directory of: "
                       + ", ".join(f"{tp} on broker {b} ({err})" for (tp, b), err in failed))


def _progress_detail(p: PartitionProgress) -> str:
    waiting = p.not_in_isr
    if not waiting:
        return ""
    text = f" Not yet in the ISR: {','.join(map(str, waiting))}"
    if p.leader >= 0:
        hw = f", high watermark {p.leader_offset}" if p.leader_offset is not None else ""
        text += f" (leader {p.leader}{hw})"
    behind = []
    for b in waiting:
        at = p.replica_offsets.get(b)
        if at is not None:
            lag = f", {max(p.leader_offset - at, 0)} behind" if p.leader_offset is not None else ""
            behind.append(f"{b} at offset {at}{lag}")
    if behind:
        text += "; " + "; ".join(behind)
    return text + "."


def cmd_reassign_verify(args: argparse.Namespace) -> int:
    from praha.admin.reassign import parse_plan, verify

    plan = parse_plan(_read(args.reassignment_json_file, "reassignment file"))
    with _session(args) as store:
        result = verify(store, plan, preserve_throttles=args.preserve_throttles)
    print("Status of partition reassignment:")
    for tp, p in sorted(result.partitions.items()):
        if p.state == "complete":
            print(f"Reassignment of partition {tp} is complete.")
        elif p.state == "in_progress":
            print(f"Reassignment of partition {tp} is still in progress.{_progress_detail(p)}")
        else:
            print(f"There is no active reassignment of partition {tp}, but replica set is "
                  f"{','.join(map(str, p.replicas))} rather than {','.join(map(str, p.target))}.")
    if result.cleared_brokers or result.cleared_topics:
        print()
    if result.cleared_brokers:
        print(f"Clearing broker-level throttles on brokers {','.join(map(str, result.cleared_brokers))}")
    if result.cleared_topics:
        print(f"Clearing topic-level throttles on topic{'s' if len(result.cleared_topics) > 1 else ''} "
              + ",".join(result.cleared_topics))
    return 0


def cmd_reassign_cancel(args: argparse.Namespace) -> int:
    from praha.admin.controller_api import zk_locator
    from praha.admin.reassign import cancel, parse_plan

    tps = None
    if args.reassignment_json_file is not None:
        tps = sorted(parse_plan(_read(args.reassignment_json_file, "reassignment file")))
    with _session(args) as store:
        result = cancel(store, zk_locator(store), tps, args.preserve_throttles, args.timeout)
    if result.cancelled:
        print("Successfully cancelled partition reassignments for: " + ",".join(map(str, result.cancelled)))
    elif not result.errors:
        print("None of the specified partition reassignments are active." if tps is not None
              else "No partition reassignments found.")
    for tp, message in sorted(result.errors.items()):
        print(f"Error cancelling partition reassignment for {tp}: {message}")
    if result.cleared_brokers:
        print(f"Clearing broker-level throttles on brokers {','.join(map(str, result.cleared_brokers))}")
    if result.cleared_topics:
        print(f"Clearing topic-level throttles on topic{'s' if len(result.cleared_topics) > 1 else ''} "
              + ",".join(result.cleared_topics))
    if result.errors:
        raise CliError(f"{len(result.errors)} partition reassignment(s) could not be cancelled")
    return 0


def cmd_reassign_list(args: argparse.Namespace) -> int:
    from praha.admin.reassign import progress

    with _session(args) as store:
        ongoing = progress(store, None)
    if not ongoing:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for tp, p in sorted(ongoing.items()):
        waiting = p.not_in_isr
        print(f"{tp}: replicas: {','.join(map(str, p.replicas))}. adding: {','.join(map(str, p.adding))}. "
              f"removing: {','.join(map(str, p.removing))}."
              + (f" not yet in the ISR: {','.join(map(str, waiting))}." if waiting else ""))
    return 0


# ------------------------------------------------------------------------------ elect-leaders
def cmd_elect_leaders(args: argparse.Namespace) -> int:
    from praha.admin.controller_api import zk_locator
    from praha.admin.leader_election import (
        ELECTION_TYPES,
        elect_via_api,
        elect_via_zookeeper,
        format_results,
        parse_election_json,
        resolve_partitions,
    )

    if args.election_type != "preferred" and args.via_zookeeper:
        raise CliError("--via-zookeeper elects preferred leaders only (ZooKeeper's admin znode has no unclean "
                       "elections); drop it for --election-type unclean")
    if args.partition is not None and args.topic is None:
        raise CliError("--partition needs --topic")
    from_file = parse_election_json(_read(args.path_to_json_file, "election file")) if args.path_to_json_file else None
    with _session(args) as store:
        partitions = resolve_partitions(store, args.all_topic_partitions, args.topic, args.partition, from_file)
        if args.via_zookeeper:
            results = elect_via_zookeeper(store, partitions, args.timeout)
        else:
            results = elect_via_api(zk_locator(store), None if args.all_topic_partitions else partitions,
                                    args.timeout, ELECTION_TYPES[args.election_type])
    lines, failed = format_results(results, args.election_type.upper())
    for line in lines:
        print(line)
    if failed:
        raise CliError(f"{failed} replica(s) could not be elected")
    return 0


# ------------------------------------------------------------------------------ api-versions
def cmd_api_versions(args: argparse.Namespace) -> int:
    """Kafka's layout: one block per broker, every API this tool knows, with the range the
    broker serves and the version both sides would use, or UNSUPPORTED."""
    from praha.admin.client_status import broker_api_versions
    from praha.cli.options import bootstrap_of, security_of
    from praha.protocol.api_keys import ApiKey

    brokers = broker_api_versions(bootstrap_of(args), security=security_of(args))
    if args.json:
        print(json.dumps([{"id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack, "error": b.error,
                           "apis": {ApiKey(k).api_name: {"min": lo, "max": hi}
                                    for k, (lo, hi) in sorted(b.versions.items()) if k in ApiKey._value2member_map_}}
                          for b in brokers], indent=2))
        return 0 if all(b.error is None for b in brokers) else 1
    return print_api_versions(brokers)


def print_api_versions(brokers: list[BrokerApis]) -> int:
    """kafka-broker-api-versions' listing; 1 if a broker could not be asked."""
    from praha.protocol.api_keys import ApiKey
    from praha.protocol.registry import APIS

    for b in brokers:
        print(f"{b.host}:{b.port} (id: {b.broker_id} rack: {b.rack or 'null'}) -> (")
        if b.error is not None:
            print(f"\t{b.error}\n)")
            continue
        lines = []
        for key in ApiKey:
            served = b.versions.get(key)
            if served is None:
                lines.append(f"\t{key.api_name}({int(key)}): UNSUPPORTED")
                continue
            ours = APIS.get(key)
            usable = min(served[1], ours.max_version) if ours is not None else None
            lines.append(f"\t{key.api_name}({int(key)}): {served[0]} to {served[1]}"
                         + (f" [usable: {usable}]" if usable is not None else ""))
        print(",\n".join(lines) + "\n)")
    return 0 if all(b.error is None for b in brokers) else 1


# ------------------------------------------------------------------------------ configs
def cmd_configs(args: argparse.Namespace) -> int:
    from praha.admin.configs import parse_config_list

    types: list[str] = args.entity_type
    names: list[str | None] = args.entity_names or []
    if args.describe and (args.add_config or args.delete_config):
        raise CliError("--add-config and --delete-config go with --alter")
    if args.all and not args.describe:
        raise CliError("--all goes with --describe")
    if args.bootstrap_server and not args.all:
        raise CliError("--bootstrap-server goes with --describe --all; the other forms write and read "
                       "ZooKeeper (--zookeeper or --dir)")
    add = parse_config_list(args.add_config) if args.alter else {}
    delete = [k.strip() for k in args.delete_config.split(",") if k.strip()]
    if types == ["users"]:  # SCRAM credentials beside the user's quotas (cli/users.py)
        from praha.cli.users import split_scram, user_scram_configs

        scram_add, add, scram_delete, delete = split_scram(add, delete)
        if scram_add or scram_delete or args.describe:
            if len(names) != 1 or names[0] is None:
                raise CliError("SCRAM credentials need one --entity-name USER")
            if args.describe:
                rc = _configs_quotas(args, types, names, add, delete)
                return rc or user_scram_configs(args, names[0], {}, [], describe=True)
            user_scram_configs(args, names[0], scram_add, scram_delete)
            if not add and not delete:
                return 0
    if set(types) & {"clients", "users"}:
        return _configs_quotas(args, types, names, add, delete)
    if len(types) != 1:
        raise CliError("only users and clients may be given together; one --entity-type for topics or brokers")
    if len(names) != 1:
        raise CliError("give one of --entity-name and --entity-default")
    if names[0] is None and types[0] != "brokers":
        raise CliError("--entity-default is for --entity-type brokers, clients and users")
    if args.all:
        return _configs_describe_all(args, types[0], names[0])
    return _configs_topics_brokers(args, types[0], names[0], add, delete)


def _configs_topics_brokers(args: argparse.Namespace, entity_type: str, entity_name: str | None,
                            add: dict[str, str], delete: list[str]) -> int:
    from praha.admin.configs import alter, describe
    from praha.zk.znodes import DEFAULT_BROKER_ENTITY

    name = DEFAULT_BROKER_ENTITY if entity_name is None else entity_name
    label = f"{entity_type.rstrip('s')} {name}" if entity_name is not None else "the default of every broker"
    if args.describe:
        with _session(args) as store:
            config = describe(store, entity_type, name)
        print(f"Dynamic configs for {label} are:")
        for key in sorted(config):
            print(f"  {key}={config[key]}")
        return 0
    with _session(args) as store:
        alter(store, entity_type, name, add, delete)
    print(f"Completed updating config for {label}.")
    return 0


def _configs_describe_all(args: argparse.Namespace, entity_type: str, entity_name: str | None) -> int:
    """kafka-configs --describe --all: what the brokers report, every config with its source."""
    from praha.admin.configs import describe_all
    from praha.cli.options import bootstrap_of

    lines = describe_all(bootstrap_of(args), entity_type, entity_name or "")
    if entity_name is None:
        print(f"Default configs for {entity_type} in the cluster are:")
    else:
        print(f"All configs for {entity_type.rstrip('s')} {entity_name} are:")
    for line in lines:
        print(line.render())
    return 0


def _configs_quotas(args: argparse.Namespace, types: list[str], names: list[str | None],
                    add: dict[str, str], delete: list[str]) -> int:
    """kafka-configs for client quotas: `Quota configs for client-id 'c' are k=v, ...`."""
    from praha.admin.configs import alter_quotas, describe_quotas

    if args.all:
        raise CliError("--all is for topics and brokers")
    if args.describe:
        with _session(args) as store:
            found = describe_quotas(store, types, names)
        for entity, values in sorted(found.items(), key=lambda item: item[0].entity_path):
            print(f"Quota configs for {entity.describe()} are "
                  + ", ".join(f"{k}={v}" for k, v in sorted(values.items())))
        return 0
    with _session(args) as store:
        alter_quotas(store, types, names, add, delete)
    head, name = types[0], names[0] if names else None
    if name is not None:
        print(f"Completed updating config for {head.rstrip('s')} {name}.")
    else:
        print(f"Completed updating default config for {head} in the cluster.")
    return 0
