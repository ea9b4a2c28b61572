"""The controller's history as a list of events, read from the state-change logs without Spark:
what the console's timeline shows. The events and their fields are read as the Spark job
(`state_change.py`) reads them, from the names below, which both use:

- controller elections: `ControllerElected` (and `ControllerFailover`, its duration);
- brokers down: `BrokerChange` `dead` and `bounced`; up: `new` (and `bounced`);
- leader elections: `PartitionStateChange` to `OnlinePartition` with `leaders`
  {partition: [leader, leader epoch, ISR as JSON?]} and the election kind;
- ISR changes: `IsrChange` `isr` {partition: [replicas]}.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

CONTROLLER_ELECTED = "ControllerElected"
CONTROLLER_FAILOVER = "ControllerFailover"
BROKER_CHANGE = "BrokerChange"
PARTITION_STATE_CHANGE = "PartitionStateChange"
ONLINE_PARTITION = "OnlinePartition"
ISR_CHANGE = "IsrChange"
CONTROLLED_SHUTDOWN = "ControlledShutdown"


class Kind(Enum):
    CONTROLLER = "controller election"
    BROKER_UP = "broker up"
    BROKER_DOWN = "broker down"
    LEADER = "leader election"
    ISR = "ISR change"
    SHUTDOWN = "controlled shutdown"


@dataclass(frozen=True, order=True)
class Event:
    time_ms: int
    kind: Kind
    controller_epoch: int
    text: str
    partitions: int = 0


def log_files(path: str | Path) -> list[Path]:
    root = Path(path)
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("state-change.log*") if p.is_file())


def events_of(line: dict[str, object]) -> list[Event]:
    """The timeline events one state-change line holds (none for the other events)."""
    name = line.get("event")
    t = int(line.get("time_ms") or 0)  # type: ignore[call-overload]
    epoch = int(line.get("controller_epoch") or -1)  # type: ignore[call-overload]
    broker = line.get("broker_id")
    if name == CONTROLLER_ELECTED:
        return [Event(t, Kind.CONTROLLER, epoch, f"broker {broker} became the controller (epoch {epoch})")]
    if name == CONTROLLER_FAILOVER:
        return [Event(t, Kind.CONTROLLER, epoch, f"controller {broker} took over in {line.get('duration_ms')} ms "
                      f"(live brokers {line.get('live_brokers')})")]
    if name == BROKER_CHANGE:
        out = []
        for b in _ints(line.get("dead")) + _ints(line.get("bounced")):
            out.append(Event(t, Kind.BROKER_DOWN, epoch, f"broker {b} gone (seen by controller {broker})"))
        for b in _ints(line.get("new")) + _ints(line.get("bounced")):
            out.append(Event(t, Kind.BROKER_UP, epoch, f"broker {b} registered"))
        return out
    if name == PARTITION_STATE_CHANGE and line.get("target") == ONLINE_PARTITION and line.get("leaders"):
        leaders = line["leaders"]
        assert isinstance(leaders, dict)
        kind = line.get("election") or "unknown"
        unclean = set(_strs(line.get("unclean")))
        shown = sorted(leaders.items())[:6]
        detail = ", ".join(f"{tp} → {v[0]}" for tp, v in shown) + (" …" if len(leaders) > 6 else "")
        text = f"{len(leaders)} {kind} elections" + (f" ({len(unclean)} unclean)" if unclean else "") + f": {detail}"
        return [Event(t, Kind.LEADER, epoch, text, len(leaders))]
    if name == ISR_CHANGE and line.get("isr"):
        isr = line["isr"]
        assert isinstance(isr, dict)
        shown = sorted(isr.items())[:6]
        detail = ", ".join(f"{tp} ISR {v}" for tp, v in shown) + (" …" if len(isr) > 6 else "")
        return [Event(t, Kind.ISR, epoch, f"{len(isr)} ISR changes: {detail}", len(isr))]
    if name == CONTROLLED_SHUTDOWN:
        return [Event(t, Kind.SHUTDOWN, epoch, f"broker {line.get('broker')} shut down in a controlled way")]
    return []


def read_events(files: Iterable[Path], limit: int = 2000) -> list[Event]:
    """Every timeline event of the files, newest first (at most `limit`). A line that does
    not parse is skipped, as the Spark job skips it."""
    out: list[Event] = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for raw in text.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("time_ms") is not None:
                out.extend(events_of(line))
    out.sort(reverse=True)
    return out[:limit]


def _ints(v: object) -> list[int]:
    return [int(x) for x in v] if isinstance(v, list) else []


def _strs(v: object) -> list[str]:
    return [str(x) for x in v] if isinstance(v, list) else []
