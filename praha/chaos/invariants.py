"""The end-of-campaign checks, after every fault is healed and the clients have stopped.

records      every acknowledged id is at the offset it was acknowledged at (else lost);
             the log reads back in offset order without holes below the high
             watermark; every offset a consumer was served still holds the same id
             (else divergent); every offset ever below a reported high watermark is
             still readable. The producers are idempotent: an id at two offsets is
             a violation, judged by the batch of each copy (two producer epochs: the
             client's resend after an epoch bump, `duplicated_client_resend`; one
             epoch: `duplicated`), and so is an acknowledged id behind a later one.
replicas     after shutdown, the segment files of every replica hold the same records
             below the final high watermark (no divergence left after truncation).
controllers  from all state-change logs: one controller per epoch; each broker's
             accepted controller requests never go back to an older epoch (across
             restarts too), and a LeaderAndIsr of epoch E came from E's controller.
health       within a bound: all brokers registered, a controller, every partition
             led with its full ISR, no deletion, reassignment or election left pending.
group        the consumer group (3 members committing after processing): the offset a final
             OffsetFetch returns for each partition is >= every commit the coordinator
             acknowledged; what members were told was committed when they got a partition
             never goes back, nor below a commit acknowledged before they asked; every
             acknowledged record was delivered to some member at least once.
memory       every broker process stays under the RSS bound and grows less than the
             stated amount after its first minute.
"""
from __future__ import annotations

import bisect
import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from praha.chaos.access import ClientAccess
from praha.chaos.environment import ChaosEnvironment
from praha.chaos.ledger import GroupLedger, Ledger, Tp
from praha.chaos.observers import HwState, Incarnation
from praha.chaos.timeline import Timeline
from praha.zk import znodes as zn

log = logging.getLogger(__name__)

_RID = re.compile(r"^(p\d+)-(\d+)$")
EXAMPLES = 20  # examples kept per violation; every case is judged


# ---------------------------------------------------------------------------- final read
@dataclass
class FinalRead:
    records: dict[Tp, dict[int, str]] = field(default_factory=dict)
    high_watermarks: dict[Tp, int] = field(default_factory=dict)
    incomplete: list[Tp] = field(default_factory=list)
    #: id stored twice -> the batch of each copy, read from the replicas' files (`describe_copies`)
    copies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: end-offset queries, and how many found an end other than the one before
    end_queries: int = 0
    end_moves: int = 0
    #: partitions whose end stayed below their highest acknowledged offset + 1 until the bound
    below_acked: dict[str, int] = field(default_factory=dict)


def acked_ends(acked: dict[str, Any]) -> dict[Tp, int]:
    """Per partition, one past the highest offset a producer was told it wrote at: where the
    final read must at least end."""
    ends: dict[Tp, int] = {}
    for ack in acked.values():
        if ack.offset >= 0:
            ends[ack.tp] = max(ends.get(ack.tp, 0), ack.offset + 1)
    return ends


def read_settled(before: dict[Tp, int] | None, now: dict[Tp, int], wanted: dict[Tp, int]) -> bool:
    """The final read may stop once it has read to `now`, if `now` is the same end a previous
    query found and at least what was acknowledged. A leader elected just before the read (the
    controller's imbalance check moves leaders back every 15 s in a campaign) answers with the
    high watermark it had as a follower until its followers fetch from it; a read that stopped
    there would call every acknowledged record past it lost. praha now answers a consumer
    OFFSET_NOT_AVAILABLE in that state, as Kafka does; a broker that still believes it leads
    (just resumed) can still answer with its old high watermark, so the read settles either way."""
    return before == now and all(now.get(tp, 0) >= end for tp, end in wanted.items())


