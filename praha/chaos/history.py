"""A queue workload's history and the checker of Jepsen's anomaly set for Kafka (pure).

A history is JSON lines, one per completed operation (in completion order):

  {"op": "txn", "process": "p0", "type": "ok"|"fail"|"info", "txn": "tid"|null,
   "invoke_t": 1.0, "commit_t": 1.2, "t": 1.3,     # commit_t: when the commit was requested
   "sends": [{"partition": "t-0", "value": "p0-1", "offset": 5|null}, ...],
   "reads": ["c0-7", ...]}                 # what a consume-transform-produce txn consumed
  {"op": "poll", "process": "c0", "type": "ok", "isolation": "read_committed"|"read_uncommitted",
   "t": 2.0, "records": {"t-0": [[offset, value], ...]}}
  {"op": "assign", "process": "c0", "t": 2.1}          # assign/subscribe/rebalance: positions reset
  {"op": "commit", "process": "c0", "group": "g", "type": "ok", "t": 2.2, "offsets": {"t-0": 12}}
  {"op": "reset", "process": "c0", "partition": "t-0", "from": 13, "to": 0, "t": 2.3}

A `reset` is a consumer's own rewind: its fetch at `from` was answered OFFSET_OUT_OF_RANGE
and the client moved to `to` (auto.offset.reset), as Kafka's clients do when a stale leader
whose log ends below `from` answers. It excuses one rewind of that process on that
partition, to `to` and no lower (counted as `offset_resets`, not as an anomaly); a reset at
or below an offset the process had already read excuses nothing.

A plain (idempotent) send is a txn op with `txn` null and one send. `ok` is acknowledged
(committed, for a transaction), `fail` is known not to have happened (aborted), `info` is
indeterminate: its values may appear once or never.

Anomalies (name → what it means):
  lost_write            acknowledged at an offset below the highest offset polled on that
                        partition, never polled by anyone
  duplicate             one value at two offsets
  inconsistent_offsets  two values at one offset
  aborted_read          (G1a) a read_committed poll returned a value of a failed send or an
                        aborted transaction
  torn_transaction      a poll read across the offset of a committed transaction's write on a
                        partition without returning it, while returning another of its writes
  poll_skip             a process's poll began after offsets it had not read yet, though
                        visible records were there (rebalances reset the position)
  nonmonotonic_poll     a process's poll returned an offset at or below one it had read
  nonmonotonic_send     a process's acknowledged sends to one partition went back in offset
  committed_offset_regression  a group's acknowledged commit for a partition below an earlier one
  precommitted_read     a read_committed poll returned a transaction's value before that
                        transaction's commit was even requested
  g1c                   a cycle of write-write and write-read dependencies between committed
                        transactions with at least one write-read edge (G0, write-write
                        cycles only, is allowed as Kafka allows it and counted as `g0`)
"""
from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ANOMALIES = ("lost_write", "duplicate", "inconsistent_offsets", "aborted_read", "torn_transaction", "poll_skip",
             "nonmonotonic_poll", "nonmonotonic_send", "committed_offset_regression", "precommitted_read", "g1c")
#: examples kept per anomaly
EXAMPLES = 10


@dataclass
class Verdict:
    counts: dict[str, int] = field(default_factory=lambda: {a: 0 for a in ANOMALIES})
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {a: [] for a in ANOMALIES})
    g0_cycles: int = 0
    ops: int = 0
    #: consumers' own rewinds after OFFSET_OUT_OF_RANGE (see `reset` above), with examples
    offset_resets: int = 0
    reset_examples: list[dict[str, Any]] = field(default_factory=list)

    def add(self, anomaly: str, example: dict[str, Any]) -> None:
        self.counts[anomaly] += 1
        if len(self.examples[anomaly]) < EXAMPLES:
            self.examples[anomaly].append(example)

    @property
    def clean(self) -> bool:
        return not any(self.counts.values())

    def to_json(self) -> dict[str, Any]:
        return {"ops": self.ops, "anomalies": self.counts, "g0_cycles": self.g0_cycles,
                "offset_resets": self.offset_resets, "reset_examples": self.reset_examples,
                "examples": {k: v for k, v in self.examples.items() if v}}


def load(path: Path) -> list[dict[str, Any]]:
    """The history's operations; a torn last line (a crash mid-write) is skipped."""
    ops = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                ops.append(json.loads(line))
            except ValueError:
                continue
    return ops


