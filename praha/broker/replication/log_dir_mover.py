"""Moving a replica between the log dirs of this broker, online (AlterReplicaLogDirs; Kafka's
future replica and ReplicaAlterLogDirsThread).

AlterReplicaLogDirs, per partition (`decide_alter`, pure): a dir not in `log.dirs` is
LOG_DIR_NOT_FOUND; an offline dir, or a replica in one, KAFKA_STORAGE_ERROR; a partition not
hosted here gets the dir as its preferred one for when it is created, and the answer
REPLICA_NOT_AVAILABLE; the dir it is in already: done (a move elsewhere is abandoned); while
any dir is offline no move starts (KAFKA_STORAGE_ERROR, as Kafka: a future log must not be
made twice); else a move starts (one elsewhere is abandoned first).

A move, on the broker's loop (where every append happens, so the swap needs no lock):
1. the log manager makes an empty future log `<topic>-<p>.<uuid>-future` in the target dir;
2. it follows the current log like a follower follows its leader: its log start, its
   truncations (by leader epoch), then its batches, `CHUNK_BYTES` per step, yielding to the
   loop between steps;
3. in the step where it reaches the current log end, the future log replaces the current one
   (`LogManager.replace_current_with_future`) and the partition serves from it; the old log
   is removed after `file.delete.delay.ms`.
The move is abandoned (its future log deleted) when the partition stops being served here or
either dir fails; a broker restart abandons it too (the move must be asked again).
"""
from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from praha.broker.replication.partition import Partition
from praha.common import TopicPartition
from praha.errors import ErrorCode, PrahaError
from praha.log import Log, LogManager

log = logging.getLogger(__name__)


class HostedReplicas(Protocol):
    """What a move needs of the replica manager: the logs and the partitions served."""

    @property
    def log_manager(self) -> LogManager | None: ...

    @property
    def partitions(self) -> Mapping[TopicPartition, Partition]: ...

    @property
    def offline_partitions(self) -> set[TopicPartition]: ...

    def knows_partition(self, tp: TopicPartition) -> bool:
        """The cluster has this partition (as far as this broker's metadata says)."""
        ...

CHUNK_BYTES = 1 << 20


class AlterAction(Enum):
    NOTHING = "nothing"
    PREFER_DIR = "prefer the dir for when the partition is created"
    CANCEL_MOVE = "abandon the move in progress"
    START_MOVE = "start a move"


@dataclass(frozen=True, slots=True)
class AlterDecision:
    code: ErrorCode
    action: AlterAction


def decide_alter(target: str, configured: list[str], offline: list[str], replica_offline: bool,
                 current_dir: str | None, future_dir: str | None) -> AlterDecision:
    """What AlterReplicaLogDirs does for one partition (see the module docstring);
    `current_dir` is None when the partition is not hosted here."""
    if target not in configured:
        return AlterDecision(ErrorCode.LOG_DIR_NOT_FOUND, AlterAction.NOTHING)
    if target in offline or replica_offline:
        return AlterDecision(ErrorCode.KAFKA_STORAGE_ERROR, AlterAction.NOTHING)
    if current_dir is None:
        return AlterDecision(ErrorCode.REPLICA_NOT_AVAILABLE, AlterAction.PREFER_DIR)
    if current_dir == target:
        return AlterDecision(ErrorCode.NONE, AlterAction.CANCEL_MOVE if future_dir else AlterAction.NOTHING)
    if future_dir == target:
        return AlterDecision(ErrorCode.NONE, AlterAction.NOTHING)  # already on its way
    if offline:
        return AlterDecision(ErrorCode.KAFKA_STORAGE_ERROR, AlterAction.NOTHING)
    return AlterDecision(ErrorCode.NONE, AlterAction.START_MOVE)


