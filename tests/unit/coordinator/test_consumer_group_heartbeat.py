"""KIP-848's heartbeat decisions driven by simulated members (pure logic, no I/O).

Each simulated member behaves as librdkafka does: it reports what it owns, drops what its
answer no longer gives it before the next heartbeat, and takes what it is given. After every
single decision the test checks the protocol's promise: no partition is owned by two members
(the group's own books and the members' views both), and the records written so far, replayed
into a fresh coordinator, rebuild exactly the same group (what a failover would load).
"""
from __future__ import annotations

import random
import uuid

import pytest

from praha.coordinator.group.consumer.assignors import MemberSpec, range_, uniform
from praha.coordinator.group.consumer.heartbeat import (
    ConsumerGroupSettings,
    HeartbeatRequest,
    delete_group,
    heartbeat,
    is_steady,
    revocation_expired,
    session_expired,
    steady_heartbeat,
    topics_changed,
    validate_offset_commit,
    validate_offset_fetch,
)
from praha.coordinator.group.consumer.model import ConsumerGroup, ConsumerGroupState, MemberState, TopicInfo
from praha.coordinator.group.consumer.records import Record, decode, encode
from praha.coordinator.group.consumer.replay import replay
from praha.errors import ErrorCode, PrahaError

SETTINGS = ConsumerGroupSettings()
T = TopicInfo("orders", uuid.UUID(int=1), 6)
U = TopicInfo("orders-eu", uuid.UUID(int=2), 3)
V = TopicInfo("payments", uuid.UUID(int=3), 2)


class Sim:
    """A coordinator's groups plus the log it wrote, and members that heartbeat against it."""

    def __init__(self, topics: list[TopicInfo], settings: ConsumerGroupSettings = SETTINGS):
        self.groups: dict[str, ConsumerGroup] = {}
        self.log: list[Record] = []
        self.topics = {t.name: t for t in topics}
        self.settings = settings
        #: member id -> (epoch, owned partitions {(topic id, p)})
        self.clients: dict[str, tuple[int, set[tuple[uuid.UUID, int]]]] = {}

    def write(self, records: list[Record]) -> None:
        self.log.extend(decode(*encode(r)) for r in records)  # through bytes, as the log keeps them
        self.check()

    def hb(self, member_id: str, group: str = "g", **fields) -> object:
        epoch, owned = self.clients.get(member_id, (0, set()))
        joining = epoch == 0
        req = HeartbeatRequest(
            group, member_id, fields.pop("member_epoch", epoch),
            rebalance_timeout_ms=fields.pop("rebalance_timeout_ms", 30000 if joining else -1),
            subscribed_topic_names=fields.pop("topics", ("orders",) if joining else None),
            topic_partitions=fields.pop("owned", _pairs(owned)), **fields)
        d = heartbeat(self.groups, req, self.topics, self.settings, now_ms=1000)
        self.write(d.records)
        assert d.answer is not None
        if d.answer.assignment is not None:
            owned = {(t, p) for t, ps in d.answer.assignment.items() for p in ps}
        self.clients[member_id] = (d.answer.member_epoch, owned)
        return d

    def settle(self, members: list[str], rounds: int = 10) -> None:
        for _ in range(rounds):
            for m in members:
                self.hb(m)
            if self.groups["g"].state is ConsumerGroupState.STABLE:
                return
        raise AssertionError(f"group not stable after {rounds} rounds: {self.groups['g'].state}")

    def owned_by(self, member_id: str) -> set[int]:
        return {p for _, p in self.clients[member_id][1]}

    def check(self) -> None:
        seen: dict[tuple[uuid.UUID, int], str] = {}
        for g in self.groups.values():
            for m in g.members.values():
                for tid, parts in m.owned().items():
                    for p in parts:
                        assert (tid, p) not in seen, f"{(tid, p)} owned by {seen[(tid, p)]} and {m.member_id}"
                        seen[(tid, p)] = m.member_id
        views: dict[tuple[uuid.UUID, int], str] = {}
        for mid, (_, owned) in self.clients.items():
            for tp in owned:
                assert tp not in views, f"{tp} held by clients {views[tp]} and {mid}"
                views[tp] = mid
        reloaded: dict[str, ConsumerGroup] = {}
        replay(reloaded, self.log)
        assert _snapshot(reloaded) == _snapshot(self.groups)