def read_everything(access: ClientAccess, tps: list[Tp], logger: logging.Logger,
                    wanted: dict[Tp, int] | None = None, timeout: float = 90.0) -> FinalRead:
    """Every record of `tps` from the start to the high watermark, with a real client (the
    clients have stopped: the end is queried again until it holds still and reaches `wanted`)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
    from confluent_kafka import TopicPartition as CTP

    out = FinalRead(records={tp: {} for tp in tps})
    goal = {tp: end for tp, end in (wanted or {}).items() if tp in out.records}
    c = Consumer({**access.librdkafka(), "group.id": "chaos-verifier", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "enable.partition.eof": False, "fetch.wait.max.ms": 100,
                  "logger": logger})

    def ends() -> dict[Tp, int] | None:
        out.end_queries += 1
        try:
            found = {(t, p): c.get_watermark_offsets(CTP(t, p), timeout=10)[1] for t, p in tps}
            logger.debug("final read: end query %d found %d records", out.end_queries, sum(found.values()))
            return found
        except KafkaException as e:  # a leader moving: asked again below
            logger.warning("final read: end offsets unreadable (%s), asking again", e)
            return None

    try:
        deadline = time.monotonic() + timeout
        before: dict[Tp, int] | None = None
        now = ends()
        while now is None and time.monotonic() < deadline:
            time.sleep(0.5)
            now = ends()
        if now is None:
            raise RuntimeError("final read: no end offsets within the bound")
        c.assign([CTP(t, p, OFFSET_BEGINNING) for t, p in tps])
        pos = {tp: -1 for tp in tps}
        while time.monotonic() < deadline:
            if all(pos[tp] + 1 >= now[tp] for tp in tps):  # read to the last end found
                if read_settled(before, now, goal):
                    break
                if before == now:  # holding still below what was acknowledged: followers catching up
                    time.sleep(0.5)
                again = ends()
                if again is None:
                    time.sleep(0.5)
                else:
                    out.end_moves += again != now
                    before, now = now, again
                continue
            for m in c.consume(1000, 0.5):
                if m.error():
                    continue
                tp = (cast(str, m.topic()), cast(int, m.partition()))
                offset = cast(int, m.offset())
                out.records[tp][offset] = (m.value() or b"").decode("utf-8", "replace")
                pos[tp] = max(pos[tp], offset)
        out.high_watermarks = now
        out.incomplete = [tp for tp in tps if pos[tp] + 1 < now[tp]]
        out.below_acked = {f"{t}-{p}": end for (t, p), end in goal.items() if now[(t, p)] < end}
    finally:
        c.close()
    logger.info("final read: %d records of %d partitions, %d end queries, %d moved, %d incomplete, "
                "%d below what was acknowledged", sum(map(len, out.records.values())), len(tps), out.end_queries,
                out.end_moves, len(out.incomplete), len(out.below_acked))
    return out


# ---------------------------------------------------------------------------- records
@dataclass
class RecordFigures:
    acked: int = 0
    failed: int = 0
    pending: int = 0
    read: int = 0
    lost: int = 0
    duplicated: int = 0
    divergent_offsets: int = 0
    out_of_order: int = 0
    unacked_present: int = 0
    hw_not_readable: int = 0
    failed_by_error: dict[str, int] = field(default_factory=dict)
    duplicated_examples: dict[str, Any] = field(default_factory=dict)
    out_of_order_examples: list[dict[str, Any]] = field(default_factory=list)
    offset_gaps: int = 0
    acked_offset_unknown: int = 0  # confirmed by the client without an offset


def check_records(ledger: Ledger, final: FinalRead, hw: HwState, timeline: Timeline) -> RecordFigures:
    f = RecordFigures()
    acked = ledger.snapshot_acked()
    f.acked = len(acked)
    f.failed = len(ledger.failed)
    f.pending = max(0, ledger.sent - f.acked - f.failed)
    for err in ledger.failed.values():
        f.failed_by_error[err] = f.failed_by_error.get(err, 0) + 1
    where = where_stored(final)
    f.read = sum(len(recs) for recs in final.records.values())
    for tp in final.incomplete:
        timeline.violate("unreadable", f"{tp[0]}-{tp[1]} could not be read up to its high watermark "
                         f"{final.high_watermarks.get(tp)}", topic=tp[0], partition=tp[1])
    lost_examples: list[dict[str, Any]] = []
    f.acked_offset_unknown = sum(1 for a in acked.values() if a.offset < 0)
    for rid, ack in acked.items():
        if ack.offset < 0:  # confirmed without an offset: it must be stored somewhere in its partition
            if any(tp == ack.tp for tp, _ in where.get(rid, [])):
                continue
        elif final.records.get(ack.tp, {}).get(ack.offset) == rid:
            continue
        f.lost += 1
        if len(lost_examples) < 20:
            lost_examples.append({"id": rid, "topic": ack.tp[0], "partition": ack.tp[1], "offset": ack.offset,
                                  "acked_at_s": round(ack.t, 3), "found_at": where.get(rid, []),
                                  "offset_holds": final.records.get(ack.tp, {}).get(ack.offset),
                                  "partition_end": final.high_watermarks.get(ack.tp)})
    if f.lost:
        timeline.violate("acked_record_lost", f"{f.lost} acknowledged records are not at their acknowledged offsets",
                         t=min(acked[e["id"]].t for e in lost_examples), examples=lost_examples)
    dups = stored_twice(where)
    f.duplicated = len(dups)

    def example(rid: str) -> dict[str, Any]:
        return {"stored_at": dups[rid], "acked_at": [acked[rid].tp, acked[rid].offset] if rid in acked else None,
                "send_error": ledger.failed.get(rid), **({"batches": final.copies[rid]} if rid in final.copies else {})}

    f.duplicated_examples = {rid: example(rid) for rid in list(dups)[:EXAMPLES]}
    # the producers are idempotent: a resend must be deduplicated by the leader, unless the client
    # renumbered it under a newer producer epoch (librdkafka's epoch bump, confluentinc/librdkafka#4953,
    # seed 210), which no leader can recognise: that is its own kind. Every id is judged; only the
    # examples are capped (seed 217: 24 of 44 ids were left unexamined by a cap on the judging)
    verdict = classify_copies(dups, final.copies)
    if verdict.resent:
        timeline.violate("duplicated_client_resend", f"{len(verdict.resent)} record ids stored twice under two "
                         "producer epochs: re-sent by the client after an epoch bump, not recognisable by any "
                         "leader", examples={rid: example(rid) for rid in verdict.resent[:EXAMPLES]})
    others = verdict.same_epoch + verdict.unexamined
    if others:
        unnamed = f"; {len(verdict.unexamined)} with a copy no replica's files hold" if verdict.unexamined else ""
        timeline.violate("duplicated", f"{len(others)} record ids stored at two offsets (idempotent "
                         f"producers){unnamed}", examples={rid: example(rid) for rid in others[:EXAMPLES]})
    f.unacked_present = sum(1 for rid in where if rid not in acked)
    _check_contiguous(final, f, timeline)
    _check_order(acked, f, timeline)
    _check_served(ledger, final, f, timeline)
    for tp, top in hw.max_hw.items():
        have = final.high_watermarks.get(tp, -1)
        if have < top:
            f.hw_not_readable += 1
            timeline.violate("hw_regressed", f"{tp[0]}-{tp[1]} ends at high watermark {have}, but {top} was "
                             "reported during the run", topic=tp[0], partition=tp[1], max_seen=top, final=have)
    return f


def _check_contiguous(final: FinalRead, f: RecordFigures, timeline: Timeline) -> None:
    """The log is read in offset order with no hole below the high watermark (nothing is
    compacted or deleted by retention in a campaign)."""
    for tp, recs in final.records.items():
        hw = final.high_watermarks.get(tp, 0)
        if tp in final.incomplete:
            continue
        missing = [o for o in range(hw) if o not in recs]
        if missing:
            f.offset_gaps += len(missing)
            timeline.violate("offset_gap", f"{tp[0]}-{tp[1]} has no record at {len(missing)} offsets below its "
                             f"high watermark {hw}", topic=tp[0], partition=tp[1], first_missing=missing[:20])


def _check_order(acked: dict[str, Any], f: RecordFigures, timeline: Timeline) -> None:
    runs: dict[tuple[str, Tp], list[tuple[int, int]]] = {}
    for rid, ack in acked.items():
        m = _RID.match(rid)
        if m and ack.offset >= 0:
            runs.setdefault((m.group(1), ack.tp), []).append((int(m.group(2)), ack.offset))
    examples: list[dict[str, Any]] = []
    for (producer, tp), seqs in runs.items():
        seqs.sort()
        for (s1, o1), (s2, o2) in zip(seqs, seqs[1:]):
            if o2 <= o1:
                f.out_of_order += 1
                if len(examples) < 10:
                    examples.append({"producer": producer, "topic": tp[0], "partition": tp[1],
                                     "seq": [s1, s2], "offsets": [o1, o2]})
    f.out_of_order_examples = examples
    if f.out_of_order:  # idempotence keeps send order per partition across retries
        timeline.violate("nonmonotonic_send", f"{f.out_of_order} acknowledged records sit before records sent "
                         "earlier by the same idempotent producer", examples=examples)


def _check_served(ledger: Ledger, final: FinalRead, f: RecordFigures, timeline: Timeline) -> None:
    """Offsets served during the run must hold the same record now."""
    f.divergent_offsets = len(ledger.divergences)
    examples: list[dict[str, Any]] = []
    for tp, seen in ledger.served.items():
        now = final.records.get(tp, {})
        for off, rid in seen.items():
            if off < final.high_watermarks.get(tp, 0) and now.get(off) != rid:
                f.divergent_offsets += 1
                if len(examples) < 20:
                    examples.append({"topic": tp[0], "partition": tp[1], "offset": off, "served": rid,
                                     "now": now.get(off)})
            elif off >= final.high_watermarks.get(tp, 0):
                f.divergent_offsets += 1
                if len(examples) < 20:
                    examples.append({"topic": tp[0], "partition": tp[1], "offset": off, "served": rid,
                                     "now": "beyond the final high watermark"})
    if examples:
        timeline.violate("divergent_offset", f"{len(examples)}+ offsets served during the run now hold other "
                         "records or are gone", examples=examples)


# ---------------------------------------------------------------------------- replicas on disk
def read_segment_records(partition_dir: Path) -> tuple[dict[int, str], list[tuple[int, str]]]:
    """offset → value of every record in a partition directory's .log segments (read-only),
    and the (batch base offset, id) of any id found twice inside one batch."""
    out: dict[int, str] = {}
    in_batch: list[tuple[int, str]] = []
    for batch, records in segment_batches(partition_dir):
        seen: set[str] = set()
        for r in records:
            value = (r.value or b"").decode("utf-8", "replace")
            out[r.offset] = value
            if value in seen:
                in_batch.append((batch.base_offset, value))
            seen.add(value)
    return out, in_batch


def segment_batches(partition_dir: Path) -> Iterator[tuple[Any, list[Any]]]:
    """(header, records) of every complete batch in a partition directory's .log segments
    (read-only), each segment up to its first unreadable batch."""
    from praha.log.records import complete_batches

    for seg in sorted(partition_dir.glob("*.log")):
        try:
            yield from complete_batches(seg.read_bytes())
        except Exception as e:  # noqa: BLE001 - a torn tail after a crash is not ours to judge here
            log.debug("stopped reading %s: %s", seg, e)


def where_stored(final: FinalRead) -> dict[str, list[tuple[Tp, int]]]:
    """id -> every (partition, offset) the final read found it at."""
    where: dict[str, list[tuple[Tp, int]]] = {}
    for tp, recs in final.records.items():
        for off, rid in recs.items():
            where.setdefault(rid, []).append((tp, off))
    return where


def stored_twice(where: dict[str, list[tuple[Tp, int]]]) -> dict[str, list[tuple[Tp, int]]]:
    return {rid: locs for rid, locs in where.items() if len(locs) > 1}


def batch_producers(partition_dir: Path, offsets: set[int]) -> dict[int, dict[str, int]]:
    """offset -> producer id, epoch, base sequence and leader epoch of the batch holding it, from
    a partition directory's .log segments (read-only)."""
    out: dict[int, dict[str, int]] = {}
    wanted = sorted(offsets)
    for h, _ in segment_batches(partition_dir):
        for off in wanted[bisect.bisect_left(wanted, h.base_offset):bisect.bisect_right(wanted, h.last_offset)]:
            out[off] = {"offset": off, "producer_id": h.producer_id, "producer_epoch": h.producer_epoch,
                        "base_sequence": h.base_sequence, "leader_epoch": h.leader_epoch}
    return out


