"""Browsing, filtering and producing messages.

A scan reads a bounded range of each partition with a plain consumer (assign, no group:
nothing is committed), evaluates the filter on the console's side and reports progress as
it goes. `ScanRequest.parse` turns a page's query string into a request, or into a clear
error before anything is read; `matches` and `render_value` are pure.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from praha.errors import ErrorCode, PrahaError

#: the most records one scan reads (a page can ask for fewer)
MAX_SCAN = 5_000_000
DEFAULT_SCAN = 100_000
MAX_LIMIT = 1000
#: a value longer than this is cut on the page
SHOWN_BYTES = 8192


class ScanInputError(PrahaError):
    code = ErrorCode.INVALID_REQUEST


class Format(Enum):
    TEXT = "text"
    JSON = "json"
    HEX = "hex"
    SCHEMA = "schema"


class StartAt(Enum):
    """Where a scan begins: the partitions' start or end, an offset, a time."""

    OLDEST = "oldest"
    NEWEST = "newest"
    OFFSET = "offset"
    TIME = "time"


@dataclass(frozen=True)
class ScanRequest:
    topic: str
    partition: int | None = None
    start: StartAt = StartAt.NEWEST
    offset: int | None = None
    time_ms: int | None = None
    newest_first: bool = True
    key: str = ""
    value: str = ""
    header: str = ""
    since_ms: int | None = None
    until_ms: int | None = None
    limit: int = 50
    max_scan: int = DEFAULT_SCAN
    fmt: Format = Format.TEXT

    @property
    def filtered(self) -> bool:
        return bool(self.key or self.value or self.header or self.since_ms is not None or self.until_ms is not None)

    @classmethod
    def parse(cls, topic: str, q: Mapping[str, str]) -> ScanRequest:
        """From a page's query parameters; bad input raises ScanInputError naming the field."""
        def integer(name: str, lo: int, hi: int | None = None) -> int | None:
            text = (q.get(name) or "").strip()
            if not text:
                return None
            try:
                v = int(text)
            except ValueError:
                raise ScanInputError(f"{name} must be a whole number, got {text!r}") from None
            if v < lo or (hi is not None and v > hi):
                raise ScanInputError(f"{name} must be between {lo} and {hi if hi is not None else 'any'}, got {v}")
            return v

        def moment(name: str) -> int | None:
            text = (q.get(name) or "").strip()
            return None if not text else parse_time_ms(text, name)

        try:
            start = StartAt(q.get("start") or "newest")
            fmt = Format(q.get("format") or "text")
        except ValueError as e:
            raise ScanInputError(str(e)) from None
        order = q.get("order") or ("newest" if start is StartAt.NEWEST else "oldest")
        if order not in ("newest", "oldest"):
            raise ScanInputError(f"order is newest or oldest, got {order!r}")
        req = cls(topic, integer("partition", 0), start, integer("offset", 0), moment("time"), order == "newest",
                  q.get("key") or "", q.get("value") or "", q.get("header") or "", moment("since"), moment("until"),
                  integer("limit", 1, MAX_LIMIT) or 50, integer("max_scan", 1, MAX_SCAN) or DEFAULT_SCAN, fmt)
        if start is StartAt.OFFSET and req.offset is None:
            raise ScanInputError("start at an offset needs the offset")
        if start is StartAt.TIME and req.time_ms is None:
            raise ScanInputError("start at a time needs the time")
        if req.since_ms is not None and req.until_ms is not None and req.since_ms > req.until_ms:
            raise ScanInputError("the time range ends before it begins")
        return req


