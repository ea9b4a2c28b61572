"""KIP-848 consumer groups inside the group coordinator, on an in-memory `__consumer_offsets`:
answers only once written, a failed write puts the group back, a new coordinator loads
members, epochs and assignments from the log, and the admin views and offset checks see
both kinds of group."""
from __future__ import annotations

import asyncio
import uuid

from praha.coordinator.group.consumer.heartbeat import HeartbeatRequest, TimerKind
from praha.coordinator.group.consumer.model import ConsumerGroupState, TopicInfo
from praha.coordinator.group.coordinator import GroupCoordinator
from praha.coordinator.group.metadata import CommittedOffset
from praha.errors import ErrorCode
from tests.unit.coordinator.test_group_coordinator import CONFIG, MemoryLog, blocking, join_fully, run

E = ErrorCode
TOPICS = {"orders": TopicInfo("orders", uuid.UUID(int=7), 6)}


async def coordinator(log: MemoryLog) -> GroupCoordinator:
    c = GroupCoordinator(CONFIG, log, run_blocking=blocking, topics=lambda: TOPICS)
    for p in range(CONFIG.partitions):
        c.on_elected(p, 1)
    for _ in range(20):
        await asyncio.sleep(0)
    return c


def join_req(member: str, group: str = "g") -> HeartbeatRequest:
    return HeartbeatRequest(group, member, 0, rebalance_timeout_ms=30000, subscribed_topic_names=("orders",),
                            topic_partitions=())


def test_heartbeats_are_written_and_a_new_coordinator_loads_the_group_as_it_was():
    async def go():
        log = MemoryLog()
        c = await coordinator(log)
        a = await c.consumer_group_heartbeat(join_req("a"))
        b = await c.consumer_group_heartbeat(join_req("b"))
        assert a.error == b.error == E.NONE
        assert a.answer.member_epoch == 1
        assert b.answer.member_epoch == 2
        assert sum(len(p) for p in a.answer.assignment.values()) == 6  # all of it, until b's join is reconciled
        before = c.consumer.groups["g"]
        c.shutdown()
        d = await coordinator(log)  # the failover: a new leader of the partition replays the log
        after = d.consumer.groups["g"]
        assert (after.group_epoch, after.assignment_epoch) == (before.group_epoch, before.assignment_epoch) == (2, 2)
        assert after.members == before.members
        assert after.target == before.target
        assert after.partition_epochs == before.partition_epochs
        # a's next heartbeat is accepted at the epoch it had: no rejoin, no full rebalance
        owned = tuple((t, tuple(sorted(p))) for t, p in a.answer.assignment.items())
        again = await d.consumer_group_heartbeat(HeartbeatRequest("g", "a", 1, topic_partitions=owned))
        assert again.error == E.NONE
        assert after.members["a"].pending_revocation
        d.shutdown()
    run(go())


def test_a_failed_write_changes_nothing_and_maps_the_error():
    async def go():
        log = MemoryLog()
        c = await coordinator(log)
        await c.consumer_group_heartbeat(join_req("a"))
        epoch = c.consumer.groups["g"].group_epoch
        log.fail_with = E.NOT_ENOUGH_REPLICAS
        out = await c.consumer_group_heartbeat(join_req("b"))
        assert out.error == E.COORDINATOR_NOT_AVAILABLE
        assert set(c.consumer.groups["g"].members) == {"a"}
        assert c.consumer.groups["g"].group_epoch == epoch
        log.fail_with = None
        assert (await c.consumer_group_heartbeat(join_req("b"))).error == E.NONE
        c.shutdown()
    run(go())


def test_groups_whose_embedded_protocol_does_not_parse_do_not_mix_and_admin_views_see_both():
    async def go():
        log = MemoryLog()
        c = await coordinator(log)
        await join_fully(c, "classic-g")  # its subscription bytes are not ConsumerProtocolSubscription
        refused = await c.consumer_group_heartbeat(join_req("x", "classic-g"))
        assert refused.error == E.GROUP_ID_NOT_FOUND
        await c.consumer_group_heartbeat(join_req("a"))
        assert (await join_fully(c, "g")).error == E.INCONSISTENT_GROUP_PROTOCOL
        _, groups = c.list_groups()
        kinds = {o.group_id: (o.group_type, o.protocol_type) for o in groups}
        assert kinds == {"classic-g": ("classic", "consumer"), "g": ("consumer", "consumer")}
        assert [o.group_id for o in c.list_groups(types={"consumer"})[1]] == ["g"]
        assert [o.group_id for o in c.list_groups(types={"classic"})[1]] == ["classic-g"]
        assert c.describe_group("g").error == E.GROUP_ID_NOT_FOUND
        c.shutdown()
    run(go())


