"""Brokers on hosts of their own: 3 ZooKeeper servers and 3 brokers, each in a Linux network
namespace with its own 198.18.<k>.<n> address on a bridge praha makes; clients stay in the
root namespace. One module-scoped cluster; everything is stopped by PID and every
namespace, veth and bridge removed even when a test fails.

Must show (issue 20): one broker's namespace cut off entirely (nftables drops every packet
on its link), the cluster serves on (elections off it, ISR shrinks, acks=all produce and
consume go on), and after healing the broker rejoins the ISR with every record.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from praha.chaos.invariants import read_segment_records
from praha.cluster import netns
from praha.cluster.local import LocalCluster
from praha.common import TopicPartition
from praha.testing.cluster import wait_for
from praha.zk.server import ZooKeeperEnsemble
from praha.zk.store import ZkStore

REASON = netns.unavailable_reason() or ("" if shutil.which("nft") else "nftables' `nft` is not installed "
                                         "(`make net-tools` installs it)")
pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(REASON), reason=REASON or "-")]

BROKER = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.backoff.ms": "200",
    "isr.change.notification.interval.ms": "300",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
}


@dataclass
class Hosts:
    layout: netns.NetnsLayout
    cluster: LocalCluster
    ensemble: ZooKeeperEnsemble
    store: ZkStore

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.cluster.load().brokers.values())


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    root = tmp_path_factory.mktemp("netns")
    layout = netns.create(["zk1", "zk2", "zk3", "b1", "b2", "b3"], root / "netns.json")
    cluster = LocalCluster(root / "cluster")
    ensemble = None
    store = None
    try:
        placement = {i: (layout.node(f"zk{i}").netns, layout.node(f"zk{i}").address) for i in (1, 2, 3)}
        ensemble = ZooKeeperEnsemble(3, root / "zookeeper", placement=placement).start(timeout=120)
        cluster.up(3, zookeeper=ensemble.connect_string, overrides=BROKER, netns_layout=layout, timeout=120)
        store = ZkStore(ensemble.connect_string, session_timeout_ms=10000).start()
        yield Hosts(layout, cluster, ensemble, store)
    finally:
        if store is not None:
            with suppress(Exception):
                store.stop()
        with suppress(Exception):
            cluster.down(timeout=30)
        if ensemble is not None:
            ensemble.stop()
        netns.teardown(layout)
        assert not ({n.netns for n in layout.nodes.values()} & netns.existing_names()[0])


def _create_topic(hosts: Hosts, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": hosts.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3, config={"min.insync.replicas": "2"})])[name].result(30)
    wait_for(lambda: all(p.leader >= 0 for p in admin.list_topics(name, timeout=5).topics[name].partitions.values()),
             60, what=f"leaders for {name}")


def _produce(bootstrap: str, topic: str, values: list[str], partitions: int) -> dict[str, tuple[int, int]]:
    """acks=all, idempotent; returns value → (partition, offset) of every acknowledged one."""
    from confluent_kafka import Producer

    acked: dict[str, tuple[int, int]] = {}

    def done(err, msg):
        if err is None:
            acked[msg.value().decode()] = (msg.partition(), msg.offset())

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 60000, "topic.metadata.refresh.interval.ms": 1000})
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), partition=i % partitions, on_delivery=done)
    assert p.flush(90) == 0
    return acked


def _read_all(bootstrap: str, topic: str, partitions: int, expect: int) -> dict[str, tuple[int, int]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    got: dict[str, tuple[int, int]] = {}
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = time.monotonic() + 60
        while len(got) < expect and time.monotonic() < deadline:
            for m in c.consume(500, 1.0):
                if not m.error():
                    got[m.value().decode()] = (m.partition(), m.offset())
    finally:
        c.close()
    return got


def _states(hosts: Hosts, topic: str, parts: int) -> list:
    """Leader and ISR of every partition (all of them, or an AssertionError to retry on)."""
    found, _ = hosts.store.get_partition_states([TopicPartition(topic, p) for p in range(parts)])
    assert len(found) == parts
    return [found[TopicPartition(topic, p)].leader_and_isr for p in range(parts)]


def test_every_node_is_on_a_host_of_its_own(hosts):
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": hosts.bootstrap}).list_topics(timeout=10)
    assert {b.id: (b.host, b.port) for b in md.brokers.values()} == {
        i: (hosts.layout.node(f"b{i}").address, 9092) for i in (1, 2, 3)}
    assert hosts.ensemble.connect_string == ",".join(f"{hosts.layout.node(f'zk{i}').address}:2181" for i in (1, 2, 3))
    root_ns = os.readlink("/proc/self/ns/net")
    for b in hosts.cluster.load().brokers.values():
        assert os.readlink(f"/proc/{b.pid}/ns/net") != root_ns
        listening = netns.run_in(b.netns, ["ss", "-ltnH"]).stdout
        assert f"{b.host}:9092 " in listening and "127.0.0.1:9092" not in listening and "0.0.0.0:9092" not in listening
    for s in hosts.ensemble.servers:
        assert os.readlink(f"/proc/{s.pid}/ns/net") != root_ns


def test_a_broker_cut_off_entirely_the_cluster_serves_on_and_it_catches_up(hosts):
    topic, parts = "cut-off", 3
    _create_topic(hosts, topic, parts)
    before = _produce(hosts.bootstrap, topic, [f"a-{i}" for i in range(150)], parts)
    assert len(before) == 150
    controller = hosts.store.get_controller_id()
    victim = next(b for b in (3, 2, 1) if b != controller)
    node = hosts.layout.node(f"b{victim}")
    netns.apply_drops(node, [netns.Drop(()), netns.Drop((), inbound=False)])
    try:
        wait_for(lambda: victim not in hosts.store.get_live_brokers()[0], 60, what="the cut broker's session expiry")

        def isr_without_victim() -> bool:
            states = _states(hosts, topic, parts)
            return all(s.leader != victim and victim not in s.isr for s in states)

        wait_for(isr_without_victim, 60, what="leaders and ISR off the cut broker")
        during = _produce(hosts.bootstrap, topic, [f"b-{i}" for i in range(150)], parts)
        assert len(during) == 150  # the cluster serves on with two of three
        seen = _read_all(hosts.bootstrap, topic, parts, 300)
        assert {**before, **during} == seen
    finally:
        netns.heal(node)

    def rejoined() -> bool:
        if victim not in hosts.store.get_live_brokers()[0]:
            return False
        return all(victim in s.isr for s in _states(hosts, topic, parts))

    wait_for(rejoined, 120, what="the broker back in every ISR")
    # caught up: its own segment files hold every record at the offset consumers read it at
    data = Path(hosts.cluster.load().brokers[victim].dir) / "data"
    on_disk = {}
    for p in range(parts):
        records, _ = read_segment_records(data / f"{topic}-{p}")
        on_disk.update({v: (p, off) for off, v in records.items()})
    assert on_disk == {**before, **during}


def test_up_crashed_half_way_then_down_removes_every_namespace(tmp_path):
    """`cluster up --netns` SIGKILLed once its broker was launched: `cluster down` still stops
    the processes and removes the namespaces, veths and bridge it recorded."""
    d = tmp_path / "crashed"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    up = subprocess.Popen([sys.executable, "-m", "praha", "cluster", "up", "--netns", "--brokers", "1", "--dir", str(d)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    layout = None
    try:
        wait_for(lambda: (d / "broker-1" / "broker.log").exists(), 120, what="the broker launched")
        layout = netns.NetnsLayout.load(d / "netns.json")
        assert layout is not None
    finally:
        up.send_signal(signal.SIGKILL)
        up.wait(10)
        down = subprocess.run([sys.executable, "-m", "praha", "cluster", "down", "--dir", str(d)],
                              capture_output=True, text=True, env=env, timeout=120)
    assert down.returncode == 0, down.stderr
    ns, links = netns.existing_names()
    assert not ({n.netns for n in layout.nodes.values()} & ns)
    assert not ({n.link for n in layout.nodes.values()} | {layout.bridge}) & links
    assert not (d / "netns.json").exists()


def test_leftovers_of_a_dead_creator_are_found_by_prefix_and_removed(tmp_path):
    script = (f"from pathlib import Path; from praha.cluster import netns; "
              f"print(netns.create(['b1'], Path({str(tmp_path / 'n.json')!r})).index)")
    made = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    index = int(made.stdout.strip())
    assert f"praha-{index}-b1" in netns.existing_names()[0]
    assert index in netns.cleanup_leftovers()
    ns, links = netns.existing_names()
    assert f"praha-{index}-b1" not in ns and f"prh{index}-br" not in links
