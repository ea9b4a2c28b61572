"""Real-client helpers for tests: read a partition back with confluent-kafka."""
from __future__ import annotations

import time


def read_back(bootstrap: str, topic: str, partition: int, expect: set[bytes], timeout: float = 60.0) -> set[bytes]:
    """The values of `topic`/`partition` from its start, read by a confluent-kafka consumer
    (assign, no commits) until all of `expect` is seen or `timeout` passes."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-back-{topic}-{partition}",
                  "enable.auto.commit": False})
    got: set[bytes] = set()
    try:
        c.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        while not expect <= got and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                value = m.value()
                if value is not None:
                    got.add(value)
        return got
    finally:
        c.close()
