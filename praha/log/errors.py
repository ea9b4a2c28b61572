"""Errors raised by the on-disk log, each carrying the Kafka code a client would see.

Mapping for request handlers (`exc.code` is always right to send back):

- `CorruptBatchError` (CORRUPT_MESSAGE): bad framing or CRC in a produce request, a
  follower fetch response or on disk.
- `UnsupportedMagicError` (UNSUPPORTED_VERSION): a magic 0/1 message set. praha stores
  only v2 batches and does not up-convert; such sets only arrive with Produce v0-v2, so
  "unsupported version" is the honest answer. It subclasses `CorruptBatchError` so
  storage code that treats unreadable bytes as corruption catches it too.
- `InvalidRecordError` (INVALID_RECORD): well framed but not acceptable from a client
  (record count inconsistent with the offset range, control batch from a producer).
- `MessageTooLargeError` (MESSAGE_TOO_LARGE): one batch exceeds `max.message.bytes`.
- `RecordListTooLargeError` (RECORD_LIST_TOO_LARGE): the append exceeds `segment.bytes`.
- `OffsetOutOfRangeError` (OFFSET_OUT_OF_RANGE): a read outside [log start, log end].
- `UnexpectedAppendOffsetError`: a follower append does not continue from the log end.
- `LogStorageError` (KAFKA_STORAGE_ERROR): I/O failure, closed or deleted log, bad checkpoint.
- `OutOfOrderSequenceError` (OUT_OF_ORDER_SEQUENCE_NUMBER), `InvalidProducerEpochError`
  (INVALID_PRODUCER_EPOCH): an idempotent producer's batch skips sequences, or comes
  from an epoch older than the log has seen.
"""
from __future__ import annotations

from praha.errors import CorruptLogError, ErrorCode, PrahaError


class CorruptBatchError(CorruptLogError):
    """A batch failed framing, magic or CRC checks; `position` is where it starts."""

    def __init__(self, position: int, reason: str):
        super().__init__(f"corrupt record batch at byte {position}: {reason}")
        self.position = position
        self.reason = reason


class UnsupportedMagicError(CorruptBatchError):
    code = ErrorCode.UNSUPPORTED_VERSION


class InvalidRecordError(PrahaError):
    code = ErrorCode.INVALID_RECORD


class MessageTooLargeError(PrahaError):
    code = ErrorCode.MESSAGE_TOO_LARGE


class RecordListTooLargeError(PrahaError):
    code = ErrorCode.RECORD_LIST_TOO_LARGE


class OutOfOrderSequenceError(PrahaError):
    code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(PrahaError):
    code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(PrahaError):
    """A produce that does not fit the producer's transaction state here (a plain batch
    inside an open transaction, or a transactional one the coordinator did not verify)."""

    code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(PrahaError):
    """A marker from a coordinator older than the one that wrote the producer's last marker."""

    code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class OffsetOutOfRangeError(PrahaError):
    code = ErrorCode.OFFSET_OUT_OF_RANGE

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int):
        super().__init__(f"offset {offset} is outside [{log_start_offset}, {log_end_offset}]")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class UnexpectedAppendOffsetError(PrahaError):
    """Follower data does not continue from our log end (gap or overlap): the fetcher
    must truncate or refetch rather than append."""

    def __init__(self, message: str, first_offset: int, log_end_offset: int):
        super().__init__(message)
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset


class LogStorageError(PrahaError):
    code = ErrorCode.KAFKA_STORAGE_ERROR


class CorruptCheckpointError(LogStorageError):
    """A checkpoint file exists but cannot be parsed."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"corrupt checkpoint file {path}: {reason}")
        self.path = path
        self.reason = reason


class CorruptIndexError(LogStorageError):
    """An index file does not match its segment; the caller rebuilds it."""