def check(ops: Iterable[dict[str, Any]]) -> Verdict:
    ops = list(ops)
    v = Verdict(ops=len(ops))
    txns = [o for o in ops if o.get("op") == "txn"]
    polls = [o for o in ops if o.get("op") == "poll" and o.get("type", "ok") == "ok"]
    writer: dict[str, dict[str, Any]] = {}  # value → its txn op
    for o in txns:
        for s in o.get("sends", []):
            writer[s["value"]] = o
    # every (partition, offset) → values, from acknowledgements and polls
    at: dict[tuple[str, int], set[str]] = defaultdict(set)
    where: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for o in txns:
        if o["type"] == "ok":
            for s in o.get("sends", []):
                if s.get("offset") is not None:
                    at[(s["partition"], s["offset"])].add(s["value"])
                    where[s["value"]].add((s["partition"], s["offset"]))
    polled: set[str] = set()
    max_polled: dict[str, int] = {}
    for o in polls:
        for part, recs in o.get("records", {}).items():
            for off, value in recs:
                at[(part, off)].add(value)
                where[value].add((part, off))
                polled.add(value)
                max_polled[part] = max(max_polled.get(part, -1), off)
    for (part, off), values in sorted(at.items()):
        if len(values) > 1:
            v.add("inconsistent_offsets", {"partition": part, "offset": off, "values": sorted(values)})
    for value, places in sorted(where.items()):
        if len(places) > 1:
            v.add("duplicate", {"value": value, "at": sorted([list(p) for p in places])})
    for o in txns:
        if o["type"] != "ok":
            continue
        for s in o.get("sends", []):
            off = s.get("offset")
            if off is not None and off < max_polled.get(s["partition"], -1) and s["value"] not in polled:
                v.add("lost_write", {"value": s["value"], "partition": s["partition"], "offset": off,
                                     "max_polled": max_polled[s["partition"]]})
    _reads(polls, writer, v)
    _positions(ops, at, writer, v)
    _sends(txns, v)
    _commits(ops, v)
    _cycles(txns, writer, v)
    return v


def _visible(value: str, writer: dict[str, dict[str, Any]], committed_reads: set[str]) -> bool:
    """Must a read_committed consumer see this value? Yes if its transaction committed; an
    indeterminate one only if some read_committed poll showed it committed. A value no
    operation of the history wrote is indeterminate too: its writer never completed the
    operation (it hung or was killed mid-transaction; seed 203)."""
    o = writer.get(value)
    if o is not None and o["type"] == "ok":
        return True
    return (o is None or o["type"] == "info") and value in committed_reads


def _reads(polls: list[dict[str, Any]], writer: dict[str, dict[str, Any]], v: Verdict) -> None:
    for p in polls:
        committed_only = p.get("isolation") == "read_committed"
        seen = {value for recs in p.get("records", {}).values() for _, value in recs}
        ranges = {part: (min(o for o, _ in recs), max(o for o, _ in recs))
                  for part, recs in p.get("records", {}).items() if recs}
        for part, recs in p.get("records", {}).items():
            for off, value in recs:
                w = writer.get(value)
                if w is None or not committed_only:
                    continue
                if w["type"] == "fail":
                    v.add("aborted_read", {"process": p["process"], "partition": part, "offset": off, "value": value,
                                           "txn": w.get("txn")})
                if w.get("txn") and w.get("commit_t") is not None and p["t"] < w["commit_t"]:
                    v.add("precommitted_read", {"process": p["process"], "value": value, "polled_t": p["t"],
                                                "txn": w["txn"], "commit_requested_t": w["commit_t"]})
        if not committed_only:
            continue
        torn = set()
        for value in seen:
            w = writer.get(value)
            if w is None or not w.get("txn") or w["type"] != "ok" or id(w) in torn:
                continue
            for s in w.get("sends", []):
                r = ranges.get(s["partition"])
                off = s.get("offset")
                if r is not None and off is not None and r[0] <= off <= r[1] and s["value"] not in seen:
                    torn.add(id(w))
                    v.add("torn_transaction", {"process": p["process"], "txn": w["txn"], "seen": value,
                                               "missing": s["value"], "partition": s["partition"], "offset": off})
                    break


def _positions(ops: list[dict[str, Any]], at: dict[tuple[str, int], set[str]],
               writer: dict[str, dict[str, Any]], v: Verdict) -> None:
    """Per process and partition, across polls: no going back, no skipping visible records.
    (The offsets between two polled ones are found by bisection: scanning the partition's
    offsets for each record polled took 80 s of a 40-fault campaign's end.)"""
    offsets: dict[str, list[int]] = defaultdict(list)
    for (part, off) in sorted(at):
        offsets[part].append(off)
    committed_reads = {value for o in ops if o.get("op") == "poll" and o.get("isolation") == "read_committed"
                       for recs in o.get("records", {}).values() for _, value in recs}
    last: dict[tuple[str, str], int] = {}
    for o in ops:
        proc = o.get("process", "")
        if o.get("op") == "assign":
            for key in [k for k in last if k[0] == proc]:
                del last[key]
            continue
        if o.get("op") == "reset":
            _reset(o, last, v)
            continue
        if o.get("op") != "poll" or o.get("type", "ok") != "ok":
            continue
        committed_only = o.get("isolation") == "read_committed"
        for part, recs in o.get("records", {}).items():
            prev = last.get((proc, part))
            for off, _value in recs:
                if prev is not None and off <= prev:
                    v.add("nonmonotonic_poll", {"process": proc, "partition": part, "after": prev, "got": off})
                elif prev is not None:
                    known = offsets[part]  # sorted: only the offsets strictly between, found by bisection
                    skipped = [x for x in known[bisect_right(known, prev):bisect_left(known, off)] if (
                        not committed_only or all(_visible(val, writer, committed_reads) for val in at[(part, x)]))]
                    if skipped:
                        v.add("poll_skip", {"process": proc, "partition": part, "after": prev, "got": off,
                                            "skipped": skipped[:10]})
                prev = off if prev is None else max(prev, off)
            if prev is not None:
                last[(proc, part)] = prev


