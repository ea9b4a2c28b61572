"""Spark's Kafka source schema, and the Arrow batches a read hands to Spark.

The schema is exactly the one of Spark's own Kafka source, so a pipeline moves from
`format("kafka")` to `format("praha")` by changing that one word. Rows go to Spark as
Arrow record batches (one per fetch) rather than tuples: Spark then skips its per-value
Python conversion, which is most of the cost of a Python data source read.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from praha.spark.records import Columns

HEADERS_TYPE = ArrayType(StructType([
    StructField("key", StringType(), True),
    StructField("value", BinaryType(), True),
]), True)


def kafka_schema(include_headers: bool = False) -> StructType:
    fields = [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE, True))
    return StructType(fields)


def arrow_schema(schema: StructType) -> Any:
    """The Arrow schema Spark expects back from a Python data source for `schema`."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def to_arrow(cols: Columns, topic: str, partition: int, pa_schema: Any) -> Any:
    """One Arrow RecordBatch from decoded columns (empty-safe)."""
    import numpy as np
    import pyarrow as pa

    n = len(cols)
    arrays = [
        pa.array(cols.keys, pa.binary()),
        pa.array(cols.values, pa.binary()),
        pa.array([topic] * n, pa.string()),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(np.asarray(cols.offsets, dtype=np.int64)),
        pa.array(np.asarray(cols.timestamps_ms, dtype=np.int64) * 1000, pa_schema.field("timestamp").type),
        pa.array(np.asarray(cols.timestamp_types, dtype=np.int32)),
    ]
    if cols.with_headers:
        arrays.append(pa.array(
            [[{"key": k, "value": v} for k, v in hs] for hs in cols.headers],
            pa_schema.field("headers").type))
    return pa.RecordBatch.from_arrays(arrays, schema=pa_schema)
