"""Topic deletion (docs/controller.md §8, Kafka's TopicDeletionManager).

A topic is *queued* when `/admin/delete_topics/<t>` appears (markers of unknown topics are
dropped; with `delete.topic.enable=false` every marker is dropped and nothing deleted).
It is *ineligible* while a replica of it sits on a dead broker or while a partition of it
is being reassigned. `resume()` walks the queue:
  all replicas DeletionSuccessful            → complete: unwatch, replicas → NonExistent,
                                               partitions → Offline → NonExistent, delete
                                               /brokers/topics/<t>, /config/topics/<t> and the
                                               marker, forget the topic;
  some replica DeletionStarted               → wait for StopReplica responses;
  some replica DeletionIneligible            → retry them (→ Offline);
  eligible (queued, not started, not ineligible) → UpdateMetadata marking its partitions
                                               as being deleted; replicas on dead brokers →
                                               DeletionIneligible (topic ineligible until they
                                               return); live replicas → Offline → DeletionStarted
                                               (StopReplica with delete).
A StopReplica answer moves each replica to DeletionSuccessful or DeletionIneligible and
resumes. A broker coming back, or a finished reassignment, resumes deletions waiting on it.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from praha.common import TopicPartition
from praha.controller.partition_state_machine import PartitionStateMachine
from praha.controller.replica_state_machine import ReplicaStateMachine
from praha.controller.services import ControllerServices
from praha.controller.states import PartitionAndReplica, PartitionState, ReplicaState
from praha.controller.topic_watches import TopicWatches
from praha.errors import ErrorCode

log = logging.getLogger(__name__)


class TopicDeletionManager:
    def __init__(self, services: ControllerServices, replica_sm: ReplicaStateMachine,
                 partition_sm: PartitionStateMachine, topic_watches: TopicWatches):
        self.ctx = services.context
        self.store = services.store
        self.request_batch = services.request_batch
        self.state_log = services.state_log
        self.controller_id = services.controller_id
        self.enabled = services.config.delete_topic_enable
        self.replica_sm = replica_sm
        self.partition_sm = partition_sm
        self.topic_watches = topic_watches

    # ---- start-up and new markers -------------------------------------------------------
    def init(self, queued: set[str], ineligible: set[str]) -> None:
        if not self.enabled:
            if queued:
                log.info("delete.topic.enable=false: dropping deletion markers of %s", sorted(queued))
                self.store.delete_topic_deletion_markers(sorted(queued), self.ctx.epoch_zk_version)
            return
        self.ctx.topics_to_be_deleted |= queued
        self.ctx.topics_ineligible_for_deletion |= ineligible & queued

    def on_markers_changed(self) -> None:
        """`/admin/delete_topics` children changed."""
        ctx = self.ctx
        marked = set(self.store.get_topics_marked_for_deletion())
        unknown = marked - ctx.all_topics
        if unknown:
            log.info("dropping deletion markers of unknown topics %s", sorted(unknown))
            self.store.delete_topic_deletion_markers(sorted(unknown), ctx.epoch_zk_version)
        marked -= unknown
        if not marked:
            return
        if not self.enabled:
            log.info("delete.topic.enable=false: dropping deletion markers of %s; topics untouched", sorted(marked))
            self.store.delete_topic_deletion_markers(sorted(marked), ctx.epoch_zk_version)
            return
        new = marked - ctx.topics_to_be_deleted
        reassigning = {tp.topic for tp in ctx.partitions_being_reassigned}
        self.mark_ineligible(new & reassigning, "a partition reassignment is in progress")
        if new:
            log.info("topics queued for deletion: %s", sorted(new))
            self.state_log.record("TopicDeletionQueued", self.controller_id, ctx.epoch, topics=sorted(new))
        ctx.topics_to_be_deleted |= new
        self.resume()

    # ---- state changes from elsewhere ---------------------------------------------------------
    def mark_ineligible(self, topics: Iterable[str], reason: str) -> None:
        topics = set(topics) & self.ctx.topics_to_be_deleted
        if topics:
            self.ctx.topics_ineligible_for_deletion |= topics
            log.info("deletion of %s waits: %s", sorted(topics), reason)

    def resume_for_topics(self, topics: Iterable[str]) -> None:
        topics = set(topics) & self.ctx.topics_to_be_deleted
        if topics:
            self.ctx.topics_ineligible_for_deletion -= topics
            self.resume()

    def fail_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        replicas = [pr for pr in replicas if pr.partition.topic in self.ctx.topics_to_be_deleted]
        if not replicas:
            return
        topics = {pr.partition.topic for pr in replicas}
        self.mark_ineligible(topics, "a replica could not be deleted (broker down or error)")
        rsm = self.replica_sm
        not_yet_offline = [
            pr for pr in replicas if self.ctx.replica_states.get(pr) in (ReplicaState.ONLINE, ReplicaState.NEW)
        ]
        rsm.handle_state_changes(not_yet_offline, ReplicaState.OFFLINE)
        rsm.handle_state_changes(
            [pr for pr in replicas if self.ctx.replica_states.get(pr) is not ReplicaState.DELETION_INELIGIBLE],
            ReplicaState.DELETION_INELIGIBLE,
        )
        self.resume()

    def complete_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        done = [pr for pr in replicas if self.ctx.replica_states.get(pr) is ReplicaState.DELETION_STARTED]
        self.replica_sm.handle_state_changes(done, ReplicaState.DELETION_SUCCESSFUL)
        self.resume()

    def on_stop_replica_response(self, broker_id: int, error_code: int,
                                 partition_errors: Mapping[TopicPartition, int]) -> None:
        if error_code != ErrorCode.NONE:
            failed = set(partition_errors)
        else:
            failed = {tp for tp, code in partition_errors.items() if code != ErrorCode.NONE}
        if failed:
            self.fail_replica_deletion(PartitionAndReplica(tp, broker_id) for tp in failed)
        ok = set(partition_errors) - failed
        if ok:
            self.complete_replica_deletion(PartitionAndReplica(tp, broker_id) for tp in ok)

    # ---- the walk -------------------------------------------------------------------------------
    def eligible(self, topic: str) -> bool:
        ctx = self.ctx
        return (
            topic in ctx.topics_to_be_deleted
            and topic not in ctx.topics_with_deletion_started
            and topic not in ctx.topics_ineligible_for_deletion
        )

    def resume(self) -> None:
        ctx = self.ctx
        for topic in sorted(ctx.topics_to_be_deleted):
            if topic not in ctx.all_topics:
                ctx.topics_to_be_deleted.discard(topic)
                continue
            if ctx.are_all_replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL):
                self.complete(topic)
            elif ctx.is_any_replica_in_state(topic, ReplicaState.DELETION_STARTED):
                pass  # StopReplica responses pending
            elif ctx.is_any_replica_in_state(topic, ReplicaState.DELETION_INELIGIBLE):
                self.retry_ineligible(topic)
            if self.eligible(topic):
                self.start(topic)

    def retry_ineligible(self, topic: str) -> None:
        retry = [
            pr for pr in self.ctx.replicas_in_state(topic, ReplicaState.DELETION_INELIGIBLE)
            if pr.replica in self.ctx.live_broker_ids
        ]
        if retry:
            self.ctx.topics_ineligible_for_deletion.discard(topic)
            self.ctx.topics_with_deletion_started.discard(topic)
            self.replica_sm.handle_state_changes(retry, ReplicaState.OFFLINE)

    def start(self, topic: str) -> None:
        """Tell every broker the partitions are going away; stop and delete live replicas."""
        ctx = self.ctx
        partitions = ctx.partitions_for_topic(topic)
        ctx.topics_with_deletion_started.add(topic)
        self.request_batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, partitions)
        replicas = ctx.replicas_for_topic(topic)
        done = ctx.replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL)
        dead = {pr for pr in replicas if pr.replica not in ctx.live_or_shutting_down_broker_ids} - done
        alive = replicas - dead - done
        rsm = self.replica_sm
        rsm.handle_state_changes(
            sorted(pr for pr in dead if ctx.replica_states.get(pr) is not ReplicaState.DELETION_INELIGIBLE),
            ReplicaState.DELETION_INELIGIBLE,
        )
        rsm.handle_state_changes(sorted(alive), ReplicaState.OFFLINE)
        rsm.handle_state_changes(sorted(alive), ReplicaState.DELETION_STARTED)
        if dead:
            self.mark_ineligible({topic}, f"replicas on dead brokers {sorted({pr.replica for pr in dead})}")
        log.info("deleting topic %s: %d replicas stopping, %d on dead brokers", topic, len(alive), len(dead))
        self.state_log.record(
            "TopicDeletionStarted", self.controller_id, ctx.epoch, topic=topic,
            replicas_stopping=len(alive), waiting_for_brokers=sorted({pr.replica for pr in dead}),
        )

    def complete(self, topic: str) -> None:
        ctx = self.ctx
        last_epoch = max((li.leader_and_isr.leader_epoch for tp, li in ctx.leadership.items() if tp.topic == topic),
                         default=None)
        self.topic_watches.unwatch(topic)
        rsm, psm = self.replica_sm, self.partition_sm
        rsm.handle_state_changes(sorted(ctx.replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL)),
                                 ReplicaState.NON_EXISTENT)
        partitions = ctx.partitions_for_topic(topic)
        psm.handle_state_changes(partitions, PartitionState.OFFLINE)
        psm.handle_state_changes(partitions, PartitionState.NON_EXISTENT)
        ctx.topics_to_be_deleted.discard(topic)
        ctx.topics_with_deletion_started.discard(topic)
        ctx.topics_ineligible_for_deletion.discard(topic)
        self.store.delete_topic_znodes([topic], ctx.epoch_zk_version,
                                       {topic: last_epoch} if last_epoch is not None else None)
        ctx.remove_topic(topic)
        ctx.update_offline_partition_count()
        log.info("topic %s deleted (%d partitions)", topic, len(partitions))
        self.state_log.record("TopicDeleted", self.controller_id, ctx.epoch, topic=topic, partitions=len(partitions))
