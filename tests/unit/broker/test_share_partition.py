"""The share partition's decisions (KIP-932), without a broker: acquisition, locks, delivery
counts, acknowledgements, the start offset, the in-flight window, committed reads."""
from __future__ import annotations

import pytest

from praha.broker.share.partition import (
    AckBatch,
    AcquiredRange,
    InvalidRecordState,
    LogRecord,
    RecordState,
    SharePartition,
    SharePartitionSettings,
    StateBatch,
    committed_offsets,
    initial_start_offset,
)
from praha.broker.share.partition import (
    AcknowledgeType as T,
)
from praha.errors import ErrorCode, PrahaError

LOCK = 1000


def sp(start: int = 0, locks: int = 100, limit: int = 3) -> SharePartition:
    return SharePartition(SharePartitionSettings(max_record_locks=locks, lock_duration_ms=LOCK,
                                                 delivery_count_limit=limit), start)


def ack(first: int, last: int, *types: int) -> AckBatch:
    return AckBatch(first, last, tuple(types))


def test_two_members_acquire_disjoint_records_and_accepting_moves_the_start_offset():
    p = sp()
    assert p.acquire("a", [0, 1, 2], 3, now_ms=0, max_records=2) == [AcquiredRange(0, 1, 1)]
    assert p.acquire("b", [0, 1, 2], 3, now_ms=0) == [AcquiredRange(2, 2, 1)]
    assert p.acquire("c", [0, 1, 2], 3, now_ms=0) == []
    assert p.fetch_offset() == 3
    p.acknowledge("b", [ack(2, 2, T.ACCEPT)])
    assert p.start_offset == 0  # 0 and 1 still held by a
    p.acknowledge("a", [ack(0, 1, T.ACCEPT)])
    assert (p.start_offset, p.records, p.in_flight_count()) == (3, {}, 0)


def test_an_expired_lock_makes_the_record_available_again_with_its_delivery_count_kept():
    p = sp()
    p.acquire("a", [0, 1], 2, now_ms=0)
    assert p.expire_locks(LOCK - 1) == 0
    assert p.next_lock_deadline() == LOCK
    assert p.expire_locks(LOCK) == 2
    assert p.fetch_offset() == 0
    assert p.acquire("b", [0, 1], 2, now_ms=LOCK) == [AcquiredRange(0, 1, 2)]
    with pytest.raises(InvalidRecordState):  # a's lock is gone: its late acknowledgement is refused
        p.acknowledge("a", [ack(0, 0, T.ACCEPT)])


def test_release_gives_the_record_back_at_once_and_reject_archives_it_for_good():
    p = sp()
    p.acquire("a", [0, 1], 2, now_ms=0)
    p.acknowledge("a", [ack(0, 1, T.RELEASE, T.REJECT)])
    assert p.records[0].state is RecordState.AVAILABLE
    assert 1 in p.records
    assert p.records[1].state is RecordState.ARCHIVED
    assert p.acquire("b", [0, 1], 2, now_ms=0) == [AcquiredRange(0, 0, 2)]
    p.acknowledge("b", [ack(0, 0, T.ACCEPT)])
    assert p.start_offset == 2
    assert p.records == {}


def test_a_poison_record_is_archived_when_its_delivery_count_reaches_the_limit():
    p = sp(limit=3)
    p.acquire("a", [0, 1], 2, now_ms=0)
    p.acknowledge("a", [ack(1, 1, T.ACCEPT), ack(0, 0, T.RELEASE)])
    for delivery in (2, 3):
        assert p.acquire("a", [0, 1], 2, now_ms=0) == [AcquiredRange(0, 0, delivery)]
        p.acknowledge("a", [ack(0, 0, T.RELEASE)])
    assert p.start_offset == 2
    assert p.records == {}
    assert p.acquire("a", [0, 1], 2, now_ms=0) == []


def test_lock_expiry_at_the_limit_archives_too():
    p = sp(limit=1)
    p.acquire("a", [0], 1, now_ms=0)
    p.expire_locks(LOCK)
    assert p.start_offset == 1