def _pairs(owned: set[tuple[uuid.UUID, int]]) -> tuple[tuple[uuid.UUID, tuple[int, ...]], ...]:
    by: dict[uuid.UUID, list[int]] = {}
    for t, p in owned:
        by.setdefault(t, []).append(p)
    return tuple((t, tuple(sorted(ps))) for t, ps in sorted(by.items()))


def _snapshot(groups: dict[str, ConsumerGroup]) -> dict:
    return {gid: (g.group_epoch, g.assignment_epoch, dict(g.members), {m: dict(a) for m, a in g.target.items()},
                  dict(g.partition_epochs), g.resolved_regexes, g.subscription_metadata)
            for gid, g in groups.items()}


def _err(code: ErrorCode, fn, *args, **kwargs) -> None:
    with pytest.raises(PrahaError) as e:
        fn(*args, **kwargs)
    assert e.value.code is code, str(e.value)


# ------------------------------------------------------------------ the normal life of a group
def test_three_members_share_six_partitions_then_leave_fail_and_join_without_double_ownership():
    sim = Sim([T])
    sim.hb("a")
    assert sim.owned_by("a") == set(range(6))
    assert sim.groups["g"].state is ConsumerGroupState.STABLE
    sim.hb("b")
    sim.hb("c")
    sim.settle(["a", "b", "c"])
    assert sorted(len(sim.owned_by(m)) for m in "abc") == [2, 2, 2]
    assert sim.owned_by("a") | sim.owned_by("b") | sim.owned_by("c") == set(range(6))
    kept_by_b = sim.owned_by("b")
    # a leaves cleanly
    d = heartbeat(sim.groups, HeartbeatRequest("g", "a", -1), sim.topics, SETTINGS, 1000)
    sim.write(d.records)
    assert d.answer.member_epoch == -1
    assert d.timers.cancel == ("a",)
    del sim.clients["a"]
    sim.settle(["b", "c"])
    assert sim.owned_by("b") >= kept_by_b, "sticky: b keeps what it had"
    assert sorted(len(sim.owned_by(m)) for m in "bc") == [3, 3]
    # c stops heartbeating: its session expires
    sim.write(session_expired(sim.groups, "g", "c"))
    del sim.clients["c"]
    sim.hb("d")
    sim.settle(["b", "d"])
    assert sim.owned_by("b") | sim.owned_by("d") == set(range(6))
    assert sorted(len(sim.owned_by(m)) for m in "bd") == [3, 3]
    assert sim.groups["g"].group_epoch == 6  # a, b, c, d joined; a left; c expired


def test_a_steady_heartbeat_is_known_as_one_and_changes_nothing():
    """The coordinator answers these without deciding (bench/heartbeat_cpu.py): the same answer, no records."""
    sim = Sim([T])
    sim.hb("a")
    sim.hb("b")
    sim.settle(["a", "b"])
    epoch = sim.clients["a"][0]
    plain = HeartbeatRequest("g", "a", epoch)
    assert is_steady(sim.groups, plain)
    assert heartbeat(sim.groups, plain, sim.topics, SETTINGS, 1000) == steady_heartbeat(sim.groups, plain, SETTINGS)
    assert heartbeat(sim.groups, plain, sim.topics, SETTINGS, 1000).records == []
    for changed in (HeartbeatRequest("g", "a", epoch, subscribed_topic_names=("orders", "payments")),
                    HeartbeatRequest("g", "a", epoch, rebalance_timeout_ms=1),
                    HeartbeatRequest("g", "a", epoch, client_id="other"),
                    HeartbeatRequest("g", "a", epoch, topic_partitions=()),
                    HeartbeatRequest("g", "a", epoch - 1), HeartbeatRequest("g", "zz", epoch)):
        assert not is_steady(sim.groups, changed), changed
    sim.hb("c")  # a new member: the group is no longer at one epoch
    assert not is_steady(sim.groups, HeartbeatRequest("g", "b", sim.clients["b"][0]))


