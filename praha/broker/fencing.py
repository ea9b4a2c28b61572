"""Fencing of controller requests on the broker (docs/controller.md §3 "Epoch fencing").

A request whose controller epoch is below the highest this broker has seen comes from a
deposed controller: STALE_CONTROLLER_EPOCH. A request addressed to an older incarnation
of this broker (its broker epoch is below our current one) is STALE_BROKER_EPOCH.
Every accepted and refused request is counted by epoch so that tests and the chaos
harness can check that no write of an older epoch was ever accepted; `on_accept`, when
set, hears every change of accepted epoch per API, in acceptance order (the broker
writes it to its state-change log, where the order can be checked after a run).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from praha.errors import ErrorCode


@dataclass
class ControllerFence:
    broker_epoch: int = -1
    highest_controller_epoch: int = -1
    accepted: Counter[tuple[int, int]] = field(default_factory=Counter)  # (api_key, controller_epoch) -> count
    refused: Counter[tuple[int, int]] = field(default_factory=Counter)
    on_accept: Callable[[int, int], None] | None = None  # (api_key, controller_epoch)
    _last_accepted: dict[int, int] = field(default_factory=dict)

    def check(self, api_key: int, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        if controller_epoch < self.highest_controller_epoch:
            self.refused[(api_key, controller_epoch)] += 1
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if broker_epoch != -1 and broker_epoch < self.broker_epoch:
            self.refused[(api_key, controller_epoch)] += 1
            return ErrorCode.STALE_BROKER_EPOCH
        self.highest_controller_epoch = controller_epoch
        self.accepted[(api_key, controller_epoch)] += 1
        if self._last_accepted.get(api_key) != controller_epoch:
            self._last_accepted[api_key] = controller_epoch
            if self.on_accept is not None:
                self.on_accept(api_key, controller_epoch)
        return ErrorCode.NONE
