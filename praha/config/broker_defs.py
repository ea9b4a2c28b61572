"""Kafka's broker settings (3.9, ZooKeeper mode) and praha's own, defined once.

One line per setting: name, type, default (Kafka's spelling), doc, then what differs from
the usual: a validator, `dynamic=` (Kafka's DynamicBrokerConfig level), `importance=`,
`applied=False` (accepted and described as Kafka does; praha does not act on it).
The topic settings' broker synonyms (`log.retention.hours`, ...) are derived from the
topic table with their unit, so they are defined there. `BrokerConfig` parses
`server.properties` by this table, AlterConfigs checks by it, DescribeConfigs reports
from it, and docs/configuration.md is generated from it. Adding a setting: one `_b(...)`
line here (and a `setting("...")` field on `BrokerConfig` if code reads it).
"""
from __future__ import annotations

from praha.config.model import (
    LONG_MAX,
    ConfigDef,
    ConfigType,
    Dynamic,
    Importance,
    OneOf,
    Range,
    Validator,
    ValidList,
)
from praha.config.topic_defs import TOPIC_CONFIG_DEFS

T = ConfigType
#: KIP-848's server-side assignors by name, the first the default, and Kafka's class names for them
CONSUMER_GROUP_ASSIGNORS = ("uniform", "range")
ASSIGNOR_CLASSES = {"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
                    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range"}
CONSUMER_GROUP_ASSIGNOR_NAMES = CONSUMER_GROUP_ASSIGNORS + tuple(ASSIGNOR_CLASSES)
HIGH, LOW = Importance.HIGH, Importance.LOW
PB, CW = Dynamic.PER_BROKER, Dynamic.CLUSTER_WIDE
DOUBLE_MAX = "1.7976931348623157E308"


def _b(name: str, type_: ConfigType, default: str | None, doc: str, validator: Validator | None = None,
       dynamic: Dynamic = Dynamic.READ_ONLY, importance: Importance = Importance.MEDIUM,
       applied: bool = True) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, validator=validator, dynamic=dynamic, importance=importance,
                     applied=applied)


