"""A listener with an empty host (`PLAINTEXT://:9092`, Kafka's stock server.properties)
binds every interface, as Kafka does; before issue 20 praha bound 127.0.0.1 for it."""
from __future__ import annotations

import socket

import pytest

from praha.admin.client_status import fetch_metadata

pytestmark = pytest.mark.integration


def test_an_empty_listener_host_is_reachable_on_every_address(make_cluster):
    cluster = make_cluster(1, overrides={"listeners": "PLAINTEXT://:{port}"})
    b = cluster.load().brokers[1]
    md = fetch_metadata(f"127.0.0.2:{b.port}", topics=[], timeout=5.0)  # not 127.0.0.1: bound to every address
    assert [(x.node_id, x.host) for x in md.brokers] == [(1, socket.getfqdn())]  # advertised: the host name
