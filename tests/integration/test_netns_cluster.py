"""Brokers on hosts of their own: 3 ZooKeeper servers and 3 brokers, each in a Linux network
namespace with its own 198.18.<k>.<n> address on a bridge praha makes; clients stay in the
root namespace. One module-scoped cluster; everything is stopped by PID and every
namespace, veth and bridge removed even when a test fails.

Must show (issue 20): one broker's namespace cut off entirely (nftables drops every packet
on its link), the cluster serves on (elections off it, ISR shrinks, acks=all produce and
consume go on), and after healing the broker rejoins the ISR with every record.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
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
                                         "(`make tools` installs it)")
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


@pytest.fixture(scope="module", autouse=True)
def no_leftovers():
    """After the module: remove any praha layout nobody uses (a crashed `cluster up` or
    campaign of this run), found by praha's name prefix."""
    yield
    netns.cleanup_leftovers()


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
        assert f"{b.host}:9092 " in listening
        assert "127.0.0.1:9092" not in listening
        assert "0.0.0.0:9092" not in listening
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
    err = tmp_path / "up.err"
    with open(err, "wb") as out:
        up = subprocess.Popen([sys.executable, "-m", "praha", "cluster", "up", "--netns", "--brokers", "1",
                               "--timeout", "240",
                               "--dir", str(d)], stdout=subprocess.DEVNULL, stderr=out, env=env, start_new_session=True)
    layout = None
    try:
        wait_for(lambda: (d / "broker-1" / "broker.log").exists() or up.poll() is not None, 180,
                 what="the broker launched")
        assert up.poll() is None, f"cluster up ended first:\n{err.read_text()[-3000:]}"
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
    assert f"praha-{index}-b1" not in ns
    assert f"prh{index}-br" not in links


class _Writer(threading.Thread):
    """An acks=all idempotent producer writing unique values to the given partitions in turn
    until stopped; keeps value → (partition, offset) of every acknowledgement and the errors."""

    def __init__(self, bootstrap: str, topic: str, partitions: list[int], name: str):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.partitions, self.wname = bootstrap, topic, partitions, name
        self.stop_event = threading.Event()
        self.acked: dict[str, tuple[int, int]] = {}
        self.errors: dict[str, int] = {}

    def run(self) -> None:
        from confluent_kafka import Producer

        def done(err, msg):
            if err is None:
                self.acked[msg.value().decode()] = (msg.partition(), msg.offset())
            else:
                self.errors[err.name()] = self.errors.get(err.name(), 0) + 1

        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                      "message.timeout.ms": 8000, "linger.ms": 5, "topic.metadata.refresh.interval.ms": 1000})
        i = 0
        while not self.stop_event.is_set() and i < 100_000:
            p.produce(self.topic, f"{self.wname}-{i}".encode(), partition=self.partitions[i % len(self.partitions)],
                      on_delivery=done)
            i += 1
            p.poll(0.02)
        p.flush(30)


