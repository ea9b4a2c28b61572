"""The Schema Registry of a secure cluster (`praha cluster up --secure`): HTTPS with the
cluster's CA, HTTP basic auth against the cluster's SCRAM users; any authenticated user
reads, registering needs a super user or Alter on the cluster; a write to the broker that
is not primary is forwarded over HTTPS with the caller's credentials."""
from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from praha.cluster.local import LocalCluster
from praha.cluster.secure import SecureSetup
from praha.protocol.scram import ScramCredential, ScramMechanism
from praha.security.credentials import alter_credentials
from praha.testing.zookeeper import delete_chroot, unique_chroot
from praha.zk.store import ZkStore

# a secure cluster of its own (certificates, SCRAM): `make test-registry` runs it
pytestmark = [pytest.mark.integration, pytest.mark.slow]
SCHEMA = Schema(json.dumps({"type": "record", "name": "S", "fields": [{"name": "a", "type": "int"}]}), "AVRO")


def test_https_basic_auth_and_alter_on_the_cluster(zookeeper, tmp_path, cli):
    connect = unique_chroot(zookeeper.connect_string)
    root = tmp_path / "secure"
    try:
        rc, out, err = cli("cluster", "up", "--secure", "--brokers", "2", "--dir", root, "--zookeeper", connect)
        assert rc == 0, err
        state = LocalCluster(root).load()
        url = state.brokers[1].schema_registry
        assert url.startswith("https://")
        assert f"schema registry:   {url}" in out
        setup = SecureSetup.load(root / "security")
        ca = str(setup.ca)
        cluster = LocalCluster(root)
        with ZkStore(connect, auth=cluster.zk_auth(state)).start() as store:  # the tree is the cluster's own
            alter_credentials(store, "reader", {ScramMechanism.SHA_512: ScramCredential.from_password(
                ScramMechanism.SHA_512, "reader-secret", 8192)}, [])

        anonymous = SchemaRegistryClient({"url": url, "ssl.ca.location": ca})
        with pytest.raises(SchemaRegistryError) as e:
            anonymous.get_subjects()
        assert e.value.http_status_code == 401
        wrong = SchemaRegistryClient({"url": url, "ssl.ca.location": ca, "basic.auth.user.info": "admin:wrong"})
        with pytest.raises(SchemaRegistryError) as e:
            wrong.get_subjects()
        assert e.value.http_status_code == 401

        admin = SchemaRegistryClient({"url": url, "ssl.ca.location": ca,
                                      "basic.auth.user.info": f"admin:{setup.admin_password}"})
        sid = admin.register_schema("secure-s", SCHEMA)
        other = SchemaRegistryClient({"url": state.brokers[2].schema_registry, "ssl.ca.location": ca,
                                      "basic.auth.user.info": f"admin:{setup.admin_password}"})
        assert other.register_schema("secure-s", SCHEMA) == sid  # one of the two brokers forwarded
        assert other.get_version("secure-s", 1).schema_id == sid
        reader = SchemaRegistryClient({"url": url, "ssl.ca.location": ca,
                                       "basic.auth.user.info": "reader:reader-secret"})
        assert reader.get_subjects() == ["secure-s"]
        assert reader.get_schema(sid).schema_str == SCHEMA.schema_str
        with pytest.raises(SchemaRegistryError) as e:
            reader.register_schema("secure-t", SCHEMA)
        assert e.value.http_status_code == 403
        assert admin.get_subjects() == ["secure-s"]  # nothing stored

        rc, _, err = cli("acls", "--add", "--allow-principal", "User:reader", "--operation", "Alter", "--cluster",
                         "--dir", root)
        assert rc == 0, err
        from praha.testing.cluster import wait_for
        wait_for(lambda: _registers(reader), timeout=30, what="the ACL to reach the broker")
        rc, out, err = cli("schemas", "list", "--dir", root)  # the command uses the admin and the CA itself
        assert rc == 0, err
        assert "secure-t" in out.split(), err
    finally:
        cluster = LocalCluster(root)
        auth = cluster.zk_auth(cluster.load()) if cluster.exists() else None
        cluster.down(timeout=15)
        delete_chroot(connect, auth=auth)  # its znodes have ACLs: removed as their owner


def _registers(client: SchemaRegistryClient) -> bool:
    try:
        client.register_schema("secure-t", SCHEMA)
        return True
    except SchemaRegistryError:
        return False