def describe_copies(log_dirs: dict[int, list[Path]], final: FinalRead) -> None:
    """For every id the final read found at two offsets, the batch of each copy from the first
    replica that holds them all, into `final.copies` (call it before any tmpfs dir is
    unmounted). Copies under two producer epochs are the client's resend after an epoch bump,
    which no broker can recognise; the same producer epoch twice would be the leader's fault
    (seed 210)."""
    dups = stored_twice(where_stored(final))
    wanted: dict[Tp, set[int]] = {}
    for locs in dups.values():
        for tp, off in locs:
            wanted.setdefault(tp, set()).add(off)
    found: dict[Tp, dict[int, dict[str, int]]] = {}
    for tp, offsets in wanted.items():
        for dirs in log_dirs.values():
            d, _ = replica_dir(dirs, tp)
            if d is not None and (got := batch_producers(d, offsets)).keys() >= offsets:
                found[tp] = got
                break
    for rid, locs in dups.items():
        if all(off in found.get(tp, {}) for tp, off in locs):
            final.copies[rid] = [found[tp][off] for tp, off in locs]


def saved_log_dirs(root: Path) -> dict[int, list[Path]]:
    """broker -> its log dirs in a saved campaign directory (from each broker's
    server.properties, re-rooted at `root` so a copied campaign reads its own files)."""
    out: dict[int, list[Path]] = {}
    for props in sorted((root / "cluster").glob("broker-*/server.properties")):
        bid = int(props.parent.name.removeprefix("broker-"))
        for line in props.read_text().splitlines():
            if line.startswith("log.dirs="):
                for entry in line.removeprefix("log.dirs=").split(","):
                    parts = Path(entry).parts
                    at = max((i for i, x in enumerate(parts) if x in ("cluster", "disks")), default=None)
                    out.setdefault(bid, []).append(root.joinpath(*parts[at:]) if at is not None else Path(entry))
    return out


