"""Each listener's security, built once at start-up from the broker's settings (Kafka's
`ChannelBuilders`): its TLS context, the SASL mechanisms it enables and the PLAIN users
of its JAAS config, the certificate → principal rules; and the broker's own client
security for the inter-broker listener (controller requests, follower fetches, controlled
shutdown).

Every `ssl.*`/`sasl.*` setting may be given per listener as
`listener.name.<listener>.<setting>`; a SASL mechanism's JAAS config as
`listener.name.<listener>.<mechanism>.sasl.jaas.config` (e.g. `….plain.sasl.jaas.config`).
"""
from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from praha.common import EndPoint
from praha.config import BrokerConfig
from praha.errors import ConfigError
from praha.protocol.client_security import ClientSecurity
from praha.security.jaas import JaasConfig, parse_jaas
from praha.security.principal import MappingRule, parse_rules
from praha.security.tls import SslSettings, client_context, server_context

#: the SASL mechanisms praha serves
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class ListenerSecurity:
    name: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    principal_rules: tuple[MappingRule, ...] = ()
    mechanisms: tuple[str, ...] = ()
    plain_users: Mapping[str, str] = field(default_factory=dict)

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        return self.protocol.endswith("SSL")


PLAINTEXT_LISTENER = ListenerSecurity("PLAINTEXT", "PLAINTEXT")


def enabled_mechanisms(cfg: BrokerConfig, listener: str) -> tuple[str, ...]:
    names = tuple(m.strip().upper() for m in cfg.listener_value(listener, "sasl.enabled.mechanisms").split(",")
                  if m.strip())
    served = tuple(m for m in names if m in SUPPORTED_MECHANISMS)
    if not served:
        raise ConfigError(f"sasl.enabled.mechanisms for listener {listener}: none of {', '.join(names) or 'none'} "
                          f"is served; praha serves {', '.join(SUPPORTED_MECHANISMS)}")
    return served


def jaas_for(cfg: BrokerConfig, listener: str, mechanism: str) -> JaasConfig | None:
    """The JAAS config of `mechanism` on `listener` (then the listener's, then the broker's)."""
    for key in (f"{mechanism.lower()}.sasl.jaas.config", "sasl.jaas.config"):
        text = cfg.listener_value(listener, key)
        if text:
            return parse_jaas(text, f"listener.name.{listener.lower()}.{key}")
    return None


def listener_security(cfg: BrokerConfig, endpoint: EndPoint) -> ListenerSecurity:
    """ConfigError naming the setting when a listener cannot be set up."""
    name, protocol = endpoint.listener, endpoint.security_protocol
    context = rules = None
    if protocol.endswith("SSL"):
        context = server_context(SslSettings.from_lookup(lambda key: cfg.listener_value(name, key)))
        rules = parse_rules(cfg.listener_value(name, "ssl.principal.mapping.rules"))
    mechanisms: tuple[str, ...] = ()
    plain_users: dict[str, str] = {}
    if protocol.startswith("SASL_"):
        mechanisms = enabled_mechanisms(cfg, name)
        if "PLAIN" in mechanisms:
            jaas = jaas_for(cfg, name, "PLAIN")
            plain_users = jaas.plain_users if jaas else {}
            if not plain_users:
                raise ConfigError(
                    f"listener {name} enables PLAIN but listener.name.{name.lower()}.plain.sasl.jaas.config "
                    'names no user_<name>="<password>"'
                )
    return ListenerSecurity(name, protocol, context, rules or (), mechanisms, plain_users)


def inter_broker_security(cfg: BrokerConfig) -> ClientSecurity:
    """How this broker connects to the others' inter-broker listener."""
    listener = cfg.inter_broker_listener
    endpoint = next(e for e in cfg.endpoints if e.listener == listener)
    protocol = endpoint.security_protocol
    context = None
    if protocol.endswith("SSL"):
        context = client_context(SslSettings.from_lookup(lambda key: cfg.listener_value(listener, key)))
    if not protocol.startswith("SASL_"):
        return ClientSecurity(listener, protocol, context)
    mechanism = cfg.sasl_mechanism_inter_broker_protocol.strip().upper()
    if mechanism not in enabled_mechanisms(cfg, listener):
        raise ConfigError(f"sasl.mechanism.inter.broker.protocol: {mechanism} is not enabled on the "
                          f"inter-broker listener {listener}")
    jaas = jaas_for(cfg, listener, mechanism)
    if jaas is None or not jaas.username:
        raise ConfigError(f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config must give the "
                          "broker's own username and password")
    return ClientSecurity(listener, protocol, context, mechanism, jaas.username, jaas.password)