def _reset(o: dict[str, Any], last: dict[tuple[str, str], int], v: Verdict) -> None:
    """A client's rewind after OFFSET_OUT_OF_RANGE: its next poll of the partition starts at
    `to` (nothing below it, nothing visible skipped from it); one refused at or below what
    the process had read is no out-of-range answer a correct broker gives, and excuses nothing."""
    key = (o.get("process", ""), o.get("partition", ""))
    frm, to = o.get("from"), o.get("to")
    if not isinstance(frm, int) or not isinstance(to, int) or (key in last and frm <= last[key]):
        return
    last[key] = min(to - 1, last.get(key, to - 1))  # a move forward excuses no skip
    v.offset_resets += 1
    if len(v.reset_examples) < EXAMPLES:
        v.reset_examples.append({"process": key[0], "partition": key[1], "from": frm, "to": to})


def _sends(txns: list[dict[str, Any]], v: Verdict) -> None:
    last: dict[tuple[str, str], int] = {}
    for o in txns:
        if o["type"] != "ok":
            continue
        for s in o.get("sends", []):
            off = s.get("offset")
            if off is None:
                continue
            key = (o["process"], s["partition"])
            if key in last and off <= last[key]:
                v.add("nonmonotonic_send", {"process": o["process"], "partition": s["partition"], "after": last[key],
                                            "got": off, "value": s["value"]})
            last[key] = max(off, last.get(key, -1))


def _commits(ops: list[dict[str, Any]], v: Verdict) -> None:
    top: dict[tuple[str, str], int] = {}
    for o in ops:
        if o.get("op") != "commit" or o.get("type") != "ok":
            continue
        for part, off in o.get("offsets", {}).items():
            key = (o["group"], part)
            if key in top and off < top[key]:
                v.add("committed_offset_regression", {"group": o["group"], "partition": part, "before": top[key],
                                                      "now": off, "process": o.get("process")})
            top[key] = max(off, top.get(key, -1))


def _cycles(txns: list[dict[str, Any]], writer: dict[str, dict[str, Any]], v: Verdict) -> None:
    """ww edges: consecutive committed writes on a partition by different transactions;
    wr edges: a transaction that consumed a value another wrote. Cycles per strongly
    connected component (Tarjan); one with a wr edge is G1c."""
    committed = [o for o in txns if o["type"] == "ok"]
    index = {id(o): i for i, o in enumerate(committed)}
    edges: dict[int, dict[int, str]] = defaultdict(dict)
    by_part: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for i, o in enumerate(committed):
        for s in o.get("sends", []):
            if s.get("offset") is not None:
                by_part[s["partition"]].append((s["offset"], i))
    for writes in by_part.values():
        writes.sort()
        for (_, a), (_, b) in zip(writes, writes[1:]):
            if a != b:
                edges[a].setdefault(b, "ww")
    for i, o in enumerate(committed):
        for value in o.get("reads", []):
            w = writer.get(value)
            if w is not None and id(w) in index and index[id(w)] != i:
                edges[index[id(w)]][i] = "wr"
    for comp in _sccs(len(committed), edges):
        if len(comp) < 2:
            continue
        members = set(comp)
        kinds = {k for a in comp for b, k in edges[a].items() if b in members}
        example = {"txns": [committed[i].get("txn") or committed[i].get("process") for i in sorted(comp)][:10],
                   "edges": sorted(kinds)}
        if "wr" in kinds:
            v.add("g1c", example)
        else:
            v.g0_cycles += 1


def _sccs(n: int, edges: dict[int, dict[int, str]]) -> list[list[int]]:
    """Tarjan's strongly connected components, iteratively (histories are long)."""
    counter = 0
    low: dict[int, int] = {}
    num: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    out: list[list[int]] = []
    for root in range(n):
        if root in num:
            continue
        work = [(root, iter(edges[root]))]
        num[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in num:
                    num[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(edges[nxt])))
                elif nxt in on:
                    low[node] = min(low[node], num[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == num[node]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == node:
                        break
                out.append(comp)
    return out
