"""Write, batch and streaming: `df.write.format("praha")` / `writeStream.format("praha")`.

Columns as in Spark's Kafka sink: `value` (required, binary or string), `key`,
`headers` (array<struct<key string, value binary>>), `topic` (or the `topic` option,
which wins), `partition` (int; absent or null: the producer's partitioner).

Delivery guarantee: **at-least-once** by default. Each task writes its rows through one
confluent-kafka Producer (acks=all unless `kafka.acks` says otherwise; kept by the Python
worker for its next task, `praha.spark.pool`), flushes before it returns, and raises if
any record was not acknowledged, so Spark retries the task. A retried task writes all
its rows again: rows a failed attempt did get acknowledged appear twice. With
`exactlyOnce=true` each task writes in one transaction with a marker of its batch, and a
replayed task that finds its marker writes nothing (`praha.spark.exactly_once`).
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, ShortType, StringType, StructType

from praha.errors import PrahaError
from praha.spark.exactly_once import Row
from praha.spark.options import OptionError, WriteOptions
from praha.spark.pool import CLIENTS, PRODUCERS

#: Kafka's AclOperation code of WRITE (its bit in authorised-operation fields)
WRITE = 4
#: the client id of the sink's own metadata checks
SINK_CLIENT_ID = "praha-spark-sink"
#: how long a task waits for its last acknowledgements (librdkafka retries within it)
FLUSH_TIMEOUT_S = 120.0


class WriteError(PrahaError):
    """Records of a task were not acknowledged; the task fails so Spark retries it."""


@dataclass
class WriteCommit(WriterCommitMessage):
    rows: int
    seconds: float
    #: exactly-once: the task found its work already committed (a replay) and wrote nothing
    skipped: bool = False


def check_write_schema(schema: StructType, opts: WriteOptions) -> None:
    """Analysis-time checks of the DataFrame to write (Spark's Kafka sink rules)."""
    fields = {f.name.lower(): f for f in schema.fields}
    if "value" not in fields:
        raise OptionError("value", f"the DataFrame to write needs a 'value' column (binary or string); "
                          f"it has {', '.join(schema.fieldNames()) or 'no columns'}")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name].dataType, (BinaryType, StringType)):
            raise OptionError(name,
                              f"column '{name}' must be binary or string, not {fields[name].dataType.simpleString()}")
    if "topic" in fields and not isinstance(fields["topic"].dataType, StringType):
        raise OptionError("topic", f"column 'topic' must be a string, not {fields['topic'].dataType.simpleString()}")
    if opts.topic is None and "topic" not in fields:
        raise OptionError("topic",
                          "no topic to write to: set the 'topic' option or give the DataFrame a 'topic' column")
    if "partition" in fields and not isinstance(fields["partition"].dataType, (IntegerType, ShortType, LongType)):
        raise OptionError("partition",
                          f"column 'partition' must be an int, not {fields['partition'].dataType.simpleString()}")
    if "headers" in fields:
        t = fields["headers"].dataType
        ok = isinstance(t, ArrayType) and isinstance(t.elementType, StructType) and \
            [f.name for f in t.elementType.fields] == ["key", "value"] and \
            isinstance(t.elementType.fields[0].dataType, StringType) and \
            isinstance(t.elementType.fields[1].dataType, (BinaryType, StringType))
        if not ok:
            raise OptionError("headers", "column 'headers' must be array<struct<key: string, value: binary>>, "
                              f"not {t.simpleString()}")


def check_topic_exists(opts: WriteOptions) -> None:
    """Before any task runs: the cluster takes the credentials, and the `topic` option
    names a topic that exists (praha does not auto-create) and that the user may write."""
    from praha.spark.kafka import ClusterClient, not_authorized

    key = (opts.bootstrap, SINK_CLIENT_ID, False, opts.security)
    make = lambda: ClusterClient(opts.bootstrap, client_id=SINK_CLIENT_ID,  # noqa: E731
                                 security=opts.security.client_security())
    # Spark plans a streaming write again for every micro-batch (pyspark's write_into_data_source,
    # in a reused Python worker): the check borrows that worker's client, from any broker that
    # answers, since a broker of the last metadata may just have died
    with CLIENTS.borrow(key, make) as client:
        md = client.refresh([opts.topic] if opts.topic else [], authorized_operations=opts.security.sasl)
        if opts.topic is None:
            return
        if not md.partitions_of(opts.topic):
            raise OptionError("topic", f"unknown topic {opts.topic!r} in the cluster; create it first")
        if opts.security.sasl and not may_write(md.topic_operations.get(opts.topic)):
            raise not_authorized("Write", opts.topic, client)


def may_write(operations: int | None) -> bool:
    """Whether a topic's authorised operations (Metadata v8+: a bit field of Kafka's
    AclOperation codes) include Write; a broker that did not say lets the producer find out."""
    if operations is None or operations == -2147483648:
        return True
    return bool(operations & (1 << WRITE))


