"""The praha source and sink on a `praha cluster up --secure` cluster (SASL_SSL with
SCRAM-SHA-512, ACLs on), with Spark's own option names: an exactly-once streaming query
through a leader kill gives exact results; a user the ACLs refuse gets a message naming
the topic and the operation; bad credentials fail at `load()`/`start()`, before any task,
without echoing the secret; the password is in no plan and no checkpoint file."""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from praha.cluster.local import LocalCluster
from praha.cluster.secure import SecureSetup
from praha.protocol.scram import ScramCredential, ScramMechanism
from praha.security.credentials import alter_credentials
from praha.testing.cluster import TEST_BROKER_CONFIG, wait_for
from praha.testing.zookeeper import delete_chroot, unique_chroot
from praha.zk.store import ZkStore

pytestmark = pytest.mark.integration

READER, READER_PASSWORD = "etl-reader", "Reader-Pa55-w0rd-xyz"


def jaas(user: str, password: str) -> str:
    return f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'


@dataclass
class Secure:
    cluster: LocalCluster
    zookeeper: str
    setup: SecureSetup

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.cluster.load().brokers.values())

    def options(self, user: str = "admin", password: str | None = None) -> dict[str, str]:
        """What a Spark user sets, in Spark's Kafka option names."""
        return {"kafka.bootstrap.servers": self.bootstrap, "kafka.security.protocol": "SASL_SSL",
                "kafka.sasl.mechanism": "SCRAM-SHA-512",
                "kafka.sasl.jaas.config": jaas(user, password if password is not None else self.setup.admin_password),
                "kafka.ssl.truststore.location": str(self.setup.ca), "kafka.ssl.truststore.type": "PEM"}

    def confluent(self) -> dict[str, str]:
        return self.setup.client_settings(self.bootstrap)["confluent-kafka"]

    def create_topic(self, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self.confluent())
        admin.create_topics([NewTopic(name, partitions, 3, config=config or {})])[name].result(timeout=60)
        wait_for(lambda: all(p.leader >= 0 for p in admin.list_topics(name, timeout=5).topics[name].partitions.values())
                 and len(admin.list_topics(name, timeout=5).topics[name].partitions) == partitions, 60,
                 what=f"{name} has leaders")

    def leader(self, topic: str, partition: int) -> int:
        from confluent_kafka.admin import AdminClient

        return AdminClient(self.confluent()).list_topics(topic, timeout=10).topics[topic].partitions[partition].leader

    def acl(self, topic: str, *operations: str) -> None:
        from praha.cli.main import main

        for op in operations:
            assert main(["acls", "--add", "--topic", topic, "--allow-principal", f"User:{READER}",
                         "--operation", op, "--dir", str(self.cluster.root)]) == 0


@pytest.fixture(scope="module")
def secure(zookeeper, tmp_path_factory) -> Iterator[Secure]:
    connect = unique_chroot(zookeeper.connect_string, "praha-spark-secure")
    cluster = LocalCluster(tmp_path_factory.mktemp("secure-pipeline"))
    try:
        state = cluster.up(3, zookeeper=connect, overrides={**TEST_BROKER_CONFIG, "replica.lag.time.max.ms": "3000",
                                                            "leader.imbalance.check.interval.seconds": "3600",
                                                            "offsets.topic.num.partitions": "3",
                                                            "transaction.state.log.num.partitions": "3"},
                           secure=True, timeout=90)
        with ZkStore(connect, auth=cluster.zk_auth(state)).start() as store:  # the tree is the cluster's own
            alter_credentials(store, READER, {ScramMechanism.SHA_512: ScramCredential.from_password(
                ScramMechanism.SHA_512, READER_PASSWORD, 4096)}, [])
        yield Secure(cluster, connect, SecureSetup.load(Path(state.security_dir)))
    finally:
        auth = cluster.zk_auth(cluster.load()) if cluster.exists() else None
        try:
            cluster.down(timeout=30)
        finally:
            delete_chroot(connect, auth=auth)  # its znodes have ACLs: removed as their owner


def _reader(spark, options: dict[str, str], **more: str):
    r = spark.readStream.format("praha") if more.pop("stream", "") else spark.read.format("praha")
    for k, v in {**options, **more}.items():
        r = r.option(k, v)
    return r.load()


