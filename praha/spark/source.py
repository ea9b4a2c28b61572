"""The `praha` data source: what `spark.read/readStream/write/writeStream.format("praha")` finds.

Option checks run as early as Spark lets them: `schema()` runs at `load()`, so bad read
options (and, with failOnDataLoss, unknown topics) fail there; `writer()` runs before
any write task, so a DataFrame without a `value` column fails there.

Batch writes need `mode("append")`: Spark refuses its default ErrorIfExists mode for
every Python data source (Spark's Kafka sink accepts it; this is the one difference).
"""
from __future__ import annotations

import sys
from types import FrameType

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from praha.spark.options import OptionError, parse_read_options, parse_write_options
from praha.spark.schema import kafka_schema


class PrahaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "praha"

    def schema(self) -> StructType:
        opts = parse_read_options(self.options)
        from praha.spark.planning import check_named_topics, client_for

        with client_for(opts) as client:
            check_named_topics(client, opts)
        return kafka_schema(opts.include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        from praha.spark.batch import PrahaBatchReader

        return PrahaBatchReader(parse_read_options(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from praha.spark.stream import PrahaStreamReader

        return PrahaStreamReader(parse_read_options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from praha.spark.writer import PrahaBatchWriter, check_topic_exists, check_write_schema

        opts = parse_write_options(self.options)
        if overwrite:
            raise OptionError("mode", "overwrite is not supported: a topic is append-only; use mode('append')")
        check_write_schema(schema, opts)
        check_topic_exists(opts)
        return PrahaBatchWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from praha.spark.writer import PrahaStreamWriter, check_topic_exists, check_write_schema

        opts = parse_write_options(self.options)
        check_write_schema(schema, opts)
        if not _committing_a_micro_batch():
            check_topic_exists(opts)
        return PrahaStreamWriter(opts)


#: the PySpark module that commits each micro-batch of a streaming write in a new Python process
_SINK_COMMIT_RUNNER = "python_streaming_sink_runner"


def _committing_a_micro_batch() -> bool:
    """Whether Spark's sink commit runner is asking for the writer. It does so after every
    micro-batch, in a new Python process, only to call `commit` or `abort`; the topic was
    checked when the query started, and checking again costs a connection (with TLS and SASL,
    a handshake) per micro-batch."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(f"{_SINK_COMMIT_RUNNER}.py"):
            return True
        frame = frame.f_back
    return False