def final_from_replicas(log_dirs: dict[int, list[Path]], prefix: str) -> FinalRead:
    """What the final read found, rebuilt from a stopped campaign's segment files: each
    partition of the topics named `prefix`... as its longest replica holds it (the replicas agree below the high
    watermark, which `check_replicas` judged), to re-judge a saved campaign."""
    out = FinalRead()
    for dirs in log_dirs.values():
        for d in dirs:
            for part in d.glob("*-*") if d.is_dir() else ():
                topic, _, num = part.name.rpartition("-")
                if topic.startswith(prefix) and num.isdigit():
                    recs, _ = read_segment_records(part)
                    if len(recs) >= len(out.records.get((topic, int(num)), {})):
                        out.records[(topic, int(num))] = recs
    out.high_watermarks = {tp: max(recs, default=-1) + 1 for tp, recs in out.records.items()}
    return out


def rejudge_copies(root: Path, prefix: str = "chaos-data-") -> dict[str, Any]:
    """Every id a saved campaign stored twice in its data topics, judged again from its
    replicas' files (`praha chaos check DIR`)."""
    dirs = saved_log_dirs(root)
    final = final_from_replicas(dirs, prefix)
    describe_copies(dirs, final)
    dups = stored_twice(where_stored(final))
    v = classify_copies(dups, final.copies)
    return {"stored_twice": len(dups), "duplicated_client_resend": len(v.resent), "duplicated": len(v.same_epoch),
            "unexamined": len(v.unexamined),
            "examples": {kind: {rid: {"stored_at": dups[rid], "batches": final.copies.get(rid)}
                                for rid in ids[:EXAMPLES]}
                         for kind, ids in (("duplicated_client_resend", v.resent), ("duplicated", v.same_epoch),
                                           ("unexamined", v.unexamined)) if ids}}


