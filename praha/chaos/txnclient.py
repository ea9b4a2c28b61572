"""One client of the transactional workload, as its own process (so a fault can SIGSTOP or SIGKILL it).

  python -m praha.chaos.txnclient --role producer|consumer|ctp --lib confluent|kafka-python
      --bootstrap B [--access FILE] --topics t1,t2 --name p0 --out FILE [--isolation read_committed]
      [--mode assign|subscribe] [--group G] [--output-topic T] [--seed S]

Roles:
  producer  a transactional producer: each transaction sends 2-4 unique values (`<name>-<n>`)
            to random partitions of the topics, then commits, or (one in four, seeded)
            aborts. A commit that fails with an abortable error is aborted; one whose
            outcome cannot be known (the producer was fenced, a fatal error, retries ran
            out) is indeterminate and the producer starts afresh (InitProducerId).
  consumer  reads every partition (`assign`, from the beginning) or joins a group
            (`subscribe`, committing what it read) with the given isolation level.
  ctp       consume-transform-produce: a read_committed group member whose transaction
            sends one value per record read to the output topic and commits the group's
            offsets with it (`send_offsets_to_transaction`); aborts at random too, then
            rewinds to the committed offsets.
Every operation goes to FILE as one history line (format: praha/chaos/history.py), flushed
at once, times are wall-clock seconds (every process is on this machine). SIGTERM ends the
client after its current operation; it also ends when its parent does.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import sys
import threading
import time
from typing import Any, TextIO

from praha.chaos.access import ClientAccess, from_arguments

#: a transaction is aborted by its coordinator after this long (the long_pause fault outlives it)
TRANSACTION_TIMEOUT_MS = 10_000
ABORT_CHANCE = 0.25
COMMIT_ATTEMPTS = 3
#: how long a kafka-python producer may take to end a transaction (it has no timeout of its own)
END_TXN_WAIT_S = 30.0

_stop = False


def _on_term(*_args: object) -> None:
    global _stop
    _stop = True


def _running(parent: int) -> bool:
    return not _stop and os.getppid() == parent


class History:
    def __init__(self, f: TextIO):
        self.f = f
        self._lock = threading.Lock()  # kafka-python's network thread writes resets

    def write(self, op: dict[str, Any]) -> None:
        with self._lock:
            self.f.write(json.dumps(op) + "\n")
            self.f.flush()


def _part(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


# ---------------------------------------------------------------------------------- producers
class ConfluentTxn:
    """confluent-kafka's transactional producer behind the small interface the loop needs."""

    def __init__(self, access: ClientAccess, tid: str):
        from confluent_kafka import Producer

        self.p = Producer({**access.librdkafka(), "transactional.id": tid,
                           "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
                           "message.timeout.ms": TRANSACTION_TIMEOUT_MS - 1000, "request.timeout.ms": 5000,
                           "socket.timeout.ms": 10000, "topic.metadata.refresh.interval.ms": 2000,
                           "retry.backoff.ms": 100, "linger.ms": 5})
        self.p.init_transactions(60)

    def begin(self) -> None:
        self.p.begin_transaction()

    def send(self, topic: str, partition: int, value: str, sends: list[dict[str, Any]]) -> None:
        entry: dict[str, Any] = {"partition": _part(topic, partition), "value": value, "offset": None}
        sends.append(entry)

        def delivered(err: Any, msg: Any) -> None:
            if err is None and msg.offset() is not None and msg.offset() >= 0:
                entry["offset"] = msg.offset()

        self.p.produce(topic, value=value.encode(), partition=partition, on_delivery=delivered)

    def send_offsets(self, consumer: Any) -> None:
        self.p.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                           consumer.consumer_group_metadata(), 30)

    def commit(self) -> str:
        """ok, fail (aborted) or info (unknown)."""
        from confluent_kafka import KafkaException

        self.p.flush(30)  # the delivery reports (offsets) first
        for _ in range(COMMIT_ATTEMPTS):
            try:
                self.p.commit_transaction(30)
                return "ok"
            except KafkaException as e:
                err = e.args[0]
                if err.txn_requires_abort():
                    return "fail" if self.abort() else "info"
                if not err.retriable():
                    return "info"
        return "info"

    def abort(self) -> bool:
        from confluent_kafka import KafkaException

        try:
            self.p.abort_transaction(30)
            return True
        except KafkaException:
            return False

    def close(self) -> None:
        self.p.flush(5)