def test_an_assignment_whose_answer_was_lost_is_sent_again_until_the_member_reports_it():
    """librdkafka times a heartbeat out after one interval and then sends a plain one: the
    assignment of a late answer must come again (Kafka would send it only on a full request)."""
    sim = Sim([T])
    sim.hb("a")
    sim.hb("b")
    sim.settle(["a", "b"])
    epoch, _ = sim.clients["b"]
    plain = HeartbeatRequest("g", "b", epoch)
    assert heartbeat(sim.groups, plain, sim.topics, SETTINGS, 1000).answer.assignment  # not yet reported
    sim.hb("b")  # reports what it owns
    assert heartbeat(sim.groups, plain, sim.topics, SETTINGS, 1000).answer.assignment is None  # reported: quiet
    sim.write(heartbeat(sim.groups, HeartbeatRequest("g", "a", -1), sim.topics, SETTINGS, 1000).records)
    del sim.clients["a"]
    lost = heartbeat(sim.groups, plain, sim.topics, SETTINGS, 1000)  # b is given a's partitions: answer lost
    sim.write(lost.records)
    new = lost.answer.assignment
    assert new is not None
    assert sum(len(p) for p in new.values()) == 6
    again = heartbeat(sim.groups, HeartbeatRequest("g", "b", lost.answer.member_epoch), sim.topics, SETTINGS, 1000)
    assert again.records == []
    assert again.answer.assignment == new  # sent again, nothing changed
    acked = HeartbeatRequest("g", "b", lost.answer.member_epoch,
                             topic_partitions=_pairs({(T.topic_id, p) for p in range(6)}))
    assert heartbeat(sim.groups, acked, sim.topics, SETTINGS, 1000).answer.assignment is None
    assert heartbeat(sim.groups, HeartbeatRequest("g", "b", lost.answer.member_epoch), sim.topics, SETTINGS,
                     1000).answer.assignment is None


def test_a_partition_is_revoked_before_another_member_gets_it():
    sim = Sim([T])
    sim.hb("a")
    sim.hb("b")  # target: 3 each, but a still owns all six
    g = sim.groups["g"]
    assert sim.owned_by("b") == set()
    assert g.members["b"].state is MemberState.UNRELEASED_PARTITIONS
    d = sim.hb("a", owned=_pairs({(T.topic_id, p) for p in range(6)}))  # a learns it must revoke
    a = g.members["a"]
    assert a.state is MemberState.UNREVOKED_PARTITIONS
    assert d.timers.revocation == ("a", a.member_epoch, 30000)
    assert len(a.pending_revocation[T.topic_id]) == 3
    assert len(d.answer.assignment[T.topic_id]) == 3
    sim.hb("b")
    assert sim.owned_by("b") == set(), "still pending revocation by a"
    sim.hb("a")  # a reports it gave them up
    assert g.members["a"].state is MemberState.STABLE
    sim.hb("b")
    assert len(sim.owned_by("b")) == 3
    assert g.state is ConsumerGroupState.STABLE


def test_a_heartbeat_at_the_previous_epoch_does_not_release_what_the_current_epoch_gave():
    """a's answer giving it b's partitions (epoch E+1) is on its way when c joins and the target moves
    them to c; a heartbeat a sent before it read that answer (epoch E, without them) must not free
    them: a takes them on reading the answer, and only then is told to give them up."""
    sim = Sim([T])
    sim.hb("a", server_assignor="range")
    sim.hb("b", server_assignor="range")
    sim.settle(["a", "b"])
    assert sim.owned_by("a") == {0, 1, 2}
    assert sim.owned_by("b") == {3, 4, 5}
    d = heartbeat(sim.groups, HeartbeatRequest("g", "b", -1), sim.topics, SETTINGS, now_ms=1000)
    sim.write(d.records)
    del sim.clients["b"]
    epoch, owned = sim.clients["a"]
    # a heartbeats; the answer (epoch E+1, all six) is decided but a has not read it yet
    d = heartbeat(sim.groups, HeartbeatRequest("g", "a", epoch, topic_partitions=_pairs(owned)), sim.topics,
                  SETTINGS, now_ms=1000)
    sim.write(d.records)
    assert d.answer.member_epoch == epoch + 1
    assert len(d.answer.assignment[T.topic_id]) == 6
    sim.hb("c", server_assignor="range")  # the target: a 0-2, c 3-5
    sim.hb("a")  # sent at epoch E, owning 0-2 only: not a release of 3-5
    g = sim.groups["g"]
    assert g.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert g.members["a"].member_epoch == epoch + 1
    sim.hb("c")
    assert sim.owned_by("c") == set(), "given to c while a may be taking them"
    sim.hb("a")  # at epoch E+1, without 3-5: released
    sim.hb("c")
    assert sim.owned_by("c") == {3, 4, 5}
    assert sim.owned_by("a") == {0, 1, 2}


