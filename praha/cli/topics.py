"""`praha topics create | list | describe`: Kafka's kafka-topics.sh, against ZooKeeper.

create validates everything before writing (name, partitions, replication factor against
live brokers, configs, manual assignments), writes the znodes, and by default waits until
every partition has a leader, printing progress.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from praha.cli.options import CliError, _key_value, add_cluster_options, zk_session_of
from praha.topic_rules import is_internal_topic

#: as kafka-topics: internal topics (__consumer_offsets) are shown unless excluded
EXCLUDE_INTERNAL_HELP = ("leave out internal topics (__consumer_offsets, __transaction_state); as kafka-topics, "
                         "they are shown by default")


def register(sub: Any) -> None:
    t = sub.add_parser("topics", help="create, list and describe topics").add_subparsers(dest="sub", required=True)

    p = t.add_parser("create", help="create a topic (the controller elects its leaders)")
    p.add_argument("--topic", required=True, help="name: ASCII letters, digits, '.', '_', '-'; at most 249 chars")
    p.add_argument("--partitions", type=int, help="number of partitions (default: the brokers' num.partitions, 1)")
    p.add_argument("--replication-factor", type=int,
                   help="replicas per partition (default 1; at most the live brokers)")
    p.add_argument("--config", type=_key_value, action="append", metavar="KEY=VALUE",
                   help="topic config override, repeatable (e.g. min.insync.replicas=2)")
    p.add_argument("--replica-assignment", metavar="1:2:3,2:3:1",
                   help="manual placement: partitions separated by ',', replicas by ':' (first is preferred leader)")
    p.add_argument("--if-not-exists", action="store_true", help="succeed quietly if the topic exists")
    p.add_argument("--no-wait", action="store_true", help="return once the znodes are written")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for leaders (default 60)")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_create)

    p = t.add_parser("list", help="list topics")
    p.add_argument("--exclude-internal", action="store_true", help=EXCLUDE_INTERNAL_HELP)
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_list)

    p = t.add_parser("describe", help="leader, epoch, ISR, replicas and offline replicas of every partition")
    p.add_argument("--topic", help="only this topic")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--under-replicated-partitions", action="store_true", help="only partitions with ISR < replicas")
    p.add_argument("--unavailable-partitions", action="store_true", help="only partitions without a live leader")
    p.add_argument("--exclude-internal", action="store_true", help=EXCLUDE_INTERNAL_HELP)
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_describe)

    from praha.cli.admin_tools import register_topic_commands  # delete, alter
    register_topic_commands(t)


def cmd_create(args: argparse.Namespace) -> int:
    from praha.admin.status import topics_status
    from praha.errors import TopicExistsError
    from praha.topic_rules import parse_replica_assignment
    from praha.zk.admin_zk import create_topic

    assignment = parse_replica_assignment(args.replica_assignment) if args.replica_assignment else None
    for option, value in (("number of partitions", args.partitions), ("replication factor", args.replication_factor)):
        if value is not None and value < 1:  # the API's -1 ("broker default") is not a CLI value, as kafka-topics
            raise CliError(f"{option} must be larger than 0, got {value}")
    with zk_session_of(args) as store:
        try:
            plan = create_topic(store, args.topic, args.partitions, args.replication_factor,
                                dict(args.config or []), assignment)
        except TopicExistsError:
            if args.if_not_exists:
                print(f"Topic {args.topic} already exists.")
                return 0
            raise
        n = len(plan.partitions)
        if args.no_wait:
            print(f"Created topic {args.topic} ({n} partitions); leaders are being elected.")
            return 0
        deadline = time.monotonic() + args.timeout
        led, shown = 0, -1
        while time.monotonic() < deadline:
            brokers, _ = store.get_live_brokers()
            parts = topics_status(store, set(brokers), []).get(args.topic, {}).get("partitions", [])
            led = sum(1 for p in parts if not p["offline"])
            if led == n:
                print(f"Created topic {args.topic} with {n} partitions, all with leaders.")
                return 0
            if led != shown:
                print(f"  {led}/{n} partitions have leaders", file=sys.stderr, flush=True)
                shown = led
            time.sleep(0.2)
    raise CliError(
        f"topic {args.topic} was created but only {led}/{n} partitions got a leader within {args.timeout:.0f}s"
    )


def cmd_list(args: argparse.Namespace) -> int:
    with zk_session_of(args) as store:
        marked = set(store.get_topics_marked_for_deletion())
        for t in store.get_all_topics():
            if args.exclude_internal and is_internal_topic(t):
                continue
            print(t + ("  (marked for deletion)" if t in marked else ""))
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    from praha.admin.status import topics_status

    with zk_session_of(args) as store:
        brokers, _ = store.get_live_brokers()
        problems: list[str] = []
        topics = topics_status(store, set(brokers), problems)
        controller = store.get_controller_id()
    if topics and brokers:
        from praha.admin.client_status import add_offline_dir_replicas

        # replicas in failed log dirs: only the controller's Metadata knows them (asked first,
        # then one other broker)
        order = sorted(brokers, key=lambda b: (b != controller, b))[:2]
        if not add_offline_dir_replicas(topics, [f"{brokers[b].host}:{brokers[b].port}" for b in order]):
            problems.append("no broker answered Metadata: replicas in failed log directories are not shown")
    if args.topic:
        if args.topic not in topics:
            raise CliError(f"unknown topic {args.topic!r}")
        topics = {args.topic: topics[args.topic]}
    if args.exclude_internal:
        topics = {name: info for name, info in topics.items() if not is_internal_topic(name)}
    for name, info in topics.items():
        info["internal"] = is_internal_topic(name)
    for info in topics.values():
        info["partitions"] = [
            p for p in info["partitions"]
            if (not args.under_replicated_partitions or p["under_replicated"])
            and (not args.unavailable_partitions or p["offline"])
        ]
    if args.json:
        print(json.dumps({"topics": topics, "problems": problems}, indent=2))
        return 0
    for name, info in topics.items():
        parts = info["partitions"]
        rf = len(parts[0]["replicas"]) if parts else 0
        mark = ""
        if info.get("marked_for_deletion"):
            waiting = info.get("deletion_waiting_for_brokers") or []
            mark = "  MARKED FOR DELETION" + (
                f" (waiting for brokers {','.join(map(str, waiting))} to come back)" if waiting else " (in progress)"
            )
        print(f"Topic: {name}\tPartitionCount: {len(parts)}\tReplicationFactor: {rf}{mark}")
        for p in parts:
            flags = []
            if p["offline"]:
                flags.append("OFFLINE")
            if p["under_replicated"]:
                flags.append("UNDER-REPLICATED")
            print(
                f"\tPartition: {p['partition']}\tLeader: {p['leader']}\tLeaderEpoch: {p['leader_epoch']}"
                f"\tReplicas: {','.join(map(str, p['replicas']))}\tIsr: {','.join(map(str, p['isr']))}"
                f"\tOffline: {','.join(map(str, p['offline_replicas']))}" + (f"\t{' '.join(flags)}" if flags else "")
            )
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 0
