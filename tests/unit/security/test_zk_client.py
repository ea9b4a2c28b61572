"""The ZooKeeper client's security settings (Kafka's names), Kafka's per-path znode ACLs,
and the start-up warning of a broker whose ZooKeeper is open: pure decisions, no server."""
from __future__ import annotations

import pytest
from kazoo.security import ACL, Id

from praha.errors import ConfigError
from praha.security.zk_client import open_zookeeper_warning, zk_auth_for_tool, zk_auth_from_properties
from praha.zk.auth import CREATOR_ALL_ACL, ZkAuth, ZkTls, secure_acl, sensitive_path

JAAS = 'Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username="praha"\n' \
       '  password="s3cret";\n};\nOther {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n' \
       '  username="other" password="x";\n};\n'
WORLD_READ = ACL(1, Id("world", "anyone"))


@pytest.fixture
def jaas(tmp_path):
    f = tmp_path / "jaas.conf"
    f.write_text(JAAS)
    return str(f)


@pytest.mark.parametrize(('path', 'sensitive'), [
    ("/config/users", True), ("/config/users/alice", True), ("/config/brokers/1", True),
    ("/delegation_token/tokens/t", True), ("/config/topics/t", False), ("/config/clients/c", False),
    ("/kafka-acl/Topic/t", False), ("/kafka-acl-changes/acl_changes_0000000001", False), ("/controller", False),
    ("/brokers/topics/t", False), ("/admin/delete_topics/t", False),
])
def test_acls_follow_kafkas_zkdata(path, sensitive):
    assert sensitive_path(path) is sensitive
    assert secure_acl(path) == (CREATOR_ALL_ACL if sensitive else CREATOR_ALL_ACL + [WORLD_READ])
    assert ZkAuth("u:p", True).acl_for(path) == secure_acl(path)
    assert ZkAuth("u:p", False).acl_for(path) is None  # open, as kazoo's default


def test_sasl_from_the_jaas_client_section_named_in_the_properties_or_kafka_opts(jaas):
    auth = zk_auth_from_properties({"java.security.auth.login.config": jaas, "zookeeper.set.acl": "true"}, {})
    assert (auth.sasl_user, auth.sasl_password, auth.set_acl, auth.digest) == ("praha", "s3cret", True, "")
    env = {"KAFKA_OPTS": f"-Xmx1g -Djava.security.auth.login.config={jaas} -Dzookeeper.sasl.clientconfig=Other"}
    assert zk_auth_from_properties({}, env).sasl_user == "other"
    assert zk_auth_from_properties({}, {}).authenticated is False


def test_a_tool_logged_in_by_kafka_opts_protects_what_it_creates(jaas, monkeypatch):
    monkeypatch.delenv("PRAHA_ZOOKEEPER_DIGEST", raising=False)
    auth = zk_auth_for_tool(None, {"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"})
    assert auth.sasl_user == "praha"
    assert auth.set_acl
    monkeypatch.setenv("PRAHA_ZOOKEEPER_DIGEST", "u:p")
    assert zk_auth_for_tool(None, {}) == ZkAuth("u:p", True)


def test_tls_settings_by_kafkas_names():
    auth = zk_auth_from_properties({
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.ssl.truststore.location": "/ca.pem", "zookeeper.ssl.keystore.location": "/me.pem",
        "zookeeper.ssl.endpoint.identification.algorithm": ""}, {})
    assert auth.tls == ZkTls("/ca.pem", "/me.pem", check_hostname=False)
    assert zk_auth_from_properties({"zookeeper.ssl.truststore.location": "/ca.pem"}, {}).tls is None


@pytest.mark.parametrize(('props', 'message'), [
    ({"zookeeper.ssl.client.enable": "true"}, "needs zookeeper.ssl.truststore.location"),
    ({"zookeeper.ssl.client.enable": "true", "zookeeper.ssl.truststore.location": "/t",
      "zookeeper.ssl.keystore.type": "PKCS12"}, "zookeeper.ssl.keystore.type: praha reads PEM files only"),
    ({"zookeeper.ssl.client.enable": "true", "zookeeper.ssl.truststore.location": "/t",
      "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNIO"},
      "needs org.apache.zookeeper.ClientCnxnSocketNetty"),
    ({"zookeeper.set.acl": "true"}, "zookeeper.set.acl=true needs a ZooKeeper identity"),
    ({"praha.zookeeper.digest": "no-colon"}, "user:password"),
    ({"java.security.auth.login.config": "/nowhere/jaas.conf"}, "cannot read /nowhere/jaas.conf"),
])
def test_bad_settings_are_refused_with_a_clear_message(props, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        zk_auth_from_properties(props, {})


def test_only_digest_md5_logins(tmp_path):
    f = tmp_path / "krb.conf"
    f.write_text("Client {\n com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;\n};\n")
    with pytest.raises(ConfigError, match="SASL DIGEST-MD5"):
        zk_auth_from_properties({"java.security.auth.login.config": str(f)}, {})


def test_the_warning_of_secured_listeners_over_an_open_zookeeper():
    secured = ["SASL_SSL", "SSL"]
    warning = open_zookeeper_warning(secured, ZkAuth())
    assert warning
    assert "unauthenticated, without znode ACLs" in warning
    assert "without znode ACLs" in (open_zookeeper_warning(secured, ZkAuth("u:p", False)) or "")
    assert open_zookeeper_warning(secured, ZkAuth("u:p", True)) is None
    assert open_zookeeper_warning(["PLAINTEXT", "SSL"], ZkAuth()) is None  # an open listener: nothing to betray
