"""`praha`: run and operate a praha cluster.

  praha zookeeper start [--port P] [--data-dir D]      the embedded ZooKeeper, in the foreground
  praha zookeeper start --dir D                        restart a local cluster's ZooKeeper (in the background)
  praha broker start --config server.properties        one broker, in the foreground
  praha broker start|stop|kill ID [--dir D]            one broker of a local cluster
  praha cluster up --brokers N [--dir D] [--zookeeper H:P] [--broker-config k=v ...]
  praha cluster status [--json] | praha cluster down
  praha groups --list | --describe | --reset-offsets | --delete | --delete-offsets   (kafka-consumer-groups)
  praha api-versions [--json]                           what every broker serves (kafka-broker-api-versions)
  praha console [--port 8080]                           the web console (docs/console.md)

Commands that talk to a cluster take `--dir` (a local cluster, the default),
`--zookeeper HOST:PORT` or `--bootstrap-server HOST:PORT`.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from praha.cli.options import CliError, _key_value, add_cluster_options
from praha.errors import PrahaError

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


# ---------------------------------------------------------------------------- zookeeper
def cmd_zookeeper_start(args: argparse.Namespace) -> int:
    if args.dir is not None:  # a local cluster's own ZooKeeper, again, in the background
        from praha.cluster.local import LocalCluster

        state = LocalCluster(args.dir).restart_zookeeper()
        print(f"ZooKeeper of the cluster in {args.dir} started on {state.zookeeper} (pid {state.zookeeper_pid}); "
              f"`praha cluster down --dir {args.dir}` stops it")
        return EXIT_OK
    from praha.zk.server import run_foreground

    return run_foreground(port=args.port, data_dir=args.data_dir)


# ---------------------------------------------------------------------------- broker
def cmd_broker_start(args: argparse.Namespace) -> int:
    if args.config is not None:
        if args.id is not None:
            raise CliError("give either --config (run a broker here) or a broker ID of a local cluster, not both")
        from praha.broker.server import check_startup_config, run_broker
        from praha.config import BrokerConfig

        _setup_logging(args.log_level, prefix="broker")
        cfg = BrokerConfig.from_file(args.config)
        for problem in cfg.check_log_dirs():  # some dirs unusable: they start offline
            logging.getLogger("praha.broker").warning("%s; that log dir is offline", problem)
        check_startup_config(cfg)
        return run_broker(cfg)
    if args.id is None:
        raise CliError("praha broker start needs --config FILE or the ID of a broker in a local cluster")
    from praha.cluster.local import LocalCluster

    b = LocalCluster(args.dir).start_broker(args.id, timeout=args.timeout)
    print(f"broker {b.id} started (pid {b.pid}, {b.address})")
    return EXIT_OK


def cmd_broker_stop(args: argparse.Namespace) -> int:
    from praha.cluster.local import LocalCluster

    clean = LocalCluster(args.dir).stop_broker(args.id, timeout=args.timeout)
    print(f"broker {args.id} stopped" + ("" if clean else f" (forced with SIGKILL after {args.timeout:.0f}s)"))
    return EXIT_OK


def cmd_broker_kill(args: argparse.Namespace) -> int:
    from praha.cluster.local import LocalCluster

    pid = LocalCluster(args.dir).kill_broker(args.id)
    print(f"broker {args.id} killed (SIGKILL, pid {pid})")
    return EXIT_OK


# ---------------------------------------------------------------------------- cluster
def cmd_cluster_up(args: argparse.Namespace) -> int:
    from praha.cluster.local import LocalCluster

    cluster = LocalCluster(args.dir)
    overrides = dict(args.broker_config or [])
    from praha.config import unknown_keys

    unknown = unknown_keys(overrides)
    if unknown:
        print(f"warning: unknown broker config keys {unknown} (passed through)", file=sys.stderr)
    state = cluster.up(
        args.brokers, zookeeper=args.zookeeper, overrides=overrides, timeout=args.timeout,
        progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True), secure=args.secure,
        netns=args.netns,
    )
    status = cluster.status()
    print_status(status)
    bootstrap = ",".join(f"{b['host']}:{b['port']}" for b in status["brokers"])
    print(f"\ncluster directory: {cluster.root}")
    print("bootstrap servers: " + bootstrap)
    print(f"zookeeper:         {status['zookeeper']}")
    registries = ",".join(b["schema_registry"] for b in status["brokers"] if b.get("schema_registry"))
    if registries:
        print(f"schema registry:   {registries}")
    print(f"stop it with:      praha cluster down --dir {cluster.root}")
    if state.security_dir:
        _print_secure_settings(Path(state.security_dir), bootstrap)
    if args.console is not None:
        from praha.console.server import start_beside

        pid, url = start_beside(cluster.root, args.console)
        print(f"console:           {url} (pid {pid}; `praha cluster down` stops it)")
    return EXIT_OK


def _print_secure_settings(security_dir: Path, bootstrap: str) -> None:
    from praha.cluster.secure import SecureSetup

    setup = SecureSetup.load(security_dir)
    settings = setup.client_settings(bootstrap)
    print("\nSASL_SSL with SCRAM-SHA-512, ACLs on (the admin is a super user; grant others with `praha acls`).")
    print("confluent-kafka:\n  " + json.dumps(settings["confluent-kafka"]))
    print("kafka-python:\n  " + json.dumps(settings["kafka-python"]))
    print("kcat:\n  kcat " + setup.kcat_arguments(bootstrap) + " -L")


def cmd_cluster_status(args: argparse.Namespace) -> int:
    if args.bootstrap_server:
        from praha.admin.client_status import status_via_bootstrap

        status = status_via_bootstrap(args.bootstrap_server)
    elif args.zookeeper:
        from praha.admin.status import cluster_status
        from praha.cli.options import zk_auth_of

        status = cluster_status(args.zookeeper, auth=zk_auth_of(args))
    else:
        from praha.cluster.local import LocalCluster

        status = LocalCluster(args.dir).status()
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        print_status(status)
    return EXIT_OK


def cmd_cluster_down(args: argparse.Namespace) -> int:
    from praha.cluster.local import LocalCluster
    from praha.console.server import stop_beside

    if stop_beside(Path(args.dir)) is not None:
        print("  console stopped", file=sys.stderr)
    cluster = LocalCluster(args.dir)
    say = lambda m: print(f"  {m}", file=sys.stderr, flush=True)  # noqa: E731
    if not (args.netns_leftovers and not cluster.exists() and not cluster.netns_record.exists()):
        cluster.down(progress=say)
        print("cluster stopped")
    if args.netns_leftovers:
        from praha.cluster import netns

        removed = netns.cleanup_leftovers()
        print(f"removed {len(removed)} unused praha network layouts" + (f": {removed}" if removed else ""))
    return EXIT_OK


def print_status(status: dict[str, Any]) -> None:
    c = status["controller"]
    print(f"zookeeper: {status['zookeeper']}   controller: broker {c['id']} (epoch {c['epoch']})")
    zs = status.get("zookeeper_security")
    if zs:
        tree = ("znodes ACL-protected" if zs["acl_protected"]
                else "znodes OPEN to anyone: " + ", ".join(zs["open_paths"]))
        access = f"authenticated ({zs['authentication']})" if zs["authenticated"] else "unauthenticated"
        print(f"zookeeper access: {access}, {'encrypted (TLS)' if zs['encrypted'] else 'unencrypted'}, {tree}")
    procs = status.get("processes", {})
    print(f"{'BROKER':>6}  {'ADDRESS':<22} {'EPOCH':>12}  {'PID':>8}  ROLE")
    live = {b["id"] for b in status["brokers"]}
    for b in status["brokers"]:
        pid = procs.get(str(b["id"]), {}).get("pid", "")
        role = "controller" if b["id"] == c["id"] else ""
        print(f"{b['id']:>6}  {b['host'] + ':' + str(b['port']):<22} {b['epoch']:>12}  {pid:>8}  {role}")
    for bid, p in sorted(procs.items(), key=lambda kv: int(kv[0])):
        if int(bid) not in live:
            state = "running, not registered" if p["running"] else "down"
            print(f"{bid:>6}  {p.get('host', '127.0.0.1') + ':' + str(p['port']):<22} {'-':>12}  {p['pid']:>8}  "
                  f"{state}")
    topics = status.get("topics") or {}
    if topics:
        n_parts = sum(len(t["partitions"]) for t in topics.values())
        offline = sum(1 for t in topics.values() for p in t["partitions"] if p.get("offline"))
        under = sum(1 for t in topics.values() for p in t["partitions"] if p.get("under_replicated"))
        print(f"topics: {len(topics)}, partitions: {n_parts}, offline: {offline}, under-replicated: {under}")
    for problem in status.get("problems", []):
        print(f"problem: {problem}")


# ---------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="praha",
        description="praha: a Kafka-compatible replicated log cluster with Kafka's ZooKeeper-mode controller.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `praha COMMAND --help` for the options of each command.",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    zk = sub.add_parser("zookeeper", help="the embedded ZooKeeper server").add_subparsers(dest="sub", required=True)
    p = zk.add_parser("start", help="run the embedded ZooKeeper (from the pyspark jars) in the foreground, or "
                                    "restart a local cluster's (--dir)")
    p.add_argument("--port", type=int, default=2181, help="client port (default 2181; 0 = any free port)")
    p.add_argument("--data-dir", type=Path, default=Path(".praha/zookeeper"), help="data directory")
    p.add_argument("--dir", type=Path, help="restart the ZooKeeper of the local cluster in DIR on its port, in the "
                                            "background (`praha cluster down` then stops it too)")
    p.set_defaults(fn=cmd_zookeeper_start)

    br = sub.add_parser("broker", help="run or control brokers").add_subparsers(dest="sub", required=True)
    p = br.add_parser("start", help="run a broker (--config) or restart one broker of a local cluster (ID)")
    p.add_argument("id", nargs="?", type=int, help="broker id in the local cluster")
    p.add_argument("--config", type=Path, help="server.properties (Kafka's names); runs the broker in the foreground")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the broker to register")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_broker_start)
    p = br.add_parser("stop", help="graceful stop (SIGTERM → controlled shutdown) of a local cluster's broker")
    p.add_argument("id", type=int)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds before SIGKILL (default 60)")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_broker_stop)
    p = br.add_parser("kill", help="SIGKILL a local cluster's broker (a crash)")
    p.add_argument("id", type=int)
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_broker_kill)

    cluster_parser = sub.add_parser("cluster", help="a local cluster: ZooKeeper + N brokers")
    cl = cluster_parser.add_subparsers(dest="sub", required=True)
    p = cl.add_parser("up", help="start ZooKeeper (unless --zookeeper) and N brokers, wait for a controller")
    p.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    p.add_argument("--broker-config", type=_key_value, action="append", metavar="KEY=VALUE",
                   help="broker config override, repeatable (Kafka names, e.g. min.insync.replicas=2)")
    p.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the cluster (default 90)")
    p.add_argument("--secure", action="store_true",
                   help="TLS and SASL (SCRAM-SHA-512, an admin user), mutual TLS between brokers, ACLs on")
    p.add_argument("--console", type=int, nargs="?", const=8080, metavar="PORT",
                   help="also start the web console (`praha console`) on PORT (default 8080)")
    p.add_argument("--netns", action="store_true",
                   help="hosts of their own: ZooKeeper and every broker in a Linux network namespace with its own "
                        "198.18.<k>.<n> address, joined by a bridge (needs root; `cluster down` removes them)")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_cluster_up)
    p = cl.add_parser("status", help="controller, epoch, live brokers (and topics)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_cluster_options(p)
    p.set_defaults(fn=cmd_cluster_status)
    p = cl.add_parser("down", help="stop every process `cluster up` started (even after some were killed) and "
                                   "remove the network namespaces `up --netns` made")
    p.add_argument("--netns-leftovers", action="store_true",
                   help="also remove every praha network namespace, veth and bridge no process uses "
                        "(left by crashed runs)")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_cluster_down)

    for register in _extensions():
        register(sub)
    return parser


def _extensions() -> list[Callable[[Any], None]]:
    """The other modules' subcommands (topics, reassign, configs, groups, transactions,
    produce/consume, chaos, analyze, acls, zookeeper-security-migration), imported when the
    parser is built: they import this module for its helpers."""
    from praha.cli import (
        acls,
        admin_tools,
        analyze,
        chaos,
        console,
        data,
        groups,
        records_tools,
        schemas,
        topics,
        transactions,
        zk_security,
    )

    return [topics.register, admin_tools.register, records_tools.register, groups.register, transactions.register,
            chaos.register, analyze.register, data.register, acls.register, schemas.register,
            console.register, zk_security.register]


def _setup_logging(level: str, prefix: str = "praha") -> None:
    logging.basicConfig(
        level=getattr(logging, level),
        format="%(asctime)s %(levelname)s [%(threadName)s] %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("kazoo.client").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not (args.command == "broker" and args.sub == "start" and args.config):
        _setup_logging("WARNING" if args.log_level == "INFO" else args.log_level)
    try:
        code: int = args.fn(args)
        return code
    except PrahaError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130

