"""OffsetCommit round trips per second and latency from 100 concurrent standalone committers,
next to acks=all Produce requests of one small record to an RF 3 topic from as many
concurrent clients, in the same run (issue 11, "Speed").

Both sides are the same replicated write: an append at a partition leader, then a wait
until every in-sync replica has it (OffsetCommit with `offsets.commit.required.acks=-1`;
Produce with acks=all). To make the comparison fair:
- the same client machinery: one asyncio task per client, each with its own connection
  (`praha.protocol.async_client.AsyncConnection`), kafka-python's request classes, one
  request in flight per client (closed loop), in this one process;
- the same partitions and leaders: the produce topic `bench-rf3` has `__consumer_offsets`'
  replica assignment (50 partitions, RF 3), and client i produces to partition
  `partition_for(group i)`, the `__consumer_offsets` partition its group commits to;
- committer i is group `oc-<i>`, generation -1, empty member id (a standalone consumer),
  one partition per commit (`bench-rf3`/p_i, the offset going up), to its own coordinator;
  the producer sends one 16-byte record per request (v9, acks=-1);
- phases alternate (commit, produce, commit, …, `--repeat` of each, `--seconds` long after a
  1 s warm-up) and the median of each is compared; the machine's load is recorded per phase.

Usage: .venv/bin/python bench/offset_commit.py [--clients 100] [--seconds 8] [--repeat 3]
       [--no-write] [--keep-dir] [--profile]
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _groups import (  # noqa: E402
    REPO,
    Load,
    bootstrap,
    broker_pids,
    create_topic,
    ensure_offsets_topic,
    group_cluster,
    leaders,
    median,
    offsets_assignment,
    write_subsection,
)
from harness import machine_line, start_py_spy, stop_py_spy  # noqa: E402
from kafka.protocol.consumer import OffsetCommitRequest, OffsetCommitResponse  # noqa: E402
from kafka.protocol.producer import ProduceRequest, ProduceResponse  # noqa: E402

from praha.broker.offsets_log import build_batch  # noqa: E402
from praha.coordinator.group.records import partition_for  # noqa: E402
from praha.protocol.async_client import AsyncConnection  # noqa: E402

TOPIC = "bench-rf3"
COMMIT_VERSION, PRODUCE_VERSION = 8, 9
TARGET_RATIO = 0.5
_T = OffsetCommitRequest.OffsetCommitRequestTopic
_P = _T.OffsetCommitRequestPartition
_PT = ProduceRequest.TopicProduceData
_PP = _PT.PartitionProduceData


def commit_request(group: str, partition: int, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                               retention_time_ms=-1, topics=[_T(name=TOPIC, partitions=[
                                   _P(partition_index=partition, committed_offset=offset, committed_leader_epoch=-1,
                                      committed_metadata="")])])


def produce_request(partition: int, records: bytes) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
        _PT(name=TOPIC, partition_data=[_PP(index=partition, records=records)])])


async def run_phase(kind: str, clients: list[tuple[str, int, int, int]], seconds: float, warm: float
                    ) -> dict[str, float]:
    """`clients` = (group, partition, commit port, produce port). Closed loop per client."""
    conns = [AsyncConnection("127.0.0.1", cport if kind == "commit" else pport, f"bench-{kind}-{i}", 30.0)
             for i, (_, _, cport, pport) in enumerate(clients)]
    lat: list[float] = []
    errors: dict[int, int] = {}
    count = [0]
    record = build_batch([(None, b"x" * 16)], int(time.time() * 1000))  # type: ignore[list-item]
    t_start = time.perf_counter()
    t_measure, t_end = t_start + warm, t_start + warm + seconds

    async def client(i: int) -> None:
        group, partition, _, _ = clients[i]
        conn = conns[i]
        n = 0
        while True:
            t0 = time.perf_counter()
            if t0 >= t_end:
                return
            n += 1
            if kind == "commit":
                r = await conn.send(commit_request(group, partition, n), COMMIT_VERSION, OffsetCommitResponse)
                code = r.topics[0].partitions[0].error_code
            else:
                r = await conn.send(produce_request(partition, record), PRODUCE_VERSION, ProduceResponse)
                code = r.responses[0].partition_responses[0].error_code
            t1 = time.perf_counter()
            if t0 >= t_measure and t1 <= t_end:
                count[0] += 1
                lat.append(t1 - t0)
                if code:
                    errors[code] = errors.get(code, 0) + 1

    await asyncio.gather(*(c.connect() for c in conns))
    try:
        await asyncio.wait_for(asyncio.gather(*(client(i) for i in range(len(clients)))), warm + seconds + 60)
    finally:
        for c in conns:
            c.close()
    lat.sort()
    q = statistics.quantiles(lat, n=100) if len(lat) > 100 else [float("nan")] * 99
    return {"rate": count[0] / seconds, "p50": q[49], "p99": q[98], "n": count[0], "errors": sum(errors.values()),
            "error_codes": dict(errors)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", action=argparse.BooleanOptionalAction, default=True,
                    help="update the section of bench/RESULTS.md (default: on)")
    ap.add_argument("--keep-dir", action="store_true")
    ap.add_argument("--profile", action="store_true", help="py-spy the brokers during one extra commit phase")
    args = ap.parse_args()
    with group_cluster(args.keep_dir) as cluster:
        off_leaders = ensure_offsets_topic(cluster)
        create_topic(cluster, TOPIC, 50, 3, assignment=offsets_assignment(cluster))
        topic_leaders = leaders(cluster, TOPIC)
        ports = {b.id: b.port for b in cluster.load().brokers.values()}
        groups = [f"oc-{i}" for i in range(args.clients)]
        clients = [(g, partition_for(g, 50), ports[off_leaders[partition_for(g, 50)]],
                    ports[topic_leaders[partition_for(g, 50)]]) for g in groups]
        same = sum(1 for g in groups if off_leaders[partition_for(g, 50)] == topic_leaders[partition_for(g, 50)])
        per_broker = {b: sum(1 for c in clients if c[2] == ports[b]) for b in sorted(ports)}
        print(f"bootstrap {bootstrap(cluster)}; {args.clients} clients; committers per coordinator {per_broker}; "
              f"{same}/{args.clients} producers write to the broker that coordinates their group")
        pids = broker_pids(cluster)
        phases: dict[str, list[dict[str, float]]] = {"commit": [], "produce": []}
        for rep in range(args.repeat):
            for kind in ("commit", "produce"):
                load = Load(pids)
                r = asyncio.run(run_phase(kind, clients, args.seconds, 1.0))
                r.update(load.done())
                phases[kind].append(r)
                print(f"  #{rep + 1} {kind:<8} {r['rate']:>8.0f} req/s  p50 {r['p50'] * 1000:6.1f} ms  "
                      f"p99 {r['p99'] * 1000:6.1f} ms  errors {r['errors']} {r['error_codes'] or ''}  "
                      f"machine busy {r['busy'] * 100:.0f}%, others {r['others'] * 100:.0f}%")
        profile_note = ""
        if args.profile:
            spies = [start_py_spy(pid, Path(f"/tmp/offset-commit-broker-{i + 1}.txt"), int(args.seconds) + 2,
                                  fmt="raw") for i, pid in enumerate(pids)]
            try:
                asyncio.run(run_phase("commit", clients, args.seconds, 1.0))
            finally:
                for s in spies:
                    stop_py_spy(s)
            profile_note = "py-spy raw profiles of a commit phase: /tmp/offset-commit-broker-<id>.txt"
            print(profile_note)
    c_rate = median([r["rate"] for r in phases["commit"]])
    p_rate = median([r["rate"] for r in phases["produce"]])
    ratios = [c["rate"] / p["rate"] for c, p in zip(phases["commit"], phases["produce"])]
    ratio = median(ratios)
    rows = []
    for kind, label in (("commit", "OffsetCommit v8 (standalone, 1 partition)"),
                        ("produce", "Produce v9 acks=all, 1 record, RF 3")):
        rs = phases[kind]
        rows.append(
            f"| {label} | {median([r['rate'] for r in rs]):,.0f} | "
            f"{' / '.join(format(r['rate'], ',.0f') for r in rs)} | {median([r['p50'] for r in rs]) * 1000:.1f} | "
            f"{median([r['p99'] for r in rs]) * 1000:.1f} | {sum(r['errors'] for r in rs)} | "
            f"{' / '.join(format(r['busy'], '.0%') for r in rs)} | "
            f"{' / '.join(format(r['others'], '.0%') for r in rs)} |"
        )
    verdict = (f"OffsetCommit / Produce request rate {ratio:.2f} (each pair: {', '.join(f'{x:.2f}' for x in ratios)})"
               f" — {'meets' if ratio >= TARGET_RATIO else 'misses'} ≥ {TARGET_RATIO:.2f}")
    print(verdict)
    table = ("| requests | req/s (median) | req/s per run | p50 ms | p99 ms | errors | machine busy per run "
             "| other processes per run |\n|---|---:|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows))
    if args.write:
        section = "\n".join([
            "### Offset commits (`bench/offset_commit.py`)", "",
            f"Command: `python bench/offset_commit.py --clients {args.clients} --seconds {args.seconds:g} "
            f"--repeat {args.repeat}`", "",
            f"Machine: {machine_line()}; 3 broker processes, ZooKeeper and the client on the same CPUs.", "",
            f"What is timed: {args.clients} closed-loop clients, one asyncio task and connection each in one "
            f"process (praha's `AsyncConnection`, kafka-python's request classes), for {args.seconds:g} s after a 1 s "
            "warm-up. Committers: group `oc-<i>`, generation -1, empty member id, one partition per commit, sent to "
            "the group's coordinator. Producers: one 16-byte record per request, acks=-1, to the partition of "
            f"`{TOPIC}` (RF 3, `__consumer_offsets`' replica assignment) with the number of the group's "
            "`__consumer_offsets` partition — the same leaders, the same replicated write. Phases alternate; "
            f"medians of {args.repeat}. Latency is the round trip of one request as the client sees it.", "",
            table, "",
            f"- {verdict}", "",
        ])
        write_subsection(REPO / "bench" / "RESULTS.md", "### Offset commits (`bench/offset_commit.py`)", section)
    print(f"OffsetCommit {c_rate:,.0f} req/s, Produce {p_rate:,.0f} req/s")


if __name__ == "__main__":
    main()