@dataclass(frozen=True)
class CopiesVerdict:
    """Ids stored twice, each judged by the batches of its copies (in the order given)."""
    resent: list[str]       # copies under two producer epochs: the client renumbered them
    same_epoch: list[str]   # one producer epoch: a resend the leader should have recognised
    unexamined: list[str]   # some copy's batch was in no replica's files


def classify_copies(dups: dict[str, list[tuple[Tp, int]]],
                    copies: dict[str, list[dict[str, Any]]]) -> CopiesVerdict:
    resent: list[str] = []
    same: list[str] = []
    unexamined: list[str] = []
    for rid in dups:
        batches = copies.get(rid)
        if batches is None:
            unexamined.append(rid)
        elif len({(b["producer_id"], b["producer_epoch"]) for b in batches}) > 1:
            resent.append(rid)
        else:
            same.append(rid)
    return CopiesVerdict(resent, same, unexamined)


def replica_dir(log_dirs: list[Path], tp: Tp) -> tuple[Path | None, list[Path]]:
    """The directory of a replica among a broker's log dirs, and every dir that holds one
    (Kafka refuses to start with a partition in two log dirs)."""
    found = [d / f"{tp[0]}-{tp[1]}" for d in log_dirs if (d / f"{tp[0]}-{tp[1]}").is_dir()]
    return (found[0] if found else None), found


