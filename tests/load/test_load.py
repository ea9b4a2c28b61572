"""Many connections, busy clients and a slow consumer do not stall the controller or anyone else.

A 3-broker cluster gets, at once: 1,000 idle connections (spread over the brokers), 50
active connections producing (acks=all) and fetching in a loop, and a slow consumer that
pipelines large Fetch requests and never reads the answers. Meanwhile:
  - a probe client's requests to every broker stay fast (p99 and max bounded);
  - the controller's work is not held up: a topic created during the load has leaders
    known to every broker within a bound (LeaderAndIsr + UpdateMetadata went through);
  - every broker's RSS stays bounded: the slow consumer's connection is throttled by
    TCP backpressure (one request at a time per connection, drain before reading the
    next), nothing piles up in the broker.
"""
from __future__ import annotations

import asyncio
import socket
import statistics
import struct
import threading
import time

import psutil
import pytest
from kafka.protocol.consumer import FetchRequest as F
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest as P
from kafka.record import MemoryRecordsBuilder

from praha.admin.client_status import fetch_metadata
from praha.common import ReplicaAssignment, TopicAssignment
from praha.protocol.client import BrokerConnection
from praha.protocol.framing import encode_request
from praha.testing.cluster import wait_for

pytestmark = pytest.mark.integration

IDLE, ACTIVE = 1000, 50
LOAD_S = 20.0
PROBE_P99_S, PROBE_MAX_S = 1.5, 3.0
CONTROLLER_BOUND_S = 15.0
RSS_GROWTH_MB = 120.0
TOPIC = "load"


def batch(n: int, size: int) -> bytes:
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 22)
    for i in range(n):
        b.append(timestamp=1_700_000_000_000 + i, key=None, value=b"x" * size, headers=[])
    b.close()
    return bytes(b.buffer())


def produce_request(partition: int, records: bytes, acks: int = -1):
    return P(transactional_id=None, acks=acks, timeout_ms=10000, topic_data=[P.TopicProduceData(
        name=TOPIC, partition_data=[P.TopicProduceData.PartitionProduceData(index=partition, records=records)])])


def fetch_request(partition: int, offset: int, max_bytes: int, wait_ms: int = 100):
    return F(replica_id=-1, max_wait_ms=wait_ms, min_bytes=1, max_bytes=max_bytes, isolation_level=0,
             session_id=0, session_epoch=-1, topics=[F.FetchTopic(topic=TOPIC, partitions=[F.FetchTopic.FetchPartition(
                 partition=partition, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                 partition_max_bytes=max_bytes)])], forgotten_topics_data=[], rack_id="")


@pytest.fixture(scope="module")
def cluster(module_cluster):
    env = module_cluster(3, {"min.insync.replicas": "2", "replica.lag.time.max.ms": "10000"})
    env.store.create_topic(TOPIC, TopicAssignment({p: ReplicaAssignment(r) for p, r in
                                                   {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}.items()}), {})
    wait_for(lambda: all(leaders(b.port, TOPIC) == 3 for b in env.brokers.values()), 30, what="leaders")
    return env.cluster, env.store


def leaders(port: int, topic: str) -> int:
    md = fetch_metadata(f"127.0.0.1:{port}", topics=[topic], timeout=5)
    return sum(1 for p in md.topics[0].partitions if p.error_code == 0 and p.leader_id >= 0)


def leader_ports(c) -> dict[int, int]:
    brokers = c.load().brokers
    md = fetch_metadata(f"127.0.0.1:{brokers[1].port}", topics=[TOPIC], timeout=5)
    return {p.partition_index: brokers[p.leader_id].port for p in md.topics[0].partitions}


# ------------------------------------------------------------------------------ load generators
async def exchange(reader, writer, frame: bytes) -> None:
    writer.write(frame)
    await writer.drain()
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    await reader.readexactly(size)


async def active_client(i: int, ports: dict[int, int], stop: threading.Event, done: list[int]) -> None:
    partition = i % len(ports)
    reader, writer = await asyncio.open_connection("127.0.0.1", ports[partition])
    records = batch(5, 100)
    cid = 0
    try:
        while not stop.is_set():
            cid += 1
            await exchange(reader, writer, encode_request(produce_request(partition, records), 9, cid, f"active-{i}"))
            cid += 1
            await exchange(reader, writer, encode_request(fetch_request(partition, 0, 64 * 1024, 0), 12, cid,
                                                          f"active-{i}"))
            done.append(1)
    finally:
        writer.close()