class LogDirMover:
    """The moves of one broker; every method runs on the broker's loop."""

    def __init__(self, rm: HostedReplicas):
        self.rm = rm
        self._tasks: dict[TopicPartition, asyncio.Task[None]] = {}
        self.moves_done = 0

    def alter(self, tp: TopicPartition, target_dir: str) -> ErrorCode:
        lm = self.rm.log_manager
        if lm is None:
            return ErrorCode.KAFKA_STORAGE_ERROR
        target = os.path.abspath(target_dir)
        future = lm.future_log(tp)
        hosted = tp in self.rm.partitions and lm.get(tp) is not None
        decision = decide_alter(target, lm.log_dirs, lm.offline_log_dirs(), tp in self.rm.offline_partitions,
                                lm.log_dir_of(tp) if hosted else None, future[1] if future else None)
        if decision.action is AlterAction.PREFER_DIR and self.rm.knows_partition(tp):
            lm.prefer_dir(tp, target)  # (not for made-up partitions: the table would only grow)
        elif decision.action is AlterAction.CANCEL_MOVE:
            self.cancel(tp)
        elif decision.action is AlterAction.START_MOVE:
            self.cancel(tp)
            try:
                lm.create_future_log(tp, target)
            except PrahaError as e:
                log.warning("cannot move %s to %s: %s", tp, target, e)
                return ErrorCode.KAFKA_STORAGE_ERROR
            self._tasks[tp] = asyncio.get_running_loop().create_task(self._move(tp), name=f"move-{tp}")
        return decision.code

    def cancel(self, tp: TopicPartition) -> None:
        """Abandon the move of `tp`, if any (its future log is deleted)."""
        task = self._tasks.pop(tp, None)
        if task is not None:
            task.cancel()
        lm = self.rm.log_manager
        if lm is not None and lm.drop_future_log(tp):
            log.info("abandoned the move of %s", tp)

    def shutdown(self) -> None:
        for tp in list(self._tasks):
            task = self._tasks.pop(tp)
            task.cancel()

    async def _move(self, tp: TopicPartition) -> None:
        lm = self.rm.log_manager
        assert lm is not None
        try:
            while True:
                entry = lm.future_log(tp)
                p = self.rm.partitions.get(tp)
                if entry is None or p is None or entry[0].closed or p.log.closed:
                    return  # abandoned: its dir failed, or the partition went
                future, current = entry[0], p.log
                if self._copy_step(current, future):
                    new, old, doomed = lm.replace_current_with_future(tp)
                    p.log = new
                    self.moves_done += 1
                    delay = old.config.file_delete_delay_ms / 1000.0
                    asyncio.get_running_loop().call_later(delay, lm.delete_replaced, old, doomed)
                    return
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - a failed move leaves the replica where it was
            log.warning("moving %s failed: %s; the replica stays in its dir", tp, e)
            if self._tasks.get(tp) is asyncio.current_task():
                self._tasks.pop(tp, None)
            lm.drop_future_log(tp)
        finally:
            if self._tasks.get(tp) is asyncio.current_task():
                del self._tasks[tp]

    @staticmethod
    def _copy_step(current: Log, future: Log) -> bool:
        """Bring `future` one chunk closer to `current`; True when it holds all of it."""
        start = current.log_start_offset
        if future.log_end_offset < start or (future.log_end_offset == 0 and start > 0):
            future.truncate_fully_and_start_at(start)
        elif future.log_start_offset < start:
            future.increment_log_start_offset(start)
        epoch = future.latest_epoch
        if epoch >= 0:  # the current log was truncated below what was copied: follow it
            _e, end = current.end_offset_for_epoch(epoch)
            if end < 0:
                future.truncate_fully_and_start_at(start)
            elif end < future.log_end_offset:
                future.truncate_to(end)
        if future.log_end_offset > current.log_end_offset:
            future.truncate_to(current.log_end_offset)
        if future.log_end_offset == current.log_end_offset:
            return True
        data = current.read(future.log_end_offset, CHUNK_BYTES).data
        if data:
            future.append_as_follower(data)
        return future.log_end_offset == current.log_end_offset