def check_replicas(log_dirs: dict[int, list[Path]], assignments: dict[Tp, tuple[int, ...]], final: FinalRead,
                   timeline: Timeline) -> int:
    """Divergent offsets between replicas' segment files below the final high watermark, read
    from every log dir of each broker (call it before any tmpfs dir is unmounted); an id twice
    in one batch is a violation too."""
    divergent = 0
    examples: list[dict[str, Any]] = []
    for tp, replicas in assignments.items():
        hw = final.high_watermarks.get(tp, 0)
        logs = {}
        for r in replicas:
            d, every = replica_dir(log_dirs.get(r, []), tp)
            if len(every) > 1:
                timeline.violate("replica_in_two_log_dirs", f"broker {r} holds {tp[0]}-{tp[1]} in {len(every)} "
                                 "log dirs", broker=r, dirs=[str(x) for x in every])
            logs[r], in_batch = read_segment_records(d) if d is not None else ({}, [])
            if in_batch:
                timeline.violate("duplicated_in_batch", f"broker {r} holds {len(in_batch)} ids twice within one "
                                 f"batch of {tp[0]}-{tp[1]}", broker=r, examples=in_batch[:10])
        for off in range(hw):
            values = {r: lg.get(off) for r, lg in logs.items()}
            if len(set(values.values())) > 1:
                divergent += 1
                if len(examples) < 20:
                    examples.append({"topic": tp[0], "partition": tp[1], "offset": off,
                                     "replicas": {str(k): v for k, v in values.items()}})
    if divergent:
        timeline.violate("replica_divergence", f"{divergent} offsets below the high watermark differ between "
                         "replicas on disk", examples=examples)
    return divergent


# ---------------------------------------------------------------------------- controllers
@dataclass
class ControllerFigures:
    epochs: dict[int, list[int]] = field(default_factory=dict)  # epoch -> controller ids that claimed it
    elections: list[dict[str, Any]] = field(default_factory=list)
    failover_ms: list[float] = field(default_factory=list)
    dual_controller_acceptances: int = 0
    refused_stale: int = 0
    accepted_requests_logged: int = 0


def read_state_change_logs(cluster_root: Path) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for d in sorted(cluster_root.glob("broker-*")):
        try:
            bid = int(d.name.split("-", 1)[1])
        except ValueError:
            continue
        lines = []
        path = d / "data" / "state-change.log"
        if path.exists():
            for raw in path.read_text(errors="replace").splitlines():
                try:
                    lines.append(json.loads(raw))
                except ValueError:
                    continue  # a line torn by SIGKILL
        out[bid] = lines
    return out


def check_controllers(logs: dict[int, list[dict[str, Any]]], timeline: Timeline) -> ControllerFigures:
    f = ControllerFigures()
    for lines in logs.values():
        for ln in lines:
            ev = ln.get("event")
            if ev == "ControllerElected":
                f.epochs.setdefault(ln["controller_epoch"], []).append(ln["controller_id"])
                f.elections.append({"t": round(timeline.t_of_wall(ln["time_ms"]), 3), "controller": ln["controller_id"],
                                    "epoch": ln["controller_epoch"]})
            elif ev == "ControllerFailover":
                f.failover_ms.append(float(ln.get("duration_ms", 0)))
            elif isinstance(ev, str) and ev.endswith("Refused"):
                f.refused_stale += 1
    f.elections.sort(key=lambda e: e["t"])
    for epoch, ids in f.epochs.items():
        if len(set(ids)) > 1:
            f.dual_controller_acceptances += 1
            timeline.violate("two_controllers_same_epoch", f"brokers {sorted(set(ids))} were all elected with "
                             f"epoch {epoch}", epoch=epoch, controllers=sorted(set(ids)))
    owner = {e: ids[0] for e, ids in f.epochs.items()}
    for bid, lines in logs.items():
        highest = -1
        for ln in lines:
            ev = ln.get("event")
            if ev not in ("LeaderAndIsrReceived", "ControllerRequestAccepted"):
                continue
            f.accepted_requests_logged += 1
            epoch = ln.get("controller_epoch", -1)
            t = timeline.t_of_wall(ln.get("time_ms", timeline.start_wall_ms))
            if epoch < highest:
                f.dual_controller_acceptances += 1
                timeline.violate("stale_epoch_accepted", f"broker {bid} accepted a controller request of epoch "
                                 f"{epoch} after one of epoch {highest}", t=t, broker=bid, epoch=epoch,
                                 highest=highest, line=ln)
            highest = max(highest, epoch)
            cid = ln.get("controller_id", -1)
            if ev == "LeaderAndIsrReceived" and epoch in owner and cid >= 0 and cid != owner[epoch]:
                f.dual_controller_acceptances += 1
                timeline.violate("stale_epoch_accepted", f"broker {bid} accepted LeaderAndIsr from broker {cid} "
                                 f"with epoch {epoch}, which belongs to controller {owner[epoch]}", t=t,
                                 broker=bid, epoch=epoch, sender=cid, owner=owner[epoch])
    return f


