"""From an open ZooKeeper tree to a secured one, as Kafka documents it: a rolling restart of
the brokers with their ZooKeeper identity (so that every broker can change what any other
will protect), a second one with `zookeeper.set.acl=true`, then
`praha zookeeper-security-migration --zookeeper.acl secure`. Afterwards an outsider writes
nothing; `unsecure` opens the tree again. The slow form does it to a 3-broker cluster under
produce and consume load and checks that no acknowledged record was lost.

The test ZooKeeper is a plain one, so the brokers' identity here is the digest scheme
(`praha.zookeeper.digest`), which needs no server configuration."""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from kazoo.exceptions import NoAuthError
from kazoo.security import OPEN_ACL_UNSAFE

from praha.cluster.local import LocalCluster
from praha.testing.cluster import running_cluster, wait_for
from praha.testing.forged_zk import REFUSED, outsider, try_forged_writes
from praha.testing.zookeeper import delete_chroot, unique_chroot
from praha.zk.auth import ENVIRONMENT_VARIABLE, ZkAuth
from praha.zk.store import ZkStore

pytestmark = pytest.mark.integration

DIGEST = "praha:migration-secret"
LOGGED_IN = {"praha.zookeeper.digest": DIGEST}
SECURED = {**LOGGED_IN, "zookeeper.set.acl": "true"}


def _rolling_restart(cluster: LocalCluster, settings: dict[str, str], topic: str | None = None) -> None:
    """Each broker in turn: graceful stop, new settings, start; the next one only once every
    replica of `topic` is back in sync (so acks=all with min.insync.replicas=2 keeps working)."""
    for bid in sorted(cluster.load().brokers):
        cluster.stop_broker(bid)
        state = cluster.load()
        state.brokers[bid].overrides.update(settings)
        cluster.save(state)
        cluster.start_broker(bid, timeout=120)
        if topic is not None:
            wait_for(lambda: all(len(p["isr"]) == len(p["replicas"])
                                 for p in cluster.status()["topics"][topic]["partitions"]),
                     120, 0.5, f"{topic} fully in sync after broker {bid} restarted")


def _outsider_writes(connect: str, topic: str) -> dict[str, str]:
    """What an unauthenticated client managed of the writes that would take the cluster over."""
    k = outsider(connect)
    try:
        answers, _ = try_forged_writes(k, topic, "x")
    finally:
        k.stop()
        k.close()
    return {what: answer for what, answer in answers.items() if answer != REFUSED}


@pytest.fixture
def chroot(zookeeper):
    connect = unique_chroot(zookeeper.connect_string)
    yield connect
    delete_chroot(connect, auth=ZkAuth(DIGEST))


def test_migration_secures_an_existing_tree_and_opens_it_again(chroot, tmp_path, cli, monkeypatch):
    with running_cluster(tmp_path / "c", chroot, 1) as cluster:
        rc, _, err = cli("topics", "create", "--topic", "old", "--partitions", "1", "--replication-factor", "1",
                         "--zookeeper", chroot)
        assert rc == 0, err
        rc, _, err = cli("configs", "--entity-type", "users", "--entity-name", "u", "--alter", "--add-config",
                         "SCRAM-SHA-256=[password=p]", "--zookeeper", chroot)
        assert rc == 0, err
        rc, out, _ = cli("cluster", "status", "--json", "--zookeeper", chroot)
        assert '"acl_protected": false' in out
        _rolling_restart(cluster, SECURED)
        monkeypatch.setenv(ENVIRONMENT_VARIABLE, DIGEST)
        rc, out, err = cli("zookeeper-security-migration", "--zookeeper.acl", "secure", "--zookeeper.connect", chroot)
        assert rc == 0, err
        assert "secure on" in out, err
        rc, out, _ = cli("cluster", "status", "--zookeeper", chroot)
        assert "znodes ACL-protected" in out
        monkeypatch.delenv(ENVIRONMENT_VARIABLE)
        assert _outsider_writes(chroot, "old") == {}
        reader = outsider(chroot)
        try:
            assert reader.get("/brokers/topics/old")[0]
            with pytest.raises(NoAuthError):
                reader.get("/config/users/u")  # created open, made private by the migration
        finally:
            reader.stop()
            reader.close()
        # the brokers still run the cluster on the secured tree
        rc, _, err = cli("topics", "create", "--topic", "new", "--partitions", "1", "--replication-factor", "1",
                         "--dir", cluster.root, "--zk-tls-config-file", _digest_file(tmp_path))
        assert rc == 0, err

        monkeypatch.setenv(ENVIRONMENT_VARIABLE, DIGEST)
        rc, out, err = cli("zookeeper-security-migration", "--zookeeper.acl", "unsecure", "--zookeeper", chroot)
        assert rc == 0, err
        store = ZkStore(chroot, auth=ZkAuth(DIGEST)).start()
        try:
            for path in ("/brokers/topics/old", "/config/users/u", "/controller_epoch", "/"):
                assert store.client.get_acls(path)[0] == OPEN_ACL_UNSAFE, path
        finally:
            store.stop()


