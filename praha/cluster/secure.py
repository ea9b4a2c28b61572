"""A secure local cluster (`praha cluster up --secure`).

Steps, before the brokers start: 1. a CA and one certificate per broker (`certs`, CN
broker-<id>), in `<dir>/security/`; 2. an admin user with a random password, stored as
a SCRAM-SHA-512 credential in ZooKeeper (`/config/users/admin`) and written to
`<dir>/security/admin.json` (mode 0600); 3. each broker's settings: clients on
SASL_SSL (SCRAM-SHA-512) at the broker's port, brokers among themselves on INTERNAL
(TLS with client certificates required, host names verified), the ACL authoriser on with
the brokers and the admin as super users and nothing allowed to anyone else until ACLs
say so; 4. ZooKeeper secured too: a generated secret for the ZooKeeper user `praha` in a
JAAS `Client` section (`zookeeper_jaas.conf`, mode 0600), the embedded ZooKeeper serving TLS
only with a certificate from the same CA and accepting that user (SASL DIGEST-MD5), and
`zookeeper.set.acl=true`; brokers and tools read the same Kafka-named settings
(`zookeeper-client.properties`, mode 0600). With an external ZooKeeper (whose server praha
does not configure) the identity is a digest one (`praha.zookeeper.digest`), without TLS.
`client_settings` prints what confluent-kafka, kafka-python and kcat need.
"""
from __future__ import annotations

import json
import secrets
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from praha.cluster.certs import CertificateAuthority, issue, make_ca
from praha.protocol.client_security import ClientSecurity
from praha.protocol.scram import ScramCredential, ScramMechanism
from praha.security.acl import (
    AccessControlEntry,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)
from praha.security.acl_store import add_acls
from praha.security.credentials import alter_credentials
from praha.security.zk_client import (
    DIGEST_MODULE,
    JAAS_PROPERTY,
    NETTY_SOCKET,
    jaas_client_login,
    read_properties,
    zk_auth_for_tool,
)
from praha.zk.auth import ZkAuth, secure_acl
from praha.zk.server import ZkServerSecurity
from praha.zk.store import ZkStore

ADMIN_USER = "admin"
MECHANISM = ScramMechanism.SHA_512
PROTOCOL_MAP = "INTERNAL:SSL,SASL_SSL:SASL_SSL"
ZK_USER = "praha"
ZK_CLIENT_FILE = "zookeeper-client.properties"
ZK_JAAS_FILE = "zookeeper_jaas.conf"


def _private(path: Path, text: str) -> None:
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)


@dataclass(frozen=True)
class SecureSetup:
    directory: Path
    ca: Path
    admin_password: str

    @classmethod
    def load(cls, directory: Path) -> SecureSetup:
        d = json.loads((directory / "admin.json").read_text())
        return cls(directory, directory / "ca.pem", d["password"])

    def zk_auth(self) -> ZkAuth:
        """How the cluster's tools and checks reach its ZooKeeper."""
        return zk_auth_for_tool(self.directory / ZK_CLIENT_FILE)

    def zk_client_settings(self) -> dict[str, str]:
        return read_properties(self.directory / ZK_CLIENT_FILE)

    def zk_server_security(self) -> ZkServerSecurity:
        """The embedded ZooKeeper's TLS certificate and its one SASL user."""
        login = jaas_client_login(str(self.directory / ZK_JAAS_FILE), "Client")
        assert login is not None
        return ZkServerSecurity(self.directory / "zookeeper.pem", self.ca, (login,))

    def client_security(self) -> ClientSecurity:
        """How the cluster's own tools connect (the admin over SASL_SSL)."""
        ctx = ssl.create_default_context(cafile=str(self.ca))
        return ClientSecurity("SASL_SSL", "SASL_SSL", ctx, MECHANISM.mechanism_name, ADMIN_USER, self.admin_password)

    def client_settings(self, bootstrap: str) -> dict[str, dict[str, str]]:
        """Ready-to-use settings: librdkafka (confluent-kafka, kcat) and kafka-python."""
        return {
            "confluent-kafka": {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
                                "sasl.mechanism": MECHANISM.mechanism_name, "sasl.username": ADMIN_USER,
                                "sasl.password": self.admin_password, "ssl.ca.location": str(self.ca)},
            "kafka-python": {"bootstrap_servers": bootstrap, "security_protocol": "SASL_SSL",
                             "sasl_mechanism": MECHANISM.mechanism_name, "sasl_plain_username": ADMIN_USER,
                             "sasl_plain_password": self.admin_password, "ssl_cafile": str(self.ca)},
        }

    def kcat_arguments(self, bootstrap: str) -> str:
        s = self.client_settings(bootstrap)["confluent-kafka"]
        return f"-b {bootstrap} " + " ".join(f"-X {k}={v}" for k, v in s.items() if k != "bootstrap.servers")


