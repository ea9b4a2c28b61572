"""Topics without an id get one from the controller, on creation and at failover (Kafka 2.8+'s
controller does the same), and a topic that has one keeps it."""
from __future__ import annotations

from praha.common import ReplicaAssignment, TopicAssignment
from praha.controller.context_loader import load_context
from praha.controller.topic_ids import without_ids

from .fakes import rig, services


def test_only_the_topics_without_an_id_get_one():
    ids = iter(["id-1", "id-2"])
    got = without_ids({"b": TopicAssignment({0: ReplicaAssignment((1,))}),
                       "a": TopicAssignment({0: ReplicaAssignment((2,))}, "kept"),
                       "c": TopicAssignment({1: ReplicaAssignment((3,))}, "")}, lambda: next(ids))
    assert got == {"b": TopicAssignment({0: ReplicaAssignment((1,))}, "id-1"),
                   "c": TopicAssignment({1: ReplicaAssignment((3,))}, "id-2")}


def test_failover_writes_an_id_into_each_id_less_topic_and_keeps_the_others():
    r = rig()
    r.store.topics = {"old": TopicAssignment({0: ReplicaAssignment((1, 2))}),
                      "new": TopicAssignment({0: ReplicaAssignment((2, 3))}, "AAAAAAAAAAAAAAAAAAAAAQ")}
    load_context(r.store, r.ctx, lambda _name: None)
    old_id = r.store.topics["old"].topic_id
    assert old_id
    assert r.ctx.topic_ids == {"old": old_id, "new": "AAAAAAAAAAAAAAAAAAAAAQ"}
    assert r.store.topics["old"].partitions == {0: ReplicaAssignment((1, 2))}
    assert [e for e in r.store.log if e[0] == "topic"] == [("topic", "old")]


def test_a_topic_created_without_an_id_gets_one_when_the_controller_sees_it():
    from praha.controller import events as ev
    from praha.controller.flows import ControllerFlows

    r = rig()
    flows = ControllerFlows(services(r))
    r.store.topics["plain"] = TopicAssignment({0: ReplicaAssignment((1, 2, 3))})
    flows.process_topic_change(ev.TopicChange())
    assert r.store.topics["plain"].topic_id
    assert r.ctx.topic_ids["plain"] == r.store.topics["plain"].topic_id