def test_a_heartbeat_omitting_partitions_just_given_at_this_epoch_does_not_release_them():
    """The issue 22 flake, caught with the members' callbacks: c, alone, was given all six at epoch 1;
    b joined and the target moved 3-5 to b; a heartbeat c sent at epoch 1 reporting none (librdkafka's
    full request carries its last acknowledged assignment while it is still taking the new one) freed
    them, and b was assigned 3 and 4 three milliseconds before c's revoke callback let them go."""
    sim = Sim([T])
    sim.hb("c", server_assignor="range")
    epoch = sim.groups["g"].members["c"].member_epoch
    sim.hb("b", server_assignor="range")  # the target: c 0-2, b 3-5

    def c_reports(*owned: int) -> None:
        d = heartbeat(sim.groups, HeartbeatRequest("g", "c", sim.groups["g"].members["c"].member_epoch,
                                                   topic_partitions=[(T.topic_id, list(owned))]),
                      sim.topics, SETTINGS, now_ms=1000)
        sim.write(d.records)

    c_reports()  # at epoch 1, owning "nothing": c is still taking what epoch 1 gave it
    assert sim.groups["g"].members["c"].member_epoch == epoch
    assert sim.groups["g"].members["c"].state is MemberState.UNREVOKED_PARTITIONS
    sim.hb("b")
    assert sim.owned_by("b") == set(), "given to b while c may be taking them"
    c_reports(0, 1, 2, 3, 4, 5)  # c took all six (its assign callback), still to give 3-5 up
    sim.hb("b")
    assert sim.owned_by("b") == set()
    c_reports(0, 1, 2)  # revoked: now they move
    sim.hb("b")
    assert sim.owned_by("b") == {3, 4, 5}


def test_a_member_that_does_not_revoke_in_time_is_fenced_and_its_partitions_move():
    sim = Sim([T])
    sim.hb("a")
    sim.hb("b")
    sim.hb("a")
    epoch = sim.groups["g"].members["a"].member_epoch
    assert revocation_expired(sim.groups, "g", "a", epoch - 1) == []  # an old timer does nothing
    sim.write(revocation_expired(sim.groups, "g", "a", epoch))
    assert "a" not in sim.groups["g"].members
    del sim.clients["a"]
    sim.settle(["b"])
    assert sim.owned_by("b") == set(range(6))


def test_a_lost_answer_is_forgiven_at_the_previous_epoch_but_not_otherwise():
    sim = Sim([T])
    sim.hb("a")
    sim.hb("b")
    sim.settle(["a", "b"])
    m = sim.groups["g"].members["a"]
    # a heartbeat from the previous epoch with a subset of the assignment: the answer was lost
    sim.hb("a", member_epoch=m.previous_member_epoch)
    _err(ErrorCode.FENCED_MEMBER_EPOCH, sim.hb, "a", member_epoch=m.member_epoch + 1)
    _err(ErrorCode.FENCED_MEMBER_EPOCH, sim.hb, "a", member_epoch=m.member_epoch - 1,
         owned=_pairs({(T.topic_id, p) for p in range(6)}))


def test_static_member_leaves_for_now_keeps_its_partitions_and_comes_back_under_a_new_id():
    sim = Sim([T])
    sim.hb("s1", instance_id="inst")
    sim.hb("b")
    sim.settle(["s1", "b"])
    held = sim.owned_by("s1")
    d = heartbeat(sim.groups, HeartbeatRequest("g", "s1", -2, instance_id="inst"), sim.topics, SETTINGS, 1000)
    sim.write(d.records)
    assert d.answer.member_epoch == -2
    # another process with the same instance id while s1 is away: it takes s1's place
    del sim.clients["s1"]
    sim.hb("s2", instance_id="inst")
    assert sim.owned_by("s2") == held
    assert "s1" not in sim.groups["g"].members
    # the instance is now held: a third process with it is refused, and the old id is fenced
    _err(ErrorCode.UNRELEASED_INSTANCE_ID, sim.hb, "s3", instance_id="inst")
    _err(ErrorCode.FENCED_INSTANCE_ID, heartbeat, sim.groups,
         HeartbeatRequest("g", "s1", 5, instance_id="inst"), sim.topics, SETTINGS, 1000)


