"""Small value types shared by the ZooKeeper layer, the controller and the broker."""
from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

NO_LEADER = -1
#: Leader id a controller puts in UpdateMetadata for partitions of a topic being deleted.
LEADER_DURING_DELETE = -2
#: Leader epoch sent in StopReplica when the partition is being deleted (Kafka's EpochDuringDelete).
EPOCH_DURING_DELETE = -2
INITIAL_CONTROLLER_EPOCH = 0
INITIAL_LEADER_EPOCH = 0
INITIAL_PARTITION_EPOCH = 0

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class EndPoint:
    host: str
    port: int
    listener: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """What a broker registers under /brokers/ids/<id>; `epoch` is the znode's czxid."""

    id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    epoch: int = -1

    def endpoint(self, listener: str) -> EndPoint | None:
        """The endpoint of `listener` (None: this broker does not have it)."""
        return next((e for e in self.endpoints if e.listener == listener), None)

    @property
    def host(self) -> str:
        return self.endpoints[0].host

    @property
    def port(self) -> int:
        return self.endpoints[0].port


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """Leader, leader epoch and ISR of one partition, plus the zkVersion of its state znode."""

    leader: int
    isr: tuple[int, ...]
    leader_epoch: int = INITIAL_LEADER_EPOCH
    zk_version: int = INITIAL_PARTITION_EPOCH

    def new_leader(self, leader: int, isr: tuple[int, ...] | None = None) -> LeaderAndIsr:
        """A new election: bump the leader epoch (the zkVersion is set by the write)."""
        return LeaderAndIsr(leader, tuple(self.isr if isr is None else isr), self.leader_epoch + 1, self.zk_version)

    def with_isr(self, isr: tuple[int, ...]) -> LeaderAndIsr:
        """ISR change made by the leader itself: same leader epoch (as Kafka's Partition.shrinkIsr).

        ISR changes made by the controller go through `new_leader`, which bumps the epoch."""
        return LeaderAndIsr(self.leader, tuple(isr), self.leader_epoch, self.zk_version)


@dataclass(frozen=True, slots=True)
class LeaderIsrAndControllerEpoch:
    """The content of /brokers/topics/<t>/partitions/<p>/state."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int


@dataclass(slots=True)
class ReplicaAssignment:
    """Assigned replicas of a partition; adding/removing are non-empty during a reassignment."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)


@dataclass(slots=True)
class TopicAssignment:
    """The content of /brokers/topics/<t> (partition id → assignment) plus an optional topic id."""

    partitions: dict[int, ReplicaAssignment] = field(default_factory=dict)
    topic_id: str | None = None


def _uuid_text(tid: uuid.UUID) -> str:
    """Kafka's `Uuid.toString`: the 16 bytes in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(tid.bytes).decode().rstrip("=")


def new_topic_id() -> str:
    """A fresh topic id as Kafka writes it in the topic znode, never starting with '-'."""
    while True:
        text = _uuid_text(uuid.uuid4())
        if not text.startswith("-"):
            return text


def topic_id_uuid(text: str | None) -> uuid.UUID | None:
    """A znode's topic id as the wire's UUID (None for a topic without one, or a bad one)."""
    if not text:
        return None
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except ValueError:
        return None


def topic_id_text(tid: uuid.UUID | str | None) -> str | None:
    """A wire topic id as Kafka prints it (URL-safe base64, no padding); None for none or the zero id."""
    if tid is None:
        return None
    if isinstance(tid, str):
        tid = topic_id_uuid(tid)
        if tid is None:
            return None
    return _uuid_text(tid) if tid.int else None


def now_ms() -> int:
    """Wall-clock milliseconds, the unit of Kafka's timestamps and timeouts."""
    return int(time.time() * 1000)


def enter_netns(netns: str) -> None:
    """Move the calling process into the named network namespace (`ip netns add` made it);
    used in a child before exec, so that a server runs on a host of its own."""
    import ctypes
    import os

    clone_newnet = 0x40000000
    fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        if libc.setns(fd, clone_newnet) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {netns} failed")
    finally:
        os.close(fd)


def netns_preexec(netns: str, then: Callable[[], None] | None = None) -> Callable[[], None]:
    """A Popen preexec_fn: enter `netns` (if any), then run `then`."""
    def run() -> None:  # pragma: no cover - runs in the child
        if netns:
            enter_netns(netns)
        if then is not None:
            then()
    return run


def by_topic(entries: Iterable[tuple[K, V]]) -> dict[K, list[V]]:
    """`(topic, entry)` pairs as topic -> its entries, in the order they come; the topic is a
    name or a topic id. Kafka's requests and responses nest partitions under their topic, and
    code decides per partition: this is the one place that groups."""
    out: dict[K, list[V]] = {}
    for topic, entry in entries:
        out.setdefault(topic, []).append(entry)
    return out


def partitions_by_topic(tps: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partition numbers under their topic, in the order they come (a request's topic list)."""
    return by_topic((tp.topic, tp.partition) for tp in tps)
