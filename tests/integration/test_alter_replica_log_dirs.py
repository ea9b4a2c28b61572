"""AlterReplicaLogDirs moves replicas between the log dirs of a broker while a producer
writes (issue 15 §3), through kafka-python's `KafkaAdminClient.alter_replica_log_dirs`:
the leader's replica and a follower's replica each go to the broker's other dir (a future
log copied, then swapped in), nothing acknowledged is lost, DescribeLogDirs shows the new
dir, and the refusals are Kafka's (unknown dir, partition not hosted)."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka.errors import LogDirNotFoundError, NoError, ReplicaNotAvailableError

from praha.admin.records import describe_log_dirs
from praha.admin.status import cluster_status
from praha.cli.kafka_tools import tool_for
from praha.cli.kafka_tools.base import run_tool
from praha.testing.clients import read_back
from praha.testing.cluster import bootstrap, running_cluster, wait_for
from praha.zk.admin_zk import create_topic, reassigning_partitions
from praha.zk.store import ZkStore

pytestmark = pytest.mark.integration

TOPIC = "moving"
BROKER = 1


def _dirs_of(root: Path) -> list[str]:
    return [str(root / "cluster" / f"broker-{BROKER}" / name) for name in ("data-a", "data-b")]


def _where(bs: str, partition: int, topic: str = TOPIC) -> tuple[str | None, bool]:
    """(dir holding broker 1's replica of the partition, whether a future replica exists)."""
    (b,) = describe_log_dirs(bs, [BROKER], {topic})
    current, future = None, False
    for d in b.dirs:
        for p in d.partitions:
            if p.partition == f"{topic}-{partition}":
                if p.is_future:
                    future = True
                else:
                    current = d.path
    return current, future


def test_replicas_move_between_dirs_while_a_producer_writes(zk_connect, tmp_path, cli, capsys):
    store = ZkStore(zk_connect, session_timeout_ms=10000).start()
    dirs = _dirs_of(tmp_path)
    try:
        store.ensure_persistent_paths()
        with running_cluster(tmp_path / "cluster", zk_connect, 3,
                             per_broker={BROKER: {"log.dirs": ",".join(dirs)}}) as cluster:
            bs = bootstrap(cluster)
            # partition 0 led by broker 1, partition 1 followed by it
            create_topic(store, TOPIC, None, None, {"min.insync.replicas": "2"},
                         assignment={0: [1, 2, 3], 1: [2, 1, 3]})
            wait_for(lambda: all(len(p["isr"]) == 3 for p in
                                 cluster_status(zk_connect, store=store)["topics"][TOPIC]["partitions"]), 30,
                     what="full ISRs")
            acked: dict[int, list[bytes]] = {0: [], 1: []}
            failed: list[str] = []
            stop = threading.Event()

            def write() -> None:
                p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5, "enable.idempotence": True})
                i = 0
                while not stop.is_set():
                    part = i % 2
                    p.produce(TOPIC, f"m{i:08d}".encode() + b"y" * 500, partition=part,
                              on_delivery=lambda err, msg: failed.append(str(err)) if err
                              else acked[msg.partition()].append(msg.value()))
                    i += 1
                    p.poll(0)
                    if i % 1000 == 0:
                        p.poll(0.01)
                p.flush(60)

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            try:
                wait_for(lambda: len(acked[0]) + len(acked[1]) >= 8000, 90, what="some megabytes written")
                before = {p: _where(bs, p)[0] for p in (0, 1)}
                targets = {p: next(d for d in dirs if d != before[p]) for p in (0, 1)}
                admin = KafkaAdminClient(bootstrap_servers=bs)
                try:
                    answers = admin.alter_replica_log_dirs({(TOPIC, p, BROKER): targets[p] for p in (0, 1)})
                    assert set(answers.values()) == {NoError}, answers
                    refused = admin.alter_replica_log_dirs({
                        (TOPIC, 0, BROKER): str(tmp_path / "not-a-log-dir"),
                        ("nowhere", 0, BROKER): dirs[0],
                    })
                    assert refused[next(k for k in refused if k.topic == TOPIC)] is LogDirNotFoundError
                    assert refused[next(k for k in refused if k.topic == "nowhere")] is ReplicaNotAvailableError
                finally:
                    admin.close()
                wait_for(lambda: all(_where(bs, p) == (targets[p], False) for p in (0, 1)), 90,
                         what="both replicas in their new dirs")
                n = len(acked[0]) + len(acked[1])
                wait_for(lambda: len(acked[0]) + len(acked[1]) >= n + 1000, 60, what="writes after the moves")
            finally:
                stop.set()
                writer.join(90)
            assert not failed, failed[:5]
            for p in (0, 1):
                # the old log is renamed away at once (and removed after file.delete.delay.ms)
                assert not (Path(before[p]) / f"{TOPIC}-{p}").exists()
                assert read_back(bs, TOPIC, p, set(acked[p])) >= set(acked[p]), (
                    f"partition {p} lost acknowledged records"
                )
            wait_for(lambda: all(BROKER in part["isr"] for part in
                                 cluster_status(zk_connect, store=store)["topics"][TOPIC]["partitions"]), 30,
                     what="broker 1 in both ISRs after the moves")

            # `praha reassign execute` with log_dirs: a new replica on broker 1 goes to the dir named,
            # the one broker 1 would not have chosen itself (it holds more logs)
            def plan_placing(topic: str) -> str:
                """A topic on brokers 2 and 3, and a plan adding a replica on broker 1 in the dir
                broker 1 would not choose itself (it holds more logs); that dir."""
                create_topic(store, topic, None, None, assignment={0: [2, 3]})
                wait_for(lambda: len(cluster_status(zk_connect, store=store)["topics"][topic]["partitions"][0]["isr"])
                         == 2, 30, what=f"{topic} online")
                (b1,) = describe_log_dirs(bs, [BROKER])
                counts = {d.path: len(d.partitions) for d in b1.dirs}
                target = max(dirs, key=lambda d: (counts.get(d, 0), dirs.index(d)))
                plan_file.write_text(json.dumps({"version": 1, "partitions": [
                    {"topic": topic, "partition": 0, "replicas": [2, 3, BROKER], "log_dirs": ["any", "any", target]}]}))
                return target

            plan_file = tmp_path / "placed.json"
            target = plan_placing("placed")
            rc, out, err = cli("reassign", "execute", "--zookeeper", zk_connect, "--reassignment-json-file", plan_file)
            assert rc == 0, err
            assert f"Successfully started log directory move for: placed-0-{BROKER}" in out
            wait_for(lambda: _where(bs, 0, "placed") == (target, False), 30, what="the new replica in the dir named")
            # Kafka's tool refuses while any reassignment is in progress: the first one must end
            # (its new replica in the ISR, the znode removed), which can lag the dir placement
            wait_for(lambda: not reassigning_partitions(store), 60, what="the first reassignment to complete")

            # the same through Kafka's tool by name, over the admin API (AlterPartitionReassignments,
            # then AlterReplicaLogDirs to broker 1 once its new replica exists), with the dir throttle
            target2 = plan_placing("placed2")
            capsys.readouterr()
            rc = run_tool(tool_for("kafka-reassign-partitions"), [
                "--bootstrap-server", bs, "--execute", "--reassignment-json-file", str(plan_file),
                "--replica-alter-log-dirs-throttle", "50000000", "--timeout", "30000"])
            out, err = capsys.readouterr()
            assert rc == 0, out + err
            assert "The replica-alter-dir throttle limit was set to 50000000 B/s" in out
            assert f"Successfully started log directory move for: placed2-0-{BROKER}" in out
            wait_for(lambda: _where(bs, 0, "placed2") == (target2, False), 30, what="placed2's replica in its dir")
    finally:
        store.stop()