def _through(q, n: int, timeout: float) -> None:
    """Wait until the query read `n` rows; its failure ends the wait at once."""
    deadline = time.monotonic() + timeout
    while sum(p["numInputRows"] for p in q.recentProgress) < n:
        assert q.exception() is None, f"the query failed: {q.exception()}"
        assert time.monotonic() < deadline, f"the query did not read {n} rows in {timeout:.0f}s"
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.timeout(900)  # its own waits add up to more than the suite's 300 s default
def test_exactly_once_query_through_a_leader_kill(spark, secure, tmp_path, capsys):
    src, dst = "secure-eo-in", "secure-eo-out"
    secure.create_topic(src, 3)
    secure.create_topic(dst, 2, {"min.insync.replicas": "2"})
    total = 3000
    produced = threading.Event()

    def producer() -> None:
        from confluent_kafka import Producer

        p = Producer({**secure.confluent(), "acks": "all", "linger.ms": 5})
        for i in range(total):
            p.produce(src, value=b"e-%05d" % i, key=b"k%d" % (i % 7))
            p.poll(0)
            time.sleep(0.003)
        assert p.flush(120) == 0
        produced.set()

    ck = tmp_path / "ck"
    stream = _reader(spark, secure.options(), stream="1", subscribe=src, startingOffsets="earliest",
                     maxOffsetsPerTrigger="400").selectExpr("key", "upper(cast(value as string)) as value")
    stream.explain(True)
    w = stream.writeStream.format("praha")
    for k, v in secure.options().items():
        w = w.option(k, v)
    q = (w.option("topic", dst).option("exactlyOnce", "true").option("checkpointLocation", str(ck))
         .trigger(processingTime="300 milliseconds").start())
    pt = threading.Thread(target=producer)
    pt.start()
    victim = -1
    try:
        _through(q, 500, 180)
        victim = secure.leader(dst, 0)
        secure.cluster.kill_broker(victim)
        pt.join(180)
        assert produced.is_set(), "the producer did not finish"
        _through(q, total, 240)
        assert q.isActive, q.exception()
        assert q.exception() is None, q.exception()
    finally:
        q.stop()
        pt.join(60)
        if victim >= 0:
            secure.cluster.start_broker(victim, timeout=90)
    got = [r.value.decode() for r in _reader(spark, secure.options(), subscribe=dst,
                                             **{"kafka.isolation.level": "read_committed"}).collect()]
    assert sorted(got) == sorted(f"E-{i:05d}" for i in range(total))  # each record exactly once
    # the password is in no plan and no checkpoint file
    password = secure.setup.admin_password
    plan = capsys.readouterr().out
    assert "== Physical Plan ==" in plan
    assert password not in plan
    for f in ck.rglob("*"):
        if f.is_file():
            assert password.encode() not in f.read_bytes(), f


def test_acls_refuse_naming_the_topic_and_the_operation(spark, secure, tmp_path):
    allowed, hidden, readonly = "acl-allowed", "acl-hidden", "acl-readonly"
    for t in (allowed, hidden, readonly):
        secure.create_topic(t, 1)
    secure.acl(allowed, "Read", "Describe")
    secure.acl(readonly, "Describe")
    reader = secure.options(READER, READER_PASSWORD)
    from confluent_kafka import Producer

    p = Producer(secure.confluent())
    p.produce(allowed, b"visible")
    assert p.flush(30) == 0
    # allowed: the user reads it (once every broker has the new ACLs)
    wait_for(lambda: [r.value for r in _reader(spark, reader, subscribe=allowed).collect()] == [b"visible"], 60,
             interval=1, what="the reader to be allowed")
    # no ACL on the topic: load() fails, naming it and the operation
    with pytest.raises(Exception, match=f"Not authorized to Describe topic {hidden}"):
        _reader(spark, reader, stream="1", subscribe=hidden)
    # Describe but no Write: the sink refuses at start(), before any task
    w = _reader(spark, reader, stream="1", subscribe=allowed, startingOffsets="earliest") \
        .selectExpr("value").writeStream.format("praha")
    for k, v in reader.items():
        w = w.option(k, v)

    def run_the_query() -> None:
        q = w.option("topic", readonly).option("checkpointLocation", str(tmp_path / "ck")).start()
        q.awaitTermination(120)
        raise AssertionError(f"the query ran: {q.exception()}")

    with pytest.raises(Exception, match=f"Not authorized to Write topic {readonly}"):
        run_the_query()


@pytest.mark.parametrize(("change", "option"), [
    ({"kafka.sasl.jaas.config": jaas("admin", "Not-The-Pa55word")}, "kafka.sasl.jaas.config"),
    ({"kafka.sasl.jaas.config": jaas(READER, "Not-The-Pa55word")}, "kafka.sasl.jaas.config"),
    ({"kafka.ssl.truststore.location": "/nonexistent/ca.pem"}, "kafka.ssl.truststore.location"),
    ({"kafka.security.protocol": "SASL_SSLX"}, "kafka.security.protocol"),
    ({"kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin";'},
     "kafka.sasl.jaas.config"),
])
def test_bad_options_fail_at_load_without_the_secret(spark, secure, change, option):
    options = {**secure.options(), **change}
    tracker = spark.sparkContext.statusTracker()
    jobs_before = set(tracker.getJobIdsForGroup(None))
    for stream in ("", "1"):
        with pytest.raises(Exception, match=re.escape(option)) as e:  # the message names the option
            _reader(spark, options, stream=stream, subscribe="acl-allowed")
        text = str(e.value)
        assert "Not-The-Pa55word" not in text
        assert secure.setup.admin_password not in text
    assert set(tracker.getJobIdsForGroup(None)) == jobs_before  # no task ran