def make_material(directory: Path, broker_ids: list[int], embedded_zookeeper: bool,
                  zookeeper_host: str = "127.0.0.1") -> tuple[SecureSetup, CertificateAuthority]:
    """Steps 1, 2 (the password) and 4, before ZooKeeper starts: its TLS and login need them.
    `zookeeper_host`: the embedded server's address, named in its certificate."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    ca = make_ca(directory)
    password = secrets.token_urlsafe(18)
    _private(directory / "admin.json",
             json.dumps({"user": ADMIN_USER, "password": password, "mechanism": MECHANISM.mechanism_name}))
    zk_secret = secrets.token_urlsafe(24)
    zk = {"zookeeper.set.acl": "true"}
    if embedded_zookeeper:
        issue(ca, directory, "zookeeper", "zookeeper", _hosts(zookeeper_host))
        _private(directory / ZK_JAAS_FILE, f'Client {{\n    {DIGEST_MODULE} required\n'
                                           f'    username="{ZK_USER}"\n    password="{zk_secret}";\n}};\n')
        zk |= {JAAS_PROPERTY: str(directory / ZK_JAAS_FILE), "zookeeper.ssl.client.enable": "true",
               "zookeeper.clientCnxnSocket": NETTY_SOCKET, "zookeeper.ssl.truststore.location": str(ca.path),
               "zookeeper.ssl.truststore.type": "PEM"}
    else:
        zk["praha.zookeeper.digest"] = f"{ZK_USER}:{zk_secret}"
    _private(directory / ZK_CLIENT_FILE, "".join(f"{k}={v}\n" for k, v in zk.items()))
    return SecureSetup(directory, ca.path, password), ca


def _hosts(host: str) -> tuple[str, ...]:
    """What a certificate names: the host's own address (a network namespace's), and loopback."""
    return tuple(dict.fromkeys((host, "127.0.0.1", "localhost")))


def prepare(setup: SecureSetup, ca: CertificateAuthority, zookeeper: str, broker_ids: list[int],
            internal_ports: dict[int, int], client_ports: dict[int, int], own_root: bool,
            hosts: dict[int, str] | None = None) -> dict[int, dict[str, str]]:
    """Once ZooKeeper serves: its root protected (`own_root`: the embedded server's, or our
    chroot), the admin credential in ZooKeeper, each broker's settings. `hosts`: each broker's
    address (its listeners bind it, its certificate names it; default 127.0.0.1)."""
    directory = setup.directory
    store = ZkStore(zookeeper, auth=setup.zk_auth()).start()
    try:
        store.ensure_persistent_paths()
        if own_root:  # else anyone could create a missing top-level znode (`/controller` between two controllers)
            store.set_acls_bulk([("/", secure_acl("/"))])
        alter_credentials(store, ADMIN_USER, {MECHANISM: ScramCredential.from_password(
            MECHANISM, setup.admin_password, 8192)}, [])
    finally:
        store.stop()
    super_users = ";".join([f"User:{ADMIN_USER}"] + [f"User:broker-{b}" for b in broker_ids])
    per_broker = {}
    for b in broker_ids:
        host = (hosts or {}).get(b, "127.0.0.1")
        cert = issue(ca, directory, f"broker-{b}", f"broker-{b}", _hosts(host), ou="praha-brokers")
        per_broker[b] = {
            "listeners": f"SASL_SSL://{host}:{client_ports[b]},INTERNAL://{host}:{internal_ports[b]}",
            "listener.security.protocol.map": PROTOCOL_MAP,
            "inter.broker.listener.name": "INTERNAL",
            "ssl.keystore.location": str(cert.keystore),
            "ssl.truststore.location": str(ca.path),
            "listener.name.internal.ssl.client.auth": "required",
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=praha-brokers.*$/$1/,DEFAULT",
            "sasl.enabled.mechanisms": MECHANISM.mechanism_name,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": super_users,
            **setup.zk_client_settings(),
        }
    return per_broker


@dataclass(frozen=True)
class Grant:
    """One ACL a client principal gets: `operations` on a resource named `name` (with `prefixed`,
    every name that starts so), allowed from any host. Kafka's names: Topic, Group,
    TransactionalId, Cluster; Read, Write, Describe, IdempotentWrite, ..."""
    resource: str
    name: str
    operations: tuple[str, ...]
    prefixed: bool = True

    def pattern(self) -> ResourcePattern:
        return ResourcePattern(ResourceType.from_name(self.resource), self.name,
                               PatternType.PREFIXED if self.prefixed else PatternType.LITERAL)

    def entries(self, user: str) -> list[AccessControlEntry]:
        return [AccessControlEntry(f"User:{user}", "*", AclOperation.from_name(op), PermissionType.ALLOW)
                for op in self.operations]


def add_client(store: ZkStore, user: str, grants: Iterable[Grant]) -> str:
    """A SCRAM-SHA-512 user with a random password and its ACLs, written to a secure cluster's
    ZooKeeper (the brokers pick both up from the change notices); returns the password."""
    password = secrets.token_urlsafe(18)
    alter_credentials(store, user, {MECHANISM: ScramCredential.from_password(MECHANISM, password, 8192)}, [])
    for grant in grants:
        add_acls(store, grant.pattern(), grant.entries(user))
    return password
