"""Exactly-once writes of the praha sink (`exactlyOnce=true`).

Spark runs a task again when an attempt fails, and runs a whole micro-batch again after a
driver restart from its checkpoint; an at-least-once sink writes the rows again each time.
Here every task writes in one Kafka transaction, and the transaction also commits a marker
saying "this task partition of this batch is done", so a replay can tell:

1. the task names its transactional id and its marker group after the query and its
   partition: `<prefix>-<query>-<partition>` (the query id is Spark's, kept in the
   checkpoint, so it survives a driver restart; a batch write gets a fresh id per write);
2. `init_transactions`: the transaction coordinator fences every earlier attempt of the same
   task (a zombie can no longer write or commit) and finishes what it left open;
3. it reads its marker (the group's committed offset, read_committed: pending transactional
   offsets are waited for): the marker is the last batch id committed plus one, so marker >
   batch id means this work is already in the log: the task returns without writing;
4. otherwise it begins a transaction, produces its rows, adds the marker with
   `send_offsets_to_transaction` (TxnOffsetCommit: offset batch id + 1 on partition 0 of the
   topic it writes) and commits: rows and marker become visible together or not at all;
5. any failure aborts the transaction and raises, so Spark retries the task.

Readers see each input row's output exactly once with `isolation.level=read_committed`; a
read_uncommitted reader also sees the records of aborted attempts.
"""
from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from praha.errors import PrahaError

#: how long a task waits for the coordinator (init, commit) and for its marker
TXN_TIMEOUT_S = 60.0
#: Spark's local properties that name the query and the micro-batch a task belongs to
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
#: test hook: make first task attempts fail "beforeCommit" (rows written, transaction open)
#: or "afterCommit" (transaction committed), so tests can show a retry writes nothing twice
FAIL_FIRST_ATTEMPT_OPTION = "praha.test.failFirstAttempt"


class ExactlyOnceError(PrahaError):
    """A transactional write failed; the task fails so Spark retries it."""


class InjectedFailure(ExactlyOnceError):
    """The test hook's failure."""


def transactional_id(prefix: str, query: str, partition: int) -> str:
    return f"{prefix}-{query}-{partition}"


def task_identity(write_id: str | None) -> tuple[str, int, int, int]:
    """(query or write id, task partition, batch id, attempt number) of the running task."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    if tc is None:
        raise ExactlyOnceError("exactly-once writes run inside Spark tasks only")
    query = write_id or tc.getLocalProperty(QUERY_ID_PROPERTY)
    batch = tc.getLocalProperty(BATCH_ID_PROPERTY)
    if not query:
        raise ExactlyOnceError("no streaming query id in the task's properties and no write id")
    return query, tc.partitionId(), int(batch) if batch is not None else 0, tc.attemptNumber()


#: one row as the producer takes it: the topic, and produce()'s keyword arguments
Row = tuple[str, dict[str, Any]]


def _first_topic(rows: Iterator[Row], fixed: str | None) -> tuple[str | None, Iterator[Row]]:
    """The topic the marker goes to: the `topic` option, else the first row's (a replay
    sees the same rows, so the same topic); the rows are given back untouched."""
    if fixed is not None:
        return fixed, rows
    first = next(rows, None)
    if first is None:
        return None, iter(())
    return first[0], itertools.chain([first], rows)


def write_exactly_once(producer_config: dict[str, Any], fixed_topic: str | None, prefix: str, write_id: str | None,
                       rows: Iterator[Row], produce: Callable[[Any, Row], None],
                       fail_first_attempt: str | None = None) -> tuple[int, bool]:
    """Run steps 1-5 for one task; `produce(producer, row)` sends one row. Returns (rows
    written, whether the task was already committed and skipped)."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    query, partition, batch_id, attempt = task_identity(write_id)
    topic, rows = _first_topic(rows, fixed_topic)
    if topic is None:
        return 0, False  # no rows: nothing to write, nothing to repeat
    tid = transactional_id(prefix, query, partition)
    config = dict(producer_config)
    config.update({"transactional.id": tid, "enable.idempotence": "true", "acks": "all"})
    producer = Producer(config)
    security = {k: v for k, v in producer_config.items() if k.startswith(("security.", "sasl.", "ssl."))}
    marker_reader = Consumer({"bootstrap.servers": producer_config["bootstrap.servers"], "group.id": tid,
                              "isolation.level": "read_committed", "enable.auto.commit": "false",
                              "log_level": 3, **security})
    try:
        producer.init_transactions(TXN_TIMEOUT_S)
        (marker,) = marker_reader.committed([TopicPartition(topic, 0)], timeout=TXN_TIMEOUT_S)
        if marker.offset > batch_id:
            return 0, True
        producer.begin_transaction()
        written = 0
        for row in rows:
            produce(producer, row)
            written += 1
        producer.flush(TXN_TIMEOUT_S)
        if fail_first_attempt == "beforeCommit" and attempt == 0:
            raise InjectedFailure(f"test hook: attempt 0 of task {partition} fails before its commit")
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, batch_id + 1, f"praha-sink batch {batch_id}")],
            marker_reader.consumer_group_metadata(), TXN_TIMEOUT_S)
        producer.commit_transaction(TXN_TIMEOUT_S)
        if fail_first_attempt == "afterCommit" and attempt == 0:
            raise InjectedFailure(f"test hook: attempt 0 of task {partition} fails after its commit")
        return written, False
    except InjectedFailure:
        raise
    except KafkaException as e:
        _abort_quietly(producer)
        raise ExactlyOnceError(f"transaction {tid} (batch {batch_id}) failed: {e}; the task fails so Spark "
                               "retries it") from e
    finally:
        marker_reader.close()


def _abort_quietly(producer: Any) -> None:
    """Abort what the failed attempt left open; a fenced or dead producer cannot, and the
    next attempt's init_transactions aborts it then."""
    try:
        producer.abort_transaction(10)
    except Exception:  # noqa: BLE001 - best effort; the retry's init fences and aborts anyway
        pass


def new_write_id() -> str:
    """A batch write's id: unique per write job, shared by its tasks (made on the driver)."""
    return f"write-{int(time.time() * 1000)}-{os.getpid()}-{os.urandom(4).hex()}"