def parse_time_ms(text: str, name: str = "time") -> int:
    """Milliseconds since the epoch, or an ISO date-time (UTC unless it names a zone)."""
    if text.isdigit():
        return int(text)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ScanInputError(f"{name} must be a date-time like 2024-05-01T12:00:00 or milliseconds, "
                             f"got {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


# ------------------------------------------------------------------------------ the filter
def header_matches(spec: str, headers: list[tuple[str, bytes | None]] | None) -> bool:
    """`name` (present) or `name=text` (present with a value containing text)."""
    if not spec:
        return True
    name, eq, text = spec.partition("=")
    for k, v in headers or ():
        if k == name and (not eq or (v is not None and text.encode() in v)):
            return True
    return False


def matches(req: ScanRequest, key: bytes | None, value: bytes | None, timestamp: int,
            headers: list[tuple[str, bytes | None]] | None) -> bool:
    if req.since_ms is not None and timestamp < req.since_ms:
        return False
    if req.until_ms is not None and timestamp > req.until_ms:
        return False
    if req.key and (key is None or req.key.encode() not in key):
        return False
    if req.value and (value is None or req.value.encode() not in value):
        return False
    return header_matches(req.header, headers)


# ------------------------------------------------------------------------------ showing a value
def render_value(data: bytes | None, fmt: Format, decode_schema: Callable[[bytes], str] | None = None) -> str:
    if data is None:
        return "(null)"
    shown = data[:SHOWN_BYTES]
    cut = "" if len(data) <= SHOWN_BYTES else f"\n… {len(data) - SHOWN_BYTES} more bytes"
    if fmt is Format.HEX:
        return shown.hex(" ") + cut
    if fmt is Format.SCHEMA:
        if decode_schema is None:
            return "(no schema registry) " + shown.decode("utf-8", "replace") + cut
        return decode_schema(data)
    text = shown.decode("utf-8", "replace")
    if fmt is Format.JSON:
        try:
            return json.dumps(json.loads(data), indent=2, ensure_ascii=False)
        except ValueError:
            return text + cut + "\n(not JSON)"
    return text + cut


# ------------------------------------------------------------------------------ the scan
@dataclass
class Found:
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


@dataclass
class ScanProgress:
    scanned: int = 0
    bytes: int = 0
    total: int = 0
    matched: int = 0
    done: bool = False
    stopped_by: str = ""
    elapsed_s: float = 0.0
    results: list[Found] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"scanned": self.scanned, "total": self.total, "matched": self.matched, "bytes": self.bytes,
                "done": self.done, "stopped_by": self.stopped_by, "elapsed_s": round(self.elapsed_s, 2)}


