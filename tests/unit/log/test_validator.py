"""The leader's record checks (praha.log.validator): batches whose header and CRC are
valid but whose records a consumer cannot read, or may not be written, are refused with
Kafka's error and nothing is appended."""
from __future__ import annotations

import gzip
import time

import pytest

from praha.encoding.compression import compress
from praha.errors import ErrorCode, PrahaError
from praha.log import Log, LogConfig
from praha.log.errors import InvalidRecordError
from praha.log.validator import RecordRules, RecordValidationError, validate_records
from praha.testing.batches import forge_batch, record

NOW = int(time.time() * 1000)
ANY_TOPIC = RecordRules()


def three(key: bytes | None = b"k") -> bytes:
    return b"".join(record(key, b"value-%d" % i, i) for i in range(3))


def check(batch: bytes, rules: RecordRules = ANY_TOPIC) -> None:
    from praha.log.batch import validate
    validate_records(batch, validate(batch, strict=True).batches, rules, NOW)


def code_of(batch: bytes, rules: RecordRules = ANY_TOPIC) -> int:
    with pytest.raises(PrahaError) as e:
        check(batch, rules)
    return int(e.value.code)


def test_well_formed_batches_pass_in_every_codec():
    check(forge_batch(three(), record_count=3))
    for codec in (1, 2, 3, 4):  # gzip, snappy, lz4, zstd
        check(forge_batch(compress(codec, three()), record_count=3, attributes=codec))


def test_record_count_that_lies_is_refused():
    one = record(b"k", b"v", 0)
    assert code_of(forge_batch(one, record_count=1000)) == ErrorCode.INVALID_RECORD  # says 1000, holds 1
    assert code_of(forge_batch(three(), record_count=1)) == ErrorCode.INVALID_RECORD  # says 1, holds 3


def test_compressed_garbage_is_corrupt():
    assert code_of(forge_batch(b"this is not gzip at all", record_count=1, attributes=1)) == ErrorCode.CORRUPT_MESSAGE
    # gzip of records whose count lies is caught after decompression too
    assert code_of(forge_batch(gzip.compress(three()), record_count=2, attributes=1)) == ErrorCode.INVALID_RECORD


def test_corrupted_record_body_is_refused():
    body = bytearray(three())
    body[1] = 0x7F  # the first record's attributes byte now sits where a length was, lengths disagree
    body[0] = 0x02  # a record length of 1 byte
    assert code_of(forge_batch(bytes(body), record_count=3)) == ErrorCode.INVALID_RECORD
    bad_headers = record(b"k", b"v", 0)[:-1] + b"\x03"  # header count -2
    assert code_of(forge_batch(bad_headers, record_count=1)) == ErrorCode.INVALID_RECORD


def test_offset_deltas_must_count_from_zero():
    dup = record(b"a", b"1", 0) + record(b"b", b"2", 0)
    with pytest.raises(RecordValidationError) as e:
        check(forge_batch(dup, record_count=2))
    assert e.value.code == ErrorCode.INVALID_RECORD
    assert e.value.record_errors == [(1, e.value.record_errors[0][1])]


def test_compacted_topic_needs_keys_and_names_the_record():
    mixed = record(b"a", b"1", 0) + record(None, b"2", 1)
    check(forge_batch(mixed, record_count=2))  # fine for a delete-policy topic
    with pytest.raises(RecordValidationError) as e:
        check(forge_batch(mixed, record_count=2), RecordRules(compact=True))
    assert e.value.code == ErrorCode.INVALID_RECORD
    assert e.value.record_errors == [(1, "Compacted topic cannot accept message without key")]


def test_timestamps_outside_the_configured_window():
    rules = RecordRules(timestamp_before_max_ms=60_000, timestamp_after_max_ms=1_000)
    check(forge_batch(three(), record_count=3, base_timestamp=NOW - 30_000), rules)
    assert code_of(forge_batch(three(), record_count=3, base_timestamp=NOW - 120_000),
                   rules) == ErrorCode.INVALID_RECORD
    assert code_of(forge_batch(three(), record_count=3, base_timestamp=NOW + 10_000), rules) == ErrorCode.INVALID_RECORD
    log_append_time = 0x08
    check(forge_batch(three(), record_count=3, base_timestamp=0, attributes=log_append_time), rules)


def test_a_refused_batch_appends_nothing(tmp_path):
    lg = Log(str(tmp_path / "t-0"), LogConfig(timestamp_after_max_ms=1000))
    try:
        lg.append_as_leader(forge_batch(three(), record_count=3), 0)
        poison = forge_batch(record(b"k", b"v", 0), record_count=1000)
        with pytest.raises(InvalidRecordError) as e:
            lg.append_as_leader(poison + forge_batch(three(), record_count=3), 0)
        assert e.value.code == ErrorCode.INVALID_RECORD
        future = forge_batch(three(), record_count=3, base_timestamp=int(time.time() * 1000) + 3_600_000)
        with pytest.raises(InvalidRecordError):
            lg.append_as_leader(future, 0)
        assert lg.log_end_offset == 3
    finally:
        lg.close()


def test_every_keyless_record_of_a_compacted_batch_is_named():
    """KIP-467: each bad record of the batch, with its index and why, not just the first."""
    keys = [b"a", None, b"b", None]
    batch = forge_batch(b"".join(record(k, b"v", i) for i, k in enumerate(keys)), record_count=4)
    with pytest.raises(InvalidRecordError) as e:
        check(batch, RecordRules(compact=True))
    why = "Compacted topic cannot accept message without key"
    assert e.value.record_errors == [(1, why), (3, why)]
    assert e.value.code == ErrorCode.INVALID_RECORD
    assert "2 records" in str(e.value)
