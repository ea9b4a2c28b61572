"""Randomised operations against a simple model: appends, rolls, truncations, reopen, retention."""
from __future__ import annotations

import random
import threading

import pytest
from log_helpers import decode, make_batch

from praha.log import Log, LogConfig


def read_all(lg, start=None, max_bytes=700):
    out, pos = [], lg.log_start_offset if start is None else start
    while pos < lg.log_end_offset:
        r = lg.read(pos, max_bytes)
        recs = decode(r.data)
        assert recs
        assert r.next_offset > pos
        out += [(o, v) for o, _, v in recs if o >= pos]
        pos = r.next_offset
    return out


@pytest.mark.parametrize("seed", range(6))
def test_random_operations_match_model(tmp_path, seed):
    rnd = random.Random(seed)
    cfg = LogConfig(segment_bytes=rnd.choice([500, 1000, 3000]), index_interval_bytes=rnd.choice([0, 100, 4096]),
                    retention_ms=-1, file_delete_delay_ms=0)
    path = str(tmp_path / "m-0")
    lg = Log(path, cfg)
    model: list[tuple[int, bytes]] = []  # (offset, value)
    start = 0
    epoch = 0
    for step in range(150):
        op = rnd.random()
        if op < 0.6:
            n = rnd.randint(1, 6)
            vals = [b"s%d-%d" % (step, i) for i in range(n)]
            if rnd.random() < 0.2:
                epoch += 1
            batch = b"".join(make_batch(1, value=v) for v in vals) if rnd.random() < 0.5 else None
            if batch is None:
                # one multi-record batch with distinct values
                from kafka.record.default_records import DefaultRecordBatchBuilder
                b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
                for i, v in enumerate(vals):
                    b.append(i, timestamp=1000 + step, key=None, value=v, headers=[])
                batch = bytes(b.build())
            info = lg.append_as_leader(batch, epoch)
            assert info.first_offset == (model[-1][0] + 1 if model else start)
            model += [(info.first_offset + i, v) for i, v in enumerate(vals)]
        elif op < 0.7 and model:
            target = rnd.randint(start, model[-1][0] + 1)
            leo = lg.truncate_to(target)
            model = [(o, v) for o, v in model if o < leo]
            assert leo <= target
            if model:
                assert leo == model[-1][0] + 1
            # cutting a batch that straddles the log start pulls the start back to the new end
            start = min(start, leo)
            assert lg.log_start_offset == start
        elif op < 0.78:
            lg.roll()
        elif op < 0.86:
            lg.close()
            # the log start survives restarts through the manager's checkpoint, passed in here
            lg = Log(path, cfg, clean_shutdown=rnd.random() < 0.5, log_start_offset=start)
        elif op < 0.9:
            lg.increment_log_start_offset(rnd.randint(start, lg.log_end_offset))
            lg.delete_retention_segments()
            start = lg.log_start_offset
            model = [(o, v) for o, v in model if o >= start]
        assert lg.log_end_offset == (model[-1][0] + 1 if model else lg.log_end_offset)
        if step % 10 == 0:
            assert read_all(lg) == model
    assert read_all(lg) == model
    lg.close()
    lg = Log(path, cfg, log_start_offset=start)  # full check finds nothing wrong
    assert not lg.last_recovery.eventful
    assert read_all(lg) == model
    lg.close()


def test_concurrent_reader_sees_consistent_prefix(tmp_path):
    """Readers bounded by a high watermark never see torn or unfinished batches while the
    writer appends, rolls and retention deletes segments."""
    cfg = LogConfig(segment_bytes=5000, retention_ms=-1, retention_bytes=20_000, file_delete_delay_ms=1000)
    lg = Log(str(tmp_path / "c-0"), cfg)
    stop = threading.Event()
    errors: list[BaseException] = []
    hw = [0]

    def reader():
        try:
            while not stop.is_set():
                high = hw[0]
                start = max(lg.log_start_offset, high - 60)
                if start >= high:
                    continue
                try:
                    r = lg.read(start, 2000, max_offset=high)
                except Exception as e:  # retention may pass us by: that is the only allowed error
                    from praha.log import OffsetOutOfRangeError
                    if not isinstance(e, OffsetOutOfRangeError):
                        raise
                    continue
                recs = decode(r.data)
                offs = [o for o, _, _ in recs]
                assert offs == list(range(offs[0], offs[0] + len(offs)))
                assert offs[-1] < high
                for o, _, v in recs:
                    assert v == b"value-%d" % o
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        from kafka.record.default_records import DefaultRecordBatchBuilder
        for i in range(600):
            b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
            base = lg.log_end_offset
            for k in range(3):
                b.append(k, timestamp=1000, key=None, value=b"value-%d" % (base + k), headers=[])
            lg.append_as_leader(bytes(b.build()), 0)
            hw[0] = lg.log_end_offset
            if i % 50 == 0:
                lg.delete_retention_segments()
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not errors, errors[0]
    lg.close()
