"""The group coordinator's CPU per heartbeat with 10,000 members in 100 groups (issue 22,
"Speed"): KIP-848's ConsumerGroupHeartbeat beside the classic protocol's Heartbeat, in one run.

The coordinator (`GroupCoordinator`, the broker's own) is driven directly in one process on
an in-memory `__consumer_offsets` whose append only counts bytes (the replicated write is not
the coordinator's CPU): each group has its own topic of `--partitions` partitions.

KIP-848 (`consumer`): every member joins (epoch 0, subscribed to its group's topic), then
heartbeats until the group is Stable (each member confirming what it was given, as librdkafka
does); then timed:
- *steady*: `--rounds` rounds of one heartbeat per member at its epoch, nothing changed
  (librdkafka's regular heartbeat: no subscription, no owned partitions);
- *rebalance*: one member of each group leaves (epoch -1) and the others heartbeat until
  every group is Stable again (the assignor, the reconciliation and the records included);
  CPU per heartbeat of that phase.
Classic (`classic`): the same groups and members joined through JoinGroup/SyncGroup, then
*steady*: the same rounds of Heartbeat.

CPU is the process's (time.process_time), per heartbeat; the loop's own overhead is
included in both protocols alike. Usage: .venv/bin/python bench/heartbeat_cpu.py
[--groups 100] [--members 100] [--partitions 100] [--rounds 5] [--no-write]
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from harness import machine_line  # noqa: E402

from praha.coordinator.group.consumer.heartbeat import HeartbeatRequest  # noqa: E402
from praha.coordinator.group.consumer.model import ConsumerGroupState, TopicInfo  # noqa: E402
from praha.coordinator.group.coordinator import GroupConfig, GroupCoordinator  # noqa: E402
from praha.coordinator.group.storage import LogRecord  # noqa: E402
from praha.errors import ErrorCode  # noqa: E402

HEADING = "### Coordinator CPU per heartbeat (`bench/heartbeat_cpu.py`)"


class CountingLog:
    """`__consumer_offsets` that keeps nothing: the coordinator's CPU without the replicated write."""

    def __init__(self) -> None:
        self.records = 0
        self.bytes = 0

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]], producer=None) -> ErrorCode:
        self.records += len(records)
        self.bytes += sum(len(k) + len(v or b"") for k, v in records)
        return ErrorCode.NONE

    def read(self, partition: int):
        return iter(list[LogRecord]())


async def coordinator(partitions: int, topics: dict[str, TopicInfo], initial_delay_ms: int = 0
                      ) -> tuple[GroupCoordinator, CountingLog]:
    async def blocking(fn):
        return fn()
    log = CountingLog()
    config = GroupConfig(partitions=partitions, min_session_timeout_ms=10, initial_rebalance_delay_ms=initial_delay_ms)
    c = GroupCoordinator(config, log, run_blocking=blocking, topics=lambda: topics)
    for p in range(partitions):
        c.on_elected(p, 1)
    for _ in range(50):
        await asyncio.sleep(0)
    return c, log


def owned(assignment) -> tuple:
    return tuple((t, tuple(sorted(ps))) for t, ps in assignment.items())


async def consumer_protocol(groups: int, members: int, partitions: int, rounds: int) -> dict[str, float]:
    topics = {f"t{g}": TopicInfo(f"t{g}", uuid.uuid4(), partitions) for g in range(groups)}
    c, log = await coordinator(50, topics)
    epochs: dict[tuple[str, str], int] = {}
    holding: dict[tuple[str, str], tuple] = {}

    async def beat(gid: str, mid: str, full: bool = False) -> None:
        key = (gid, mid)
        out = await c.consumer_group_heartbeat(HeartbeatRequest(
            gid, mid, epochs[key], topic_partitions=holding[key] if full else None))
        assert out.error == ErrorCode.NONE, out
        a = out.answer
        assert a is not None
        epochs[key] = a.member_epoch
        if a.assignment is not None:
            holding[key] = owned(a.assignment)

    def unstable() -> list[str]:
        return [gid for gid, g in c.consumer.groups.items() if g.state is not ConsumerGroupState.STABLE]

    async def settle() -> int:
        n = 0
        for _ in range(50):
            todo = unstable()
            if not todo:
                return n
            for gid in todo:
                for mid in list(c.consumer.groups[gid].members):
                    await beat(gid, mid, full=True)
                    n += 1
        raise RuntimeError(f"groups not stable after 50 rounds: {unstable()[:5]}")

    t = time.process_time()
    for g in range(groups):
        gid = f"g{g}"
        for m in range(members):
            mid = f"m{m}-{uuid.uuid4()}"
            out = await c.consumer_group_heartbeat(HeartbeatRequest(
                gid, mid, 0, rebalance_timeout_ms=300000, subscribed_topic_names=(f"t{g}",), topic_partitions=()))
            assert out.error == ErrorCode.NONE, out
            epochs[(gid, mid)] = out.answer.member_epoch
            holding[(gid, mid)] = owned(out.answer.assignment or {})
    joins_cpu = time.process_time() - t
    settle_beats = await settle()
    join_total = time.process_time() - t
    t = time.process_time()
    for _ in range(rounds):
        for gid, mid in list(epochs):
            await beat(gid, mid)
    steady = (time.process_time() - t) / (rounds * len(epochs))
    records_before = log.records
    t = time.process_time()
    for g in range(groups):
        gid = f"g{g}"
        leaver = next(iter(c.consumer.groups[gid].members))
        out = await c.consumer_group_heartbeat(HeartbeatRequest(gid, leaver, -1))
        assert out.error == ErrorCode.NONE
        del epochs[(gid, leaver)]
    beats = groups + await settle()
    rebalance = (time.process_time() - t) / beats
    c.shutdown()
    return {"join_per_member": joins_cpu / (groups * members), "join_to_stable": join_total,
            "settle_beats": settle_beats, "steady": steady, "rebalance": rebalance, "rebalance_beats": beats,
            "rebalance_records": log.records - records_before}


