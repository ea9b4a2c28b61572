"""Broker configuration: `server.properties` parsed and validated by the table.

`BrokerConfig.from_properties(text)` checks every key the table defines
(`praha.config.broker_defs`) with its type and validator; an invalid value raises
`ConfigError` naming the key, so a broker refuses to start rather than run with a surprise.
The settings code reads have typed fields (`setting("key")`); the others the table defines
are kept in `settings` and passed on to the parts that read them (the logs' defaults,
the cleaner). Keys the table does not define are reported once, in one warning, as Kafka
does, and passed on too.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from praha.common import EndPoint
from praha.config.broker_defs import ASSIGNOR_CLASSES, BROKER_CONFIG_BY_NAME, BROKER_CONFIG_DEFS
from praha.config.model import kafka_string, parse_value
from praha.errors import ConfigError

log = logging.getLogger(__name__)

# Dynamic configs (in ZooKeeper, changed while brokers run) of a reassignment throttle, with
# Kafka's names. Topic configs: the replicas it covers, "partition:broker,..." or "*";
# broker configs (`/config/brokers/<id>` or `<default>`): its budget in bytes/s.
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"

_LISTENER_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)://(?P<host>\[[^\]]*\]|[^:]*):(?P<port>\d+)$")

#: Kafka's security protocols (`SecurityProtocol`), by name
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: `listener.security.protocol.map`'s default: each protocol's own name is a listener name
DEFAULT_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
#: `authorizer.class.name` values that turn praha's ACL authoriser on (Kafka's class names)
ACL_AUTHORIZERS = ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer")
#: per-listener settings: `listener.name.<lower-case listener>.<setting>`
LISTENER_PREFIX = "listener.name."


def parse_protocol_map(value: str) -> dict[str, str]:
    """`listener.security.protocol.map`: "NAME:PROTOCOL,..." with Kafka's protocol names."""
    out: dict[str, str] = {}
    for item in (i.strip() for i in value.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise ConfigError(f"listener.security.protocol.map: expected NAME:PROTOCOL, got {item!r}")
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(f"listener.security.protocol.map: unknown security protocol {protocol!r} for {name} "
                              f"(one of {', '.join(SECURITY_PROTOCOLS)})")
        out[name] = protocol
    return out


def parse_listeners(value: str, key: str = "listeners",
                    protocol_map: dict[str, str] | None = None) -> tuple[EndPoint, ...]:
    """Parse `PLAINTEXT://127.0.0.1:9092[,NAME://host:port]` (Kafka's listener syntax); each
    name's security protocol comes from `protocol_map` (Kafka's default map without one)."""
    protocols = parse_protocol_map(DEFAULT_PROTOCOL_MAP) if protocol_map is None else protocol_map
    endpoints = []
    for item in (v.strip() for v in value.split(",")):
        if not item:
            continue
        m = _LISTENER_RE.match(item)
        if not m:
            raise ConfigError(f"{key}: {item!r} is not of the form NAME://host:port")
        port = int(m["port"])
        if not 0 <= port <= 65535:
            raise ConfigError(f"{key}: port {port} out of range")
        name = m["name"].upper()
        if name not in protocols:
            raise ConfigError(f"{key}: no security protocol defined for listener {name} "
                              "(add it to listener.security.protocol.map)")
        # an empty host binds every interface, as Kafka does ("PLAINTEXT://:9092")
        endpoints.append(EndPoint(m["host"], port, name, protocols[name]))
    if not endpoints:
        raise ConfigError(f"{key}: at least one listener is required")
    names = [e.listener for e in endpoints]
    if len(set(names)) != len(names):
        raise ConfigError(f"{key}: each listener name may appear once, got {', '.join(names)}")
    ports = [e.port for e in endpoints if e.port]
    if key == "listeners" and len(set(ports)) != len(ports):
        raise ConfigError(f"{key}: each listener needs its own port, got {value}")
    return tuple(endpoints)


def canonical_host_name() -> str:
    """What Kafka advertises for a listener with an empty host (InetAddress's canonical name)."""
    import socket

    return socket.getfqdn()


def setting(key: str, convert: Callable[[Any], Any] | None = None) -> Any:
    """A `BrokerConfig` field bound to the table's `key`: its default, typed, comes from there.
    `convert` turns the checked value into the field's own form (e.g. a list into a tuple)."""
    d = BROKER_CONFIG_BY_NAME[key]
    default = parse_value(d, d.default)
    return field(default=convert(default) if convert else default, metadata={"key": key, "convert": convert})


def unknown_keys(props: Iterable[str]) -> list[str]:
    """The keys no setting of the table is called (listener overrides are known), sorted."""
    return sorted(k for k in props if k not in BROKER_CONFIG_BY_NAME and not k.startswith(LISTENER_PREFIX))


def _assignors(value: Any) -> tuple[str, ...]:
    """`group.consumer.assignors` (checked by the table) as the short names, Kafka's class names mapped."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(ASSIGNOR_CLASSES.get(n.strip(), n.strip()) for n in items if str(n).strip())


def parse_ip_overrides(text: str) -> dict[str, int]:
    """Kafka's `max.connections.per.ip.overrides`: "host:count,host:count" (ValueError if malformed)."""
    out: dict[str, int] = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ValueError(f"max.connections.per.ip.overrides: expected host:count, got {item!r}")
        out[host.strip()] = int(count)
    return out



@dataclass
class BrokerConfig:
    """Every broker setting praha understands, under Kafka's names (see `KEYS`)."""

    broker_id: int = setting("broker.id")
    listeners: str = setting("listeners")
    advertised_listeners: str = setting("advertised.listeners")
    listener_security_protocol_map: str = setting("listener.security.protocol.map")
    inter_broker_listener_name: str = setting("inter.broker.listener.name")
    security_inter_broker_protocol: str = setting("security.inter.broker.protocol")
    # TLS (Kafka's SslConfigs; PEM key stores only); each may be set per listener
    ssl_keystore_type: str = setting("ssl.keystore.type")
    ssl_keystore_location: str = setting("ssl.keystore.location")
    ssl_keystore_password: str = setting("ssl.keystore.password")
    ssl_key_password: str = setting("ssl.key.password")
    ssl_keystore_certificate_chain: str = setting("ssl.keystore.certificate.chain")
    ssl_keystore_key: str = setting("ssl.keystore.key")
    ssl_truststore_type: str = setting("ssl.truststore.type")
    ssl_truststore_location: str = setting("ssl.truststore.location")
    ssl_truststore_certificates: str = setting("ssl.truststore.certificates")
    ssl_client_auth: str = setting("ssl.client.auth")
    ssl_principal_mapping_rules: str = setting("ssl.principal.mapping.rules")
    ssl_enabled_protocols: str = setting("ssl.enabled.protocols")
    ssl_cipher_suites: str = setting("ssl.cipher.suites")
    ssl_endpoint_identification_algorithm: str = setting("ssl.endpoint.identification.algorithm")
    # SASL (Kafka's BrokerSecurityConfigs); PLAIN and SCRAM-SHA-256/512 are served
    sasl_enabled_mechanisms: str = setting("sasl.enabled.mechanisms")
    sasl_mechanism_inter_broker_protocol: str = setting("sasl.mechanism.inter.broker.protocol")
    sasl_jaas_config: str = setting("sasl.jaas.config")
    # authorisation (Kafka's AclAuthorizer; off while authorizer.class.name is empty)
    authorizer_class_name: str = setting("authorizer.class.name")
    super_users: str = setting("super.users")
    allow_everyone_if_no_acl_found: bool = setting("allow.everyone.if.no.acl.found")
    log_dirs: str = setting("log.dirs")
    zookeeper_connect: str = setting("zookeeper.connect")
    zookeeper_session_timeout_ms: int = setting("zookeeper.session.timeout.ms")
    zookeeper_connection_timeout_ms: int = setting("zookeeper.connection.timeout.ms")
    zookeeper_set_acl: bool = setting("zookeeper.set.acl")
    zookeeper_digest: str = setting("praha.zookeeper.digest")
    # ZooKeeper client security (Kafka's names; praha reads PEM stores only; docs/security.md)
    java_security_auth_login_config: str = setting("java.security.auth.login.config")
    zookeeper_sasl_clientconfig: str = setting("zookeeper.sasl.clientconfig")
    zookeeper_ssl_client_enable: bool = setting("zookeeper.ssl.client.enable")
    zookeeper_client_cnxn_socket: str = setting("zookeeper.clientCnxnSocket")
    zookeeper_ssl_keystore_location: str = setting("zookeeper.ssl.keystore.location")
    zookeeper_ssl_keystore_type: str = setting("zookeeper.ssl.keystore.type")
    zookeeper_ssl_truststore_location: str = setting("zookeeper.ssl.truststore.location")
    zookeeper_ssl_truststore_type: str = setting("zookeeper.ssl.truststore.type")
    zookeeper_ssl_endpoint_identification_algorithm: str = setting("zookeeper.ssl.endpoint.identification.algorithm")
    broker_rack: str = setting("broker.rack")
    controlled_shutdown_enable: bool = setting("controlled.shutdown.enable")
    controlled_shutdown_max_retries: int = setting("controlled.shutdown.max.retries")
    controlled_shutdown_retry_backoff_ms: int = setting("controlled.shutdown.retry.backoff.ms")
    controller_socket_timeout_ms: int = setting("controller.socket.timeout.ms")
    auto_leader_rebalance_enable: bool = setting("auto.leader.rebalance.enable")
    leader_imbalance_per_broker_percentage: int = setting("leader.imbalance.per.broker.percentage")
    leader_imbalance_check_interval_seconds: int = setting("leader.imbalance.check.interval.seconds")
    unclean_leader_election_enable: bool = setting("unclean.leader.election.enable")
    delete_topic_enable: bool = setting("delete.topic.enable")
    auto_create_topics_enable: bool = setting("auto.create.topics.enable")
    min_insync_replicas: int = setting("min.insync.replicas")
    replica_lag_time_max_ms: int = setting("replica.lag.time.max.ms")
    replica_fetch_max_bytes: int = setting("replica.fetch.max.bytes")
    replica_fetch_wait_max_ms: int = setting("replica.fetch.wait.max.ms")
    replica_fetch_backoff_ms: int = setting("replica.fetch.backoff.ms")
    replica_fetch_response_max_bytes: int = setting("replica.fetch.response.max.bytes")
    replica_socket_timeout_ms: int = setting("replica.socket.timeout.ms")
    replica_high_watermark_checkpoint_interval_ms: int = setting("replica.high.watermark.checkpoint.interval.ms")
    default_replication_factor: int = setting("default.replication.factor")
    num_partitions: int = setting("num.partitions")
    message_max_bytes: int = setting("message.max.bytes")
    socket_request_max_bytes: int = setting("socket.request.max.bytes")
    # connection limits (Kafka's names and defaults; see praha/broker/network/connection_quotas.py)
    max_connections: int = setting("max.connections")
    max_connections_per_ip: int = setting("max.connections.per.ip")
    max_connections_per_ip_overrides: str = setting("max.connections.per.ip.overrides")
    max_connection_creation_rate: int = setting("max.connection.creation.rate")
    connections_max_idle_ms: int = setting("connections.max.idle.ms")
    quota_window_num: int = setting("quota.window.num")
    quota_window_size_seconds: int = setting("quota.window.size.seconds")
    partial_request_timeout_ms: int = setting("praha.partial.request.timeout.ms")
    log_segment_bytes: int = setting("log.segment.bytes")
    log_retention_bytes: int = setting("log.retention.bytes")
    log_retention_check_interval_ms: int = setting("log.retention.check.interval.ms")
    log_flush_interval_messages: int = setting("log.flush.interval.messages")
    isr_change_notification_interval_ms: int = setting("isr.change.notification.interval.ms")
    # consumer groups (Kafka's GroupCoordinatorConfig / OffsetConfig names and defaults)
    group_min_session_timeout_ms: int = setting("group.min.session.timeout.ms")
    group_max_session_timeout_ms: int = setting("group.max.session.timeout.ms")
    group_initial_rebalance_delay_ms: int = setting("group.initial.rebalance.delay.ms")
    group_max_size: int = setting("group.max.size")
    # KIP-848 consumer groups (Kafka 4's GroupCoordinatorConfig names and defaults)
    group_consumer_heartbeat_interval_ms: int = setting("group.consumer.heartbeat.interval.ms")
    group_consumer_session_timeout_ms: int = setting("group.consumer.session.timeout.ms")
    group_consumer_max_size: int = setting("group.consumer.max.size")
    group_consumer_min_session_timeout_ms: int = setting("group.consumer.min.session.timeout.ms")
    group_consumer_max_session_timeout_ms: int = setting("group.consumer.max.session.timeout.ms")
    group_consumer_min_heartbeat_interval_ms: int = setting("group.consumer.min.heartbeat.interval.ms")
    group_consumer_max_heartbeat_interval_ms: int = setting("group.consumer.max.heartbeat.interval.ms")
    group_consumer_assignors: tuple[str, ...] = setting("group.consumer.assignors", convert=_assignors)
    group_consumer_migration_policy: str = setting("group.consumer.migration.policy", convert=str.lower)
    # KIP-932 share groups
    group_share_heartbeat_interval_ms: int = setting("group.share.heartbeat.interval.ms")
    group_share_session_timeout_ms: int = setting("group.share.session.timeout.ms")
    group_share_max_size: int = setting("group.share.max.size")
    group_share_record_lock_duration_ms: int = setting("group.share.record.lock.duration.ms")
    group_share_delivery_count_limit: int = setting("group.share.delivery.count.limit")
    group_share_partition_max_record_locks: int = setting("group.share.partition.max.record.locks")
    share_auto_offset_reset: str = setting("share.auto.offset.reset", convert=str.lower)
    share_isolation_level: str = setting("share.isolation.level", convert=str.lower)
    offsets_topic_num_partitions: int = setting("offsets.topic.num.partitions")
    offsets_topic_replication_factor: int = setting("offsets.topic.replication.factor")
    offsets_topic_segment_bytes: int = setting("offsets.topic.segment.bytes")
    offsets_retention_minutes: int = setting("offsets.retention.minutes")
    offsets_retention_check_interval_ms: int = setting("offsets.retention.check.interval.ms")
    offsets_commit_timeout_ms: int = setting("offsets.commit.timeout.ms")
    offset_metadata_max_bytes: int = setting("offset.metadata.max.bytes")
    # transactions (Kafka's TransactionLogConfig / TransactionStateManagerConfig names and defaults)
    request_timeout_ms: int = setting("request.timeout.ms")
    transaction_state_log_num_partitions: int = setting("transaction.state.log.num.partitions")
    transaction_state_log_replication_factor: int = setting("transaction.state.log.replication.factor")
    transaction_state_log_min_isr: int = setting("transaction.state.log.min.isr")
    transaction_state_log_segment_bytes: int = setting("transaction.state.log.segment.bytes")
    transaction_max_timeout_ms: int = setting("transaction.max.timeout.ms")
    transactional_id_expiration_ms: int = setting("transactional.id.expiration.ms")
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = setting(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms"
    )
    transaction_remove_expired_transaction_cleanup_interval_ms: int = setting(
        "transaction.remove.expired.transaction.cleanup.interval.ms"
    )
    transaction_partition_verification_enable: bool = setting("transaction.partition.verification.enable")
    schema_registry_listeners: str = setting("schema.registry.listeners")
    schema_registry_topic_replication_factor: int = setting("schema.registry.topic.replication.factor")
    metrics_port: int = setting("praha.metrics.port")
    metrics_host: str = setting("praha.metrics.host")
    state_change_log_dir: str = setting("praha.state.change.log.dir")
    cluster_id: str = setting("praha.cluster.id")
    #: values `server.properties` gave for the table's settings that have no field above
    settings: dict[str, str] = field(default_factory=dict)
    #: keys the table does not define (reported once at start-up, passed on)
    unknown: dict[str, str] = field(default_factory=dict)
    #: `listener.name.<listener>.<setting>` overrides, by full key
    listener_overrides: dict[str, str] = field(default_factory=dict)
    #: the keys `server.properties` set (DescribeConfigs calls their values STATIC_BROKER_CONFIG)
    given_keys: frozenset[str] = field(default_factory=frozenset)

    # ---- derived views ------------------------------------------------------------
    @property
    def protocol_map(self) -> dict[str, str]:
        return parse_protocol_map(self.listener_security_protocol_map)

    @property
    def endpoints(self) -> tuple[EndPoint, ...]:
        return parse_listeners(self.listeners, "listeners", self.protocol_map)

    @property
    def advertised_endpoints(self) -> tuple[EndPoint, ...]:
        """`advertised.listeners` (a listener it leaves out is advertised as it listens); an
        empty host is advertised as this machine's canonical host name, as Kafka does."""
        given = {} if not self.advertised_listeners else {
            e.listener: e for e in parse_listeners(self.advertised_listeners, "advertised.listeners",
                                                   self.protocol_map)}
        chosen = [given.get(e.listener, e) for e in self.endpoints]
        return tuple(e if e.host else dataclasses.replace(e, host=canonical_host_name()) for e in chosen)

    @property
    def inter_broker_listener(self) -> str:
        """The listener brokers and the controller use to reach each other (Kafka: the
        name given, else the listener named as `security.inter.broker.protocol`)."""
        return (self.inter_broker_listener_name or self.security_inter_broker_protocol).strip().upper()

    def listener_value(self, listener: str, key: str) -> str:
        """A setting for one listener: `listener.name.<listener>.<key>`, else the broker-wide one."""
        override = self.listener_overrides.get(f"{LISTENER_PREFIX}{listener.lower()}.{key}")
        if override is not None:
            return override
        return self.value_of(key) or self.unknown.get(key, "")

    def value_of(self, key: str) -> str | None:
        """A table setting's value in effect, as Kafka spells it (None: unset, no default)."""
        f = self.keys().get(key)
        if f is not None:
            return kafka_string(getattr(self, f.name))
        if key in self.settings:
            return self.settings[key]
        d = BROKER_CONFIG_BY_NAME.get(key)
        return d.default if d is not None else None

    @property
    def log_dir_list(self) -> list[Path]:
        return [Path(p.strip()) for p in self.log_dirs.split(",") if p.strip()]

    def check_log_dirs(self) -> list[str]:
        """Each of `log.dirs` exists (created if missing) and takes a file. The ones that do
        not are returned, one line each: the broker starts with them offline, as Kafka does.
        If none does, a broker that cannot write its logs says so at start-up, in one line
        (ConfigError)."""
        problems = []
        for d in self.log_dir_list:
            try:
                d.mkdir(parents=True, exist_ok=True)
                probe = d / ".praha-write-check"
                probe.write_bytes(b"")
                probe.unlink()
            except OSError as e:
                problems.append(f"log.dirs: cannot use {str(d)!r}: {e.strerror or e}")
        if problems and len(problems) == len(self.log_dir_list):
            raise ConfigError(problems[0])
        return problems

    # ---- parsing ------------------------------------------------------------------
    @classmethod
    @functools.cache
    def keys(cls) -> dict[str, dataclasses.Field[Any]]:
        """The fields bound to the table, by key (computed once per class: read, never changed)."""
        return {f.metadata["key"]: f for f in dataclasses.fields(cls) if "key" in f.metadata}

    @classmethod
    def from_dict(cls, props: dict[str, str]) -> BrokerConfig:
        by_key = cls.keys()
        values: dict[str, Any] = {}
        settings: dict[str, str] = {}
        unknown: dict[str, str] = {}
        overrides: dict[str, str] = {}
        for key, raw in props.items():
            if key.startswith(LISTENER_PREFIX):
                overrides[key] = raw.strip()
                continue
            d = BROKER_CONFIG_BY_NAME.get(key)
            if d is None:
                unknown[key] = raw
                continue
            value = d.parse(raw)  # ConfigError naming the key
            f = by_key.get(key)
            if f is not None:
                convert = f.metadata["convert"]
                values[f.name] = convert(value) if convert else value
            else:
                settings[key] = raw.strip()
        cfg = cls(**values, settings=settings, unknown=unknown, listener_overrides=overrides,
                  given_keys=frozenset(props))
        cfg.validate()
        ignored = unknown_keys(props)
        if ignored:
            log.warning("%d unknown configuration keys ignored: %s", len(ignored), ", ".join(ignored))
        return cfg

    @classmethod
    def from_properties(cls, text: str) -> BrokerConfig:
        return cls.from_dict(parse_properties(text))

    @classmethod
    def from_file(cls, path: str | Path) -> BrokerConfig:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
        return cls.from_properties(text)

    def validate(self) -> None:
        if self.broker_id < 0:
            raise ConfigError("broker.id is required and must be >= 0")
        if not self.zookeeper_connect:
            raise ConfigError("zookeeper.connect is required")
        if not self.log_dir_list:
            raise ConfigError("log.dirs must name at least one directory")
        try:
            parse_ip_overrides(self.max_connections_per_ip_overrides)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        self.check_listeners()

    def check_listeners(self) -> None:
        """Listener names, protocols and the inter-broker listener agree (Kafka's checks)."""
        names = {e.listener for e in self.endpoints}
        advertised = {e.listener for e in self.advertised_endpoints}
        extra = {e.listener for e in parse_listeners(self.advertised_listeners, "advertised.listeners",
                                                     self.protocol_map)} - names if self.advertised_listeners else set()
        if extra:
            raise ConfigError(f"advertised.listeners: {', '.join(sorted(extra))} not among listeners")
        if self.inter_broker_listener_name and "security.inter.broker.protocol" in self.given_keys:
            raise ConfigError("only one of inter.broker.listener.name and security.inter.broker.protocol may be set")
        if self.security_inter_broker_protocol.upper() not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"security.inter.broker.protocol: unknown protocol {self.security_inter_broker_protocol!r}"
            )
        if self.inter_broker_listener not in advertised:
            raise ConfigError(f"inter.broker.listener.name: {self.inter_broker_listener} must be one of the "
                              f"advertised listeners ({', '.join(sorted(advertised))})")
        if self.zookeeper_digest and ":" not in self.zookeeper_digest:
            raise ConfigError("praha.zookeeper.digest: expected user:password (the brokers' ZooKeeper identity)")
        if self.authorizer_class_name not in ACL_AUTHORIZERS + ("",):
            raise ConfigError(f"authorizer.class.name: praha's authoriser is {ACL_AUTHORIZERS[0]}, "
                              f"not {self.authorizer_class_name!r}")
        if self.ssl_client_auth.lower() not in ("none", "requested", "required"):
            raise ConfigError(f"ssl.client.auth: expected none, requested or required, got {self.ssl_client_auth!r}")

    def all_values(self) -> dict[str, str]:
        """Every setting this broker knows, as `server.properties` would spell it: each of the
        table's with its value in effect (those without a value left out), then the keys the
        table does not define."""
        out = {}
        for d in BROKER_CONFIG_DEFS:
            v = self.value_of(d.name)
            if v is not None:
                out[d.name] = v
        return {**out, **self.unknown}

    def static_values(self) -> dict[str, str]:
        """The settings `server.properties` gave."""
        return {k: v for k, v in self.all_values().items() if k in self.given_keys}

    def passed_on_properties(self) -> dict[str, str]:
        """What the parts that read broker settings themselves (the logs' defaults, the
        cleaner) are given: the values set (in `server.properties` or in code), never a
        default, so that Kafka's precedence among synonyms holds: `log.retention.hours=1`
        alone must not lose to a default of `log.retention.ms`."""
        out = {}
        for f in dataclasses.fields(self):
            if "key" not in f.metadata:
                continue
            v = getattr(self, f.name)
            if f.metadata["key"] in self.given_keys or v != f.default:
                out[f.metadata["key"]] = kafka_string(v)
        return {**out, **self.settings, **self.unknown}


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties subset: `key=value` or `key: value`, `#`/`!` comments, blank lines."""
    props: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        m = re.match(r"^([^=:\s]+)\s*[=:]\s*(.*)$", s)
        if not m:
            raise ConfigError(f"line {lineno}: expected key=value, got {s!r}")
        props[m.group(1)] = m.group(2)
    return props
