"""Throughput of the partition log: append_as_leader and read, 1 KiB records, 16 KiB-1 MiB batches.

Prints MB/s (payload bytes of whole batches) for:
- validate: framing + CRC32C walk only
- records:  the leader's record walk (praha.log.validator: every record's structure, offsets, keys)
- append:   Log.append_as_leader (validate, patch offsets, pwrite, index)
- idem:     the same with an idempotent producer's batches (one producer, sequences advancing):
            the producer-state analysis and its record on every append
- read:     sequential Log.read with 1 MiB max_bytes (a consumer's fetch), bounded by a high watermark
- slice:    Log.read_slice only (what a sendfile path would do before the syscall)

Usage: .venv/bin/python bench/log_append.py [--total-mb 256] [--dir /tmp] [--sizes 16 64 256 1024] [--clock cpu]
`--clock cpu` times with this process's CPU seconds (user + sys) instead of the wall clock:
on a machine others share, the figure other processes' load moves least.
Figures, not asserts: the page cache absorbs writes (no fsync except on roll/close).
"""
from __future__ import annotations

import argparse
import os
import shutil
import struct
import tempfile
import time

from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.log import Log, LogConfig
from praha.log.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, validate
from praha.log.validator import RecordRules, validate_records

RECORD = 1024
BASE_SEQUENCE_OFFSET = 53  # baseSequence in the v2 batch header


def make_batch(batch_bytes: int, producer_id: int = -1) -> bytes:
    epoch, sequence = (0, 0) if producer_id >= 0 else (-1, -1)
    b = DefaultRecordBatchBuilder(2, 0, 0, producer_id, epoch, sequence, 1 << 30)
    value = os.urandom(RECORD)
    ts = int(time.time() * 1000)
    for i in range(max(1, batch_bytes // (RECORD + 16))):
        b.append(i, timestamp=ts, key=None, value=value, headers=[])
    return bytes(b.build())


def idempotent_batches(batch_bytes: int, n: int) -> list[bytes]:
    """`n` batches of one idempotent producer, each with the base sequence after the last
    (built before the clock starts: only the base sequence and the CRC differ)."""
    template = bytearray(make_batch(batch_bytes, producer_id=1))
    count = validate(template).batches[0].record_count
    out = []
    for i in range(n):
        struct.pack_into(">i", template, BASE_SEQUENCE_OFFSET, i * count)
        struct.pack_into(">I", template, CRC_OFFSET, crc32c(memoryview(template)[ATTRIBUTES_OFFSET:]))
        out.append(bytes(template))
    return out


CLOCK = time.perf_counter


def run(batch_bytes: int, total_mb: int, base_dir: str) -> dict[str, float]:
    batch = make_batch(batch_bytes)
    n = max(1, total_mb * (1 << 20) // len(batch))
    mb = n * len(batch) / 1e6
    out: dict[str, float] = {"batch_kib": len(batch) / 1024}

    t = CLOCK()
    for _ in range(n):
        validate(batch, strict=True)
    out["validate"] = mb / (CLOCK() - t)

    headers = validate(batch, strict=True).batches
    rules, now = RecordRules(), int(time.time() * 1000)
    t = CLOCK()
    for _ in range(n):
        validate_records(batch, headers, rules, now)
    out["records"] = mb / (CLOCK() - t)

    d = tempfile.mkdtemp(prefix="praha-bench-", dir=base_dir)
    try:
        lg = Log(os.path.join(d, "bench-0"), LogConfig(segment_bytes=128 << 20, file_delete_delay_ms=0))
        t = CLOCK()
        for _ in range(n):
            lg.append_as_leader(batch, 1)
        out["append"] = mb / (CLOCK() - t)
        out["segments"] = len(lg.segments)
        hw = lg.log_end_offset

        for name, fn in (("read", lg.read), ("slice", lg.read_slice)):
            t = CLOCK()
            pos, got = 0, 0
            while pos < hw:
                r = fn(pos, 1 << 20, hw)
                pos = r.next_offset
                got += r.size if name == "slice" else len(r.data)
            out[name] = got / 1e6 / (CLOCK() - t)
        lg.close()

        idem = idempotent_batches(batch_bytes, n)
        lg = Log(os.path.join(d, "idem-0"), LogConfig(segment_bytes=128 << 20, file_delete_delay_ms=0))
        t = CLOCK()
        for b in idem:
            lg.append_as_leader(b, 1)
        out["idem"] = mb / (CLOCK() - t)
        lg.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--total-mb", type=int, default=256)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--repeat", type=int, default=3, help="runs per size; the best figure of each column is shown")
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 256, 1024], help="batch sizes in KiB")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time with the wall clock or with this process's CPU time (user + sys)")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"log append/read, 1 KiB records, {args.total_mb} MiB per run, best of {args.repeat}, dir {args.dir}, "
          f"{args.clock} clock")
    print(f"{'batch':>9} {'validate':>10} {'records':>10} {'append':>10} {'idem':>10} {'read':>10} {'slice':>10}"
          f"  (MB/s)  {'append µs':>10} {'idem µs':>8}")
    for kib in args.sizes:
        runs = [run(kib * 1024, args.total_mb, args.dir) for _ in range(args.repeat)]
        best = {k: max(r[k] for r in runs) for k in runs[0]}
        per_append_us = best["batch_kib"] * 1024 / 1e6 / best["append"] * 1e6
        per_idem_us = best["batch_kib"] * 1024 / 1e6 / best["idem"] * 1e6
        print(f"{best['batch_kib']:>7.0f}Ki {best['validate']:>10.0f} {best['records']:>10.0f} "
              f"{best['append']:>10.0f} {best['idem']:>10.0f} {best['read']:>10.0f} "
              f"{best['slice']:>10.0f}  {per_append_us:>16.1f} {per_idem_us:>8.1f}")


if __name__ == "__main__":
    main()
