"""ISR changes on the leader, against a fake store: conditional writes with the last
zkVersion, BAD_VERSION freezing ISR changes until the next LeaderAndIsr, and batched
ISR-change notifications."""
from __future__ import annotations

import asyncio
import threading

from praha.broker.replication.replica_manager import ReplicaManager
from praha.common import LeaderIsrAndControllerEpoch, TopicPartition
from praha.config import BrokerConfig
from praha.protocol.controller_requests import LeaderAndIsrRequestData, PartitionLeaderState
from praha.zk.ops import WriteOutcome, WriteResult


class FakeStore:
    """Partition state znodes with versions, and notifications, like ZkStore's calls."""

    def __init__(self):
        self.lock = threading.Lock()
        self.states: dict[TopicPartition, tuple[LeaderIsrAndControllerEpoch | None, int]] = {}
        self.notifications: list[list[TopicPartition]] = []
        self.writes = 0

    def conditional_update_partition_state(self, tp, state, expected_version):
        with self.lock:
            self.writes += 1
            cur, version = self.states.get(tp, (None, 0))
            if version != expected_version:
                return WriteResult(WriteOutcome.BAD_VERSION)
            self.states[tp] = (state, version + 1)
            return WriteResult(WriteOutcome.OK, version + 1)

    def get_partition_states(self, tps):
        out = {}
        for tp in tps:
            cur, version = self.states.get(tp, (None, 0))
            if cur is not None:
                li = cur.leader_and_isr
                out[tp] = LeaderIsrAndControllerEpoch(li.__class__(li.leader, li.isr, li.leader_epoch, version),
                                                      cur.controller_epoch)
        return out, {}

    def create_isr_change_notification(self, tps):
        with self.lock:
            self.notifications.append(list(tps))
        return f"isr_change_{len(self.notifications):010d}"

    def get_topic_configs(self, topics):
        return {}, {}


def leader_and_isr(tps, epoch=0, isr=(1, 2, 3), zk_version=0):
    return LeaderAndIsrRequestData(9, 1, -1, [PartitionLeaderState(tp, 1, 1, epoch, isr, zk_version, (1, 2, 3))
                                             for tp in tps], [])


async def started(tmp_path, store):
    cfg = BrokerConfig.from_dict({"broker.id": "1", "zookeeper.connect": "x", "log.dirs": str(tmp_path),
                                  "replica.lag.time.max.ms": "100000", "isr.change.notification.interval.ms": "50"})
    rm = ReplicaManager(1, cfg)
    rm.start_logs(None)
    rm.store = store
    await rm.start()
    return rm


async def until(pred, polls=500):
    """Poll every 10 ms, `polls` times at most (5 s, longer on a loaded machine)."""
    for _ in range(polls):
        if pred():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def test_shrinks_are_conditional_writes_and_one_notification_covers_a_burst(tmp_path):
    async def go():
        store = FakeStore()
        rm = await started(tmp_path, store)
        tps = [TopicPartition("t", p) for p in range(3)]
        await rm.become_leader_or_follower(leader_and_isr(tps))
        for tp in tps:
            rm.partitions[tp].followers[3].last_caught_up_ms = 0  # replica 3 stopped long ago
            rm.partitions[tp].followers[2].last_caught_up_ms = 2**62
        rm.maybe_shrink_isr()
        await until(lambda: all(rm.partitions[tp].isr == (1, 2) for tp in tps))
        assert [rm.partitions[tp].zk_version for tp in tps] == [1, 1, 1]
        await until(lambda: store.notifications)
        await asyncio.sleep(0.1)
        assert store.notifications == [tps]  # one node for the burst
        assert rm.stats.isr_shrinks == 3
        await rm.shutdown()
        rm.close_logs()
    asyncio.run(go())


def test_bad_version_freezes_isr_changes_until_the_next_leader_and_isr(tmp_path):
    async def go():
        store = FakeStore()
        rm = await started(tmp_path, store)
        tp = TopicPartition("t", 0)
        store.states[tp] = (None, 7)  # the controller moved the znode on meanwhile
        await rm.become_leader_or_follower(leader_and_isr([tp], zk_version=3))
        p = rm.partitions[tp]
        p.followers[3].last_caught_up_ms = 0
        p.followers[2].last_caught_up_ms = 2**62
        rm.maybe_shrink_isr()
        await until(lambda: p.isr_frozen)
        assert p.isr == (1, 2, 3)
        assert p.pending_isr is None
        assert rm.stats.isr_write_failures == 1
        writes = store.writes
        rm.maybe_shrink_isr()
        await asyncio.sleep(0.05)
        assert store.writes == writes  # frozen: no more attempts
        await rm.become_leader_or_follower(leader_and_isr([tp], epoch=1, zk_version=7))
        assert not p.isr_frozen
        p.followers[3].last_caught_up_ms = 0
        p.followers[2].last_caught_up_ms = 2**62
        rm.maybe_shrink_isr()
        await until(lambda: p.isr == (1, 2))
        assert p.zk_version == 8
        await rm.shutdown()
        rm.close_logs()
    asyncio.run(go())


def test_caught_up_follower_rejoins_with_one_write(tmp_path):
    async def go():
        store = FakeStore()
        rm = await started(tmp_path, store)
        tp = TopicPartition("t", 0)
        await rm.become_leader_or_follower(leader_and_isr([tp], isr=(1, 2)))
        p = rm.partitions[tp]
        rm.record_follower_fetch(p, 3, 0)  # empty log: log end 0 = high watermark
        rm.record_follower_fetch(p, 3, 0)  # a second fetch while the write is in flight
        await until(lambda: p.isr == (1, 2, 3))
        assert store.writes == 1
        assert rm.stats.isr_expands == 1
        await rm.shutdown()
        rm.close_logs()
    asyncio.run(go())


def test_a_broker_shutting_down_stops_fetching_and_starts_no_new_fetcher(tmp_path):
    """Controlled shutdown: no follower fetch may put this broker back into an ISR."""
    from praha.common import BrokerInfo, EndPoint

    async def go():
        rm = await started(tmp_path, FakeStore())
        leader2 = BrokerInfo(2, (EndPoint("127.0.0.1", 1, "PLAINTEXT", "PLAINTEXT"),))
        follow = [TopicPartition("f", p) for p in range(2)]
        req = LeaderAndIsrRequestData(9, 1, -1, [PartitionLeaderState(tp, 1, 2, 1, (2, 1), 0, (2, 1))
                                                 for tp in follow], [leader2])
        rm._apply_leader_and_isr(req)
        assert rm.fetchers.partition_count() == 2
        assert await rm.stop_following() == 2
        assert rm.fetchers.partition_count() == 0
        # a partition we led moves to broker 2 during the shutdown: we follow it, but do not fetch
        moved = TopicPartition("led", 0)
        later = LeaderAndIsrRequestData(9, 1, -1, [PartitionLeaderState(moved, 1, 2, 2, (2,), 0, (1, 2))], [leader2])
        assert rm._apply_leader_and_isr(later).error_code == 0
        assert not rm.partitions[moved].is_leader
        assert rm.fetchers.partition_count() == 0
        await rm.shutdown()
        rm.close_logs()

    asyncio.run(go())