def _as_bytes(v: Any) -> bytes | None:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


def rows_of(opts: WriteOptions, batches: Iterator[Any]) -> Iterator[Row]:
    """The rows of Arrow `batches`: topic, and key, value, partition and headers when given."""
    for batch in batches:
        names = [n.lower() for n in batch.schema.names]
        col = {n: batch.column(i).to_pylist() for i, n in enumerate(names)
               if n in ("key", "value", "topic", "partition", "headers")}
        n = batch.num_rows
        values = col["value"]
        keys = col.get("key") or [None] * n
        topics = [opts.topic] * n if opts.topic else col["topic"]
        parts = col.get("partition")
        headers = col.get("headers")
        for i in range(n):
            topic = topics[i]
            if topic is None:
                raise OptionError("topic", "null topic present in the data; set the 'topic' option or fill the column")
            kwargs: dict[str, Any] = {"value": _as_bytes(values[i]), "key": _as_bytes(keys[i])}
            if parts is not None and parts[i] is not None:
                kwargs["partition"] = int(parts[i])
            if headers is not None and headers[i]:
                kwargs["headers"] = [(h["key"], _as_bytes(h["value"])) for h in headers[i]]
            yield topic, kwargs


def produce_row(producer: Any, row: Row) -> None:
    """Send one row, waiting for room in the producer's queue when it is full."""
    topic, kwargs = row
    while True:
        try:
            producer.produce(topic, **kwargs)
            return
        except BufferError:
            producer.poll(0.05)


def producer_config(opts: WriteOptions) -> dict[str, Any]:
    """The sink's producer settings: short batching and quiet logs unless `kafka.*` says otherwise."""
    return {"linger.ms": 5, "log_level": 3, **opts.producer_config, **opts.security.librdkafka()}


def write_batches(opts: WriteOptions, batches: Iterator[Any]) -> WriteCommit:
    """Produce every row of `batches` (Arrow); flush; raise if any was not acknowledged."""
    if opts.exactly_once:
        return _write_exactly_once(opts, batches)
    from confluent_kafka import KafkaException, Producer

    t0 = time.monotonic()
    failures: list[str] = []
    config = producer_config(opts)

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(f"{msg.topic()}[{msg.partition()}]: {err.str() if hasattr(err, 'str') else err}")

    rows = 0
    # the worker's producer from its last task, if it ended well (a failed one is dropped)
    with PRODUCERS.borrow(tuple(sorted(config.items())), lambda: Producer(config)) as producer:
        try:
            for topic, kwargs in rows_of(opts, batches):
                kwargs["on_delivery"] = delivered
                produce_row(producer, (topic, kwargs))
                rows += 1
                if rows % 1000 == 0:
                    producer.poll(0)
                if failures:
                    break
            left = producer.flush(FLUSH_TIMEOUT_S)
        except KafkaException as e:
            raise WriteError(f"producer error: {e}") from e
        if failures or left:
            detail = "; ".join(failures[:3]) + (f" (+{len(failures) - 3} more)" if len(failures) > 3 else "")
            raise WriteError(f"{len(failures) + left} of {rows} records were not acknowledged"
                             + (f" ({left} still unacknowledged after {FLUSH_TIMEOUT_S:.0f}s)" if left else "")
                             + (f": {detail}" if detail else "") + "; failing the task so Spark retries it")
    return WriteCommit(rows, time.monotonic() - t0)


def _write_exactly_once(opts: WriteOptions, batches: Iterator[Any]) -> WriteCommit:
    from praha.spark.exactly_once import write_exactly_once

    t0 = time.monotonic()
    written, skipped = write_exactly_once(producer_config(opts), opts.topic,
                                          opts.transactional_id_prefix, opts.write_id,
                                          rows_of(opts, batches), produce_row, opts.fail_first_attempt)
    return WriteCommit(written, time.monotonic() - t0, skipped)


class PrahaBatchWriter(DataSourceArrowWriter):
    def __init__(self, opts: WriteOptions):
        if opts.exactly_once and opts.write_id is None:  # on the driver: one id for the write's tasks
            from praha.spark.exactly_once import new_write_id

            opts = replace(opts, write_id=new_write_id())
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> WriteCommit:
        return write_batches(self.opts, iterator)


class PrahaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, opts: WriteOptions):
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> WriteCommit:
        return write_batches(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records are acknowledged (or their transactions committed) by the time a task
        returns: nothing left to commit."""
        if self.opts.fail_commit_of_batch == batchId:
            raise WriteError(f"test hook: the driver fails the commit of batch {batchId} after its tasks wrote")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Acknowledged records stay written: at-least-once, the retried batch may repeat them;
        exactly-once, the committed tasks' markers make the retry skip them."""