def run_active(ports: dict[int, int], stop: threading.Event, done: list[int]) -> None:
    async def main() -> None:
        await asyncio.gather(*(active_client(i, ports, stop, done) for i in range(ACTIVE)), return_exceptions=True)

    asyncio.run(main())


def slow_consumer(port: int, partition: int, stop: threading.Event) -> socket.socket:
    """Pipelines 1 MiB Fetch requests and never reads an answer."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.setblocking(False)

    def pump() -> None:
        cid = 0
        while not stop.is_set():
            cid += 1
            try:
                s.send(encode_request(fetch_request(partition, 0, 1 << 20), 12, cid, "slow"))
            except (BlockingIOError, OSError):
                time.sleep(0.05)  # the broker stopped reading us: backpressure reached the client
            time.sleep(0.005)

    threading.Thread(target=pump, daemon=True).start()
    return s


def probe(ports: list[int], stop: threading.Event, latencies: list[float]) -> None:
    conns = [BrokerConnection("127.0.0.1", p, timeout=10) for p in ports]
    try:
        while not stop.is_set():
            for c in conns:
                t0 = time.monotonic()
                c.send(ApiVersionsRequest(client_software_name="probe", client_software_version="1"), 3)
                c.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                                       allow_auto_topic_creation=False), 9)
                latencies.append(time.monotonic() - t0)
            time.sleep(0.1)
    finally:
        for c in conns:
            c.close()


# ------------------------------------------------------------------------------ the test
def test_idle_active_and_slow_clients_do_not_stall_the_cluster(cluster):
    c, store = cluster
    brokers = c.load().brokers
    ports = [b.port for b in brokers.values()]
    rss0 = {b.id: psutil.Process(b.pid).memory_info().rss / 2**20 for b in brokers.values()}
    by_partition = leader_ports(c)
    # ~2 MiB in partition 0, so each of the slow consumer's fetches has 1 MiB to send
    with BrokerConnection("127.0.0.1", by_partition[0], timeout=30) as conn:
        for _ in range(4):
            conn.send(produce_request(0, batch(500, 1000)), 9)

    stop = threading.Event()
    idle: list[socket.socket] = []
    latencies: list[float] = []
    done: list[int] = []
    threads = []
    try:
        for i in range(IDLE):
            idle.append(socket.create_connection(("127.0.0.1", ports[i % len(ports)]), timeout=10))
        slow = slow_consumer(by_partition[0], 0, stop)
        threads = [threading.Thread(target=run_active, args=(by_partition, stop, done), daemon=True),
                   threading.Thread(target=probe, args=(ports, stop, latencies), daemon=True)]
        for t in threads:
            t.start()
        time.sleep(LOAD_S / 2)
        # controller work under load: a new topic must reach every broker's metadata
        t0 = time.monotonic()
        store.create_topic("during-load", TopicAssignment({p: ReplicaAssignment(r) for p, r in
                                                           {0: (1, 2), 1: (2, 3), 2: (3, 1)}.items()}), {})
        wait_for(lambda: all(leaders(p, "during-load") == 3 for p in ports), CONTROLLER_BOUND_S,
                 what="the controller to bring a new topic online under load")
        controller_s = time.monotonic() - t0
        time.sleep(LOAD_S / 2)
        rss = {b.id: psutil.Process(b.pid).memory_info().rss / 2**20 for b in brokers.values()}
        for s in idle[:10]:  # idle connections are still served
            s.settimeout(5)
            s.sendall(encode_request(ApiVersionsRequest(client_software_name="idle", client_software_version="1"),
                                     3, 1, "idle"))
            assert len(s.recv(4)) == 4
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        for s in idle:
            s.close()
    slow.close()
    assert len(done) > ACTIVE * 5, f"the active clients completed only {len(done)} rounds"
    p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) >= 100 else max(latencies)
    assert p99 < PROBE_P99_S, f"probe latency p99 {p99:.2f}s max {max(latencies):.2f}s over {len(latencies)} probes"
    assert max(latencies) < PROBE_MAX_S, (
        f"probe latency p99 {p99:.2f}s max {max(latencies):.2f}s over {len(latencies)} probes"
    )
    assert controller_s < CONTROLLER_BOUND_S
    grown = {b: round(rss[b] - rss0[b], 1) for b in rss}
    print(f"load: {len(done)} active rounds, probe p99 {p99:.3f}s max {max(latencies):.3f}s, "
          f"new topic online in {controller_s:.2f}s, RSS growth MB {grown}")
    assert max(grown.values()) < RSS_GROWTH_MB, f"RSS growth per broker (MB): {grown}"
    for b in brokers.values():
        assert c.broker_running(b)