class KafkaPythonTxn:
    """kafka-python's transactional producer (the second client implementation)."""

    def __init__(self, access: ClientAccess, tid: str):
        from kafka import KafkaProducer

        self.p = KafkaProducer(**access.kafka_python(), transactional_id=tid,
                               transaction_timeout_ms=TRANSACTION_TIMEOUT_MS, request_timeout_ms=10000,
                               linger_ms=5, metadata_max_age_ms=2000)
        self.p.init_transactions()
        self.futures: list[tuple[dict[str, Any], Any]] = []

    def begin(self) -> None:
        self.p.begin_transaction()
        self.futures = []

    def send(self, topic: str, partition: int, value: str, sends: list[dict[str, Any]]) -> None:
        entry: dict[str, Any] = {"partition": _part(topic, partition), "value": value, "offset": None}
        sends.append(entry)
        self.futures.append((entry, self.p.send(topic, value=value.encode(), partition=partition)))

    def send_offsets(self, consumer: Any) -> None:
        raise NotImplementedError("the consume-transform-produce stage runs on confluent-kafka")

    def commit(self) -> str:
        try:
            self.p.flush(timeout=30)
            for entry, fut in self.futures:
                if fut.is_done and fut.succeeded():
                    entry["offset"] = fut.value.offset
        except Exception:  # noqa: BLE001 - not all sent: nothing asked to commit yet
            return "fail" if self.abort() else "info"
        done = _bounded(self.p.commit_transaction)
        if done is None:  # still waiting: whether it committed is unknown
            return "info"
        return "ok" if done else ("fail" if self.abort() else "info")

    def abort(self) -> bool:
        return bool(_bounded(self.p.abort_transaction))

    def close(self) -> None:
        _bounded(lambda: self.p.close(timeout=5))


def _bounded(call: Any) -> bool | None:
    """kafka-python's commit_transaction() and abort_transaction() wait without a timeout
    (3.0.12): run one on a thread of its own; True if it returned, False if it raised, None if
    it was still waiting after END_TXN_WAIT_S or when SIGTERM came (the producer is then
    abandoned)."""
    result: list[bool] = []

    def run() -> None:
        try:
            call()
            result.append(True)
        except Exception:  # noqa: BLE001 - any refusal
            result.append(False)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    deadline = time.monotonic() + END_TXN_WAIT_S
    while t.is_alive() and time.monotonic() < deadline and not _stop:  # SIGTERM: give up at once
        t.join(0.2)
    return result[0] if result else None


def _new_txn_producer(lib: str, access: ClientAccess, tid: str) -> Any:
    return ConfluentTxn(access, tid) if lib == "confluent" else KafkaPythonTxn(access, tid)


