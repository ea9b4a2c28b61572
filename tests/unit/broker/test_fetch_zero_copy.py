"""Zero-copy Fetch answers: a consumer's records of at least ZERO_COPY_MIN_BYTES stay in
the segment file (a FileRegion in a SegmentedFrame, sent with os.sendfile). The bytes a
client receives are exactly kafka-python's encoding of the same records; followers'
reads and small reads are copied as before; a region outlives its segment; a file cut
short under a pending send closes the connection instead of sending a torn frame."""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from kafka.protocol.consumer import FetchRequest, FetchResponse

from praha.broker.handlers import data as data_handlers
from praha.broker.handlers.authorization import RequestAuthorizer
from praha.broker.handlers.data import ZERO_COPY_MIN_BYTES, DataApis, EncodedFetchResponse, encode_fetch_frame
from praha.broker.network.socket_server import SegmentedFrame, SocketServer
from praha.broker.quotas.client_quota import ClientQuotas
from praha.broker.replication.partition import Partition, Role
from praha.broker.replication.replica_manager import ReplicaStats
from praha.common import TopicPartition
from praha.log import FileRegion, Log, LogConfig
from praha.protocol.fetch import FetchedPartition
from praha.protocol.framing import RequestHeader, encode_request, encode_response

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "log"))
from log_helpers import decode, make_batch  # noqa: E402

PD = FetchResponse.FetchableTopicResponse.PartitionData
FETCH = 1


def kafka_python(version: int, correlation_id: int, topics) -> bytes:
    """kafka-python's own encoding of a FetchResponse with these (bytes) records."""
    resp = FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[
        FetchResponse.FetchableTopicResponse(topic=t, partitions=[
            PD(partition_index=p.partition, error_code=p.error_code, high_watermark=p.high_watermark,
               last_stable_offset=p.last_stable_offset, log_start_offset=p.log_start_offset,
               aborted_transactions=None, preferred_read_replica=-1, records=p.records)
            for p in parts]) for t, parts in topics])
    return bytes(encode_response(RequestHeader(FETCH, version, correlation_id), resp, version))


def filled_log(path: Path, batches: int, records: int = 50, value_size: int = 1000,
               config: LogConfig | None = None) -> Log:
    lg = Log(str(path), config or LogConfig(file_delete_delay_ms=0))
    for _ in range(batches):
        lg.append_as_leader(make_batch(records, value_size=value_size), 0)
    return lg


@pytest.mark.parametrize("version", range(4, 13))
def test_frame_with_file_regions_is_byte_identical_to_kafka_python(tmp_path, version):
    big = filled_log(tmp_path / "big-0", batches=4)
    small = filled_log(tmp_path / "small-1", batches=1, records=3, value_size=20)
    try:
        regions = [big.read_slice(0, 1 << 20).region(), big.read_slice(100, 60_000).region()]
        assert all(type(r) is FileRegion for r in regions)
        data = [r.read() for r in regions]
        small_bytes = small.read_slice(0, 1 << 20).read()

        def topics(recs):
            return [("big", [FetchedPartition(0, 0, 200, 200, 0, recs[0]),
                             FetchedPartition(3, 6, -1, -1, -1, b"")]),
                    ("small-ünï", [FetchedPartition(1, 0, 3, 3, 0, small_bytes),
                                   FetchedPartition(2, 0, 200, 200, 0, recs[1])]),
                    ("none", [])]

        frame = encode_fetch_frame(version, 77, topics(regions))
        assert type(frame) is SegmentedFrame
        expected = kafka_python(version, 77, topics(data))
        assert bytes(frame) == expected
        assert len(frame) == len(expected)
        # the record bytes stay in the file: the frame's own bytes are only the fields
        assert [p for p in frame.parts if type(p) is not bytes] == regions
        assert sum(len(p) for p in frame.parts if type(p) is bytes) == len(expected) - sum(len(d) for d in data)
        # without regions: one bytes object, the same bytes
        assert encode_fetch_frame(version, 77, topics(data)) == expected
        frame.close()
        assert all(r.fd == -1 for r in regions)
    finally:
        big.close()
        small.close()


