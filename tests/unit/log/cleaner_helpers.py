"""Builders and readers for keyed records (the cleaner's tests)."""
from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.encoding.varint import read_uvarlong as _uvarint
from praha.log import Log
from praha.log.batch import iter_batches
from praha.log.records import decode_batch


def keyed(pairs: list[tuple[bytes | None, bytes | None]], ts: int = 1_000, compression: int = 0,
          producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """One batch of (key, value) records, built by kafka-python's encoder."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=0,
                                  producer_id=producer_id, producer_epoch=producer_epoch,
                                  base_sequence=base_sequence, batch_size=1 << 30)
    for i, (k, v) in enumerate(pairs):
        b.append(i, timestamp=ts + i, key=k, value=v, headers=[])
    return bytes(b.build())


def records_of(lg: Log, upto: int | None = None) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record in the log, in offset order."""
    out = []
    for seg in lg.segments:
        data = seg.read_bytes(0, seg.size)
        for h in iter_batches(data):
            for r in decode_batch(memoryview(data)[h.position:h.position + h.size]).records:
                if upto is None or r.offset < upto:
                    out.append((r.offset, r.key, None if r.value_is_null else _value(r.raw)))
    return out


def _value(raw: bytes | memoryview) -> bytes:
    buf = bytes(raw)
    _, pos = _uvarint(buf, 0)
    pos += 1
    _, pos = _uvarint(buf, pos)
    _, pos = _uvarint(buf, pos)
    klen, pos = _uvarint(buf, pos)
    klen = (klen >> 1) ^ -(klen & 1)
    pos += max(klen, 0)
    vlen, pos = _uvarint(buf, pos)
    vlen = (vlen >> 1) ^ -(vlen & 1)
    return buf[pos:pos + vlen]


def fill(lg: Log, rounds: int, keys: int, ts: int = 1_000, per_batch: int = 5) -> dict[bytes, tuple[int, bytes]]:
    """Append `rounds` values for each of `keys` keys; returns key → (last offset, last value)."""
    last: dict[bytes, tuple[int, bytes]] = {}
    n = 0
    pairs: list[tuple[bytes, bytes]] = []
    for r in range(rounds):
        for k in range(keys):
            pairs.append((b"k%d" % k, b"v%d-%d" % (k, r)))
            if len(pairs) == per_batch:
                info = lg.append_as_leader(keyed(pairs, ts=ts + n), 0, now_ms=ts + n)
                for i, (kk, vv) in enumerate(pairs):
                    last[kk] = (info.first_offset + i, vv)
                n += len(pairs)
                pairs = []
    if pairs:
        info = lg.append_as_leader(keyed(pairs, ts=ts + n), 0, now_ms=ts + n)
        for i, (kk, vv) in enumerate(pairs):
            last[kk] = (info.first_offset + i, vv)
    return last
