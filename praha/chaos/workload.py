"""The clients of a campaign: producers, consumers and an admin, each on its own thread.

Producers: confluent-kafka, idempotent (InitProducerId, sequence numbers per partition),
acks=all: librdkafka resends a batch whose answer it did not get, and the leader must
store it once and in send order, so an id stored twice or acknowledged behind a later
one is a violation. Each value is a unique id `<producer>-<seq>`, written to the partitions
round-robin at a bounded rate (backpressure: the local queue is capped).
Consumers: assign-based (no group), every data partition from the beginning; what they
are served goes to the ledger, which flags divergence immediately. (The consumer group —
subscribe, commits — runs as member processes: praha/chaos/group.py and member.py.)
Admin: a seeded sequence of ZooKeeper-mode admin operations (side topics created,
expanded and deleted; data partitions reassigned; preferred elections), each outcome
recorded; refusals under faults are expected, stuck operations are not.
"""
from __future__ import annotations

import logging
import os
import random
import threading
import time
from functools import partial
from typing import Any, cast

from praha.chaos.access import ClientAccess
from praha.chaos.environment import ChaosEnvironment
from praha.chaos.ledger import Ledger, Tp
from praha.chaos.timeline import Timeline
from praha.common import TopicPartition

log = logging.getLogger(__name__)

MAX_QUEUED = 2000  # per producer: above this, wait for acknowledgements first
MESSAGE_TIMEOUT_MS = 180_000  # longer than any fault is held (the heal waits are bounded by 120 s)


def producer_config(access: ClientAccess, logger: logging.Logger) -> dict[str, Any]:
    """PRAHA_CHAOS_CLIENT_DEBUG=msg,protocol puts librdkafka's debug lines in clients.log."""
    debug = os.environ.get("PRAHA_CHAOS_CLIENT_DEBUG")
    return {**({"debug": debug} if debug else {}),
        **access.librdkafka(),
        "acks": "all",
        "enable.idempotence": True,
        "max.in.flight.requests.per.connection": 5,  # idempotence keeps order with up to 5
        "linger.ms": 5,
        "request.timeout.ms": 5000,
        # long enough that no message times out during a fault: librdkafka bumps the producer
        # epoch when one does, and re-sends the rest of a possibly persisted batch under new
        # sequence numbers, which no broker can recognise as a resend (finding of seed 7, --netns)
        "message.timeout.ms": MESSAGE_TIMEOUT_MS,
        "socket.timeout.ms": 10000,
        "topic.metadata.refresh.interval.ms": 2000,
        "retry.backoff.ms": 100,
        "logger": logger,
    }


class ProducerWorker(threading.Thread):
    def __init__(self, name: str, access: ClientAccess, tps: list[Tp], ledger: Ledger, rate: int,
                 stop: threading.Event, logger: logging.Logger):
        super().__init__(name=f"chaos-{name}", daemon=True)
        self.pname = name
        self.access = access
        self.tps = tps
        self.ledger = ledger
        self.rate = max(1, rate)
        self.stop_event = stop
        self.logger = logger
        self.error: str = ""
        self.refused = 0  # produce() refused locally (e.g. a broker said the topic is unknown)

    def run(self) -> None:
        from confluent_kafka import KafkaException, Producer

        try:
            producer = Producer(producer_config(self.access, self.logger))
        except Exception as e:  # noqa: BLE001
            self.error = repr(e)
            return
        ledger, tps = self.ledger, self.tps
        interval = 1.0 / self.rate
        seq = 0
        next_t = time.monotonic()

        def delivered(rid: str, err: Any, msg: Any) -> None:
            if err is None:  # librdkafka may confirm a write without its offset (None): -1
                off = msg.offset()
                ledger.on_ack(rid, (msg.topic(), msg.partition()), -1 if off is None else off)
            else:
                ledger.on_fail(rid, err.name())

        try:
            while not self.stop_event.is_set():
                now = time.monotonic()
                if now < next_t:
                    producer.poll(min(next_t - now, 0.05))
                    continue
                next_t = max(next_t + interval, now - 1.0)
                if len(producer) >= MAX_QUEUED:
                    producer.poll(0.1)
                    continue
                topic, partition = tps[seq % len(tps)]
                rid = f"{self.pname}-{seq}"
                try:
                    producer.produce(topic, value=rid.encode(), partition=partition,
                                     on_delivery=partial(delivered, rid))
                except BufferError:
                    producer.poll(0.1)
                    continue
                except KafkaException:  # not sent: a fresh broker's empty metadata, say
                    self.refused += 1
                    producer.poll(0.1)
                    continue
                ledger.on_sent()
                seq += 1
                producer.poll(0)
        finally:
            producer.flush(20)
            del producer


