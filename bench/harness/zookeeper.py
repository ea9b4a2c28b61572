"""ZooKeeper for the controller benches: an embedded server (optionally with a larger
`jute.maxbuffer`, for admin znodes naming 50k partitions), a level-by-level pre-load of
topics with multi-ops, the controller seat, and the raw write limit the benches compare
against (the same number of fenced conditional writes of the partition state znodes, in
multi-ops of 100)."""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from praha.common import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
    new_topic_id,
)
from praha.zk import znodes as zn
from praha.zk.ops import CreateOp, SetDataOp, WriteOutcome
from praha.zk.server import EmbeddedZooKeeper
from praha.zk.store import ZkStore

from .constants import BROKERS, CONTROLLER_BROKER, RAW_WRITE_BATCH, RF


# ------------------------------------------------------------------------- ZooKeeper
class _BigBufferZooKeeper(EmbeddedZooKeeper):
    """EmbeddedZooKeeper with `-Djute.maxbuffer` raised: an admin znode naming 50k partitions
    (`/admin/preferred_replica_election`, `/admin/reassign_partitions`) is 2-3 MB, over
    ZooKeeper's 1 MB default (Kafka operators raise it the same way for large requests)."""

    jute_maxbuffer = 1 << 20

    def _command(self, java: str, classpath: str) -> list[str]:
        cmd = super()._command(java, classpath)
        return cmd[:1] + [f"-Djute.maxbuffer={self.jute_maxbuffer}"] + cmd[1:]


def start_zookeeper(data_dir: Path, heap_mb: int = 1536, jute_maxbuffer: int | None = None,
                    timeout: float = 60) -> EmbeddedZooKeeper:
    """A fresh embedded ZooKeeper on 127.0.0.1 (forceSync=no, short tick), as failover.py uses."""
    kw = dict(port=0, tick_time_ms=500, min_session_timeout_ms=1000, force_sync=False, heap_mb=heap_mb,
              die_with_parent=True)
    if jute_maxbuffer:
        zk = _BigBufferZooKeeper(data_dir, **kw)
        zk.jute_maxbuffer = jute_maxbuffer
    else:
        zk = EmbeddedZooKeeper(data_dir, **kw)
    zk.jit_options = ()  # the JVM's full JIT: benchmarks load ZooKeeper hard
    try:
        return zk.start(timeout=timeout)
    except BaseException:
        zk.stop()  # the caller never gets it to stop: a JVM that did not become ready is stopped here
        raise


def bench_store(zk: EmbeddedZooKeeper) -> ZkStore:
    return ZkStore(zk.connect_string, session_timeout_ms=30000, connection_timeout_ms=30000).start()


def topic_names(partitions: int, per_topic: int) -> list[tuple[str, int]]:
    out, left, i = [], partitions, 0
    while left > 0:
        n = min(per_topic, left)
        out.append((f"bench-{i:05d}", n))
        left -= n
        i += 1
    return out


def replicas_of(g: int) -> tuple[int, ...]:
    """RF 3 over brokers 1..6, leaders spread evenly (the first replica leads)."""
    return tuple((g + k) % BROKERS + 1 for k in range(RF))


Assign = Callable[[int], tuple[int, ...]]
#: (global partition index, replicas) -> (leader, isr)
LeaderOf = Callable[[int, tuple[int, ...]], tuple[int, tuple[int, ...]]]


