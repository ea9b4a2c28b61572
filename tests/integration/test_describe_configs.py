"""DescribeConfigs (issue 12, part) with confluent-kafka's and kafka-python's admin clients:
every topic config with its value and Kafka's source (topic override, dynamic broker,
dynamic default, server.properties, default) and synonyms; a broker's settings; its
loggers; Kafka's errors for an unknown topic or another broker's id."""
from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration


def describe(admin: AdminClient, resource: ConfigResource) -> dict:
    return admin.describe_configs([resource], request_timeout=15)[resource].result(15)


def _records_older_than_an_hour_are_deleted(admin: AdminClient, bootstrap: str) -> None:
    """Records stamped two hours ago, in closed segments, go at the next retention check;
    with the default week they would stay."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    admin.create_topics([NewTopic("aged", 1, 1, config={"segment.bytes": "1024"})])["aged"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    two_hours_ago = int(time.time() * 1000) - 2 * 3600 * 1000
    for i in range(20):
        producer.produce("aged", b"x" * 200, timestamp=two_hours_ago + i)
        producer.flush(10)  # one batch each, so the records span several segments
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "aged"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition("aged", 0), timeout=10)[1] == 20
        wait_for(lambda: consumer.get_watermark_offsets(TopicPartition("aged", 0), timeout=10)[0] > 0, 30,
                 what="the retention check to delete the two-hour-old segments")
    finally:
        consumer.close()


def test_topic_and_broker_configs_with_their_sources(make_cluster, cli):
    """… and `log.retention.hours` alone sets retention.ms, as reported and as applied
    (Kafka's ms > minutes > hours precedence)."""
    cluster = make_cluster(1, overrides={"log.retention.hours": "1", "offsets.topic.replication.factor": "1",
                                         "log.retention.check.interval.ms": "200"})
    bs = f"127.0.0.1:{cluster.load().brokers[1].port}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("compacted", 1, 1, config={"cleanup.policy": "compact", "retention.ms": "1000"}),
                         NewTopic("plain", 1, 1)])["plain"].result(30)

    c = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, "compacted"))
    assert (c["cleanup.policy"].value, c["cleanup.policy"].source) == ("compact",
                                                                       ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert c["retention.ms"].value == "1000"
    assert (c["segment.bytes"].value, c["segment.bytes"].source) == ("1073741824", ConfigSource.DEFAULT_CONFIG.value)
    assert not c["segment.bytes"].is_read_only
    assert not c["cleanup.policy"].is_sensitive

    p = describe(admin, ConfigResource(ConfigResource.Type.TOPIC, "plain"))
    assert (p["retention.ms"].value, p["retention.ms"].source) == \
        ("3600000", ConfigSource.STATIC_BROKER_CONFIG.value)
    syn = [(s.name, s.value, s.source) for s in p["retention.ms"].synonyms.values()]
    assert ("log.retention.hours", "3600000", ConfigSource.STATIC_BROKER_CONFIG.value) in syn
    assert p["cleanup.policy"].value == "delete"
    _records_older_than_an_hour_are_deleted(admin, bs)

    rc, _, err = cli("configs", "--entity-type", "brokers", "--entity-default", "--alter",
                     "--add-config", "leader.replication.throttled.rate=5000", "--dir", str(cluster.root))
    assert rc == 0, err
    b = describe(admin, ConfigResource(ConfigResource.Type.BROKER, "1"))
    assert (b["log.retention.hours"].value, b["log.retention.hours"].source) == \
        ("1", ConfigSource.STATIC_BROKER_CONFIG.value)
    assert (b["auto.create.topics.enable"].value, b["auto.create.topics.enable"].source) == \
        ("true", ConfigSource.DEFAULT_CONFIG.value)
    rate = b["leader.replication.throttled.rate"]
    assert (rate.value, rate.source, rate.is_read_only) == ("5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
                                                           False)
    assert b["broker.id"].is_read_only
    assert b["log.retention.hours"].is_read_only
    # every setting of the table is reported, typed; log.retention.ms has no value of its own
    # (Kafka: no default; the hours decide), as Kafka's broker answers
    assert (b["log.retention.ms"].value, b["log.retention.ms"].source) == (None, ConfigSource.DEFAULT_CONFIG.value)
    assert (b["log.cleaner.threads"].value, b["num.io.threads"].value) == ("1", "8")
    from kafka.protocol.admin import DescribeConfigsRequest

    from praha.protocol.client import BrokerConnection
    R = DescribeConfigsRequest.DescribeConfigsResource
    with BrokerConnection("127.0.0.1", cluster.load().brokers[1].port) as conn:  # "": the cluster-wide defaults
        got = conn.send(DescribeConfigsRequest(resources=[R(resource_type=4, resource_name="",
                                                            configuration_keys=None)],
                                               include_synonyms=False, include_documentation=False), 3)
        loggers = conn.send(DescribeConfigsRequest(resources=[R(resource_type=8, resource_name="1",
                                                                 configuration_keys=["root"])],
                                                   include_synonyms=False, include_documentation=False), 3)
        other = conn.send(DescribeConfigsRequest(resources=[R(resource_type=4, resource_name="7",
                                                               configuration_keys=None)],
                                                 include_synonyms=False, include_documentation=False), 3)
        hours = conn.send(DescribeConfigsRequest(resources=[R(resource_type=4, resource_name="1",
                                                               configuration_keys=["log.retention.hours"])],
                                                 include_synonyms=True, include_documentation=True), 3)
    # the table's doc, and Kafka's synonyms of a broker setting: its own value, then its default
    (h,) = hours.results[0].configs
    assert h.documentation == "the default of topic setting retention.ms (hours)"
    assert [(x.name, x.value, x.source) for x in h.synonyms] == [("log.retention.hours", "1", 4),
                                                                  ("log.retention.hours", "168", 5)]
    assert (other.results[0].error_code, other.results[0].error_message) == \
        (42, "Unexpected broker id, expected 1 or empty string, but received 7")  # INVALID_REQUEST
    assert [(c.name, c.value) for c in got.results[0].configs] == [("leader.replication.throttled.rate", "5000")]
    assert [(c.name, c.value) for c in loggers.results[0].configs] in ([("root", "INFO")], [("root", "WARN")])

    with pytest.raises(Exception, match="UNKNOWN_TOPIC_OR_PART"):
        describe(admin, ConfigResource(ConfigResource.Type.TOPIC, "nope"))

    rc, out, err = cli("api-versions", "--dir", str(cluster.root))
    assert rc == 0, err
    assert out.startswith(f"127.0.0.1:{cluster.load().brokers[1].port} (id: 1 rack: null) -> (")
    assert "\tDescribeConfigs(32): 1 to 4 [usable: 4]," in out
    assert "\tSaslHandshake(17): 0 to 1 [usable: 1]," in out
    assert "\tDescribeDelegationToken(41): UNSUPPORTED," in out
    rc, out, _ = cli("api-versions", "--json", "--dir", str(cluster.root))
    import json
    assert rc == 0
    assert json.loads(out)[0]["apis"]["JoinGroup"] == {"min": 0, "max": 9}

    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient
    kp = KafkaAdminClient(bootstrap_servers=bs)
    try:
        got = kp.describe_configs([KpResource(ConfigResourceType.TOPIC, "compacted")])
    finally:
        kp.close()
    text = repr(got)
    assert "cleanup.policy" in text
    assert "compact" in text


def test_alter_and_incremental_alter_are_praha_configs_too(make_cluster, cli):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    cluster = make_cluster(1, overrides={"offsets.topic.replication.factor": "1"})
    bs = f"127.0.0.1:{cluster.load().brokers[1].port}"
    d = ["--dir", str(cluster.root)]
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("t", 1, 1, config={"retention.ms": "1000"})])["t"].result(30)
    res = ConfigResource(ConfigResource.Type.TOPIC, "t")

    def incremental(*entries: ConfigEntry, validate_only: bool = False) -> None:
        r = ConfigResource(ConfigResource.Type.TOPIC, "t", incremental_configs=list(entries))
        admin.incremental_alter_configs([r], validate_only=validate_only)[r].result(15)

    def overrides() -> dict[str, str]:
        rc, out, err = cli("configs", "--entity-type", "topics", "--entity-name", "t", "--describe", *d)
        assert rc == 0, err
        return dict(line.strip().split("=", 1) for line in out.splitlines()[1:])

    incremental(ConfigEntry("segment.ms", "60000", incremental_operation=AlterConfigOpType.SET))
    assert overrides() == {"retention.ms": "1000", "segment.ms": "60000"}
    incremental(ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
                ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    assert overrides() == {"segment.ms": "60000", "cleanup.policy": "delete,compact"}
    assert describe(admin, res)["cleanup.policy"].value == "delete,compact"
    incremental(ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT))
    assert overrides()["cleanup.policy"] == "compact"
    incremental(ConfigEntry("segment.ms", "1", incremental_operation=AlterConfigOpType.SET), validate_only=True)
    assert overrides()["segment.ms"] == "60000"

    with pytest.raises(Exception, match="INVALID_CONFIG|no.such"):
        incremental(ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET))
    with pytest.raises(Exception, match="INVALID_CONFIG|segment.bytes"):
        incremental(ConfigEntry("segment.bytes", "5", incremental_operation=AlterConfigOpType.SET))
    with pytest.raises(Exception, match="INVALID_CONFIG|append"):
        incremental(ConfigEntry("segment.ms", "5", incremental_operation=AlterConfigOpType.APPEND))
    assert overrides() == {"segment.ms": "60000", "cleanup.policy": "compact"}

    # the legacy AlterConfigs replaces the whole override set
    legacy = ConfigResource(ConfigResource.Type.TOPIC, "t", set_config={"max.message.bytes": "2000"})
    with pytest.deprecated_call():  # confluent-kafka steers people to the incremental API
        futures = admin.alter_configs([legacy])
    futures[legacy].result(15)
    assert overrides() == {"max.message.bytes": "2000"}

    rc, _, err = cli("configs", "--entity-type", "topics", "--entity-name", "t", "--alter",
                     "--add-config", "retention.ms=7000", *d)
    assert rc == 0, err
    assert describe(admin, res)["retention.ms"].value == "7000"

    # Kafka 3.x: message.format.version is accepted (deprecated, no effect at IBP 3.0+)
    incremental(ConfigEntry("message.format.version", "2.8", incremental_operation=AlterConfigOpType.SET))
    assert describe(admin, res)["message.format.version"].value == "2.8"
    with pytest.raises(Exception, match="INVALID_CONFIG|not a valid version"):
        incremental(ConfigEntry("message.format.version", "banana", incremental_operation=AlterConfigOpType.SET))

    # Kafka 3.9's dynamic broker settings: a listener's SASL settings per broker, by listener name
    def broker(name: str, key: str, value: str) -> None:
        r = ConfigResource(ConfigResource.Type.BROKER, name, incremental_configs=[
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([r])[r].result(15)

    for key, value in (("listener.name.plaintext.sasl.kerberos.min.time.before.relogin", "120000"),
                       ("listener.name.plaintext.sasl.login.refresh.buffer.seconds", "120"),
                       ("listener.name.plaintext.plain.sasl.jaas.config", "x required;"),
                       ("log.cleaner.threads", "2")):
        broker("1", key, value)
    rc, out, err = cli("configs", "--entity-type", "brokers", "--entity-name", "1", "--describe", *d)
    assert rc == 0, (out, err)
    assert "listener.name.plaintext.sasl.kerberos.min.time.before.relogin=120000" in out, (out, err)
    refusals = (("1", "ssl.keystore.location", "/x", "only per-listener"),
                ("1", "broker.id", "3", "Cannot update these configs dynamically"))
    for name, key, value, message in refusals:
        with pytest.raises(Exception, match=message):
            broker(name, key, value)


def test_dynamic_broker_log_defaults_apply_to_running_logs(make_cluster, cli):
    """Kafka's dynamic log configs: a cluster-wide `<default>` or per-broker value of a
    log setting (e.g. `log.retention.ms`, `min.insync.replicas`) becomes the default of every
    topic without an override, at once and without a restart, and is reported with its source."""
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    cluster = make_cluster(1, overrides={"offsets.topic.replication.factor": "1"})
    bs = f"127.0.0.1:{cluster.load().brokers[1].port}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("plain", 1, 1), NewTopic("own", 1, 1, config={"min.insync.replicas": "1"})]
                        )["plain"].result(30)

    def set_broker(name: str, key: str, value: str | None) -> None:
        """confluent-kafka for a broker id; `praha configs --entity-default` (kafka-configs'
        way) for `<default>`, which confluent-kafka's and kafka-python's clients cannot name."""
        if name:
            op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
            r = ConfigResource(ConfigResource.Type.BROKER, name,
                               incremental_configs=[ConfigEntry(key, value, incremental_operation=op)])
            admin.incremental_alter_configs([r])[r].result(15)
            return
        change = ["--add-config", f"{key}={value}"] if value is not None else ["--delete-config", key]
        rc, _, err = cli("configs", "--entity-type", "brokers", "--entity-default", "--alter", *change,
                         "--dir", str(cluster.root))
        if rc != 0:
            raise KafkaException(err)

    def produce(topic: str) -> str | None:
        p = Producer({"bootstrap.servers": bs, "acks": "all", "message.send.max.retries": 0})
        errors: list = []
        p.produce(topic, b"v", on_delivery=lambda err, _m: errors.append(err))
        p.flush(15)
        return None if errors[0] is None else errors[0].name()

    assert produce("plain") is None
    set_broker("", "min.insync.replicas", "2")  # cluster-wide: 2 in-sync replicas for acks=all
    plain = ConfigResource(ConfigResource.Type.TOPIC, "plain")
    deadline = time.monotonic() + 15
    while produce("plain") != "NOT_ENOUGH_REPLICAS" and time.monotonic() < deadline:
        pass
    assert produce("plain") == "NOT_ENOUGH_REPLICAS"
    assert produce("own") is None  # a topic's own override still wins
    m = describe(admin, plain)["min.insync.replicas"]
    assert (m.value, m.source) == ("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)

    set_broker("1", "log.retention.ms", "3600000")  # this broker's own value, over `<default>` and the file
    r = describe(admin, plain)["retention.ms"]
    assert (r.value, r.source) == ("3600000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    b = describe(admin, ConfigResource(ConfigResource.Type.BROKER, "1"))["log.retention.ms"]
    assert (b.value, b.source, b.is_read_only) == ("3600000", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    rc, out, err = cli("configs", "--entity-type", "brokers", "--entity-name", "1", "--describe",
                       "--dir", str(cluster.root))
    assert rc == 0, err
    assert "log.retention.ms=3600000" in out, err

    with pytest.raises(KafkaException, match="INVALID_CONFIG.*cleanup.policy"):
        set_broker("1", "log.cleanup.policy", "shred")
    with pytest.raises(KafkaException, match="INVALID_CONFIG.*log.dirs"):
        set_broker("1", "log.dirs", "/elsewhere")  # a static setting: refused, nothing written
    with pytest.raises(KafkaException, match="segment.bytes"):
        set_broker("", "log.segment.bytes", "5")
    assert describe(admin, ConfigResource(ConfigResource.Type.BROKER, "1"))["log.cleanup.policy"].value == "delete"
    set_broker("", "min.insync.replicas", None)
    deadline = time.monotonic() + 15
    while produce("plain") is not None and time.monotonic() < deadline:
        pass
    assert produce("plain") is None