class ConsumerWorker(threading.Thread):
    def __init__(self, name: str, access: ClientAccess, tps: list[Tp], ledger: Ledger, stop: threading.Event,
                 logger: logging.Logger):
        super().__init__(name=f"chaos-{name}", daemon=True)
        self.cname = name
        self.access = access
        self.tps = tps
        self.ledger = ledger
        self.stop_event = stop
        self.logger = logger
        self.errors = 0

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
        from confluent_kafka import TopicPartition as CTP

        consumer = Consumer({
            **self.access.librdkafka(), "group.id": f"chaos-{self.cname}",
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "enable.partition.eof": False,
            "fetch.wait.max.ms": 200, "topic.metadata.refresh.interval.ms": 2000, "socket.timeout.ms": 10000,
            "logger": self.logger,
        })
        last: dict[Tp, int] = {}
        try:
            consumer.assign([CTP(t, p, OFFSET_BEGINNING) for t, p in self.tps])
            while not self.stop_event.is_set():
                try:
                    batch = consumer.consume(500, 0.3)
                except KafkaException:
                    self.errors += 1
                    continue
                for m in batch:
                    if m.error():
                        self.errors += 1
                        continue
                    tp = (cast(str, m.topic()), cast(int, m.partition()))
                    off = cast(int, m.offset())
                    if off <= last.get(tp, -1):
                        self.ledger.rewinds += 1
                    last[tp] = off
                    self.ledger.on_served(tp, off, (m.value() or b"").decode("utf-8", "replace"))
        finally:
            consumer.close()


class AdminWorker(threading.Thread):
    """Seeded admin operations against ZooKeeper, as Kafka's ZooKeeper-mode tools do them."""

    OPS = ("create_topic", "delete_topic", "add_partitions", "reassign", "preferred_election")

    def __init__(self, env: ChaosEnvironment, data_tps: list[Tp], timeline: Timeline, seed: int,
                 interval_s: float, stop: threading.Event):
        super().__init__(name="chaos-admin", daemon=True)
        self.env = env
        self.data_tps = data_tps
        self.timeline = timeline
        self.rng = random.Random(seed ^ 0xAD317)
        self.interval_s = interval_s
        self.stop_event = stop
        self.side_topics: list[str] = []
        self.deleted: list[str] = []
        self.created = 0
        self.outcomes: dict[str, dict[str, int]] = {op: {"ok": 0, "refused": 0} for op in self.OPS}

    def run(self) -> None:
        while not self.stop_event.wait(self.interval_s * self.rng.uniform(0.5, 1.5)):
            op = self.rng.choice(self.OPS)
            try:
                what = getattr(self, f"_{op}")()
            except Exception as e:  # noqa: BLE001 - refusals under faults are expected
                self.outcomes[op]["refused"] += 1
                self.timeline.add("admin", f"{op} refused", error=f"{type(e).__name__}: {e}"[:300])
                continue
            if what is None:
                continue
            self.outcomes[op]["ok"] += 1
            self.timeline.add("admin", f"{op} {what}")

    # ------------------------------------------------------------------ operations
    def _create_topic(self) -> str | None:
        from praha.zk.admin_zk import create_topic

        if len(self.side_topics) >= 4:
            return None
        name = f"chaos-side-{self.created}"
        self.created += 1
        rf = min(3, self.env.cfg.brokers)
        create_topic(self.env.store, name, 2, rf, {"min.insync.replicas": "2"})
        self.side_topics.append(name)
        return name

    def _delete_topic(self) -> str | None:
        from praha.zk.admin_zk import delete_topic

        if not self.side_topics:
            return None
        name = self.side_topics.pop(self.rng.randrange(len(self.side_topics)))
        delete_topic(self.env.store, name)
        self.deleted.append(name)
        return name

    def _add_partitions(self) -> str | None:
        from praha.zk.admin_zk import add_partitions, read_assignment

        if not self.side_topics:
            return None
        name = self.rng.choice(self.side_topics)
        current, _ = read_assignment(self.env.store, name)
        if current is None or len(current.partitions) >= 6:
            return None
        total = len(current.partitions) + 1
        add_partitions(self.env.store, name, total)
        return f"{name} to {total} partitions"

    def _reassign(self) -> str | None:
        from praha.admin import reassign

        store = self.env.store
        topic, partition = self.rng.choice(self.data_tps)
        tp = TopicPartition(topic, partition)
        assignments, _ = store.get_topic_assignments([topic])
        current = tuple(assignments[topic].partitions[partition].replicas)
        brokers = sorted(self.env.brokers())
        rf = len(current)
        target = current
        for _ in range(10):
            target = tuple(self.rng.sample(brokers, rf))
            if target != current:
                break
        if target == current:
            return None
        reassign.execute(store, {tp: target})
        return f"{tp} {list(current)} -> {list(target)}"

    def _preferred_election(self) -> str | None:
        store = self.env.store
        tps = [TopicPartition(t, p) for t, p in self.data_tps]
        store.create_preferred_election(tps)
        return f"{len(tps)} partitions"
