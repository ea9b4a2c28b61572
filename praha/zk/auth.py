"""Who we are to ZooKeeper, and the ACLs of the znodes we create (Kafka's
`zookeeper.set.acl`).

ZooKeeper's digest scheme (no external service needed): the session authenticates as
`user:password`; with ACLs on, every znode created gets ALL for that identity and READ for
anyone (Kafka's CREATOR_ALL + READ_ACL_UNSAFE), so only the brokers' identity may change
`/controller`, `/brokers`, partition state or `/config`; sensitive znodes (SCRAM
credentials) are made readable by that identity alone (`ZooKeeperClient.restrict`).
Off by default (open znodes, as an embedded development cluster wants).

Brokers take the identity from `praha.zookeeper.digest` with `zookeeper.set.acl=true`;
the `praha` admin commands (and any client left at the default) from the environment
variable `PRAHA_ZOOKEEPER_DIGEST`, which also turns ACLs on for what they create.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from kazoo.security import READ_ACL_UNSAFE, make_digest_acl

from praha.errors import ConfigError

ENVIRONMENT_VARIABLE = "PRAHA_ZOOKEEPER_DIGEST"


@dataclass(frozen=True)
class ZkAuth:
    digest: str = ""  # "user:password"
    set_acl: bool = False

    def __post_init__(self) -> None:
        if self.digest and ":" not in self.digest:
            raise ConfigError("a ZooKeeper digest identity is user:password")
        if self.set_acl and not self.digest:
            raise ConfigError("zookeeper.set.acl=true needs the brokers' ZooKeeper identity (praha.zookeeper.digest)")

    @classmethod
    def from_environment(cls) -> "ZkAuth":
        digest = os.environ.get(ENVIRONMENT_VARIABLE, "")
        return cls(digest, bool(digest))

    def auth_data(self) -> list[tuple[str, str]] | None:
        return [("digest", self.digest)] if self.digest else None

    def _owner(self) -> Any:
        user, _, password = self.digest.partition(":")
        return make_digest_acl(user, password, all=True)

    def default_acl(self) -> list[Any] | None:
        return [self._owner(), *READ_ACL_UNSAFE] if self.set_acl else None

    def private_acl(self) -> list[Any] | None:
        return [self._owner()] if self.set_acl else None
