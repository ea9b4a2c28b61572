"""Listeners, TLS and SASL with real clients against one two-broker cluster.

Each broker has five listeners: PLAINTEXT (the harness's), INTERNAL (SSL with client
certificates required: the inter-broker listener, so the controller's requests and the
followers' fetches go over mutual TLS with host name verification), SSL (client
certificates requested: mTLS clients get their certificate's principal), SASL_SSL
(SCRAM-SHA-512, SCRAM-SHA-256, PLAIN) and SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256).
confluent-kafka, kafka-python and kcat produce and consume over SSL, mTLS,
SASL_SSL/SCRAM-SHA-512 and SASL_PLAINTEXT/PLAIN; SCRAM users live in ZooKeeper as Kafka
keeps them. Wrong passwords, unknown mechanisms and requests before authentication are
refused as Kafka refuses them.
"""
from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from praha.cluster.certs import issue, make_ca
from praha.cluster.local import free_ports
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.protocol.client_security import ClientSecurity, SaslAuthenticationError
from praha.protocol.errors import BrokerConnectionError
from praha.protocol.scram import ScramCredential, ScramMechanism
from praha.security.credentials import alter_credentials, read_user_config
from praha.testing.cluster import wait_for
from praha.zk.store import ZkStore

pytestmark = pytest.mark.integration

LISTENERS = ("INTERNAL", "SSL", "SASL_SSL", "SASL_PLAINTEXT")
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
              'password="broker-secret" user_broker="broker-secret" user_bob="bob-secret";')
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required;'


class Secure:
    def __init__(self, cluster, ports: dict[int, dict[str, int]], ca, client_cert, zk: str):
        self.cluster, self.ports, self.ca, self.client_cert, self.zk = cluster, ports, ca, client_cert, zk

    def bootstrap(self, listener: str) -> str:
        return ",".join(f"127.0.0.1:{p[listener]}" for p in self.ports.values())


@pytest.fixture(scope="module")
def secure(module_cluster, tmp_path_factory):
    root = tmp_path_factory.mktemp("security")
    ca = make_ca(root / "ca")
    ports = {}
    per_broker = {}
    chosen = free_ports(8)  # one call: no port chosen twice
    for bid, free in zip((1, 2), (chosen[:4], chosen[4:])):
        cert = issue(ca, root / "ca", f"broker{bid}", f"broker{bid}", ou="brokers")
        ports[bid] = dict(zip(LISTENERS, free))
        per_broker[bid] = {
            "listeners": "PLAINTEXT://127.0.0.1:{port},"
            + ",".join(f"{n}://127.0.0.1:{ports[bid][n]}" for n in LISTENERS),
            "ssl.keystore.location": str(cert.keystore),
        }
    client_cert = issue(ca, root / "ca", "writer", "writer", ou="apps")
    common = {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,SSL:SSL,SASL_SSL:SASL_SSL,"
                                          "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "ssl.truststore.location": str(ca.path),
        "listener.name.internal.ssl.client.auth": "required",
        "listener.name.ssl.ssl.client.auth": "requested",
        "ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=.*$/$1/,DEFAULT",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "default.replication.factor": "2",
        "offsets.topic.replication.factor": "2",
        "offsets.topic.num.partitions": "2",
        "group.initial.rebalance.delay.ms": "0",
    }
    c = module_cluster(2, common, per_broker, directory=root / "cluster")
    for mechanism in ScramMechanism:
        alter_credentials(c.store, "alice", {mechanism: ScramCredential.from_password(mechanism, "alice-secret", 8192)},
                          [])
    return Secure(c.cluster, ports, ca, client_cert, c.zookeeper)


def client_settings(secure: Secure, kind: str) -> tuple[str, dict[str, str]]:
    """librdkafka settings (confluent-kafka, kcat) for one way of connecting."""
    ca = str(secure.ca.path)
    if kind == "ssl":
        return "SSL", {"security.protocol": "SSL", "ssl.ca.location": ca}
    if kind == "mtls":
        return "SSL", {"security.protocol": "SSL", "ssl.ca.location": ca,
                       "ssl.certificate.location": str(secure.client_cert.cert),
                       "ssl.key.location": str(secure.client_cert.key)}
    if kind == "scram":
        return "SASL_SSL", {"security.protocol": "SASL_SSL", "ssl.ca.location": ca, "sasl.mechanism": "SCRAM-SHA-512",
                            "sasl.username": "alice", "sasl.password": "alice-secret"}
    assert kind == "plain"
    return "SASL_PLAINTEXT", {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                              "sasl.username": "bob", "sasl.password": "bob-secret"}


