"""A follower's truncation against its leader (KIP-101/279) on real logs: the questions the
fetcher asks while a partition is TRUNCATING, answered by the leader's log, until it may
fetch. Found by chaos seed 216 (`--netns --zk-ensemble 3`): chaos-txn-1-1's replica on
broker 5 stayed outside the ISR for the last two minutes of the campaign, asking its
leader the same OffsetsForLeaderEpoch question every round and never fetching."""
from __future__ import annotations

import struct

from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.broker.replication.fetcher import truncate_follower, truncation_offset
from praha.broker.replication.partition import Partition
from praha.common import TopicPartition
from praha.log import Log, LogConfig
from praha.protocol.controller_requests import PartitionLeaderState

TP = TopicPartition("chaos-txn-1", 1)
ROUNDS = 10  # the real fetcher asks every round (every few ms) for as long as it gets no answer it can use


def stamped(base_offset: int, leader_epoch: int, n: int = 1) -> bytes:
    """n records as a leader of `leader_epoch` stored them at `base_offset` (what a follower
    fetches: the partition leader epoch is outside the batch CRC)."""
    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
    for i in range(n):
        b.append(i, timestamp=1000 + i, key=None, value=b"v%d" % (base_offset + i), headers=[])
    data = bytearray(b.build())
    struct.pack_into(">q", data, 0, base_offset)
    struct.pack_into(">i", data, 12, leader_epoch)
    return bytes(data)


def replica(tmp_path, broker: int) -> Partition:
    return Partition(TP, Log(str(tmp_path / f"broker-{broker}" / "chaos-txn-1-1"), LogConfig(file_delete_delay_ms=0)),
                     broker)


def lead(p: Partition, epoch: int) -> None:
    p.make_leader(PartitionLeaderState(TP, 11, p.broker_id, epoch, (2, 4, 5), 0, (2, 4, 5)), now_ms=1_000)


def follow(p: Partition, leader: int, epoch: int) -> None:
    p.make_follower(PartitionLeaderState(TP, 11, leader, epoch, (2, 4, 5), 0, (2, 4, 5)))


def truncate_against(follower: Partition, leader: Partition) -> int:
    """The fetcher's TRUNCATING state (`ReplicaFetcher._truncate`) without the wire: ask about
    our latest epoch, truncate where the answer says; the number of rounds until it may fetch."""
    for n in range(1, ROUNDS + 1):
        asked = follower.log.latest_epoch
        epoch, end = leader.log.end_offset_for_epoch(asked)
        tr = truncation_offset(epoch, end, follower.log.log_end_offset, follower.high_watermark,
                               follower.log.end_offset_for_epoch)
        truncate_follower(follower.log, tr.offset)
        follower.after_truncation()
        if tr.complete:
            return n
    raise AssertionError(f"broker {follower.broker_id} still truncating after {ROUNDS} rounds: it asks about epoch "
                         f"{follower.log.latest_epoch}, broker {leader.broker_id} answers "
                         f"{leader.log.end_offset_for_epoch(follower.log.latest_epoch)}; its epochs "
                         f"{follower.log.epoch_cache.entries}")


def test_seed_216_a_replica_that_led_an_epoch_without_records_follows_again(tmp_path):
    """Seed 216, scaled down. Offsets 0-2 were written in epoch 19 (broker 4 leading). Broker 2
    was made leader of epoch 20 and appended nothing before broker 4 led again (epoch 21), from
    which brokers 2 and 5 fetched offset 3, still an epoch-19 record. Broker 5 was then leader
    of epoch 22 for five seconds, again without a record, and lost the seat to broker 2 (epoch
    23). Each empty epoch stayed in its replica's epoch cache, so broker 2 answered broker 5's
    question about epoch 22 with "epoch 20 ends at 4"; broker 5 has no epoch 20, cut its log
    to the end of its epoch 19 (its log end: nothing went, its epoch 22 stayed) and asked
    about epoch 22 again, for ever. Kafka's `UnifiedLog.truncateTo` drops the epochs starting
    at the log end even when no record goes, for exactly this leader "that inserted the first
    start offset entry, but then failed to append any entries before another leader was
    elected"; praha's log now does too."""
    b2, b4, b5 = replica(tmp_path, 2), replica(tmp_path, 4), replica(tmp_path, 5)
    lead(b4, 19)
    b4.log.append_as_leader(stamped(0, 0, 3), 19)
    for p in (b2, b5):
        follow(p, 4, 19)
        p.log.append_as_follower(stamped(0, 19, 3))
    lead(b2, 20)  # a leader for a moment, nothing appended
    assert b2.log.epoch_cache.entries[-1].epoch == 20
    lead(b4, 21)
    b4.log.append_as_leader(stamped(3, 0), 19)  # in seed 216 this was broker 4's own epoch-19 record
    for p in (b2, b5):
        follow(p, 4, 21)
        assert truncate_against(p, b4) <= 2
        p.log.append_as_follower(b4.log.read(p.log.log_end_offset, 1 << 20).data)
    # what made broker 2's answer wrong: an epoch that holds no record is gone once it truncates at its log end
    assert [e.epoch for e in b2.log.epoch_cache.entries] == [19]
    lead(b5, 22)  # leader for five seconds, nothing appended
    follow(b2, 5, 22)
    assert truncate_against(b2, b5) <= 2
    lead(b2, 23)
    follow(b5, 2, 23)
    rounds = truncate_against(b5, b2)  # before the fix: AssertionError, still asking about epoch 22
    assert rounds <= 2
    assert b5.log.latest_epoch <= 19
    b2.log.append_as_leader(stamped(0, 0, 2), 23)
    b5.log.append_as_follower(b2.log.read(b5.log.log_end_offset, 1 << 20).data)
    assert b5.log.log_end_offset == b2.log.log_end_offset == 6
    for p in (b2, b4, b5):
        p.log.close()


def test_seed_216_a_follower_whose_last_epoch_is_empty_stops_asking_about_it(tmp_path):
    """The loop itself, on the leader's epochs as broker 2 had them in seed 216 (an empty epoch
    20 before its 23): broker 5 asks about its own empty epoch 22, is told "epoch 20", which
    it lacks, and truncates at its log end. The empty epoch must go then, or the next round
    asks the same."""
    b2, b5 = replica(tmp_path, 2), replica(tmp_path, 5)
    for p in (b2, b5):
        follow(p, 4, 19)
        for offset in range(4):
            p.log.append_as_follower(stamped(offset, 19))
    b2.log.epoch_cache.assign(20, 3)  # how broker 2's cache ended the campaign: 19 -> 1051, 20 -> 1110, 23 -> 1111
    b2.log.epoch_cache.assign(23, 4)
    lead(b5, 22)
    follow(b5, 2, 23)
    assert b2.log.end_offset_for_epoch(22) == (20, 4)
    assert truncate_against(b5, b2) == 2
    assert [e.epoch for e in b5.log.epoch_cache.entries] == [19]
    assert b5.log.log_end_offset == 3  # the leader's answer "19 ends at 3" costs one record, fetched again
    for p in (b2, b5):
        p.log.close()