_NAMED: tuple[ConfigDef, ...] = (
    _b('broker.id', T.INT, '-1', 'unique id of this broker (required)', importance=HIGH),
    _b('listeners', T.LIST, 'PLAINTEXT://127.0.0.1:9092', 'the addresses the broker listens on, NAME://host:port,...', importance=HIGH, dynamic=PB),
    _b('advertised.listeners', T.LIST, '', 'the addresses given to clients (a listener left out is advertised as it listens)', importance=HIGH),
    _b('listener.security.protocol.map', T.LIST, 'PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL', "each listener name's security protocol, NAME:PROTOCOL,...", importance=HIGH, dynamic=PB),
    _b('inter.broker.listener.name', T.STRING, '', 'the listener brokers and the controller use to reach each other', importance=HIGH),
    _b('security.inter.broker.protocol', T.STRING, 'PLAINTEXT', 'the inter-broker listener, named by its protocol (when inter.broker.listener.name is unset)', importance=HIGH),
    _b('ssl.keystore.type', T.STRING, 'PEM', "the key store's format (praha reads PEM)", importance=HIGH, dynamic=PB),
    _b('ssl.keystore.location', T.STRING, '', "the PEM file with the broker's certificate chain and key", importance=HIGH, dynamic=PB),
    _b('ssl.keystore.password', T.PASSWORD, '', "the key store's password", importance=HIGH, dynamic=PB),
    _b('ssl.key.password', T.PASSWORD, '', "the private key's password", importance=HIGH, dynamic=PB),
    _b('ssl.keystore.certificate.chain', T.STRING, '', 'the certificate chain, PEM text in the setting itself', dynamic=PB),
    _b('ssl.keystore.key', T.PASSWORD, '', 'the private key, PEM text in the setting itself', dynamic=PB),
    _b('ssl.truststore.type', T.STRING, 'PEM', "the trust store's format (praha reads PEM)", dynamic=PB),
    _b('ssl.truststore.location', T.STRING, '', 'the PEM file of certificates the broker trusts', importance=HIGH, dynamic=PB),
    _b('ssl.truststore.certificates', T.STRING, '', 'trusted certificates, PEM text in the setting itself', dynamic=PB),
    _b('ssl.client.auth', T.STRING, 'none', 'none, requested or required: whether TLS clients must present a certificate',
       OneOf(('none', 'requested', 'required'), ignore_case=True), dynamic=PB),
    _b('ssl.principal.mapping.rules', T.STRING, 'DEFAULT', "rules that map a certificate's distinguished name to a principal"),
    _b('ssl.enabled.protocols', T.LIST, 'TLSv1.2,TLSv1.3', 'the TLS versions accepted', dynamic=PB),
    _b('ssl.cipher.suites', T.LIST, '', "the cipher suites accepted (empty: the TLS library's)", dynamic=PB),
    _b('ssl.endpoint.identification.algorithm', T.STRING, 'https', "https checks the peer's host name against its certificate; empty turns it off", dynamic=PB),
    _b('sasl.enabled.mechanisms', T.LIST, 'GSSAPI', 'the SASL mechanisms served (praha: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)', importance=HIGH, dynamic=PB),
    _b('sasl.mechanism.inter.broker.protocol', T.STRING, 'GSSAPI', 'the SASL mechanism brokers use with each other', importance=HIGH, dynamic=PB),
    _b('sasl.jaas.config', T.PASSWORD, '', 'the JAAS login section, in the setting itself', importance=HIGH, dynamic=PB),
    _b('authorizer.class.name', T.STRING, '', 'kafka.security.authorizer.AclAuthorizer turns ACLs on; empty leaves them off'),
    _b('super.users', T.LIST, '', 'principals the authoriser always allows, User:name;User:other'),
    _b('allow.everyone.if.no.acl.found', T.BOOLEAN, 'false', 'allow access to a resource no ACL names'),
    _b('log.dirs', T.LIST, '/tmp/praha-logs', 'the directories the logs are kept in, comma-separated', importance=HIGH),
    _b('zookeeper.connect', T.STRING, '', 'host:port[,host:port...][/chroot] of the ZooKeeper ensemble', importance=HIGH),
    _b('zookeeper.session.timeout.ms', T.INT, '18000', 'the ZooKeeper session timeout', validator=Range(1000), importance=HIGH),
    _b('zookeeper.connection.timeout.ms', T.INT, '18000', 'how long to wait for a ZooKeeper connection', validator=Range(100), importance=HIGH),
    _b('zookeeper.set.acl', T.BOOLEAN, 'false', "write znodes with ACLs that only the brokers' identity may change", importance=HIGH),
    _b('praha.zookeeper.digest', T.PASSWORD, '', 'user:password the broker authenticates to ZooKeeper with (digest scheme)'),
    _b('java.security.auth.login.config', T.STRING, '', 'JAAS file whose Client section (DIGEST-MD5) logs the broker in to ZooKeeper (else KAFKA_OPTS -D...)'),
    _b('zookeeper.sasl.clientconfig', T.STRING, 'Client', 'the JAAS section the ZooKeeper client logs in with'),
    _b('zookeeper.ssl.client.enable', T.BOOLEAN, 'false', 'TLS to ZooKeeper'),
    _b('zookeeper.clientCnxnSocket', T.STRING, '', "Kafka's ZooKeeper socket class (org.apache.zookeeper.ClientCnxnSocketNetty for TLS)"),
    _b('zookeeper.ssl.keystore.location', T.STRING, '', 'the PEM key store for TLS to ZooKeeper'),
    _b('zookeeper.ssl.keystore.type', T.STRING, 'PEM', "the ZooKeeper key store's format (PEM)"),
    _b('zookeeper.ssl.truststore.location', T.STRING, '', 'the PEM trust store for TLS to ZooKeeper'),
    _b('zookeeper.ssl.truststore.type', T.STRING, 'PEM', "the ZooKeeper trust store's format (PEM)"),
    _b('zookeeper.ssl.endpoint.identification.algorithm', T.STRING, 'HTTPS', "HTTPS checks ZooKeeper's host name against its certificate"),
    _b('broker.rack', T.STRING, '', "the broker's rack, for rack-aware replica placement", importance=HIGH),
    _b('controlled.shutdown.enable', T.BOOLEAN, 'true', 'move leadership away before the broker stops', importance=HIGH),
    _b('controlled.shutdown.max.retries', T.INT, '3', 'attempts at a controlled shutdown before stopping anyway', validator=Range(0)),
    _b('controlled.shutdown.retry.backoff.ms', T.INT, '5000', 'wait between controlled shutdown attempts', validator=Range(0)),
    _b('controller.socket.timeout.ms', T.INT, '30000', "the controller's socket timeout towards brokers", validator=Range(100)),
    _b('auto.leader.rebalance.enable', T.BOOLEAN, 'true', 'move leadership back to preferred replicas periodically', importance=HIGH),
    _b('leader.imbalance.per.broker.percentage', T.INT, '10', 'the share of non-preferred leaders a broker may have before a rebalance', validator=Range(0), importance=HIGH),
    _b('leader.imbalance.check.interval.seconds', T.INT, '300', 'how often the controller checks leader imbalance', validator=Range(1), importance=HIGH),
    _b('unclean.leader.election.enable', T.BOOLEAN, 'false', 'elect an out-of-sync replica rather than none', importance=HIGH, dynamic=CW),
    _b('delete.topic.enable', T.BOOLEAN, 'true', 'allow topics to be deleted', importance=HIGH),
    _b('auto.create.topics.enable', T.BOOLEAN, 'true', 'create a topic when a client asks for an unknown one', importance=HIGH),
    _b('min.insync.replicas', T.INT, '1', 'in-sync replicas an acks=all write needs', validator=Range(1), importance=HIGH, dynamic=CW),
    _b('replica.lag.time.max.ms', T.INT, '30000', 'a follower that has not caught up in this time leaves the ISR', validator=Range(1), importance=HIGH),
    _b('replica.fetch.max.bytes', T.INT, '1048576', 'bytes a follower fetches per partition', validator=Range(1), importance=HIGH),
    _b('replica.fetch.wait.max.ms', T.INT, '500', "how long a follower's fetch waits for data", validator=Range(0), importance=HIGH),
    _b('replica.fetch.backoff.ms', T.INT, '1000', 'wait after a failed follower fetch', validator=Range(0)),
    _b('replica.fetch.response.max.bytes', T.INT, '10485760', "bytes a follower's fetch response may hold", validator=Range(0)),
    _b('replica.socket.timeout.ms', T.INT, '30000', "followers' socket timeout", validator=Range(1), importance=HIGH),
    _b('replica.high.watermark.checkpoint.interval.ms', T.INT, '5000', 'how often high watermarks are written to disk', validator=Range(1), importance=HIGH),
    _b('default.replication.factor', T.INT, '1', 'replicas of an automatically created topic', validator=Range(1), importance=HIGH),
    _b('num.partitions', T.INT, '1', 'partitions of an automatically created topic', validator=Range(1), importance=HIGH),
    _b('message.max.bytes', T.INT, '1048588', 'the largest record batch a topic accepts (topic: max.message.bytes)', validator=Range(0), importance=HIGH, dynamic=CW),
    _b('socket.request.max.bytes', T.INT, '104857600', 'the largest request the broker reads', validator=Range(1), importance=HIGH),
    _b('max.connections', T.INT, '2147483647', 'connections the broker accepts in all', validator=Range(0), dynamic=CW),
    _b('max.connections.per.ip', T.INT, '2147483647', 'connections the broker accepts from one address', validator=Range(0), dynamic=CW),
    _b('max.connections.per.ip.overrides', T.STRING, '', 'per-address limits, host:count,host:count', dynamic=CW),
    _b('max.connection.creation.rate', T.INT, '2147483647', 'new connections accepted per second', validator=Range(0), dynamic=CW),
    _b('connections.max.idle.ms', T.INT, '600000', 'an idle connection is closed after this long', validator=Range(1)),
    _b('quota.window.num', T.INT, '11', 'samples kept for client quotas', validator=Range(1)),
    _b('quota.window.size.seconds', T.INT, '1', 'the length of one quota sample', validator=Range(1)),
    _b('praha.partial.request.timeout.ms', T.INT, '30000', 'close a connection whose request has not fully arrived in this time', validator=Range(1)),
    _b('log.segment.bytes', T.INT, '1073741824', 'the size of one segment file (topic: segment.bytes)', validator=Range(14), importance=HIGH, dynamic=CW),
    _b('log.retention.bytes', T.INT, '-1', 'the size a partition may reach before old segments go (topic: retention.bytes)', validator=Range(-1), importance=HIGH, dynamic=CW),
    _b('log.retention.check.interval.ms', T.INT, '300000', 'how often retention runs', validator=Range(1), importance=HIGH),
    _b('log.flush.interval.messages', T.LONG, str(LONG_MAX), 'fsync after this many records (topic: flush.messages)', validator=Range(1), importance=HIGH, dynamic=CW),
    _b('isr.change.notification.interval.ms', T.INT, '2500', 'how often ISR changes are announced to the controller', validator=Range(1)),
    _b('group.min.session.timeout.ms', T.INT, '6000', 'the shortest session timeout a group member may ask for', validator=Range(0), importance=HIGH),
    _b('group.max.session.timeout.ms', T.INT, '1800000', 'the longest session timeout a group member may ask for', validator=Range(0), importance=HIGH),
    _b('group.initial.rebalance.delay.ms', T.INT, '3000', 'how long a new group waits for more members before its first rebalance', validator=Range(0), importance=HIGH),
    _b('group.max.size', T.INT, '2147483647', 'members a group may have', validator=Range(1), importance=HIGH),
    # KIP-848 consumer groups (Kafka 4's GroupCoordinatorConfig names and defaults)
    _b('group.consumer.heartbeat.interval.ms', T.INT, '5000', 'how often a consumer-protocol member heartbeats', validator=Range(1), importance=HIGH),
    _b('group.consumer.session.timeout.ms', T.INT, '45000', 'how long a consumer-protocol member may go without a heartbeat', validator=Range(1), importance=HIGH),
    _b('group.consumer.min.session.timeout.ms', T.INT, '45000', 'the shortest consumer.session.timeout.ms a group config may set', validator=Range(1)),
    _b('group.consumer.max.session.timeout.ms', T.INT, '60000', 'the longest consumer.session.timeout.ms a group config may set', validator=Range(1)),
    _b('group.consumer.min.heartbeat.interval.ms', T.INT, '5000', 'the shortest consumer.heartbeat.interval.ms a group config may set', validator=Range(1)),
    _b('group.consumer.max.heartbeat.interval.ms', T.INT, '15000', 'the longest consumer.heartbeat.interval.ms a group config may set', validator=Range(1)),
    _b('group.consumer.max.size', T.INT, '2147483647', 'members a consumer group may have', validator=Range(1), importance=HIGH),
    _b('group.consumer.assignors', T.LIST, 'uniform,range', 'server-side assignors offered, the first the default: uniform, range (or Kafka\'s class names)', validator=ValidList(CONSUMER_GROUP_ASSIGNOR_NAMES), importance=HIGH),
    _b('group.consumer.migration.policy', T.STRING, 'bidirectional', 'online moves between the classic and the consumer protocol: disabled, upgrade, downgrade or bidirectional', validator=OneOf(('disabled', 'upgrade', 'downgrade', 'bidirectional'), ignore_case=True), importance=HIGH),
    # KIP-932 share groups (Kafka 4's GroupCoordinatorConfig / ShareGroupConfig names and defaults)
    _b('group.share.heartbeat.interval.ms', T.INT, '5000', 'how often a share-group member heartbeats', validator=Range(1), importance=HIGH),
    _b('group.share.session.timeout.ms', T.INT, '45000', 'how long a share-group member may go without a heartbeat', validator=Range(1), importance=HIGH),
    _b('group.share.min.session.timeout.ms', T.INT, '45000', 'the shortest share.session.timeout.ms a group config may set', validator=Range(1)),
    _b('group.share.max.session.timeout.ms', T.INT, '60000', 'the longest share.session.timeout.ms a group config may set', validator=Range(1)),
    _b('group.share.min.heartbeat.interval.ms', T.INT, '5000', 'the shortest share.heartbeat.interval.ms a group config may set', validator=Range(1)),
    _b('group.share.max.heartbeat.interval.ms', T.INT, '15000', 'the longest share.heartbeat.interval.ms a group config may set', validator=Range(1)),
    _b('group.share.min.record.lock.duration.ms', T.INT, '15000', 'the shortest share.record.lock.duration.ms a group config may set', validator=Range(1)),
    _b('group.share.max.record.lock.duration.ms', T.INT, '60000', 'the longest share.record.lock.duration.ms a group config may set', validator=Range(1)),
    _b('group.share.max.size', T.INT, '200', 'members a share group may have', validator=Range(1), importance=HIGH),
    _b('group.share.record.lock.duration.ms', T.INT, '30000', 'how long a share consumer holds a record it acquired before it returns to the others', validator=Range(1), importance=HIGH),
    _b('group.share.delivery.count.limit', T.INT, '5', 'deliveries of one record to a share group before it is archived as poison', validator=Range(1), importance=HIGH),
    _b('group.share.partition.max.record.locks', T.INT, '2000', 'in-flight records of one share partition (its window from the start offset)', validator=Range(1), importance=HIGH),
    _b('share.auto.offset.reset', T.STRING, 'latest', "where a share group with no state starts on a partition: latest or earliest (the default of the group config of that name)", validator=OneOf(('latest', 'earliest'), ignore_case=True), importance=HIGH),
    _b('share.isolation.level', T.STRING, 'read_uncommitted', "what a share group reads: read_committed skips aborted transactions (the default of the group config of that name)", validator=OneOf(('read_uncommitted', 'read_committed'), ignore_case=True), importance=HIGH),
    _b('offsets.topic.num.partitions', T.INT, '50', 'partitions of __consumer_offsets', validator=Range(1), importance=HIGH),
    _b('offsets.topic.replication.factor', T.INT, '3', 'replicas of __consumer_offsets', validator=Range(1), importance=HIGH),
    _b('offsets.topic.segment.bytes', T.INT, '104857600', 'segment size of __consumer_offsets', validator=Range(1), importance=HIGH),
    _b('offsets.retention.minutes', T.INT, '10080', 'committed offsets of an empty group are kept this long', validator=Range(1), importance=HIGH),
    _b('offsets.retention.check.interval.ms', T.INT, '600000', 'how often expired offsets are removed', validator=Range(1)),
    _b('offsets.commit.timeout.ms', T.INT, '5000', 'how long an offset commit waits for its replicas', validator=Range(1), importance=HIGH),
    _b('offset.metadata.max.bytes', T.INT, '4096', 'the largest metadata string of a committed offset', validator=Range(0), importance=HIGH),
    _b('request.timeout.ms', T.INT, '30000', 'how long the broker waits for a reply to its own requests', validator=Range(0), importance=HIGH),
    _b('transaction.state.log.num.partitions', T.INT, '50', 'partitions of __transaction_state', validator=Range(1), importance=HIGH),
    _b('transaction.state.log.replication.factor', T.INT, '3', 'replicas of __transaction_state', validator=Range(1), importance=HIGH),
    _b('transaction.state.log.min.isr', T.INT, '2', 'min.insync.replicas of __transaction_state', validator=Range(1), importance=HIGH),
    _b('transaction.state.log.segment.bytes', T.INT, '104857600', 'segment size of __transaction_state', validator=Range(1), importance=HIGH),
    _b('transaction.max.timeout.ms', T.INT, '900000', 'the longest transaction timeout a producer may ask for', validator=Range(1), importance=HIGH),
    _b('transactional.id.expiration.ms', T.INT, '604800000', 'an idle transactional id is forgotten after this long', validator=Range(1), importance=HIGH),
    _b('transaction.abort.timed.out.transaction.cleanup.interval.ms', T.INT, '10000', 'how often timed-out transactions are aborted', validator=Range(1)),
    _b('transaction.remove.expired.transaction.cleanup.interval.ms', T.INT, '3600000', 'how often expired transactional ids are removed', validator=Range(1)),
    _b('transaction.partition.verification.enable', T.BOOLEAN, 'true', 'KIP-890: a leader asks the transaction coordinator before a transactional append opens a transaction', dynamic=CW),
    _b('schema.registry.listeners', T.STRING, '', "the Schema Registry's URL, http://HOST:PORT or https://HOST:PORT (off when empty; docs/schema-registry.md)"),
    _b('schema.registry.topic.replication.factor', T.INT, '3', 'replication factor of _schemas (at most the live brokers)', validator=Range(1)),
    _b('praha.metrics.port', T.INT, '0', 'HTTP port for Prometheus metrics (0 = any free)', validator=Range(0)),
    _b('praha.metrics.host', T.STRING, '127.0.0.1', 'address the Prometheus endpoint binds ("" = every interface)'),
    _b('praha.state.change.log.dir', T.STRING, '', 'where state-change.log goes (default: first log dir)'),
    _b('praha.cluster.id', T.STRING, '', 'the cluster id (empty: the one in ZooKeeper)'),
    # the log cleaner (Kafka's CleanerConfig; praha.log.cleaner)
    _b("log.cleaner.enable", T.BOOLEAN, "true", "run the log cleaner (compaction)"),
    _b("log.cleaner.threads", T.INT, "1", "cleaner threads", Range(0), dynamic=CW),
    _b("log.cleaner.dedupe.buffer.size", T.LONG, "134217728", "memory for the cleaners' key maps, all threads",
       dynamic=CW),
    _b("log.cleaner.io.buffer.size", T.INT, "524288", "the cleaners' I/O buffer memory", Range(0), dynamic=CW,
       applied=False),
    _b("log.cleaner.io.buffer.load.factor", T.DOUBLE, "0.9", "how full a cleaner's key map may get", dynamic=CW),
    _b("log.cleaner.io.max.bytes.per.second", T.DOUBLE, DOUBLE_MAX, "the cleaners' read and write budget",
       dynamic=CW),
    _b("log.cleaner.backoff.ms", T.LONG, "15000", "a cleaner's sleep when no log needs cleaning", Range(0),
       dynamic=CW),
    # reassignment throttles (Kafka's DynamicConfig.Broker; applied while running)
    _b("leader.replication.throttled.rate", T.LONG, str(LONG_MAX), "bytes/s a leader serves throttled replicas",
       Range(0), dynamic=CW),
    _b("follower.replication.throttled.rate", T.LONG, str(LONG_MAX), "bytes/s a follower fetches throttled replicas",
       Range(0), dynamic=CW),
    # thread pools, reporters, producer state, tiered storage: Kafka changes them while running;
    # praha accepts and reports them
    _b("num.io.threads", T.INT, "8", "request handler threads", Range(1), dynamic=CW, applied=False),
    _b("num.network.threads", T.INT, "3", "network threads", Range(1), dynamic=CW, applied=False),
    _b("num.replica.fetchers", T.INT, "1", "fetcher threads per source broker", dynamic=CW, applied=False),
    _b("num.recovery.threads.per.data.dir", T.INT, "1", "threads per log dir for recovery and flush at shutdown",
       Range(1), dynamic=CW, applied=False),
    _b("background.threads", T.INT, "10", "background task threads", Range(1), dynamic=CW, applied=False),
    _b("metric.reporters", T.LIST, "", "metrics reporter classes", dynamic=CW, applied=False),
    _b("config.providers", T.LIST, "", "config provider classes", dynamic=CW, applied=False),
    _b("producer.id.expiration.ms", T.INT, "86400000", "an idle producer id's state is dropped after this long",
       Range(1), dynamic=CW, applied=False),
    _b("replica.alter.log.dirs.io.max.bytes.per.second", T.LONG, str(LONG_MAX),
       "bytes/s a move between log dirs may copy", dynamic=CW, applied=False),
    _b("follower.fetch.last.tiered.offset.enable", T.BOOLEAN, "false", "tiered storage: followers start from the "
       "last tiered offset", dynamic=CW, applied=False, importance=LOW),
    _b("remote.log.index.file.cache.total.size.bytes", T.LONG, "1073741824", "tiered storage: index cache size",
       Range(1), dynamic=CW, applied=False, importance=LOW),
    _b("remote.fetch.max.wait.ms", T.INT, "500", "tiered storage: a remote fetch's longest wait", Range(1),
       dynamic=CW, applied=False, importance=LOW),
    _b("remote.log.manager.copy.max.bytes.per.second", T.LONG, str(LONG_MAX), "tiered storage: copy budget",
       Range(1), dynamic=CW, applied=False, importance=LOW),
    _b("remote.log.manager.fetch.max.bytes.per.second", T.LONG, str(LONG_MAX), "tiered storage: fetch budget",
       Range(1), dynamic=CW, applied=False, importance=LOW),
    _b("remote.log.reader.threads", T.INT, "10", "tiered storage: reader threads", Range(1), dynamic=CW,
       applied=False, importance=LOW),
    # listener settings Kafka changes per broker (`listener.name.<l>.<setting>`); praha keeps them
    _b("principal.builder.class", T.CLASS, None, "builds a session's principal", dynamic=PB, applied=False),
    _b("ssl.protocol", T.STRING, "TLSv1.3", "the TLS protocol of the SSL context", dynamic=PB, applied=False),
    _b("ssl.provider", T.STRING, None, "the security provider of TLS", dynamic=PB, applied=False, importance=LOW),
    _b("ssl.keymanager.algorithm", T.STRING, "SunX509", "the key manager factory's algorithm", dynamic=PB,
       applied=False, importance=LOW),
    _b("ssl.trustmanager.algorithm", T.STRING, "PKIX", "the trust manager factory's algorithm", dynamic=PB,
       applied=False, importance=LOW),
    _b("ssl.secure.random.implementation", T.STRING, None, "the SecureRandom of TLS", dynamic=PB, applied=False,
       importance=LOW),
    _b("ssl.engine.factory.class", T.CLASS, None, "a custom SSLEngine factory", dynamic=PB, applied=False,
       importance=LOW),
    _b("ssl.truststore.password", T.PASSWORD, None, "the trust store's password", dynamic=PB, importance=HIGH),
    _b("sasl.kerberos.service.name", T.STRING, None, "GSSAPI: the Kerberos service name", dynamic=PB,
       applied=False),
    _b("sasl.kerberos.kinit.cmd", T.STRING, "/usr/bin/kinit", "GSSAPI: the kinit command", dynamic=PB,
       applied=False, importance=LOW),
    _b("sasl.kerberos.ticket.renew.window.factor", T.DOUBLE, "0.8", "GSSAPI: renew at this share of a ticket's life",
       dynamic=PB, applied=False, importance=LOW),
    _b("sasl.kerberos.ticket.renew.jitter", T.DOUBLE, "0.05", "GSSAPI: random jitter of the renewal time",
       dynamic=PB, applied=False, importance=LOW),
    _b("sasl.kerberos.min.time.before.relogin", T.LONG, "60000", "GSSAPI: sleep between refresh attempts",
       dynamic=PB, applied=False, importance=LOW),
    _b("sasl.kerberos.principal.to.local.rules", T.LIST, "DEFAULT", "GSSAPI: principal to short name rules",
       dynamic=PB, applied=False),
    _b("sasl.login.refresh.window.factor", T.DOUBLE, "0.8", "OAUTHBEARER: refresh at this share of a token's life",
       Range(0.5, 1.0), dynamic=PB, applied=False, importance=LOW),
    _b("sasl.login.refresh.window.jitter", T.DOUBLE, "0.05", "OAUTHBEARER: random jitter of the refresh time",
       Range(0.0, 0.25), dynamic=PB, applied=False, importance=LOW),
    _b("sasl.login.refresh.min.period.seconds", T.SHORT, "60", "OAUTHBEARER: the shortest wait between refreshes",
       Range(0, 900), dynamic=PB, applied=False, importance=LOW),
    _b("sasl.login.refresh.buffer.seconds", T.SHORT, "300", "OAUTHBEARER: time left on a token when it is refreshed",
       Range(0, 3600), dynamic=PB, applied=False, importance=LOW),
)

