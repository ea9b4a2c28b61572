"""The `_schemas` topic: a reader thread that applies every record to the broker's own
`RegistryState`, and the primary's writes (acks=all). Both are ordinary Kafka clients
(kafka-python) of the cluster, on the broker's own listener. kafka-python is imported when
`_schemas` first exists (about 0.5 CPU-seconds): a broker whose registry is never used never
pays for it."""
from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from praha.registry import errors
from praha.registry.records import TOPIC
from praha.registry.state import RegistryState, Write

log = logging.getLogger(__name__)


@functools.cache
def _kafka() -> Any:
    """kafka-python, imported on first use."""
    import kafka
    import kafka.errors

    return kafka


@functools.cache
def _tp() -> Any:
    """`_schemas`' one partition, as kafka-python names it."""
    return _kafka().TopicPartition(TOPIC, 0)


class SchemasLog:
    def __init__(self, state: RegistryState, client_config: dict[str, Any], topic_exists: Callable[[], bool],
                 create_topic: Callable[[], None], timeout_s: float = 30.0):
        self.state = state
        self.lock = threading.Lock()  # held while the state changes or is read
        self._client_config = client_config
        self._topic_exists = topic_exists
        self._create_topic = create_topic
        self._timeout_s = timeout_s
        self._applied = threading.Condition(self.lock)
        self.position = 0  # the next offset of `_schemas` the state has not seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read_loop, name="schemas-reader", daemon=True)
        self._consumer: Any = None
        self._offsets: Any = None  # a second consumer, only for end offsets (clients are not thread-safe)
        self._offsets_lock = threading.Lock()
        self._producer: Any = None
        self._producer_lock = threading.Lock()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for client in (self._producer, self._offsets):
            if client is not None:
                try:
                    client.close(timeout=2) if client is self._producer else client.close()
                except Exception:  # noqa: BLE001 - shutting down
                    pass

    # ------------------------------------------------------------------ reading
    def _read_loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self._consumer is None:
                    if not self._topic_exists():
                        self._stop.wait(1.0)  # `catch_up` looks itself: no write is missed
                        continue
                    self._consumer = _kafka().KafkaConsumer(**self._client_config, enable_auto_commit=False,
                                                            group_id=None, client_id="schema-registry-reader",
                                                            fetch_max_wait_ms=100)
                    self._consumer.assign([_tp()])
                    self._consumer.seek_to_beginning(_tp())
                batches = self._consumer.poll(timeout_ms=200)
                position = self._consumer.position(_tp())
                with self.lock:
                    count = 0
                    for records in batches.values():
                        for r in records:
                            if r.offset >= self.position:  # not applied already by `append`
                                self.state.apply(r.key, r.value)
                                count += 1
                    if position is not None and position > self.position:
                        self.position = position
                    self._applied.notify_all()
                if count:
                    log.info("schema registry: applied %d _schemas records, at offset %d", count, self.position)
            except Exception as e:  # noqa: BLE001 - the reader goes on; the cluster may be moving
                log.warning("schema registry: reading _schemas failed: %r", e)
                self._stop.wait(0.5)
        if self._consumer is not None:
            self._consumer.close()

    def end_offset(self) -> int:
        """The topic's end offset now (0 while it does not exist)."""
        if not self._topic_exists():
            return 0
        with self._offsets_lock:
            if self._offsets is None:
                self._offsets = _kafka().KafkaConsumer(**self._client_config, enable_auto_commit=False,
                                                       group_id=None, client_id="schema-registry-offsets")
            try:
                return int(self._offsets.end_offsets([_tp()])[_tp()])
            except _kafka().errors.KafkaError as e:
                raise errors.store_error(f"cannot read the end of {TOPIC}: {e}") from e

    def wait_for(self, offset: int, timeout_s: float | None = None) -> None:
        """Until the state has applied every record before `offset` (50002 on time-out)."""
        deadline = time.monotonic() + (timeout_s or self._timeout_s)
        with self.lock:
            while self.position < offset:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise errors.store_timeout(f"{TOPIC} not read up to offset {offset} (at {self.position})")
                self._applied.wait(min(left, 0.5))

    def catch_up(self) -> None:
        """Read-your-writes: everything written to `_schemas` so far is in the state."""
        self.wait_for(self.end_offset())

    # ------------------------------------------------------------------ writing (the primary)
    def append(self, writes: Sequence[Write]) -> None:
        """Write records (acks=all), then wait until this broker's state has them."""
        if not writes:
            return
        if not self._topic_exists():
            self._create_topic()
        with self._producer_lock:
            if self._producer is None:
                self._producer = _kafka().KafkaProducer(**self._client_config, acks="all", retries=5,
                                                        client_id="schema-registry-writer", linger_ms=0,
                                                        max_in_flight_requests_per_connection=1)
            try:
                futures = [self._producer.send(TOPIC, key=k, value=v, partition=0) for k, v in writes]
                self._producer.flush(self._timeout_s)
                offsets = [f.get(timeout=self._timeout_s).offset for f in futures]
            except _kafka().errors.KafkaError as e:
                raise errors.store_error(f"writing {TOPIC} failed: {e}") from e
        with self.lock:
            if self.position == offsets[0] and offsets == list(range(offsets[0], offsets[0] + len(offsets))):
                # nothing else was written in between: apply our own records now rather than
                # waiting for the reader's next fetch (it skips them by offset)
                for k, v in writes:
                    self.state.apply(k, v)
                self.position = offsets[-1] + 1
                self._applied.notify_all()
                return
        self.wait_for(offsets[-1] + 1)
