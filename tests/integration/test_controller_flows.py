"""Issue 4 controller flows against real ZooKeeper and broker processes: topic deletion
(with a broker down, across a controller failover, disabled), partition expansion,
reassignment (target broker down, failover midway), preferred elections (request, auto,
preferred replica offline) and controlled shutdown."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from praha.admin.status import cluster_status
from praha.common import ReplicaAssignment, TopicAssignment
from praha.common import TopicPartition as TP
from praha.testing.cluster import wait_for
from praha.zk import znodes

pytestmark = pytest.mark.integration

FAST = {"replica.lag.time.max.ms": "3000"}


def create(zk_store, name, assignment: dict[int, tuple[int, ...]], config=None):
    zk_store.create_topic(name, TopicAssignment({p: ReplicaAssignment(r) for p, r in assignment.items()}), config or {})


def topic_state(zk_connect, name):
    return cluster_status(zk_connect)["topics"].get(name)


def online(zk_connect, name, n):
    t = topic_state(zk_connect, name)
    return t is not None and len(t["partitions"]) == n and all(not p["offline"] for p in t["partitions"])


def leaders(zk_connect, name):
    return {p["partition"]: p["leader"] for p in topic_state(zk_connect, name)["partitions"]}


def controller_events(cluster, event):
    out = []
    for b in cluster.load().brokers.values():
        path = Path(b.dir) / "data" / "state-change.log"
        if path.exists():
            out += [e for e in map(json.loads, path.read_text().splitlines()) if e["event"] == event]
    return out


def gone(zk_store, name):
    kz = zk_store.client
    return (
        name not in zk_store.get_all_topics()
        and kz.exists(znodes.config_topic_path(name)) is None
        and kz.exists(znodes.delete_topic_path(name)) is None
    )


def test_deletion_waits_for_a_dead_broker_and_survives_controller_failover(make_cluster, zk_store, zk_connect):
    cluster = make_cluster(4, overrides=FAST)
    create(zk_store, "doomed", {0: (1, 2, 4), 1: (2, 4, 3), 2: (3, 1, 2)}, {"retention.ms": "100000"})
    wait_for(lambda: online(zk_connect, "doomed", 3), 20, what="topic online")
    cluster.kill_broker(4)
    wait_for(lambda: 4 not in {b["id"] for b in cluster_status(zk_connect)["brokers"]}, 20, what="broker 4 gone")
    # a controller that has finished its failover (broker 4 may have been the controller): a
    # topic queued while a new controller loads is found by its failover, which (as Kafka's)
    # leaves a topic with replicas on a dead broker ineligible and starts nothing yet
    wait_for(lambda: (cid := zk_store.get_controller_id()) not in (None, 4) and any(
        e["controller_id"] == cid for e in controller_events(cluster, "ControllerFailover")), 30,
        what="a live controller done with its failover")
    zk_store.mark_topic_for_deletion("doomed")
    # the live replicas are deleted, but the topic waits for broker 4
    wait_for(lambda: controller_events(cluster, "TopicDeletionStarted"), 20, what="deletion to start")
    started = controller_events(cluster, "TopicDeletionStarted")[-1]
    assert started["waiting_for_brokers"] == [4]
    for b in (1, 2, 3):
        data = Path(cluster.load().brokers[b].dir) / "data"
        wait_for(lambda data=data: not list(data.glob("doomed-*")), 20, what=f"broker {b} to delete its replicas")
    assert "doomed" in zk_store.get_all_topics()
    assert zk_store.get_topics_marked_for_deletion() == ["doomed"]
    described = topic_state(zk_connect, "doomed")
    assert described["marked_for_deletion"]
    assert described["deletion_waiting_for_brokers"] == [4]
    # a controller failover midway
    cid = zk_store.get_controller_id()
    if cid != 4:
        cluster.kill_broker(cid)
        wait_for(lambda: zk_store.get_controller_id() not in (None, cid), 30, what="new controller")
        cluster.start_broker(cid, wait=False)
    assert "doomed" in zk_store.get_all_topics()
    cluster.start_broker(4)
    wait_for(lambda: gone(zk_store, "doomed"), 30, what="deletion to complete once broker 4 is back")
    data4 = Path(cluster.load().brokers[4].dir) / "data"
    wait_for(lambda: not list(data4.glob("doomed-*")), 20, what="broker 4 to delete its replicas")
    # re-creation after deletion works
    create(zk_store, "doomed", {0: (1, 2, 3)})
    wait_for(lambda: online(zk_connect, "doomed", 1), 20, what="re-created topic online")


def test_deletion_disabled_drops_the_marker_and_keeps_the_topic(make_cluster, zk_store, zk_connect):
    make_cluster(3, overrides={"delete.topic.enable": "false"})
    create(zk_store, "kept", {0: (1, 2, 3)})
    wait_for(lambda: online(zk_connect, "kept", 1), 20, what="topic online")
    zk_store.mark_topic_for_deletion("kept")
    wait_for(lambda: zk_store.get_topics_marked_for_deletion() == [], 20, what="marker removed")
    assert "kept" in zk_store.get_all_topics()
    assert online(zk_connect, "kept", 1)


def test_partition_expansion_and_expansion_during_deletion(make_cluster, zk_store, zk_connect):
    cluster = make_cluster(3)
    create(zk_store, "grow", {0: (1, 2, 3)})
    wait_for(lambda: online(zk_connect, "grow", 1), 20, what="topic online")
    zk_store.set_topic_assignment("grow", TopicAssignment({
        0: ReplicaAssignment((1, 2, 3)), 1: ReplicaAssignment((2, 3, 1)), 2: ReplicaAssignment((3, 1, 2))}))
    wait_for(lambda: online(zk_connect, "grow", 3), 20, what="new partitions online")
    assert leaders(zk_connect, "grow") == {0: 1, 1: 2, 2: 3}
    # a partition added while the topic is being deleted leaves nothing behind
    victim = next(b for b in (1, 2, 3) if b != zk_store.get_controller_id())
    cluster.kill_broker(victim)
    wait_for(lambda: victim not in {b["id"] for b in cluster_status(zk_connect)["brokers"]}, 20, what="broker gone")
    zk_store.mark_topic_for_deletion("grow")
    wait_for(lambda: controller_events(cluster, "TopicDeletionStarted"), 20, what="deletion to start")
    zk_store.set_topic_assignment("grow", TopicAssignment({p: ReplicaAssignment((1, 2, 3)) for p in range(4)}))
    cluster.start_broker(victim)
    wait_for(lambda: gone(zk_store, "grow"), 30, what="deletion to complete")
    for b in cluster.load().brokers.values():
        assert not list((Path(b.dir) / "data").glob("grow-*"))


def test_reassignment_waits_for_its_target_and_survives_failover(make_cluster, zk_store, zk_connect):
    cluster = make_cluster(4, overrides=FAST)
    create(zk_store, "moving", {0: (1, 2, 3), 1: (2, 3, 1)})
    wait_for(lambda: online(zk_connect, "moving", 2), 20, what="topic online")
    cluster.kill_broker(4)
    wait_for(lambda: 4 not in {b["id"] for b in cluster_status(zk_connect)["brokers"]}, 20, what="broker 4 gone")
    zk_store.create_reassignment({TP("moving", 0): (2, 3, 4)})
    wait_for(lambda: topic_state(zk_connect, "moving")["partitions"][0]["adding_replicas"] == [4], 20,
             what="reassignment in flight")
    p0 = topic_state(zk_connect, "moving")["partitions"][0]
    assert p0["removing_replicas"] == [1]
    assert p0["replicas"] == [2, 3, 4, 1]
    # the topic cannot be deleted meanwhile: it waits
    cid = zk_store.get_controller_id()
    cluster.kill_broker(cid)
    wait_for(lambda: zk_store.get_controller_id() not in (None, cid), 30, what="new controller")
    cluster.start_broker(cid, wait=False)
    assert zk_store.exists(znodes.REASSIGN_PARTITIONS_PATH) is not None
    cluster.start_broker(4)
    wait_for(lambda: zk_store.exists(znodes.REASSIGN_PARTITIONS_PATH) is None, 40, what="reassignment to complete")
    wait_for(lambda: (p := topic_state(zk_connect, "moving")["partitions"][0])["replicas"] == [2, 3, 4]
             and sorted(p["isr"]) == [2, 3, 4] and not p["adding_replicas"] and not p["removing_replicas"], 30,
             what="final assignment and ISR exactly the target")
    assert topic_state(zk_connect, "moving")["partitions"][0]["leader"] in (2, 3, 4)


def test_refused_reassignments_change_nothing(make_cluster, zk_store, zk_connect):
    cluster = make_cluster(3)
    create(zk_store, "stay", {0: (1, 2, 3)})
    wait_for(lambda: online(zk_connect, "stay", 1), 20, what="topic online")
    for bad in ({TP("stay", 0): (1, 2, 3)}, {TP("stay", 0): (1, 1, 2)}, {TP("nope", 0): (1, 2)}):
        zk_store.create_reassignment(bad)
        wait_for(lambda: zk_store.exists(znodes.REASSIGN_PARTITIONS_PATH) is None, 20, what="refused request removed")
    assert topic_state(zk_connect, "stay")["partitions"][0]["replicas"] == [1, 2, 3]
    refused = controller_events(cluster, "ReassignmentRefused")
    reasons = " ".join(json.dumps(e["partitions"]) for e in refused)
    assert "equals the current assignment" in reasons
    assert "duplicate" in reasons
    assert "unknown partition" in reasons


def test_preferred_election_on_request_auto_and_with_preferred_offline(make_cluster, zk_store, zk_connect):
    cluster = make_cluster(3, overrides={**FAST, "leader.imbalance.check.interval.seconds": "2",
                                         "auto.leader.rebalance.enable": "false"})
    create(zk_store, "pref", {0: (1, 2, 3), 1: (1, 3, 2)})
    wait_for(lambda: online(zk_connect, "pref", 2), 20, what="topic online")
    cluster.kill_broker(1)
    wait_for(lambda: all(l != 1 for l in leaders(zk_connect, "pref").values()), 30, what="leaders to move away")
    # preferred replica offline: the request is dropped and leaders stay
    zk_store.create_preferred_election({TP("pref", 0)})
    wait_for(lambda: zk_store.exists(znodes.PREFERRED_REPLICA_ELECTION_PATH) is None, 20, what="request dropped")
    assert leaders(zk_connect, "pref")[0] != 1
    cluster.start_broker(1)
    wait_for(lambda: all(1 in p["isr"] for p in topic_state(zk_connect, "pref")["partitions"]), 30,
             what="broker 1 back in the ISR")
    zk_store.create_preferred_election({TP("pref", 0)})
    wait_for(lambda: leaders(zk_connect, "pref")[0] == 1, 20, what="preferred leader restored by request")
    assert leaders(zk_connect, "pref")[1] != 1  # only the requested partition moved


def test_auto_leader_rebalance_restores_preferred_leaders(make_cluster, zk_store, zk_connect):
    cluster = make_cluster(3, overrides={**FAST, "leader.imbalance.check.interval.seconds": "2"})
    create(zk_store, "auto", {0: (1, 2, 3), 1: (1, 3, 2), 2: (2, 3, 1)})
    wait_for(lambda: online(zk_connect, "auto", 3), 20, what="topic online")
    cluster.kill_broker(1)
    wait_for(lambda: all(l != 1 for l in leaders(zk_connect, "auto").values()), 30, what="leaders to move away")
    cluster.start_broker(1)
    wait_for(lambda: leaders(zk_connect, "auto") == {0: 1, 1: 1, 2: 2}, 40, what="auto rebalance")


def test_controlled_shutdown_moves_leadership_before_exit(make_cluster, zk_store, zk_connect):
    cluster = make_cluster(3, overrides=FAST)
    create(zk_store, "cs", {p: r for p, r in enumerate([(1, 2, 3), (2, 3, 1), (3, 1, 2), (1, 3, 2)])})
    wait_for(lambda: online(zk_connect, "cs", 4), 20, what="topic online")
    victim = next(b for b in (1, 2, 3) if b != zk_store.get_controller_id())
    assert cluster.stop_broker(victim, timeout=60)  # exited by itself
    shut = [e for e in controller_events(cluster, "ControlledShutdown") if e["broker"] == victim]
    assert shut
    assert shut[-1]["remaining"] == []
    t = topic_state(zk_connect, "cs")
    assert all(p["leader"] != victim and p["leader"] != -1 for p in t["partitions"])
    assert all(victim not in p["isr"] for p in t["partitions"])