def first_replica_leads(_g: int, r: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    return r[0], r


def preload(store: ZkStore, topics: list[tuple[str, int]], assign: Assign = replicas_of,
            leader_of: LeaderOf = first_replica_leads, controller_epoch: int = 1) -> list[str]:
    """Write every topic's znodes with multi-ops, level by level; returns the state paths.
    `assign(g)` gives the replicas of the g-th partition overall, `leader_of(g, replicas)`
    its (leader, ISR); leader epoch 0, written by `controller_epoch`."""
    store.ensure_persistent_paths()
    store.get_or_create_cluster_id()
    levels: list[list[CreateOp]] = [[], [], [], []]
    state_paths: list[str] = []
    g = 0
    for t, n in topics:
        parts = {}
        for p in range(n):
            r = assign(g)
            leader, isr = leader_of(g, r)
            g += 1
            parts[p] = ReplicaAssignment(r)
            state = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, 0, 0), controller_epoch)
            levels[2].append(CreateOp(zn.partition_path(t, p)))
            path = zn.tp_state_path(TopicPartition(t, p))
            levels[3].append(CreateOp(path, zn.encode_partition_state(state)))
            state_paths.append(path)
        levels[0].append(CreateOp(zn.config_topic_path(t), zn.encode_config({})))
        levels[0].append(CreateOp(zn.topic_path(t), zn.encode_topic_assignment(TopicAssignment(parts, new_topic_id()))))
        levels[1].append(CreateOp(zn.partitions_path(t)))
    for ops in levels:
        results = store.multi(ops)
        bad = [(op.path, r) for op, r in zip(ops, results) if not r.ok]
        if bad:
            raise RuntimeError(f"pre-load failed for {len(bad)} znodes, e.g. {bad[0]}")
    return state_paths


def partitions_of(topics: list[tuple[str, int]]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, n in topics for p in range(n)]


def reset_states(store: ZkStore, topics: list[tuple[str, int]], assign: Assign = replicas_of,
                 leader_of: LeaderOf = first_replica_leads, controller_epoch: int = 1) -> None:
    """Put every partition state back to its pre-loaded value (unconditional multi-ops), e.g.
    between trials; the controller epoch written is the current one (a new controller always
    has a higher one)."""
    ops = []
    g = 0
    for t, n in topics:
        for p in range(n):
            r = assign(g)
            leader, isr = leader_of(g, r)
            g += 1
            state = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, 0, 0), controller_epoch)
            ops.append(SetDataOp(zn.tp_state_path(TopicPartition(t, p)), zn.encode_partition_state(state)))
    results = store.multi(ops)
    bad = [r for r in results if not r.ok]
    if bad:
        raise RuntimeError(f"state reset failed for {len(bad)} znodes, e.g. {bad[0]}")


def current_controller_epoch(store: ZkStore) -> tuple[int, int]:
    got = store.get_controller_epoch()
    if got is None:
        return 0, -1
    return got


# ------------------------------------------------------------------------- the raw write limit
def raw_fenced_writes(store: ZkStore, tps: Sequence[TopicPartition], batch: int = RAW_WRITE_BATCH) -> float:
    """Seconds for len(tps) fenced conditional writes of those partitions' state znodes, in
    multi-ops of `batch` (each starting with the `/controller_epoch` version check), from the
    bench's own session: `ZkStore.update_partition_states`, the call the controller's
    read–decide–write ends with. Each znode gets its current content back (conditional on the
    version just read), so nothing a controller would see changes but the zkVersion. The read
    before is not timed; the encoding is (the controller encodes too)."""
    epoch, epoch_version = current_controller_epoch(store)
    states, bad = store.get_partition_states(tps)
    if bad or len(states) != len(tps):
        raise RuntimeError(f"raw limit: {len(tps) - len(states)} state znodes missing or corrupt")
    t = time.perf_counter()
    results = store.fenced_multi(
        [SetDataOp(zn.tp_state_path(tp), zn.encode_partition_state(states[tp]), states[tp].leader_and_isr.zk_version)
         for tp in tps],
        epoch_version, batch_size=batch)
    elapsed = time.perf_counter() - t
    failed = [r for r in results if r.outcome is not WriteOutcome.OK]
    if failed:
        raise RuntimeError(f"raw limit: {len(failed)} writes failed, e.g. {failed[0]}")
    return elapsed


def take_controller_seat(store: ZkStore, broker_id: int) -> int:
    """A stand-in wins the election (as a real broker would); returns the epoch."""
    for _ in range(50):
        if store.get_controller_id() is None:
            return store.register_controller_and_increment_epoch(broker_id)[0]
        time.sleep(0.2)
    raise RuntimeError("/controller still held by someone else")


def clear_broker(store: ZkStore, broker_id: int = CONTROLLER_BROKER) -> None:
    """After a real broker stopped: drop its ephemerals if its session lingers (after a SIGKILL)."""
    if store.get_controller_id() == broker_id:
        store.delete_controller()
    store.deregister_broker(broker_id)

