"""AlterReplicaLogDirs decisions (pure) and the future log's copy steps (real logs in a temp dir)."""
from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.broker.replication.log_dir_mover import AlterAction, LogDirMover, decide_alter
from praha.errors import ErrorCode
from praha.log import Log, LogConfig

DIRS = ["/d/a", "/d/b"]


def make_batch(count: int, value_size: int = 10) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i in range(count):
        b.append(i, timestamp=1_000 + i, key=None, value=b"v".ljust(value_size, b"x"), headers=[])
    return bytes(b.build())


@pytest.mark.parametrize(("target", "offline", "replica_offline", "current", "future", "code", "action"), [
    ("/d/c", [], False, "/d/a", None, ErrorCode.LOG_DIR_NOT_FOUND, AlterAction.NOTHING),
    ("/d/b", ["/d/b"], False, "/d/a", None, ErrorCode.KAFKA_STORAGE_ERROR, AlterAction.NOTHING),
    ("/d/b", [], True, None, None, ErrorCode.KAFKA_STORAGE_ERROR, AlterAction.NOTHING),
    ("/d/b", [], False, None, None, ErrorCode.REPLICA_NOT_AVAILABLE, AlterAction.PREFER_DIR),
    ("/d/a", [], False, "/d/a", None, ErrorCode.NONE, AlterAction.NOTHING),
    ("/d/a", [], False, "/d/a", "/d/b", ErrorCode.NONE, AlterAction.CANCEL_MOVE),
    ("/d/b", [], False, "/d/a", "/d/b", ErrorCode.NONE, AlterAction.NOTHING),
    ("/d/b", ["/d/c"], False, "/d/a", None, ErrorCode.KAFKA_STORAGE_ERROR, AlterAction.NOTHING),
    ("/d/b", [], False, "/d/a", None, ErrorCode.NONE, AlterAction.START_MOVE),
])
def test_decisions_are_kafkas(target, offline, replica_offline, current, future, code, action):
    d = decide_alter(target, DIRS + ["/d/c"] if offline == ["/d/c"] else DIRS, offline, replica_offline,
                     current, future)
    assert (d.code, d.action) == (code, action)


def _log(path, **kw) -> Log:
    return Log(str(path), LogConfig(file_delete_delay_ms=0, segment_bytes=4096), **kw)


def test_the_future_log_follows_appends_truncations_and_the_log_start(tmp_path):
    current, future = _log(tmp_path / "a" / "t-0"), _log(tmp_path / "b" / "t-0.x-future")
    for i in range(30):
        current.append_as_leader(make_batch(3, value_size=300), leader_epoch=1 + i // 10)
    steps = 0
    while not LogDirMover._copy_step(current, future):
        steps += 1
    assert steps > 0
    assert future.log_end_offset == current.log_end_offset == 90
    assert future.read(0, 1 << 20).data == current.read(0, 1 << 20).data[:len(future.read(0, 1 << 20).data)]
    # the current log is truncated and written again under a new epoch: the copy follows
    current.truncate_to(45)
    current.append_as_leader(make_batch(5), leader_epoch=7)
    while not LogDirMover._copy_step(current, future):
        pass
    assert future.log_end_offset == 50
    assert future.end_offset_for_epoch(7) == current.end_offset_for_epoch(7)
    # retention moved the log start past everything copied
    current.increment_log_start_offset(50)
    assert LogDirMover._copy_step(current, future)
    assert future.log_start_offset == 50
    current.close()
    future.close()
