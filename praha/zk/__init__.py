"""praha's ZooKeeper layer: Kafka's znode layout and codecs, a kazoo-based store, an embedded server.

- `znodes`: every path and JSON codec, byte-compatible with Kafka 2.x/3.x;
- `store.ZkStore`: typed, batched, fenced access through one kazoo client;
- `server.EmbeddedZooKeeper`: the real ZooKeeper from the pyspark jars, as a child process.
"""
from praha.zk.ops import CreateOp, DeleteOp, SetDataOp, WriteOutcome, WriteResult, ZkOp
from praha.zk.store import SessionListener, ZkError, ZkStore, ZkUnavailableError
from praha.zk.watches import WatchEvent, WatchEventType, WatchHandle

__all__ = [
    "CreateOp", "DeleteOp", "SetDataOp", "WriteOutcome", "WriteResult", "ZkOp",
    "SessionListener", "ZkError", "ZkStore", "ZkUnavailableError",
    "WatchEvent", "WatchEventType", "WatchHandle",
]
