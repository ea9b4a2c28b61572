"""ListOffsets from a leader whose high watermark has not reached the start of its epoch: Kafka
answers a consumer OFFSET_NOT_AVAILABLE (a retriable error) instead of the stale end. A replica
just made leader keeps its follower high watermark until its followers fetch from it; answered
with it, a consumer resets to an end below offsets that were acknowledged (the chaos harness's
final read once counted records past such an end as lost, session 14)."""
from __future__ import annotations

from types import SimpleNamespace

from praha.broker.handlers.data import _LOP, DataApis
from praha.common import TopicPartition
from praha.errors import ErrorCode
from praha.protocol.registry import CONSUMER_REPLICA_ID
from tests.unit.broker.test_follower_truncation import follow, lead, replica, stamped

TP = TopicPartition("chaos-txn-1", 1)
LATEST, EARLIEST = -1, -2


def answer(p, timestamp: int, replica_id: int = CONSUMER_REPLICA_ID):
    broker = SimpleNamespace(replica_manager=SimpleNamespace(partitions={TP: p}, offline_partitions=set()))
    apis = DataApis.__new__(DataApis)  # the ListOffsets decision needs only the broker's partitions
    apis.broker = broker  # type: ignore[assignment]
    return apis._list_offset(TP, _LOP(partition_index=TP.partition, current_leader_epoch=-1, timestamp=timestamp),
                             replica_id)


def test_a_new_leader_whose_high_watermark_lags_its_epoch_start_answers_offset_not_available(tmp_path):
    p = replica(tmp_path, 4)
    follow(p, leader=2, epoch=3)
    p.log.append_as_follower(stamped(0, 3, 10))  # fetched 0..9; the old leader's high watermark reached 6
    p.update_follower_high_watermark(6)
    lead(p, epoch=4)  # the old leader died: epoch 4 starts at 10
    assert (p.leader_epoch_start_offset, p.high_watermark) == (10, 6)

    latest = answer(p, LATEST)
    assert latest.error_code == ErrorCode.OFFSET_NOT_AVAILABLE
    assert latest.offset == -1
    assert answer(p, EARLIEST).error_code == ErrorCode.NONE  # the log start is known
    assert answer(p, 1000 + 1).error_code == ErrorCode.NONE  # found below the high watermark: answered
    assert answer(p, 1000 + 8).error_code == ErrorCode.OFFSET_NOT_AVAILABLE  # maybe there, not yet visible
    assert answer(p, LATEST, replica_id=5).offset == 10  # a replica asks for the log end: no such wait

    p.high_watermark = 10  # the followers fetched: the end is the epoch's start or later
    latest = answer(p, LATEST)
    assert (latest.error_code, latest.offset) == (ErrorCode.NONE, 10)
