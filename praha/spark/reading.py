"""One Spark task's read: an offset range of one partition, as Arrow batches.

Runs on executors. The reader object that calls this was pickled on the driver, so
nothing here is opened before `read()`: each task borrows a client from its Python
worker's pool (`praha.spark.pool`) and gives it back when its iterator ends (or is
abandoned); a client that failed is closed instead.

Exactly-once within a task: `fetch_range` re-fetches from `position[0]`, the offset just
past the last complete batch decoded, so a leader change mid-range neither skips nor
repeats an offset; records outside [start, end) are dropped by the decoder.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator
from typing import Any

from pyspark.sql.datasource import InputPartition

from praha.common import TopicPartition
from praha.spark.kafka import Chunk, fetch_range
from praha.spark.options import ReadOptions
from praha.spark.planning import pooled_client
from praha.spark.records import Columns, decode_into, scan_next_offset
from praha.spark.schema import to_arrow


class RangePartition(InputPartition):
    """Offsets [start, end) of one topic-partition: one Spark task."""

    def __init__(self, topic: str, partition: int, start: int, end: int):
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"RangePartition({self.topic}-{self.partition} [{self.start}, {self.end}))"


def read_range(opts: ReadOptions, part: Any, pa_schema: Any, prefetch: bool = True) -> Iterator[Any]:
    """Yield Arrow record batches with exactly the records of `part`'s range."""
    if not isinstance(part, RangePartition) or part.end <= part.start:
        return
    tp = TopicPartition(part.topic, part.partition)
    chunks = _prefetched if prefetch else _direct
    cols = Columns(with_headers=opts.include_headers)
    for chunk, begin in chunks(opts, tp, part.start, part.end):
        decode_into(chunk.records, begin, part.end, cols, aborted=chunk.aborted)
        if len(cols):
            yield to_arrow(cols, part.topic, part.partition, pa_schema)
            cols.clear()


def _direct(opts: ReadOptions, tp: TopicPartition, start: int, end: int) -> Generator[tuple[Chunk, int], None, None]:
    """Fetch, hand over, fetch again: the task does one thing at a time."""
    position = [start]
    with pooled_client(opts) as client:  # back to the worker's pool when the range is read
        for chunk in fetch_range(client, tp, start, end, fail_on_data_loss=opts.fail_on_data_loss,
                                 max_bytes=opts.partition_fetch_bytes, poll_timeout_ms=opts.poll_timeout_ms,
                                 position=position):
            begin = position[0]
            position[0] = max(begin, scan_next_offset(chunk.records, begin, end))
            yield chunk, begin


_DONE = object()


def _prefetched(opts: ReadOptions, tp: TopicPartition, start: int, end: int) -> Iterator[tuple[Chunk, int]]:
    """Like `_direct`, but a thread fetches the next chunk while this one is decoded.

    Where the next fetch starts is known from the batch headers alone
    (`scan_next_offset`), so fetching never waits for decoding. The queue holds two
    chunks at most; errors travel through it and are raised here, in the task."""
    q: queue.Queue[Any] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        source = _direct(opts, tp, start, end)
        try:
            for item in source:
                if not put(item):
                    return
            put(_DONE)
        except BaseException as e:  # noqa: BLE001 - handed to the task thread
            put(e)
        finally:
            source.close()  # gives the task's client back

    t = threading.Thread(target=run, name=f"praha-fetch-{tp}", daemon=True)
    t.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        t.join(timeout=5)
