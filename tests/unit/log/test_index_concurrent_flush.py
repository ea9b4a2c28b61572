"""An index written by the log's background flusher while the log appends to it (a rolled
segment made active again by a truncation): no entry lost, nothing raised."""
import struct
import sys
import threading

from praha.log.index import OffsetIndex


def test_background_flush_while_appending_loses_no_entry(tmp_path):
    ix = OffsetIndex(str(tmp_path / "00000000000000000000.index"), 0)
    ix.create_empty()
    n = 20_000
    stop = threading.Event()
    errors: list[BaseException] = []

    def flusher():
        try:
            while not stop.is_set():
                ix.flush()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    t = threading.Thread(target=flusher)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so the two meet inside write_pending
    t.start()
    try:
        for i in range(n):
            ix.append_entries([(i, 10 * i)])
            if i % 97 == 0:
                ix.write_pending()
    finally:
        stop.set()
        t.join(30)
        sys.setswitchinterval(interval)
    ix.close()
    assert not errors, errors
    raw = (tmp_path / "00000000000000000000.index").read_bytes()
    assert [struct.unpack_from(">ii", raw, 8 * i) for i in range(len(raw) // 8)] == [(i, 10 * i) for i in range(n)]
