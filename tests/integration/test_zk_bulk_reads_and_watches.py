"""ZkStore's fast paths against a real ZooKeeper (the session's embedded server):
`watch_data_many` arms watches that fire like `watch_data`'s; bulk decoding while reading
and the streamed partition-state reads return what the reference would; the cached
`/admin/reassign_partitions` content is never stale. (Moved from tests/unit: they need the
`zk_store` fixture.)"""
from __future__ import annotations

import queue

import pytest

from praha.common import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from praha.zk import znodes as zn
from praha.zk.watches import WatchEventType


@pytest.mark.integration
@pytest.mark.parametrize("wait", [True, False])
def test_watch_data_many_arms_every_watch_before_returning(zk_store, wait):
    """wait=False (the failover's topic watches, queued before the partition states are read):
    once `wait_armed` returns, the same holds."""
    events: queue.Queue = queue.Queue()
    paths = [f"/many/{i}" for i in range(50)]
    zk_store.client.ensure_path("/many/0")
    handles = zk_store.watch_data_many(paths, lambda path: (lambda e: events.put((path, e.type))), group="g",
                                       wait=wait)
    if not wait:
        zk_store.wait_armed(handles.values())
    assert list(handles) == paths
    assert all(h.active for h in handles.values())
    # armed server-side on return: a change right away is seen, for present and absent nodes
    zk_store.client.set("/many/0", b"x")
    zk_store.client.create("/many/7", b"")
    got = {events.get(timeout=5), events.get(timeout=5)}
    assert got == {("/many/0", WatchEventType.CHANGED), ("/many/7", WatchEventType.CREATED)}
    # they re-arm like watch_data's, and cancel by group
    zk_store.client.set("/many/7", b"y")
    assert events.get(timeout=5) == ("/many/7", WatchEventType.CHANGED)
    assert zk_store.cancel_watches("g") == 50
    zk_store.client.set("/many/0", b"z")
    with pytest.raises(queue.Empty):
        events.get(timeout=0.5)


@pytest.mark.integration
@pytest.mark.parametrize("multi_read", [True, False])
def test_bulk_decoding_while_reading_matches_the_reference(zk_store, multi_read):
    zk_store.multi_read_supported = multi_read and zk_store.multi_read_supported
    tps = [TopicPartition("t", p) for p in range(1203)]  # several multi-read batches, a partial last one
    zk_store.client.ensure_path("/brokers/topics/t/partitions")

    def absent(tp: TopicPartition) -> bool:  # the first batch of 500 has every znode (decoded as one)
        return tp.partition % 100 == 5 and tp.partition >= 500

    for tp in tps:
        if absent(tp):
            continue  # absent: in neither dict
        data = (b"garbage" if tp.partition % 100 == 9 else
                zn.encode_partition_state(LeaderIsrAndControllerEpoch(LeaderAndIsr(1, (1, 2), tp.partition, 0), 3)))
        zk_store.client.create(zn.tp_state_path(tp), data, makepath=True)
    mzxids: dict[TopicPartition, int] = {}
    ok, bad = zk_store.get_partition_states(tps, mzxids=mzxids)
    assert list(ok) == [tp for tp in tps if not absent(tp) and tp.partition % 100 != 9]
    assert set(bad) == {tp for tp in tps if tp.partition % 100 == 9}
    raw = zk_store.get_data_bulk([zn.tp_state_path(tp) for tp in tps], use_multi_read=multi_read)
    for tp, state in ok.items():
        data, stat = raw[zn.tp_state_path(tp)]
        assert state == zn.decode_partition_state(data, stat.version)
    assert mzxids == {tp: raw[zn.tp_state_path(tp)][1].mzxid for tp in tps if not absent(tp)}


@pytest.mark.integration
def test_streamed_partition_states_are_get_partition_states(zk_store):
    tps = [TopicPartition("t", p) for p in range(1203)]
    zk_store.client.ensure_path("/brokers/topics/t/partitions")
    for tp in tps:
        if tp.partition % 100 == 5:
            continue
        data = (b"garbage" if tp.partition % 100 == 9 else
                zn.encode_partition_state(LeaderIsrAndControllerEpoch(LeaderAndIsr(1, (1, 2), tp.partition, 0), 3)))
        zk_store.client.create(zn.tp_state_path(tp), data, makepath=True)
    ok, bad = zk_store.get_partition_states(tps)
    seen = []
    zk_store.stream_partition_states(tps, lambda tp, s, e: seen.append((tp, s, type(e))), seen.clear)
    assert [tp for tp, _, _ in seen] == tps  # in order, every one
    assert {tp: s for tp, s, _ in seen if s is not None} == ok
    assert {tp for tp, s, e in seen if e is not type(None)} == set(bad)
    assert {tp for tp, s, e in seen if s is None and e is type(None)} == {tp for tp in tps if tp.partition % 100 == 5}


@pytest.mark.integration
def test_cached_reassignment_content_follows_every_change_of_the_znode(zk_store):
    zk_store.client.ensure_path(zn.CONTROLLER_EPOCH_PATH)
    version = zk_store.client.exists(zn.CONTROLLER_EPOCH_PATH).version
    a, b, c = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
    zk_store.create_reassignment({a: (1, 2), b: (2, 3), c: (3,)})
    assert zk_store.get_reassignments() == {a: (1, 2), b: (2, 3), c: (3,)}
    zk_store.set_reassignments({a: (1, 2), c: (3,)}, version)  # the controller drops b
    assert zk_store.get_data(zn.REASSIGN_PARTITIONS_PATH)[0] == zn.encode_reassignment({a: (1, 2), c: (3,)})
    assert zk_store.get_reassignments() == {a: (1, 2), c: (3,)}
    zk_store.client.set(zn.REASSIGN_PARTITIONS_PATH, zn.encode_reassignment({a: (9,)}))  # someone else
    assert zk_store.get_reassignments() == {a: (9,)}
    zk_store.set_reassignments({a: (9,), b: (4,)}, version)
    zk_store.client.delete(zn.REASSIGN_PARTITIONS_PATH)
    assert zk_store.get_reassignments() == {}
    zk_store.create_reassignment({c: (5,)})  # recreated: same version number as before, new czxid
    assert zk_store.get_reassignments() == {c: (5,)}
    zk_store.set_reassignments({}, version)
    assert zk_store.get_data(zn.REASSIGN_PARTITIONS_PATH) is None
