"""Applying a consumer group's records to its state: the only way the state changes.

The heartbeat decisions produce records and the coordinator replays them once written;
loading a `__consumer_offsets` partition replays the same records in log order. So what a
failed-over coordinator rebuilds is, by construction, what the old one served.
"""
from __future__ import annotations

from collections.abc import Iterable

from praha.coordinator.group.consumer.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerMember,
)
from praha.coordinator.group.consumer.records import (
    CurrentAssignmentKey,
    CurrentAssignmentValue,
    GroupEpochKey,
    GroupEpochValue,
    MemberMetadataKey,
    MemberMetadataValue,
    PartitionMetadataKey,
    PartitionMetadataValue,
    Record,
    RegexKey,
    RegexValue,
    TargetEpochKey,
    TargetEpochValue,
    TargetMemberKey,
    TargetMemberValue,
)


def replay(groups: dict[str, ConsumerGroup], records: Iterable[Record]) -> None:
    for r in records:
        _replay_one(groups, r)


def _group(groups: dict[str, ConsumerGroup], group_id: str) -> ConsumerGroup:
    g = groups.get(group_id)
    if g is None:
        g = groups[group_id] = ConsumerGroup(group_id)
    return g


def _replay_one(groups: dict[str, ConsumerGroup], r: Record) -> None:
    key, value = r.key, r.value
    if value is None and isinstance(key, GroupEpochKey):
        g = groups.pop(key.group, None)
        if g is not None:
            g.dead = True
        return
    if value is None and key.group not in groups:
        return  # a tombstone for a group already gone
    g = _group(groups, key.group)
    if isinstance(key, GroupEpochKey):
        assert isinstance(value, GroupEpochValue)
        g.group_epoch = value.epoch
    elif isinstance(key, TargetEpochKey):
        g.assignment_epoch = value.epoch if isinstance(value, TargetEpochValue) else -1
    elif isinstance(key, PartitionMetadataKey):
        g.subscription_metadata = ({t.name: t for t in value.topics}
                                   if isinstance(value, PartitionMetadataValue) else {})
    elif isinstance(key, RegexKey):
        if isinstance(value, RegexValue):
            g.resolved_regexes[key.regex] = frozenset(value.topics)
        else:
            g.resolved_regexes.pop(key.regex, None)
    elif isinstance(key, TargetMemberKey):
        if isinstance(value, TargetMemberValue):
            g.target[key.member_id] = dict(value.assignment)
        else:
            g.target.pop(key.member_id, None)
    elif isinstance(key, MemberMetadataKey):
        if isinstance(value, MemberMetadataValue):
            old = g.members.get(key.member_id) or ConsumerMember(key.member_id)
            g.put_member(old.with_(
                instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
                client_host=value.client_host, subscribed_topic_names=value.subscribed_topic_names,
                subscribed_topic_regex=value.subscribed_topic_regex,
                rebalance_timeout_ms=value.rebalance_timeout_ms, server_assignor=value.server_assignor,
                classic=value.classic))
        else:
            g.drop_member(key.member_id)
    elif isinstance(key, CurrentAssignmentKey):
        m = g.members.get(key.member_id) or ConsumerMember(key.member_id)
        if isinstance(value, CurrentAssignmentValue):
            g.put_member(m.with_(member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
                                 state=value.state, assigned=dict(value.assigned),
                                 pending_revocation=dict(value.pending_revocation)))
        elif key.member_id in g.members:
            g.put_member(m.with_(member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                 previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                 assigned={}, pending_revocation={}))
