"""ZkStore against a real ZooKeeper (the embedded 3.9 server): election, registration,
fenced batched writes, bulk reads, watches, session expiry through a cut TCP path."""
from __future__ import annotations

import queue
import threading
import time

import pytest

from praha.common import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from praha.errors import BrokerIdInUseError, ControllerMovedError, TopicExistsError, ZNodeDecodeError
from praha.testing.proxy import TcpProxy
from praha.zk import znodes as zn
from praha.zk.ops import CreateOp, DeleteOp, SetDataOp, WriteOutcome
from praha.zk.server import EmbeddedZooKeeper, ZooKeeperServerError
from praha.zk.store import ZkStore
from praha.zk.watches import WatchEventType

pytestmark = pytest.mark.integration


def state(leader: int, isr: tuple[int, ...], leader_epoch: int = 0, zk_version: int = 0, epoch: int = 1):
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, leader_epoch, zk_version), epoch)


def broker(broker_id: int, port: int = 9092) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("127.0.0.1", port),))


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


@pytest.fixture
def other_store(zk_connect):
    """A second session on the same chroot (another broker)."""
    store = ZkStore(zk_connect, session_timeout_ms=10000).start()
    yield store
    store.stop()


# -- election ------------------------------------------------------------------------------------------
def test_election_algorithm(zk_store, other_store):
    assert zk_store.get_controller_id() is None
    assert zk_store.get_controller_epoch() is None
    epoch, version = zk_store.register_controller_and_increment_epoch(1)
    assert epoch == 1
    assert zk_store.get_controller_id() == 1
    assert zk_store.get_controller_epoch() == (1, version)
    assert zk_store.get_data(zn.CONTROLLER_EPOCH_PATH)[0] == b"1"

    with pytest.raises(ControllerMovedError):
        other_store.register_controller_and_increment_epoch(2)
    assert other_store.get_controller_id() == 1
    assert other_store.get_controller_epoch()[0] == 1

    zk_store.delete_controller()
    zk_store.delete_controller()  # absent is fine
    assert other_store.register_controller_and_increment_epoch(2) == (2, version + 1)
    assert zk_store.get_controller_id() == 2

    other_store.stop()  # session closed: the ephemeral /controller vanishes
    wait_for(lambda: zk_store.get_controller_id() is None)
    assert zk_store.register_controller_and_increment_epoch(1)[0] == 3


