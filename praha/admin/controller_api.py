"""Send one admin request to the active controller (what Kafka's AdminClient does for
ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments).

Steps: 1. locate the controller from ZooKeeper (`/controller`, then its
`/brokers/ids/<id>` endpoint); 2. ask it ApiVersions and pick the highest version both
sides speak; 3. send; 4. if the answer says NOT_CONTROLLER or the broker is unreachable
(the seat is moving), locate again and retry until the deadline.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from praha.errors import ErrorCode, PrahaError
from praha.protocol.client import BrokerConnection, api_versions
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.protocol.errors import BrokerConnectionError
from praha.protocol.messages.runtime import WireMessage
from praha.protocol.registry import APIS
from praha.zk.store import ZkStore

Locator = Callable[[], tuple[str, int]]


class ControllerUnavailableError(PrahaError):
    """No controller answered within the deadline."""

    code = ErrorCode.NOT_CONTROLLER


def zk_locator(store: ZkStore) -> Locator:
    """The controller's address as ZooKeeper names it."""

    def locate() -> tuple[str, int]:
        cid = store.get_controller_id()
        if cid is None or cid < 0:
            raise ControllerUnavailableError("no active controller (/controller is absent)")
        info = store.get_broker(cid)
        if info is None:
            raise ControllerUnavailableError(f"controller {cid} has no /brokers/ids/{cid} registration")
        return info.host, info.port

    return locate


def negotiate(host: str, port: int, api_key: int, timeout: float, security: ClientSecurity = PLAINTEXT) -> int:
    """Highest version of `api_key` both the broker and praha's registry speak."""
    spec = APIS[api_key]
    theirs = api_versions(host, port, timeout=timeout, client_id="praha-admin", security=security)
    if api_key not in theirs:
        raise PrahaError(f"broker {host}:{port} does not serve {spec.name}")
    lo, hi = theirs[api_key]
    version = min(hi, spec.max_version)
    if version < max(lo, spec.min_version):
        raise PrahaError(f"no common {spec.name} version with {host}:{port} (it serves {lo}-{hi})")
    return version


def call_controller(locate: Locator, request: WireMessage, not_controller: Callable[[Any], bool],
                    timeout: float = 30.0, security: ClientSecurity = PLAINTEXT) -> tuple[Any, int]:
    """(response, version) from the active controller, retrying while the seat moves."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ControllerUnavailableError(f"no controller answered within {timeout:.0f}s"
                                             + (f" (last error: {last})" if last else ""))
        try:
            host, port = locate()
            version = negotiate(host, port, request.API_KEY, min(remaining, 5.0), security)
            with BrokerConnection(host, port, timeout=max(0.1, deadline - time.monotonic()),
                                  client_id="praha-admin", security=security) as conn:
                response = conn.send(request, version)
            if not not_controller(response):
                return response, version
            last = PrahaError(f"{host}:{port} is no longer the controller")
        except (BrokerConnectionError, ControllerUnavailableError) as e:
            last = e
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))


__all__ = ["Locator", "zk_locator", "call_controller", "negotiate", "ControllerUnavailableError"]
