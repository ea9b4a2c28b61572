"""ACLs with real clients on a two-broker cluster with the AclAuthorizer on.

Brokers talk over INTERNAL (mutual TLS; their certificates map to User:broker1/2, super
users); clients log in over SASL_PLAINTEXT/PLAIN as admin (super user), alice or bob.
ACLs are set with `praha acls` (ZooKeeper) and every broker follows the change notices.
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata import MetadataRequest

from praha.cluster.certs import issue, make_ca
from praha.cluster.local import free_ports
from praha.common import TopicPartition
from praha.errors import ErrorCode
from praha.protocol import controller_wire as wire
from praha.protocol.client import BrokerConnection
from praha.protocol.client_security import ClientSecurity
from praha.protocol.controller_apis import ControlledShutdownRequest
from praha.protocol.controller_requests import (
    LeaderAndIsrRequestData,
    PartitionLeaderState,
    StopReplicaPartition,
    StopReplicaRequestData,
)
from praha.testing.cluster import wait_for
from praha.zk.store import ZkStore

pytestmark = pytest.mark.integration

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")


class Env:
    def __init__(self, cluster, zk, ports, ca, client_cert):
        self.cluster, self.zk, self.ports, self.ca, self.client_cert = cluster, zk, ports, ca, client_cert

    def bootstrap(self, listener="SASL_PLAINTEXT", broker=None) -> str:
        ids = [broker] if broker else sorted(self.ports)
        return ",".join(f"127.0.0.1:{self.ports[b][listener]}" for b in ids)

    def conf(self, user: str, broker=None) -> dict:
        return {"bootstrap.servers": self.bootstrap(broker=broker), "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": USERS[user]}


@pytest.fixture(scope="module")
def env(module_cluster, tmp_path_factory):
    root = tmp_path_factory.mktemp("acls")
    ca = make_ca(root / "ca")
    ports, per_broker = {}, {}
    free = iter(free_ports(4))  # one call: no port chosen twice
    for bid in (1, 2):
        cert = issue(ca, root / "ca", f"broker{bid}", f"broker{bid}", ou="brokers")
        internal, sasl = next(free), next(free)
        ports[bid] = {"INTERNAL": internal, "SASL_PLAINTEXT": sasl}
        per_broker[bid] = {"listeners": f"PLAINTEXT://127.0.0.1:{{port}},INTERNAL://127.0.0.1:{internal},"
                                        f"SASL_PLAINTEXT://127.0.0.1:{sasl}",
                           "ssl.keystore.location": str(cert.keystore)}
    common = {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "ssl.truststore.location": str(ca.path),
        "ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=.*$/$1/,DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:broker1;User:broker2;User:admin",
        "offsets.topic.replication.factor": "2", "offsets.topic.num.partitions": "2",
        "group.initial.rebalance.delay.ms": "0",
    }
    c = module_cluster(2, common, per_broker, directory=root / "cluster", store=False)
    return Env(c.cluster, c.zookeeper, ports, ca, issue(ca, root / "ca", "writer", "writer", ou="apps"))


def acls(cli, env, *args):
    rc, out, err = cli("acls", *args, "--zookeeper", env.zk)
    assert rc == 0, err
    return out


def new_topic(env) -> str:
    name = f"acl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(env.conf("admin"))  # kept alive until the result is in
    admin.create_topics([NewTopic(name, 2, 2)])[name].result(30)
    return name


def produce(env, user, topic, n=5) -> list:
    errors: list = []
    p = Producer({**env.conf(user), "acks": "all", "message.timeout.ms": 10000})
    for i in range(n):
        p.produce(topic, f"{user}-{i}".encode(), on_delivery=lambda err, _m: errors.append(err))
    if p.flush(20):
        p.purge()  # nothing left pending when the producer goes away
        p.flush(5)
    return errors


def visible_topics(env, user, broker=None) -> set[str]:
    return set(AdminClient(env.conf(user, broker)).list_topics(timeout=10).topics)


def test_super_user_and_no_acl_means_no_access(env):
    topic = new_topic(env)
    assert produce(env, "admin", topic) == [None] * 5
    errors = produce(env, "alice", topic)
    assert errors
    assert all(e is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in errors)
    assert topic not in visible_topics(env, "alice")
    assert topic in visible_topics(env, "admin")


def test_write_read_and_group_read(env, cli):
    topic, group = new_topic(env), f"g-{uuid.uuid4().hex[:6]}"
    acls(cli, env, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", group + "-a")
    acls(cli, env, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", topic)
    wait_for(lambda: topic in visible_topics(env, "alice"), 10, what="alice's Write (it implies Describe)")
    assert produce(env, "alice", topic) == [None] * 5
    # Write implies Describe: alice sees the topic, bob still does not
    assert topic in visible_topics(env, "alice")
    assert topic not in visible_topics(env, "bob")
    # bob: Read on the topic but not on the group: the group refuses him
    acls(cli, env, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", topic)
    errs = _consume_errors(env, "bob", topic, group)
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in errs
    acls(cli, env, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--group", group)
    got = _consume(env, "bob", topic, group, 5)
    assert sorted(got) == [f"alice-{i}".encode() for i in range(5)]
    # alice has no Read on the topic (only on her group): fetching is refused
    assert KafkaError.TOPIC_AUTHORIZATION_FAILED in _consume_errors(env, "alice", topic, group + "-a")


def _consumer(env, user, topic, group):
    c = Consumer({**env.conf(user), "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    return c


def _consume(env, user, topic, group, n):
    c, got = _consumer(env, user, topic, group), []
    deadline = time.monotonic() + 30
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return got


def _consume_errors(env, user, topic, group, seconds=10.0):
    c, errs = _consumer(env, user, topic, group), set()
    deadline = time.monotonic() + seconds
    try:
        while not errs and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is not None:
                errs.add(m.error().code())
    finally:
        c.close()
    return errs


def test_prefixed_and_deny(env, cli):
    prefix = f"pay{uuid.uuid4().hex[:4]}-"
    eu, us = f"{prefix}eu", f"{prefix}us"
    admin = AdminClient(env.conf("admin"))
    for f in admin.create_topics([NewTopic(eu, 1, 2), NewTopic(us, 1, 2)]).values():
        f.result(30)
    acls(cli, env, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", prefix,
         "--resource-pattern-type", "prefixed")
    acls(cli, env, "--add", "--deny-principal", "User:alice", "--operation", "Write", "--topic", us)
    wait_for(lambda: eu in visible_topics(env, "alice"), 10, what="the prefixed ACL")
    assert produce(env, "alice", eu, 2) == [None] * 2
    errors = produce(env, "alice", us, 2)
    assert all(e is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in errors)
    out = acls(cli, env, "--list", "--topic", prefix, "--resource-pattern-type", "prefixed")
    assert f"name={prefix}, patternType=PREFIXED" in out
    assert "principal=User:alice" in out


def test_a_change_is_in_force_on_every_broker_within_a_second(env, cli):
    topic = new_topic(env)
    assert all(topic not in visible_topics(env, "bob", b) for b in env.ports)
    acls(cli, env, "--add", "--allow-principal", "User:bob", "--operation", "Describe", "--topic", topic)
    added = time.monotonic()
    for b in env.ports:
        conn = BrokerConnection("127.0.0.1", env.ports[b]["SASL_PLAINTEXT"], timeout=5,
                                security=ClientSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", None, "PLAIN", "bob",
                                                        "bob-secret"))
        with conn:
            wait_for(lambda c=conn: any(t.name == topic and t.error_code == 0 for t in
                                        c.send(MetadataRequest[1](topics=[topic]), 1).topics), 5, 0.02,
                     what=f"broker {b} to apply the ACL")
    assert time.monotonic() - added < 1.0
    acls(cli, env, "--remove", "--topic", topic, "--allow-principal", "User:bob", "--operation", "Describe")
    wait_for(lambda: all(topic not in visible_topics(env, "bob", b) for b in env.ports), 5, what="the removal")


def _writer_security(env) -> ClientSecurity:
    import ssl

    ctx = ssl.create_default_context(cafile=str(env.ca.path))
    ctx.load_cert_chain(str(env.client_cert.keystore))
    return ClientSecurity("INTERNAL", "SSL", ctx)


def test_controller_requests_need_cluster_action(env):
    """A client on the inter-broker listener (a valid certificate, User:writer) sending the
    controller's requests with the current controller epoch is refused, nothing changes."""
    topic = new_topic(env)
    store = ZkStore(env.zk).start()
    try:
        controller_id, (epoch, _) = store.get_controller_id(), store.get_controller_epoch()
        tp = TopicPartition(topic, 0)
        before = store.get_partition_states([tp])[0][tp]
        lai = before.leader_and_isr
        other = next(b for b in env.ports if b != lai.leader)
        requests = [
            LeaderAndIsrRequestData(controller_id, epoch, -1, [PartitionLeaderState(
                tp, epoch, other, lai.leader_epoch + 1, (other,), 0, (1, 2))], []),
            StopReplicaRequestData(controller_id, epoch, -1, [StopReplicaPartition(tp, lai.leader_epoch + 1, True)]),
        ]
        for request in requests:
            obj, version = wire.request_to_wire(request)
            with BrokerConnection("127.0.0.1", env.ports[lai.leader]["INTERNAL"], timeout=10,
                                  security=_writer_security(env)) as conn:
                code = wire.response_from_wire(conn.send(obj, version)).error_code
            assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        with BrokerConnection("127.0.0.1", env.ports[controller_id]["INTERNAL"], timeout=10,
                              security=_writer_security(env)) as conn:
            broker = store.get_broker(lai.leader)
            resp = conn.send(ControlledShutdownRequest(broker_id=lai.leader, broker_epoch=broker.epoch), 3)
        assert resp.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        after = store.get_partition_states([tp])[0][tp]
    finally:
        store.stop()
    assert after.leader_and_isr == lai
    assert produce(env, "admin", topic) == [None] * 5  # the leader still leads and takes writes


