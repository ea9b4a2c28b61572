"""Which cluster the console shows and how it connects: bootstrap servers, ZooKeeper (for the
facts only ZooKeeper has: the controller epoch, broker epochs), TLS/SASL, the state-change
logs (the timeline), the schema registry. Built once from the command line."""
from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from praha.protocol.client_security import PLAINTEXT, ClientSecurity


@dataclass(frozen=True)
class Target:
    bootstrap: str
    zookeeper: str | None = None
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = ""
    ca_file: str | None = None
    state_change_logs: Path | None = None
    schema_registry: str | None = None

    @property
    def needs_login(self) -> bool:
        """SASL listeners: every visitor logs in and the console acts as that user."""
        return bool(self.sasl_mechanism)

    def confluent(self, user: str = "", password: str = "") -> dict[str, str]:
        """librdkafka settings for this cluster as `user`."""
        cfg = {"bootstrap.servers": self.bootstrap, "security.protocol": self.security_protocol}
        if self.ca_file:
            cfg["ssl.ca.location"] = self.ca_file
        if self.sasl_mechanism:
            cfg.update({"sasl.mechanism": self.sasl_mechanism, "sasl.username": user, "sasl.password": password})
        return cfg

    def wire(self, user: str = "", password: str = "") -> ClientSecurity:
        """praha's own wire clients' settings for this cluster as `user`."""
        if self.security_protocol == "PLAINTEXT":
            return PLAINTEXT
        ctx = None
        if self.security_protocol in ("SSL", "SASL_SSL"):
            ctx = ssl.create_default_context(cafile=self.ca_file)
        return ClientSecurity(self.security_protocol, self.security_protocol, ctx, self.sasl_mechanism, user, password)