def test_acknowledging_what_one_does_not_hold_changes_nothing():
    p = sp()
    p.acquire("a", [0, 1, 2], 3, now_ms=0)
    before = {o: (r.state, r.member_id, r.delivery_count) for o, r in p.records.items()}
    for member, batches in [("b", [ack(0, 0, T.ACCEPT)]),                    # another member's record
                            ("a", [ack(1, 1, T.ACCEPT), ack(7, 7, T.ACCEPT)]),  # past the end: never acquired
                            ("a", [ack(0, 2, T.ACCEPT, T.ACCEPT)]),           # types do not match the range
                            ("a", [ack(0, 0, 9)])]:                           # no such type
        with pytest.raises(InvalidRecordState) as e:
            p.acknowledge(member, batches)
        assert e.value.code == ErrorCode.INVALID_RECORD_STATE
    assert {o: (r.state, r.member_id, r.delivery_count) for o, r in p.records.items()} == before
    p.acknowledge("a", [ack(0, 0, T.ACCEPT)])
    with pytest.raises(InvalidRecordState):  # acknowledged twice
        p.acknowledge("a", [ack(0, 0, T.ACCEPT)])


def test_the_in_flight_window_caps_how_many_records_are_locked():
    p = sp(locks=3)
    assert p.acquire("a", range(10), 10, now_ms=0) == [AcquiredRange(0, 2, 1)]
    assert p.window_full()
    assert p.acquire("b", range(10), 10, now_ms=0) == []
    p.acknowledge("a", [ack(0, 0, T.ACCEPT)])
    assert p.acquire("b", range(10), 10, now_ms=0) == [AcquiredRange(3, 3, 1)]


def test_offsets_without_a_deliverable_record_are_archived_as_gaps():
    p = sp()
    # 2 is a transaction marker, 4 an aborted record: the read went up to offset 6
    assert p.acquire("a", [0, 1, 3, 5], 6, now_ms=0) == [AcquiredRange(0, 1, 1), AcquiredRange(3, 3, 1),
                                                         AcquiredRange(5, 5, 1)]
    assert p.records[2].state is RecordState.ARCHIVED
    assert p.records[4].state is RecordState.ARCHIVED
    p.acknowledge("a", [ack(0, 5, T.ACCEPT, T.ACCEPT, T.GAP, T.ACCEPT, T.GAP, T.ACCEPT)])
    assert p.start_offset == 6
    assert p.end_offset == 6


def test_a_member_leaving_releases_what_it_holds():
    p = sp()
    p.acquire("a", [0, 1], 2, now_ms=0)
    p.acquire("b", [0, 1, 2], 3, now_ms=0)
    assert p.release_member("a") == 2
    assert p.acquired_by("b") == [2]
    assert p.acquire("c", [0, 1, 2], 3, now_ms=0) == [AcquiredRange(0, 1, 2)]


def test_moving_the_start_offset_forgets_what_lies_below():
    p = sp()
    p.acquire("a", [0, 1, 2], 3, now_ms=0)
    p.move_start(2)
    assert (p.start_offset, sorted(p.records)) == (2, [2])
    p.move_start(10)
    assert (p.start_offset, p.end_offset, p.fetch_offset()) == (10, 10, 10)


def test_the_durable_state_keeps_what_is_done_and_turns_locks_into_available_records():
    p = sp()
    p.acquire("a", [0, 1, 2, 3], 4, now_ms=0)
    p.acknowledge("a", [ack(1, 1, T.ACCEPT), ack(3, 3, T.REJECT)])
    batches = p.state_batches()
    assert batches == [StateBatch(0, 0, RecordState.AVAILABLE, 1), StateBatch(1, 1, RecordState.ACKNOWLEDGED, 1),
                       StateBatch(2, 2, RecordState.AVAILABLE, 1), StateBatch(3, 3, RecordState.ARCHIVED, 1)]
    q = SharePartition.restore(p.settings, p.start_offset, batches)
    # after the failover: the accepted and rejected records stay done, the others come again (delivery 2)
    assert q.acquire("b", [0, 1, 2, 3, 4], 5, now_ms=0) == [AcquiredRange(0, 0, 2), AcquiredRange(2, 2, 2),
                                                            AcquiredRange(4, 4, 1)]


