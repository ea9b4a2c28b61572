"""The share leader's check before it hands records out (`SharePartitionManager._current`)
against a real ZooKeeper: the check no longer queues behind the leader's own state writes
(with 4 members that queue limited the share path, issue 23's speed), yet it still refuses
whenever another broker rewrote the state or the controller named a newer leader epoch."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from praha.broker.share.manager import ShareConfig, SharePartitionManager, _Held
from praha.broker.share.partition import AckBatch, AcknowledgeType, SharePartition, SharePartitionSettings
from praha.common import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from praha.zk import znodes as zn
from praha.zk.share_state import ShareSnapshot, ShareStateStore
from praha.zk.store import ZkStore

pytestmark = pytest.mark.integration

GROUP, TP, EPOCH = "g", TopicPartition("t", 0), 3
#: a bound on every wait, generous for a loaded machine; never a measured time
BOUND_S = 60


def _leader_epoch(store: ZkStore, epoch: int, version: int | None = None) -> None:
    data = zn.encode_partition_state(LeaderIsrAndControllerEpoch(LeaderAndIsr(1, (1,), epoch, 0), 1))
    path = zn.partition_state_path(TP.topic, TP.partition)
    if version is None:
        store.client.create(path, data, makepath=True)
    else:
        store.client.set(path, data)


def _loaded(store: ZkStore) -> tuple[SharePartitionManager, _Held, ShareStateStore]:
    """A manager leading TP in EPOCH with records 0-9 acquired by member m, its state written once."""
    _leader_epoch(store, EPOCH)
    state = ShareStateStore(store.client)
    settings = SharePartitionSettings()
    sp = SharePartition(settings, 0)
    sp.acquire("m", range(10), 10, now_ms=0)
    version = state.write(GROUP, TP, ShareSnapshot(0, (), EPOCH), -1)
    manager = SharePartitionManager(SimpleNamespace(partitions={}), ShareConfig(settings))  # type: ignore[arg-type]
    manager.store = state
    held = manager.held[(GROUP, TP)] = _Held(sp, EPOCH, version)
    return manager, held, state


def test_a_check_goes_out_beside_the_leaders_own_write_and_is_judged_by_its_outcome(zk_store):
    async def run() -> None:
        manager, held, _ = _loaded(zk_store)
        sp = held.partition
        # a write waiting its turn does not hold the check up (it used to wait for the lock)
        async with held.lock:
            assert await asyncio.wait_for(manager._current(GROUP, TP, sp), BOUND_S)
        # a write in flight: the check, sent behind it, sees its version and passes
        sp.acknowledge("m", [AckBatch(0, 4, (int(AcknowledgeType.ACCEPT),))])
        writing = asyncio.create_task(manager.persist(GROUP, TP))
        while held.writing is None:
            await asyncio.wait_for(asyncio.sleep(0), BOUND_S)
            assert not writing.done(), "the write finished before a check could go out beside it"
        checks = await asyncio.wait_for(asyncio.gather(*(manager._current(GROUP, TP, sp) for _ in range(4))),
                                        BOUND_S)
        assert checks == [True] * 4
        assert (await writing).name == "NONE"
        assert held.version == 1
        assert manager.held[(GROUP, TP)] is held
    asyncio.run(run())


def test_a_check_still_refuses_a_state_another_broker_rewrote(zk_store):
    async def run() -> None:
        manager, held, state = _loaded(zk_store)
        state.write(GROUP, TP, ShareSnapshot(10, (), EPOCH + 1), held.version)  # a successor acknowledged all
        assert not await asyncio.wait_for(manager._current(GROUP, TP, held.partition), BOUND_S)
        assert (GROUP, TP) not in manager.held
    asyncio.run(run())


def test_a_check_beside_a_write_that_gets_fenced_refuses(zk_store):
    async def run() -> None:
        manager, held, state = _loaded(zk_store)
        sp = held.partition
        state.write(GROUP, TP, ShareSnapshot(10, (), EPOCH + 1), held.version)  # not known to this leader yet
        sp.acknowledge("m", [AckBatch(0, 4, (int(AcknowledgeType.ACCEPT),))])
        writing = asyncio.create_task(manager.persist(GROUP, TP))
        while held.writing is None and not writing.done():
            await asyncio.wait_for(asyncio.sleep(0), BOUND_S)
        assert not await asyncio.wait_for(manager._current(GROUP, TP, sp), BOUND_S)
        assert (await writing).name == "FENCED_STATE_EPOCH"
        assert (GROUP, TP) not in manager.held
        snap, _ = state.read(GROUP, TP)
        assert snap is not None
        assert snap.start_offset == 10
    asyncio.run(run())


def test_a_check_refuses_once_the_controller_names_a_newer_leader_epoch(zk_store):
    async def run() -> None:
        manager, held, _ = _loaded(zk_store)
        _leader_epoch(zk_store, EPOCH + 1, version=0)
        assert not await asyncio.wait_for(manager._current(GROUP, TP, held.partition), BOUND_S)
        assert (GROUP, TP) not in manager.held
    asyncio.run(run())
