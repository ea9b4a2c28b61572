"""Shared machinery of the benchmarks, one module per concern:

  - `standins`: stand-in brokers (Kafka-framed sinks on 127.0.0.1 that answer the controller's
    requests, register in ZooKeeper and send ControlledShutdown like a real broker);
  - `zookeeper`: the embedded server, the topic pre-load, the controller seat and the raw
    ZooKeeper write limit the controller benches compare against;
  - `broker`: the real broker process (started in its own session, stopped by its PID), its
    metrics, RSS and CPU time, and bounded waits on its state-change log;
  - `load`: CPU seconds, the machine-load meter beside every figure, the machine's line;
  - `profiling`: py-spy profiles of a process;
  - `reporting`: RESULTS.md sections, medians, Markdown tables and verdicts;
  - `rig`: a controller bench rig and its trial loop, a bench script's options and sizes;
  - `plots`: log-log plots against the raw write limit.

A bench script imports what it uses from here in one line (`from harness import *` for the
controller benches, which use most of it). Every process started here is stopped by PID;
every wait is bounded; 127.0.0.1 only.
"""
from __future__ import annotations

import sys
from pathlib import Path

# a bench runs as `python bench/X.py`: praha is imported from this checkout
_REPO = str(Path(__file__).resolve().parents[2])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from .broker import BrokerProcess, LogTail, wait_for_line  # noqa: E402
from .constants import (  # noqa: E402
    BROKERS,
    CONTROLLED_SHUTDOWN,
    CONTROLLED_SHUTDOWN_VERSION,
    CONTROLLER_BROKER,
    LEADER_AND_ISR,
    RAW_WRITE_BATCH,
    REPO,
    RF,
    STOP_REPLICA,
    UPDATE_METADATA,
)
from .load import LoadMeter, machine_busy_seconds, machine_id, machine_line, process_cpu_s, rss_mb, wait_until  # noqa: E402
from .plots import loglog_plot, plot_vs_raw  # noqa: E402
from .profiling import start_py_spy, stop_process, stop_py_spy  # noqa: E402
from .reporting import (  # noqa: E402
    OTHER_LOAD,
    TRIALS,
    Column,
    fmt_s,
    md_table,
    median,
    missing_verdicts,
    ratio_verdict,
    report_results,
    rig_machine,
    secs,
    section_text,
    summarise_trials,
    target_verdicts,
    write_section,
)
from .rig import STAND_INS, Rig, common_args, rotation, run_sizes, sizes, work_dir  # noqa: E402
from .standins import Received, StandInBroker, leader_and_isr_partitions, stop_replica_partitions  # noqa: E402
from .zookeeper import (  # noqa: E402
    Assign,
    LeaderOf,
    bench_store,
    clear_broker,
    current_controller_epoch,
    first_replica_leads,
    partitions_of,
    preload,
    raw_fenced_writes,
    replicas_of,
    reset_states,
    start_zookeeper,
    take_controller_seat,
    topic_names,
)

__all__ = [
    "Assign",
    "BROKERS",
    "BrokerProcess",
    "CONTROLLED_SHUTDOWN",
    "CONTROLLED_SHUTDOWN_VERSION",
    "CONTROLLER_BROKER",
    "Column",
    "LEADER_AND_ISR",
    "LeaderOf",
    "LoadMeter",
    "LogTail",
    "OTHER_LOAD",
    "RAW_WRITE_BATCH",
    "REPO",
    "RF",
    "Received",
    "Rig",
    "STAND_INS",
    "STOP_REPLICA",
    "StandInBroker",
    "TRIALS",
    "UPDATE_METADATA",
    "bench_store",
    "clear_broker",
    "common_args",
    "current_controller_epoch",
    "first_replica_leads",
    "fmt_s",
    "leader_and_isr_partitions",
    "loglog_plot",
    "machine_busy_seconds",
    "machine_id",
    "machine_line",
    "md_table",
    "median",
    "missing_verdicts",
    "partitions_of",
    "plot_vs_raw",
    "preload",
    "process_cpu_s",
    "ratio_verdict",
    "raw_fenced_writes",
    "replicas_of",
    "report_results",
    "reset_states",
    "rig_machine",
    "rotation",
    "rss_mb",
    "run_sizes",
    "secs",
    "section_text",
    "sizes",
    "start_py_spy",
    "start_zookeeper",
    "stop_process",
    "stop_py_spy",
    "stop_replica_partitions",
    "summarise_trials",
    "take_controller_seat",
    "target_verdicts",
    "topic_names",
    "wait_for_line",
    "wait_until",
    "work_dir",
    "write_section",
]