def plan_ranges(req: ScanRequest, bounds: Mapping[int, tuple[int, int]],
                start_offsets: Mapping[int, int | None] | None = None) -> dict[int, tuple[int, int]]:
    """Each partition's [from, to) to read: `bounds` are (log start, high watermark) at the
    scan's start; `start_offsets` the offsets found for a time. The newest first: the last
    `max_scan / partitions` records before the end (after the start, if one is given)."""
    out: dict[int, tuple[int, int]] = {}
    share = max(1, req.max_scan // max(1, len(bounds)))
    for p, (lo, hi) in bounds.items():
        begin = lo
        if req.start is StartAt.OFFSET and req.offset is not None:
            begin = min(max(lo, req.offset), hi)
        elif req.start is StartAt.TIME:
            found = (start_offsets or {}).get(p)
            begin = hi if found is None or found < 0 else max(lo, found)
        elif req.start is StartAt.NEWEST:
            begin = max(lo, hi - share)
        if req.newest_first:
            begin = max(begin, hi - share)
        else:
            hi = min(hi, begin + share)
        if begin < hi:
            out[p] = (begin, hi)
    return out


def scan(config: Mapping[str, str], req: ScanRequest, ranges: Mapping[int, tuple[int, int]],
         progress: Callable[[ScanProgress], None] | None = None, should_stop: Callable[[], bool] = lambda: False,
         every_s: float = 0.25) -> ScanProgress:
    """Read `ranges` with an assign-only consumer, keep what matches. Oldest first stops at
    `limit` matches; newest first reads the whole window and keeps the newest `limit`."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    state = ScanProgress(total=sum(hi - lo for lo, hi in ranges.values()))
    t0 = time.monotonic()
    if not ranges:
        state.done, state.stopped_by = True, "nothing to read"
        return state
    consumer = Consumer({**config, "group.id": "praha-console-scan", "enable.auto.commit": "false",
                         "enable.partition.eof": "true", "fetch.max.bytes": str(64 << 20),
                         "max.partition.fetch.bytes": str(16 << 20), "queued.max.messages.kbytes": str(256 << 10),
                         "client.id": "praha-console"})
    consumer.assign([TopicPartition(req.topic, p, lo) for p, (lo, _hi) in ranges.items()])
    open_ends = {p: hi for p, (_lo, hi) in ranges.items()}
    keep: list[Found] = []
    check = req.filtered
    # a cheap first look at the key and value (most records fail it) before `matches`
    # asks for the timestamp and headers: the loop runs once per record
    key_part, value_part = req.key.encode(), req.value.encode()
    last_report = 0.0
    scanned = size = matched = 0
    eof = KafkaError._PARTITION_EOF
    try:
        while open_ends and scanned < req.max_scan and not should_stop():
            batch: list[Any] = consumer.consume(num_messages=1000, timeout=0.5)
            for m in batch:
                err = m.error()
                p = m.partition()
                if err is not None:
                    if err.code() == eof:
                        open_ends.pop(p, None)
                        continue
                    raise PrahaError(f"reading {req.topic}-{p}: {err.str()}")
                end = open_ends.get(p)
                off = m.offset()
                if end is None or off >= end:
                    if end is not None:
                        open_ends.pop(p, None)
                    continue
                scanned += 1
                value = m.value()
                key = m.key()
                if value:
                    size += len(value)
                if key:
                    size += len(key)
                if off + 1 >= end:
                    open_ends.pop(p, None)
                if check:
                    if value_part and (value is None or value_part not in value):
                        continue
                    if key_part and (key is None or key_part not in key):
                        continue
                    if not matches(req, key, value, m.timestamp()[1], m.headers()):
                        continue
                matched += 1
                keep.append(Found(p, off, m.timestamp()[1], key, value, m.headers() or []))
            if not req.newest_first and matched >= req.limit:
                state.stopped_by = f"found {req.limit} matches"
                break
            now = time.monotonic()
            if progress is not None and now - last_report >= every_s:
                last_report = now
                state.scanned, state.bytes, state.matched, state.elapsed_s = scanned, size, matched, now - t0
                progress(state)
    finally:
        consumer.close()
    state.scanned, state.bytes, state.matched = scanned, size, matched
    if not state.stopped_by:
        state.stopped_by = "scan limit reached" if state.scanned >= req.max_scan else "end of the range"
    keep.sort(key=lambda f: (f.timestamp, f.partition, f.offset), reverse=req.newest_first)
    state.results = keep[:req.limit]
    state.done = True
    state.elapsed_s = time.monotonic() - t0
    return state


def parse_headers(text: str) -> list[tuple[str, bytes]]:
    """`name=value` per line (the page's produce form)."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name, eq, value = line.partition("=")
        if not eq or not name.strip():
            raise ScanInputError(f"a header is name=value, got {line!r}")
        out.append((name.strip(), value.encode()))
    return out


def produce(config: Mapping[str, str], topic: str, key: str | None, value: str, partition: int | None,
            headers: list[tuple[str, bytes]]) -> tuple[int, int]:
    """One record, acks=all; its (partition, offset)."""
    from confluent_kafka import Producer

    producer = Producer({**config, "acks": "all", "client.id": "praha-console"})
    out: list[Any] = []
    kwargs: dict[str, Any] = {"value": value.encode(), "headers": headers or None,
                              "on_delivery": lambda err, msg: out.append((err, msg))}
    if key:
        kwargs["key"] = key.encode()
    if partition is not None:
        kwargs["partition"] = partition
    producer.produce(topic, **kwargs)
    producer.flush(30)
    if not out:
        raise PrahaError("the record was not acknowledged within 30 s")
    err, msg = out[0]
    if err is not None:
        raise PrahaError(f"{err.name()}: {err.str()}")
    return msg.partition(), msg.offset()


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
