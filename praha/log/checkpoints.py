"""Kafka's small checkpoint files, written atomically.

Offset checkpoints (`recovery-point-offset-checkpoint`, `replication-offset-checkpoint`,
`log-start-offset-checkpoint`) and the per-partition `leader-epoch-checkpoint` share
one text format:

    <version: 0>
    <entry count>
    <entry fields separated by single spaces>   (one line per entry)

Writing: 1. write a temp file beside the target, 2. fsync it, 3. rename over the
target, 4. fsync the directory, so a crash leaves either the old or the new file.
Reading: a missing file means "no entries"; anything unparsable raises
`CorruptCheckpointError` naming the file and the problem.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from praha.common import TopicPartition
from praha.log.errors import CorruptCheckpointError

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CHECKPOINT_VERSION = 0


def fsync_dir(path: str) -> None:
    """Make a rename or create in `path` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes, durable: bool = True) -> None:
    """Replace `path` with `data` so readers see the old or the new content, never a mix.
    `durable=False` skips the fsyncs, for content whose loss in a crash costs nothing."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(os.path.dirname(os.path.abspath(path)))


def write_entries(path: str, entries: Sequence[tuple[object, ...]], durable: bool = True) -> None:
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines.extend(" ".join(str(f) for f in entry) for entry in entries)
    atomic_write(path, ("\n".join(lines) + "\n").encode(), durable)


def read_entries(path: str, fields: int) -> list[list[str]] | None:
    """The entry lines of a checkpoint split into `fields` strings; None if the file is missing."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptCheckpointError(path, "not UTF-8 text") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise CorruptCheckpointError(path, "missing version or entry count line")
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CorruptCheckpointError(path, f"unknown version {lines[0]!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CorruptCheckpointError(path, f"bad entry count {lines[1]!r}") from None
    body = lines[2:]
    if count != len(body):
        raise CorruptCheckpointError(path, f"header says {count} entries, found {len(body)}")
    out = []
    for n, line in enumerate(body, start=3):
        parts = line.split()
        if len(parts) != fields:
            raise CorruptCheckpointError(path, f"line {n}: expected {fields} fields, got {line!r}")
        out.append(parts)
    return out


class OffsetCheckpointFile:
    """One `<topic> <partition> <offset>` checkpoint file of a log directory."""

    def __init__(self, path: str):
        self.path = path

    def read(self) -> dict[TopicPartition, int]:
        entries = read_entries(self.path, 3)
        if entries is None:
            return {}
        out: dict[TopicPartition, int] = {}
        for topic, partition, offset in entries:
            try:
                out[TopicPartition(topic, int(partition))] = int(offset)
            except ValueError:
                raise CorruptCheckpointError(self.path, f"bad entry {topic} {partition} {offset}") from None
        return out

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        entries = sorted((tp.topic, tp.partition, off) for tp, off in offsets.items())
        write_entries(self.path, entries)
