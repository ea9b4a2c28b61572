"""Ids for topics whose znode has none (written by an older tool, or straight into
ZooKeeper): the controller gives each a fresh id when it first sees the topic, on creation
or at failover, as Kafka's controller does since 2.8. Clients that address topics by id
(Metadata v10+, Fetch v13+) then find every topic, and a topic deleted and created again is
told apart from its predecessor."""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from praha.common import TopicAssignment, new_topic_id
from praha.controller.context import ControllerContext
from praha.controller.store_api import ControllerStore
from praha.zk.ops import WriteOutcome

log = logging.getLogger(__name__)


def without_ids(assignments: Mapping[str, TopicAssignment],
                new_id: Callable[[], str] = new_topic_id) -> dict[str, TopicAssignment]:
    """The topics that have no id, each with a new one (their partitions as they are)."""
    return {t: TopicAssignment(dict(ta.partitions), new_id()) for t, ta in sorted(assignments.items())
            if not ta.topic_id}


def assign_missing_ids(store: ControllerStore, ctx: ControllerContext,
                       assignments: Mapping[str, TopicAssignment]) -> int:
    """Write an id into each id-less topic's znode (fenced by the controller epoch; like
    Kafka's, the rewrite is unconditional) and keep it in the context; returns how many."""
    fresh = without_ids(assignments)
    if not fresh:
        return 0
    written = store.set_topic_assignments(fresh, ctx.epoch_zk_version)
    done = [t for t, r in written.items() if r.outcome is WriteOutcome.OK]
    for t in done:
        ctx.topic_ids[t] = str(fresh[t].topic_id)
    log.info("gave %d of %d topics without an id a new one", len(done), len(fresh))
    return len(done)
