"""Transaction markers: the control batches that end a transaction in a partition.

The transaction coordinator asks each partition leader (WriteTxnMarkers) to append one
control batch per finished transaction: attributes transactional (0x10) and control
(0x20), the producer's id and epoch, no sequence (-1), and one record whose key is
version int16 (0) + type int16 (0 = ABORT, 1 = COMMIT) and whose value is version int16
(0) + the coordinator epoch int32 (Kafka's `EndTransactionMarker`). A control batch
whose records were all removed by the cleaner carries no marker (`parse_marker` → None).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from praha.log.batch import CONTROL_MASK, TRANSACTIONAL_MASK, Buffer
from praha.log.errors import CorruptBatchError
from praha.log.records import decode_batch, encode_records, record_key_value

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
CONTROL_VERSION = 0


class ControlType(IntEnum):
    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """What a control batch says: the transaction's outcome and its coordinator's epoch."""

    control_type: ControlType
    coordinator_epoch: int

    @property
    def is_commit(self) -> bool:
        return self.control_type is ControlType.COMMIT


def build_marker_batch(producer_id: int, producer_epoch: int, marker: TxnMarker, timestamp_ms: int,
                       leader_epoch: int = 0) -> bytes:
    """A control batch at offset 0 (the log stamps the real one), CRC included."""
    key = _KEY.pack(CONTROL_VERSION, int(marker.control_type))
    value = _VALUE.pack(CONTROL_VERSION, marker.coordinator_epoch)
    return encode_records(0, [(key, value, timestamp_ms)], producer_id=producer_id, producer_epoch=producer_epoch,
                          leader_epoch=leader_epoch, attributes=TRANSACTIONAL_MASK | CONTROL_MASK)


def parse_marker(batch: Buffer) -> TxnMarker | None:
    """The marker in one whole control batch; None if the cleaner emptied it. Raises
    CorruptBatchError for a key that is not a transaction marker's."""
    decoded = decode_batch(batch)
    if not decoded.records:
        return None
    key, value = record_key_value(decoded.records[0].raw)
    if key is None or len(key) < _KEY.size:
        raise CorruptBatchError(decoded.header.position, "control record without a valid key")
    _, kind = _KEY.unpack_from(key)
    if kind not in (ControlType.ABORT, ControlType.COMMIT):
        raise CorruptBatchError(decoded.header.position, f"unknown control record type {kind}")
    coordinator_epoch = -1
    if value is not None and len(value) >= _VALUE.size:
        _, coordinator_epoch = _VALUE.unpack_from(value)
    return TxnMarker(ControlType(kind), coordinator_epoch)
