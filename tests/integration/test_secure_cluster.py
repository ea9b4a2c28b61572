"""`praha cluster up --secure`: the printed settings work unmodified in confluent-kafka,
kafka-python and kcat (SASL_SSL, SCRAM-SHA-512, the admin user); without credentials, or
over plain TCP, nothing is served."""
from __future__ import annotations

import json
import shlex
import subprocess

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer
from kafka.protocol.metadata import MetadataRequest

from praha.cluster.local import LocalCluster
from praha.protocol.client import BrokerConnection
from praha.protocol.errors import BrokerConnectionError
from praha.testing.zookeeper import delete_chroot

pytestmark = pytest.mark.integration


def test_secure_cluster_settings_work_in_every_client(zk_connect, tmp_path, cli):
    connect = zk_connect
    root = tmp_path / "secure"
    try:
        rc, out, err = cli("cluster", "up", "--secure", "--brokers", "2", "--dir", root, "--zookeeper", connect,
                           "--broker-config", "offsets.topic.num.partitions=2", "--broker-config",
                           "group.initial.rebalance.delay.ms=0")
        assert rc == 0, err
        lines = out.splitlines()
        confluent = json.loads(lines[lines.index("confluent-kafka:") + 1])
        kafka_python = json.loads(lines[lines.index("kafka-python:") + 1])
        kcat = shlex.split(lines[lines.index("kcat:") + 1].strip())
        assert confluent["security.protocol"] == "SASL_SSL"
        assert confluent["sasl.mechanism"] == "SCRAM-SHA-512"

        p = Producer({**confluent, "acks": "all"})
        for i in range(5):
            p.produce("secured", f"c{i}".encode())
        assert p.flush(30) == 0
        producer = KafkaProducer(**kafka_python)
        producer.send("secured", b"k0").get(30)
        producer.close()
        base = kcat[:-1]  # without -L
        produced = subprocess.run(base + ["-P", "-t", "secured"], input="kc0\n", capture_output=True, text=True,
                                  timeout=60)
        assert produced.returncode == 0, produced.stderr
        consumed = subprocess.run(base + ["-C", "-t", "secured", "-o", "beginning", "-c", "7", "-e", "-q"],
                                  capture_output=True, text=True, timeout=60)
        assert sorted(consumed.stdout.split()) == sorted([f"c{i}" for i in range(5)] + ["k0", "kc0"]), consumed.stderr
        consumer = KafkaConsumer("secured", group_id="kp", auto_offset_reset="earliest", consumer_timeout_ms=15000,
                                 **kafka_python)
        assert len([m for _, m in zip(range(7), consumer)]) == 7
        consumer.close()
        c = Consumer({**confluent, "group.id": "ck", "auto.offset.reset": "earliest"})
        c.subscribe(["secured"])
        got = []
        for _ in range(60):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
            if len(got) == 7:
                break
        c.close()
        assert len(got) == 7

        # the cluster's own tools work on it: status, a graceful restart of a broker
        for args in (("cluster", "status"), ("broker", "stop", "2"), ("broker", "start", "2")):
            rc, out, err = cli(*args, "--dir", root)
            assert rc == 0, err
        port = LocalCluster(root).load().brokers[1].port
        with pytest.raises(BrokerConnectionError):  # plain TCP on the TLS port: no answer
            BrokerConnection("127.0.0.1", port, timeout=3).send(MetadataRequest[0](topics=[]), 0)
    finally:
        cluster = LocalCluster(root)
        auth = cluster.zk_auth(cluster.load()) if cluster.exists() else None
        cluster.down(timeout=30)
        delete_chroot(connect, auth=auth)  # its znodes have ACLs: removed as their owner
