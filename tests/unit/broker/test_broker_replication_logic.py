"""Pure parts of the broker data path: high watermark, ISR shrink/expand decisions,
follower progress, follower truncation, and a Partition driven through leader and
follower roles on a real log."""
from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.broker.replication.fetcher import Truncation, truncation_offset
from praha.broker.replication.partition import (
    Partition,
    ReplicaProgress,
    Role,
    high_watermark_candidate,
    may_join_isr,
    out_of_sync,
)
from praha.common import TopicPartition
from praha.log import Log, LogConfig
from praha.protocol.controller_requests import PartitionLeaderState

TP = TopicPartition("t", 0)


def batch(n: int) -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
    for i in range(n):
        b.append(i, timestamp=1000 + i, key=None, value=b"v%d" % i, headers=[])
    return bytes(b.build())


def _at(data: bytes, base_offset: int) -> bytes:
    """The batch as a leader would have stamped it at `base_offset`."""
    return base_offset.to_bytes(8, "big", signed=True) + data[8:]


def state(leader: int, epoch: int, isr=(1, 2, 3), replicas=(1, 2, 3), zk_version: int = 0) -> PartitionLeaderState:
    return PartitionLeaderState(TP, 1, leader, epoch, tuple(isr), zk_version, tuple(replicas))


# ---------------------------------------------------------------------- high watermark
def test_high_watermark_is_min_log_end_over_isr_members():
    f = {2: ReplicaProgress(log_end_offset=7), 3: ReplicaProgress(log_end_offset=5)}
    assert high_watermark_candidate(10, (1, 2, 3), 1, f) == 5
    assert high_watermark_candidate(10, (1, 2), 1, f) == 7  # 3 is out of the ISR: ignored
    assert high_watermark_candidate(10, (1,), 1, f) == 10  # leader alone: its log end


def test_unknown_follower_log_end_holds_the_high_watermark():
    assert high_watermark_candidate(10, (1, 2), 1, {}) == -1
    assert high_watermark_candidate(10, (1, 2), 1, {2: ReplicaProgress()}) == -1


# ---------------------------------------------------------------------- follower progress
def test_follower_fetching_the_leader_end_is_caught_up_now():
    p = ReplicaProgress()
    p.update(fetch_offset=10, leader_leo=10, now_ms=5_000)
    assert p.last_caught_up_ms == 5_000
    assert p.log_end_offset == 10


def test_follower_behind_but_past_previous_leader_end_is_caught_up_as_of_previous_fetch():
    p = ReplicaProgress()
    p.update(fetch_offset=10, leader_leo=10, now_ms=1_000)
    p.update(fetch_offset=10, leader_leo=20, now_ms=2_000)  # leader moved on: not caught up now
    assert p.last_caught_up_ms == 1_000
    p.update(fetch_offset=20, leader_leo=30, now_ms=3_000)  # has what the leader had at 2_000
    assert p.last_caught_up_ms == 2_000


def test_follower_that_never_catches_up_keeps_its_old_time():
    p = ReplicaProgress(last_caught_up_ms=100)
    p.update(fetch_offset=1, leader_leo=50, now_ms=1_000)
    p.update(fetch_offset=2, leader_leo=60, now_ms=2_000)
    assert p.last_caught_up_ms == 100


# ---------------------------------------------------------------------- ISR decisions
def test_shrink_names_isr_members_lagging_longer_than_the_lag_time():
    f = {2: ReplicaProgress(last_caught_up_ms=9_000), 3: ReplicaProgress(last_caught_up_ms=1_000)}
    assert out_of_sync((1, 2, 3), 1, f, now_ms=10_000, lag_time_max_ms=3_000) == {3}
    assert out_of_sync((1, 2, 3), 1, f, now_ms=20_000, lag_time_max_ms=3_000) == {2, 3}
    assert out_of_sync((1,), 1, f, now_ms=20_000, lag_time_max_ms=3_000) == set()  # never the leader


def test_expand_needs_the_high_watermark_and_the_epoch_start():
    assert may_join_isr(follower_leo=10, high_watermark=10, epoch_start_offset=5)
    assert not may_join_isr(follower_leo=9, high_watermark=10, epoch_start_offset=5)
    assert not may_join_isr(follower_leo=10, high_watermark=3, epoch_start_offset=12)
    assert not may_join_isr(follower_leo=-1, high_watermark=-1, epoch_start_offset=-1)


# ---------------------------------------------------------------------- truncation rule
def _local(entries: dict[int, int], leo: int):
    """(epoch, end) for the largest local epoch ≤ e: entries = {epoch: start offset}."""
    epochs = sorted(entries)

    def end_for(e: int):
        le = [x for x in epochs if x <= e]
        if not le:
            return -1, -1
        i = epochs.index(le[-1])
        return le[-1], (entries[epochs[i + 1]] if i + 1 < len(epochs) else leo)
    return end_for


