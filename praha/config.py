"""Broker configuration: Kafka's property names and defaults, validated at start-up.

`BrokerConfig.from_properties(text)` parses a `server.properties` file. Keys it does not
name are kept and passed on (the logs' and the cleaner's settings, read where they apply:
`configdefs.BROKER_KEYS_READ_ELSEWHERE`); the rest are reported once, in one warning, as
Kafka does. An invalid value raises `ConfigError` naming the key, so a broker refuses to
start rather than run with a surprise.
"""
from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from praha.common import EndPoint
from praha.configdefs import BROKER_KEYS_READ_ELSEWHERE
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


def _bool(v: str) -> bool:
    s = v.strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, got {v!r}")


def _int(v: str) -> int:
    return int(v.strip())


def _str(v: str) -> str:
    return v.strip()


#: the server-side assignors of KIP-848 by name, and Kafka's class names for them
CONSUMER_GROUP_ASSIGNORS = ("uniform", "range")
_ASSIGNOR_CLASSES = {"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
                     "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range"}


def _assignors(v: str) -> tuple[str, ...]:
    names = tuple(_ASSIGNOR_CLASSES.get(n.strip(), n.strip()) for n in v.split(",") if n.strip())
    unknown = [n for n in names if n not in CONSUMER_GROUP_ASSIGNORS]
    if unknown or not names:
        raise ValueError(f"unknown assignor(s) {', '.join(unknown) or '(none given)'}; "
                         f"known: {', '.join(CONSUMER_GROUP_ASSIGNORS)}")
    return names


def _migration_policy(v: str) -> str:
    s = v.strip().lower()
    if s not in ("disabled", "upgrade", "downgrade", "bidirectional"):
        raise ValueError(f"expected disabled, upgrade, downgrade or bidirectional, got {v!r}")
    return s


