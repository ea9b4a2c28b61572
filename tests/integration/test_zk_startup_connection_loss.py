"""A broker's start-up against a real ZooKeeper whose connection drops once mid-request.

Seen twice at load 25 in chaos campaigns: one ConnectionLoss during the chroot's exists
check or the broker registration ended the broker's start. Kafka's ZooKeeper client waits
for the connection to come back (up to its connection timeout) and repeats the request;
praha's does the same, and still says plainly when ZooKeeper is really gone."""
from __future__ import annotations

import socket

import pytest

from praha.common import BrokerInfo, EndPoint
from praha.testing.proxy import TcpProxy
from praha.zk import znodes as zn
from praha.zk.client import ZkUnavailableError
from praha.zk.store import ZkStore

pytestmark = pytest.mark.integration


class DropsOnce(TcpProxy):
    """Forwards the first client chunk that contains `pattern`, then closes that connection
    before any answer: the client's request is in flight (perhaps applied) when its
    connection is lost, which kazoo reports as ConnectionLoss. Later connections pass."""

    def __init__(self, target: tuple[str, int], pattern: bytes):
        self.pattern = pattern
        self.dropped = 0
        super().__init__(target)

    def _forward(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
                if self.dropped == 0 and self.pattern in data:
                    self.dropped += 1
                    break
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def info(broker_id: int) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("127.0.0.1", 19092),))


def test_start_waits_through_a_connection_lost_during_the_chroot_check(zookeeper, zk_connect):
    chroot = zk_connect[zk_connect.index("/"):]
    with DropsOnce((zookeeper.host, zookeeper.port), chroot.encode()) as proxy:
        store = ZkStore(proxy.connect_string + chroot, session_timeout_ms=6000).start()
        try:
            assert proxy.dropped == 1  # the chroot's exists check lost its connection
            store.ensure_persistent_paths()
            assert store.exists(zn.broker_path(1).rpartition("/")[0]) is not None
        finally:
            store.stop()


def test_registration_waits_through_a_connection_lost_while_creating_the_node(zookeeper, zk_connect):
    chroot = zk_connect[zk_connect.index("/"):]
    with DropsOnce((zookeeper.host, zookeeper.port), b"/brokers/ids/7") as proxy:
        store = ZkStore(proxy.connect_string + chroot, session_timeout_ms=6000).start()
        try:
            store.ensure_persistent_paths()
            epoch = store.register_broker(info(7))
            assert proxy.dropped == 1
            got = store.get_data(zn.broker_path(7))
            assert got is not None
            assert got[1].czxid == epoch
            assert got[1].ephemeralOwner == store.session_id  # ours, not a leftover
        finally:
            store.stop()


def test_registration_says_so_when_zookeeper_is_really_gone(zookeeper, zk_connect):
    chroot = zk_connect[zk_connect.index("/"):]
    with TcpProxy((zookeeper.host, zookeeper.port)) as proxy:
        store = ZkStore(proxy.connect_string + chroot, session_timeout_ms=4000, connection_timeout_ms=2000).start()
        try:
            store.ensure_persistent_paths()
            proxy.cut()  # refused from now on: the wait ends at the request timeout, with the reason
            with pytest.raises(ZkUnavailableError, match="register broker 8"):
                store.register_broker(info(8))
        finally:
            store.stop()