def test_region_outlives_its_segment(tmp_path):
    now = 10 * 86_400_000
    lg = Log(str(tmp_path / "t-0"), LogConfig(retention_ms=86_400_000, file_delete_delay_ms=0))
    lg.append_as_leader(make_batch(20, ts=now - 3 * 86_400_000, value_size=100), 0)
    lg.roll()
    lg.append_as_leader(make_batch(2, ts=now), 0)
    region = lg.read_slice(0, 1 << 20).region()
    expected = lg.read_slice(0, 1 << 20).read()
    assert lg.delete_retention_segments(now) == 1  # closed and unlinked at once (delay 0)
    assert not any(n.startswith("00000000000000000000.log") for n in os.listdir(lg.dir))
    assert region.read() == expected
    assert len(decode(region.read())) == 20
    region.close()
    lg.close()


# --------------------------------------------------------------------------- over a socket
def leader(tp: TopicPartition, lg: Log) -> Partition:
    p = Partition(tp=tp, log=lg, broker_id=1, role=Role.LEADER, leader_id=1, leader_epoch=0,
                  replicas=(1, 2), isr=(1, 2), high_watermark=lg.log_end_offset)
    return p


class Broker:
    """What DataApis reads from a BrokerServer for Fetch: partitions, stats, metadata."""

    def __init__(self, partitions: dict[TopicPartition, Partition]):
        self.follower_fetches: list[tuple[int, int]] = []
        self.replica_manager = SimpleNamespace(
            partitions=partitions, stats=ReplicaStats(),
            record_follower_fetch=lambda p, rid, off, start=-1: self.follower_fetches.append((rid, off)))
        self.metadata_cache = SimpleNamespace(partition=lambda tp: None)
        self.authz = RequestAuthorizer()  # no authoriser: every fetch allowed
        self.client_quotas = ClientQuotas.create()


def fetch_request(replica_id: int, parts: list[tuple[str, int, int, int]]) -> FetchRequest:
    by_topic: dict[str, list] = {}
    for topic, partition, offset, max_bytes in parts:
        by_topic.setdefault(topic, []).append(FetchRequest.FetchTopic.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
            log_start_offset=-1, partition_max_bytes=max_bytes))
    return FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1,
                        topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
                        forgotten_topics_data=[], rack_id="")


def serve(handler, fn):
    """Run a SocketServer whose Fetch handler is `handler`, call fn(port, server) in a
    thread (blocking socket I/O), stop the server."""
    handlers = SimpleNamespace(versions={FETCH: (4, 12)}, handlers={FETCH: handler})

    async def go():
        server = SocketServer(handlers, "127.0.0.1", 0, 1 << 20)
        await server.start()
        try:
            return await asyncio.get_running_loop().run_in_executor(None, fn, server.port, server)
        finally:
            await server.stop()

    return asyncio.run(go())


