"""Read–decide–write of partition state znodes, shared by elections and ISR removal.

Steps, for a set of partitions: read their state znodes (pipelined: the partition leader
may have changed the ISR since our cache was filled); refuse the whole event if a znode
was written by a newer controller epoch (we were deposed); let `decide` compute each new
LeaderAndIsr; write them as conditional updates grouped in fenced multi-ops; partitions
that hit BAD_VERSION (the leader changed the ISR meanwhile) go round again, a bounded
number of times. Successful results are written into the context.
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
    for _round in range(MAX_ROUNDS):
        if not pending:
            break
        states, corrupt = store.get_partition_states(pending)
        writes: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp in pending:
            cur = states.get(tp)
            if cur is None:
                out.failed[tp] = "corrupt state znode" if tp in corrupt else "no state znode"
                continue
            if cur.controller_epoch > context.epoch:
                raise ControllerMovedError(
                    f"state of {tp} was written by controller epoch {cur.controller_epoch} > ours {context.epoch}"
                )
            context.leadership[tp] = cur
            decision = decide(tp, cur.leader_and_isr)
            if decision is None:
                out.skipped.add(tp)
            elif isinstance(decision, str):
                out.failed[tp] = decision
            else:
                writes[tp] = LeaderIsrAndControllerEpoch(decision, context.epoch)
        if not writes:
            pending = []
            break
        results = store.update_partition_states(writes, context.epoch_zk_version)
        pending = []
        for tp, res in results.items():
            if res.outcome is WriteOutcome.OK:
                li = writes[tp].leader_and_isr
                done = LeaderIsrAndControllerEpoch(
                    LeaderAndIsr(li.leader, li.isr, li.leader_epoch, res.stat_version), context.epoch
                )
                context.leadership[tp] = done
                out.updated[tp] = done
            elif res.outcome is WriteOutcome.BAD_VERSION:
                pending.append(tp)
            else:
                out.failed[tp] = f"state znode write failed: {res.outcome.name}"
    for tp in pending:
        out.failed[tp] = f"state znode kept changing under us ({MAX_ROUNDS} rounds)"
    return out