def test_a_record_acquired_for_its_last_delivery_is_archived_by_a_failover_not_delivered_again():
    """Chaos seed 502 (`--workload share`, a controlled restart of the leader): a poison record
    acquired for the 4th time of a limit of 4 was written as available with count 4 when another
    record's acknowledgement was stored; the next leader delivered it a 5th time."""
    p = sp(limit=2)
    p.acquire("a", [0, 1], 2, now_ms=0)
    p.acknowledge("a", [ack(0, 0, T.RELEASE), ack(1, 1, T.RELEASE)])
    assert p.acquire("a", [0, 1], 2, now_ms=0) == [AcquiredRange(0, 1, 2)]  # the last delivery of both
    p.acknowledge("a", [ack(1, 1, T.ACCEPT)])  # the write a leader makes here holds offset 0 acquired
    batches = p.state_batches()
    assert batches == [StateBatch(0, 0, RecordState.ARCHIVED, 2), StateBatch(1, 1, RecordState.ACKNOWLEDGED, 2)]
    q = SharePartition.restore(p.settings, p.start_offset, batches)
    assert q.acquire("b", [0, 1], 2, now_ms=0) == []
    assert q.start_offset == 2
    # state an earlier leader wrote (available at the limit) is not delivered past the limit either
    old = SharePartition.restore(p.settings, 0, [StateBatch(0, 0, RecordState.AVAILABLE, 2)])
    assert old.acquire("b", [0, 1], 2, now_ms=0) == [AcquiredRange(1, 1, 1)]
    assert 0 not in old.records


def test_read_committed_skips_aborted_transactions_and_markers():
    recs = [LogRecord(0, -1, False, False), LogRecord(1, 7, True, False), LogRecord(2, 8, True, False),
            LogRecord(3, 7, True, True),   # abort marker of producer 7
            LogRecord(4, 8, True, True),   # commit marker of producer 8
            LogRecord(5, 7, True, False)]  # producer 7's next transaction, not aborted
    assert committed_offsets(recs, [(7, 1)]) == [0, 2, 5]
    assert committed_offsets(recs, []) == [0, 1, 2, 5]


def test_share_auto_offset_reset():
    assert initial_start_offset("latest", 5, 20) == 20
    assert initial_start_offset("earliest", 5, 20) == 5
    with pytest.raises(PrahaError):
        initial_start_offset("none", 5, 20)


def test_a_share_fetch_ships_only_the_batches_holding_what_was_acquired():
    from praha.broker.share.partition import covering
    from praha.log.batch import iter_batches
    from praha.log.records import encode_records

    first = bytes(encode_records(0, [(None, b"a", 0)] * 3))
    second = bytes(encode_records(3, [(None, b"b", 0)] * 3))
    third = bytes(encode_records(6, [(None, b"c", 0)] * 3))
    data = first + second + third
    headers = list(iter_batches(data))
    assert covering(data, headers, [AcquiredRange(4, 5, 1)]) == second
    assert covering(data, headers, [AcquiredRange(2, 3, 1), AcquiredRange(5, 6, 2)]) == data
    assert covering(data, headers, []) == b""


def test_acquirable_counts_new_offsets_in_the_window_and_available_ones_inside_it():
    p = sp(locks=10)
    assert p.acquirable(0, 4) == 5
    assert p.acquirable(5, 30) == 5  # the window ends at offset 10
    p.acquire("a", range(6), 6, now_ms=0)  # 0-5 acquired
    p.acknowledge("a", [ack(0, 1, T.ACCEPT), ack(2, 2, T.RELEASE)])  # start 2; 2 available again
    assert p.acquirable(0, 5) == 1  # only 2: 0-1 done, 3-5 held
    assert p.acquirable(0, 20) == 1 + 6  # and 6-11, the window now ending at 12
    assert p.acquirable(40, 50) == 0