def test_acl_apis_with_confluent_kafka(env):
    """CreateAcls / DescribeAcls / DeleteAcls from an unmodified AdminClient; a non-super
    user without Alter on the cluster is refused."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    topic = new_topic(env)
    binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    admin = AdminClient(env.conf("admin"))
    assert admin.create_acls([binding])[binding].result(20) is None
    flt = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                           AclPermissionType.ANY)
    assert admin.describe_acls(flt).result(20) == [binding]
    wait_for(lambda: topic in visible_topics(env, "bob"), 5, what="bob sees the topic (Read implies Describe)")
    alice = AdminClient(env.conf("alice"))
    with pytest.raises(KafkaException) as refused:
        alice.create_acls([binding])[binding].result(20)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert admin.delete_acls([flt])[flt].result(20) == [binding]
    assert admin.describe_acls(flt).result(20) == []


def test_create_and_delete_topics_need_create_and_delete(env, cli):
    mine = f"bob{uuid.uuid4().hex[:4]}-t"
    bob = AdminClient(env.conf("bob"))
    with pytest.raises(KafkaException) as refused:
        bob.create_topics([NewTopic(mine, 1, 1)])[mine].result(20)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    acls(cli, env, "--add", "--allow-principal", "User:bob", "--operation", "Create", "--operation", "Delete",
         "--topic", mine[:7], "--resource-pattern-type", "prefixed")
    wait_for(lambda: _created(bob, mine), 10, what="bob may create his topic")
    other = new_topic(env)
    with pytest.raises(KafkaException) as refused:
        bob.delete_topics([other])[other].result(20)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    bob.delete_topics([mine])[mine].result(30)


def _created(admin, name) -> bool:
    try:
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(20)
        return True
    except KafkaException as e:
        if e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return True
        return False


def test_authorized_operations_are_reported(env, cli):
    """Metadata v8+ (describe_topics) and DescribeCluster fill the authorised-operations
    fields from the ACLs, as Kafka (a super user gets every operation)."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AclOperation

    topic = new_topic(env)
    acls(cli, env, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", topic)
    bob = AdminClient(env.conf("bob"))
    wait_for(lambda: topic in visible_topics(env, "bob"), 10, what="bob's Read")
    described = bob.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(20)
    assert set(described.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE}
    cluster = bob.describe_cluster(include_authorized_operations=True).result(20)
    assert not cluster.authorized_operations
    admin = AdminClient(env.conf("admin"))
    cluster = admin.describe_cluster(include_authorized_operations=True).result(20)
    assert AclOperation.CLUSTER_ACTION in cluster.authorized_operations
    assert AclOperation.ALTER in cluster.authorized_operations


def test_configs_groups_and_idempotent_producers(env, cli):
    from confluent_kafka.admin import ConfigResource

    topic = new_topic(env)
    bob = AdminClient(env.conf("bob"))
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    with pytest.raises(KafkaException) as refused:
        bob.describe_configs([res])[res].result(20)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    acls(cli, env, "--add", "--allow-principal", "User:bob", "--operation", "DescribeConfigs", "--topic", topic)
    wait_for(lambda: _describes(bob, res), 10, what="bob's DescribeConfigs")
    # an idempotent producer needs IdempotentWrite on the cluster or Write on some topic
    acls(cli, env, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", topic)
    wait_for(lambda: topic in visible_topics(env, "alice"), 10, what="alice's Write")

    def delivered() -> bool:
        """The ACL reaches each broker by a ZooKeeper notification: the broker answering
        InitProducerId may hear of it later than the one that answered Metadata."""
        errors: list = []
        p = Producer({**env.conf("alice"), "enable.idempotence": True, "message.timeout.ms": 10000})
        p.produce(topic, b"once", on_delivery=lambda err, _m: errors.append(err))
        p.flush(20)
        return errors == [None]

    wait_for(delivered, 60, interval=1, what="alice's idempotent produce")
    # groups: bob may not delete a group he cannot Delete, nor list it
    group = f"g-{uuid.uuid4().hex[:6]}"
    acls(cli, env, "--add", "--allow-principal", "User:admin", "--operation", "Read", "--group", group)
    assert group not in {g.group_id for g in bob.list_consumer_groups().result(20).valid}
    outcome = bob.delete_consumer_groups([group])[group]
    with pytest.raises(KafkaException) as refused:
        outcome.result(20)
    assert refused.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def _describes(admin, res) -> bool:
    try:
        return bool(admin.describe_configs([res])[res].result(20))
    except KafkaException:
        return False


def test_transactions_need_write_on_the_transactional_id(env, cli):
    topic = new_topic(env)
    txn_id = f"tx-{uuid.uuid4().hex[:6]}"
    acls(cli, env, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", topic)
    wait_for(lambda: topic in visible_topics(env, "alice"), 10, what="alice's Write")
    refused = Producer({**env.conf("alice"), "transactional.id": txn_id})
    with pytest.raises(KafkaException) as e:
        refused.init_transactions(20)
    assert e.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    acls(cli, env, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--transactional-id", txn_id)
    p = Producer({**env.conf("alice"), "transactional.id": txn_id})
    wait_for(lambda: _init_transactions(p), 40, what="alice's transactional id")
    wait_for(lambda: _commit_one(p, topic), 40, what="a committed transaction (every broker has the ACL)")


def _commit_one(p, topic) -> bool:
    """One transaction; an abortable refusal (a broker without the ACL yet) is aborted."""
    p.begin_transaction()
    p.produce(topic, b"in-a-transaction")
    try:
        p.commit_transaction(20)
        return True
    except KafkaException as e:
        if not e.args[0].txn_requires_abort():
            raise
        p.abort_transaction(20)
        return False


def _init_transactions(p) -> bool:
    try:
        p.init_transactions(5)
        return True
    except KafkaException:
        return False


def test_client_quotas_and_replica_log_dirs_need_cluster_acls(env):
    """DescribeClientQuotas needs DescribeConfigs on the cluster, AlterClientQuotas
    AlterConfigs, AlterReplicaLogDirs Alter (Kafka's KafkaApis): bob, with no ACL, is
    refused all three and nothing is written; admin (a super user) is answered."""
    from kafka.protocol.admin import (
        AlterClientQuotasRequest,
        AlterReplicaLogDirsRequest,
        DescribeClientQuotasRequest,
    )

    topic = new_topic(env)
    user = f"quota-{uuid.uuid4().hex[:6]}"
    describe = DescribeClientQuotasRequest(components=[
        DescribeClientQuotasRequest.ComponentData(entity_type="user", match_type=0, match=user)], strict=False)
    alter = AlterClientQuotasRequest(entries=[AlterClientQuotasRequest.EntryData(
        entity=[AlterClientQuotasRequest.EntryData.EntityData(entity_type="user", entity_name=user)],
        ops=[AlterClientQuotasRequest.EntryData.OpData(key="producer_byte_rate", value=1024.0, remove=False)])],
        validate_only=False)
    move = AlterReplicaLogDirsRequest(dirs=[AlterReplicaLogDirsRequest.AlterReplicaLogDir(
        path="/nonexistent-dir", topics=[AlterReplicaLogDirsRequest.AlterReplicaLogDir.AlterReplicaLogDirTopic(
            name=topic, partitions=[0, 1])])])

    def connection(user_name: str) -> BrokerConnection:
        return BrokerConnection("127.0.0.1", env.ports[1]["SASL_PLAINTEXT"], timeout=10,
                                security=ClientSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", None, "PLAIN", user_name,
                                                        USERS[user_name]))

    with connection("bob") as conn:
        assert conn.send(describe, 1).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert [e.error_code for e in conn.send(alter, 1).entries] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
        moved = conn.send(move, 1)
        assert [(r.topic_name, p.partition_index, p.error_code) for r in moved.results for p in r.partitions] == [
            (topic, 0, ErrorCode.CLUSTER_AUTHORIZATION_FAILED), (topic, 1, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)]
    with connection("admin") as conn:
        found = conn.send(describe, 1)
        assert found.error_code == ErrorCode.NONE
        assert found.entries == []  # bob's alteration wrote nothing
        assert [e.error_code for e in conn.send(alter, 1).entries] == [ErrorCode.NONE]
        wait_for(lambda: len(conn.send(describe, 1).entries or []) == 1, 10, what="the admin's quota")
        moved = conn.send(move, 1)  # allowed, refused by the broker for its own reason (no such dir)
        assert {p.error_code for r in moved.results for p in r.partitions} == {ErrorCode.LOG_DIR_NOT_FOUND}
