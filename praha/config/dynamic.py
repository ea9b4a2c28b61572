"""Which broker settings change while brokers run: Kafka's rules (DynamicBrokerConfig) and
the subset praha applies live (the throttle rates, the logs' broker-wide defaults).

The dynamic level of each setting is in the table (`ConfigDef.dynamic`); what is here is
what the table cannot say per setting: the listener-prefix rules of AlterConfigs.
"""
from __future__ import annotations

from praha.config.broker_defs import BROKER_CONFIG_DEFS
from praha.config.model import Dynamic
from praha.config.topic_defs import TOPIC_CONFIG_BY_NAME

#: the broker configs praha applies while running (`/config/brokers/...`); every other
#: broker setting is read-only as far as DescribeConfigs is concerned, and dynamic values
#: ZooKeeper may hold for them are not reported as in effect (they are not)
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
THROTTLE_RATE_KEYS: tuple[str, ...] = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)

#: the topic configs whose broker-wide default can change while brokers run (Kafka's
#: DynamicLogConfig): those praha's logs and partitions apply, by their broker name
DYNAMIC_LOG_TOPIC_CONFIGS: tuple[str, ...] = (
    "cleanup.policy", "delete.retention.ms", "file.delete.delay.ms", "index.interval.bytes",
    "max.compaction.lag.ms", "max.message.bytes", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
    "min.insync.replicas", "retention.bytes", "retention.ms", "segment.bytes", "segment.ms",
)
#: broker name → topic name, e.g. "log.retention.ms" → "retention.ms" (same unit)
DYNAMIC_LOG_KEYS: dict[str, str] = {
    TOPIC_CONFIG_BY_NAME[t].synonyms[0].name: t for t in DYNAMIC_LOG_TOPIC_CONFIGS}
DYNAMIC_BROKER_KEYS: tuple[str, ...] = THROTTLE_RATE_KEYS + tuple(DYNAMIC_LOG_KEYS)
# ---- what Kafka 3.9 lets AlterConfigs change on a broker (DynamicBrokerConfig) ---------------
#: TLS key and trust stores: only per listener (`listener.name.<l>.ssl.keystore.location`)
DYNAMIC_SECURITY_CONFIGS: frozenset[str] = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.type", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.certificates",
})
#: a listener's settings, changed as `listener.name.<l>.<setting>` (DynamicListenerConfig)
DYNAMIC_LISTENER_CONFIGS: frozenset[str] = frozenset({
    "listeners", "listener.security.protocol.map", "principal.builder.class",
    "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keystore.type",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
    "ssl.client.auth", "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "max.connections", "max.connection.creation.rate", "num.network.threads",
})
#: per-listener settings given per SASL mechanism: `listener.name.<l>.<mechanism>.<setting>`
LISTENER_MECHANISM_CONFIGS: tuple[str, ...] = (
    "sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
    "sasl.server.callback.handler.class", "connections.max.reauth.ms",
)
#: listener settings that may also be set cluster-wide (the rest need a broker id)
CLUSTER_LEVEL_LISTENER_CONFIGS: frozenset[str] = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"})
#: every broker setting Kafka 3.9 changes while running: the table's dynamic ones
KAFKA_DYNAMIC_BROKER_CONFIGS: frozenset[str] = frozenset(
    d.name for d in BROKER_CONFIG_DEFS if d.dynamic is not Dynamic.READ_ONLY)

#: the broker settings the log cleaner reads (Kafka's CleanerConfig names; `praha.log.cleaner`)
CLEANER_KEYS: tuple[str, ...] = (
    "log.cleaner.enable", "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms", "log.cleaner.io.buffer.load.factor",
)