def test_offsets_of_a_consumer_group_check_member_and_epoch_and_survive_a_failover():
    async def go():
        log = MemoryLog()
        c = await coordinator(log)
        a = await c.consumer_group_heartbeat(join_req("a"))
        off = {("orders", 0): CommittedOffset(42, -1, "", 1)}
        assert (await c.commit_offsets("g", a.answer.member_epoch - 1, "a", None,
                                       off)) == {("orders", 0): E.STALE_MEMBER_EPOCH}
        assert (await c.commit_offsets("g", a.answer.member_epoch, "zz", None,
                                       off)) == {("orders", 0): E.UNKNOWN_MEMBER_ID}
        assert (await c.commit_offsets("g", a.answer.member_epoch, "a", None, off)) == {("orders", 0): E.NONE}
        assert c.fetch_offsets("g", [("orders", 0)], "a", a.answer.member_epoch + 1)[0] == E.STALE_MEMBER_EPOCH
        c.shutdown()
        d = await coordinator(log)
        code, got = d.fetch_offsets("g", [("orders", 0)], "a", a.answer.member_epoch)
        assert code == E.NONE
        assert got[("orders", 0)].offset == 42
        assert d.consumer.groups["g"].state is ConsumerGroupState.STABLE
        # the last member leaves; the empty group is deleted with its offsets, and stays gone after a reload
        await d.consumer_group_heartbeat(HeartbeatRequest("g", "a", -1))
        assert (await d.delete_groups(["g"])) == {"g": E.NONE}
        d.shutdown()
        e = await coordinator(log)
        assert "g" not in e.consumer.groups
        assert e.fetch_offsets("g", [("orders", 0)])[1] == {("orders", 0): None}
        e.shutdown()
    run(go())


def test_offsets_of_a_consumer_group_with_members_do_not_expire():
    async def go():
        c = await coordinator(MemoryLog())
        a = await c.consumer_group_heartbeat(join_req("a"))
        await c.commit_offsets("g", a.answer.member_epoch, "a", None, {("orders", 0): CommittedOffset(1, -1, "", 1)})
        assert await c.expire_offsets(10**15) == 0
        assert c.fetch_offsets("g", [("orders", 0)])[1][("orders", 0)]
        c.shutdown()
    run(go())


def test_empty_consumer_groups_expire_with_their_last_offset_or_at_once_without_offsets():
    async def go():
        log = MemoryLog()
        c = await coordinator(log)
        a = await c.consumer_group_heartbeat(join_req("a"))
        await c.commit_offsets("g", a.answer.member_epoch, "a", None, {("orders", 0): CommittedOffset(1, -1, "", 1)})
        await c.consumer_group_heartbeat(join_req("b", "bare"))
        await c.consumer_group_heartbeat(HeartbeatRequest("g", "a", -1))
        await c.consumer_group_heartbeat(HeartbeatRequest("bare", "b", -1))
        assert await c.expire_offsets(2) == 0  # the offset is young: g stays; bare has none: it goes
        assert "g" in c.consumer.groups
        assert "bare" not in c.consumer.groups
        assert await c.expire_offsets(10**15) == 1
        assert "g" not in c.consumer.groups
        assert "g" not in c.groups
        c.shutdown()
        d = await coordinator(log)
        assert not d.consumer.groups
        assert d.fetch_offsets("g", [("orders", 0)])[1] == {("orders", 0): None}
        d.shutdown()
    run(go())


def test_a_heartbeat_moves_the_session_deadline_without_a_new_timer_and_the_member_is_fenced_after_its_last():
    """Each heartbeat restarts the member's session timer; the restart only moves its deadline
    (no cancel and reschedule on the loop's timer heap: that was 40% of a steady heartbeat's CPU).
    On the loop's clock, driven by hand: heartbeating for ten sessions keeps the member (its
    wake-up comes and waits on), and it is fenced one session after its last heartbeat, not before."""
    async def go():
        loop = asyncio.get_running_loop()
        clock = [loop.time()]
        loop.time = lambda: clock[0]  # type: ignore[method-assign]

        async def advance(seconds: float) -> None:
            clock[0] += seconds
            for _ in range(5):  # the timers now due run, and what they started
                await asyncio.sleep(0)

        c = await coordinator(MemoryLog())
        c.consumer.set_group_config("g", {"consumer.session.timeout.ms": "1000"})
        fenced, told = asyncio.Event(), c.consumer.on_fenced
        c.consumer.on_fenced = lambda gid: (told(gid), fenced.set())
        a = await c.consumer_group_heartbeat(join_req("a"))
        owned = tuple((t, tuple(sorted(p))) for t, p in a.answer.assignment.items())
        a = await c.consumer_group_heartbeat(HeartbeatRequest("g", "a", a.answer.member_epoch, topic_partitions=owned))
        assert c.consumer.groups["g"].state is ConsumerGroupState.STABLE
        timer = c.consumer._timers[("g", "a", TimerKind.SESSION)]
        handles = {id(timer.handle)}
        for _ in range(50):  # 10 s of heartbeats every 200 ms, a 1 s session
            await advance(0.2)
            out = await c.consumer_group_heartbeat(HeartbeatRequest("g", "a", a.answer.member_epoch))
            assert out.error == E.NONE
            assert c.consumer._timers[("g", "a", TimerKind.SESSION)] is timer
            assert c.consumer.deadlines("g", "a")[TimerKind.SESSION] == clock[0] + 1.0
            handles.add(id(timer.handle))
        assert "a" in c.consumer.groups["g"].members
        assert len(handles) <= 11  # re-armed only when its wake-up came (every session), not per heartbeat
        await advance(0.95)
        assert "a" in c.consumer.groups["g"].members  # not before a session after its last heartbeat
        assert not fenced.is_set()
        await advance(0.1)
        assert fenced.is_set()
        assert "a" not in c.consumer.groups["g"].members
        c.shutdown()
    asyncio.run(go())  # not `run`: its bound is on the loop clock this test drives by hand
