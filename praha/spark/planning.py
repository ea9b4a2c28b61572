"""Planning on the driver: which partitions, which offsets, and how to cut them into tasks.

The functions here turn options into exact `{TopicPartition: offset}` maps with the
cluster's help (metadata, ListOffsets), and offset maps into Spark input partitions.
The arithmetic parts (`split_ranges`, `rate_limit`) are pure and exact: the pieces of
a range always cover it with no gap and no overlap, and a rate limit admits exactly
`min(limit, available)` offsets.
"""
from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass

from praha.common import TopicPartition
from praha.spark.kafka import ClusterClient, DataLossError, data_loss_message
from praha.spark.options import EARLIEST, LATEST, OffsetSpec, OptionError, ReadOptions, Subscription
from praha.spark.pool import CLIENTS

log = logging.getLogger(__name__)

Offsets = dict[TopicPartition, int]


@dataclass(frozen=True, slots=True)
class OffsetRange:
    tp: TopicPartition
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def client_for(opts: ReadOptions) -> ClusterClient:
    """A wire client with the read's settings: isolation level, client id, TLS and SASL."""
    return ClusterClient(opts.bootstrap, client_id=opts.client_id, read_committed=opts.read_committed,
                         security=opts.security.client_security())


def pooled_client(opts: ReadOptions) -> AbstractContextManager[ClusterClient]:
    """`client_for`'s client lent from this process's pool (`praha.spark.pool`): a task of a
    reused Python worker reads with the connections and metadata the last task left open."""
    key = (opts.bootstrap, opts.client_id, opts.read_committed, opts.security)
    return CLIENTS.borrow(key, lambda: client_for(opts))


# ------------------------------------------------------------------------------ partitions
def check_named_topics(client: ClusterClient, opts: ReadOptions) -> list[str]:
    """Topics named by assign/subscribe that the cluster does not have. With failOnDataLoss
    (the default) that is an error at analysis time; without it they are read once they exist."""
    named = opts.subscription.named_topics
    if not named:
        return []
    md = client.refresh(list(named))
    missing = sorted(t for t in named if not md.partitions_of(t))
    if missing and opts.fail_on_data_loss:
        raise OptionError(opts.subscription.kind,
                          f"unknown topic(s) {', '.join(missing)} in the cluster at "
                          f"{','.join(f'{h}:{p}' for h, p in opts.bootstrap)}; create them first, or set "
                          "failOnDataLoss=false to read them once they exist")
    if opts.subscription.kind == "assign":
        bad = sorted(str(tp) for tp in opts.subscription.assigned
                     if tp.topic not in missing and tp not in md.partitions)
        if bad and opts.fail_on_data_loss:
            raise OptionError("assign", f"partitions that do not exist: {', '.join(bad)}")
    return missing


def current_partitions(client: ClusterClient, sub: Subscription) -> list[TopicPartition]:
    """The partitions the subscription covers right now (fresh metadata)."""
    if sub.kind == "subscribePattern":
        md = client.refresh(None)
        return sorted(tp for tp in md.partitions if sub.matches(tp.topic))
    md = client.refresh(list(sub.named_topics))
    if sub.kind == "assign":
        return [tp for tp in sub.assigned if tp in md.partitions]
    return sorted(tp for tp in md.partitions if tp.topic in sub.topics)


# ------------------------------------------------------------------------------ offsets
def resolve(client: ClusterClient, tps: list[TopicPartition], spec: OffsetSpec, opts: ReadOptions,
            is_start: bool) -> Offsets:
    """Exact offsets for `tps` from a starting or ending spec (sentinels resolved)."""
    retries, backoff = opts.offset_retries, opts.offset_retry_interval_ms
    if spec.kind in ("earliest", "latest"):
        ts = EARLIEST if spec.kind == "earliest" else LATEST
        return client.list_offsets({tp: ts for tp in tps}, retries, backoff)
    if spec.kind == "offsets":
        missing = sorted(str(tp) for tp in tps if tp not in spec.offsets)
        extra = sorted(str(tp) for tp in spec.offsets if tp not in set(tps))
        if missing or extra:
            raise OptionError(spec.option, "must give an offset for every partition read (use -2 for earliest, "
                              "-1 for latest)" + (f"; missing: {', '.join(missing)}" if missing else "")
                              + (f"; not in the subscription or the cluster: {', '.join(extra)}" if extra else ""))
        out = {tp: o for tp, o in spec.offsets.items() if o >= 0}
        sentinel = {tp: o for tp, o in spec.offsets.items() if o < 0}
        if sentinel:
            out.update(client.list_offsets(sentinel, retries, backoff))
        return out
    if spec.kind == "timestamps":
        missing = sorted(str(tp) for tp in tps if tp not in spec.offsets)
        if missing:
            raise OptionError(spec.option,
                              f"must give a timestamp for every partition read; missing: {', '.join(missing)}")
        stamps = {tp: spec.offsets[tp] for tp in tps}
    else:
        stamps = {tp: spec.timestamp for tp in tps}
    found = client.list_offsets(stamps, retries, backoff)
    none = [tp for tp, o in found.items() if o < 0]
    if none:
        if is_start and opts.timestamp_strategy == "error":
            raise OptionError(spec.option, "no record at or after the timestamp in "
                              + ", ".join(f"{tp} ({stamps[tp]})" for tp in sorted(none))
                              + "; set startingOffsetsByTimestampStrategy=latest to start at the end instead")
        found.update(client.list_offsets({tp: LATEST for tp in none}, retries, backoff))
    return found


