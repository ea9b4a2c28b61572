"""Python function calls per log append, by kind of append (cProfile's count of calls).

A count, not a time: the same on a quiet machine and a loaded one, so two codes can be
compared in any sitting (`PYTHONPATH=TREE` picks the `praha` measured). Kinds: a plain
batch, an idempotent producer's batch, three idempotent batches in one append, three
transactional batches under a KIP-890 verification token, and a transaction marker.
Each batch holds one 1 KiB record.

Usage: PYTHONPATH=TREE .venv/bin/python bench/log_append_calls.py [--appends 2000]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from collections.abc import Callable
from functools import partial

from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.log import Log, LogConfig


def batches(producer_id: int, sequence: int, count: int = 1, transactional: bool = False) -> bytes:
    """`count` one-record batches of `producer_id` (-1: none) from `sequence` on."""
    out = b""
    for i in range(count):
        epoch, seq = (0, sequence + i) if producer_id >= 0 else (-1, -1)
        b = DefaultRecordBatchBuilder(2, 0, int(transactional), producer_id, epoch, seq, 1 << 30)
        b.append(0, timestamp=int(time.time() * 1000), key=None, value=b"x" * 1024, headers=[])
        out += bytes(b.build())
    return out


def counted(steps: list[tuple[Callable[[], None], Callable[[], object]]]) -> float:
    """Calls per measured step: each pair is (setup, not counted; the append, counted)."""
    profile = cProfile.Profile()
    for setup, append in steps:
        setup()
        profile.enable()
        append()
        profile.disable()
    return pstats.Stats(profile).total_calls / len(steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--appends", type=int, default=2000, help="appends measured per kind (default 2000)")
    n = ap.parse_args().appends
    root = tempfile.mkdtemp(prefix="praha-bench-calls-")
    config = LogConfig(segment_bytes=1 << 30, file_delete_delay_ms=0)

    def new_log(name: str, first: bytes) -> Log:
        lg = Log(f"{root}/{name}-0", config)
        lg.append_as_leader(first, 1)  # the producer known, its first snapshot written
        return lg

    def nothing() -> None:
        return None

    figures: dict[str, float] = {}
    lg = new_log("plain", batches(-1, 0))
    plain = batches(-1, 0)
    figures["plain"] = counted([(nothing, lambda: lg.append_as_leader(plain, 1))] * n)
    idem = new_log("idem", batches(1, 0))
    figures["idempotent"] = counted([(nothing, partial(idem.append_as_leader, batches(1, 1 + i), 1))
                                     for i in range(n)])
    three = new_log("three", batches(1, 0))
    figures["idempotent, 3 batches"] = counted(
        [(nothing, partial(three.append_as_leader, batches(1, 1 + 3 * i, 3), 1)) for i in range(n)])

    txn = new_log("txn", batches(2, 0))
    state: dict[str, object] = {"seq": 1}

    def verify_then_close() -> None:
        txn.append_marker_as_leader(2, 0, True, 0, 1)
        seq = int(str(state["seq"]))
        state.update(seq=seq + 3, token=txn.begin_verification(2, 0),
                     data=batches(2, seq, 3, transactional=True))

    def verified_append() -> None:
        data = state["data"]
        assert isinstance(data, bytes)
        txn.append_as_leader(data, 1, verified={2: state["token"]})

    figures["verified transactional, 3 batches"] = counted([(verify_then_close, verified_append)] * (n // 4))

    def open_transaction() -> None:
        seq = int(str(state["seq"]))
        token = txn.begin_verification(2, 0)
        txn.append_as_leader(batches(2, seq, 1, transactional=True), 1, verified={2: token})
        state["seq"] = seq + 1

    figures["transaction marker"] = counted(
        [(open_transaction, lambda: txn.append_marker_as_leader(2, 0, True, 0, 1))] * (n // 4))
    for lg_ in (lg, idem, three, txn):
        lg_.close()
    print("Python function calls per append")
    for kind, calls in figures.items():
        print(f"  {kind:<36} {calls:7.1f}")


if __name__ == "__main__":
    main()