def test_election_race_has_one_winner(zk_connect):
    stores = [ZkStore(zk_connect).start() for _ in range(4)]
    try:
        outcomes: dict[int, object] = {}
        start = threading.Barrier(len(stores))

        def run(i: int, store: ZkStore):
            start.wait()
            try:
                outcomes[i] = store.register_controller_and_increment_epoch(i)
            except ControllerMovedError as e:
                outcomes[i] = e

        threads = [threading.Thread(target=run, args=(i, s)) for i, s in enumerate(stores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        winners = [i for i, o in outcomes.items() if isinstance(o, tuple)]
        assert len(outcomes) == 4
        assert len(winners) == 1
        assert stores[0].get_controller_id() == winners[0]
        assert outcomes[winners[0]][0] == stores[0].get_controller_epoch()[0] == 1
    finally:
        for s in stores:
            s.stop()


def test_garbage_controller_epoch_and_controller(zk_store):
    zk_store.client.create(zn.CONTROLLER_EPOCH_PATH, b"garbage")
    with pytest.raises(ZNodeDecodeError):
        zk_store.register_controller_and_increment_epoch(1)
    assert zk_store.get_controller_id() is None  # nothing was written
    zk_store.client.create(zn.CONTROLLER_PATH, b"{oops", ephemeral=True)
    with pytest.raises(ZNodeDecodeError):
        zk_store.get_controller_id()


# -- brokers ---------------------------------------------------------------------------------------------
def test_broker_registration_and_duplicate_id(zk_store, other_store):
    epoch1 = zk_store.register_broker(broker(1, 9092))
    assert zk_store.register_broker(broker(1, 9092)) == epoch1  # same session: accepted
    epoch2 = other_store.register_broker(broker(2, 9093))
    assert epoch2 > epoch1
    with pytest.raises(BrokerIdInUseError, match=r"broker.id 1 .*127\.0\.0\.1:9092"):
        other_store.register_broker(broker(1, 9999))

    zk_store.client.create(zn.broker_path(7), b"garbage")
    live, bad = zk_store.get_live_brokers()
    assert live == {1: BrokerInfo(1, (EndPoint("127.0.0.1", 9092),), None, epoch1),
                    2: BrokerInfo(2, (EndPoint("127.0.0.1", 9093),), None, epoch2)}
    assert list(bad) == [7]
    assert isinstance(bad[7], ZNodeDecodeError)

    other_store.stop()
    wait_for(lambda: 2 not in zk_store.get_live_brokers()[0])


def test_cluster_id(zk_store, other_store):
    cid = zk_store.get_or_create_cluster_id()
    assert len(cid) == 22
    assert other_store.get_or_create_cluster_id() == cid
    assert zk_store.get_data(zn.CLUSTER_ID_PATH)[0] == f'{{"version":"1","id":"{cid}"}}'.encode()


# -- fenced batched writes -------------------------------------------------------------------------------
def test_fenced_multi_applies_with_current_epoch_and_refuses_stale(zk_store):
    _, epoch_version = zk_store.register_controller_and_increment_epoch(1)
    ops = [CreateOp(f"/fenced-{i}", b"x") for i in range(250)]
    results = zk_store.fenced_multi(ops, epoch_version, batch_size=100)
    assert [r.outcome for r in results] == [WriteOutcome.OK] * 250
    assert results[0].created_path == "/fenced-0"

    # a new controller bumps the epoch: the old one's writes are all refused
    zk_store.delete_controller()
    _, new_version = zk_store.register_controller_and_increment_epoch(1)
    assert new_version != epoch_version
    with pytest.raises(ControllerMovedError):
        zk_store.fenced_multi([SetDataOp(f"/fenced-{i}", b"stale") for i in range(250)], epoch_version)
    data = zk_store.get_data_bulk([f"/fenced-{i}" for i in range(250)])
    assert {d for d, _ in data.values()} == {b"x"}  # nothing written
    with pytest.raises(ControllerMovedError):
        zk_store.fenced_multi([CreateOp("/never")], epoch_version)
    assert zk_store.exists("/never") is None


def test_per_item_outcomes_in_one_batch(zk_store):
    _, ev = zk_store.register_controller_and_increment_epoch(1)
    tps = [TopicPartition("t", p) for p in range(40)]
    zk_store.create_topic("t", TopicAssignment({p: ReplicaAssignment((1, 2)) for p in range(40)}))
    created = zk_store.create_partition_states({tp: state(1, (1, 2)) for tp in tps}, ev)
    assert all(r.outcome is WriteOutcome.OK and r.stat_version == 0 for r in created.values())
    again = zk_store.create_partition_states({tps[0]: state(1, (1, 2))}, ev)
    assert again[tps[0]].outcome is WriteOutcome.NODE_EXISTS

    stale = {tps[3], tps[17], tps[39]}
    updates = {tp: state(2, (2,), 1, zk_version=5 if tp in stale else 0) for tp in tps}
    results = zk_store.update_partition_states(updates, ev)
    assert {tp for tp, r in results.items() if r.outcome is WriteOutcome.BAD_VERSION} == stale
    assert all(r.outcome is WriteOutcome.OK and r.stat_version == 1 for tp, r in results.items() if tp not in stale)
    states, bad = zk_store.get_partition_states(tps)
    assert not bad
    for tp in tps:
        expected = (1, (1, 2), 0, 0) if tp in stale else (2, (2,), 1, 1)
        lai = states[tp].leader_and_isr
        assert (lai.leader, lai.isr, lai.leader_epoch, lai.zk_version) == expected

    mixed = zk_store.fenced_multi([SetDataOp("/nope", b""), CreateOp("/brokers"), DeleteOp(zn.tp_state_path(tps[1]), 7),
                                   CreateOp("/mixed-ok"), CreateOp("/a/b/c")], ev)
    assert [r.outcome for r in mixed] == [WriteOutcome.NO_NODE, WriteOutcome.NODE_EXISTS, WriteOutcome.BAD_VERSION,
                                         WriteOutcome.OK, WriteOutcome.NO_NODE]
    assert zk_store.exists("/mixed-ok") is not None

    # a partition leader changing its own ISR: conditional, unfenced
    tp = tps[5]
    assert zk_store.conditional_update_partition_state(tp, state(2, (2, 1), 1), 0).outcome is WriteOutcome.BAD_VERSION
    r = zk_store.conditional_update_partition_state(tp, state(2, (2, 1), 1), 1)
    assert r.ok
    assert r.stat_version == 2


def test_create_partition_states_without_topic_is_no_node(zk_store):
    _, ev = zk_store.register_controller_and_increment_epoch(1)
    res = zk_store.create_partition_states({TopicPartition("ghost", 0): state(1, (1,))}, ev)
    assert res[TopicPartition("ghost", 0)].outcome is WriteOutcome.NO_NODE


# -- bulk reads ---------------------------------------------------------------------------------------
def test_bulk_reads_5k(zk_store):
    _, ev = zk_store.register_controller_and_increment_epoch(1)
    topics = [f"bulk{i}" for i in range(5)]
    tps = [TopicPartition(t, p) for t in topics for p in range(1000)]
    for t in topics:
        zk_store.create_topic(t, TopicAssignment({p: ReplicaAssignment((1, 2, 3)) for p in range(1000)}),
                              {"retention.ms": "1"})
    written = {tp: state(tp.partition % 3 + 1, (1, 2, 3), tp.partition % 7) for tp in tps}
    assert all(r.ok for r in zk_store.create_partition_states(written, ev).values())
    zk_store.client.set(zn.tp_state_path(tps[42]), b"garbage")
    missing = TopicPartition("bulk0", 5000)

    assert zk_store.multi_read_supported  # ZooKeeper 3.9
    for use_multi_read in (True, False):
        raw = zk_store.get_data_bulk([zn.tp_state_path(tp) for tp in tps] + ["/absent"], use_multi_read=use_multi_read)
        assert len(raw) == 5001
        assert raw["/absent"] is None
        states, bad = zk_store.get_partition_states(tps + [missing])
        assert list(bad) == [tps[42]]
        assert missing not in states
        assert len(states) == 4999
        assert states[tps[7]] == written[tps[7]]
        children = zk_store.get_children_bulk([zn.partitions_path(t) for t in topics] + ["/absent"],
                                              use_multi_read=use_multi_read)
        assert children["/absent"] is None
        assert len(children[zn.partitions_path("bulk3")]) == 1000

    assert zk_store.get_all_topics() == topics
    assignments, bad = zk_store.get_topic_assignments(topics + ["nope"])
    assert not bad
    assert set(assignments) == set(topics)
    assert assignments["bulk1"].partitions[999] == ReplicaAssignment((1, 2, 3))
    configs, bad = zk_store.get_topic_configs(topics)
    assert configs["bulk4"] == {"retention.ms": "1"}
    assert not bad


# -- topics and admin znodes ---------------------------------------------------------------------------
def test_topic_admin_and_notifications(zk_store):
    _, ev = zk_store.register_controller_and_increment_epoch(1)
    assignment = TopicAssignment({0: ReplicaAssignment((1, 2)), 1: ReplicaAssignment((2, 1))})
    zk_store.create_topic("orders", assignment, {"cleanup.policy": "compact"})
    with pytest.raises(TopicExistsError):
        zk_store.create_topic("orders", assignment)
    # written with a new topic id (version 3), as Kafka's AdminZkClient writes it
    written = zk_store.get_topic_assignments(["orders"])[0]["orders"]
    assert written.partitions == assignment.partitions
    assert written.topic_id
    assert len(written.topic_id) == 22
    assert zk_store.get_data(zn.topic_path("orders"))[0] == zn.encode_topic_assignment(written)

    grown = TopicAssignment({**assignment.partitions, 2: ReplicaAssignment((1, 2))})
    assert zk_store.set_topic_assignment("orders", grown, ev).ok
    assert zk_store.get_topic_assignments(["orders"])[0]["orders"] == grown

    name = zk_store.create_isr_change_notification([TopicPartition("orders", 0)])
    assert name.startswith(zn.ISR_CHANGE_PREFIX)
    zk_store.create_isr_change_notification([TopicPartition("orders", 1)])
    zk_store.client.create(zn.isr_change_path("isr_change_9999999999"), b"junk")
    names, tps = zk_store.get_isr_change_notifications()
    assert len(names) == 3
    assert tps == {TopicPartition("orders", 0), TopicPartition("orders", 1)}
    zk_store.delete_isr_change_notifications(names, ev)
    assert zk_store.get_isr_change_notifications() == ([], set())

    target = {TopicPartition("orders", 0): (2, 3)}
    zk_store.create_reassignment(target)
    assert zk_store.get_reassignments() == target
    zk_store.set_reassignments({}, ev)
    assert zk_store.get_reassignments() == {}
    zk_store.create_preferred_election([TopicPartition("orders", 1)])
    assert zk_store.get_preferred_election() == {TopicPartition("orders", 1)}
    zk_store.delete_preferred_election(ev)
    assert zk_store.get_preferred_election() == set()

    zk_store.create_partition_states({TopicPartition("orders", p): state(1, (1, 2)) for p in range(3)}, ev)
    zk_store.mark_topic_for_deletion("orders")
    assert zk_store.get_topics_marked_for_deletion() == ["orders"]
    with pytest.raises(TopicExistsError, match="marked for deletion"):
        zk_store.create_topic("orders", assignment)
    zk_store.delete_topic_znodes(["orders"], ev)
    assert zk_store.get_all_topics() == []
    assert zk_store.get_topics_marked_for_deletion() == []
    assert zk_store.exists(zn.config_topic_path("orders")) is None


# -- watches ------------------------------------------------------------------------------------------------
def test_watches_refire_and_stop_after_cancel(zk_store):
    data_events: queue.Queue = queue.Queue()
    child_events: queue.Queue = queue.Queue()
    path = "/watched"
    dw = zk_store.watch_data(path, data_events.put, group="controller")  # absent for now
    cw = zk_store.watch_children(zn.TOPICS_PATH, child_events.put, group="controller")
    absent_parent = zk_store.watch_children("/later", child_events.put)

    zk_store.client.create(path, b"0")
    assert data_events.get(timeout=5).type is WatchEventType.CREATED
    for i in range(1, 5):
        zk_store.client.set(path, str(i).encode())
        assert data_events.get(timeout=5).type is WatchEventType.CHANGED
    zk_store.client.delete(path)
    assert data_events.get(timeout=5).type is WatchEventType.DELETED
    zk_store.client.create(path, b"again")
    assert data_events.get(timeout=5).type is WatchEventType.CREATED

    for i in range(3):
        zk_store.client.create(zn.topic_path(f"w{i}"), b"{}")
        event = child_events.get(timeout=5)
        assert (event.path, event.type) == (zn.TOPICS_PATH, WatchEventType.CHILDREN_CHANGED)

    zk_store.client.create("/later")
    assert child_events.get(timeout=5).path == "/later"
    zk_store.client.create("/later/x")
    assert child_events.get(timeout=5).type is WatchEventType.CHILDREN_CHANGED
    assert zk_store.unwatch("/later") == 1
    assert not absent_parent.active

    assert zk_store.cancel_watches("controller") == 2
    assert not dw.active
    assert not cw.active
    zk_store.client.set(path, b"after cancel")
    zk_store.client.create(zn.topic_path("w9"), b"{}")
    zk_store.client.create("/later/y")
    time.sleep(0.5)
    assert data_events.empty()
    assert child_events.empty()


# -- sessions ---------------------------------------------------------------------------------------
class Recorder:
    def __init__(self):
        self.events: queue.Queue = queue.Queue()

    def on_suspended(self):
        self.events.put("suspended")

    def on_reconnected(self):
        self.events.put("reconnected")

    def on_session_expired(self):
        self.events.put("expired")

    def on_new_session(self):
        self.events.put("new_session")

    def next(self, timeout: float = 15) -> str:
        return self.events.get(timeout=timeout)


def test_session_expiry_through_cut_proxy(zookeeper, zk_connect, zk_store):
    chroot = zk_connect[zk_connect.index("/"):]
    with TcpProxy((zookeeper.host, zookeeper.port)) as proxy:
        store = ZkStore(proxy.connect_string + chroot, session_timeout_ms=4000).start()
        try:
            recorder = Recorder()
            store.add_session_listener(recorder)
            watched: queue.Queue = queue.Queue()
            store.watch_data("/flag", watched.put)
            first_session = store.session_id
            store.register_broker(broker(5))

            # a short cut: same session comes back
            proxy.cut()
            assert recorder.next() == "suspended"
            proxy.restore()
            assert recorder.next() == "reconnected"
            assert store.session_id == first_session

            # a long cut: the server expires the session, the broker znode vanishes
            proxy.cut()
            assert recorder.next() == "suspended"
            zk_store.client.create("/flag", b"changed while cut")
            wait_for(lambda: 5 not in zk_store.get_live_brokers()[0], timeout=15, interval=0.1)
            proxy.restore()
            assert recorder.next() == "expired"
            assert recorder.next() == "new_session"
            assert store.session_id != first_session
            assert store.connected
            # the watch was re-armed on the new session and reports what happened meanwhile
            event = watched.get(timeout=5)
            assert event.type is WatchEventType.CREATED
            assert event.resync
            zk_store.client.set("/flag", b"after")
            assert watched.get(timeout=5).type is WatchEventType.CHANGED
            store.register_broker(broker(5))
            assert 5 in zk_store.get_live_brokers()[0]
        finally:
            store.stop()
    assert recorder.events.empty()  # stop() emits nothing


# -- the server wrapper ----------------------------------------------------------------------------------
def test_server_errors(zookeeper, tmp_path, monkeypatch):
    with pytest.raises(ZooKeeperServerError, match="already in use"):
        EmbeddedZooKeeper(tmp_path / "taken", port=zookeeper.port).start()
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ZooKeeperServerError, match="Java not found"):
        EmbeddedZooKeeper(tmp_path / "nojava", port=0).start()
    assert zookeeper.is_running()
    assert zookeeper.pid_file.read_text().strip() == str(zookeeper.pid)


@pytest.mark.slow
def test_ensemble_survives_one_server_loss(tmp_path):
    from praha.zk.server import ZooKeeperEnsemble

    with ZooKeeperEnsemble(3, tmp_path) as ensemble:
        store = ZkStore(ensemble.connect_string + "/ens", session_timeout_ms=6000).start()
        try:
            store.ensure_persistent_paths()
            _, ev = store.register_controller_and_increment_epoch(1)
            ensemble.servers[0].kill()
            assert store.get_data(zn.CONTROLLER_EPOCH_PATH) is not None  # reads retry across the reconnect
            assert store.fenced_multi([CreateOp("/after-loss", b"1")], ev)[0].ok
            assert store.get_data("/after-loss")[0] == b"1"
        finally:
            store.stop()
    assert all(pid is None for pid in ensemble.pids)


def test_repairs_of_corrupt_znodes(zk_store, other_store):
    zk_store.client.create(zn.CONTROLLER_EPOCH_PATH, b"garbage")
    assert zk_store.repair_controller_epoch(4) == 4  # corrupt: overwritten
    assert zk_store.repair_controller_epoch(3) is None  # readable and not lower: left alone
    assert zk_store.repair_controller_epoch(4) is None
    assert zk_store.repair_controller_epoch(6) == 6  # lower than a seen epoch: raised
    assert zk_store.register_controller_and_increment_epoch(1)[0] == 7
    # elections bump value and data version together, so after garbage a repair that knows no
    # seen epoch still lands above every elected one
    zk_store.client.delete(zn.CONTROLLER_EPOCH_PATH)
    for _ in range(3):
        zk_store.client.delete(zn.CONTROLLER_PATH)
        zk_store.register_controller_and_increment_epoch(1)
    zk_store.client.set(zn.CONTROLLER_EPOCH_PATH, b"banana")  # version 4
    assert zk_store.repair_controller_epoch(0) == 5  # the version this write gives it
    zk_store.client.delete(zn.CONTROLLER_PATH)
    assert zk_store.register_controller_and_increment_epoch(1)[0] == 6
    # a readable value reset below its version (by hand) is raised the same way
    zk_store.client.set(zn.CONTROLLER_EPOCH_PATH, b"1")  # version 7
    assert zk_store.repair_controller_epoch(0) == 8
    assert zk_store.repair_controller_epoch(0) is None  # sound again: left alone

    zk_store.client.create("/brokers/topics/bad", b"{")
    zk_store.client.create("/brokers/topics/good", zn.encode_topic_assignment(TopicAssignment()))
    assert zk_store.delete_if_unchanged_corrupt("/brokers/topics/bad")
    assert not zk_store.delete_if_unchanged_corrupt("/brokers/topics/good")
    assert not zk_store.delete_if_unchanged_corrupt("/brokers/topics/absent")
    assert zk_store.get_all_topics() == ["good"]

    stale = other_store.register_broker(broker(3))  # a previous incarnation, session still alive
    fresh = zk_store.replace_broker_registration(broker(3), stale)
    assert fresh > stale
    assert zk_store.get_live_brokers()[0][3].epoch == fresh
    with pytest.raises(BrokerIdInUseError):
        other_store.replace_broker_registration(broker(3), stale)
