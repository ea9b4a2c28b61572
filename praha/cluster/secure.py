"""A secure local cluster (`praha cluster up --secure`).

Steps, before the brokers start: 1. a CA and one certificate per broker (`certs`, CN
broker-<id>), in `<dir>/security/`; 2. an admin user with a random password, stored as
a SCRAM-SHA-512 credential in ZooKeeper (`/config/users/admin`) and written to
`<dir>/security/admin.json` (mode 0600); 3. each broker's settings: clients on
SASL_SSL (SCRAM-SHA-512) at the broker's port, brokers among themselves on INTERNAL
(TLS with client certificates required, host names verified), the ACL authoriser on with
the brokers and the admin as super users and nothing allowed to anyone else until ACLs
say so. `client_settings` prints what confluent-kafka, kafka-python and kcat need.
"""
from __future__ import annotations

import json
import secrets
import ssl
from dataclasses import dataclass
from pathlib import Path

from praha.cluster.certs import issue, make_ca
from praha.protocol.client_security import ClientSecurity
from praha.protocol.scram import ScramCredential, ScramMechanism
from praha.security.credentials import alter_credentials
from praha.zk.store import ZkStore

ADMIN_USER = "admin"
MECHANISM = ScramMechanism.SHA_512
PROTOCOL_MAP = "INTERNAL:SSL,SASL_SSL:SASL_SSL"


@dataclass(frozen=True)
class SecureSetup:
    directory: Path
    ca: Path
    admin_password: str

    @classmethod
    def load(cls, directory: Path) -> "SecureSetup":
        d = json.loads((directory / "admin.json").read_text())
        return cls(directory, directory / "ca.pem", d["password"])

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


def prepare(directory: Path, zookeeper: str, broker_ids: list[int], internal_ports: dict[int, int],
            client_ports: dict[int, int]) -> tuple[SecureSetup, dict[int, dict[str, str]]]:
    """Certificates, the admin credential in ZooKeeper, each broker's settings."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = make_ca(directory)
    password = secrets.token_urlsafe(18)
    admin_file = directory / "admin.json"
    admin_file.touch(mode=0o600)
    admin_file.write_text(json.dumps({"user": ADMIN_USER, "password": password, "mechanism": MECHANISM.mechanism_name}))
    store = ZkStore(zookeeper).start()
    try:
        store.ensure_persistent_paths()
        alter_credentials(store, ADMIN_USER, {MECHANISM: ScramCredential.from_password(MECHANISM, password, 8192)}, [])
    finally:
        store.stop()
    super_users = ";".join([f"User:{ADMIN_USER}"] + [f"User:broker-{b}" for b in broker_ids])
    per_broker = {}
    for b in broker_ids:
        cert = issue(ca, directory, f"broker-{b}", f"broker-{b}", ou="praha-brokers")
        per_broker[b] = {
            "listeners": f"SASL_SSL://127.0.0.1:{client_ports[b]},INTERNAL://127.0.0.1:{internal_ports[b]}",
            "listener.security.protocol.map": PROTOCOL_MAP,
            "inter.broker.listener.name": "INTERNAL",
            "ssl.keystore.location": str(cert.keystore),
            "ssl.truststore.location": str(ca.path),
            "listener.name.internal.ssl.client.auth": "required",
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=praha-brokers.*$/$1/,DEFAULT",
            "sasl.enabled.mechanisms": MECHANISM.mechanism_name,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": super_users,
        }
    return SecureSetup(directory, ca.path, password), per_broker
