"""Who we are to ZooKeeper, how we reach it, and the ACLs of the znodes we create (Kafka's
`zookeeper.set.acl` and `ZkData.defaultAcls`).

Identity: SASL DIGEST-MD5 (what a Kafka broker does with a JAAS `Client` section; the
identity is `sasl:<user>`), or ZooKeeper's digest scheme (`praha.zookeeper.digest`,
`digest:<user>:<hash>`; needs no server configuration), or both. Transport: plaintext, or
TLS (`zookeeper.ssl.client.enable`) checked against a CA, with a client certificate if the
server wants one.

ACLs, with `set_acl` (Kafka's): every znode gets ALL for its creator's identities
(`auth` scheme, CREATOR_ALL_ACL), and READ for anyone unless it lies under a sensitive root
(`/config/users`: SCRAM credentials, `/config/brokers`: broker configs that may hold
passwords, `/delegation_token/tokens`), which only the creator may read. Off: open znodes,
as an embedded development cluster wants. The choice is made per path at every create
(`acl_for`), so no write site has to remember it.

The `praha` admin commands (and any client left at the default) take a digest identity
from `PRAHA_ZOOKEEPER_DIGEST`, which also turns ACLs on for what they create; the full
client settings (SASL, TLS) are built by `praha.security.zk_client`.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.security import ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, Id, Permissions

from praha.errors import ConfigError

ENVIRONMENT_VARIABLE = "PRAHA_ZOOKEEPER_DIGEST"
#: Kafka's ZkData.SensitiveRootPaths: readable by the creator's identity only
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token/tokens")
#: Kafka's ZkData.SecureRootPaths (+ ZkAclStore's): what the security migration walks
SECURE_ROOTS = ("/admin", "/brokers", "/cluster", "/config", "/controller", "/controller_epoch",
                "/isr_change_notification", "/latest_producer_id_block", "/log_dir_event_notification",
                "/delegation_token", "/kafka-acl", "/kafka-acl-changes", "/kafka-acl-extended",
                "/kafka-acl-extended-changes")
CREATOR_ALL_ACL = [ACL(Permissions.ALL, Id("auth", ""))]
SASL_MECHANISM = "DIGEST-MD5"


def sensitive_path(path: str) -> bool:
    return path.startswith(SENSITIVE_ROOTS)


def secure_acl(path: str) -> list[Any]:
    """Kafka's ZkData.defaultAcls(isSecure=true, path)."""
    return CREATOR_ALL_ACL if sensitive_path(path) else CREATOR_ALL_ACL + list(READ_ACL_UNSAFE)


@dataclass(frozen=True)
class ZkTls:
    """TLS to ZooKeeper: the CA to check the server against (PEM), our certificate (key and
    chain in one PEM file; "" = none), and whether the server's name is checked (Kafka's
    `zookeeper.ssl.endpoint.identification.algorithm=HTTPS`)."""
    truststore: str
    keystore: str = ""
    check_hostname: bool = True


@dataclass(frozen=True)
class ZkAuth:
    digest: str = ""  # "user:password"
    set_acl: bool = False
    sasl_user: str = ""
    sasl_password: str = ""
    tls: ZkTls | None = None

    def __post_init__(self) -> None:
        if self.digest and ":" not in self.digest:
            raise ConfigError("a ZooKeeper digest identity is user:password")
        if self.set_acl and not (self.digest or self.sasl_user):
            raise ConfigError("zookeeper.set.acl=true needs a ZooKeeper identity: a JAAS Client section "
                              "(java.security.auth.login.config) or praha.zookeeper.digest")

    @classmethod
    def from_environment(cls) -> ZkAuth:
        digest = os.environ.get(ENVIRONMENT_VARIABLE, "")
        return cls(digest, bool(digest))

    @property
    def authenticated(self) -> bool:
        return bool(self.digest or self.sasl_user)

    def describe(self) -> dict[str, Any]:
        """What `praha cluster status` shows of our own ZooKeeper access."""
        how = [s for s, on in (("SASL/" + SASL_MECHANISM, self.sasl_user), ("digest", self.digest)) if on]
        return {"authenticated": self.authenticated, "authentication": "+".join(how) or "none",
                "encrypted": self.tls is not None, "acls": self.set_acl}

    def summary(self) -> str:
        """One line: how this identity reaches ZooKeeper."""
        d = self.describe()
        return ", ".join([f"authenticated ({d['authentication']})" if d["authenticated"] else "unauthenticated",
                          "encrypted (TLS)" if d["encrypted"] else "unencrypted",
                          "znode ACLs on" if d["acls"] else "znode ACLs off"])

    def acl_for(self, path: str) -> list[Any] | None:
        """The ACL a znode created at `path` gets (None: kazoo's open default)."""
        return secure_acl(path) if self.set_acl else None

    def kazoo_client(self, **kw: Any) -> KazooClient:
        """A kazoo client that authenticates as this identity, over TLS if asked, and creates
        every znode with `acl_for(path)`."""
        if self.sasl_user:
            kw["sasl_options"] = {"mechanism": SASL_MECHANISM, "username": self.sasl_user,
                                  "password": self.sasl_password}
        if self.digest:
            kw["auth_data"] = [("digest", self.digest)]
        if self.tls is not None:
            kw.update(use_ssl=True, verify_certs=True, ca=self.tls.truststore, check_hostname=self.tls.check_hostname)
            if self.tls.keystore:
                kw.update(certfile=self.tls.keystore, keyfile=self.tls.keystore)
        return _PathAclClient(self.acl_for, **kw)


class _PathAclClient(KazooClient):  # type: ignore[misc]
    """kazoo with the ACL chosen per created path (kazoo's own default is one ACL for all)."""

    def __init__(self, acl_for: Callable[[str], list[Any] | None], **kw: Any):
        super().__init__(**kw)
        self.acl_for = acl_for

    def create_async(self, path: str, value: bytes = b"", acl: Any = None, *args: Any, **kw: Any) -> Any:
        return super().create_async(path, value, self.acl_for(path) if acl is None else acl, *args, **kw)

    def transaction(self) -> TransactionRequest:
        return _PathAclTransaction(self)


class _PathAclTransaction(TransactionRequest):  # type: ignore[misc]
    client: _PathAclClient

    def create(self, path: str, value: bytes = b"", acl: Any = None, ephemeral: bool = False,
               sequence: bool = False) -> None:
        super().create(path, value, self.client.acl_for(path) if acl is None else acl, ephemeral, sequence)


def open_acl() -> list[Any]:
    return list(OPEN_ACL_UNSAFE)
