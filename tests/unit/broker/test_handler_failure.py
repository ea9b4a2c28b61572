"""A handler that raises (a bug, an unexpected state) gets the API's error response with
UNKNOWN_SERVER_ERROR, as Kafka's KafkaApis answers, and the connection stays: the next
request on the same socket is served. Only acks=0, which has no answer, closes it."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from kafka.protocol.consumer import OffsetCommitRequest, OffsetCommitResponse
from kafka.protocol.metadata import ApiVersionsRequest

from praha.broker.network.socket_server import SocketServer
from praha.errors import ErrorCode
from praha.protocol.api_keys import ApiKey
from praha.protocol.client import BrokerConnection
from praha.protocol.framing import DecodedRequest
from praha.protocol.registry import api_versions_response

VERSIONS = {ApiKey.API_VERSIONS: (0, 3), ApiKey.OFFSET_COMMIT: (2, 8)}


class Table:
    """ApiVersions as a broker answers it; OffsetCommit raises the first time only."""

    def __init__(self) -> None:
        self.versions = VERSIONS
        self.calls = 0
        self.handlers = {ApiKey.API_VERSIONS: self.api_versions, ApiKey.OFFSET_COMMIT: self.offset_commit}

    async def api_versions(self, req: DecodedRequest):
        return api_versions_response(VERSIONS)

    async def offset_commit(self, req: DecodedRequest):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("a bug in the handler")
        T = OffsetCommitResponse.OffsetCommitResponseTopic
        P = T.OffsetCommitResponsePartition
        return OffsetCommitResponse(throttle_time_ms=0, topics=[
            T(name=t.name, partitions=[P(partition_index=p.partition_index, error_code=0) for p in t.partitions])
            for t in req.request.topics])


@pytest.fixture
def server() -> Iterator[tuple[SocketServer, Table]]:
    loop = asyncio.new_event_loop()
    table = Table()
    srv = SocketServer(table, "127.0.0.1", 0, 1 << 20)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(srv.start(), loop).result(10)
    try:
        yield srv, table
    finally:
        asyncio.run_coroutine_threadsafe(srv.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def commit() -> OffsetCommitRequest:
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    return OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1,
                               topics=[T(name="orders", partitions=[P(partition_index=0, committed_offset=5),
                                                                    P(partition_index=3, committed_offset=9)])])


def test_a_raising_handler_answers_unknown_server_error_and_keeps_the_connection(server):
    srv, table = server
    with BrokerConnection("127.0.0.1", srv.port, timeout=10) as conn:
        sock = conn._sock
        failed = conn.send(commit(), 8)
        assert [(t.name, p.partition_index, p.error_code) for t in failed.topics for p in t.partitions] == [
            ("orders", 0, ErrorCode.UNKNOWN_SERVER_ERROR), ("orders", 3, ErrorCode.UNKNOWN_SERVER_ERROR)]
        assert conn.send(ApiVersionsRequest(), 3).error_code == ErrorCode.NONE
        again = conn.send(commit(), 8)
        assert [p.error_code for t in again.topics for p in t.partitions] == [0, 0]
        assert conn._sock is sock  # one socket throughout
    assert (table.calls, srv.handler_failures) == (2, 1)