def kafka_python_settings(secure: Secure, kind: str) -> dict:
    ca = str(secure.ca.path)
    return {
        "ssl": {"security_protocol": "SSL", "ssl_cafile": ca},
        "mtls": {"security_protocol": "SSL", "ssl_cafile": ca, "ssl_certfile": str(secure.client_cert.cert),
                 "ssl_keyfile": str(secure.client_cert.key)},
        "scram": {"security_protocol": "SASL_SSL", "ssl_cafile": ca, "sasl_mechanism": "SCRAM-SHA-512",
                  "sasl_plain_username": "alice", "sasl_plain_password": "alice-secret"},
        "plain": {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": "bob",
                  "sasl_plain_password": "bob-secret"},
    }[kind]


KINDS = ("ssl", "mtls", "scram", "plain")


def new_topic(secure: Secure) -> str:
    name = f"sec-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": secure.bootstrap("SASL_PLAINTEXT"),
                         **client_settings(secure, "plain")[1]})
    admin.create_topics([NewTopic(name, 2, 2)])[name].result(30)
    return name


@pytest.mark.parametrize("kind", KINDS)
def test_confluent_kafka(secure, kind):
    listener, settings = client_settings(secure, kind)
    topic = new_topic(secure)
    bs = secure.bootstrap(listener)
    p = Producer({"bootstrap.servers": bs, "acks": "all", **settings})
    for i in range(20):
        p.produce(topic, value=f"v{i}".encode())
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bs, "group.id": f"g-{kind}", "auto.offset.reset": "earliest", **settings})
    c.subscribe([topic])
    got = []
    try:
        wait_for(lambda: _poll_into(c, got) >= 20, 60, what=f"20 records over {kind}")
    finally:
        c.close()
    assert sorted(got) == sorted(f"v{i}" for i in range(20))


def _poll_into(consumer, got) -> int:
    m = consumer.poll(0.5)
    if m is not None and m.error() is None:
        got.append(m.value().decode())
    return len(got)


@pytest.mark.parametrize("kind", KINDS)
def test_kafka_python(secure, kind):
    listener = client_settings(secure, kind)[0]
    settings = kafka_python_settings(secure, kind)
    topic = new_topic(secure)
    bs = secure.bootstrap(listener).split(",")
    producer = KafkaProducer(bootstrap_servers=bs, acks="all", **settings)
    for i in range(10):
        producer.send(topic, f"k{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bs, auto_offset_reset="earliest", consumer_timeout_ms=15000,
                             **settings)
    try:
        got = sorted(m.value.decode() for _, m in zip(range(10), consumer))
    finally:
        consumer.close()
    assert got == sorted(f"k{i}" for i in range(10))


@pytest.mark.parametrize("kind", KINDS)
def test_kcat(secure, kind, tmp_path):
    listener, settings = client_settings(secure, kind)
    topic = new_topic(secure)
    args = ["kcat", "-b", secure.bootstrap(listener)] + [a for k, v in settings.items() for a in ("-X", f"{k}={v}")]
    produced = subprocess.run(args + ["-P", "-t", topic], input="a\nb\nc\n", capture_output=True, text=True, timeout=60)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(args + ["-C", "-t", topic, "-o", "beginning", "-c", "3", "-e", "-q"],
                              capture_output=True, text=True, timeout=60)
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()) == ["a", "b", "c"]


def test_registration_has_every_endpoint_as_kafka_writes_it(secure):
    store = ZkStore(secure.zk).start()
    try:
        data, _ = store.get_data("/brokers/ids/1")
    finally:
        store.stop()
    reg = json.loads(data)
    ports = secure.ports[1]
    assert reg["version"] == 5
    assert reg["listener_security_protocol_map"] == {
        "PLAINTEXT": "PLAINTEXT", "INTERNAL": "SSL", "SSL": "SSL", "SASL_SSL": "SASL_SSL",
        "SASL_PLAINTEXT": "SASL_PLAINTEXT"}
    assert reg["endpoints"][1:] == [f"{n}://127.0.0.1:{ports[n]}" for n in LISTENERS]
    assert reg["endpoints"][0].startswith("PLAINTEXT://127.0.0.1:")
    assert reg["port"] > 0


def test_metadata_answers_the_listener_the_client_came_through(secure):
    for kind in KINDS:
        listener, settings = client_settings(secure, kind)
        admin = AdminClient({"bootstrap.servers": secure.bootstrap(listener), **settings})
        brokers = admin.list_topics(timeout=20).brokers
        assert {b.id: b.port for b in brokers.values()} == {bid: p[listener] for bid, p in secure.ports.items()}


def test_replication_runs_over_the_mutual_tls_inter_broker_listener(secure):
    topic = new_topic(secure)  # replication factor 2: the follower fetches over INTERNAL
    admin = AdminClient({"bootstrap.servers": secure.bootstrap("SSL"), **client_settings(secure, "ssl")[1]})
    wait_for(lambda: all(len(p.isrs) == 2 for p in admin.list_topics(topic,
                                                                     timeout=10).topics[topic].partitions.values()),
             30, what="both replicas in sync")


