"""kafka-reassign-partitions over the admin API, as Kafka 3.9's tool with
`--bootstrap-server`: --generate (Metadata and praha's placement), --execute
(AlterPartitionReassignments; --throttle through IncrementalAlterConfigs), --verify
(ListPartitionReassignments and Metadata; throttles removed when all are done), --cancel,
--list. The JSON files and the printed lines are Kafka's."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from praha.cli.kafka_tools.base import KafkaToolParser, add_connection
from praha.common import TopicPartition
from praha.errors import PrahaError

DESCRIPTION = """\
This tool helps to move topic partitions between replicas (Kafka's
kafka-reassign-partitions, through the admin API).

  --generate --topics-to-move-json-file F --broker-list 1,2,3    propose a placement (changes nothing)
  --execute --reassignment-json-file F [--throttle BYTES/S] [--additional]
  --verify --reassignment-json-file F [--preserve-throttles]
  --cancel --reassignment-json-file F [--preserve-throttles]
  --list
"""
ACTIONS = ("generate", "execute", "verify", "cancel", "list")
TOPICS, BROKERS = 2, 4
SET, DELETE = 0, 1


def parser() -> KafkaToolParser:
    p = KafkaToolParser("kafka-reassign-partitions", DESCRIPTION)
    add_connection(p, required=False)
    for a in ACTIONS:
        p.add_argument(f"--{a}", action="store_true", help=f"{a} (see above)")
    p.add_argument("--reassignment-json-file", type=Path, help='{"version":1,"partitions":[{"topic":"t",'
                                                               '"partition":0,"replicas":[1,2]}]}')
    p.add_argument("--topics-to-move-json-file", type=Path, help='{"version":1,"topics":[{"topic":"t"}]}')
    p.add_argument("--broker-list", help="--generate: the brokers to place the topics on, e.g. 1,2,3")
    p.add_argument("--disable-rack-aware", action="store_true", help="accepted (praha's placement ignores racks)")
    p.add_argument("--throttle", type=int, default=-1, metavar="BYTES/S",
                   help="--execute: limit the moving replicas' replication traffic")
    p.add_argument("--replica-alter-log-dirs-throttle", type=int, default=-1, metavar="BYTES/S",
                   help="--execute: limit moves between log dirs (replica.alter.log.dirs.io.max.bytes.per.second "
                        "of the brokers involved)")
    p.add_argument("--timeout", type=int, default=10000,
                   help="ms to wait for a replica placed in a log dir to exist (default 10000)")
    p.add_argument("--additional", action="store_true", help="--execute while other reassignments are in flight")
    p.add_argument("--preserve-throttles", action="store_true", help="--verify, --cancel: keep the throttles")
    return p


def _read(path: Path | None, flag: str, p: KafkaToolParser) -> str:
    if path is None:
        p.fail(f'Missing required argument "[{flag}]"')
    try:
        return path.read_text()
    except OSError as e:
        raise PrahaError(f"cannot read {path}: {e.strerror}") from None


def run(argv: list[str]) -> int:
    from praha.admin.cluster_admin import ClusterAdmin
    from praha.cli.options import security_of

    p = parser()
    args = p.parse(argv)
    actions = [a for a in ACTIONS if getattr(args, a)]
    if len(actions) != 1:
        p.fail("Command must include exactly one action: --generate, --execute, --verify, --cancel, --list")
    if not args.bootstrap_server:
        p.fail("Please specify --bootstrap-server")
    with ClusterAdmin(args.bootstrap_server, security=security_of(args), timeout=max(args.timeout, 1000) / 1000,
                      client_id="kafka-reassign-partitions") as admin:
        return RUN[actions[0]](p, admin, args)


def _assignments(admin: Any, topics: list[str] | None) -> tuple[dict[TopicPartition, tuple[int, ...]], Any]:
    md = admin.metadata(topics)
    current = {TopicPartition(t.name, q.partition_index): tuple(q.replica_nodes)
               for t in md.topics if t.error_code == 0 for q in t.partitions}
    return current, md


def _generate(p: KafkaToolParser, admin: Any, args: argparse.Namespace) -> int:
    from praha.admin.reassign import format_plan, parse_broker_list, parse_topics_to_move, propose
    from praha.common import ReplicaAssignment, TopicAssignment

    topics = parse_topics_to_move(_read(args.topics_to_move_json_file, "topics-to-move-json-file", p))
    if not args.broker_list:
        p.fail('Missing required argument "[broker-list]"')
    brokers = parse_broker_list(args.broker_list)
    md = admin.metadata(topics)
    assignments = {t.name: TopicAssignment({q.partition_index: ReplicaAssignment(tuple(q.replica_nodes))
                                            for q in t.partitions}) for t in md.topics if t.error_code == 0}
    current, proposed = propose(assignments, topics, brokers, {b.node_id for b in md.brokers})
    print(f"Current partition replica assignment\n{format_plan(current)}\n")
    print(f"Proposed partition reassignment configuration\n{format_plan(proposed)}")
    return 0


def _execute(p: KafkaToolParser, admin: Any, args: argparse.Namespace) -> int:
    from praha.admin.reassign import format_plan, parse_log_dirs, parse_plan, throttle_settings

    text = _read(args.reassignment_json_file, "reassignment-json-file", p)
    plan = parse_plan(text)
    current, md = _assignments(admin, sorted({tp.topic for tp in plan}))
    unknown = sorted(tp for tp in plan if tp not in current)
    if unknown:
        raise PrahaError("Topic " + ", ".join(sorted({tp.topic for tp in unknown})) + " not found."
                         if any(t.error_code for t in md.topics) else
                         f"Unable to find partition {unknown[0]}")
    live = {b.node_id for b in md.brokers}
    dead = sorted({b for r in plan.values() for b in r} - live)
    if dead:
        raise PrahaError(f"Unknown broker id(s) {','.join(map(str, dead))}")
    if admin.list_reassignments() and not args.additional:
        raise PrahaError("Cannot execute because there is an existing partition assignment.  Use --additional to "
                         "override this and create a new partition assignment in addition to the existing one.")
    before = {tp: current[tp] for tp in plan}
    print(f"Current partition replica assignment\n\n{format_plan(before)}\n\n"
          "Save this to use as the --reassignment-json-file option during rollback")
    if args.throttle >= 0:
        topics, brokers = throttle_settings(before, dict(plan))
        for topic, (leader, follower) in topics.items():
            admin.alter_configs(TOPICS, topic, [("leader.replication.throttled.replicas", SET, leader),
                                                ("follower.replication.throttled.replicas", SET, follower)])
        _broker_configs(admin, md, brokers, [("leader.replication.throttled.rate", SET, str(args.throttle)),
                                             ("follower.replication.throttled.rate", SET, str(args.throttle))])
        print("Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
              "throttle is removed.")
        print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
    log_dirs = parse_log_dirs(text)
    if log_dirs and args.replica_alter_log_dirs_throttle >= 0:
        _broker_configs(admin, md, sorted({b for _, b in log_dirs}),
                        [("replica.alter.log.dirs.io.max.bytes.per.second", SET,
                          str(args.replica_alter_log_dirs_throttle))])
        print(f"The replica-alter-dir throttle limit was set to {args.replica_alter_log_dirs_throttle} B/s")
    refused = admin.alter_reassignments(plan)
    started = sorted(tp for tp in plan if tp not in refused)
    if started:
        print(f"Successfully started partition reassignment{'s' if len(started) > 1 else ''} for "
              + ",".join(map(str, started)))
    if refused:
        raise PrahaError("Error reassigning partition(s):\n" + "\n".join(
            f"{tp}: {e}" for tp, e in sorted(refused.items())))
    if log_dirs:  # each replica placed in its named dir once it exists (AlterReplicaLogDirs)
        from praha.cli.admin_tools import start_log_dir_moves

        start_log_dir_moves({b.node_id: (b.host, b.port) for b in md.brokers}, log_dirs, args.timeout / 1000.0,
                            admin.security)
    return 0


def _broker_configs(admin: Any, md: Any, brokers: list[int], ops: list[tuple[str, int, str | None]]) -> None:
    nodes = {b.node_id: (b.host, b.port) for b in md.brokers}
    for b in brokers:
        if b in nodes:
            admin.alter_configs(BROKERS, str(b), ops, nodes[b])


def _verify(p: KafkaToolParser, admin: Any, args: argparse.Namespace) -> int:
    from praha.admin.reassign import parse_plan

    plan = parse_plan(_read(args.reassignment_json_file, "reassignment-json-file", p))
    current, md = _assignments(admin, sorted({tp.topic for tp in plan}))
    moving = admin.list_reassignments(list(plan))
    print("Status of partition reassignment:")
    done = True
    for tp in sorted(plan):
        if tp in moving:
            done = False
            print(f"Reassignment of partition {tp} is still in progress.")
        elif current.get(tp) == tuple(plan[tp]):
            print(f"Reassignment of partition {tp} is complete.")
        else:
            done = False
            have = ",".join(map(str, current.get(tp, ())))
            print(f"There is no active reassignment of partition {tp}, but replica set is {have} rather than "
                  f"{','.join(map(str, plan[tp]))}.")
    if done and not args.preserve_throttles:
        _clear_throttles(admin, md, sorted({tp.topic for tp in plan}))
    return 0


def _clear_throttles(admin: Any, md: Any, topics: list[str]) -> None:
    brokers = sorted(b.node_id for b in md.brokers)
    _broker_configs(admin, md, brokers, [("leader.replication.throttled.rate", DELETE, None),
                                         ("follower.replication.throttled.rate", DELETE, None),
                                         ("replica.alter.log.dirs.io.max.bytes.per.second", DELETE, None)])
    print(f"\nClearing broker-level throttles on brokers {','.join(map(str, brokers))}")
    for t in topics:
        admin.alter_configs(TOPICS, t, [("leader.replication.throttled.replicas", DELETE, None),
                                        ("follower.replication.throttled.replicas", DELETE, None)])
    print(f"Clearing topic-level throttles on topic{'s' if len(topics) > 1 else ''} {','.join(topics)}")


def _cancel(p: KafkaToolParser, admin: Any, args: argparse.Namespace) -> int:
    from praha.admin.reassign import cancel_via_api, parse_plan
    from praha.errors import ErrorCode

    plan = parse_plan(_read(args.reassignment_json_file, "reassignment-json-file", p))
    results = cancel_via_api(admin.controller_locator(), sorted(plan), args.timeout / 1000, admin.security)
    cancelled = sorted(tp for tp, (code, _) in results.items() if code == ErrorCode.NONE)
    errors = {tp: msg or str(code) for tp, (code, msg) in results.items()
              if code not in (ErrorCode.NONE, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)}
    if cancelled:
        print("Successfully cancelled partition reassignments for: " + ",".join(map(str, cancelled)))
    else:
        print("None of the specified partition reassignments are active.")
    if errors:
        raise PrahaError("Error cancelling partition reassignment(s):\n"
                         + "\n".join(f"{tp}: {m}" for tp, m in sorted(errors.items())))
    if not args.preserve_throttles:
        _, md = _assignments(admin, sorted({tp.topic for tp in plan}))
        _clear_throttles(admin, md, sorted({tp.topic for tp in plan}))
    return 0


def _list(p: KafkaToolParser, admin: Any, args: argparse.Namespace) -> int:
    moving = admin.list_reassignments()
    if not moving:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for tp, r in sorted(moving.items()):
        print(f"{tp}: replicas: {','.join(map(str, r.replicas))}. adding: {','.join(map(str, r.adding))}. "
              f"removing: {','.join(map(str, r.removing))}.")
    return 0


#: each action's function
RUN = {"generate": _generate, "execute": _execute, "verify": _verify, "cancel": _cancel, "list": _list}
