"""`praha chaos`: one chaos campaign against a cluster it starts itself.

  praha chaos --brokers N --faults K [--seed S] [--zk-ensemble 3] [--kinds kill,pause,...]
              [--group-members 3] [--netns] [--secure] [--workload queue|txn|share] [--dir D] [--json]
  praha chaos check HISTORY     re-check a saved queue history (JSON lines; format and
                                anomalies in praha/chaos/history.py); exit 1 on any anomaly
  praha chaos check DIR         re-judge a saved campaign directory: its history.jsonl (if
                                any) and every id its data topics hold twice, each judged
                                by the batches of its copies in the replicas' segment files
                                (two producer epochs: the client's resend); exit 1 on any
  praha chaos cleanup           remove what campaigns killed from outside left behind: their
                                processes, tmpfs log dirs, namespaces and nftables rules
                                (praha/chaos/leftovers.py; each campaign also does it first)

With --netns (root only) every ZooKeeper server and broker runs in a network namespace of
its own (198.18.<k>.<n> on a bridge praha makes and removes), which adds the network faults
partition, one_way and flaky_link. With --workload txn transactional clients (confluent-kafka
and kafka-python processes: producers committing and aborting, read_committed and
read_uncommitted consumers, a consume-transform-produce stage) run beside the queue workload,
their history (history.jsonl) is checked for Jepsen's anomalies, and long_pause (a broker and
a transactional producer SIGSTOPped past the transaction timeout) joins the faults; the JSON
line then also has committed_txns, aborted_txns, polled and anomalies. With --workload share a
share group (KIP-932: four ShareConsumer processes on a two-partition topic, one SIGKILLed every
~15 s) runs beside the queue workload and is judged by praha/chaos/share_invariants.py: every
record delivered, then acknowledged once or archived, never delivered after its acknowledgement,
delivery counts within the limit; the JSON line then also has share_violations. With --secure the
cluster is a secure one (as `praha cluster up --secure`: SASL_SSL with SCRAM-SHA-512 for
clients, mutual TLS between brokers, ACLs on, ZooKeeper logged in to and its tree protected)
and every client of the campaign logs in: producers, readers and the consume-transform-produce
stage as principals of their own with only the ACLs they need (praha/chaos/principals.py), the
harness's checks as the cluster's admin.

Progress goes to stderr, the readable summary to stdout; with --json the last line of
stdout is one JSON object (faults, acked, lost, duplicated, divergent_offsets,
dual_controller_acceptances, violations, ...). Exit code 0 when no invariant was
violated, 1 otherwise (2 for bad arguments). The seed is printed first; the same seed
replays the same fault schedule.
"""
from __future__ import annotations

import argparse
import json
import logging
import signal
from pathlib import Path
from typing import Any

from praha.chaos.config import ALL_KINDS, WORKLOADS, CampaignConfig, new_seed
from praha.cli.options import at_least


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in ALL_KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(f"unknown fault kinds {unknown}; choose from {','.join(ALL_KINDS)}")
    return kinds


_positive = at_least(0)


def register(sub: Any) -> None:
    p = sub.add_parser("chaos", help="run a chaos campaign (faults + workload + invariant checks)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("check", nargs="*", metavar="check HISTORY|DIR | cleanup",
                   help="instead of a campaign: check the queue history in the file HISTORY, re-judge a saved "
                        "campaign directory DIR (its history and the records stored twice), or remove what killed "
                        "campaigns left behind")
    p.add_argument("--brokers", type=int, default=5, help="brokers to start (3-5; default 5)")
    p.add_argument("--faults", type=_positive, default=20, help="faults to inject (default 20)")
    p.add_argument("--seed", type=int, help="seed of the fault schedule (default: random, printed)")
    p.add_argument("--zk-ensemble", type=int, choices=(1, 3), default=1,
                   help="ZooKeeper servers: 1 (default) or a 3-node ensemble (adds zk_member_kill faults)")
    p.add_argument("--kinds", type=_kinds, default=ALL_KINDS, help=f"fault kinds (default all: {','.join(ALL_KINDS)})")
    p.add_argument("--dir", type=Path, default=Path(".praha/chaos"),
                   help="where campaigns write (default .praha/chaos)")
    p.add_argument("--rate", type=int, default=60, help="records per second per producer (default 60)")
    p.add_argument("--group-members", type=_positive, default=3,
                   help="member processes of the consumer group (default 3; 0: no group, no member/coordinator kills)")
    p.add_argument("--session-timeout-ms", type=int, default=4000, help="brokers' ZooKeeper session timeout")
    p.add_argument("--secure-zookeeper", action="store_true",
                   help="brokers log in to ZooKeeper with znode ACLs on (adds forged_zk_write faults)")
    p.add_argument("--secure", action="store_true",
                   help="SASL_SSL (SCRAM-SHA-512) for every client, each workload principal with its own ACLs, "
                        "mutual TLS between brokers, ZooKeeper secured too (adds forged_zk_write faults)")
    p.add_argument("--netns", action="store_true",
                   help="every node on a host of its own (network namespaces; needs root): adds the network faults")
    p.add_argument("--workload", choices=WORKLOADS, default="queue",
                   help="queue (default): idempotent producers and consumers; txn: plus transactional producers "
                        "(commit/abort), read_committed and read_uncommitted consumers and a "
                        "consume-transform-produce stage, whose history is checked for Jepsen's anomalies; "
                        "share: plus a share group of ShareConsumers, members SIGKILLed (docs/share-groups.md)")
    p.add_argument("--json", action="store_true", help="end with one JSON line of headline figures")
    p.set_defaults(fn=cmd_chaos)


