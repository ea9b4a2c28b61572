"""Offset checkpoint files: Kafka's text format, atomic writes, tolerant of absence, strict on garbage."""
from __future__ import annotations

import os

import pytest

from praha.common import TopicPartition
from praha.log.checkpoints import OffsetCheckpointFile
from praha.log.errors import CorruptCheckpointError


def test_round_trip_and_format(tmp_path):
    f = OffsetCheckpointFile(str(tmp_path / "recovery-point-offset-checkpoint"))
    offsets = {TopicPartition("b-topic", 1): 42, TopicPartition("a.topic", 0): 7}
    f.write(offsets)
    assert f.read() == offsets
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n2\na.topic 0 7\nb-topic 1 42\n"
    assert not any(n.endswith(".tmp") for n in os.listdir(tmp_path))


def test_missing_file_is_empty(tmp_path):
    assert OffsetCheckpointFile(str(tmp_path / "nope")).read() == {}


def test_empty_map(tmp_path):
    f = OffsetCheckpointFile(str(tmp_path / "cp"))
    f.write({})
    assert f.read() == {}


@pytest.mark.parametrize(("content", "match"), [
    (b"", "missing"),
    (b"1\n0\n", "version"),
    (b"0\nabc\n", "count"),
    (b"0\n2\nt 0 1\n", "entries"),
    (b"0\n1\nt 0\n", "fields"),
    (b"0\n1\nt x 5\n", "bad entry"),
])
def test_garbage_raises_clear_error(tmp_path, content, match):
    p = tmp_path / "cp"
    p.write_bytes(content)
    with pytest.raises(CorruptCheckpointError, match=match) as e:
        OffsetCheckpointFile(str(p)).read()
    assert str(p) in str(e.value)