# ---------------------------------------------------------------------------- consumer group
@dataclass
class GroupFigures:
    members_started: int = 0
    member_kills: int = 0
    rebalances: int = 0  # assignments received, summed over members
    commits_acked: int = 0
    commit_failures: int = 0
    commit_dips: int = 0  # an acknowledged commit below the one acknowledged before it (counted)
    observed: int = 0
    commit_regressions: int = 0  # judged: final OffsetFetch or an observation below an acknowledged commit
    observed_regressions: int = 0  # judged: an observation below an earlier one
    deliveries: int = 0
    delivered: int = 0  # distinct record ids
    undelivered: int = 0  # judged: acknowledged ids never delivered to the group
    caught_up: bool = False
    catch_up_s: float = 0.0
    final_committed: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)


def check_group(group: GroupLedger, ledger: Ledger, timeline: Timeline) -> GroupFigures:
    """Commits never go backwards; every acknowledged record reaches the group at least once."""
    f = GroupFigures(members_started=group.members_started, member_kills=group.members_killed,
                     rebalances=group.assignments, commit_failures=group.commit_failures,
                     deliveries=group.delivered_count, delivered=len(group.delivered),
                     caught_up=group.caught_up, catch_up_s=group.catch_up_s, errors=dict(group.errors),
                     final_committed={f"{t}-{p}": o for (t, p), o in sorted(group.final_committed.items())})
    regressions: list[dict[str, Any]] = []
    backwards: list[dict[str, Any]] = []
    for tp in sorted(set(group.commits) | set(group.observed)):
        commits = sorted(group.commits.get(tp, []), key=lambda c: c.t)
        f.commits_acked += len(commits)
        for a, b in zip(commits, commits[1:]):
            if b.offset < a.offset:
                f.commit_dips += 1
        top = max(commits, key=lambda c: c.offset, default=None)
        final = group.final_committed.get(tp)
        if top is not None and (final is None or final < top.offset):
            f.commit_regressions += 1
            regressions.append({"topic": tp[0], "partition": tp[1], "acknowledged": top.offset,
                                "acknowledged_at_s": top.t, "by": top.member,
                                "final_offset_fetch": final if final is not None else "no answer"})
        highest_seen: tuple[int, str, float] = (-1, "", 0.0)
        for o in sorted(group.observed.get(tp, []), key=lambda o: o.t):
            f.observed += 1
            before = [c for c in commits if c.t < o.t]
            best = max(before, key=lambda c: c.offset, default=None)
            if best is not None and o.offset < best.offset:
                f.commit_regressions += 1
                regressions.append({"topic": tp[0], "partition": tp[1], "acknowledged": best.offset,
                                    "acknowledged_at_s": best.t, "by": best.member, "observed": o.offset,
                                    "observed_at_s": o.t, "observed_by": o.member})
            if o.offset < highest_seen[0]:
                f.observed_regressions += 1
                backwards.append({"topic": tp[0], "partition": tp[1], "observed": o.offset, "at_s": o.t,
                                  "by": o.member, "earlier": highest_seen[0], "earlier_by": highest_seen[1],
                                  "earlier_at_s": highest_seen[2]})
            if o.offset >= highest_seen[0]:
                highest_seen = (o.offset, o.member, o.t)
    if regressions:
        first = min(regressions, key=lambda r: r.get("observed_at_s", r["acknowledged_at_s"]))
        timeline.violate("group_commit_regressed",
                         f"{len(regressions)} times the group's committed offset was found below an acknowledged "
                         f"commit; first: {first['topic']}-{first['partition']} acknowledged {first['acknowledged']}, "
                         f"then {first.get('observed', first.get('final_offset_fetch'))}",
                         t=first.get("observed_at_s", timeline.now()), examples=regressions[:20])
    if backwards:
        first = backwards[0]
        timeline.violate("group_observed_regressed",
                         f"{len(backwards)} times a member was told a lower committed offset than one told before; "
                         f"first: {first['topic']}-{first['partition']} {first['earlier']} then {first['observed']}",
                         t=first["at_s"], examples=backwards[:20])
    acked = ledger.snapshot_acked()
    missing = [(rid, a) for rid, a in acked.items() if rid not in group.delivered]
    f.undelivered = len(missing)
    if missing:
        missing.sort(key=lambda m: m[1].t)
        examples = [{"id": rid, "topic": a.tp[0], "partition": a.tp[1], "offset": a.offset, "acked_at_s": round(a.t, 3)}
                    for rid, a in missing[:20]]
        timeline.violate("acked_record_not_delivered",
                         f"{len(missing)} acknowledged records were never delivered to the consumer group "
                         f"(caught up: {group.caught_up})", t=missing[0][1].t, examples=examples)
    return f


