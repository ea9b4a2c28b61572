"""What every `praha` subcommand shares: the user-facing error and the options that name
a cluster (`--dir`, `--zookeeper`, `--bootstrap-server`) with their parsers.

It sits below `praha.cli.main` and the subcommand modules, so they can all use it without
importing each other."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from praha.errors import PrahaError


class CliError(PrahaError):
    """A user-facing error: printed as `error: ...`, exit code 1."""


def _key_value(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    k, v = text.split("=", 1)
    if not k.strip():
        raise argparse.ArgumentTypeError(f"empty key in {text!r}")
    return k.strip(), v.strip()


def _host_port(text: str) -> str:
    """HOST:PORT, or for ZooKeeper Kafka's full form `h1:p1,h2:p2[/chroot]`."""
    hosts, slash, chroot = text.partition("/")
    for item in hosts.split(","):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise argparse.ArgumentTypeError(f"expected HOST:PORT[,HOST:PORT...][/chroot], got {text!r}")
    if slash and not chroot:
        raise argparse.ArgumentTypeError(f"empty chroot in {text!r}")
    return text


def add_cluster_options(p: argparse.ArgumentParser, bootstrap: bool = True) -> None:
    from praha.cluster.local import DEFAULT_DIR

    g = p.add_argument_group("cluster to talk to (default: the local cluster in --dir)")
    g.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"local cluster directory (default {DEFAULT_DIR})")
    g.add_argument("--zookeeper", type=_host_port, metavar="HOST:PORT", help="ZooKeeper of any praha cluster")
    if bootstrap:
        g.add_argument("--bootstrap-server", type=_host_port, metavar="HOST:PORT", help="any broker of the cluster")


def zookeeper_of(args: argparse.Namespace) -> str:
    """The ZooKeeper connect string named by --zookeeper, or the local cluster's."""
    if getattr(args, "zookeeper", None):
        return str(args.zookeeper)
    from praha.cluster.local import LocalCluster

    return LocalCluster(args.dir).load().zookeeper


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer no smaller than `minimum` (argparse then prints the
    usage error and exits 2, as for any malformed option)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def bootstrap_of(args: argparse.Namespace) -> str:
    """--bootstrap-server, else the live brokers named by --zookeeper, else the local cluster's."""
    if getattr(args, "bootstrap_server", None):
        return str(args.bootstrap_server)
    if getattr(args, "zookeeper", None):
        from praha.admin.status import zk_session

        with zk_session(args.zookeeper) as store:
            brokers, _ = store.get_live_brokers()
        if not brokers:
            raise CliError(f"no live brokers registered in ZooKeeper {args.zookeeper}")
        return ",".join(f"{b.host}:{b.port}" for _, b in sorted(brokers.items()))
    from praha.cluster.local import LocalCluster

    state = LocalCluster(args.dir).load()
    if not state.brokers:
        raise CliError(f"no brokers in the local cluster {args.dir}")
    return ",".join(b.address for _, b in sorted(state.brokers.items()))