def test_regex_subscription_follows_topics_created_and_deleted():
    sim = Sim([T, V])
    sim.hb("a", topics=None, subscribed_topic_regex="orders.*")
    assert sim.owned_by("a") == set(range(6))
    sim.topics["orders-eu"] = U
    sim.write(topics_changed(sim.groups, sim.topics, 2000))
    sim.hb("a")
    assert {t for t, _ in sim.clients["a"][1]} == {T.topic_id, U.topic_id}
    del sim.topics["orders"]
    sim.write(topics_changed(sim.groups, sim.topics, 3000))
    sim.settle(["a"])
    assert sim.clients["a"][1] == {(U.topic_id, p) for p in range(3)}
    assert sim.groups["g"].resolved_regexes == {"orders.*": frozenset({"orders-eu"})}


def test_range_assignor_chosen_by_the_members():
    sim = Sim([T])
    sim.hb("a", server_assignor="range")
    sim.hb("b", server_assignor="range")
    sim.settle(["a", "b"])
    assert sim.owned_by("a") == {0, 1, 2}
    assert sim.owned_by("b") == {3, 4, 5}


def test_empty_group_is_deleted_with_tombstones_and_reloads_as_gone():
    sim = Sim([T])
    sim.hb("a")
    _err(ErrorCode.NON_EMPTY_GROUP, delete_group, sim.groups, "g")
    sim.write(heartbeat(sim.groups, HeartbeatRequest("g", "a", -1), sim.topics, SETTINGS, 1).records)
    del sim.clients["a"]
    assert sim.groups["g"].state is ConsumerGroupState.EMPTY
    sim.write(delete_group(sim.groups, "g"))
    assert "g" not in sim.groups


# ------------------------------------------------------------------ bad input: Kafka's error, nothing changed
BAD = [
    (ErrorCode.INVALID_REQUEST, dict(member_epoch=0, rebalance_timeout_ms=-1)),
    (ErrorCode.INVALID_REQUEST, dict(member_epoch=0, topic_partitions=((T.topic_id, (0,)),))),
    (ErrorCode.INVALID_REQUEST, dict(member_epoch=0, topic_partitions=None)),
    (ErrorCode.INVALID_REQUEST, dict(member_epoch=0, subscribed_topic_names=None)),
    (ErrorCode.INVALID_REQUEST, dict(member_epoch=0, member_id="")),  # v1: the client names itself
    (ErrorCode.INVALID_REQUEST, dict(member_epoch=-3)),
    (ErrorCode.INVALID_REQUEST, dict(member_epoch=-2)),  # a static leave without an instance id
    (ErrorCode.INVALID_REQUEST, dict(group_id="")),
    (ErrorCode.INVALID_REQUEST, dict(instance_id="")),
    (ErrorCode.UNSUPPORTED_ASSIGNOR, dict(server_assignor="sticky")),
    (ErrorCode.INVALID_REGULAR_EXPRESSION, dict(subscribed_topic_regex="(?=orders)")),
    (ErrorCode.INVALID_REGULAR_EXPRESSION, dict(subscribed_topic_regex="orders(")),
    (ErrorCode.GROUP_ID_NOT_FOUND, dict(group_id="nope", member_epoch=1)),
    (ErrorCode.UNKNOWN_MEMBER_ID, dict(member_id="from-another-group", member_epoch=1)),
    (ErrorCode.UNKNOWN_MEMBER_ID, dict(member_id="from-another-group", member_epoch=-1)),
    (ErrorCode.FENCED_MEMBER_EPOCH, dict(member_id="a", member_epoch=99)),
]


@pytest.mark.parametrize(("code", "fields"), BAD, ids=[f"{c.name}-{i}" for i, (c, _) in enumerate(BAD)])
def test_bad_heartbeat_gets_kafkas_error_and_changes_nothing(code, fields):
    sim = Sim([T])
    sim.hb("a")
    sim.groups["other"] = ConsumerGroup("other")
    before, logged = _snapshot(sim.groups), len(sim.log)
    base = dict(group_id="g", member_id="new", member_epoch=0, rebalance_timeout_ms=30000,
                subscribed_topic_names=("orders",), topic_partitions=())
    base.update(fields)
    _err(code, heartbeat, sim.groups, HeartbeatRequest(**base), sim.topics, SETTINGS, 1000)
    assert _snapshot(sim.groups) == before
    assert len(sim.log) == logged


