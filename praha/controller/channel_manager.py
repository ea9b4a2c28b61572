"""A connection, a request queue and a sender thread for every live broker.

`send_request` only enqueues. Each sender thread takes the next request, sends it over
the Kafka protocol and hands the response to the request's callback (which must only
enqueue controller events). A failed send is retried after a backoff until it succeeds
or the broker is removed; requests for a removed broker are dropped. Brokers are added
and removed as the controller learns they come and go.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from praha.common import BrokerInfo
from praha.controller.request_batch import ResponseCallback
from praha.protocol.controller_requests import ControllerRequest, ControllerResponseData

log = logging.getLogger(__name__)

#: `connect(broker) -> transport` where transport has `send(request) -> ControllerResponseData` and `close()`
TransportFactory = Callable[[BrokerInfo, float], "Transport"]


class Transport:
    def send(self, request: ControllerRequest) -> ControllerResponseData:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass
class _Queued:
    request: ControllerRequest
    callback: ResponseCallback | None
    enqueued_at: float


class _BrokerSender:
    def __init__(self, broker: BrokerInfo, factory: TransportFactory, timeout_s: float, backoff_s: float):
        self.broker = broker
        self.factory = factory
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.queue: queue.Queue[_Queued | None] = queue.Queue()
        self.running = True
        self.transport: Transport | None = None
        self.sent = 0
        self.failures = 0
        self.thread = threading.Thread(target=self._run, name=f"controller-sender-{broker.id}", daemon=True)

    def _run(self) -> None:
        while self.running:
            item = self.queue.get()
            if item is None or not self.running:
                break
            response = None
            attempt = 0
            while self.running and response is None:
                try:
                    if self.transport is None:
                        self.transport = self.factory(self.broker, self.timeout_s)
                    response = self.transport.send(item.request)
                except Exception as e:  # noqa: BLE001 - any failure: reconnect and retry
                    self.failures += 1
                    if attempt == 0:
                        log.warning(
                            "controller request %s to broker %d failed (%s); retrying with backoff",
                            type(item.request).__name__, self.broker.id, e,
                        )
                    attempt += 1
                    self._drop_transport()
                    time.sleep(min(self.backoff_s * attempt, 2.0))
            if response is None:
                break
            self.sent += 1
            if item.callback is not None:
                try:
                    item.callback(self.broker.id, response)
                except Exception:  # noqa: BLE001
                    log.exception("response callback failed for broker %d", self.broker.id)
        self._drop_transport()

    def _drop_transport(self) -> None:
        if self.transport is not None:
            try:
                self.transport.close()
            except Exception:  # noqa: BLE001
                pass
            self.transport = None

    def stop(self) -> None:
        """Ask the sender thread to end; it closes its connection as it leaves. Closing it
        here would wait for a send in flight (the connection's lock), which to a broker cut
        off from the network lasts the whole socket timeout (controller.socket.timeout.ms,
        30 s) and held the controller's event thread, and every election, that long."""
        self.running = False
        self.queue.put(None)


class ControllerChannelManager:
    def __init__(self, transport_factory: TransportFactory, timeout_s: float = 30.0, backoff_s: float = 0.1):
        self._factory = transport_factory
        self._timeout_s = timeout_s
        self._backoff_s = backoff_s
        self._senders: dict[int, _BrokerSender] = {}
        self._lock = threading.Lock()

    def startup(self, brokers: list[BrokerInfo]) -> None:
        for b in brokers:
            self.add_broker(b)

    def shutdown(self) -> None:
        with self._lock:
            senders = list(self._senders.values())
            self._senders.clear()
        for s in senders:
            s.stop()

    def add_broker(self, broker: BrokerInfo) -> None:
        with self._lock:
            if broker.id in self._senders:
                return
            sender = _BrokerSender(broker, self._factory, self._timeout_s, self._backoff_s)
            self._senders[broker.id] = sender
        sender.thread.start()

    def remove_broker(self, broker_id: int) -> None:
        with self._lock:
            sender = self._senders.pop(broker_id, None)
        if sender:
            dropped = sender.queue.qsize()
            sender.stop()
            if dropped:
                log.info("removed broker %d from the channel manager, %d queued requests dropped", broker_id, dropped)

    def send_request(self, broker_id: int, request: ControllerRequest,
                     callback: ResponseCallback | None = None) -> None:
        with self._lock:
            sender = self._senders.get(broker_id)
        if sender is None:
            log.debug("dropping %s for broker %d: not in the channel manager", type(request).__name__, broker_id)
            return
        sender.queue.put(_Queued(request, callback, time.monotonic()))

    @property
    def broker_ids(self) -> set[int]:
        with self._lock:
            return set(self._senders)