def test_truncation_to_the_leaders_end_of_our_epoch():
    # we wrote epoch 1 from 0 to 15; the leader's epoch 1 ended at 10 (then it moved to epoch 2)
    assert truncation_offset(1, 10, 15, 8, _local({1: 0}, 15)) == Truncation(10, True)


def test_truncation_never_beyond_our_log_end():
    assert truncation_offset(1, 30, 15, 8, _local({1: 0}, 15)) == Truncation(15, True)


def test_leader_without_an_answer_means_truncate_to_the_high_watermark():
    assert truncation_offset(-1, -1, 15, 8, _local({1: 0}, 15)) == Truncation(8, True)


def test_leader_names_an_older_epoch_we_lack_then_we_ask_again():
    # ours: epoch 0 at 0, epoch 3 at 20; leader answers epoch 2 (ours for ≤2 is epoch 0 ending at 20)
    assert truncation_offset(2, 25, 30, 5, _local({0: 0, 3: 20}, 30)) == Truncation(20, False)


def test_leader_names_an_epoch_we_have_with_earlier_end():
    assert truncation_offset(0, 12, 30, 5, _local({0: 0, 3: 20}, 30)) == Truncation(12, True)


# ---------------------------------------------------------------------- a Partition on a real log
def _partition(tmp_path, broker_id: int = 1) -> Partition:
    lg = Log(str(tmp_path / "t-0"), LogConfig(file_delete_delay_ms=0))
    return Partition(TP, lg, broker_id)


def test_leader_high_watermark_follows_the_slowest_isr_member_and_never_goes_back(tmp_path):
    p = _partition(tmp_path)
    p.make_leader(state(1, 0), now_ms=1_000)
    assert p.role is Role.LEADER
    assert p.high_watermark == 0
    p.log.append_as_leader(batch(5), 0)
    assert not p.maybe_increment_high_watermark()  # followers have not fetched yet
    assert p.update_follower(2, 5, 1_100) == (False, False)
    moved, _ = p.update_follower(3, 3, 1_100)
    assert moved
    assert p.high_watermark == 3
    p.update_follower(3, 5, 1_200)
    assert p.high_watermark == 5
    # shrinking the ISR can only raise it; a lagging non-member does not hold it
    p.log.append_as_leader(batch(5), 0)
    p.update_follower(2, 10, 1_300)
    p.isr = (1, 2)
    assert p.maybe_increment_high_watermark()
    assert p.high_watermark == 10
    p.isr = (1, 2, 3)
    assert not p.maybe_increment_high_watermark()
    assert p.high_watermark == 10
    p.log.close()


def test_make_leader_records_the_epoch_start_and_a_returning_follower_may_join(tmp_path):
    p = _partition(tmp_path)
    p.log.append_as_leader(batch(4), 0)
    p.make_leader(state(1, 3, isr=(1, 2)), now_ms=1_000)
    assert p.leader_epoch_start_offset == 4
    assert p.log.end_offset_for_epoch(0) == (0, 4)
    assert p.log.latest_epoch == 3
    p.update_follower(2, 4, 1_000)
    assert p.high_watermark == 4
    moved, join = p.update_follower(3, 2, 1_000)  # behind the HW: not yet
    assert not join
    moved, join = p.update_follower(3, 4, 1_100)
    assert join
    p.log.close()


def test_pending_expansion_counts_for_the_high_watermark(tmp_path):
    p = _partition(tmp_path)
    p.make_leader(state(1, 0, isr=(1,)), now_ms=0)
    p.log.append_as_leader(batch(3), 0)
    p.pending_isr = (1, 2)
    p.update_follower(2, 1, 10)
    assert p.maximal_isr == (1, 2)
    assert not p.maybe_increment_high_watermark()
    p.pending_isr = None
    assert p.maybe_increment_high_watermark()
    assert p.high_watermark == 3
    p.log.close()


def test_follower_high_watermark_is_capped_by_its_log_end(tmp_path):
    p = _partition(tmp_path, broker_id=2)
    p.make_follower(state(1, 0))
    assert p.role is Role.FOLLOWER
    p.update_follower_high_watermark(50)
    assert p.high_watermark == 0
    p.log.append_as_follower(batch(1))
    p.log.append_as_follower(_at(batch(2), 1))
    p.update_follower_high_watermark(50)
    assert p.high_watermark == 3
    p.log.truncate_to(1)  # the batch holding offset 1 goes whole
    p.after_truncation()
    assert p.high_watermark == 1
    p.log.close()


def test_out_of_sync_replicas_of_a_new_leader_start_with_isr_members_caught_up(tmp_path):
    p = _partition(tmp_path)
    p.make_leader(state(1, 0, isr=(1, 2), replicas=(1, 2, 3)), now_ms=10_000)
    assert p.out_of_sync_replicas(12_000, 3_000) == set()
    assert p.out_of_sync_replicas(13_001, 3_000) == {2}
    p.log.close()
