"""Events processed by the controller's event thread.

ZooKeeper watch callbacks, session listeners, network handlers and channel-manager
response callbacks never touch controller state: they construct one of these and put
it on the event queue. `ControllerState` names what the controller is busy with, for
figures (as Kafka's ControllerState).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from praha.common import TopicPartition


class ControllerState(Enum):
    IDLE = "Idle"
    CONTROLLER_CHANGE = "ControllerChange"
    BROKER_CHANGE = "BrokerChange"
    TOPIC_CHANGE = "TopicChange"
    TOPIC_DELETION = "TopicDeletion"
    ALTER_PARTITION_REASSIGNMENT = "AlterPartitionReassignment"
    AUTO_LEADER_BALANCE = "AutoLeaderBalance"
    MANUAL_LEADER_BALANCE = "ManualLeaderBalance"
    CONTROLLED_SHUTDOWN = "ControlledShutdown"
    ISR_CHANGE = "IsrChange"
    LOG_DIR_CHANGE = "LogDirChange"
    LEADER_AND_ISR_RESPONSE = "LeaderAndIsrResponseReceived"
    BROKER_MODIFICATION = "BrokerModification"
    PARTITION_MODIFICATION = "PartitionModification"


class ControllerEvent:
    """Base class; `state` says which ControllerState processing it puts us in."""

    state: ControllerState = ControllerState.IDLE

    @property
    def name(self) -> str:
        return type(self).__name__

    def preempt(self) -> None:
        """Called instead of processing when the queue is cleared (session expiry)."""

    def absorb(self, later: ControllerEvent) -> bool:
        """Take over `later`, which is being enqueued right behind this still-queued event, and
        return True; then `later` is not queued itself. Only for events whose handling reads the
        current state and whose union is handled as each one after the other would be (nothing
        is queued between the two, so the order of events is unchanged). Default: no."""
        return False


@dataclass
class Startup(ControllerEvent):
    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class ControllerChange(ControllerEvent):
    """`/controller` was created or changed."""

    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class Reelect(ControllerEvent):
    """`/controller` was deleted: resign if needed, then try to win."""

    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class Expire(ControllerEvent):
    """The ZooKeeper session expired: resign before the new session begins."""

    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class SessionSuspended(ControllerEvent):
    """Cut off from ZooKeeper: we may no longer be controller, so stop acting as one."""

    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class SessionReconnected(ControllerEvent):
    """The same session is back after a suspension."""

    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class RegisterBrokerAndReelect(ControllerEvent):
    """A new session began after expiry: register the broker znode again and re-elect."""

    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class BrokerChange(ControllerEvent):
    state = ControllerState.BROKER_CHANGE


@dataclass
class BrokerModifications(ControllerEvent):
    broker_id: int
    state = ControllerState.BROKER_MODIFICATION


@dataclass
class TopicChange(ControllerEvent):
    state = ControllerState.TOPIC_CHANGE


@dataclass
class PartitionModifications(ControllerEvent):
    topic: str
    state = ControllerState.PARTITION_MODIFICATION


@dataclass
class TopicDeletion(ControllerEvent):
    state = ControllerState.TOPIC_DELETION


@dataclass
class PartitionReassignment(ControllerEvent):
    state = ControllerState.ALTER_PARTITION_REASSIGNMENT


@dataclass
class PartitionReassignmentIsrChange(ControllerEvent):
    """The state znodes of these partitions (being reassigned) changed: check whether their
    reassignments are complete. One partition per watch; a run of them queued back to back is
    one event (`absorb`): many reassigned partitions catching up at once complete together,
    with one bulk read, one request batch and one rewrite of /admin/reassign_partitions."""

    partitions: set[TopicPartition]
    state = ControllerState.ALTER_PARTITION_REASSIGNMENT

    def absorb(self, later: ControllerEvent) -> bool:
        if type(later) is not PartitionReassignmentIsrChange:
            return False
        self.partitions |= later.partitions
        return True


@dataclass
class IsrChangeNotification(ControllerEvent):
    state = ControllerState.ISR_CHANGE


@dataclass
class LogDirEventNotification(ControllerEvent):
    """A child appeared under `/log_dir_event_notification`: a broker's log directory failed."""

    state = ControllerState.LOG_DIR_CHANGE


@dataclass
class PreferredReplicaLeaderElection(ControllerEvent):
    """From `/admin/preferred_replica_election` (partitions None) or the ElectLeaders API."""

    partitions: set[TopicPartition] | None = None
    callback: Callable[[dict[TopicPartition, Any]], None] | None = None
    state = ControllerState.MANUAL_LEADER_BALANCE

    def preempt(self) -> None:
        if self.callback and self.partitions is not None:
            self.callback({tp: "NOT_CONTROLLER" for tp in self.partitions})


@dataclass
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    state = ControllerState.AUTO_LEADER_BALANCE


@dataclass
class ControlledShutdown(ControllerEvent):
    """A broker asks to shut down; `callback(error_code, remaining_partitions)` answers it."""

    broker_id: int
    broker_epoch: int
    callback: Callable[[int, set[TopicPartition]], None]
    state = ControllerState.CONTROLLED_SHUTDOWN

    def preempt(self) -> None:
        from praha.errors import ErrorCode

        self.callback(ErrorCode.NOT_CONTROLLER, set())


@dataclass
class LeaderAndIsrResponseReceived(ControllerEvent):
    broker_id: int
    response: Any
    state = ControllerState.LEADER_AND_ISR_RESPONSE


@dataclass
class TopicDeletionStopReplicaResponseReceived(ControllerEvent):
    broker_id: int
    error_code: int
    partition_errors: dict[TopicPartition, int] = field(default_factory=dict)
    state = ControllerState.TOPIC_DELETION


@dataclass
class AdminCall(ControllerEvent):
    """Run `fn(controller)` on the event thread and hand the result to `callback` (API handlers)."""

    fn: Callable[[Any], Any]
    callback: Callable[[Any, BaseException | None], None]

    def preempt(self) -> None:
        from praha.errors import ControllerMovedError

        self.callback(None, ControllerMovedError("controller moved"))


@dataclass
class ShutdownEventThread(ControllerEvent):
    pass
