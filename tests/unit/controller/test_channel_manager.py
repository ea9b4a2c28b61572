"""The controller's channel manager: removing a broker never waits for a send in flight to it.

A broker cut off from the network (not crashed) leaves the controller's request to it hanging
until the socket timeout (controller.socket.timeout.ms, 30 s). Its removal when its session
expires runs on the controller's event thread, before the elections that move its leaderships:
waiting there for that send held every election for the whole timeout."""
from __future__ import annotations

import threading

from praha.common import BrokerInfo, EndPoint
from praha.controller.channel_manager import ControllerChannelManager, Transport
from praha.protocol.controller_requests import ControllerRequest, ControllerResponseData, UpdateMetadataRequestData


class HungPeer(Transport):
    """A connection whose send hangs (its peer is cut off) and whose close, like
    `BrokerConnection.close`, takes the lock the send holds."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sending = threading.Event()
        self.release = threading.Event()
        self.closed = threading.Event()

    def send(self, request: ControllerRequest) -> ControllerResponseData:
        with self.lock:
            self.sending.set()
            self.release.wait(60)
            raise TimeoutError("the peer never answered")

    def close(self) -> None:
        with self.lock:
            self.closed.set()


def test_removing_a_broker_does_not_wait_for_its_hung_send():
    peer = HungPeer()
    channels = ControllerChannelManager(lambda broker, timeout: peer, timeout_s=30)
    channels.add_broker(BrokerInfo(2, (EndPoint("127.0.0.1", 1),)))
    channels.send_request(2, UpdateMetadataRequestData(1, 1, 1, [], []))
    assert peer.sending.wait(30)
    removed = threading.Event()
    threading.Thread(target=lambda: (channels.remove_broker(2), removed.set()), daemon=True).start()
    try:
        assert removed.wait(20), "remove_broker waited for the send in flight"
        assert not peer.closed.is_set()  # nothing was closed under the hung send
        assert channels.broker_ids == set()
    finally:
        peer.release.set()
    assert peer.closed.wait(30), "the sender did not close its connection once the send ended"
