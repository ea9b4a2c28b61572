"""Fencing of controller requests on the broker (docs/controller.md §3 "Epoch fencing").

A broker believes a controller request only if it comes from the controller ZooKeeper
names. Per request (LeaderAndIsr, UpdateMetadata, StopReplica):
1. a controller epoch below the highest this broker has accepted comes from a deposed
   controller: STALE_CONTROLLER_EPOCH;
2. a request addressed to an older incarnation of this broker (its broker epoch is below
   ours) is STALE_BROKER_EPOCH;
3. the sender's (controller id, epoch) equal to the controller last confirmed in ZooKeeper:
   accepted;
4. anything else (a new controller's first request, or a client claiming to be one) is
   checked against `/controller` and `/controller_epoch` first (`VERIFY`): accepted if they
   name exactly that controller and epoch, which is then remembered; refused with
   STALE_CONTROLLER_EPOCH otherwise. A forged "controller 99", or one claiming an epoch
   ZooKeeper never had, changes nothing on the broker.
If ZooKeeper cannot be read for the check, a request whose epoch is not below the highest
accepted is let through as before (and logged): a broker cut off from ZooKeeper must not
also refuse the real controller.
Steps 1 and 2 are checked again where a LeaderAndIsr takes effect (`still_current`, under the
replica manager's lock): it may have waited there on ZooKeeper while the broker registered
again or a newer controller's request got in.

Every accepted and refused request is counted by epoch so that tests and the chaos
harness can check that no write of an older epoch was ever accepted; `on_accept`, when
set, hears every change of accepted epoch per API, in acceptance order (the broker
writes it to its state-change log, where the order can be checked after a run).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from praha.errors import ErrorCode


class Verdict(Enum):
    ACCEPT = "accept"
    STALE_CONTROLLER = "stale controller"
    STALE_BROKER = "stale broker"
    VERIFY = "verify against ZooKeeper"


#: what ZooKeeper says of the controller seat: (controller id, controller epoch), None if unknown
ControllerSeat = tuple[int, int] | None


@dataclass
class ControllerFence:
    broker_epoch: int = -1
    highest_controller_epoch: int = -1
    #: the (controller id, epoch) last confirmed in ZooKeeper
    known_controller: tuple[int, int] | None = None
    accepted: Counter[tuple[int, int]] = field(default_factory=Counter)  # (api_key, controller_epoch) -> count
    refused: Counter[tuple[int, int]] = field(default_factory=Counter)
    on_accept: Callable[[int, int], None] | None = None  # (api_key, controller_epoch)
    _last_accepted: dict[int, int] = field(default_factory=dict)

    def decide(self, controller_id: int, controller_epoch: int, broker_epoch: int) -> Verdict:
        """Steps 1-4 without I/O: VERIFY means "read the seat, then call `after_reading`"."""
        if (stale := self._stale(controller_epoch, broker_epoch)) is not None:
            return stale
        if self.known_controller == (controller_id, controller_epoch):
            return Verdict.ACCEPT
        return Verdict.VERIFY

    def _stale(self, controller_epoch: int, broker_epoch: int) -> Verdict | None:
        """Steps 1 and 2."""
        if controller_epoch < self.highest_controller_epoch:
            return Verdict.STALE_CONTROLLER
        if broker_epoch != -1 and broker_epoch < self.broker_epoch:
            return Verdict.STALE_BROKER
        return None

    def still_current(self, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        """Steps 1 and 2 again where an admitted LeaderAndIsr takes effect (under the replica
        manager's lock, after its ZooKeeper reads; Kafka's ReplicaManager checks the controller
        epoch there too). In seed 216, broker 2 admitted a LeaderAndIsr during a `zk_expire` and
        waited 3.7 s for a topic-config read. Meanwhile it registered again, and the controller
        gave the leadership to another broker. It then applied the request and led an epoch the
        controller had already replaced."""
        stale = self._stale(controller_epoch, broker_epoch)
        if stale is Verdict.STALE_CONTROLLER:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if stale is Verdict.STALE_BROKER:
            return ErrorCode.STALE_BROKER_EPOCH
        return ErrorCode.NONE

    def after_reading(self, controller_id: int, controller_epoch: int, seat: ControllerSeat,
                      read_failed: bool = False) -> Verdict:
        """The verdict once ZooKeeper's seat is read (`read_failed`: it could not be)."""
        if read_failed:
            return Verdict.ACCEPT if controller_epoch >= self.highest_controller_epoch else Verdict.STALE_CONTROLLER
        if seat is not None and seat == (controller_id, controller_epoch):
            if self.known_controller is None or seat[1] >= self.known_controller[1]:
                self.known_controller = seat
            return Verdict.ACCEPT
        return Verdict.STALE_CONTROLLER

    def settle(self, api_key: int, controller_epoch: int, verdict: Verdict) -> ErrorCode:
        """Count the request and answer it: NONE if accepted, else the error to send back."""
        if verdict is Verdict.STALE_CONTROLLER:
            self.refused[(api_key, controller_epoch)] += 1
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if verdict is Verdict.STALE_BROKER:
            self.refused[(api_key, controller_epoch)] += 1
            return ErrorCode.STALE_BROKER_EPOCH
        assert verdict is Verdict.ACCEPT, verdict
        self.highest_controller_epoch = max(self.highest_controller_epoch, controller_epoch)
        self.accepted[(api_key, controller_epoch)] += 1
        if self._last_accepted.get(api_key) != controller_epoch:
            self._last_accepted[api_key] = controller_epoch
            if self.on_accept is not None:
                self.on_accept(api_key, controller_epoch)
        return ErrorCode.NONE
