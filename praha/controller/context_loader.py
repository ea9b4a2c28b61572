"""Loading the controller context from ZooKeeper at failover, with pipelined reads.

Steps (each one timed for the ControllerFailover line through `lap`):
  brokers           the registered brokers (a registration that does not decode is ignored);
  assignments       every topic's assignment znode; partitions with adding/removing replicas
                    are being reassigned;
  configs           topic config overrides (a corrupt one: broker defaults apply);
  states            every partition's state znode, with its last-modified zxid: a partition
                    whose leader registered after that write is *stale* (its leader restarted
                    unseen) and gets a new election (`stale_leaderships`).
Corrupt znodes are logged and left out; they never stop a failover.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from praha.common import BrokerInfo, LeaderIsrAndControllerEpoch, TopicPartition
from praha.controller.context import ControllerContext
from praha.controller.store_api import ControllerStore
from praha.controller.topic_ids import assign_missing_ids

log = logging.getLogger(__name__)

#: `lap(name)`: the step called `name` is done (the failover records how long each took)
Lap = Callable[[str], None]


def load_context(store: ControllerStore, ctx: ControllerContext, lap: Lap,
                 on_topics: Callable[[list[str]], None] | None = None) -> None:
    """Fill `ctx` from ZooKeeper; `on_topics(topics)` is called once the topics are known,
    before their configs and partition states are read (the failover queues its topic watches
    there, as Kafka registers them before reading the states)."""
    brokers, corrupt = store.get_live_brokers()
    for bid, err in corrupt.items():
        log.error("ignoring broker %d: %s", bid, err)
    ctx.live_brokers = dict(brokers)
    lap("brokers")
    topics = store.get_all_topics()
    assignments, bad = store.get_topic_assignments(topics)
    for t, err in bad.items():
        log.error("ignoring topic %s: %s", t, err)
    lap("assignments_read")
    ctx.all_topics = set(assignments)
    for t, ta in assignments.items():
        ctx.assignments[t] = dict(ta.partitions)
        if ta.topic_id:
            ctx.topic_ids[t] = ta.topic_id
        for p, a in ta.partitions.items():
            if a.is_being_reassigned:
                ctx.partitions_being_reassigned.add(TopicPartition(t, p))
    assign_missing_ids(store, ctx, assignments)
    if on_topics is not None:
        on_topics(sorted(ctx.all_topics))
    lap("assignments")
    ctx.topic_configs, bad_configs = store.get_topic_configs(sorted(ctx.all_topics))
    for t, err in bad_configs.items():
        log.error("topic %s has a corrupt config znode, broker defaults apply: %s", t, err)
    lap("configs")
    mzxids: dict[TopicPartition, int] = {}
    states, bad_states = store.get_partition_states(ctx.all_partitions(), mzxids=mzxids)
    for tp, err in bad_states.items():
        log.error("partition %s has a corrupt state znode (%s); it will be treated as having no leader", tp, err)
    ctx.leadership = dict(states)
    ctx.stale_leadership = stale_leaderships(states, mzxids, ctx.live_brokers)
    if ctx.stale_leadership:
        log.warning(
            "%d partitions are led by a broker that restarted since it was elected (unseen bounce); "
            "they get a new election", len(ctx.stale_leadership),
        )
    lap("states")


def stale_leaderships(
    states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
    mzxids: Mapping[TopicPartition, int],
    live_brokers: Mapping[int, BrokerInfo],
) -> set[TopicPartition]:
    """Partitions whose leader registered (its broker epoch, the czxid of its znode) after the
    partition's state znode was last written: the leader elected there was an earlier
    incarnation of that broker, which restarted without any controller seeing it. Treating
    them as offline gives them a new leader epoch, as if the bounce had been seen."""
    out = set()
    for tp, st in states.items():
        b = live_brokers.get(st.leader_and_isr.leader)
        if b is not None and tp in mzxids and b.epoch > mzxids[tp]:
            out.add(tp)
    return out
