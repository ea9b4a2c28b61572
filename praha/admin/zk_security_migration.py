"""`praha zookeeper-security-migration` (Kafka's ZkSecurityMigrator): set Kafka's ACLs on an
existing tree, or open it again.

`secure`: every znode under the roots Kafka secures (and the chroot itself) gets
`ZkData.defaultAcls(true, path)` — ALL for the migrating session's identities (which must
be the brokers': the same JAAS `Client` user or digest), READ for anyone except under the
sensitive roots. `unsecure`: `world:anyone` ALL everywhere again.

Walk: level by level (children of a whole level read in bulk), then the ACLs of that level
set pipelined; a znode that vanishes meanwhile is skipped, and one created meanwhile by a
broker that already runs with `zookeeper.set.acl=true` already has its ACL. That is why the
order is: a rolling restart of the brokers with their ZooKeeper identity, a second one with
`zookeeper.set.acl=true`, then this command (docs/security.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from praha.errors import ConfigError
from praha.zk.auth import SECURE_ROOTS, open_acl, secure_acl
from praha.zk.store import ZkStore


class AclMode(Enum):
    SECURE = "secure"
    UNSECURE = "unsecure"


@dataclass(frozen=True)
class MigrationResult:
    mode: AclMode
    znodes: int


def migrate(store: ZkStore, mode: AclMode) -> MigrationResult:
    if mode is AclMode.SECURE and not store.auth.authenticated:
        raise ConfigError("--zookeeper.acl secure needs this session to log in to ZooKeeper as the brokers do "
                          "(a JAAS Client section via --zk-tls-config-file or KAFKA_OPTS, or "
                          "PRAHA_ZOOKEEPER_DIGEST); otherwise nobody could change the tree afterwards")
    total = store.set_acls_bulk([("/", _acl("/", mode))])
    level = list(SECURE_ROOTS)
    while level:
        children = store.get_children_bulk(level)
        present = [p for p in level if children.get(p) is not None]
        total += store.set_acls_bulk([(p, _acl(p, mode)) for p in present])
        level = [f"{p.rstrip('/')}/{c}" for p in present for c in children[p] or ()]
    return MigrationResult(mode, total)


def _acl(path: str, mode: AclMode) -> list[object]:
    return secure_acl(path) if mode is AclMode.SECURE else open_acl()