# ---------------------------------------------------------------------------- health
@dataclass
class Health:
    healthy: bool
    waited_s: float
    problems: list[str]


def health_problems(env: ChaosEnvironment, expected_brokers: set[int], deleted_topics: list[str]) -> list[str]:
    from praha.admin.status import topics_status

    store = env.store
    problems: list[str] = []
    live = env.live_broker_ids()
    if live != expected_brokers:
        problems.append(f"brokers not registered: {sorted(expected_brokers - live)}")
    if env.controller_id() not in live:
        problems.append("no live controller")
    for name, info in topics_status(store, live, problems).items():
        for p in info["partitions"]:
            where = f"{name}-{p['partition']}"
            if p["offline"]:
                problems.append(f"partition {where} has no live leader")
            elif set(p["isr"]) != set(p["replicas"]):
                problems.append(f"partition {where} ISR {p['isr']} != replicas {p['replicas']}")
            if p["adding_replicas"] or p["removing_replicas"]:
                problems.append(f"partition {where} still reassigning")
    marked = store.get_children(zn.DELETE_TOPICS_PATH) or []
    if marked:
        problems.append(f"deletion stuck: topics still marked {sorted(marked)}")
    remaining = set(deleted_topics) & set(store.get_all_topics())
    if remaining:
        problems.append(f"deletion stuck: topics still exist {sorted(remaining)}")
    if store.exists(zn.REASSIGN_PARTITIONS_PATH) is not None:
        problems.append("reassignment stuck: /admin/reassign_partitions still exists")
    if store.exists(zn.PREFERRED_REPLICA_ELECTION_PATH) is not None:
        problems.append("preferred election stuck: /admin/preferred_replica_election still exists")
    return problems


def wait_healthy(env: ChaosEnvironment, deleted_topics: list[str], timeout: float, timeline: Timeline) -> Health:
    expected = set(env.brokers())
    t0 = time.monotonic()
    problems: list[str] = ["not checked"]
    while time.monotonic() - t0 < timeout:
        try:
            problems = health_problems(env, expected, deleted_topics)
        except Exception as e:  # noqa: BLE001
            problems = [f"status unreadable: {e}"]
        if not problems:
            break
        time.sleep(0.5)
    waited = round(time.monotonic() - t0, 2)
    if problems:
        kinds = {
            "deletion stuck": "deletion_stuck", "reassign": "reassignment_stuck",
            "preferred election": "election_stuck",
        }
        for p in problems:
            inv = next((v for k, v in kinds.items() if k in p), "not_healed")
            timeline.violate(inv, f"after {waited:.0f}s of healing: {p}")
    return Health(not problems, waited, problems)


# ---------------------------------------------------------------------------- memory
@dataclass
class MemoryFigures:
    peak_mb: dict[str, float] = field(default_factory=dict)
    growth_mb: dict[str, float] = field(default_factory=dict)


def check_memory(incarnations: dict[tuple[int, int], Incarnation], bound_mb: float, growth_bound_mb: float,
                 timeline: Timeline, warmup_s: float = 60.0) -> MemoryFigures:
    f = MemoryFigures()
    for (bid, pid), inc in incarnations.items():
        if not inc.rss_mb:
            continue
        key = f"broker {bid} pid {pid}"
        peak_t, peak = max(inc.rss_mb, key=lambda s: s[1])
        f.peak_mb[key] = peak
        if peak > bound_mb:
            timeline.violate("memory_bound", f"{key} reached {peak:.0f} MB RSS (bound {bound_mb:.0f} MB)",
                             t=peak_t, broker=bid, pid=pid, rss_mb=peak)
        settled = [s for s in inc.rss_mb if s[0] - inc.first_t >= warmup_s]
        if len(settled) >= 2:
            growth = settled[-1][1] - settled[0][1]
            f.growth_mb[key] = round(growth, 1)
            if growth > growth_bound_mb:
                timeline.violate("memory_growth", f"{key} grew {growth:.0f} MB after its first "
                                 f"{warmup_s:.0f}s (bound {growth_bound_mb:.0f} MB)", broker=bid, pid=pid)
    return f