def run_producer(args: argparse.Namespace, out: History, parent: int) -> None:
    from confluent_kafka.admin import AdminClient

    rng = random.Random(args.seed)
    tps = _partitions(AdminClient(_access(args).librdkafka()), args.topics.split(","))
    producer: Any = None
    n = 0
    while _running(parent):
        if producer is None:
            try:
                producer = _new_txn_producer(args.lib, _access(args), f"chaos-txn-{args.name}")
            except Exception as e:  # noqa: BLE001 - the coordinator may be down: try again
                print(f"init_transactions: {e}", file=sys.stderr, flush=True)
                time.sleep(1.0)
                continue
        txn = f"{args.name}-t{n}"
        op: dict[str, Any] = {"op": "txn", "process": args.name, "txn": txn, "invoke_t": time.time(),
                              "commit_t": None, "sends": [], "reads": []}
        wanted_abort = rng.random() < ABORT_CHANCE
        try:
            producer.begin()
            for i, (topic, partition) in enumerate(rng.sample(tps, rng.randint(2, min(4, len(tps))))):
                producer.send(topic, partition, f"{txn}-{i}", op["sends"])
        except Exception as e:  # noqa: BLE001 - nothing requested a commit: it cannot commit
            print(f"{txn}: {e}", file=sys.stderr, flush=True)
            wanted_abort = True
        if wanted_abort:  # never asked to commit: it cannot commit, whatever the abort says
            outcome = "fail"
            if not producer.abort():
                _close_quietly(producer)
                producer = None
        else:
            op["commit_t"] = time.time()
            outcome = producer.commit()
        op.update(type=outcome, t=time.time())
        out.write(op)
        n += 1
        if outcome == "info" and producer is not None:  # start afresh: InitProducerId fences the old epoch
            _close_quietly(producer)
            producer = None
        time.sleep(rng.uniform(0.05, 0.2))
    if producer is not None:
        _close_quietly(producer)


def _close_quietly(producer: Any) -> None:
    try:
        producer.close()
    except Exception:  # noqa: BLE001
        pass


