"""`praha cluster up --secure` secures its ZooKeeper too: the embedded server speaks TLS only
and knows one SASL user, the brokers and tools log in as it, and every znode carries Kafka's
ACLs. An outsider who reaches ZooKeeper reads only what Kafka leaves world-readable and
writes nothing; one with the wrong secret is not let in; every `praha` command that works
through ZooKeeper still works (the wire tools, such as elect-leaders, do not speak SASL_SSL
yet, with or without this)."""
from __future__ import annotations

import json
import stat

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.handlers.threading import KazooTimeoutError

from praha.cluster.local import LocalCluster
from praha.cluster.secure import ZK_CLIENT_FILE, ZK_JAAS_FILE, SecureSetup
from praha.testing.cluster import TEST_BROKER_CONFIG, wait_for
from praha.testing.forged_zk import REFUSED, outsider, try_forged_writes
from praha.zk.auth import ZkAuth
from praha.zk.client import ZkAuthenticationError
from praha.zk.four_letter import four_letter_word
from praha.zk.store import ZkStore

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    root = tmp_path_factory.mktemp("zksecure") / "cluster"
    cluster = LocalCluster(root)
    try:
        cluster.up(1, overrides={**TEST_BROKER_CONFIG, "offsets.topic.num.partitions": "2"}, secure=True,
                   timeout=120)
        state = cluster.load()
        yield cluster, state, SecureSetup.load(root / "security")
    finally:
        if cluster.exists():
            cluster.down(timeout=30)


def _stranger(state, setup: SecureSetup) -> KazooClient:
    """A ZooKeeper client that can reach the server (TLS, trusting its CA) but has no login."""
    return outsider(state.zookeeper, use_ssl=True, ca=str(setup.ca), verify_certs=True)


def _snapshot(store: ZkStore) -> dict:
    return {"topics": sorted(store.get_all_topics()), "controller": store.get_controller_id(),
            "epoch": store.get_controller_epoch(), "deletions": store.get_topics_marked_for_deletion(),
            "reassign": store.get_data("/admin/reassign_partitions") is not None,
            "users": sorted(store.get_children("/config/users") or []),
            "acls": sorted(store.get_children("/kafka-acl/Topic") or [])}


def test_an_outsider_reads_what_kafka_leaves_readable_and_writes_nothing(secure, cli):
    cluster, state, setup = secure
    rc, _, err = cli("topics", "create", "--topic", "kept", "--partitions", "1", "--replication-factor", "1",
                     "--dir", cluster.root)
    assert rc == 0, err
    trusted = ZkStore(state.zookeeper, auth=setup.zk_auth()).start()
    stranger = _stranger(state, setup)
    try:
        before = _snapshot(trusted)
        assert stranger.get("/brokers/topics/kept")[0]  # world-readable, as in Kafka
        assert stranger.get("/controller")[0]
        with pytest.raises(NoAuthError):  # SCRAM credentials: the brokers' identity only
            stranger.get("/config/users/admin")
        with pytest.raises(NoAuthError):
            stranger.get_children("/config/users")
        answers, _ = try_forged_writes(stranger, "kept", "x")
        assert set(answers.values()) == {REFUSED}, answers
        assert _snapshot(trusted) == before
    finally:
        stranger.stop()
        stranger.close()
        trusted.stop()


def test_plaintext_is_off_and_only_the_used_four_letter_words_answer(secure):
    cluster, state, setup = secure
    host, _, port = state.zookeeper.rpartition(":")
    # the one port speaks TLS only: a plaintext request gets no ZooKeeper answer
    assert not (four_letter_word(host, int(port), "srvr", timeout=3) or "").startswith("Zookeeper version")
    tls = setup.zk_auth().tls
    assert "Zookeeper version" in (four_letter_word(host, int(port), "srvr", tls=tls) or "")
    for word in ("envi", "dump", "cons", "conf", "wchp"):
        assert "not in the whitelist" in (four_letter_word(host, int(port), word, tls=tls) or "")
    conf = (cluster.root / "zookeeper" / "zoo.cfg").read_text()
    assert "admin.enableServer=false" in conf
    assert "\nclientPort=" not in conf
    plain = KazooClient(hosts=state.zookeeper)  # a plaintext ZooKeeper session: never established
    try:
        with pytest.raises(KazooTimeoutError):
            plain.start(5)
    finally:
        plain.stop()
        plain.close()


