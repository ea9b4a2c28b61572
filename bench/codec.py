"""Codec benchmark: decode a request and encode its response, old path (kafka-python 3.0.12's
message classes, which praha used until issue 21) against the generated codecs
(`praha/protocol/messages/gen/`), in one run, on the same messages.

For each API a realistic message pair is built once (Produce: 10 topics x 10 partitions with
1 KiB record batches; Fetch: the response to 10 x 10 partitions with 16 KiB batches;
Metadata: 100 topics x 10 partitions x 3 replicas; OffsetCommit: 10 x 50 partitions). Timed:
decoding the request body and encoding the response body, `--repeat` times, best of
`--trials`. Figures are per operation and as the ratio old / new (above 1: new is faster).
The Produce and Fetch rows are the general codec; the broker's own hot paths
(`protocol/produce.py`, `protocol/fetch.py`) are hand-written and not measured here.

    .venv/bin/python bench/codec.py [--repeat 200] [--trials 5] [--write]
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import kafka.protocol.consumer as kc  # noqa: E402  (the old path, kept as an independent client)
import kafka.protocol.metadata as km  # noqa: E402
import kafka.protocol.producer as kp  # noqa: E402

from praha.protocol.messages.gen import groups as g  # noqa: E402
from praha.protocol.messages.gen import metadata as m  # noqa: E402
from praha.protocol.messages.gen import produce_fetch as pf  # noqa: E402

RESULTS = Path(__file__).with_name("RESULTS.md")


def produce(mod: Any, resp_mod: Any) -> tuple[Any, Any]:
    P, R = mod.ProduceRequest, resp_mod.ProduceResponse
    batch = bytes(1024)
    req = P(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        P.TopicProduceData(name=f"topic-{t}", partition_data=[
            P.TopicProduceData.PartitionProduceData(index=p, records=batch) for p in range(10)])
        for t in range(10)])
    resp = R(responses=[R.TopicProduceResponse(name=f"topic-{t}", partition_responses=[
        R.TopicProduceResponse.PartitionProduceResponse(index=p, error_code=0, base_offset=1000 * p,
                                                        log_append_time_ms=-1, log_start_offset=0,
                                                        record_errors=[], error_message=None)
        for p in range(10)]) for t in range(10)], throttle_time_ms=0)
    return req, resp


def fetch(mod: Any, resp_mod: Any) -> tuple[Any, Any]:
    F, R = mod.FetchRequest, resp_mod.FetchResponse
    req = F(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800, isolation_level=1, session_id=0,
            session_epoch=-1, topics=[F.FetchTopic(topic=f"topic-{t}", partitions=[
                F.FetchTopic.FetchPartition(partition=p, current_leader_epoch=3, fetch_offset=1000,
                                            log_start_offset=-1, partition_max_bytes=1048576)
                for p in range(10)]) for t in range(10)], forgotten_topics_data=[], rack_id="")
    batch = bytes(16384)
    P = R.FetchableTopicResponse.PartitionData
    resp = R(throttle_time_ms=0, error_code=0, session_id=0, responses=[R.FetchableTopicResponse(
        topic=f"topic-{t}", partitions=[P(partition_index=p, error_code=0, high_watermark=5000, last_stable_offset=5000,
                                         log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
                                         records=batch) for p in range(10)]) for t in range(10)])
    return req, resp


def metadata(mod: Any, resp_mod: Any) -> tuple[Any, Any]:
    M, R = mod.MetadataRequest, resp_mod.MetadataResponse
    req = M(topics=[M.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=f"topic-{t}") for t in range(100)],
            allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    T, Pt = R.MetadataResponseTopic, R.MetadataResponseTopic.MetadataResponsePartition
    resp = R(throttle_time_ms=0, cluster_id="praha-cluster", controller_id=1,
             brokers=[R.MetadataResponseBroker(node_id=i, host="127.0.0.1", port=9092 + i,
                                               rack=None) for i in range(3)],
             topics=[T(error_code=0, name=f"topic-{t}", topic_id=uuid.UUID(int=t + 1), is_internal=False, partitions=[
                 Pt(error_code=0, partition_index=p, leader_id=p % 3, leader_epoch=5, replica_nodes=[0, 1, 2],
                    isr_nodes=[0, 1, 2], offline_replicas=[]) for p in range(10)]) for t in range(100)])
    return req, resp


def offset_commit(mod: Any, resp_mod: Any) -> tuple[Any, Any]:
    O, R = mod.OffsetCommitRequest, resp_mod.OffsetCommitResponse
    req = O(group_id="group-1", generation_id_or_member_epoch=7, member_id="consumer-1-abc", group_instance_id=None,
            retention_time_ms=-1, topics=[O.OffsetCommitRequestTopic(name=f"topic-{t}", partitions=[
                O.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=12345, committed_leader_epoch=3, committed_metadata="")
                for p in range(50)]) for t in range(10)])
    resp = R(throttle_time_ms=0, topics=[R.OffsetCommitResponseTopic(name=f"topic-{t}", partitions=[
        R.OffsetCommitResponseTopic.OffsetCommitResponsePartition(partition_index=p, error_code=0) for p in range(50)])
        for t in range(10)])
    return req, resp


#: (API, version, builder, kafka-python modules (request, response), generated module)
CASES = [
    ("Produce", 9, produce, (kp, kp), pf),
    ("Fetch", 12, fetch, (kc, kc), pf),
    ("Metadata", 12, metadata, (km, km), m),
    ("OffsetCommit", 8, offset_commit, (kc, kc), g),
]


def best(fn: Callable[[], None], repeat: int, trials: int) -> float:
    """Seconds per call: the best of `trials` runs of `repeat` calls."""
    out = []
    for _ in range(trials):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        out.append((time.perf_counter() - t0) / repeat)
    return min(out)


def run(repeat: int, trials: int) -> list[dict[str, Any]]:
    rows = []
    for name, version, build, (kreq_mod, kresp_mod), gen in CASES:
        old_req, old_resp = build(kreq_mod, kresp_mod)
        new_req, new_resp = build(gen, gen)
        wire_req = bytes(old_req.encode(version=version))
        assert wire_req == bytes(new_req.encode(version)), f"{name}: the two request encodings differ"
        assert bytes(old_resp.encode(version=version)) == bytes(new_resp.encode(version)), f"{name}: responses differ"
        old_cls, new_cls = type(old_req), type(new_req)

        def old(old_cls: Any = old_cls, wire_req: bytes = wire_req, version: int = version,
                old_resp: Any = old_resp) -> None:
            old_cls.decode(wire_req, version=version)
            old_resp.encode(version=version)

        def new(new_cls: Any = new_cls, wire_req: bytes = wire_req, version: int = version,
                new_resp: Any = new_resp) -> None:
            new_cls.decode(wire_req, version)
            new_resp.encode(version)

        t_old, t_new = best(old, repeat, trials), best(new, repeat, trials)
        rows.append({"api": name, "version": version, "request_bytes": len(wire_req),
                     "old_us": t_old * 1e6, "new_us": t_new * 1e6, "ratio": t_old / t_new})
        print(f"{name} v{version}: old {t_old * 1e6:.0f} us, new {t_new * 1e6:.0f} us, old/new {t_old / t_new:.2f}")
    return rows


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "## Codec: kafka-python's classes against the generated codecs (issue 21)", "",
        f"Command: `python bench/codec.py --repeat {args.repeat} --trials {args.trials}`", "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, shared with other work (timings noisy; "
        "the ratio is measured in one run, old and new interleaved per API).", "",
        "What is timed: decoding the request body and encoding the response body, best of the trials, "
        "per operation. Produce: 10 topics x 10 partitions, 1 KiB batches; Fetch: 10 x 10, 16 KiB batches; "
        "Metadata: 100 topics x 10 partitions x 3 replicas; OffsetCommit: 10 x 50 partitions. Both encodings "
        "are checked byte-equal first.", "",
        "| API | version | request bytes | old (kafka-python) us | new (generated) us | old / new |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['api']} | {r['version']} | {r['request_bytes']:,} | {r['old_us']:,.0f} | "
                     f"{r['new_us']:,.0f} | {r['ratio']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=200, help="calls per trial (default 200)")
    p.add_argument("--trials", type=int, default=5, help="trials; the best counts (default 5)")
    p.add_argument("--write", action="store_true", help="append the table to bench/RESULTS.md")
    args = p.parse_args()
    rows = run(args.repeat, args.trials)
    text = table(rows, args)
    print(text)
    if args.write:
        with RESULTS.open("a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