async def classic_protocol(groups: int, members: int, rounds: int) -> dict[str, float]:
    # every member's JoinGroup arrives within the first generation's initial delay (no second phase)
    c, _ = await coordinator(50, {}, initial_delay_ms=500)
    protocols = [("range", b"\x00\x01\x00\x00\x00\x01\x00\x02t0\xff\xff\xff\xff\x00\x00\x00\x00")]

    async def one_group(gid: str) -> list[tuple[str, str, int]]:
        results = await asyncio.gather(*(c.join_group(
            gid, "", None, "bench", "/127.0.0.1", 45000, 300000, "consumer", protocols,
            require_known_member_id=False) for _ in range(members)))
        assert all(r.error == ErrorCode.NONE for r in results), results[0]
        gen = results[0].generation
        syncs = await asyncio.gather(*(c.sync_group(
            gid, gen, r.member_id, None, "consumer", "range", {m: b"" for m, _, _ in r.members})
            for r in results))
        assert all(s.error == ErrorCode.NONE for s in syncs), syncs[0]
        return [(gid, r.member_id, gen) for r in results]

    t = time.process_time()
    live = [x for group in await asyncio.gather(*(one_group(f"g{g}") for g in range(groups))) for x in group]
    join_total = time.process_time() - t
    t = time.process_time()
    for _ in range(rounds):
        for gid, mid, gen in live:
            assert c.heartbeat(gid, gen, mid, None) == ErrorCode.NONE
    steady = (time.process_time() - t) / (rounds * len(live))
    c.shutdown()
    return {"join_to_stable": join_total, "steady": steady}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100, help="partitions of each group's topic")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--write", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args()
    n = args.groups * args.members
    new = asyncio.run(consumer_protocol(args.groups, args.members, args.partitions, args.rounds))
    old = asyncio.run(classic_protocol(args.groups, args.members, args.rounds))
    us = 1e6
    rows = [
        f"| steady heartbeat (nothing changed), µs CPU | {new['steady'] * us:.1f} | {old['steady'] * us:.1f} | "
        f"{new['steady'] / old['steady']:.2f} |",
        f"| heartbeat during a rebalance (one member of each group left; {new['rebalance_beats']:.0f} heartbeats "
        f"to Stable, {new['rebalance_records']:.0f} records), µs CPU | {new['rebalance'] * us:.1f} | — | — |",
        f"| first heartbeat (join) per member, µs CPU | {new['join_per_member'] * us:.1f} | — | — |",
        f"| all {n:,} members joined to every group Stable, s CPU | {new['join_to_stable']:.2f} | "
        f"{old['join_to_stable']:.2f} | {new['join_to_stable'] / old['join_to_stable']:.2f} |",
    ]
    table = ("| figure | consumer (KIP-848) | classic | ratio |\n|---|---:|---:|---:|\n" + "\n".join(rows))
    print(table)
    if args.write:
        from _groups import write_subsection
        cmd = "python bench/heartbeat_cpu.py" + "".join(
            f" --{k} {v}" for k, v in (("groups", args.groups), ("members", args.members),
                                        ("partitions", args.partitions), ("rounds", args.rounds)))
        section = "\n".join([
            HEADING, "",
            f"Command: `{cmd}`", "",
            f"Machine: {machine_line()}; one process, the coordinator driven directly.", "",
            f"What is timed: the broker's `GroupCoordinator` with {args.groups} groups of {args.members} members "
            f"({n:,} members), each group on its own topic of {args.partitions} partitions, on an in-memory "
            "`__consumer_offsets` that only counts what it is given (the replicated write is not counted). "
            "CPU seconds of the process (`time.process_time`) per heartbeat. KIP-848: ConsumerGroupHeartbeat at the "
            "member's epoch with nothing changed (librdkafka's regular heartbeat); during a rebalance: one member of "
            "each group leaves and the others heartbeat (with their owned partitions) until every group is Stable "
            "(assignor, reconciliation, records). Classic: Heartbeat of the same number of members in Stable groups "
            "(generation check, session timer). Ratio = consumer / classic.", "",
            table, "",
        ])
        write_subsection(REPO / "bench" / "RESULTS.md", HEADING, section)


if __name__ == "__main__":
    main()