def _option(kafka_name: str, default: Any, parse: Callable[[str], Any], minimum: float | None = None, doc: str = "") -> Any:
    return field(default=default, metadata={"key": kafka_name, "parse": parse, "min": minimum, "doc": doc})


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

    broker_id: int = _option("broker.id", -1, _int, 0, "unique id of this broker")
    listeners: str = _option("listeners", "PLAINTEXT://127.0.0.1:9092", _str)
    advertised_listeners: str = _option("advertised.listeners", "", _str)
    listener_security_protocol_map: str = _option("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP, _str)
    inter_broker_listener_name: str = _option("inter.broker.listener.name", "", _str)
    security_inter_broker_protocol: str = _option("security.inter.broker.protocol", "PLAINTEXT", _str)
    # TLS (Kafka's SslConfigs; PEM key stores only); each may be set per listener
    ssl_keystore_type: str = _option("ssl.keystore.type", "PEM", _str)
    ssl_keystore_location: str = _option("ssl.keystore.location", "", _str)
    ssl_keystore_password: str = _option("ssl.keystore.password", "", _str)
    ssl_key_password: str = _option("ssl.key.password", "", _str)
    ssl_keystore_certificate_chain: str = _option("ssl.keystore.certificate.chain", "", _str)
    ssl_keystore_key: str = _option("ssl.keystore.key", "", _str)
    ssl_truststore_type: str = _option("ssl.truststore.type", "PEM", _str)
    ssl_truststore_location: str = _option("ssl.truststore.location", "", _str)
    ssl_truststore_certificates: str = _option("ssl.truststore.certificates", "", _str)
    ssl_client_auth: str = _option("ssl.client.auth", "none", _str)
    ssl_principal_mapping_rules: str = _option("ssl.principal.mapping.rules", "DEFAULT", _str)
    ssl_enabled_protocols: str = _option("ssl.enabled.protocols", "TLSv1.2,TLSv1.3", _str)
    ssl_cipher_suites: str = _option("ssl.cipher.suites", "", _str)
    ssl_endpoint_identification_algorithm: str = _option("ssl.endpoint.identification.algorithm", "https", _str)
    # SASL (Kafka's BrokerSecurityConfigs); PLAIN and SCRAM-SHA-256/512 are served
    sasl_enabled_mechanisms: str = _option("sasl.enabled.mechanisms", "GSSAPI", _str)
    sasl_mechanism_inter_broker_protocol: str = _option("sasl.mechanism.inter.broker.protocol", "GSSAPI", _str)
    sasl_jaas_config: str = _option("sasl.jaas.config", "", _str)
    # authorisation (Kafka's AclAuthorizer; off while authorizer.class.name is empty)
    authorizer_class_name: str = _option("authorizer.class.name", "", _str)
    super_users: str = _option("super.users", "", _str)
    allow_everyone_if_no_acl_found: bool = _option("allow.everyone.if.no.acl.found", False, _bool)
    log_dirs: str = _option("log.dirs", "/tmp/praha-logs", _str)
    zookeeper_connect: str = _option("zookeeper.connect", "", _str)
    zookeeper_session_timeout_ms: int = _option("zookeeper.session.timeout.ms", 18000, _int, 1000)
    zookeeper_connection_timeout_ms: int = _option("zookeeper.connection.timeout.ms", 18000, _int, 100)
    zookeeper_set_acl: bool = _option("zookeeper.set.acl", False, _bool)
    zookeeper_digest: str = _option("praha.zookeeper.digest", "", _str,
                                    doc="user:password the broker authenticates to ZooKeeper with (digest scheme)")
    # ZooKeeper client security (Kafka's names; praha reads PEM stores only; docs/security.md)
    java_security_auth_login_config: str = _option(
        "java.security.auth.login.config", "", _str,
        doc="JAAS file whose Client section (DIGEST-MD5) logs the broker in to ZooKeeper (else KAFKA_OPTS -D...)")
    zookeeper_sasl_clientconfig: str = _option("zookeeper.sasl.clientconfig", "Client", _str)
    zookeeper_ssl_client_enable: bool = _option("zookeeper.ssl.client.enable", False, _bool)
    zookeeper_client_cnxn_socket: str = _option("zookeeper.clientCnxnSocket", "", _str)
    zookeeper_ssl_keystore_location: str = _option("zookeeper.ssl.keystore.location", "", _str)
    zookeeper_ssl_keystore_type: str = _option("zookeeper.ssl.keystore.type", "PEM", _str)
    zookeeper_ssl_truststore_location: str = _option("zookeeper.ssl.truststore.location", "", _str)
    zookeeper_ssl_truststore_type: str = _option("zookeeper.ssl.truststore.type", "PEM", _str)
    zookeeper_ssl_endpoint_identification_algorithm: str = _option(
        "zookeeper.ssl.endpoint.identification.algorithm", "HTTPS", _str)
    broker_rack: str = _option("broker.rack", "", _str)
    controlled_shutdown_enable: bool = _option("controlled.shutdown.enable", True, _bool)
    controlled_shutdown_max_retries: int = _option("controlled.shutdown.max.retries", 3, _int, 0)
    controlled_shutdown_retry_backoff_ms: int = _option("controlled.shutdown.retry.backoff.ms", 5000, _int, 0)
    controller_socket_timeout_ms: int = _option("controller.socket.timeout.ms", 30000, _int, 100)
    auto_leader_rebalance_enable: bool = _option("auto.leader.rebalance.enable", True, _bool)
    leader_imbalance_per_broker_percentage: int = _option("leader.imbalance.per.broker.percentage", 10, _int, 0)
    leader_imbalance_check_interval_seconds: int = _option("leader.imbalance.check.interval.seconds", 300, _int, 1)
    unclean_leader_election_enable: bool = _option("unclean.leader.election.enable", False, _bool)
    delete_topic_enable: bool = _option("delete.topic.enable", True, _bool)
    auto_create_topics_enable: bool = _option("auto.create.topics.enable", True, _bool)
    min_insync_replicas: int = _option("min.insync.replicas", 1, _int, 1)
    replica_lag_time_max_ms: int = _option("replica.lag.time.max.ms", 30000, _int, 1)
    replica_fetch_max_bytes: int = _option("replica.fetch.max.bytes", 1048576, _int, 1)
    replica_fetch_wait_max_ms: int = _option("replica.fetch.wait.max.ms", 500, _int, 0)
    replica_fetch_backoff_ms: int = _option("replica.fetch.backoff.ms", 1000, _int, 0)
    replica_fetch_response_max_bytes: int = _option("replica.fetch.response.max.bytes", 10485760, _int, 0)
    replica_socket_timeout_ms: int = _option("replica.socket.timeout.ms", 30000, _int, 1)
    replica_high_watermark_checkpoint_interval_ms: int = _option(
        "replica.high.watermark.checkpoint.interval.ms", 5000, _int, 1)
    default_replication_factor: int = _option("default.replication.factor", 1, _int, 1)
    num_partitions: int = _option("num.partitions", 1, _int, 1)
    message_max_bytes: int = _option("message.max.bytes", 1048588, _int, 0)
    socket_request_max_bytes: int = _option("socket.request.max.bytes", 104857600, _int, 1)
    # connection limits (Kafka's names and defaults; see praha/broker/connection_quotas.py)
    max_connections: int = _option("max.connections", 2147483647, _int, 0)
    max_connections_per_ip: int = _option("max.connections.per.ip", 2147483647, _int, 0)
    max_connections_per_ip_overrides: str = _option("max.connections.per.ip.overrides", "", _str)
    max_connection_creation_rate: int = _option("max.connection.creation.rate", 2147483647, _int, 0)
    connections_max_idle_ms: int = _option("connections.max.idle.ms", 600000, _int, 1)
    quota_window_num: int = _option("quota.window.num", 11, _int, 1)
    quota_window_size_seconds: int = _option("quota.window.size.seconds", 1, _int, 1)
    partial_request_timeout_ms: int = _option("praha.partial.request.timeout.ms", 30000, _int, 1,
                                              "close a connection whose request has not fully arrived in this time")
    log_segment_bytes: int = _option("log.segment.bytes", 1073741824, _int, 14)
    log_roll_ms: int = _option("log.roll.ms", 604800000, _int, 1)
    log_retention_ms: int = _option("log.retention.ms", 604800000, _int, -1)
    log_retention_bytes: int = _option("log.retention.bytes", -1, _int, -1)
    log_retention_check_interval_ms: int = _option("log.retention.check.interval.ms", 300000, _int, 1)
    log_flush_interval_messages: int = _option("log.flush.interval.messages", 9223372036854775807, _int, 1)
    isr_change_notification_interval_ms: int = _option("isr.change.notification.interval.ms", 2500, _int, 1)
    # consumer groups (Kafka's GroupCoordinatorConfig / OffsetConfig names and defaults)
    group_min_session_timeout_ms: int = _option("group.min.session.timeout.ms", 6000, _int, 0)
    group_max_session_timeout_ms: int = _option("group.max.session.timeout.ms", 1800000, _int, 0)
    group_initial_rebalance_delay_ms: int = _option("group.initial.rebalance.delay.ms", 3000, _int, 0)
    group_max_size: int = _option("group.max.size", 2147483647, _int, 1)
    # KIP-848 consumer groups (Kafka 4's GroupCoordinatorConfig names and defaults)
    group_consumer_heartbeat_interval_ms: int = _option("group.consumer.heartbeat.interval.ms", 5000, _int, 1)
    group_consumer_session_timeout_ms: int = _option("group.consumer.session.timeout.ms", 45000, _int, 1)
    group_consumer_max_size: int = _option("group.consumer.max.size", 2147483647, _int, 1)
    group_consumer_assignors: tuple[str, ...] = _option(
        "group.consumer.assignors", CONSUMER_GROUP_ASSIGNORS, _assignors, None,
        "server-side assignors offered, the first the default: uniform, range (or Kafka's class names)")
    group_consumer_migration_policy: str = _option(
        "group.consumer.migration.policy", "bidirectional", _migration_policy, None,
        "disabled, upgrade, downgrade or bidirectional (Kafka 4's ConsumerGroupMigrationPolicy)")
    offsets_topic_num_partitions: int = _option("offsets.topic.num.partitions", 50, _int, 1)
    offsets_topic_replication_factor: int = _option("offsets.topic.replication.factor", 3, _int, 1)
    offsets_topic_segment_bytes: int = _option("offsets.topic.segment.bytes", 104857600, _int, 1)
    offsets_retention_minutes: int = _option("offsets.retention.minutes", 10080, _int, 1)
    offsets_retention_check_interval_ms: int = _option("offsets.retention.check.interval.ms", 600000, _int, 1)
    offsets_commit_timeout_ms: int = _option("offsets.commit.timeout.ms", 5000, _int, 1)
    offset_metadata_max_bytes: int = _option("offset.metadata.max.bytes", 4096, _int, 0)
    # transactions (Kafka's TransactionLogConfig / TransactionStateManagerConfig names and defaults)
    request_timeout_ms: int = _option("request.timeout.ms", 30000, _int, 0)
    transaction_state_log_num_partitions: int = _option("transaction.state.log.num.partitions", 50, _int, 1)
    transaction_state_log_replication_factor: int = _option("transaction.state.log.replication.factor", 3, _int, 1)
    transaction_state_log_min_isr: int = _option("transaction.state.log.min.isr", 2, _int, 1)
    transaction_state_log_segment_bytes: int = _option("transaction.state.log.segment.bytes", 104857600, _int, 1)
    transaction_max_timeout_ms: int = _option("transaction.max.timeout.ms", 900000, _int, 1)
    transactional_id_expiration_ms: int = _option("transactional.id.expiration.ms", 604800000, _int, 1)
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = _option(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms", 10000, _int, 1)
    transaction_remove_expired_transaction_cleanup_interval_ms: int = _option(
        "transaction.remove.expired.transaction.cleanup.interval.ms", 3600000, _int, 1)
    transaction_partition_verification_enable: bool = _option("transaction.partition.verification.enable", True, _bool,
                                                              doc="KIP-890: a leader asks the transaction coordinator "
                                                                  "before a transactional append opens a transaction")
    schema_registry_listeners: str = _option("schema.registry.listeners", "", _str,
                                             doc="the Schema Registry's URL, http://HOST:PORT or https://HOST:PORT "
                                                 "(off when empty; docs/schema-registry.md)")
    schema_registry_topic_replication_factor: int = _option("schema.registry.topic.replication.factor", 3, _int, 1,
                                                            "replication factor of _schemas (at most the live brokers)")
    metrics_port: int = _option("praha.metrics.port", 0, _int, 0, "HTTP port for Prometheus metrics (0 = any free)")
    metrics_host: str = _option("praha.metrics.host", "127.0.0.1", _str,
                                doc="address the Prometheus endpoint binds (\"\" = every interface)")
    state_change_log_dir: str = _option("praha.state.change.log.dir", "", _str, doc="where state-change.log goes (default: first log dir)")
    cluster_id: str = _option("praha.cluster.id", "", _str)
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
        f = self.keys().get(key)
        return str(getattr(self, f.name)) if f is not None else self.unknown.get(key, "")

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
    def keys(cls) -> dict[str, dataclasses.Field[Any]]:
        return {f.metadata["key"]: f for f in dataclasses.fields(cls) if "key" in f.metadata}

    @classmethod
    def from_dict(cls, props: dict[str, str]) -> "BrokerConfig":
        by_key = cls.keys()
        values: dict[str, Any] = {}
        unknown: dict[str, str] = {}
        overrides: dict[str, str] = {}
        for key, raw in props.items():
            if key.startswith(LISTENER_PREFIX):
                overrides[key] = raw.strip()
                continue
            f = by_key.get(key)
            if f is None:
                unknown[key] = raw
                continue
            try:
                value = f.metadata["parse"](raw)
            except ValueError as e:
                raise ConfigError(f"invalid value {raw!r} for {key}: {e}") from None
            minimum = f.metadata["min"]
            if minimum is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and value < minimum:
                raise ConfigError(f"invalid value {raw!r} for {key}: must be at least {minimum}")
            values[f.name] = value
        cfg = cls(**values, unknown=unknown, listener_overrides=overrides, given_keys=frozenset(props))
        cfg.validate()
        ignored = sorted(k for k in unknown if k not in BROKER_KEYS_READ_ELSEWHERE)
        if ignored:
            log.warning("%d unknown configuration keys ignored: %s", len(ignored), ", ".join(ignored))
        return cfg

    @classmethod
    def from_properties(cls, text: str) -> "BrokerConfig":
        return cls.from_dict(parse_properties(text))

    @classmethod
    def from_file(cls, path: str | Path) -> "BrokerConfig":
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
            raise ConfigError(f"security.inter.broker.protocol: unknown protocol {self.security_inter_broker_protocol!r}")
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
        """Every setting this broker knows, as `server.properties` would spell it (known keys
        with their defaults, then the keys praha does not interpret)."""
        out = {}
        for f in dataclasses.fields(self):
            if "key" in f.metadata:
                v = getattr(self, f.name)
                out[f.metadata["key"]] = str(v).lower() if isinstance(v, bool) else str(v)
        return {**out, **self.unknown}

    def static_values(self) -> dict[str, str]:
        """The settings `server.properties` gave."""
        return {k: v for k, v in self.all_values().items() if k in self.given_keys}

    def passed_on_properties(self) -> dict[str, str]:
        """What the parts that read broker settings themselves (the logs' defaults, the
        cleaner) are given: the keys `server.properties` set or that differ from the
        default, and the keys BrokerConfig does not name. Defaults are left out so that
        Kafka's precedence among synonyms holds: `log.retention.hours=1` alone must not
        lose to a default `log.retention.ms`."""
        out = {}
        for f in dataclasses.fields(self):
            if "key" not in f.metadata:
                continue
            v = getattr(self, f.name)
            if f.metadata["key"] in self.given_keys or v != f.default:
                out[f.metadata["key"]] = str(v).lower() if isinstance(v, bool) else str(v)
        return {**out, **self.unknown}


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
