"""The registry a broker runs (`schema.registry.listeners` set): the `_schemas` reader and
writer, the primary's seat in ZooKeeper, the HTTP server. The broker calls `start` once it
is registered and `stop` when it shuts down; nothing else of the broker is touched."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from praha.config import BrokerConfig
from praha.protocol.client_security import ClientSecurity
from praha.registry import api
from praha.registry.http import Access, RegistryHttpServer
from praha.registry.model import parse_listener
from praha.registry.primary import PrimarySeat
from praha.registry.records import TOPIC
from praha.registry.state import RegistryState
from praha.registry.storage import SchemasLog
from praha.security.credentials import read_credentials
from praha.security.tls import SslSettings, server_context
from praha.zk.admin_zk import create_topic_if_absent
from praha.zk.store import ZkStore

log = logging.getLogger(__name__)


def kafka_client_config(security: ClientSecurity, host: str, port: int) -> dict[str, Any]:
    """kafka-python settings for the broker's own inter-broker listener."""
    out: dict[str, Any] = {"bootstrap_servers": f"{host}:{port}", "security_protocol": security.protocol,
                           "request_timeout_ms": 30000}
    if security.ssl_context is not None:
        out["ssl_context"] = security.ssl_context
    if security.protocol.startswith("SASL_"):
        out.update(sasl_mechanism=security.sasl_mechanism, sasl_plain_username=security.username,
                   sasl_plain_password=security.password)
    return out


class RegistryService:
    def __init__(self, config: BrokerConfig, store: ZkStore, inter_broker: ClientSecurity,
                 may_alter: Callable[[str, str], bool] | None):
        listener = parse_listener(config.schema_registry_listeners)
        assert listener is not None
        self.scheme, host, port = listener
        ep = next(e for e in config.endpoints if e.listener == inter_broker.listener)
        self.state = RegistryState()
        self.store = store
        rf = config.schema_registry_topic_replication_factor

        def create_topic() -> None:
            live = len(store.get_live_brokers()[0])
            if create_topic_if_absent(store, TOPIC, 1, max(1, min(rf, live)), {"cleanup.policy": "compact"}):
                log.info("schema registry: created %s (replication factor %d)", TOPIC, max(1, min(rf, live)))

        self.log = SchemasLog(self.state, kafka_client_config(inter_broker, ep.host, ep.port),
                              topic_exists=lambda: store.exists(f"/brokers/topics/{TOPIC}") is not None,
                              create_topic=create_topic)
        tls = forward_tls = None
        access = None
        if self.scheme == "https":
            settings = SslSettings.from_lookup(lambda key: config.listener_value(inter_broker.listener, key))
            tls = server_context(settings)
            import ssl
            tls.verify_mode = ssl.CERT_NONE  # clients prove who they are with basic auth
            forward_tls = inter_broker.ssl_context
        if may_alter is not None:
            access = Access(credentials=lambda user: read_credentials(store, user), may_alter=may_alter)
        self.seat: PrimarySeat | None = None
        self.registry = api.Registry(self.state, self.log, self._allocate_id)
        self.http = RegistryHttpServer(self.registry, host, port, self._is_primary, self._primary_url, tls, access,
                                       forward_tls)
        self.url = f"{self.scheme}://{host}:{self.http.port}"
        self.seat = PrimarySeat(store.client, config.broker_id, self.url)

    def _allocate_id(self, at_least: int) -> int:
        assert self.seat is not None
        return self.seat.allocate_id(at_least)

    def _is_primary(self) -> bool:
        return self.seat is not None and self.seat.is_primary()

    def _primary_url(self) -> str:
        assert self.seat is not None
        return self.seat.primary_url()

    def start(self) -> None:
        self.log.start()
        assert self.seat is not None
        self.seat.start()
        self.http.start()
        log.info("schema registry listening on %s", self.url)

    def stop(self) -> None:
        self.http.stop()
        if self.seat is not None:
            self.seat.stop()
        self.log.stop()
