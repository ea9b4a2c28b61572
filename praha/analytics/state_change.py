"""Operations analytics over the brokers' state-change logs, as a PySpark batch job.

Input: every `state-change.log` under a directory (one JSON line per event, written by
`praha.statelog`). The job rebuilds, per partition, the timeline of its leaders and
ISRs from the controller's events, and from it derives:

- elections by kind (new, offline, controlled_shutdown, preferred, reassign, ...) and
  which of them were unclean, per partition and per broker (the broker elected leader);
- time offline: from when the controller learnt that a partition's leader was gone
  (BrokerChange `dead`, or a new controller's failover not counting it live) to the next
  election that gave the partition a leader. The ZooKeeper session timeout that passes
  before the controller learns of a crash is not in the logs, so it is not counted;
- time under-replicated: while the ISR is smaller than the replication factor (the
  largest ISR the partition ever had);
- controller epochs: who held each, when, and how long each failover took.

Events are small and few, so the job is cheap; Spark is used because it is the engine
the pipeline already runs on and because the same code scales to long histories.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from praha.analytics.timeline import (
    BROKER_CHANGE,
    CONTROLLED_SHUTDOWN,
    CONTROLLER_ELECTED,
    CONTROLLER_FAILOVER,
    ISR_CHANGE,
    ONLINE_PARTITION,
    PARTITION_STATE_CHANGE,
)
from praha.errors import PrahaError

EVENT_SCHEMA = (
    "time_ms long, broker_id int, controller_id int, controller_epoch int, event string, "
    "target string, election string, leaders map<string, array<string>>, unclean array<string>, "
    "failed map<string, string>, isr map<string, array<int>>, dead array<int>, new array<int>, "
    "bounced array<int>, live_brokers array<int>, duration_ms double, broker int"
)


@dataclass
class Analysis:
    """The job's results as DataFrames (all small: one row per partition, broker, epoch...)."""

    events: DataFrame
    elections: DataFrame
    offline: DataFrame  # one row per offline interval
    under_replicated: DataFrame  # one row per under-replicated interval
    partitions: DataFrame
    brokers: DataFrame
    controllers: DataFrame
    start_ms: int
    end_ms: int
    _collected: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = field(default_factory=dict)

    def table(self, name: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """A result table's columns and rows, collected once (each collect is a Spark job)."""
        if name not in self._collected:
            self._collected[name] = rows(getattr(self, name))
        return self._collected[name]


class NoStateChangeEvents(PrahaError, ValueError):
    """The files hold no line that parses as a state-change event."""


def log_files(path: str | Path) -> list[str]:
    root = Path(path)
    if root.is_file():
        return [str(root)]
    files = sorted(str(p) for p in root.rglob("state-change.log*") if p.is_file())
    return files


def first_event_file(files: list[str]) -> str | None:
    """The first file holding at least one state-change event (None: none does), read in
    Python so a wrong `--path` is refused before a Spark JVM is started for it."""
    for name in files:
        with open(name, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and event.get("event") is not None and event.get("time_ms") is not None:
                    return name
    return None


def load_events(spark: SparkSession, files: list[str]) -> DataFrame:
    raw = spark.read.text(files)
    parsed = raw.select(F.from_json("value", EVENT_SCHEMA).alias("e")).select("e.*")
    return parsed.where(F.col("event").isNotNull() & F.col("time_ms").isNotNull())


def analyze(spark: SparkSession, path: str | Path) -> Analysis:
    files = log_files(path)
    if not files:
        raise FileNotFoundError(f"no state-change.log files under {path}")
    events = load_events(spark, files).cache()
    bounds = events.agg(F.min("time_ms").alias("lo"), F.max("time_ms").alias("hi")).first()
    if bounds is None or bounds.lo is None:
        raise NoStateChangeEvents(f"no state-change events in {', '.join(files[:3])}"
                                  + (f" and {len(files) - 3} more files" if len(files) > 3 else ""))
    start_ms, end_ms = int(bounds.lo), int(bounds.hi)

    elections = _elections(events).cache()
    leadership = _leadership(elections)
    offline = _offline(events, leadership, end_ms).cache()
    under = _under_replicated(events, elections, end_ms).cache()
    kinds = election_kinds(elections)
    return Analysis(
        events=events, elections=elections, offline=offline, under_replicated=under,
        # cached: each is collected for the report and then written as CSV and Parquet
        partitions=_per_partition(elections, offline, under, kinds).cache(),
        brokers=_per_broker(events, elections, kinds).cache(),
        controllers=_controllers(events, end_ms).cache(),
        start_ms=start_ms, end_ms=end_ms,
    )


# ------------------------------------------------------------------------------ timelines
def _elections(events: DataFrame) -> DataFrame:
    """One row per partition per successful election (the controller's PartitionStateChange)."""
    ps = events.where((F.col("event") == PARTITION_STATE_CHANGE) & (F.col("target") == ONLINE_PARTITION)
                      & F.col("leaders").isNotNull())
    e = ps.select("time_ms", F.col("broker_id").alias("controller"), "controller_epoch",
                  F.coalesce("election", F.lit("unknown")).alias("kind"), "unclean",
                  F.explode("leaders").alias("partition", "v"))
    return e.select(
        "time_ms", "controller", "controller_epoch", "kind", "partition",
        F.col("v")[0].cast("int").alias("leader"),
        F.col("v")[1].cast("int").alias("leader_epoch"),
        F.when(F.size("v") > 2, F.from_json(F.col("v")[2], "array<int>")).alias("isr"),
        F.coalesce(F.array_contains("unclean", F.col("partition")), F.lit(False)).alias("unclean"),
    )


def _leadership(elections: DataFrame) -> DataFrame:
    """Leadership intervals [from_ms, to_ms) per partition (to_ms null: still leading)."""
    w = Window.partitionBy("partition").orderBy("time_ms", "leader_epoch")
    return elections.select("partition", "leader", F.col("time_ms").alias("from_ms"),
                            F.lead("time_ms").over(w).alias("to_ms"))


def _deaths(events: DataFrame) -> DataFrame:
    """(time_ms, broker) when the controller learnt a broker was gone."""
    from_change = events.where(F.col("event") == BROKER_CHANGE).select(
        "time_ms", F.explode(F.array_union(F.coalesce("dead", F.array().cast("array<int>")),
                                           F.coalesce("bounced", F.array().cast("array<int>")))).alias("broker"))
    known = events.select(F.col("broker_id").alias("broker")).distinct()
    # a new controller's failover: every known broker missing from its live set; detected when it was elected
    elected = events.where(F.col("event") == CONTROLLER_ELECTED).groupBy("controller_epoch") \
        .agg(F.min("time_ms").alias("elected_ms"))
    failover = events.where((F.col("event") == CONTROLLER_FAILOVER) & F.col("live_brokers").isNotNull()) \
        .select("controller_epoch", "time_ms", "live_brokers") \
        .join(elected, "controller_epoch", "left") \
        .crossJoin(known) \
        .where(~F.array_contains("live_brokers", F.col("broker"))) \
        .select(F.coalesce("elected_ms", "time_ms").alias("time_ms"), "broker")
    return from_change.unionByName(failover)


def _offline(events: DataFrame, leadership: DataFrame, end_ms: int) -> DataFrame:
    """Offline intervals: the leader was known dead until the next election."""
    deaths = _deaths(events).select(F.col("time_ms").alias("dead_ms"), "broker")
    hit = leadership.join(deaths, (F.col("leader") == F.col("broker")) & (F.col("dead_ms") >= F.col("from_ms"))
                          & (F.col("to_ms").isNull() | (F.col("dead_ms") < F.col("to_ms"))))
    first = hit.groupBy("partition", "leader", "from_ms", "to_ms").agg(F.min("dead_ms").alias("offline_from"))
    return first.select(
        "partition", F.col("leader").alias("dead_leader"), F.col("offline_from").alias("from_ms"),
        F.coalesce("to_ms", F.lit(end_ms)).alias("to_ms"),
        F.col("to_ms").isNull().alias("still_offline"),
    ).withColumn("duration_ms", F.col("to_ms") - F.col("from_ms"))


def _isr_timeline(events: DataFrame, elections: DataFrame) -> DataFrame:
    """(partition, time_ms, isr size) from elections and ISR change notifications."""
    from_changes = events.where((F.col("event") == ISR_CHANGE) & F.col("isr").isNotNull()) \
        .select("time_ms", F.explode("isr").alias("partition", "isr"))
    from_elections = elections.where(F.col("isr").isNotNull()).select("time_ms", "partition", "isr")
    new = elections.where(F.col("kind") == "new").select("time_ms", "partition",
                                                         F.lit(None).cast("array<int>").alias("isr"))
    tl = from_changes.unionByName(from_elections).unionByName(new)
    rf = tl.groupBy("partition").agg(F.max(F.size("isr")).alias("rf"))
    return tl.join(rf, "partition").select(
        "partition", "time_ms", F.coalesce(F.size("isr"), F.col("rf")).alias("isr_size"), "rf")


def _under_replicated(events: DataFrame, elections: DataFrame, end_ms: int) -> DataFrame:
    tl = _isr_timeline(events, elections)
    w = Window.partitionBy("partition").orderBy("time_ms")
    spans = tl.select("partition", "time_ms", "isr_size", "rf",
                      F.coalesce(F.lead("time_ms").over(w), F.lit(end_ms)).alias("to_ms"))
    return spans.where(F.col("isr_size") < F.col("rf")).select(
        "partition", F.col("time_ms").alias("from_ms"), "to_ms", "isr_size", "rf",
        (F.col("to_ms") - F.col("time_ms")).alias("duration_ms"))


# ------------------------------------------------------------------------------ tables
def election_kinds(elections: DataFrame) -> list[str]:
    return sorted(r.kind for r in elections.select("kind").distinct().collect())


def _per_partition(elections: DataFrame, offline: DataFrame, under: DataFrame, kinds: list[str]) -> DataFrame:
    counts = elections.groupBy("partition").pivot("kind", list[Any](kinds)).count().na.fill(0)
    extra = elections.groupBy("partition").agg(
        F.count("*").alias("elections"),
        F.sum(F.col("unclean").cast("int")).alias("unclean_elections"),
        F.max("leader_epoch").alias("last_leader_epoch"),
        F.max_by("leader", "time_ms").alias("last_leader"))
    off = offline.groupBy("partition").agg(F.sum("duration_ms").alias("offline_ms"),
                                           F.count("*").alias("offline_periods"))
    urp = under.groupBy("partition").agg(F.sum("duration_ms").alias("under_replicated_ms"))
    out = extra.join(counts, "partition").join(off, "partition", "left").join(urp, "partition", "left")
    return out.na.fill(0, ["offline_ms", "offline_periods", "under_replicated_ms"]).orderBy("partition")


def _per_broker(events: DataFrame, elections: DataFrame, kinds: list[str]) -> DataFrame:
    won = elections.groupBy(F.col("leader").alias("broker")).pivot("kind", list[Any](kinds)).count().na.fill(0)
    won_total = elections.groupBy(F.col("leader").alias("broker")).agg(
        F.count("*").alias("elected_leader"), F.sum(F.col("unclean").cast("int")).alias("unclean_elected"))
    ctrl = events.where(F.col("event") == CONTROLLER_ELECTED).groupBy(F.col("broker_id").alias("broker")) \
        .agg(F.countDistinct("controller_epoch").alias("controller_terms"))
    fo = events.where(F.col("event") == CONTROLLER_FAILOVER).groupBy(F.col("broker_id").alias("broker")) \
        .agg(F.round(F.avg("duration_ms"), 1).alias("avg_failover_ms"))
    deaths = _deaths(events).groupBy("broker").agg(F.countDistinct("time_ms").alias("seen_dead"))
    shut = events.where(F.col("event") == CONTROLLED_SHUTDOWN).groupBy("broker") \
        .agg(F.count("*").alias("controlled_shutdowns"))
    brokers = events.select(F.col("broker_id").alias("broker")).where(F.col("broker") >= 0) \
        .unionByName(won_total.select("broker")).distinct()
    out = brokers.join(won_total, "broker", "left").join(won, "broker", "left").join(ctrl, "broker", "left") \
        .join(fo, "broker", "left").join(deaths, "broker", "left").join(shut, "broker", "left")
    fill = ["elected_leader", "unclean_elected", "controller_terms", "seen_dead", "controlled_shutdowns", *kinds]
    return out.na.fill(0, fill).orderBy("broker")


def _controllers(events: DataFrame, end_ms: int) -> DataFrame:
    elected = events.where(F.col("event") == CONTROLLER_ELECTED).groupBy("controller_epoch") \
        .agg(F.min("time_ms").alias("elected_ms"), F.first("broker_id").alias("controller"))
    fo = events.where(F.col("event") == CONTROLLER_FAILOVER).groupBy("controller_epoch") \
        .agg(F.max("duration_ms").alias("failover_ms"))
    w = Window.orderBy("controller_epoch")
    return elected.join(fo, "controller_epoch", "left").select(
        "controller_epoch", "controller", "elected_ms", "failover_ms",
        (F.coalesce(F.lead("elected_ms").over(w), F.lit(end_ms)) - F.col("elected_ms")).alias("term_ms"),
    ).orderBy("controller_epoch")


def offline_series(a: Analysis) -> list[tuple[int, int]]:
    """(time_ms, partitions offline from then on): a step function for the plot."""
    return _step_series(*a.table("offline"))


def under_replicated_series(a: Analysis) -> list[tuple[int, int]]:
    return _step_series(*a.table("under_replicated"))


def _step_series(columns: list[str], data: list[tuple[Any, ...]]) -> list[tuple[int, int]]:
    lo, hi = columns.index("from_ms"), columns.index("to_ms")
    deltas: dict[int, int] = {}
    for r in data:
        deltas[r[lo]] = deltas.get(r[lo], 0) + 1
        deltas[r[hi]] = deltas.get(r[hi], 0) - 1
    out, level = [], 0
    for t in sorted(deltas):
        level += deltas[t]
        out.append((t, level))
    return out


def rows(df: DataFrame) -> tuple[list[str], list[tuple[Any, ...]]]:
    collected = df.collect()
    return df.columns, [tuple(r) for r in collected]
