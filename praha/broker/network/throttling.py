"""The request-time quota around the handlers (Kafka's ClientRequestQuotaManager as
KafkaApis applies it), and how a throttle reaches the response.

While some `request_percentage` quota is set (`RequestQuotaThrottler.active`; otherwise the
socket server calls the handlers directly and none of this runs):
1. the handler runs under a `BusyTimer`, which adds up the time the event loop spends inside
   it and not the time it waits (a parked acks=all produce or long-poll fetch costs only
   its CPU time, like Kafka's request handler thread time);
2. that time, as a percentage of one second, is recorded against the client's quota;
   controller requests, follower fetches and acks=0 produces are exempt, as in Kafka;
3. the answer carries the larger of its own throttle (a byte-rate quota's, set by the
   data handlers) and the request-time one in `throttle_time_ms`, and the socket server
   mutes the connection for it (`Muted`).
"""
from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

from praha.broker.network.socket_server import Muted
from praha.broker.quotas.client_quota import ClientQuotas
from praha.protocol.api_keys import ApiKey
from praha.protocol.fetch import fetch_replica_id
from praha.protocol.framing import DecodedRequest

#: Kafka's cluster actions: never throttled
EXEMPT_APIS = frozenset({ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
                         ApiKey.CONTROLLED_SHUTDOWN})
_NANOS_TO_PERCENT = 100.0 / 1e9


class BusyTimer:
    """Awaits a coroutine, adding up in `busy_ns` the time spent running it between its waits."""

    __slots__ = ("_coro", "busy_ns")

    def __init__(self, coro: Coroutine[Any, Any, Any]):
        self._coro = coro
        self.busy_ns = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self._coro
        value: Any = None
        error: BaseException | None = None
        while True:
            start = time.perf_counter_ns()
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as done:
                self.busy_ns += time.perf_counter_ns() - start
                return done.value
            self.busy_ns += time.perf_counter_ns() - start
            try:
                value, error = (yield yielded), None
            except BaseException as e:  # noqa: BLE001 - handed to the coroutine, as `await` does
                value, error = None, e


def with_throttle(response: Any, throttle_ms: int) -> Muted:
    """`response` (or a Muted one) throttled for at least `throttle_ms`."""
    if type(response) is Muted:
        if response.mute_ms >= throttle_ms:
            return response
        response = response.response
    if response is not None and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = throttle_ms
    return Muted(response, throttle_ms)


class RequestQuotaThrottler:
    """The socket server's `RequestThrottler`: the request-time quota of `quotas`."""

    def __init__(self, quotas: ClientQuotas):
        self.quotas = quotas

    @property
    def active(self) -> bool:
        return bool(self.quotas.request.overrides)

    async def run(self, request: DecodedRequest, handler: Callable[[DecodedRequest], Awaitable[Any]]) -> Any:
        key = request.api_key
        if key in EXEMPT_APIS or (key == ApiKey.FETCH and fetch_replica_id(request.request,
                                                                           request.header.api_version) >= 0) or \
                (key == ApiKey.PRODUCE and not request.expects_response):  # Kafka exempts acks=0 too
            return await handler(request)
        timer = BusyTimer(handler(request))  # type: ignore[arg-type]
        response = await timer
        manager = self.quotas.request
        throttle = manager.record(request.principal, request.header.client_id or "", timer.busy_ns * _NANOS_TO_PERCENT)
        if throttle <= 0:
            return response
        own = response.mute_ms if type(response) is Muted else 0
        if throttle <= own:
            return response
        manager.throttled(throttle)
        return with_throttle(response, throttle)
