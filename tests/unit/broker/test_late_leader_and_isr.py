"""A LeaderAndIsr the fence admitted, held up before it takes effect, must still be current when
it does (chaos seed 216): the replica manager asks the fence again under its lock, after the
ZooKeeper read of the topics' configs, which waits while ZooKeeper is away."""
from __future__ import annotations

import asyncio
import threading

from praha.broker.replication.fencing import ControllerFence, Verdict
from praha.broker.replication.replica_manager import ReplicaManager
from praha.common import TopicPartition
from praha.config import BrokerConfig
from praha.errors import ErrorCode
from praha.protocol.controller_requests import LeaderAndIsrRequestData, PartitionLeaderState

TP = TopicPartition("chaos-txn-1", 1)
OLD_REGISTRATION, NEW_REGISTRATION = 8589935512, 8589935603  # broker 2's epochs in seed 216


class CutOffStore:
    """ZooKeeper as a broker sees it during a `zk_expire` cut: reads wait until it is back."""

    def __init__(self) -> None:
        self.back = threading.Event()
        self.reading = threading.Event()

    def get_topic_configs(self, topics):
        self.reading.set()
        assert self.back.wait(30)
        return {}, {}


def test_seed_216_a_leader_and_isr_held_up_past_a_new_registration_is_refused(tmp_path):
    """Seed 216: the controller made broker 2 leader of chaos-txn-1-1 at epoch 20 (07:06:30.05).
    Broker 2 was cut from ZooKeeper, and its topic-config read for that request waited 3.7 s.
    Meanwhile the controller saw its session expire and elected broker 4 at epoch 21, and broker 2
    registered again. Broker 2 then applied epoch 20 anyway (07:06:33.787) and held an empty
    epoch in its log, which later kept broker 5 from ever following it. Kafka checks the epochs
    where the request takes effect; so does praha now: the request was addressed to the previous
    registration, so the answer is STALE_BROKER_EPOCH and nothing changes."""
    async def go() -> None:
        cfg = BrokerConfig.from_dict({"broker.id": "2", "zookeeper.connect": "x", "log.dirs": str(tmp_path)})
        rm = ReplicaManager(2, cfg)
        rm.start_logs(None)
        store = CutOffStore()
        rm.store = store  # type: ignore[assignment]
        await rm.start()
        fence = ControllerFence(broker_epoch=OLD_REGISTRATION)
        assert fence.after_reading(3, 11, seat=(3, 11)) is Verdict.ACCEPT
        req = LeaderAndIsrRequestData(3, 11, OLD_REGISTRATION,
                                      [PartitionLeaderState(TP, 11, 2, 20, (4, 2, 5), 40, (2, 4, 5))], [])
        assert fence.decide(3, 11, req.broker_epoch) is Verdict.ACCEPT  # admitted: the registration is current
        held = asyncio.create_task(rm.become_leader_or_follower(
            req, still_current=lambda: fence.still_current(req.controller_epoch, req.broker_epoch)))
        assert await asyncio.get_running_loop().run_in_executor(None, store.reading.wait, 30)
        fence.broker_epoch = NEW_REGISTRATION  # the session expired; the broker registered again
        store.back.set()
        result = await asyncio.wait_for(held, 30)
        assert result.error_code == ErrorCode.STALE_BROKER_EPOCH
        assert TP not in rm.partitions  # no leadership, no epoch recorded in any log
        await rm.shutdown()
        rm.close_logs()

    asyncio.run(go())


def test_a_leader_and_isr_of_a_controller_deposed_meanwhile_is_refused():
    fence = ControllerFence(broker_epoch=100)
    assert fence.after_reading(3, 11, seat=(3, 11)) is Verdict.ACCEPT
    assert fence.settle(4, 11, Verdict.ACCEPT) == ErrorCode.NONE
    assert fence.still_current(11, 100) == ErrorCode.NONE
    assert fence.still_current(11, -1) == ErrorCode.NONE
    assert fence.settle(4, 12, Verdict.ACCEPT) == ErrorCode.NONE  # the next controller's request got in first
    assert fence.still_current(11, 100) == ErrorCode.STALE_CONTROLLER_EPOCH
    fence.broker_epoch = 101
    assert fence.still_current(12, 100) == ErrorCode.STALE_BROKER_EPOCH
