"""Share-group offsets admin decisions (KIP-932): the lag of a share partition from its durable
state, the group-level refusals in Kafka's order, and GROUP configs applied per share group."""
from praha.coordinator.group.share.heartbeat import ShareHeartbeat, ShareSettings
from praha.coordinator.group.share.offsets import group_refusal, lag, start_offset_refusal
from praha.errors import ErrorCode
from tests.unit.coordinator.test_group_coordinator import run
from tests.unit.coordinator.test_share_group_coordinator import service

ACQ, ACKED, ARCHIVED = 0, 2, 4  # available, acknowledged, archived (as stored)


def test_lag_counts_records_from_the_start_to_the_high_watermark_not_yet_done():
    assert lag(4, (), 12) == 8
    # 4-5 acknowledged, 6 archived, 7-9 available again: 12 - 4 - 3 done
    assert lag(4, ((4, 5, ACKED, 1), (6, 6, ARCHIVED, 3), (7, 9, ACQ, 1)), 12) == 5
    # a done batch reaching past the high watermark counts only below it
    assert lag(10, ((10, 20, ACKED, 1),), 12) == 0
    assert lag(5, (), -1) == -1
    assert lag(-1, (), 10) == -1
    assert lag(12, (), 10) == 0


def test_group_refusals_in_kafkas_order():
    assert group_refusal("g", ErrorCode.NOT_COORDINATOR, True, 3, False, True).error == ErrorCode.NOT_COORDINATOR
    other = group_refusal("g", ErrorCode.NONE, True, 0, True, False)
    assert other is not None
    assert (other.error, other.message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                  "Group g is not a share group.")
    assert group_refusal("g", ErrorCode.NONE, False, 0, False, False).error == ErrorCode.GROUP_ID_NOT_FOUND
    assert group_refusal("g", ErrorCode.NONE, False, 2, True, True).error == ErrorCode.NON_EMPTY_GROUP
    assert group_refusal("g", ErrorCode.NONE, False, 2, True, False) is None  # describe: members are fine
    assert group_refusal("g", ErrorCode.NONE, False, 0, True, True) is None
    assert start_offset_refusal(-1).error == ErrorCode.INVALID_REQUEST
    assert start_offset_refusal(0) is None


def test_a_group_config_sets_that_share_groups_heartbeat_interval_and_session_timeout():
    async def go():
        svc = service(topics=dict, settings=ShareSettings(5000, 45000, 10))
        svc.set_group_config("g", {"share.heartbeat.interval.ms": "7000", "share.session.timeout.ms": "50000"})
        a = await svc.heartbeat(ShareHeartbeat("g", "m", 0, None, ("t",)), 0)
        b = await svc.heartbeat(ShareHeartbeat("h", "m", 0, None, ("t",)), 0)
        assert (a.heartbeat_interval_ms, b.heartbeat_interval_ms) == (7000, 5000)
        assert svc.expire(49_000) == 1  # h's member: 45 s; g's member stays until 50 s
        assert svc.expire(50_001) == 1
        svc.set_group_config("g", {})
        assert svc.settings_for("g") == svc.settings
    run(go())