def cmd_chaos(args: argparse.Namespace) -> int:
    from praha.chaos.campaign import run_campaign
    from praha.chaos.report import summary_text
    from praha.cli.options import CliError

    if args.check == ["cleanup"]:
        return _cleanup()
    if args.check:
        return _check_history(args.check)
    cfg = CampaignConfig(
        brokers=args.brokers, faults=args.faults, seed=args.seed if args.seed is not None else new_seed(),
        zk_ensemble=args.zk_ensemble, workdir=args.dir, kinds=args.kinds, records_per_second=args.rate,
        session_timeout_ms=args.session_timeout_ms, group_members=args.group_members,
        secure_zookeeper=args.secure_zookeeper, secure=args.secure,
        netns=args.netns, workload=args.workload,
    )
    try:
        cfg.validate()
    except ValueError as e:
        raise CliError(str(e)) from None
    if args.kinds is not ALL_KINDS:  # asked for by name: say why one cannot run, rather than drop it
        lacking = {k: why for k, why in cfg.missing().items() if k in args.kinds}
        if lacking:
            raise CliError("--kinds: " + "; ".join(f"{k} needs {why}" for k, why in sorted(lacking.items())))
    if cfg.netns:
        from praha.cluster.netns import unavailable_reason

        if unavailable_reason():
            raise CliError(f"--netns: {unavailable_reason()}")
    print(f"chaos seed: {cfg.seed}", flush=True)
    for name in ("kazoo", "kazoo.client"):  # our own ZooKeeper client sees every fault
        logging.getLogger(name).setLevel(logging.ERROR)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        report = run_campaign(cfg)
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(summary_text(report), flush=True)
    if args.json:
        print(json.dumps(report["headline"]), flush=True)
    return 0 if report["figures"]["violations"] == 0 else 1


def _check_history(words: list[str]) -> int:
    from praha.chaos.history import check, load
    from praha.cli.options import CliError

    if len(words) != 2 or words[0] != "check":
        raise CliError(f"expected `praha chaos check HISTORY|DIR` or `praha chaos cleanup`, got {' '.join(words)!r}")
    path = Path(words[1])
    if path.is_dir():
        return _check_campaign(path)
    if not path.is_file():
        raise CliError(f"{path}: no such history file or campaign directory")
    verdict = check(load(path))
    print(json.dumps(verdict.to_json()), flush=True)
    return 0 if verdict.clean else 1


def _check_campaign(root: Path) -> int:
    from praha.chaos.history import check, load
    from praha.chaos.invariants import rejudge_copies
    from praha.cli.options import CliError

    if not (root / "cluster").is_dir():
        raise CliError(f"{root}: not a campaign directory (no cluster/ with the brokers' log dirs)")
    history = check(load(root / "history.jsonl")) if (root / "history.jsonl").is_file() else None
    copies = rejudge_copies(root)
    print(json.dumps({"history": history.to_json() if history is not None else None, "copies": copies},
                     default=list), flush=True)
    clean = (history is None or history.clean) and copies["stored_twice"] == 0
    return 0 if clean else 1


def _cleanup() -> int:
    from praha.chaos.leftovers import cleanup_leftovers

    removed = cleanup_leftovers()
    for r in removed:
        print(f"{r.root}: stopped {r.processes} processes, unmounted {r.mounts} directories, "
              f"removed {r.namespaces} namespaces and links", flush=True)
    print(f"removed what {len(removed)} killed campaigns left behind", flush=True)
    return 0


def _interrupt(*_args: object) -> None:
    raise KeyboardInterrupt