class _Watcher(threading.Thread):
    """A read_uncommitted consumer of every partition: offset → value of everything it is served."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.stop_event = threading.Event()
        self.seen: dict[tuple[int, int], str] = {}

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer
        from confluent_kafka import TopicPartition as CTP

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "watcher", "enable.auto.commit": False,
                      "isolation.level": "read_uncommitted", "fetch.wait.max.ms": 100})
        try:
            c.assign([CTP(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
            while not self.stop_event.is_set():
                for m in c.consume(500, 0.3):
                    if not m.error():
                        self.seen[(m.partition(), m.offset())] = m.value().decode()
        finally:
            c.close()


def test_a_leader_cut_from_its_followers_loses_no_acknowledged_record(hosts):
    """Partition 0 led by L, partition 1 by F1, both on {L, F1, F2}, min.insync.replicas=2,
    acks=all producers on both. L is cut from F1 and F2 but not from ZooKeeper (so it stays
    leader, as in Kafka's ZooKeeper mode): its followers fall out of its ISR, it refuses
    acks=all writes (NOT_ENOUGH_REPLICAS) rather than acknowledging what only it holds, while
    partition 1 goes on with {F1, F2}. After healing: every acknowledged record is at its
    offset, and nothing a consumer was served was truncated later.

    With acks=1 the same cut acknowledges records only L holds; as Kafka's documentation says
    of acks=1, if that leader then fails before a follower copied them, they are lost."""
    from praha.zk.admin_zk import create_topic

    topic = "leader-cut"
    ids = sorted(hosts.cluster.load().brokers)
    leader, f1, f2 = ids
    create_topic(hosts.store, topic, None, None, {"min.insync.replicas": "2"},
                 assignment={0: [leader, f1, f2], 1: [f1, f2, leader]})
    wait_for(lambda: [s.leader for s in _states(hosts, topic, 2)] == [leader, f1], 60, what="preferred leaders")
    writers = [_Writer(hosts.bootstrap, topic, [0, 1], f"w{i}") for i in range(2)]
    watcher = _Watcher(hosts.bootstrap, topic, 2)
    for t in (*writers, watcher):
        t.start()
    lay = hosts.layout
    cut = {leader: (f1, f2), f1: (leader,), f2: (leader,)}
    try:
        wait_for(lambda: sum(len(w.acked) for w in writers) > 100, 60, what="acknowledged writes before the cut")
        for b, peers in cut.items():
            netns.apply_drops(lay.node(f"b{b}"), [netns.Drop(tuple(lay.node(f"b{p}").address for p in peers))])
        wait_for(lambda: list(_states(hosts, topic, 2)[0].isr) == [leader], 60, what="the cut leader alone in its ISR")
        wait_for(lambda: sorted(_states(hosts, topic, 2)[1].isr) == sorted([f1, f2]), 60, what="F1, F2 on without L")
        acked_at_cut = sum(len(w.acked) for w in writers)
        wait_for(lambda: sum(len(w.acked) for w in writers) > acked_at_cut + 50, 60, what="writes on F1's side")
        assert _states(hosts, topic, 2)[0].leader == leader  # still in ZooKeeper: no election
    finally:
        for b in cut:
            netns.heal(lay.node(f"b{b}"))
    wait_for(lambda: all(len(s.isr) == 3 for s in _states(hosts, topic, 2)), 120, what="full ISR after healing")
    for t in (*writers, watcher):
        t.stop_event.set()
    for t in writers:
        t.join(60)
    acked = {v: tp for w in writers for v, tp in w.acked.items()}
    final = _read_all(hosts.bootstrap, topic, 2, len(acked))
    assert {v: final.get(v) for v in acked} == acked  # no acknowledged record lost or moved
    watcher.join(30)
    at = {tp: v for v, tp in final.items()}
    truncated = {k: v for k, v in watcher.seen.items() if at.get(k) != v}
    assert not truncated  # nothing served was truncated later


@pytest.mark.slow  # ~65 s here: in `make chaos`, with what it prepares (secure campaigns)
def test_a_secure_cluster_on_hosts_of_their_own(tmp_path, cli):
    """`cluster up --netns --secure`: the certificates name each host's own address, so
    clients in the root namespace reach every broker over SASL_SSL (host names verified),
    the brokers replicate to each other over mutual TLS on their own addresses, and the
    embedded ZooKeeper serves TLS on its own; `cluster down` removes every namespace."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    root = tmp_path / "secure"
    try:
        rc, out, err = cli("cluster", "up", "--netns", "--secure", "--brokers", "2", "--dir", root,
                           "--broker-config", "offsets.topic.num.partitions=1", "--timeout", "180")
        assert rc == 0, err
        lines = out.splitlines()
        confluent = json.loads(lines[lines.index("confluent-kafka:") + 1])
        state = LocalCluster(root).load()
        assert all(b.host.startswith("198.18.") and b.netns for b in state.brokers.values())
        assert confluent["security.protocol"] == "SASL_SSL"
        assert set(confluent["bootstrap.servers"].split(",")) == {b.address for b in state.brokers.values()}
        admin = AdminClient(confluent)
        admin.create_topics([NewTopic("hosts-secured", 1, 2, config={"min.insync.replicas": "2"})])[
            "hosts-secured"].result(60)
        p = Producer({**confluent, "acks": "all"})  # acknowledged only once the follower has it, over TLS
        wait_for(lambda p=p: sorted(p.list_topics("hosts-secured", timeout=5).topics["hosts-secured"]
                                    .partitions[0].isrs) == [1, 2], timeout=90)
        for i in range(5):
            p.produce("hosts-secured", f"s{i}".encode())
        assert p.flush(60) == 0
        c = Consumer({**confluent, "group.id": "hosts-secured", "auto.offset.reset": "earliest"})
        c.subscribe(["hosts-secured"])
        got: list[bytes] = []
        for _ in range(120):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
            if len(got) == 5:
                break
        c.close()
        assert sorted(got) == [f"s{i}".encode() for i in range(5)]
        del p, admin  # no client left to reconnect to whatever takes these addresses next
    finally:
        cluster = LocalCluster(root)
        names = set()
        if cluster.exists():
            record = netns.NetnsLayout.load(cluster.netns_record)
            names = {n.netns for n in record.nodes.values()} if record else set()
        rc, _, err = cli("cluster", "down", "--dir", root)
    assert rc == 0, err
    assert names
    assert not names & netns.existing_names()[0]