def exchange(port: int, request: FetchRequest, correlation_id: int, version: int = 12) -> bytes:
    """Send one Fetch, return the whole response frame (size prefix included), or what
    arrived before the server closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(encode_request(request, version, correlation_id, "test"))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)  # make sendfile wait for us
        data = bytearray()
        want = None
        while want is None or len(data) < want:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
            if want is None and len(data) >= 4:
                want = 4 + struct.unpack(">i", data[:4])[0]
        return bytes(data)


@pytest.mark.parametrize("version", [4, 11, 12])
def test_consumer_fetch_sends_records_from_the_file_byte_identical(tmp_path, version):
    big_tp, small_tp = TopicPartition("events", 0), TopicPartition("events", 1)
    big = filled_log(tmp_path / "events-0", batches=8)  # ~400 KiB
    small = filled_log(tmp_path / "events-1", batches=1, records=2, value_size=10)
    apis = DataApis(Broker({big_tp: leader(big_tp, big), small_tp: leader(small_tp, small)}))

    def client(port, server):
        req = fetch_request(-1, [("events", 0, 0, 1 << 20), ("events", 1, 0, 1 << 20)])
        got = exchange(port, req, 4242, version)
        return got, server.regions_sent, server.regions_copied

    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    got, sent, copied = serve(apis.handle_fetch, client)
    if fds is not None:  # the region's own descriptor was closed after the send
        assert len(os.listdir("/proc/self/fd")) == fds
    big_bytes, small_bytes = big.read_slice(0, 1 << 20).read(), small.read_slice(0, 1 << 20).read()
    assert len(big_bytes) >= ZERO_COPY_MIN_BYTES > len(small_bytes)
    expected = kafka_python(version, 4242, [("events", [
        FetchedPartition(0, 0, big.log_end_offset, big.log_end_offset, 0, big_bytes),
        FetchedPartition(1, 0, small.log_end_offset, small.log_end_offset, 0, small_bytes)])])
    assert got == expected
    assert (sent, copied) == (1, 0)  # the big partition went with sendfile, the small one was copied
    assert apis.rm.stats.bytes_out == len(big_bytes) + len(small_bytes)
    big.close()
    small.close()


def test_follower_fetch_is_sent_from_the_file_up_to_the_log_end(tmp_path):
    """A follower reads past the high watermark, and its records go with sendfile too."""
    tp = TopicPartition("events", 0)
    lg = filled_log(tmp_path / "events-0", batches=8)
    part = leader(tp, lg)
    part.high_watermark = 50  # the follower still needs everything after the first batch
    broker = Broker({tp: part})
    apis = DataApis(broker)

    def client(port, server):
        return exchange(port, fetch_request(2, [("events", 0, 0, 1 << 20)]), 9), server.regions_sent

    got, sent = serve(apis.handle_fetch, client)
    data = lg.read_slice(0, 1 << 20).read()
    assert len(data) >= ZERO_COPY_MIN_BYTES
    assert got == kafka_python(12, 9, [("events", [FetchedPartition(0, 0, 50, 50, 0, data)])])
    assert sent == 1
    assert broker.follower_fetches == [(2, 0)]
    lg.close()


def test_zero_copy_can_be_switched_off(tmp_path):
    tp = TopicPartition("events", 0)
    lg = filled_log(tmp_path / "events-0", batches=8)
    apis = DataApis(Broker({tp: leader(tp, lg)}))
    apis.zero_copy_min_bytes = None

    def client(port, server):
        return exchange(port, fetch_request(-1, [("events", 0, 0, 1 << 20)]), 9), server.regions_sent

    got, sent = serve(apis.handle_fetch, client)
    assert sent == 0
    assert got == kafka_python(12, 9, [("events", [
        FetchedPartition(0, 0, lg.log_end_offset, lg.log_end_offset, 0, lg.read_slice(0, 1 << 20).read())])])
    lg.close()


def test_file_cut_short_under_a_pending_send_closes_the_connection(tmp_path):
    """A region the file no longer holds cannot complete the announced frame: the client
    gets a short frame and EOF (as from Kafka), never bytes of something else."""
    path = tmp_path / "seg.log"
    path.write_bytes(os.urandom(400_000))
    fd = os.open(path, os.O_RDWR)

    async def handler(req):
        region = FileRegion(os.dup(fd), 1000, 300_000)
        os.ftruncate(fd, 100_000)  # truncated after the answer was built
        return EncodedFetchResponse([("t", [FetchedPartition(0, 0, 5, 5, 0, region)])])

    def client(port, server):
        got = exchange(port, fetch_request(-1, [("t", 0, 0, 1 << 20)]), 1)
        return got, server.regions_sent

    try:
        got, sent = serve(handler, client)
    finally:
        os.close(fd)
    (size,) = struct.unpack(">i", got[:4])
    assert size > 300_000
    assert len(got) < 4 + size
    assert sent == 0


def test_parked_fetch_releases_the_regions_of_its_first_read(tmp_path, monkeypatch):
    """A fetch below min_bytes parks and reads again: the first read's regions are closed."""
    tp = TopicPartition("events", 0)
    lg = filled_log(tmp_path / "events-0", batches=8)
    apis = DataApis(Broker({tp: leader(tp, lg)}))
    closed: list[int] = []
    real_close = FileRegion.close

    def tracking_close(self):
        if self.fd >= 0:
            closed.append(self.size)
        real_close(self)

    monkeypatch.setattr(FileRegion, "close", tracking_close)

    async def park(*args):
        return None

    apis._park_fetch = park  # type: ignore[method-assign]
    req = fetch_request(-1, [("events", 0, 0, 1 << 20)])
    req.min_bytes, req.max_wait_ms = 10 << 20, 100

    async def go():
        resp = await apis.handle_fetch(SimpleNamespace(request=req, header=RequestHeader(FETCH, 12, 1)))
        return resp

    resp = asyncio.run(go())
    size = lg.read_slice(0, 1 << 20).size
    assert closed == [size]  # the first read's region, before parking
    frame = encode_response(RequestHeader(FETCH, 12, 1), resp, 12)
    assert type(frame) is SegmentedFrame
    frame.close()
    assert closed == [size, size]
    lg.close()


