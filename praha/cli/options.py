"""What every `praha` subcommand shares: the user-facing error and the options that name
a cluster (`--dir`, `--zookeeper`, `--bootstrap-server`) with their parsers.

It sits below `praha.cli.main` and the subcommand modules, so they can all use it without
importing each other."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from praha.errors import PrahaError

if TYPE_CHECKING:
    from praha.protocol.client_security import ClientSecurity
    from praha.zk.auth import ZkAuth
    from praha.zk.store import ZkStore


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
    g.add_argument("--zk-tls-config-file", type=Path, metavar="FILE",
                   help="ZooKeeper client settings, Kafka's names (zookeeper.ssl.*, zookeeper.set.acl, "
                        "java.security.auth.login.config); default: the local cluster's, else KAFKA_OPTS's JAAS "
                        "file and PRAHA_ZOOKEEPER_DIGEST")
    if bootstrap:
        g.add_argument("--bootstrap-server", type=_host_port, metavar="HOST:PORT", help="any broker of the cluster")


def zookeeper_of(args: argparse.Namespace) -> str:
    """The ZooKeeper connect string named by --zookeeper, or the local cluster's."""
    if getattr(args, "zookeeper", None):
        return str(args.zookeeper)
    from praha.cluster.local import LocalCluster

    return LocalCluster(args.dir).load().zookeeper


def zk_auth_of(args: argparse.Namespace) -> ZkAuth:
    """How this command reaches ZooKeeper: --zk-tls-config-file, else a local secure
    cluster's own settings (without --zookeeper), else the environment."""
    from praha.security.zk_client import zk_auth_for_tool

    given = getattr(args, "zk_tls_config_file", None)
    if given is None and not getattr(args, "zookeeper", None) and getattr(args, "dir", None) is not None:
        from praha.cluster.local import LocalCluster

        cluster = LocalCluster(args.dir)
        if cluster.exists():
            auth = cluster.zk_auth(cluster.load())
            if auth is not None:
                return auth
    return zk_auth_for_tool(given)


def zk_session_of(args: argparse.Namespace) -> AbstractContextManager[ZkStore]:
    """A ZooKeeper session with the cluster the command names, authenticated as it says."""
    from praha.admin.status import zk_session

    return zk_session(zookeeper_of(args), auth=zk_auth_of(args))


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
        with zk_session_of(args) as store:
            brokers, _ = store.get_live_brokers()
        if not brokers:
            raise CliError(f"no live brokers registered in ZooKeeper {args.zookeeper}")
        return ",".join(f"{b.host}:{b.port}" for _, b in sorted(brokers.items()))
    from praha.cluster.local import LocalCluster

    state = LocalCluster(args.dir).load()
    if not state.brokers:
        raise CliError(f"no brokers in the local cluster {args.dir}")
    return ",".join(b.address for _, b in sorted(state.brokers.items()))


def security_of(args: argparse.Namespace) -> ClientSecurity:
    """The client security of `--command-config FILE` (Kafka's tools' client properties:
    security.protocol, sasl.*, ssl.*); plain TCP when the command has no such option."""
    from praha.protocol.client_security import PLAINTEXT
    from praha.security.client_properties import client_security, read_properties

    path = getattr(args, "command_config", None)
    return PLAINTEXT if not path else client_security(read_properties(path))
