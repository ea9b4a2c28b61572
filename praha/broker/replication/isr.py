"""ISR upkeep on the partitions this broker leads (Kafka's `Partition.maybeShrinkIsr` /
`maybeExpandIsr` and the ZooKeeper-mode ISR change notifications of `ReplicaManager`).

- every `replica.lag.time.max.ms`/2 (the replica manager's timer) each led partition drops
  ISR members that have not caught up (`maybe_shrink`); a follower fetch that catches up
  adds it back (`maybe_expand`). Each change is one conditional write of the partition
  state znode (same leader epoch, our last zkVersion), on the replica manager's ZooKeeper
  thread; BAD_VERSION → re-read (maybe it did land), else no more ISR changes until the
  next LeaderAndIsr, as Kafka does;
- changed partitions are collected and written as one `/isr_change_notification`
  sequential node per `isr.change.notification.interval.ms`, so the controller
  propagates the new ISR with UpdateMetadata.
Decisions (who is out of sync) are the partition's (`Partition.out_of_sync_replicas`);
this module does the writes and their bookkeeping, on the network loop.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Protocol

from praha.broker.replication.partition import Partition
from praha.common import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition, now_ms

if TYPE_CHECKING:
    from praha.zk.store import ZkStore

log = logging.getLogger(__name__)


class IsrCounters(Protocol):
    """The replica manager's figures this module moves."""

    isr_shrinks: int
    isr_expands: int
    isr_write_failures: int
    isr_notifications: int


class IsrHost(Protocol):
    """What ISR upkeep reads of the replica manager, at the moment it needs it (the store
    and the loop are set after construction)."""

    broker_id: int
    partitions: dict[TopicPartition, Partition]
    store: ZkStore | None
    loop: asyncio.AbstractEventLoop | None
    lag_time_max_ms: int
    isr_notification_interval_ms: int

    @property
    def stats(self) -> IsrCounters: ...


class IsrUpkeep:
    """The ISR writes of one broker's led partitions and their change notifications."""

    def __init__(self, host: IsrHost, zk: Executor, on_change: Callable[[TopicPartition], None]):
        self.host = host
        #: the replica manager's single ZooKeeper writer thread: ISR writes stay in order
        self._zk = zk
        #: leadership, ISR or high watermark changed: parked requests are re-checked
        self._on_change = on_change
        self._changed: set[TopicPartition] = set()
        self._flush_scheduled = False

    def maybe_shrink(self) -> None:
        """Drop the replicas that have not caught up within `replica.lag.time.max.ms`."""
        host = self.host
        now = now_ms()
        for p in list(host.partitions.values()):
            if not p.is_leader or p.pending_isr is not None or p.isr_frozen or len(p.isr) <= 1:
                continue
            out = p.out_of_sync_replicas(now, host.lag_time_max_ms)
            if out:
                new_isr = tuple(r for r in p.isr if r not in out)
                self._write(p, new_isr, expand=False)

    def maybe_expand(self, p: Partition, replica_id: int) -> None:
        """A follower caught up (`Partition.update_follower` said it may join): add it back."""
        if p.pending_isr is None and not p.isr_frozen:
            broker_id = self.host.broker_id
            new_isr = tuple(sorted(set(p.isr) | {replica_id}, key=lambda r: (r != broker_id, r)))
            self._write(p, new_isr, expand=True)

    def _write(self, p: Partition, new_isr: tuple[int, ...], expand: bool) -> None:
        """Conditional write of the partition state znode, off the loop."""
        host = self.host
        if host.store is None or host.loop is None:
            return
        p.pending_isr = new_isr
        epoch = p.leader_epoch
        broker_id = host.broker_id
        state = LeaderIsrAndControllerEpoch(LeaderAndIsr(broker_id, new_isr, epoch, p.zk_version),
                                            p.controller_epoch)
        store, version, tp = host.store, p.zk_version, p.tp

        def write() -> tuple[bool, int]:
            r = store.conditional_update_partition_state(tp, state, version)
            if r.ok:
                return True, r.stat_version if r.stat_version is not None else version + 1
            # maybe our write landed but the answer was lost: compare what is there
            got, _bad = store.get_partition_states([tp])
            cur = got.get(tp)
            if cur is not None:
                li = cur.leader_and_isr
                if (li.leader, li.leader_epoch, tuple(li.isr)) == (broker_id, epoch, new_isr):
                    return True, li.zk_version
            return False, -1

        fut = host.loop.run_in_executor(self._zk, write)
        fut.add_done_callback(lambda f: self._written(p, epoch, new_isr, expand, f))

    def _written(self, p: Partition, epoch: int, new_isr: tuple[int, ...], expand: bool,
                 fut: asyncio.Future[tuple[bool, int]]) -> None:
        host = self.host
        if host.partitions.get(p.tp) is not p or p.leader_epoch != epoch or not p.is_leader:
            return  # a LeaderAndIsr replaced this state meanwhile
        p.pending_isr = None
        stats = host.stats
        try:
            ok, version = fut.result()
        except Exception as e:  # noqa: BLE001 - ZooKeeper away: retry at the next check
            stats.isr_write_failures += 1
            log.warning("%s: ISR change to %s not written: %s", p.tp, list(new_isr), e)
            return
        if not ok:
            stats.isr_write_failures += 1
            p.isr_frozen = True
            log.warning("%s: ISR change to %s refused (zkVersion %d is stale); waiting for the controller",
                        p.tp, list(new_isr), p.zk_version)
            return
        old = p.isr
        p.isr = new_isr
        p.zk_version = version
        if expand:
            stats.isr_expands += 1
        else:
            stats.isr_shrinks += 1
        log.info("%s: ISR %s -> %s (leader epoch %d, zkVersion %d)", p.tp, list(old), list(new_isr), epoch, version)
        p.maybe_increment_high_watermark()
        self._on_change(p.tp)
        self._record_change(p.tp)

    def _record_change(self, tp: TopicPartition) -> None:
        self._changed.add(tp)
        loop = self.host.loop
        if not self._flush_scheduled and loop is not None:
            self._flush_scheduled = True
            loop.call_later(self.host.isr_notification_interval_ms / 1000.0, self._flush)

    def flush_pending(self) -> None:
        """At shutdown: the changes not yet notified, now."""
        if self._changed and self.host.store is not None:
            self._flush()

    def _flush(self) -> None:
        """One sequential notification for every ISR change since the last one."""
        self._flush_scheduled = False
        tps, self._changed = self._changed, set()
        host = self.host
        if not tps or host.store is None or host.loop is None:
            return
        store = host.store

        def write() -> None:
            store.create_isr_change_notification(sorted(tps))

        def done(f: asyncio.Future[None]) -> None:
            try:
                f.result()
                host.stats.isr_notifications += 1
            except Exception as e:  # noqa: BLE001 - put them back for the next attempt
                log.warning("ISR change notification for %d partitions failed: %s", len(tps), e)
                for tp in tps:
                    self._record_change(tp)

        host.loop.run_in_executor(self._zk, write).add_done_callback(done)
