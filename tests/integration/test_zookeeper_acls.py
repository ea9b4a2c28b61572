"""`zookeeper.set.acl=true`: the brokers create their znodes with digest ACLs, so a
ZooKeeper client without their identity can read but not change `/controller`,
`/brokers`, partition state or `/config`, nor read SCRAM credentials; the `praha` admin
commands authenticate the same way (PRAHA_ZOOKEEPER_DIGEST)."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from praha.zk.auth import ENVIRONMENT_VARIABLE, ZkAuth
from praha.zk.store import ZkStore

pytestmark = pytest.mark.integration

DIGEST = "praha-brokers:broker-zk-secret"


@pytest.fixture(scope="module")
def secured(module_cluster):
    # the test's namespace is removed with the brokers' identity
    c = module_cluster(1, {"zookeeper.set.acl": "true", "praha.zookeeper.digest": DIGEST}, store=False,
                       auth=ZkAuth(DIGEST))
    return c.cluster, c.zookeeper


def test_an_unauthenticated_client_can_read_but_not_change(secured, cli, monkeypatch):
    cluster, connect = secured
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, DIGEST)  # admin commands authenticate as the brokers do
    rc, _, err = cli("topics", "create", "--topic", "guarded", "--partitions", "1", "--replication-factor", "1",
                     "--zookeeper", connect)
    assert rc == 0, err
    rc, _, err = cli("configs", "--entity-type", "users", "--entity-name", "u", "--alter",
                     "--add-config", "SCRAM-SHA-256=[password=p]", "--zookeeper", connect)
    assert rc == 0, err
    p = Producer({"bootstrap.servers": f"127.0.0.1:{cluster.load().brokers[1].port}"})
    p.produce("guarded", b"x")
    assert p.flush(20) == 0
    monkeypatch.delenv(ENVIRONMENT_VARIABLE)
    stranger = KazooClient(hosts=connect)
    stranger.start(10)
    try:
        assert stranger.get("/controller")[0]  # readable, as Kafka's ACLs leave it
        for path in ("/controller", "/controller_epoch", "/brokers/ids/1", "/brokers/topics/guarded",
                     "/brokers/topics/guarded/partitions/0/state", "/config/topics/guarded"):
            with pytest.raises(NoAuthError):
                stranger.set(path, b"{}")
        with pytest.raises(NoAuthError):
            stranger.delete("/brokers/topics/guarded", recursive=True)
        with pytest.raises(NoAuthError):
            stranger.create("/config/changes/config_change_", b"{}", sequence=True)
        with pytest.raises(NoAuthError):
            stranger.create("/admin/delete_topics/guarded")
        with pytest.raises(NoAuthError):
            stranger.get("/config/users/u")  # SCRAM credentials: the brokers' identity only
    finally:
        stranger.stop()
        stranger.close()
    trusted = ZkStore(connect, auth=ZkAuth(DIGEST)).start()
    try:
        assert trusted.get_data("/config/users/u") is not None
    finally:
        trusted.stop()