def test_group_max_size_refuses_a_new_member_but_not_a_known_one():
    sim = Sim([T], ConsumerGroupSettings(max_size=2))
    sim.hb("a")
    sim.hb("b")
    _err(ErrorCode.GROUP_MAX_SIZE_REACHED, sim.hb, "c")
    sim.hb("a")


def test_offset_commit_and_fetch_checks_of_a_consumer_group():
    sim = Sim([T])
    validate_offset_commit(sim.groups.setdefault("g", ConsumerGroup("g")), "", -1, 9)  # empty group: admin commit
    sim.hb("a")
    g = sim.groups["g"]
    epoch = g.members["a"].member_epoch
    validate_offset_commit(g, "a", epoch, 9)
    _err(ErrorCode.STALE_MEMBER_EPOCH, validate_offset_commit, g, "a", epoch - 1, 9)
    _err(ErrorCode.UNKNOWN_MEMBER_ID, validate_offset_commit, g, "", -1, 9)
    _err(ErrorCode.UNKNOWN_MEMBER_ID, validate_offset_commit, g, "zz", epoch, 9)
    _err(ErrorCode.UNSUPPORTED_VERSION, validate_offset_commit, g, "a", epoch, 8)
    validate_offset_fetch(g, None, -1)
    validate_offset_fetch(g, "a", epoch)
    _err(ErrorCode.STALE_MEMBER_EPOCH, validate_offset_fetch, g, "a", epoch + 1)


# ------------------------------------------------------------------ assignors
def _check_assignment(result, members, topics):
    seen = set()
    for m, a in result.items():
        for tid, parts in a.items():
            assert tid in members[m].topics
            for p in parts:
                assert (tid, p) not in seen
                assert 0 <= p < topics[tid]
                seen.add((tid, p))
    wanted = {(t, p) for t in set().union(*(s.topics for s in members.values())) if t in topics
              for p in range(topics[t])}
    assert seen == wanted


@pytest.mark.parametrize("assignor", [uniform, range_])
def test_assignors_cover_every_partition_once_and_stay_sticky(assignor):
    t, u = T.topic_id, U.topic_id
    topics = {t: 6, u: 3}
    members = {m: MemberSpec(frozenset({t, u}), {}) for m in "abc"}
    first = assignor(members, topics)
    _check_assignment(first, members, topics)
    assert sorted(sum(len(p) for p in a.values()) for a in first.values()) == [3, 3, 3]
    # c leaves: a and b keep everything they had
    rest = {m: MemberSpec(frozenset({t, u}), first[m]) for m in "ab"}
    second = assignor(rest, topics)
    _check_assignment(second, rest, topics)
    for m in "ab":
        for tid, parts in first[m].items():
            assert parts <= second[m].get(tid, frozenset())


def test_uniform_balances_heterogeneous_subscriptions():
    t, u = T.topic_id, U.topic_id
    members = {"a": MemberSpec(frozenset({t}), {}), "b": MemberSpec(frozenset({t, u}), {}),
               "c": MemberSpec(frozenset({u}), {})}
    result = uniform(members, {t: 6, u: 3})
    _check_assignment(result, members, {t: 6, u: 3})
    loads = {m: sum(len(p) for p in a.values()) for m, a in result.items()}
    assert max(loads.values()) - min(loads.values()) <= 1, loads


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ten_members_joining_in_any_order_converge_on_900_partitions(seed):
    """The bench's shape (10 members, 900 partitions), heartbeats in a random order while members
    keep joining: the group ends Stable with 90 partitions each, never one owned twice."""
    rnd = random.Random(seed)
    big = TopicInfo("big", uuid.UUID(int=9), 900)
    sim = Sim([big])
    checks, sim.check = sim.check, lambda: None  # the full check (a replay of the log) once, at the end
    joined: list[str] = []
    for _ in range(2000):
        if len(joined) < 10 and rnd.random() < 0.3:
            joined.append(f"m{len(joined)}")
            sim.hb(joined[-1], topics=("big",))
        elif joined:
            sim.hb(rnd.choice(joined))
        if len(joined) == 10 and sim.groups["g"].state is ConsumerGroupState.STABLE:
            break
    assert sim.groups["g"].state is ConsumerGroupState.STABLE
    assert [len(sim.owned_by(m)) for m in joined] == [90] * 10
    checks()