def report_data_loss(message: str, fail: bool) -> None:
    if fail:
        raise DataLossError(data_loss_message(message))
    log.warning("%s (failOnDataLoss=false: skipped)", message)


def batch_ranges(client: ClusterClient, opts: ReadOptions) -> list[OffsetRange]:
    """The offset ranges of a batch read: startingOffsets* to endingOffsets*, per partition."""
    tps = current_partitions(client, opts.subscription)
    starts = resolve(client, tps, opts.starting, opts, is_start=True)
    ends = resolve(client, tps, opts.ending, opts, is_start=False)
    ranges = []
    for tp in tps:
        if tp not in starts or tp not in ends:
            report_data_loss(f"{tp} was deleted while the read was planned", opts.fail_on_data_loss)
            continue
        s, e = starts[tp], ends[tp]
        if e < s:
            raise OptionError(opts.ending.option, f"ending offset {e} of {tp} is before its starting offset {s}")
        ranges.append(OffsetRange(tp, s, e))
    return ranges


# ------------------------------------------------------------------------------ arithmetic
def _apportion(weights: list[int], total: int) -> list[int]:
    """Split `total` into integer shares proportional to `weights` (largest remainder)."""
    wsum = sum(weights)
    if wsum <= 0 or total <= 0:
        return [0] * len(weights)
    raw = [w * total / wsum for w in weights]
    shares = [int(r) for r in raw]
    order = sorted(range(len(weights)), key=lambda i: (raw[i] - shares[i], weights[i]), reverse=True)
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None = None,
                 max_records: int | None = None) -> list[OffsetRange]:
    """Cut ranges into Spark tasks: at least `min_partitions` pieces in all (large ranges
    get more pieces, proportionally), no piece above `max_records`. Empty ranges vanish."""
    ranges = [r for r in ranges if r.size > 0]
    counts = [1] * len(ranges)
    if min_partitions and len(ranges) < min_partitions and ranges:
        shares = _apportion([r.size for r in ranges], min_partitions)
        counts = [max(1, min(s, r.size)) for s, r in zip(shares, ranges)]
    if max_records:
        counts = [max(c, -(-r.size // max_records)) for c, r in zip(counts, ranges)]
    out = []
    for r, c in zip(ranges, counts):
        step, extra = divmod(r.size, c)
        s = r.start
        for i in range(c):
            e = s + step + (1 if i < extra else 0)
            out.append(OffsetRange(r.tp, s, e))
            s = e
    return out


def rate_limit(start: Offsets, latest: Offsets, limit: int) -> Offsets:
    """End offsets admitting at most `limit` offsets in all, shared in proportion to what
    each partition has available (Spark's maxOffsetsPerTrigger)."""
    tps = sorted(latest)
    avail = [max(0, latest[tp] - start.get(tp, latest[tp])) for tp in tps]
    if sum(avail) <= limit:
        return dict(latest)
    shares = _apportion(avail, limit)  # each share <= its partition's availability
    out = {}
    for tp, share in zip(tps, shares):
        s = start.get(tp, latest[tp])
        out[tp] = s + share if latest[tp] >= s else latest[tp]
    return out


def delay_batch(new_offsets: int, min_offsets: int | None, since_last_ms: float, max_delay_ms: int) -> bool:
    """Spark's `minOffsetsPerTrigger` rule: hold the next batch back while fewer than
    `min_offsets` offsets are new, but never longer than `max_delay_ms` after the last
    batch (`maxTriggerDelay`). The first batch is never held (no last batch yet)."""
    if not min_offsets or since_last_ms >= max_delay_ms:
        return False
    return new_offsets < min_offsets


# ------------------------------------------------------------------------------ JSON offsets
def to_json(offsets: Offsets) -> dict[str, dict[str, int]]:
    """Spark's Kafka offset JSON: {"topic": {"0": 42}}."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_json(data: dict[str, dict[str, int]] | None) -> Offsets:
    return {TopicPartition(t, int(p)): int(o) for t, parts in (data or {}).items() for p, o in parts.items()}
