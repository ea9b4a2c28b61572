"""The broker's on-disk log: one directory of segments per partition, Kafka file formats.

Modules: `batch` (v2 batch headers as bytes), `index` (offset/time indexes),
`segment` (one segment file), `recovery` (opening a directory), `log` (one
partition), `leader_epoch` (epoch → start offset cache), `checkpoints` (offset
checkpoint files), `manager` (all logs of a broker), `cleaner` (log compaction, with
`offset_map` and `records`, which decodes and re-encodes records), `config`, `errors`.
"""
from praha.log.config import LogConfig
from praha.log.errors import (
    CorruptBatchError,
    CorruptCheckpointError,
    InvalidRecordError,
    LogStorageError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    UnexpectedAppendOffsetError,
    UnsupportedMagicError,
)
from praha.log.leader_epoch import LeaderEpochCache
from praha.log.log import AppendInfo, Log
from praha.log.manager import LogManager
from praha.log.slices import FileRegion, LogSlice, ReadResult

__all__ = [
    "AppendInfo",
    "CorruptBatchError",
    "CorruptCheckpointError",
    "FileRegion",
    "InvalidRecordError",
    "LeaderEpochCache",
    "Log",
    "LogConfig",
    "LogManager",
    "LogSlice",
    "LogStorageError",
    "MessageTooLargeError",
    "OffsetOutOfRangeError",
    "ReadResult",
    "RecordListTooLargeError",
    "UnexpectedAppendOffsetError",
    "UnsupportedMagicError",
]