#: topic synonyms Kafka does not change while brokers run (the rest are DynamicLogConfig's)
_READ_ONLY_SYNONYMS = frozenset({"compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
                                 "log.flush.scheduler.interval.ms", "log.message.format.version",
                                 "log.roll.jitter.hours"})


def _synonym_defs(named: tuple[ConfigDef, ...]) -> tuple[ConfigDef, ...]:
    """The broker synonyms of the topic settings not named above: type and doc from the topic
    setting; in a group with units (ms/minutes/hours) only the coarsest has the default, so
    that a finer one given alone wins (Kafka: `log.retention.hours=168`, `log.retention.ms` none)."""
    have = {d.name for d in named}
    out = []
    for t in TOPIC_CONFIG_DEFS:
        scaled = any(s.scale != 1 for s in t.synonyms)
        for i, s in enumerate(t.synonyms):
            if s.name in have:
                continue
            default = t.default
            if scaled:
                last = i == len(t.synonyms) - 1
                default = str(int(t.default or 0) // s.scale) if last and t.default is not None else None
            type_ = T.INT if s.scale != 1 else t.type  # Kafka: log.retention.hours is an int
            unit = {3_600_000: " (hours)", 60_000: " (minutes)"}.get(s.scale, "")
            out.append(ConfigDef(s.name, type_, default, f"the default of topic setting {t.name}{unit}",
                                 validator=t.validator if s.scale == 1 else Range(-1) if t.name == "retention.ms"
                                 else Range(0 if "jitter" in t.name else 1),
                                 dynamic=Dynamic.READ_ONLY if s.name in _READ_ONLY_SYNONYMS else Dynamic.CLUSTER_WIDE,
                                 importance=Importance.HIGH if t.name in ("retention.ms", "segment.ms")
                                 else Importance.MEDIUM,
                                 applied=s.name not in ("log.message.format.version",)))
            have.add(s.name)
    return tuple(out)


BROKER_CONFIG_DEFS: tuple[ConfigDef, ...] = _NAMED + _synonym_defs(_NAMED)
BROKER_CONFIG_BY_NAME: dict[str, ConfigDef] = {d.name: d for d in BROKER_CONFIG_DEFS}
