"""`praha zookeeper-security-migration` (Kafka's zookeeper-security-migration.sh)."""
from __future__ import annotations

import argparse
from typing import Any

from praha.cli.options import _host_port, add_cluster_options, zk_session_of


def register(sub: Any) -> None:
    p = sub.add_parser(
        "zookeeper-security-migration", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="set Kafka's ACLs on an existing ZooKeeper tree, or remove them (as Kafka's tool)",
        description="Sets (secure) or removes (unsecure) the ACLs of every znode Kafka protects. Run it as the "
                    "brokers' ZooKeeper identity, after rolling restarts of the brokers with that identity, then "
                    "with zookeeper.set.acl=true (secure), or before ones without (unsecure); see docs/security.md.")
    p.add_argument("--zookeeper.acl", dest="acl", required=True, choices=["secure", "unsecure"],
                   help="secure: creator-only write, world-readable except credentials; unsecure: open to anyone")
    p.add_argument("--zookeeper.connect", dest="zookeeper", type=_host_port, metavar="HOST:PORT",
                   help="same as --zookeeper")
    add_cluster_options(p, bootstrap=False)
    p.set_defaults(fn=cmd_migrate)


def cmd_migrate(args: argparse.Namespace) -> int:
    from praha.admin.zk_security_migration import AclMode, migrate

    with zk_session_of(args) as store:
        result = migrate(store, AclMode(args.acl))
    print(f"ZooKeeper ACLs set to {result.mode.value} on {result.znodes} znodes.")
    return 0