def test_mtls_principal_comes_from_the_certificate(secure):
    """The broker logs no principal; the SSL listener's session is checked through a
    handshake-time property instead: a client without a certificate is still served
    (requested, not required), one with a certificate too; INTERNAL refuses the former."""
    ssl_ctx = _client_ctx(secure, with_cert=False)
    conn = BrokerConnection("127.0.0.1", secure.ports[1]["INTERNAL"], timeout=5,
                            security=ClientSecurity("INTERNAL", "SSL", ssl_ctx))

    def connect_and_ask() -> None:
        conn.connect()  # a TLS 1.3 client may learn of the refusal only at its first read
        conn.send(MetadataRequest[0](topics=[]), 0)

    with pytest.raises(BrokerConnectionError):
        connect_and_ask()
    conn.close()
    ok = BrokerConnection("127.0.0.1", secure.ports[1]["SSL"], timeout=5,
                          security=ClientSecurity("SSL", "SSL", ssl_ctx))
    with ok:
        assert ok.send(MetadataRequest[0](topics=[]), 0).brokers


def _client_ctx(secure, with_cert: bool):
    import ssl

    ctx = ssl.create_default_context(cafile=str(secure.ca.path))
    if with_cert:
        ctx.load_cert_chain(str(secure.client_cert.keystore))
    return ctx


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_wrong_password_fails_and_closes(secure, mechanism):
    user = "bob" if mechanism == "PLAIN" else "alice"
    security = ClientSecurity("SASL_SSL", "SASL_SSL", _client_ctx(secure, False), mechanism, user, "wrong")
    conn = BrokerConnection("127.0.0.1", secure.ports[1]["SASL_SSL"], timeout=5, security=security)
    with pytest.raises(SaslAuthenticationError) as e:
        conn.connect()
    assert e.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    good = ClientSecurity("SASL_SSL", "SASL_SSL", _client_ctx(secure, False), mechanism, user, f"{user}-secret")
    with BrokerConnection("127.0.0.1", secure.ports[1]["SASL_SSL"], timeout=5, security=good) as ok:
        assert ok.send(MetadataRequest[0](topics=[]), 0).brokers


def test_failed_authentication_answers_then_closes_and_reveals_nothing(secure):
    conn = BrokerConnection("127.0.0.1", secure.ports[1]["SASL_PLAINTEXT"], timeout=5)
    with conn:
        assert conn.send(SaslHandshakeRequest[1](mechanism="PLAIN"), 1).error_code == 0
        answer = conn.send(SaslAuthenticateRequest[1](auth_bytes=b"\0bob\0nope"), 1)
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "topic" not in (answer.error_message or "").lower()
        with pytest.raises(BrokerConnectionError):
            conn.send(MetadataRequest[0](topics=[]), 0)


def test_unknown_mechanism_answers_the_enabled_list_then_closes(secure):
    conn = BrokerConnection("127.0.0.1", secure.ports[1]["SASL_SSL"], timeout=5,
                            security=ClientSecurity("SASL_SSL", "SASL_SSL", _client_ctx(secure, False)))
    with conn:
        answer = conn.send(SaslHandshakeRequest[1](mechanism="GSSAPI"), 1)
        assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert answer.mechanisms == ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]
        with pytest.raises(BrokerConnectionError):
            conn.send(MetadataRequest[0](topics=[]), 0)


def test_requests_before_authentication_close_the_connection_unanswered(secure):
    conn = BrokerConnection("127.0.0.1", secure.ports[1]["SASL_PLAINTEXT"], timeout=5)
    with conn, pytest.raises(BrokerConnectionError):
        conn.send(MetadataRequest[0](topics=[]), 0)


def test_scram_credentials_are_stored_as_kafka_stores_them(secure):
    store = ZkStore(secure.zk).start()
    try:
        config = read_user_config(store, "alice")
        changes = store.get_children("/config/changes") or []
        notices = [json.loads(store.get_data(f"/config/changes/{c}")[0]) for c in changes]
    finally:
        store.stop()
    assert set(config) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert all(v.startswith("salt=") and v.endswith(",iterations=8192") for v in config.values())
    assert {"version": 2, "entity_path": "users/alice"} in notices


