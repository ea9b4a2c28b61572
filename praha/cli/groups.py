"""`praha groups`: Kafka's kafka-consumer-groups.sh, over the wire protocol.

  praha groups --list [--state [S,S...]] [--type [classic|consumer,...]]
  praha groups --describe (--group G ... | --all-groups) [--offsets | --members [--verbose] | --state]
  praha groups --reset-offsets (--group G ... | --all-groups) (--topic T[:P,P] ... | --all-topics)
        (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N
         | --to-datetime YYYY-MM-DDTHH:mm:SS.sss | --by-duration PnDTnHnMnS) [--dry-run | --execute]
  praha groups --delete (--group G ... | --all-groups)
  praha groups --delete-offsets --group G --topic T[:P,P] ...
  praha groups --share (--list | --describe (--group G ... | --all-groups))
  praha groups --share --reset-offsets --group G (--topic T[:P,P] ... | --all-topics)
        (--to-earliest | --to-latest | --to-offset N | --to-datetime ... | --by-duration ...) [--dry-run | --execute]
  praha groups --share --delete-offsets --group G --topic T ...
  every form takes --json, and --bootstrap-server, --zookeeper or --dir to name the cluster

One action per run, as Kafka's tool. Offsets are reset only while the group has no members
(state Empty, or Dead: a group that does not exist yet), with Kafka's refusal otherwise.
Option mistakes argparse can see exit 2 with the usage line; everything else that is
refused prints `error: ...` and exits 1.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from praha.cli.options import CliError, add_cluster_options, bootstrap_of, security_of, zk_session_of

if TYPE_CHECKING:
    from praha.admin.group_plans import ResetSpec
    from praha.admin.groups import GroupAdmin, GroupDescription
    from praha.common import TopicPartition

DESCRIPTION = """\
List, describe and delete consumer groups and reset or delete their committed offsets
(Kafka's kafka-consumer-groups). Exactly one action: --list, --describe, --reset-offsets,
--delete, --delete-offsets.

  --describe shows, per partition, the committed offset, the log end offset, the lag and
  the member that owns it (--offsets, the default); or the members (--members [--verbose]);
  or the group's coordinator, assignor, state and member count (--state).
  --reset-offsets plans new offsets for the partitions in scope (--topic T, --topic T:0,1 or
  --all-topics: the partitions the group has offsets for) and prints them; --execute
  commits them. Only a group without members can be reset. --to-offset and --shift-by
  are kept inside [earliest, latest] as Kafka does.
"""
EPILOG = """\
examples:
  praha groups --list --state
  praha groups --describe --group billing
  praha groups --reset-offsets --group billing --topic orders --to-earliest --execute
  praha groups --reset-offsets --group billing --topic orders:0,1 --shift-by -10 --dry-run
  praha groups --delete-offsets --group billing --topic orders
"""


def register(sub: Any) -> None:
    p = sub.add_parser("groups", help="list, describe, delete consumer groups; reset offsets (kafka-consumer-groups)",
                       description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_argument_group("action (exactly one)").add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="list the consumer groups of every broker")
    actions.add_argument("--describe", action="store_true",
                         help="partitions, offsets and lag of the group (or its members, or its state)")
    actions.add_argument("--reset-offsets", action="store_true",
                         help="reset the group's committed offsets (the group must have no members)")
    actions.add_argument("--delete", action="store_true", help="delete groups (their offsets and membership)")
    actions.add_argument("--delete-offsets", action="store_true",
                         help="delete the group's committed offsets of the given topics")

    g = p.add_argument_group("what to act on")
    g.add_argument("--group", action="append", metavar="GROUP", help="a consumer group; repeatable")
    g.add_argument("--all-groups", action="store_true", help="every consumer group (--describe, --delete, "
                                                             "--reset-offsets)")
    g.add_argument("--topic", action="append", metavar="TOPIC[:P,P]",
                   help="a topic, or some of its partitions (orders:0,2); repeatable (--reset-offsets, "
                        "--delete-offsets)")
    g.add_argument("--all-topics", action="store_true",
                   help="--reset-offsets: every partition the group has a committed offset for")

    d = p.add_argument_group("--describe and --list")
    d.add_argument("--offsets", action="store_true", help="per partition: offsets, lag, owner (the default)")
    d.add_argument("--members", action="store_true", help="the group's members and how many partitions each has")
    d.add_argument("--verbose", action="store_true", help="with --members: each member's partitions")
    d.add_argument("--type", nargs="*", metavar="TYPE",
                   help="--list: show each group's type, or only groups of these types (classic, consumer)")
    d.add_argument("--state", nargs="*", metavar="STATE",
                   help="--describe: the group's coordinator, assignor, state and member count; --list: show "
                        "each group's state, or only groups in these states (Stable,Empty or Stable Empty)")


    r = p.add_argument_group("--reset-offsets: the new offsets (exactly one)")
    modes = r.add_mutually_exclusive_group()
    modes.add_argument("--to-earliest", action="store_true", help="the log start offset")
    modes.add_argument("--to-latest", action="store_true", help="the log end offset")
    modes.add_argument("--to-current", action="store_true", help="the committed offset (log end where none)")
    modes.add_argument("--to-offset", type=int, metavar="N", help="offset N (kept within the log)")
    modes.add_argument("--shift-by", type=int, metavar="N", help="the committed offset plus N (N may be negative)")
    modes.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                       help="the first offset at or after this time (UTC unless a zone such as Z or +02:00 is given)")
    modes.add_argument("--by-duration", metavar="PnDTnHnMnS",
                       help="the first offset at or after now minus this ISO-8601 duration (e.g. PT1H, P1DT12H)")
    modes.add_argument("--from-file", metavar="FILE",
                       help="the offsets in this CSV file (topic,partition,offset lines for one --group, else "
                            "group,topic,partition,offset), as --export writes them; no --topic needed")
    r.add_argument("--export", action="store_true",
                   help="print the new offsets as CSV (for --from-file) instead of the table")
    run = r.add_mutually_exclusive_group()
    run.add_argument("--dry-run", action="store_true", help="only show the new offsets (the default)")
    run.add_argument("--execute", action="store_true", help="commit the new offsets")

    p.add_argument("--share", action="store_true",
                   help="share groups (KIP-932): --list lists only them; --describe shows their members and "
                        "assignments and, per share partition, the start offset, the lag and the records in "
                        "flight (from the durable share state in ZooKeeper: --zookeeper or --dir); "
                        "--reset-offsets sets the start offsets of a group without members (--to-earliest, "
                        "--to-latest, --to-offset, --to-datetime, --by-duration); --delete-offsets forgets "
                        "whole topics' share state"),
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default 10)")
    add_cluster_options(p)
    p.set_defaults(fn=cmd_groups)


# ----------------------------------------------------------------------------- checks
def check_options(args: argparse.Namespace) -> None:
    """Kafka's option rules (ConsumerGroupCommandOptions.checkArgs), before any I/O."""
    groups = args.group or []
    if args.group is not None and args.all_groups:
        raise CliError("Option --group is not valid with --all-groups")
    if args.describe:
        if not groups and not args.all_groups:
            raise CliError("Option --describe takes one of these options: --all-groups, --group")
        if sum([args.members, args.offsets, args.state is not None]) > 1:
            raise CliError("Option --describe takes at most one of these options: --members, --offsets, --state")
        if args.state:
            raise CliError("Option --describe does not take a value for --state")
    else:
        for flag, on in (("--members", args.members), ("--offsets", args.offsets), ("--verbose", args.verbose)):
            if on:
                raise CliError(f"Option {flag} is only valid with --describe")
        if args.state is not None and not args.list:
            raise CliError("Option --state is only valid with --describe or --list")
    if args.type is not None and not args.list:
        raise CliError("Option --type is only valid with --list")
    if args.share and not (args.list or args.describe or args.reset_offsets or args.delete_offsets):
        raise CliError("Option --share is only valid with --list, --describe, --reset-offsets or --delete-offsets")
    if args.share and args.reset_offsets and (_reset_mode(args) or "") in ("to_current", "shift_by", "from_file"):
        raise CliError("Option --reset-offsets of a share group takes --to-earliest, --to-latest, --to-offset, "
                       "--to-datetime or --by-duration")
    if args.verbose and not args.members:
        raise CliError("Option --verbose goes with --describe --members")
    if args.list and (groups or args.all_groups):
        raise CliError("Option --list does not take --group or --all-groups")
    if args.delete:
        if not groups and not args.all_groups:
            raise CliError("Option --delete takes one of these options: --all-groups, --group")
        if args.topic:
            raise CliError("The consumer does not support topic-specific offset deletion from a consumer group.")
    if args.delete_offsets:
        if len(groups) != 1 or not args.topic:
            raise CliError("Option --delete-offsets takes the following options: --group (exactly one), --topic")
    reset_opts = _reset_mode(args) is not None or args.dry_run or args.execute or args.all_topics
    if args.reset_offsets:
        if not groups and not args.all_groups:
            raise CliError("Option --reset-offsets takes one of these options: --all-groups, --group")
        if _reset_mode(args) is None:
            raise CliError("Option --reset-offsets requires one of the following scenarios: --to-earliest, "
                           "--to-latest, --to-current, --to-offset, --shift-by, --to-datetime, --by-duration, "
                           "--from-file")
        if not args.topic and not args.all_topics and not args.from_file:
            raise CliError("One of the reset scopes should be defined: --all-topics, --topic.")
        if args.topic and args.all_topics:
            raise CliError("Option --topic is not valid with --all-topics")
    elif reset_opts or args.export:
        raise CliError("Options --to-*, --shift-by, --by-duration, --from-file, --all-topics, --export, --dry-run "
                       "and --execute go with --reset-offsets")
    if args.type is not None and not args.list:
        raise CliError("Option --type is only valid with --list")
    if args.topic and not (args.reset_offsets or args.delete_offsets):
        raise CliError("Option --topic is only valid with --reset-offsets or --delete-offsets")
    for g in groups:
        if not g:
            raise CliError("a group id cannot be empty")


def _reset_mode(args: argparse.Namespace) -> str | None:
    for name in ("to_earliest", "to_latest", "to_current", "to_offset", "shift_by", "to_datetime", "by_duration",
                 "from_file"):
        value = getattr(args, name)
        if value not in (None, False):
            return name
    return None


def reset_spec(args: argparse.Namespace, now_ms: int) -> ResetSpec:
    """The reset scenario; dates and durations are parsed here (before any I/O)."""
    from praha.admin.group_plans import ResetMode, ResetSpec, parse_datetime_ms, parse_duration_ms

    name = _reset_mode(args)
    assert name is not None
    mode = ResetMode(name.replace("_", "-"))
    if mode is ResetMode.TO_OFFSET:
        return ResetSpec(mode, args.to_offset)
    if mode is ResetMode.SHIFT_BY:
        return ResetSpec(mode, args.shift_by)
    if mode is ResetMode.TO_DATETIME:
        return ResetSpec(mode, parse_datetime_ms(args.to_datetime))
    if mode is ResetMode.BY_DURATION:
        return ResetSpec(mode, now_ms - parse_duration_ms(args.by_duration))
    return ResetSpec(mode)


# ----------------------------------------------------------------------------- the command
def cmd_groups(args: argparse.Namespace) -> int:
    from praha.admin.group_plans import parse_states, parse_topic_arg
    from praha.admin.groups import GroupAdmin

    check_options(args)
    states = parse_states(args.state) if args.list and args.state else []
    scope = [parse_topic_arg(t) for t in args.topic or []]
    spec = reset_spec(args, int(time.time() * 1000)) if args.reset_offsets else None
    if args.reset_offsets and not args.dry_run and not args.execute and not args.json:
        print("WARN: No action will be performed as the --execute option is missing. Add --dry-run to say "
              "that a dry run is meant, or --execute to reset the offsets.", file=sys.stderr)
    if args.share and (args.reset_offsets or args.delete_offsets):
        return _share_offsets(args, scope, spec)
    if args.share:
        return _share(args, states)
    with GroupAdmin(bootstrap_of(args), timeout=args.timeout, security=security_of(args)) as admin:
        if args.list:
            return _list(admin, args, states)
        groups = _groups(admin, args)
        if args.describe:
            return _describe(admin, args, groups)
        if args.reset_offsets:
            assert spec is not None
            return _reset(admin, args, groups, scope, spec)
        if args.delete:
            return _delete(admin, args, groups)
        return _delete_offsets(admin, args, groups[0], scope)


def _share(args: argparse.Namespace, states: list[str]) -> int:
    """--share --list | --describe: share groups, their members and share partitions."""
    from praha.admin.share_groups import ShareGroupAdmin, share_state

    with ShareGroupAdmin(bootstrap_of(args), timeout=args.timeout, security=security_of(args)) as admin:
        if args.list:
            listed = admin.list_share_groups(states)
            _emit(args, {"groups": [{"group": g.group_id, "state": g.state, "type": "share"} for g in listed]},
                  [g.group_id for g in listed])
            return 0
        groups = [g.group_id for g in admin.list_share_groups()] if args.all_groups else list(args.group)
        described = admin.describe_share_groups(groups)
        offsets = admin.describe_share_group_offsets(groups)
    with zk_session_of(args) as zk:
        states_of = {g: share_state(zk.client, g) for g in groups}
    out: list[dict[str, Any]] = []
    lines: list[str] = []
    missing: list[str] = []
    for g in groups:
        d, snaps = described[g], states_of[g]
        if not d.exists and not snaps:
            missing.append(g)
            print(f"Error: Share group '{g}' does not exist.", file=sys.stderr)
            continue
        lags = {tp: o.lag for tp, o in (offsets.get(g) or {}).items()}
        parts: list[dict[str, Any]] = [{"topic": tp.topic, "partition": tp.partition, "start_offset": s.start_offset,
                  "lag": lags.get(tp, -1), "in_flight": s.in_flight()} for tp, s in sorted(snaps.items())]
        members: list[dict[str, Any]] = [{"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                                          "member_epoch": m.member_epoch,
                    "assignment": [{"topic": tp.topic, "partition": tp.partition} for tp in m.assignment]}
                   for m in d.members]
        out.append({"group": g, "state": d.state if d.exists else "Empty", "group_epoch": d.group_epoch,
                    "members": members, "partitions": parts})
        lines += ["", f"GROUP {g}  STATE {d.state if d.exists else 'Empty'}  MEMBERS {len(members)}",
                  f"{'TOPIC':<24} {'PARTITION':>9} {'START-OFFSET':>12} {'LAG':>9} {'IN-FLIGHT':>9}"]
        lines += [f"{p['topic']:<24} {p['partition']:>9} {p['start_offset']:>12} "
                  f"{p['lag'] if p['lag'] >= 0 else '-':>9} {p['in_flight']:>9}" for p in parts]
        lines += [f"{'MEMBER':<24} {'CLIENT-ID':<20} {'HOST':<16} {'EPOCH':>5}  PARTITIONS"]
        lines += [f"{m['member_id']:<24} {m['client_id']:<20} {m['host']:<16} {m['member_epoch']:>5}  "
                  + ",".join(f"{a['topic']}-{a['partition']}" for a in m["assignment"]) for m in members]
    _emit(args, {"groups": out}, lines)
    return 1 if missing else 0


def _share_offsets(args: argparse.Namespace, scope: list[tuple[str, list[int] | None]],
                   spec: ResetSpec | None) -> int:
    """--share --reset-offsets | --delete-offsets: a share group's start offsets (only while it
    has no members, as Kafka's kafka-share-groups)."""
    from praha.admin.group_plans import ResetMode
    from praha.admin.groups import error_message
    from praha.admin.share_groups import ShareGroupAdmin

    group = args.group[0] if args.group else ""
    if args.all_groups or len(args.group or []) != 1:
        raise CliError("Options --reset-offsets and --delete-offsets of a share group take exactly one --group")
    with ShareGroupAdmin(bootstrap_of(args), timeout=args.timeout, security=security_of(args)) as admin:
        d = admin.describe_share_groups([group])[group]
        if d.members:
            raise CliError(f"Share group '{group}' is not empty: it has {len(d.members)} members.")
        if args.delete_offsets:
            topics = [t for t, _ in scope]
            codes = admin.delete_share_group_offsets(group, topics)
            failed = {t: c for t, c in codes.items() if c}
            _emit(args, {"group": group, "topics": [{"topic": t, "error": error_message(c) if c else None}
                                                    for t, c in codes.items()]},
                  [f"{'TOPIC':<24} STATUS"] + [f"{t:<24} {error_message(c) if c else 'Successful'}"
                                                for t, c in codes.items()])
            return 1 if failed else 0
        assert spec is not None
        current = admin.describe_share_group_offsets([group]).get(group) or {}
        tps = sorted(tp for tp, o in current.items() if o.start_offset >= 0) if args.all_topics \
            else _scope(admin, args, scope, group, {})
        earliest = admin.earliest_offsets(tps) if tps else {}
        latest = admin.latest_offsets(tps) if tps else {}
        by_time = admin.offsets_for_time(tps, max(spec.value or 0, 0)) \
            if spec.mode in (ResetMode.TO_DATETIME, ResetMode.BY_DURATION) and tps else {}
        new: dict[TopicPartition, int] = {}
        for tp in tps:
            low, high = earliest.get(tp) or 0, latest.get(tp) or 0
            if spec.mode is ResetMode.TO_EARLIEST:
                new[tp] = low
            elif spec.mode is ResetMode.TO_LATEST:
                new[tp] = high
            elif spec.mode is ResetMode.TO_OFFSET:
                new[tp] = min(max(spec.value or 0, low), high)
            else:
                found = by_time.get(tp)
                new[tp] = high if found is None or found < 0 else found
        altered = admin.alter_share_group_offsets(group, new) if args.execute and new else {}
    rows = [{"topic": tp.topic, "partition": tp.partition, "new_offset": off,
             "error": error_message(altered[tp]) if altered.get(tp) else None} for tp, off in sorted(new.items())]
    _emit(args, {"group": group, "executed": bool(args.execute), "partitions": rows},
          [f"{'GROUP':<24} {'TOPIC':<24} {'PARTITION':>9} {'NEW-START-OFFSET':>16}"]
          + [f"{group:<24} {r['topic']:<24} {r['partition']:>9} {r['new_offset']:>16}"
             + (f"  {r['error']}" if r["error"] else "") for r in rows])
    return 1 if any(altered.values()) else 0


def _groups(admin: GroupAdmin, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        return [g.group_id for g in admin.list_groups()]
    return list(dict.fromkeys(args.group))


def _emit(args: argparse.Namespace, payload: Any, lines: list[str]) -> None:
    if args.json:
        print(json.dumps(payload, indent=2))
    else:
        for line in lines:
            print(line)


def _list(admin: GroupAdmin, args: argparse.Namespace, states: list[str]) -> int:
    from praha.admin.group_plans import list_table, parse_types

    types = parse_types(args.type) if args.type else []
    listed = admin.list_groups(states, types)
    payload = {"groups": [{"group": g.group_id, "state": g.state, "protocol_type": g.protocol_type,
                           **({"type": g.group_type} if args.type is not None else {})} for g in listed]}
    if args.state is not None or args.type is not None:  # Kafka's GROUP [TYPE] [STATE] table
        columns = (["TYPE"] if args.type is not None else []) + (["STATE"] if args.state is not None else [])
        lines = list_table([(g.group_id, *([(g.group_type or "unknown").capitalize()] if args.type is not None else []),
                             *([g.state or "Unknown"] if args.state is not None else [])) for g in listed], columns)
    else:
        lines = [g.group_id for g in listed]
    _emit(args, payload, lines)
    return 0


def _note_state(desc: GroupDescription, args: argparse.Namespace) -> None:
    """Kafka's remarks on a group that is empty or rebalancing (stderr)."""
    if args.json:
        return
    if desc.state == "Empty":
        print(f"\nConsumer group '{desc.group_id}' has no active members.", file=sys.stderr)
    elif desc.state in ("PreparingRebalance", "CompletingRebalance"):
        print(f"\nWarning: Consumer group '{desc.group_id}' is rebalancing.", file=sys.stderr)


def _describe(admin: GroupAdmin, args: argparse.Namespace, groups: list[str]) -> int:
    from praha.admin.group_plans import members_table, offsets_table, partition_rows, state_table
    descriptions = admin.describe_groups_of_any_type(groups)
    out: list[dict[str, Any]] = []
    lines: list[str] = []
    missing = [g for g in sorted(descriptions) if not descriptions[g].exists]
    for group in sorted(descriptions):
        desc = descriptions[group]
        if not desc.exists:  # Kafka goes on with the other groups, then the command fails
            if len(descriptions) > 1:
                print(f"Error: Consumer group '{group}' does not exist.", file=sys.stderr)
            continue
        _note_state(desc, args)
        base = {"group": group, "state": desc.state, "coordinator": {
            "id": desc.coordinator.id, "host": desc.coordinator.host, "port": desc.coordinator.port}}
        if args.state is not None:
            coordinator = f"{desc.coordinator.host}:{desc.coordinator.port}  ({desc.coordinator.id})"
            out.append({**base, "assignment_strategy": desc.assignment_strategy, "members": len(desc.members),
                        **({"group_epoch": desc.group_epoch, "target_assignment_epoch": desc.assignment_epoch}
                           if desc.group_epoch is not None else {})})
            lines += [""] + state_table(group, coordinator, desc.assignment_strategy, desc.state, len(desc.members))
        elif args.members:
            out.append({**base, "members": [{
                "consumer_id": m.member_id, "group_instance_id": m.group_instance_id, "host": m.host,
                "client_id": m.client_id, "partitions": len(m.assignment),
                "assignment": [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(m.assignment)],
                **({"member_epoch": m.member_epoch, "target_assignment": [
                    {"topic": tp.topic, "partition": tp.partition} for tp in sorted(m.target or ())]}
                   if m.member_epoch is not None else {})}
                for m in desc.members]})
            lines += [""] + members_table(group, desc.members, args.verbose, desc.assignment_epoch)
        else:
            committed = {tp: c.offset for tp, c in admin.committed_offsets(group).items()}
            tps = sorted(set(committed) | {tp for m in desc.members for tp in m.assignment})
            log_end = admin.latest_offsets(tps) if tps else {}
            rows = partition_rows(group, desc.members, committed, log_end)
            out.append({**base, "partitions": [r.as_json() for r in rows]})
            if rows:
                lines += [""] + offsets_table(rows)
    if out:
        _emit(args, out[0] if len(out) == 1 and len(groups) == 1 and not args.all_groups else {"groups": out},
              lines)
    if missing:
        raise CliError(f"Consumer group '{missing[0]}' does not exist." if len(descriptions) == 1 else
                       f"{len(missing)} of {len(descriptions)} consumer groups do not exist: "
                       + ", ".join(f"'{g}'" for g in missing))
    return 0


def _scope(admin: GroupAdmin, args: argparse.Namespace, scope: list[tuple[str, list[int] | None]],
           group: str, committed: dict[TopicPartition, int]) -> list[TopicPartition]:
    from praha.common import TopicPartition

    if args.all_topics:
        return sorted(committed)
    view = admin.cluster([t for t, _ in scope])
    out: list[TopicPartition] = []
    for topic, parts in scope:
        if topic in view.missing or topic not in view.leaders:
            raise CliError(f"Topic '{topic}' does not exist.")
        known = view.leaders[topic]
        for p in parts if parts is not None else sorted(known):
            if p not in known:
                raise CliError(f"Partition {topic}-{p} does not exist (topic {topic} has {len(known)} "
                               f"partition{'s' if len(known) != 1 else ''})")
            out.append(TopicPartition(topic, p))
    return sorted(set(out))


def _reset(admin: GroupAdmin, args: argparse.Namespace, groups: list[str],
           scope: list[tuple[str, list[int] | None]], spec: ResetSpec) -> int:
    from praha.admin.group_plans import INACTIVE_STATES, ResetMode, export_csv, parse_reset_csv, plan_reset, reset_table
    from praha.admin.groups import error_message

    single = args.group[0] if args.group and len(args.group) == 1 and not args.all_groups else None
    from_file = None
    if spec.mode is ResetMode.FROM_FILE:
        try:
            with open(args.from_file, encoding="utf-8") as f:
                from_file = parse_reset_csv(f.read(), single)
        except OSError as e:
            raise CliError(f"cannot read the reset file {args.from_file}: {e.strerror}") from None
    exported: dict[str, dict[TopicPartition, int]] = {}

    descriptions = admin.describe_groups(groups)
    for group in groups:  # refuse before changing anything, as a group at a time would not
        state = descriptions[group].state
        if state not in INACTIVE_STATES:
            raise CliError(f"Assignments can only be reset if the group '{group}' is inactive, but the current "
                           f"state is {state}.")
    results: list[dict[str, Any]] = []
    lines: list[str] = []
    for group in groups:
        committed = {tp: c.offset for tp, c in admin.committed_offsets(group).items()}
        requested = None
        if from_file is not None:
            requested = from_file.get(group)
            if requested is None:
                print(f"\nError: No reset plan for group {group} found", file=sys.stderr)
            tps = sorted(requested or {})
        else:
            tps = _scope(admin, args, scope, group, committed)
        earliest = admin.earliest_offsets(tps) if tps else {}
        latest = admin.latest_offsets(tps) if tps else {}
        by_time = admin.offsets_for_time(tps, max(spec.value, 0)) \
            if tps and spec.mode.uses_timestamp and spec.value is not None else None
        plan = plan_reset(spec, tps, committed, earliest, latest, by_time, requested)
        exported[group] = plan.offsets
        for w in plan.warnings:
            print(f"WARN: {w}", file=sys.stderr)
        failed: dict[TopicPartition, int] = {}
        if args.execute and plan.offsets:
            errors = admin.alter_offsets(group, plan.offsets)
            failed = {tp: code for tp, code in errors.items() if code != 0}
        results.append({"group": group, "state": descriptions[group].state, "executed": bool(args.execute),
                        "partitions": [{"topic": tp.topic, "partition": tp.partition, "current_offset":
                                        committed.get(tp), "new_offset": off,
                                        "error": error_message(failed[tp]) if tp in failed else None}
                                       for tp, off in sorted(plan.offsets.items())],
                        "warnings": plan.warnings})
        if plan.offsets:
            lines += [""] + reset_table(group, plan.offsets)
        elif not args.json and from_file is None:
            print(f"Nothing to reset: group '{group}' has no committed offsets.", file=sys.stderr)
        if failed:
            _emit(args, results[-1] if len(groups) == 1 else {"groups": results}, lines)
            tp, code = sorted(failed.items())[0]
            raise CliError(f"could not commit {len(failed)} of {len(plan.offsets)} offsets of group '{group}' "
                           f"(first: {tp}: {error_message(code)})")
    if args.export and not args.json:
        print(export_csv(exported, with_group=single is None))
        return 0
    _emit(args, results[0] if len(results) == 1 and not args.all_groups else {"groups": results}, lines)
    return 0


def _delete(admin: GroupAdmin, args: argparse.Namespace, groups: list[str]) -> int:
    from praha.admin.groups import error_message

    if not groups:
        _emit(args, {"deleted": [], "failed": {}}, ["No consumer groups to delete."])
        return 0
    codes = admin.delete_groups(groups)
    deleted = [g for g in groups if codes.get(g) == 0]
    failed = {g: error_message(codes.get(g, -1)) for g in groups if codes.get(g) != 0}
    lines: list[str] = []
    if not failed:
        lines.append("Deletion of requested consumer groups (" + ", ".join(f"'{g}'" for g in deleted)
                     + ") was successful.")
    else:
        lines.append("Deletion of some consumer groups failed:")
        lines += [f"* Group '{g}' could not be deleted due to: {m}" for g, m in failed.items()]
        if deleted:
            lines.append("These consumer groups were deleted successfully: " + ", ".join(f"'{g}'" for g in deleted))
    _emit(args, {"deleted": deleted, "failed": failed}, lines)
    if failed:
        g, m = next(iter(failed.items()))
        raise CliError(f"Group '{g}' could not be deleted: {m}" if len(failed) == 1
                       else f"{len(failed)} of {len(groups)} consumer groups could not be deleted")
    return 0


def _delete_offsets(admin: GroupAdmin, args: argparse.Namespace, group: str,
                    scope: list[tuple[str, list[int] | None]]) -> int:
    from praha.admin.group_plans import delete_offsets_table
    from praha.admin.groups import error_message
    from praha.common import TopicPartition
    from praha.errors import ErrorCode

    tps: list[TopicPartition] = []
    whole = [t for t, parts in scope if parts is None]
    view = admin.cluster(whole) if whole else None
    for topic, parts in scope:
        if parts is not None:
            tps += [TopicPartition(topic, p) for p in parts]
        elif view is not None and topic in view.leaders:
            tps += view.partitions(topic)
        else:
            raise CliError(f"Topic '{topic}' does not exist.")
    top, results = admin.delete_offsets(group, tps)
    statuses = {tp: None if code == 0 else error_message(code) for tp, code in results.items()}
    payload = {"group": group, "error": None if top == 0 else error_message(top), "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "error": statuses[tp]} for tp in sorted(statuses)]}
    topics_text = ", ".join(args.topic)
    if top == ErrorCode.GROUP_ID_NOT_FOUND:
        raise CliError(f"Consumer group '{group}' does not exist.")
    if top == ErrorCode.NON_EMPTY_GROUP:
        raise CliError(f"Deleting offsets of a consumer group '{group}' is forbidden if the group is not empty.")
    if top == ErrorCode.INVALID_GROUP_ID:
        raise CliError(f"'{group}' is not valid.")
    if top not in (0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        raise CliError(f"Encountered an unknown error: {error_message(top)}")
    partition_errors = [tp for tp, err in statuses.items() if err is not None]
    lines = [] if partition_errors else [f"Request succeed for deleting offsets with topic {topics_text} group {group}"]
    lines += [""] + delete_offsets_table(statuses)
    _emit(args, payload, lines)
    if partition_errors:
        tp = sorted(partition_errors)[0]
        raise CliError(f"could not delete the offsets of {len(partition_errors)} partition(s) of group '{group}' "
                       f"(first: {tp}: {statuses[tp]})")
    return 0
