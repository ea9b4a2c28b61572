"""Streaming read: `spark.readStream.format("praha")` (micro-batches).

Offsets are Spark's Kafka JSON, `{"topic": {"partition": next offset}}`, so they are
per topic-partition in the checkpoint and a restarted query resumes exactly where its
last committed batch ended. `latestOffset` picks the end of the next batch (high
watermarks, capped by `maxOffsetsPerTrigger`, or by the target fixed when
`trigger(availableNow=True)` started, and held back while fewer than
`minOffsetsPerTrigger` are new, for at most `maxTriggerDelay`); `partitions` cuts [start, end) into tasks.

Partitions that appear while the query runs (more partitions, a new topic matching a
subscription) are read from their earliest offset. A partition that disappears, or
whose offsets went backwards, is data loss: fail, or warn and go on (failOnDataLoss).

This object lives in Spark's long-running Python planner process for the query, so it
may keep one cluster client open between calls; it is also pickled for the tasks
(whose `read` opens its own connections), hence the lazy `_client`.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from praha.common import TopicPartition
from praha.spark.kafka import ClusterClient
from praha.spark.options import EARLIEST, LATEST, ReadOptions
from praha.spark.planning import (
    OffsetRange,
    Offsets,
    client_for,
    current_partitions,
    delay_batch,
    from_json,
    rate_limit,
    report_data_loss,
    resolve,
    split_ranges,
    to_json,
)
from praha.spark.reading import RangePartition, read_range
from praha.spark.schema import arrow_schema

log = logging.getLogger(__name__)


class PrahaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: ReadOptions, schema: StructType):
        self.opts = opts
        self.schema = schema
        self._client: ClusterClient | None = None
        self._target: Offsets | None = None  # availableNow: never read past these
        self._latest: Offsets | None = None
        #: when the last batch was let through (minOffsetsPerTrigger / maxTriggerDelay); -inf: none yet
        self._last_trigger_ms = float("-inf")

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    @property
    def client(self) -> ClusterClient:
        if self._client is None:
            self._client = client_for(self.opts)
        return self._client

    # ------------------------------------------------------------------ offsets
    def initialOffset(self) -> dict[str, Any]:
        tps = current_partitions(self.client, self.opts.subscription)
        return to_json(resolve(self.client, tps, self.opts.starting, self.opts, is_start=True))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._available()
        log.info("availableNow: reading up to %s", to_json(self._target))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = from_json(start)
        latest = dict(self._target) if self._target is not None else self._available()
        self._latest = latest
        new = [tp for tp in latest if tp not in begin]
        if new:
            begin.update(self._earliest(new))
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, latest, limit.max_rows)
        else:
            end = latest
        if self._target is None and self.opts.min_offsets_per_trigger:
            now = time.monotonic() * 1000
            new_offsets = sum(max(0, o - begin.get(tp, o)) for tp, o in end.items())
            if delay_batch(new_offsets, self.opts.min_offsets_per_trigger, now - self._last_trigger_ms,
                           self.opts.max_trigger_delay_ms):
                return start  # no new batch yet (Spark runs none when the offsets did not move)
            self._last_trigger_ms = now
        return to_json(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return to_json(self._latest) if self._latest is not None else None

    def _available(self) -> Offsets:
        tps = current_partitions(self.client, self.opts.subscription)
        return self.client.list_offsets({tp: LATEST for tp in tps}, self.opts.offset_retries,
                                        self.opts.offset_retry_interval_ms)

    def _earliest(self, tps: list[TopicPartition]) -> Offsets:
        return self.client.list_offsets({tp: EARLIEST for tp in tps}, self.opts.offset_retries,
                                        self.opts.offset_retry_interval_ms)

    # ------------------------------------------------------------------ planning
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin, until = from_json(start), from_json(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            begin.update(self._earliest(new))
        fail = self.opts.fail_on_data_loss
        for tp in sorted(set(begin) - set(until)):
            report_data_loss(f"{tp} is gone from the cluster (topic deleted or partitions removed); "
                             f"offsets from {begin[tp]} on were not read", fail)
        ranges = []
        for tp in sorted(until):
            if tp not in begin:
                continue  # appeared and vanished between two calls: nothing to read
            s, e = begin[tp], until[tp]
            if e < s:
                report_data_loss(f"the offsets of {tp} went back from {s} to {e} (topic recreated?)", fail)
                continue
            ranges.append(OffsetRange(tp, s, e))
        pieces = split_ranges(ranges, self.opts.min_partitions, self.opts.max_records_per_partition)
        return [RangePartition(r.tp.topic, r.tp.partition, r.start, r.end) for r in pieces]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_range(self.opts, partition, arrow_schema(self.schema))

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: like Spark's Kafka source, progress lives in the checkpoint only."""

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