def test_scram_credentials_through_the_admin_api(secure):
    """AlterUserScramCredentials from confluent-kafka's AdminClient, then carol logs in with
    kafka-python over SCRAM-SHA-256; DescribeUserScramCredentials lists her mechanism."""
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )
    from confluent_kafka.admin import (
        ScramMechanism as CScram,
    )

    admin = AdminClient({"bootstrap.servers": secure.bootstrap("SASL_PLAINTEXT"),
                         **client_settings(secure, "plain")[1]})
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(CScram.SCRAM_SHA_256, 8192), b"carol-secret")
    admin.alter_user_scram_credentials([upsert])["carol"].result(20)
    described = admin.describe_user_scram_credentials(["carol"])["carol"].result(20)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [(CScram.SCRAM_SHA_256, 8192)]
    settings = {"security_protocol": "SASL_SSL", "ssl_cafile": str(secure.ca.path), "sasl_mechanism": "SCRAM-SHA-256",
                "sasl_plain_username": "carol", "sasl_plain_password": "carol-secret"}
    producer = KafkaProducer(bootstrap_servers=secure.bootstrap("SASL_SSL").split(","), **settings)
    producer.send(new_topic(secure), b"x").get(30)
    producer.close()
    admin.alter_user_scram_credentials([UserScramCredentialDeletion("carol", CScram.SCRAM_SHA_256)])["carol"].result(20)
    with pytest.raises(KafkaException) as gone:
        admin.describe_user_scram_credentials(["carol"])["carol"].result(20)
    assert gone.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND


def test_scram_user_from_praha_configs(secure, cli):
    """kafka-configs' syntax: the credential lands in ZooKeeper (no password there) and dave
    logs in with confluent-kafka over SASL_SSL/SCRAM-SHA-512 at once."""
    rc, out, err = cli("configs", "--entity-type", "users", "--entity-name", "dave", "--alter", "--add-config",
                       "SCRAM-SHA-512=[iterations=8192,password=dave-secret],SCRAM-SHA-256=[password=dave-secret]",
                       "--zookeeper", secure.zk)
    assert rc == 0, err
    rc, out, err = cli("configs", "--entity-type", "users", "--entity-name", "dave", "--describe",
                       "--zookeeper", secure.zk)
    assert out.strip() == ("SCRAM credential configs for user-principal 'dave' are "
                           "SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192")
    store = ZkStore(secure.zk).start()
    try:
        assert b"dave-secret" not in store.get_data("/config/users/dave")[0]
    finally:
        store.stop()
    settings = {**client_settings(secure, "scram")[1], "sasl.username": "dave", "sasl.password": "dave-secret"}
    admin = AdminClient({"bootstrap.servers": secure.bootstrap("SASL_SSL"), **settings})
    assert len(admin.list_topics(timeout=20).brokers) == 2


def test_tls_garbage_and_stalled_handshakes_do_not_stall_others(secure):
    """Garbage on the TLS port, a client that stops mid-handshake and one that trickles a
    ClientHello byte by byte: a well-behaved client is served meanwhile."""
    import socket
    import time

    port = secure.ports[1]["SSL"]
    garbage = socket.create_connection(("127.0.0.1", port))
    garbage.sendall(b"\x00\x00\x00\x10GET / HTTP/1.1\r\n\r\n" * 4)
    silent = socket.create_connection(("127.0.0.1", port))  # connects, never says hello
    trickle = socket.create_connection(("127.0.0.1", port))
    trickle.sendall(b"\x16\x03")  # the start of a ClientHello, and then nothing more
    try:
        started = time.monotonic()
        ok = BrokerConnection("127.0.0.1", port, timeout=5,
                              security=ClientSecurity("SSL", "SSL", _client_ctx(secure, with_cert=False)))
        with ok:
            assert ok.send(MetadataRequest[0](topics=[]), 0).brokers
        assert time.monotonic() - started < 5
        garbage.settimeout(5)
        assert _closed_by_peer(garbage)  # the broker dropped it (after a TLS alert at most)
    finally:
        for s in (garbage, silent, trickle):
            s.close()


def _closed_by_peer(sock) -> bool:
    try:
        for _ in range(10):
            if sock.recv(4096) == b"":
                return True
    except ConnectionResetError:
        return True
    return False


def test_sasl_handshake_v0_then_bare_tokens(secure):
    """Old clients: SaslHandshake v0, then the PLAIN token as a bare size-prefixed frame;
    the connection then serves requests."""
    import socket
    import struct

    from praha.protocol.framing import encode_request

    port = secure.ports[1]["SASL_PLAINTEXT"]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        def read_frame() -> bytes:
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            return s.recv(size, socket.MSG_WAITALL)

        s.sendall(encode_request(SaslHandshakeRequest[0](mechanism="PLAIN"), 0, 1, "old-client"))
        answer = read_frame()
        assert struct.unpack(">ih", answer[:6]) == (1, 0)  # correlation id, no error
        token = b"\0bob\0bob-secret"
        s.sendall(struct.pack(">i", len(token)) + token)
        assert read_frame() == b""  # PLAIN's (empty) server token
        s.sendall(encode_request(MetadataRequest[0](topics=[]), 0, 2, "old-client"))
        assert struct.unpack(">i", read_frame()[:4]) == (2,)