def _digest_file(tmp_path) -> str:
    f = tmp_path / "zk-client.properties"
    f.write_text(f"praha.zookeeper.digest={DIGEST}\nzookeeper.set.acl=true\n")
    return str(f)


@pytest.mark.slow
def test_a_running_cluster_is_secured_by_a_rolling_restart_without_losing_a_record(chroot, tmp_path, cli,
                                                                                     monkeypatch):
    with running_cluster(tmp_path / "c", chroot, 3) as cluster:
        rc, _, err = cli("topics", "create", "--topic", "load", "--partitions", "3", "--replication-factor", "3",
                         "--config", "min.insync.replicas=2", "--zookeeper", chroot)
        assert rc == 0, err
        bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in cluster.load().brokers.values())
        acked: set[bytes] = set()
        consumed: set[bytes] = set()
        stop = threading.Event()

        def produce() -> None:
            p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                          "linger.ms": 5, "message.timeout.ms": 120000})

            def done(err, msg) -> None:
                if err is None:
                    acked.add(msg.value())
            for i in range(1_000_000):  # bounded; stopped by the event long before
                if stop.is_set():
                    break
                p.produce("load", f"r{i}".encode(), on_delivery=done)
                p.poll(0)
                time.sleep(0.002)
            p.flush(120)

        def consume() -> None:
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": "migration-load",
                          "auto.offset.reset": "earliest"})
            c.subscribe(["load"])
            try:
                for _ in range(100_000):  # bounded
                    if stop.is_set():
                        break
                    m = c.poll(0.2)
                    if m is not None and m.error() is None:
                        consumed.add(m.value())
            finally:
                c.close()

        threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
        for t in threads:
            t.start()
        try:
            wait_for(lambda: len(acked) > 200 and consumed, 120, 0.2, "load running")
            _rolling_restart(cluster, LOGGED_IN, "load")
            _rolling_restart(cluster, SECURED, "load")
            monkeypatch.setenv(ENVIRONMENT_VARIABLE, DIGEST)
            rc, _, err = cli("zookeeper-security-migration", "--zookeeper.acl", "secure", "--zookeeper", chroot)
            assert rc == 0, err
            monkeypatch.delenv(ENVIRONMENT_VARIABLE)
            during = len(acked)
            wait_for(lambda: len(acked) > during + 200, 120, 0.2, "records still acknowledged after the migration")
        finally:
            stop.set()
            for t in threads:
                t.join(180)
        assert _outsider_writes(chroot, "load") == {}
        # every acknowledged record is there, read from the beginning of each partition
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "migration-check", "enable.auto.commit": False})
        c.assign([TopicPartition("load", p, OFFSET_BEGINNING) for p in range(3)])
        seen: set[bytes] = set()
        errors: list[str] = []
        try:
            for _ in range(600):  # bounded: up to 600 batches of 1000
                for m in c.consume(1000, 0.5):
                    if m.error() is None:
                        seen.add(m.value())
                    else:
                        errors.append(str(m.error()))
                if acked <= seen:
                    break
        finally:
            c.close()
        assert len(seen) > 0, errors[-5:]
        assert len(acked) > 400
        missing = acked - seen
        assert missing == set(), (f"{len(missing)} of {len(acked)} acknowledged records not read back "
                                  f"(read {len(seen)}; consumer errors {errors[-5:]})")
