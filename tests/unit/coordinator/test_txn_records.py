"""`__transaction_state` records against Kafka's layouts (TransactionLogKey v0,
TransactionLogValue v0 as Kafka 3.x writes it and v1, flexible, as it may read it), and
the transaction state table against Kafka's `TransactionState.validPreviousStates`."""
from __future__ import annotations

import struct

import pytest

from praha.coordinator.transaction.metadata import VALID_PREVIOUS, TransactionMetadata, TxnState, TxnTransitionError
from praha.coordinator.transaction.records import (
    TxnLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from praha.errors import CorruptLogError, ErrorCode


def _kafka_string(s: str) -> bytes:
    return struct.pack(">h", len(s.encode())) + s.encode()


def test_key_is_version_0_then_the_transactional_id():
    assert encode_key("my-txn") == b"\x00\x00" + _kafka_string("my-txn")
    assert decode_key(encode_key("ünï")) == "ünï"
    with pytest.raises(CorruptLogError):
        decode_key(b"\x00\x01" + _kafka_string("x"))


def test_value_v0_byte_for_byte():
    v = TxnLogValue(producer_id=4001, producer_epoch=7, timeout_ms=60000, state_id=TxnState.ONGOING.id,
                    partitions=(("orders", 0), ("orders", 2), ("pay", 1)), last_update_ms=1700000000123,
                    start_ms=1700000000000)
    expected = (struct.pack(">hqhib", 0, 4001, 7, 60000, 1) + struct.pack(">i", 2)
                + _kafka_string("orders") + struct.pack(">iii", 2, 0, 2)
                + _kafka_string("pay") + struct.pack(">ii", 1, 1)
                + struct.pack(">qq", 1700000000123, 1700000000000))
    assert encode_value(v) == expected
    assert decode_value(expected) == v


def test_an_empty_transaction_has_null_partitions():
    v = TxnLogValue(9, 0, 1000, TxnState.EMPTY.id, (), 5, -1)
    data = encode_value(v)
    assert data[2 + 8 + 2 + 4 + 1:][:4] == struct.pack(">i", -1)
    assert decode_value(data) == v


def test_value_v1_flexible_is_read():
    # compact arrays/strings (length + 1 as unsigned varints) and empty tagged-field sections
    body = (struct.pack(">hqhib", 1, 77, 3, 900000, TxnState.PREPARE_COMMIT.id)
            + bytes([2]) + bytes([len("t") + 1]) + b"t" + bytes([3]) + struct.pack(">ii", 4, 5) + bytes([0])
            + struct.pack(">qq", 20, 10) + bytes([0]))
    assert decode_value(body) == TxnLogValue(77, 3, 900000, 2, (("t", 4), ("t", 5)), 20, 10)


def test_truncated_or_unknown_values_are_corrupt():
    data = encode_value(TxnLogValue(1, 0, 1000, 0, (), 1, 1))
    with pytest.raises(CorruptLogError):
        decode_value(data[:-3])
    with pytest.raises(CorruptLogError):
        decode_value(b"\x00\x05" + data[2:])


def test_partition_is_kafkas_abs_java_hash_mod_partitions():
    assert partition_for("hello", 50) == 99162322 % 50  # "hello".hashCode() == 99162322
    assert partition_for("Aa", 50) == partition_for("BB", 50) == 2112 % 50  # Java's textbook collision
    assert partition_for("polygenelubricants", 50) == 0  # hashCode() == Integer.MIN_VALUE: Utils.abs gives 0


def test_state_ids_and_names_are_kafkas():
    assert [(s.id, s.display) for s in TxnState] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"), (4, "CompleteCommit"),
        (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence")]


def test_valid_previous_states_are_kafkas():
    S = TxnState
    assert VALID_PREVIOUS == {
        S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.PREPARE_COMMIT: {S.ONGOING},
        S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
        S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
        S.COMPLETE_ABORT: {S.PREPARE_ABORT},
        S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
        S.PREPARE_EPOCH_FENCE: {S.ONGOING},
    }


def test_transitions_are_two_steps_and_guarded():
    txn = TransactionMetadata("t", producer_id=5, producer_epoch=0, timeout_ms=1000)
    with pytest.raises(TxnTransitionError) as e:
        txn.prepare_end(commit=True, now_ms=1)  # Empty -> PrepareCommit: no transaction
    assert e.value.code == ErrorCode.INVALID_TXN_STATE
    t = txn.prepare_add_partitions({("a", 0)}, now_ms=10)
    assert txn.state is TxnState.EMPTY
    assert txn.pending == t  # nothing applied before the write
    with pytest.raises(TxnTransitionError) as e:
        txn.prepare_add_partitions({("a", 1)}, now_ms=11)
    assert e.value.code == ErrorCode.CONCURRENT_TRANSACTIONS
    txn.complete(t)
    assert (txn.state, txn.partitions, txn.start_ms, txn.pending) == (TxnState.ONGOING, {("a", 0)}, 10, None)
    txn.complete(txn.prepare_add_partitions({("a", 1)}, now_ms=20))
    assert txn.partitions == {("a", 0), ("a", 1)}
    assert txn.start_ms == 10
    txn.complete(txn.prepare_end(commit=False, now_ms=30))
    txn.complete(txn.prepare_complete(now_ms=40))
    assert (txn.state, txn.partitions) == (TxnState.COMPLETE_ABORT, set())
    bump = txn.prepare_epoch_bump(2000, now_ms=50)
    txn.abandon()  # the write failed: nothing changes
    assert txn.producer_epoch == 0
    assert txn.pending is None
    assert bump.producer_epoch == 1


def test_fencing_bumps_the_epoch_before_the_abort():
    txn = TransactionMetadata("t", 5, 3, 1000)
    txn.complete(txn.prepare_add_partitions({("a", 0)}, 1))
    txn.apply_fence_in_memory()
    assert (txn.state, txn.producer_epoch, txn.last_producer_epoch) == (TxnState.PREPARE_EPOCH_FENCE, 4, 3)
    txn.complete(txn.prepare_end(commit=False, now_ms=2))
    assert txn.state is TxnState.PREPARE_ABORT


def test_an_exhausted_epoch_rotates_the_producer_id():
    txn = TransactionMetadata("t", 5, 32766, 1000)
    txn.complete(txn.prepare_epoch_bump(1000, 1, new_producer_id=6))
    assert (txn.producer_id, txn.producer_epoch, txn.last_producer_id) == (6, 0, 5)
