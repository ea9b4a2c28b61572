"""The append is one pass (issue 21 §4, Kafka's `UnifiedLog.append`): per append, each
producer's state is read once to decide (idempotence, transaction state, KIP-890
verification, marker fencing), each batch is recorded once after it is written, and the
buffer is validated, record-checked and given offsets once. The spy is a counting dict in
place of the producer table's map, and counters around the log's steps."""
from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

import praha.log.log as log_module
from praha.log import Log, LogConfig
from praha.log.producer_state import ProducerStateTable


class CountingDict(dict):  # type: ignore[type-arg]
    """The producers' map; counts each read of a producer's entry, apart from those made
    while recording a written batch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads: Counter[str] = Counter()
        self.phase = "decide"

    def get(self, key: Any, default: Any = None) -> Any:
        self.reads[self.phase] += 1
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.reads[self.phase] += 1
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.reads[self.phase] += 1
        return super().__contains__(key)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every table gets a CountingDict; `record` and `record_marker` switch it to the record
    phase; the log's validation, record walk and offset assignment are counted."""
    calls: Counter[str] = Counter()
    tables: list[ProducerStateTable] = []
    init = ProducerStateTable.__init__

    def counted_init(self: ProducerStateTable) -> None:
        init(self)
        self.producers = CountingDict()
        tables.append(self)

    monkeypatch.setattr(ProducerStateTable, "__init__", counted_init)
    for name in ("record", "record_marker"):
        original = getattr(ProducerStateTable, name)

        def recording(self: ProducerStateTable, *args: Any, _original: Any = original, _name: str = name,
                      **kwargs: Any) -> Any:
            calls[_name] += 1
            producers = self.producers
            assert isinstance(producers, CountingDict)
            producers.phase = "record"
            try:
                return _original(self, *args, **kwargs)
            finally:
                producers.phase = "decide"

        monkeypatch.setattr(ProducerStateTable, name, recording)
    for name in ("validate", "validate_records", "assign_offsets"):
        original = getattr(log_module, name)

        def counted(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(log_module, name, counted)

    def reads(phase: str) -> int:
        return sum(t.producers.reads[phase] for t in tables if isinstance(t.producers, CountingDict))

    calls.reads = reads  # type: ignore[attr-defined]
    return calls


def batches(pid: int, first_seq: int, counts: list[int], transactional: bool) -> bytes:
    out = b""
    seq = first_seq
    for n in counts:
        b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=int(transactional),
                                      producer_id=pid, producer_epoch=0, base_sequence=seq, batch_size=1 << 20)
        for i in range(n):
            b.append(i, timestamp=1000 + i, key=None, value=b"v%d" % i, headers=[])
        out += bytes(b.build())
        seq += n
    return out


def snapshot_of(calls: Counter[str]) -> tuple[Counter[str], int, int]:
    reads = calls.reads  # type: ignore[attr-defined]
    return Counter(calls), reads("decide"), reads("record")


def test_a_verified_transactional_append_reads_its_producer_once_and_records_each_batch_once(tmp_path, spy):
    lg = Log(str(tmp_path / "t-0"), LogConfig(file_delete_delay_ms=0))
    try:
        lg.append_as_leader(batches(9, 0, [1], transactional=False), 0)  # the producer is known
        token = lg.begin_verification(9, 0)
        before, decided, recorded = snapshot_of(spy)
        info = lg.append_as_leader(batches(9, 1, [2, 3, 1], transactional=True), 0, verified={9: token})
        after, decided_after, recorded_after = snapshot_of(spy)
        assert (info.first_offset, info.last_offset, info.batch_count) == (1, 6, 3)
        steps = after - before
        # old code: check_append read it once, then _check_verified once per batch (4 reads)
        assert decided_after - decided == 1, "the producer's state is read once to decide the whole append"
        assert steps["record"] == 3, "each written batch is recorded once"
        assert recorded_after - recorded == 3
        assert (steps["validate"], steps["validate_records"], steps["assign_offsets"]) == (1, 1, 1)
        assert lg.active_producers()[0].current_txn_first_offset == 1
    finally:
        lg.close()


def test_a_marker_and_a_follower_copy_are_decided_once_and_recorded_once(tmp_path, spy):
    leader = Log(str(tmp_path / "l-0"), LogConfig(file_delete_delay_ms=0))
    follower = Log(str(tmp_path / "f-0"), LogConfig(file_delete_delay_ms=0))
    try:
        leader.append_as_leader(batches(4, 0, [2, 2], transactional=True), 0)
        before, decided, _ = snapshot_of(spy)
        leader.append_marker_as_leader(4, 0, False, 0, 0)
        after, decided_after, _ = snapshot_of(spy)
        assert decided_after - decided == 1, "a marker's fencing reads its producer once"
        assert (after - before)["record_marker"] == 1
        assert (after - before)["validate"] == 1

        data = leader.read(0, 1 << 20).data
        before, decided, _ = snapshot_of(spy)
        follower.append_as_follower(data)
        after, decided_after, _ = snapshot_of(spy)
        steps = after - before
        assert decided_after == decided, "a follower checks nothing"
        assert (steps["record"], steps["record_marker"], steps["validate"]) == (2, 1, 1)
        assert steps["assign_offsets"] == 0, "a follower keeps the leader's offsets"
        aborted = follower.collect_aborted_transactions(0, follower.log_end_offset)
        assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted] == [(4, 0, 4)]
    finally:
        leader.close()
        follower.close()
