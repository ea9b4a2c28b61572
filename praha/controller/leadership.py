"""Read–decide–write of partition state znodes, shared by elections and ISR removal.

Steps, for a set of partitions: read their state znodes (multi-read: the partition leader
may have changed the ISR since our cache was filled); refuse the whole event if a znode
was written by a newer controller epoch (we were deposed); let `decide` compute each new
LeaderAndIsr (as each answer arrives, when the store streams its reads); once every read is
in, write them as conditional updates grouped in fenced multi-ops; partitions that hit
BAD_VERSION (the leader changed the ISR meanwhile) go round again, a bounded number of
times. Successful results are written into the context.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol

from praha.common import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from praha.controller.context import ControllerContext
from praha.errors import ControllerMovedError

log = logging.getLogger(__name__)

MAX_ROUNDS = 5


class PartitionStateStore(Protocol):
    """The narrow ZooKeeper interface the state machines need (ZkStore satisfies it)."""

    def get_partition_states(self, tps) -> tuple[dict, dict]: ...

    def create_partition_states(self, states: dict, epoch_zk_version: int) -> dict: ...

    def update_partition_states(self, states: dict, epoch_zk_version: int) -> dict: ...


@dataclass
class UpdateOutcome:
    updated: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    #: partition → why it was not updated (decide said no, missing znode, retries exhausted)
    failed: dict[TopicPartition, str] = field(default_factory=dict)
    #: partitions `decide` chose to leave alone
    skipped: set[TopicPartition] = field(default_factory=set)


#: decide(tp, current) -> new LeaderAndIsr, None to skip, or a str reason to fail
Decide = Callable[[TopicPartition, LeaderAndIsr], "LeaderAndIsr | None | str"]


def update_leader_and_isr(
    store: PartitionStateStore, context: ControllerContext, partitions: Iterable[TopicPartition], decide: Decide
) -> UpdateOutcome:
    from praha.zk.store import WriteOutcome

    out = UpdateOutcome()
    pending = list(partitions)
    epoch = context.epoch
    leadership = context.leadership
    stream = getattr(store, "stream_partition_states", None)
    ok, bad_version = WriteOutcome.OK, WriteOutcome.BAD_VERSION
    for _round in range(MAX_ROUNDS):
        if not pending:
            break
        # Each partition is read, checked and decided on; the writes start once every read is
        # in, so a znode written by a newer controller stops the event before any write.
        # With a store that streams its reads, each partition is decided on as its answer
        # arrives, while the later reads are in flight (the same decisions, in the same order:
        # `decide` only looks at the partition it is given).
        writes: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        failed: dict[TopicPartition, str] = {}
        skipped: set[TopicPartition] = set()

        def one(tp: TopicPartition, cur: LeaderIsrAndControllerEpoch | None, corrupt: bool) -> None:
            if cur is None:
                failed[tp] = "corrupt state znode" if corrupt else "no state znode"
                return
            if cur.controller_epoch > epoch:
                raise ControllerMovedError(
                    f"state of {tp} was written by controller epoch {cur.controller_epoch} > ours {epoch}"
                )
            leadership[tp] = cur
            decision = decide(tp, cur.leader_and_isr)
            if decision is None:
                skipped.add(tp)
            elif isinstance(decision, str):
                failed[tp] = decision
            else:
                writes[tp] = LeaderIsrAndControllerEpoch(decision, epoch)

        if stream is not None:
            unique = list(dict.fromkeys(pending))  # a repeated partition gets the same decision again

            def restart() -> None:
                writes.clear()
                failed.clear()
                skipped.clear()

            stream(unique, lambda tp, cur, err: one(tp, cur, err is not None), restart)
        else:
            states, corrupt = store.get_partition_states(pending)
            for tp in pending:
                one(tp, states.get(tp), tp in corrupt)
        out.failed.update(failed)
        out.skipped |= skipped
        if not writes:
            pending = []
            break
        results = store.update_partition_states(writes, context.epoch_zk_version)
        pending = []
        updated = out.updated
        for tp, res in results.items():
            outcome = res.outcome
            if outcome is ok:
                li = writes[tp].leader_and_isr
                done = LeaderIsrAndControllerEpoch(LeaderAndIsr(li.leader, li.isr, li.leader_epoch, res.stat_version),
                                                   epoch)
                leadership[tp] = done
                updated[tp] = done
            elif outcome is bad_version:
                pending.append(tp)
            else:
                out.failed[tp] = f"state znode write failed: {outcome.name}"
    for tp in pending:
        out.failed[tp] = f"state znode kept changing under us ({MAX_ROUNDS} rounds)"
    return out
