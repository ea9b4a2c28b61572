"""What the controller asks of ZooKeeper, as typed interfaces (`typing.Protocol`).

`praha.zk.store.ZkStore` is the real implementation of all three; the in-memory
`praha.testing.fake_controller_store.FakeControllerStore` implements `ControllerStore`
for unit tests of the flows. Every call is part of an interface: the flows never probe
a store for optional capabilities.

  PartitionStateStore   the state machines' read–decide–write of partition state znodes
  ControllerStore       everything the flows (and the failover's context load) read, write
                        and watch: brokers, topics, deletion markers, admin znodes
  ControllerSeatStore   the election and session calls only the seat holder makes
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from praha.common import (
    BrokerInfo,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    TopicPartition,
)
from praha.errors import ZNodeDecodeError
from praha.zk.ops import WriteResult
from praha.zk.watches import WatchEvent

#: a watch callback; it runs on the ZooKeeper client's thread, so it only enqueues
WatchCallback = Callable[[WatchEvent], None]
#: `consume(tp, state, error)` of a streamed read of partition states
StateConsumer = Callable[[TopicPartition, "LeaderIsrAndControllerEpoch | None", "ZNodeDecodeError | None"], None]


class Watch(Protocol):
    """A live watch; `cancel()` stops it for good."""

    def cancel(self) -> None: ...


class PartitionStateStore(Protocol):
    """The partition state znodes: what the two state machines read and write."""

    def get_retired_leader_epochs(self, topics: Iterable[str]) -> dict[str, int]:
        """The last leader epoch of deleted topics of these names: a re-created topic starts above it."""
        ...

    def get_partition_states(
        self, tps: Iterable[TopicPartition], mzxids: dict[TopicPartition, int] | None = None
    ) -> tuple[dict[TopicPartition, LeaderIsrAndControllerEpoch], dict[TopicPartition, ZNodeDecodeError]]:
        """States by partition and the corrupt ones; `mzxids`, when given, is filled with each
        znode's last-modified zxid."""
        ...

    def stream_partition_states(
        self, tps: Sequence[TopicPartition], consume: StateConsumer, restart: Callable[[], None]
    ) -> None:
        """`consume` each partition's state in order as it arrives; `restart()` then everything
        again if the connection was lost midway."""
        ...

    def create_partition_states(
        self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch], epoch_zk_version: int
    ) -> dict[TopicPartition, WriteResult]: ...

    def update_partition_states(
        self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch], epoch_zk_version: int
    ) -> dict[TopicPartition, WriteResult]:
        """Conditional on each state's zk_version, fenced by the controller epoch's zkVersion."""
        ...


class ControllerStore(PartitionStateStore, Protocol):
    """Every ZooKeeper call of the controller's flows. Writes take the controller epoch's
    zkVersion: they fail if another controller was elected meanwhile."""

    def exists(self, path: str) -> object | None: ...

    # -- brokers and topics
    def get_live_brokers(self) -> tuple[dict[int, BrokerInfo], dict[int, ZNodeDecodeError]]: ...

    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        """One registration, read now (None if the broker is not registered)."""
        ...

    def get_all_topics(self) -> list[str]: ...

    def get_topic_assignments(
        self, topics: Iterable[str]
    ) -> tuple[dict[str, TopicAssignment], dict[str, ZNodeDecodeError]]: ...

    def get_topic_configs(
        self, topics: Iterable[str]
    ) -> tuple[dict[str, dict[str, str]], dict[str, ZNodeDecodeError]]: ...

    def set_topic_assignments(
        self, assignments: Mapping[str, TopicAssignment], epoch_zk_version: int
    ) -> dict[str, WriteResult]: ...

    # -- ISR change notifications (written by partition leaders)
    def get_isr_change_notifications(self) -> tuple[list[str], set[TopicPartition]]: ...

    def delete_isr_change_notifications(self, names: Iterable[str], epoch_zk_version: int) -> None: ...

    # -- log-dir event notifications (written by brokers whose log directory failed)
    def get_log_dir_event_notifications(self) -> tuple[list[str], set[int]]:
        """(child names, the brokers they name)."""
        ...

    def delete_log_dir_event_notifications(self, names: Iterable[str], epoch_zk_version: int) -> None: ...

    # -- topic deletion
    def get_topics_marked_for_deletion(self) -> list[str]: ...

    def delete_topic_deletion_markers(self, topics: Iterable[str], epoch_zk_version: int) -> None: ...

    def delete_topic_znodes(self, topics: Iterable[str], epoch_zk_version: int,
                            last_leader_epochs: Mapping[str, int] | None = None) -> None:
        """Also keeps each topic's last leader epoch, for `get_retired_leader_epochs`."""
        ...


    # -- admin requests
    def get_reassignments(self) -> dict[TopicPartition, tuple[int, ...]]: ...

    def set_reassignments(
        self, reassignment: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int
    ) -> None: ...

    def get_preferred_election(self) -> set[TopicPartition]: ...

    def delete_preferred_election(self, epoch_zk_version: int) -> None: ...

    # -- watches
    def watch_data(self, path: str, callback: WatchCallback, group: str | None = None) -> Watch: ...

    def watch_data_many(
        self, paths: Iterable[str], callback_for_path: Callable[[str], WatchCallback], group: str | None = None,
        wait: bool = True,
    ) -> Mapping[str, Watch]:
        """All armed together: about one round trip, not one per path. `wait=False`: only
        queued; `wait_armed` waits for them."""
        ...

    def wait_armed(self, handles: Iterable[Any]) -> None:
        """Until the watches `watch_data_many(..., wait=False)` returned are registered."""
        ...

    def watch_children(self, path: str, callback: WatchCallback, group: str | None = None) -> Watch: ...


class SessionListener(Protocol):
    """ZooKeeper session events, called on the client's thread (implementations only enqueue)."""

    def on_suspended(self) -> None: ...

    def on_reconnected(self) -> None: ...

    def on_session_expired(self) -> None: ...

    def on_new_session(self) -> None: ...


class ControllerSeatStore(ControllerStore, Protocol):
    """`/controller` and `/controller_epoch`: the calls of the election and the session handling."""

    def add_session_listener(self, listener: SessionListener) -> None: ...

    def get_controller_id(self) -> int | None: ...

    def get_controller_epoch(self) -> tuple[int, int] | None: ...

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        """(new epoch, its zkVersion); ControllerMovedError if another broker holds the seat."""
        ...

    def repair_controller_epoch(self, epoch: int) -> int | None: ...

    def delete_controller(self, epoch_zk_version: int | None = None) -> None: ...

    def delete_stale_controller(self, broker_id: int) -> bool: ...

    def delete_if_unchanged_corrupt(self, path: str) -> bool: ...
