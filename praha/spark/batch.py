"""Batch read: `spark.read.format("praha")`.

`partitions()` runs once on the driver (in Spark's planner worker) and fixes every
task's exact offset range; `read()` runs in the tasks. The reader is pickled between
the two, so it holds only options and the schema: no sockets.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from praha.spark.options import ReadOptions
from praha.spark.planning import batch_ranges, client_for, split_ranges
from praha.spark.reading import RangePartition, read_range
from praha.spark.schema import arrow_schema


class PrahaBatchReader(DataSourceReader):
    def __init__(self, opts: ReadOptions, schema: StructType):
        self.opts = opts
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        with client_for(self.opts) as client:
            ranges = batch_ranges(client, self.opts)
        pieces = split_ranges(ranges, self.opts.min_partitions, self.opts.max_records_per_partition)
        return [RangePartition(r.tp.topic, r.tp.partition, r.start, r.end) for r in pieces]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_range(self.opts, partition, arrow_schema(self.schema))