def test_secrets_and_data_are_private(secure):
    cluster, state, setup = secure
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(cluster.root / "zookeeper") == 0o700
    for name in (ZK_CLIENT_FILE, ZK_JAAS_FILE, "admin.json"):
        assert mode(setup.directory / name) == 0o600
    assert mode(cluster.root / "zookeeper" / "zookeeper_jaas.conf") == 0o600
    assert mode(cluster.root / "broker-1" / "server.properties") == 0o600


def test_a_wrong_secret_is_refused(secure, cli, tmp_path):
    cluster, state, setup = secure
    good = setup.zk_auth()
    with pytest.raises(ZkAuthenticationError):
        ZkStore(state.zookeeper, auth=ZkAuth(set_acl=True, sasl_user=good.sasl_user, sasl_password="not-it",
                                             tls=good.tls), connection_timeout_ms=10000).start()
    jaas = tmp_path / "jaas.conf"
    jaas.write_text('Client {\n org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                    f' username="{good.sasl_user}" password="not-it";\n}};\n')
    props = tmp_path / "zk.properties"
    props.write_text((setup.directory / ZK_CLIENT_FILE).read_text().replace(str(setup.directory / ZK_JAAS_FILE),
                                                                            str(jaas)))
    rc, _, err = cli("topics", "create", "--topic", "never", "--partitions", "1", "--replication-factor", "1",
                     "--zookeeper", state.zookeeper, "--zk-tls-config-file", props)
    assert rc == 1
    assert "refused the SASL login" in err
    rc, out, err = cli("topics", "list", "--dir", cluster.root)
    assert rc == 0
    assert "never" not in out.split()


def test_every_command_works_on_the_secured_tree(secure, cli, tmp_path):
    cluster, state, setup = secure
    d = ("--dir", cluster.root)
    steps = [
        ("topics", "create", "--topic", "t", "--partitions", "2", "--replication-factor", "1", "--config",
         "retention.ms=60000"),
        ("topics", "alter", "--topic", "t", "--partitions", "3"),
        ("topics", "describe", "--topic", "t"),
        ("configs", "--entity-type", "topics", "--entity-name", "t", "--alter", "--add-config", "retention.ms=1000"),
        ("configs", "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config",
         "message.max.bytes=2000000"),
        ("configs", "--entity-type", "clients", "--entity-name", "c", "--alter", "--add-config",
         "producer_byte_rate=1048576"),
        ("configs", "--entity-type", "users", "--entity-name", "bob", "--alter", "--add-config",
         "SCRAM-SHA-512=[iterations=8192,password=pw]"),
        ("acls", "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "t"),
        ("acls", "--list", "--topic", "t"),
        ("reassign", "list"),
        ("topics", "delete", "--topic", "t"),
    ]
    for args in steps:
        rc, out, err = cli(*args, *d)
        assert rc == 0, (args, err)
    rc, out, err = cli("cluster", "status", "--json", *d)
    assert rc == 0, err
    zs = json.loads(out)["zookeeper_security"]
    assert zs == {"authenticated": True, "authentication": "SASL/DIGEST-MD5", "encrypted": True, "acls": True,
                  "acl_protected": True}
    rc, out, err = cli("cluster", "status", *d)
    assert "zookeeper access: authenticated (SASL/DIGEST-MD5), encrypted (TLS), znodes ACL-protected" in out
    trusted = ZkStore(state.zookeeper, auth=setup.zk_auth()).start()
    try:
        wait_for(lambda: "t" not in trusted.get_all_topics(), 60, what="topic t deleted")
        for sensitive in ("/config/users/bob", "/config/brokers/1"):  # readable by the brokers' login only
            assert {(a.id.scheme, a.id.id) for a in trusted.client.get_acls(sensitive)[0]} == {("sasl", "praha")}
        assert {(a.id.scheme, a.id.id) for a in trusted.client.get_acls("/config/clients/c")[0]} == {
            ("sasl", "praha"), ("world", "anyone")}
    finally:
        trusted.stop()
    # the brokers secured their clients and their ZooKeeper: no warning
    assert "ZooKeeper access is" not in (cluster.root / "broker-1" / "broker.log").read_text()
    # restarting ZooKeeper keeps it secured
    rc, _, err = cli("zookeeper", "start", *d)
    assert rc == 1
    assert "is running" in err
