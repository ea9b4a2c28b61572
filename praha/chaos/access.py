"""How a campaign's clients reach the brokers: plain TCP, or (`praha chaos --secure`) SASL_SSL
with SCRAM-SHA-512 as a principal of their own (praha/chaos/principals.py).

`ClientAccess` turns one principal's credentials into the settings of each client library
(confluent-kafka/librdkafka, kafka-python, praha's own connections) and travels to the client
processes as a file of mode 0600 (never on a command line). Imports nothing heavy: every
client process loads it.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from praha.protocol.client_security import ClientSecurity

#: the SASL mechanism of a secure cluster (praha/cluster/secure.py MECHANISM)
MECHANISM = "SCRAM-SHA-512"


@dataclass(frozen=True)
class ClientAccess:
    """One principal's way in; without a user name, plain TCP."""
    bootstrap: str
    username: str = ""
    password: str = ""
    ca: str = ""  # the PEM file of the cluster's CA

    @property
    def secure(self) -> bool:
        return bool(self.username)

    def librdkafka(self) -> dict[str, Any]:
        """confluent-kafka's (and kcat's) settings, bootstrap.servers included."""
        out: dict[str, Any] = {"bootstrap.servers": self.bootstrap}
        if self.secure:
            out |= {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM,
                    "sasl.username": self.username, "sasl.password": self.password, "ssl.ca.location": self.ca}
        return out

    def kafka_python(self) -> dict[str, Any]:
        """kafka-python's keyword arguments, bootstrap_servers included."""
        out: dict[str, Any] = {"bootstrap_servers": self.bootstrap}
        if self.secure:
            out |= {"security_protocol": "SASL_SSL", "sasl_mechanism": MECHANISM,
                    "sasl_plain_username": self.username, "sasl_plain_password": self.password,
                    "ssl_cafile": self.ca}
        return out

    def security(self) -> ClientSecurity:
        """praha's own connections (BrokerConnection, fetch_metadata, describe_log_dirs)."""
        import ssl

        from praha.protocol.client_security import PLAINTEXT, ClientSecurity

        if not self.secure:
            return PLAINTEXT

        ctx = ssl.create_default_context(cafile=self.ca)
        return ClientSecurity("SASL_SSL", "SASL_SSL", ctx, MECHANISM, self.username, self.password)

    def save(self, path: Path) -> Path:
        """Written readable by its owner only: it may hold a password."""
        path.touch(mode=0o600)
        path.chmod(0o600)
        path.write_text(json.dumps(asdict(self)))
        return path

    @classmethod
    def load(cls, path: Path) -> ClientAccess:
        return cls(**json.loads(path.read_text()))


def process_arguments(access: ClientAccess, file: Path) -> list[str]:
    """A client process's command-line options: --bootstrap, and for a secure principal
    --access FILE (the credentials saved to `file`)."""
    if not access.secure:
        return ["--bootstrap", access.bootstrap]
    return ["--bootstrap", access.bootstrap, "--access", str(access.save(file))]


def from_arguments(bootstrap: str, file: str) -> ClientAccess:
    """What a client process was given (`process_arguments`)."""
    return ClientAccess.load(Path(file)) if file else ClientAccess(bootstrap)