def _partitions(admin: Any, topics: list[str]) -> list[tuple[str, int]]:
    """The topics' partitions (from Metadata; retried, bounded)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            md = admin.list_topics(timeout=10)
            tps = [(t, p) for t in topics for p in md.topics[t].partitions]
            if tps:
                return sorted(tps)
        except Exception:  # noqa: BLE001
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)


# ---------------------------------------------------------------------------------- consumers
def _poll_op(name: str, isolation: str, records: dict[str, list[list[Any]]]) -> dict[str, Any]:
    return {"op": "poll", "process": name, "type": "ok", "isolation": isolation, "t": time.time(),
            "records": records}


def run_consumer(args: argparse.Namespace, out: History, parent: int) -> None:
    if args.lib == "kafka-python":
        return _run_kafka_python_consumer(args, out, parent)
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
    from confluent_kafka import TopicPartition as CTP
    from confluent_kafka.admin import AdminClient

    group = args.group or f"chaos-txn-{args.name}"
    c = Consumer({**_access(args).librdkafka(), "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": args.isolation, "fetch.wait.max.ms": 200,
                  "topic.metadata.refresh.interval.ms": 2000, "socket.timeout.ms": 10000,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 750})
    topics = args.topics.split(",")

    def rebalanced(_c: Any, _parts: list[Any]) -> None:
        out.write({"op": "assign", "process": args.name, "t": time.time()})

    if args.mode == "assign":
        tps = _partitions(AdminClient(_access(args).librdkafka()), topics)
        c.assign([CTP(t, p, OFFSET_BEGINNING) for t, p in tps])
        out.write({"op": "assign", "process": args.name, "t": time.time()})
    else:
        c.subscribe(topics, on_assign=rebalanced, on_revoke=rebalanced)
    try:
        while _running(parent):
            try:
                batch = c.consume(500, 0.3)
            except KafkaException:
                continue
            records: dict[str, list[list[Any]]] = {}
            nxt: dict[tuple[str, int], int] = {}
            for m in batch:
                if m.error():
                    continue
                topic, partition, off = str(m.topic()), int(m.partition() or 0), int(m.offset() or 0)
                records.setdefault(_part(topic, partition), []).append([off, (m.value() or b"").decode()])
                nxt[(topic, partition)] = off + 1
            if not records:
                continue
            out.write(_poll_op(args.name, args.isolation, records))
            if args.mode == "subscribe":
                _commit(c, group, args.name, nxt, out)
    finally:
        c.close()


def _commit(c: Any, group: str, name: str, nxt: dict[tuple[str, int], int], out: History) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka import TopicPartition as CTP

    try:
        result = c.commit(offsets=[CTP(t, p, o) for (t, p), o in nxt.items()], asynchronous=False)
    except KafkaException:
        return
    done = {_part(p.topic, p.partition): p.offset for p in result or [] if p.error is None}
    if done:
        out.write({"op": "commit", "process": name, "group": group, "type": "ok", "t": time.time(), "offsets": done})


def _run_kafka_python_consumer(args: argparse.Namespace, out: History, parent: int) -> None:
    from kafka import KafkaConsumer, TopicPartition

    ResetRecorder(args.name, out).install()
    c = KafkaConsumer(**_access(args).kafka_python(), isolation_level=args.isolation, enable_auto_commit=False,
                      auto_offset_reset="earliest", group_id=None, metadata_max_age_ms=2000,
                      request_timeout_ms=15000, fetch_max_wait_ms=200)
    deadline = time.monotonic() + 60
    parts: set[int] | None = None
    tps: list[TopicPartition] = []
    for topic in args.topics.split(","):
        while (parts := c.partitions_for_topic(topic)) is None and time.monotonic() < deadline:
            time.sleep(0.5)
        tps += [TopicPartition(topic, p) for p in sorted(parts or ())]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    out.write({"op": "assign", "process": args.name, "t": time.time()})
    try:
        while _running(parent):
            got = c.poll(timeout_ms=300, max_records=500)
            records = {_part(tp.topic, tp.partition): [[m.offset, (m.value or b"").decode()] for m in msgs]
                       for tp, msgs in got.items() if msgs}
            if records:
                out.write(_poll_op(args.name, args.isolation, records))
    finally:
        c.close()


class ResetRecorder(logging.Handler):
    """kafka-python moves a consumer's position after an OFFSET_OUT_OF_RANGE answer
    (`auto_offset_reset`) and says so only in its log: each such reset becomes a `reset`
    op, so the checker can tell the client's own rewind from a broker's wrong answer.
    A reset without an out-of-range answer before it (the first seek) is not one."""

    OUT_OF_RANGE = "Fetch offset %s is out of range for topic-partition %s"
    RESETTING = "Resetting offset for partition %s to offset %s."
    LOGGER = "kafka.consumer.fetcher"

    def __init__(self, name: str, out: History):
        super().__init__(logging.INFO)
        self.name, self.out = name, out
        self.refused: dict[str, int] = {}  # partition -> the fetch offset answered OFFSET_OUT_OF_RANGE

    def emit(self, record: logging.LogRecord) -> None:
        args: tuple[Any, ...] = record.args if isinstance(record.args, tuple) else ()
        if record.msg == self.OUT_OF_RANGE and len(args) == 2:
            self.refused[_part(args[1].topic, args[1].partition)] = int(args[0])
        elif record.msg == self.RESETTING and len(args) == 2:
            part = _part(args[0].topic, args[0].partition)
            if part in self.refused:
                self.out.write({"op": "reset", "process": self.name, "partition": part,
                                "from": self.refused.pop(part), "to": int(args[1]), "t": time.time()})

    def install(self) -> None:
        log = logging.getLogger(self.LOGGER)
        log.setLevel(logging.INFO)
        log.addHandler(self)


def run_ctp(args: argparse.Namespace, out: History, parent: int) -> None:
    """Consume (read_committed, in a group), transform (one output value per input), produce and
    commit the offsets in the same transaction."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException

    rng = random.Random(args.seed)
    group = args.group or f"chaos-ctp-{args.name}"
    c = Consumer({**_access(args).librdkafka(), "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed", "fetch.wait.max.ms": 200,
                  "topic.metadata.refresh.interval.ms": 2000, "session.timeout.ms": 6000,
                  "heartbeat.interval.ms": 750})
    c.subscribe(args.topics.split(","),
                on_assign=lambda _c, _p: out.write({"op": "assign", "process": args.name, "t": time.time()}))
    producer: ConfluentTxn | None = None
    n = 0
    try:
        while _running(parent):
            if producer is None:
                try:
                    producer = ConfluentTxn(_access(args), f"chaos-txn-{args.name}")
                except KafkaException as e:
                    print(f"init_transactions: {e}", file=sys.stderr, flush=True)
                    time.sleep(1.0)
                    continue
            try:
                batch = [m for m in c.consume(50, 0.5) if not m.error()]
            except KafkaException:
                continue
            if not batch:
                continue
            txn = f"{args.name}-t{n}"
            n += 1
            reads = [(m.value() or b"").decode() for m in batch]
            out.write(_poll_op(args.name, "read_committed", _by_partition(batch)))
            op: dict[str, Any] = {"op": "txn", "process": args.name, "txn": txn, "invoke_t": time.time(),
                                  "commit_t": None, "sends": [], "reads": reads}
            wanted_abort = rng.random() < ABORT_CHANCE
            aborted = True
            try:
                producer.begin()
                for i, _value in enumerate(reads):
                    producer.send(args.output_topic, i % args.output_partitions, f"{txn}-{i}", op["sends"])
                producer.send_offsets(c)
            except KafkaException as e:
                print(f"{txn}: {e}", file=sys.stderr, flush=True)
                wanted_abort = True
            if wanted_abort:  # never asked to commit: it cannot commit
                outcome = "fail"
                aborted = producer.abort()
            else:
                op["commit_t"] = time.time()
                outcome = producer.commit()
            op.update(type=outcome, t=time.time())
            out.write(op)
            if outcome != "ok":  # read it again: back to what the group committed
                _rewind(c, OFFSET_BEGINNING)
                out.write({"op": "assign", "process": args.name, "t": time.time()})
            if outcome == "info" or (outcome == "fail" and not aborted):
                _close_quietly(producer)
                producer = None
    finally:
        c.close()
        if producer is not None:
            _close_quietly(producer)