def test_small_reads_stay_one_bytes_frame(tmp_path):
    tp = TopicPartition("events", 0)
    lg = filled_log(tmp_path / "events-0", batches=1, records=5, value_size=100)
    apis = DataApis(Broker({tp: leader(tp, lg)}))
    resp = asyncio.run(apis.handle_fetch(SimpleNamespace(request=fetch_request(-1, [("events", 0, 0, 1 << 20)]),
                                                         header=RequestHeader(FETCH, 12, 1))))
    frame = encode_response(RequestHeader(FETCH, 12, 1), resp, 12)
    assert type(frame) is bytes
    assert data_handlers.ZERO_COPY_MIN_BYTES > lg.read_slice(0, 1 << 20).size
    lg.close()


def test_client_leaving_mid_send_costs_only_its_connection(tmp_path, caplog):
    tp = TopicPartition("events", 0)
    lg = filled_log(tmp_path / "events-0", batches=60)  # ~3 MB: more than the socket buffers hold
    apis = DataApis(Broker({tp: leader(tp, lg)}))
    req = fetch_request(-1, [("events", 0, 0, 8 << 20)])

    def client(port, server):
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close
                s.sendall(encode_request(req, 12, 1, "test"))
                s.recv(1000)
        deadline = time.monotonic() + 5
        while server.connections and time.monotonic() < deadline:
            time.sleep(0.01)
        left = server.connections
        return exchange(port, req, 2), left

    got, left = serve(apis.handle_fetch, client)
    assert left == 0
    data = lg.read_slice(0, 8 << 20).read()
    assert got == kafka_python(12, 2, [("events", [
        FetchedPartition(0, 0, lg.log_end_offset, lg.log_end_offset, 0, data)])])
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    lg.close()


def test_pipelined_requests_are_answered_in_order_even_after_the_client_half_closes(tmp_path):
    """Three Fetches sent at once, then SHUT_WR: three answers, in order, then EOF."""
    tp = TopicPartition("events", 0)
    lg = filled_log(tmp_path / "events-0", batches=4)
    apis = DataApis(Broker({tp: leader(tp, lg)}))

    def client(port, server):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"".join(encode_request(fetch_request(-1, [("events", 0, 0, 1 << 20)]), 12, cid, "test")
                               for cid in (7, 8, 9)))
            s.shutdown(socket.SHUT_WR)
            data = bytearray()
            while chunk := s.recv(1 << 16):
                data += chunk
        ids, pos = [], 0
        while pos < len(data):
            size, cid = struct.unpack_from(">ii", data, pos)
            ids.append(cid)
            pos += 4 + size
        return ids, pos == len(data)

    async def slow_fetch(req):  # the EOF arrives long before the answers are ready
        await asyncio.sleep(0.1)
        return await apis.handle_fetch(req)

    assert serve(slow_fetch, client) == ([7, 8, 9], True)
    lg.close()
