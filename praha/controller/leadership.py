"""Read–decide–write of partition state znodes, shared by elections and ISR removal.

Steps, for a set of partitions: read their state znodes (multi-read: the partition leader
may have changed the ISR since our cache was filled); refuse the whole event if a znode
was written by a newer controller epoch (we were deposed); let `decide` compute each new
LeaderAndIsr (as each answer arrives: the reads are streamed); once every read is
in, write them as conditional updates grouped in fenced multi-ops; partitions that hit
BAD_VERSION (the leader changed the ISR meanwhile) go round again, a bounded number of
times. Successful results are written into the context.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from praha.common import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from praha.controller.context import ControllerContext
from praha.controller.store_api import PartitionStateStore
from praha.errors import ControllerMovedError, ZNodeDecodeError
from praha.zk.ops import WriteOutcome

log = logging.getLogger(__name__)

MAX_ROUNDS = 5


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
    out = UpdateOutcome()
    pending = list(partitions)
    epoch = context.epoch
    leadership = context.leadership
    ok, bad_version = WriteOutcome.OK, WriteOutcome.BAD_VERSION
    # Each partition is read, checked and decided on; the writes start once every read is
    # in, so a znode written by a newer controller stops the event before any write.
    # The reads are streamed: each partition is decided on as its answer arrives, while
    # the later reads are in flight (the same decisions, in the same order, as after one
    # read of all: `decide` only looks at the partition it is given). One round's
    # decisions are collected in `writes`, `failed`, `skipped`, emptied by `restart`.
    writes: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
    failed: dict[TopicPartition, str] = {}
    skipped: set[TopicPartition] = set()

    def one(tp: TopicPartition, cur: LeaderIsrAndControllerEpoch | None, error: ZNodeDecodeError | None) -> None:
        if cur is None:
            failed[tp] = "corrupt state znode" if error is not None else "no state znode"
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

    def restart() -> None:
        writes.clear()
        failed.clear()
        skipped.clear()

    for _round in range(MAX_ROUNDS):
        if not pending:
            break
        restart()
        unique = list(dict.fromkeys(pending))  # a repeated partition gets the same decision again
        store.stream_partition_states(unique, one, restart)
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
                version = li.zk_version + 1 if res.stat_version is None else res.stat_version
                done = LeaderIsrAndControllerEpoch(LeaderAndIsr(li.leader, li.isr, li.leader_epoch, version), epoch)
                leadership[tp] = done
                updated[tp] = done
            elif outcome is bad_version:
                pending.append(tp)
            else:
                out.failed[tp] = f"state znode write failed: {outcome.name}"
    for tp in pending:
        out.failed[tp] = f"state znode kept changing under us ({MAX_ROUNDS} rounds)"
    return out