def _by_partition(batch: list[Any]) -> dict[str, list[list[Any]]]:
    records: dict[str, list[list[Any]]] = {}
    for m in batch:
        records.setdefault(_part(str(m.topic()), int(m.partition() or 0)), []).append(
            [int(m.offset() or 0), (m.value() or b"").decode()])
    return records


def _access(args: argparse.Namespace) -> ClientAccess:
    return from_arguments(args.bootstrap, args.access)


def _rewind(c: Any, beginning: int) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka import TopicPartition as CTP

    try:
        for p in c.committed(c.assignment(), timeout=10):
            c.seek(CTP(p.topic, p.partition, p.offset if p.offset >= 0 else beginning))
    except KafkaException as e:
        print(f"rewind: {e}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m praha.chaos.txnclient", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--role", choices=("producer", "consumer", "ctp"), required=True)
    p.add_argument("--lib", choices=("confluent", "kafka-python"), default="confluent")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--access", default="", help="a secure principal's credentials (JSON, praha/chaos/access.py)")
    p.add_argument("--topics", required=True, help="comma-separated topics to write (producer) or read")
    p.add_argument("--name", required=True, help="the process name in the history")
    p.add_argument("--out", required=True, help="the history file (JSON lines, appended)")
    p.add_argument("--isolation", choices=("read_committed", "read_uncommitted"), default="read_committed")
    p.add_argument("--mode", choices=("assign", "subscribe"), default="assign")
    p.add_argument("--group", default="", help="consumer group (subscribe, ctp)")
    p.add_argument("--output-topic", default="", help="ctp: where the transformed values go")
    p.add_argument("--output-partitions", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_term)
    parent = os.getppid()
    with open(args.out, "a", encoding="utf-8") as f:
        {"producer": run_producer, "consumer": run_consumer, "ctp": run_ctp}[args.role](args, History(f), parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
