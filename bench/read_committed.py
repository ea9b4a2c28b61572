"""read_committed next to read_uncommitted over the same transactional data (issue 13).

Fills a topic (RF 3, 1 KiB records) with `--mb` MiB in transactions of `--txn-records`
records, every tenth one aborted: the bench plays the transaction coordinator itself (one
transactional batch per transaction through Produce, then its marker through
WriteTxnMarkers, both acks=all), so it measures the partition leaders' read path alone.
Then one confluent-kafka consumer reads everything from offset 0, `--reads` times per
isolation level, alternating: read_uncommitted gets every record, read_committed the
committed ones (the broker answers with the aborted transactions of each fetch and the
client drops their records). Both fetch the same log bytes, so the figure is the log's
MiB per second from the first fetch to the last record; the target is read_committed /
read_uncommitted ≥ 0.9. Prints the medians and the ratio. The cluster lives in a
temporary directory and is stopped by PID.

Usage: .venv/bin/python bench/read_committed.py [--mb 128] [--partitions 6] [--txn-records 200] [--reads 3]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTP
from kafka.protocol.producer import ProduceRequest
from kafka.protocol.producer.transaction import WriteTxnMarkersRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.cluster.local import LocalCluster
from praha.common import TopicPartition
from praha.protocol.client import BrokerConnection
from praha.zk.store import ZkStore

try:  # run as a script from the repo root or from bench/
    from bench.produce import BROKER_CONFIG, RECORD, bootstrap, create_topic, start_cluster
except ImportError:  # pragma: no cover
    from produce import BROKER_CONFIG, RECORD, bootstrap, create_topic, start_cluster  # type: ignore[no-redef]

ABORT_EVERY = 10
_M = WriteTxnMarkersRequest.WritableTxnMarker
_PD = ProduceRequest.TopicProduceData


def txn_batch(pid: int, seq: int, count: int, value: bytes) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=1, producer_id=pid, producer_epoch=0,
                                  base_sequence=seq, batch_size=1 << 30)
    for i in range(count):
        b.append(i, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])
    return bytes(b.build())


def fill(cluster: LocalCluster, store: ZkStore, topic: str, partitions: int, total_mb: int,
         txn_records: int) -> tuple[int, int]:
    """Write the transactions; (records written, records committed)."""
    brokers = cluster.load().brokers
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    states = store.get_partition_states(tps)[0]
    conns = {b.id: BrokerConnection("127.0.0.1", b.port, timeout=60) for b in brokers.values()}
    value = os.urandom(RECORD)
    txns = max(total_mb * (1 << 20) // RECORD // txn_records, partitions)
    written = committed = 0
    try:
        for i in range(txns):
            p = i % partitions
            conn = conns[states[tps[p]].leader_and_isr.leader]
            pid = 50_000 + p
            seq = (i // partitions) * txn_records
            resp = conn.send(ProduceRequest(transactional_id=f"bench-{p}", acks=-1, timeout_ms=60000, topic_data=[
                _PD(name=topic, partition_data=[_PD.PartitionProduceData(
                    index=p, records=txn_batch(pid, seq, txn_records, value))])]), 9)
            assert resp.responses[0].partition_responses[0].error_code == 0, resp
            commit = i % ABORT_EVERY != ABORT_EVERY - 1 or i >= txns - partitions  # the last ones commit
            marker = conn.send(WriteTxnMarkersRequest(markers=[_M(
                producer_id=pid, producer_epoch=0, transaction_result=commit, coordinator_epoch=0,
                topics=[_M.WritableTxnMarkerTopic(name=topic, partition_indexes=[p])])]), 1)
            assert marker.markers[0].topics[0].partitions[0].error_code == 0, marker
            written += txn_records
            committed += txn_records if commit else 0
    finally:
        for c in conns.values():
            c.close()
    return written, committed


def read(bs: str, topic: str, partitions: int, isolation: str, expected: int) -> dict[str, float]:
    c = Consumer({"bootstrap.servers": bs, "group.id": "bench-rc", "enable.auto.commit": False,
                  "isolation.level": isolation, "fetch.max.bytes": 52428800,
                  "max.partition.fetch.bytes": 4 * 1048576, "queued.max.messages.kbytes": 262144,
                  "fetch.queue.backoff.ms": 10, "log_level": 3})
    try:
        c.list_topics(topic, timeout=30)
        start = time.monotonic()
        c.assign([CTP(topic, p, 0) for p in range(partitions)])
        got = size = 0
        while got < expected and time.monotonic() < start + 300:
            for m in c.consume(num_messages=500, timeout=0.05):
                if m.error() is None:
                    got += 1
                    size += len(m.value())
        return {"seconds": time.monotonic() - start, "records": got, "bytes": size}
    finally:
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=128, help="MiB of records to write and read back (default 128)")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--txn-records", type=int, default=200, help="records per transaction (default 200)")
    ap.add_argument("--reads", type=int, default=3, help="reads per isolation level, alternating (default 3)")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="praha-bench-")
    cluster = LocalCluster(root)
    try:
        state = start_cluster(cluster, {**BROKER_CONFIG, "transaction.partition.verification.enable": "false"})
        store = ZkStore(state.zookeeper).start()
        try:
            create_topic(cluster, store, state.zookeeper, "data", args.partitions, 3, {"min.insync.replicas": "2"})
            t0 = time.monotonic()
            written, committed = fill(cluster, store, "data", args.partitions, args.mb, args.txn_records)
            fill_s = time.monotonic() - t0
        finally:
            store.stop()
        bs = bootstrap(cluster)
        log_mb = written * RECORD / (1 << 20)
        print(f"read_committed vs read_uncommitted: {written} records of 1 KiB ({log_mb:.0f} MiB) in transactions of "
              f"{args.txn_records}, every {ABORT_EVERY}th aborted ({written - committed} records), "
              f"{args.partitions} partitions (RF 3), one confluent-kafka consumer; written in {fill_s:.1f} s")
        rates: dict[str, list[float]] = {"read_uncommitted": [], "read_committed": []}
        for i in range(args.reads):
            for isolation, expected in (("read_uncommitted", written), ("read_committed", committed)):
                r = read(bs, "data", args.partitions, isolation, expected)
                ok = r["records"] == expected
                rate = log_mb / r["seconds"]
                rates[isolation].append(rate)
                print(f"  read {i + 1} {isolation:16s} {r['records']:>8} records in {r['seconds']:6.2f} s: "
                      f"{rate:7.1f} log MiB/s{'' if ok else '  INCOMPLETE'}")
        unc, com = (statistics.median(rates[k]) for k in ("read_uncommitted", "read_committed"))
        ratio = com / unc
        print(f"median: read_uncommitted {unc:.1f} MiB/s, read_committed {com:.1f} MiB/s, "
              f"ratio {ratio:.2f} ({'meets' if ratio >= 0.9 else 'misses'} ≥ 0.9)")
    finally:
        cluster.down(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
