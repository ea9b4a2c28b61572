"""praha's ZooKeeper layer, split as Kafka's (`ZooKeeperClient` / `KafkaZkClient` / `ZkData`).

- `client.ZooKeeperClient`: one kazoo session — reconnects, bulk reads, batched and checked
  multi-op writes, self-re-arming watches; knows no Kafka path;
- `store.ZkStore`: Kafka's znode calls on that client (election, registration, partition
  states, fenced controller writes);
- `admin_zk`: the admin writes both the admin tools and the broker's admin APIs make
  (topic creation, deletion marks, partition additions, config writes and their notices);
- `znodes`: every path and reference JSON codec, byte-compatible with Kafka 2.x/3.x;
  `fast_codecs`: the hot-path codecs, equal to the reference on every input;
- `server.EmbeddedZooKeeper`: the real ZooKeeper from the pyspark jars, as a child process.
"""
from praha.zk.client import (
    SessionListener,
    ZkError,
    ZkUnavailableError,
    ZooKeeperClient,
)
from praha.zk.ops import CreateOp, DeleteOp, SetDataOp, WriteOutcome, WriteResult, ZkOp
from praha.zk.store import ZkStore
from praha.zk.watches import WatchEvent, WatchEventType, WatchHandle

__all__ = [
    "CreateOp",
    "DeleteOp",
    "SessionListener",
    "SetDataOp",
    "WatchEvent",
    "WatchEventType",
    "WatchHandle",
    "WriteOutcome",
    "WriteResult",
    "ZkError",
    "ZkOp",
    "ZkStore",
    "ZkUnavailableError",
    "ZooKeeperClient",
]
