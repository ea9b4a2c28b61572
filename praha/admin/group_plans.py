"""The decisions of `praha groups` (Kafka's kafka-consumer-groups), with no I/O.

Everything here is a pure function of what the cluster answered, so unit tests drive it
without brokers: the `--topic T[:P,P]` scope, `--to-datetime`/`--by-duration` parsing
(Kafka's formats), the new offset of every reset mode (clamped into the log as Kafka's
`checkOffsetsRange` does), lag, the per-partition rows of `--describe`, the consumer
protocol's assignment bytes, and the text tables (Kafka's columns and widths).
"""
from __future__ import annotations

import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum

from praha.common import TopicPartition, partitions_by_topic
from praha.errors import InvalidRequestError

#: the column value Kafka's tool prints for "nothing here"
MISSING = "-"

#: the classic group protocol's states (Kafka's ConsumerGroupState for ZooKeeper-mode groups)
GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")
#: states in which Kafka lets an operator reset a group's offsets
INACTIVE_STATES = ("Empty", "Dead")
CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupInputError(InvalidRequestError):
    """Bad operator input to a groups command (a scope, a date, a state name)."""


# ----------------------------------------------------------------------------- parsing
#: ListGroups v5's group types (`--list --type`), Kafka's names
GROUP_TYPES = ("classic", "consumer")


def parse_types(values: Sequence[str]) -> list[str]:
    """`--type consumer,classic` or `--type consumer classic`, any case; unknown ones refused."""
    out: list[str] = []
    for item in (s.strip().lower() for v in values for s in v.split(",") if s.strip()):
        if item not in GROUP_TYPES:
            raise GroupInputError(f"Invalid types list '{','.join(values)}'. Valid types are: {', '.join(GROUP_TYPES)}")
        if item not in out:
            out.append(item)
    return out


def parse_states(values: Sequence[str]) -> list[str]:
    """`--state stable,empty` (Kafka's form) or `--state Stable Empty`: the canonical state
    names, matched without regard to case. Unknown names are refused with Kafka's message."""
    items = [s.strip() for v in values for s in v.split(",")]
    by_lower = {s.lower(): s for s in GROUP_STATES}
    out: list[str] = []
    for item in items:
        if item.lower() not in by_lower:
            raise GroupInputError(f"Invalid state list '{','.join(values)}'. Valid states are: "
                                  + ", ".join(GROUP_STATES))
        if by_lower[item.lower()] not in out:
            out.append(by_lower[item.lower()])
    return out


def parse_topic_arg(text: str) -> tuple[str, list[int] | None]:
    """`T` (every partition) or `T:0,1,2` (those partitions), as kafka-consumer-groups."""
    if ":" not in text:
        if not text:
            raise GroupInputError("Invalid topic arg '', expected a topic name")
        return text, None
    parts = text.split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise GroupInputError(f"Invalid topic arg '{text}', expected topic name and partitions")
    partitions: list[int] = []
    for p in parts[1].split(","):
        if not re.fullmatch(r"\d+", p.strip()):
            raise GroupInputError(f"Invalid partition '{p}' specified in topic arg '{text}'")
        if int(p) not in partitions:
            partitions.append(int(p))
    return parts[0], partitions


def parse_datetime_ms(text: str) -> int:
    """Kafka's `Utils.getDateTime`: `YYYY-MM-DDTHH:mm:SS.sss` with an optional zone (`Z`,
    `+hh:mm`, `+hhmm`); no zone means UTC, as Kafka appends `Z`. The milliseconds may be
    left out here (Kafka insists on them)."""
    if "T" not in text:
        raise GroupInputError(
            f"Error parsing timestamp '{text}'. It does not contain a 'T' according to ISO8601 format"
        )
    date_part, _, time_part = text.partition("T")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date_part) or not re.fullmatch(
            r"\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}(:?\d{2})?)?", time_part):
        raise GroupInputError(f"Error parsing timestamp '{text}': expected YYYY-MM-DDTHH:mm:SS.sss with an "
                              "optional zone (Z, +hh:mm)")
    zone = re.search(r"(Z|[+-]\d{2}(:?\d{2})?)$", time_part)
    iso = text
    if zone is None:
        iso += "+00:00"
    elif zone.group(0) == "Z":
        iso = iso[:-1] + "+00:00"
    elif len(zone.group(0)) == 3:  # +hh
        iso += ":00"
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError as e:
        raise GroupInputError(f"Error parsing timestamp '{text}': {e}") from None
    return int(moment.astimezone(UTC).timestamp() * 1000)


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE)


def parse_duration_ms(text: str) -> int:
    """Java's `Duration.parse` (ISO-8601 `PnDTnHnMn.nS`, as `--by-duration` takes), in ms."""
    m = _DURATION.fullmatch(text)
    if m is None or (m.group(3) is not None and m.group(3).upper() == "T") or not any(
            m.group(i) for i in (2, 4, 5, 6)):
        raise GroupInputError(f"Text '{text}' cannot be parsed to a Duration (expected PnDTnHnMnS, e.g. PT1H30M)")
    sign = -1 if m.group(1) == "-" else 1
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 4, 5, 6))
    fraction = m.group(7) or ""
    millis = int((fraction + "000")[:3]) if fraction else 0
    if (m.group(6) or "").startswith("-"):
        millis = -millis
    return sign * (((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + millis)


# ----------------------------------------------------------------------------- assignments
def decode_assignment(data: bytes | None) -> list[TopicPartition]:
    """The partitions in a consumer protocol Assignment (any version: v0's fields lead)."""
    if not data:
        return []
    try:
        pos = 2  # int16 version
        (n_topics,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out: list[TopicPartition] = []
        for _ in range(max(n_topics, 0)):
            (name_len,) = struct.unpack_from(">h", data, pos)
            pos += 2
            topic = bytes(data[pos:pos + name_len]).decode()
            pos += name_len
            (n_parts,) = struct.unpack_from(">i", data, pos)
            pos += 4
            for _ in range(max(n_parts, 0)):
                (p,) = struct.unpack_from(">i", data, pos)
                pos += 4
                out.append(TopicPartition(topic, p))
        return out
    except (struct.error, UnicodeDecodeError) as e:
        raise GroupInputError(f"member assignment does not decode as the consumer protocol: {e}") from None


def encode_assignment(partitions: Sequence[TopicPartition], version: int = 0) -> bytes:
    """The inverse of `decode_assignment` (tests build members' assignments with it)."""
    topics = partitions_by_topic(partitions)
    out = bytearray(struct.pack(">hi", version, len(topics)))
    for topic, parts in topics.items():
        name = topic.encode()
        out += struct.pack(">h", len(name)) + name + struct.pack(">i", len(parts))
        out += b"".join(struct.pack(">i", p) for p in parts)
    out += struct.pack(">i", -1)  # user data: null
    return bytes(out)


# ----------------------------------------------------------------------------- reset plans
class ResetMode(Enum):
    TO_EARLIEST = "to-earliest"
    TO_LATEST = "to-latest"
    TO_CURRENT = "to-current"
    TO_OFFSET = "to-offset"
    SHIFT_BY = "shift-by"
    TO_DATETIME = "to-datetime"
    BY_DURATION = "by-duration"
    #: offsets per partition from a CSV file (`--from-file`, what `--export` wrote)
    FROM_FILE = "from-file"

    @property
    def uses_timestamp(self) -> bool:
        return self in (ResetMode.TO_DATETIME, ResetMode.BY_DURATION)


@dataclass(frozen=True)
class ResetSpec:
    """One reset scenario. `value`: the offset (to-offset), the shift (shift-by) or the
    timestamp in ms (to-datetime, by-duration: `now - duration` already applied)."""

    mode: ResetMode
    value: int | None = None


@dataclass
class ResetPlan:
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def plan_reset(spec: ResetSpec, partitions: Sequence[TopicPartition],
               committed: Mapping[TopicPartition, int],
               earliest: Mapping[TopicPartition, int | None],
               latest: Mapping[TopicPartition, int | None],
               by_timestamp: Mapping[TopicPartition, int | None] | None = None,
               requested: Mapping[TopicPartition, int] | None = None) -> ResetPlan:
    """The new committed offset of every partition, as kafka-consumer-groups computes it.

    to-offset and shift-by are clamped into [earliest, latest] with Kafka's warning; a
    timestamp with no later record falls back to the log end (Kafka's "Falling back to
    latest known offset"); to-current keeps a committed offset and moves a partition with
    none to the log end. An unknown log offset is an error, as in Kafka."""
    plan = ResetPlan()

    def known(table: Mapping[TopicPartition, int | None], tp: TopicPartition, what: str) -> int:
        value = table.get(tp)
        if value is None:
            raise GroupInputError(f"Error getting {what} offset of topic partition: {tp}")
        return value

    def clamp(tp: TopicPartition, wanted: int) -> int:
        end, start = known(latest, tp, "ending"), known(earliest, tp, "starting")
        if wanted > end:
            plan.warnings.append(f"New offset ({wanted}) is higher than latest offset for topic partition {tp}. "
                                 f"Value will be set to {end}")
            return end
        if wanted < start:
            plan.warnings.append(f"New offset ({wanted}) is lower than earliest offset for topic partition {tp}. "
                                 f"Value will be set to {start}")
            return start
        return wanted

    for tp in partitions:
        mode = spec.mode
        if mode is ResetMode.TO_EARLIEST:
            new = known(earliest, tp, "starting")
        elif mode is ResetMode.TO_LATEST:
            new = known(latest, tp, "ending")
        elif mode is ResetMode.TO_CURRENT:
            new = committed[tp] if tp in committed else known(latest, tp, "ending")
        elif mode is ResetMode.TO_OFFSET:
            new = clamp(tp, _value(spec))
        elif mode is ResetMode.FROM_FILE:
            new = clamp(tp, (requested or {})[tp])
        elif mode is ResetMode.SHIFT_BY:
            if tp not in committed:
                raise GroupInputError(f"Cannot shift offset for partition {tp} since there is no current "
                                      "committed offset")
            new = clamp(tp, committed[tp] + _value(spec))
        else:  # by timestamp
            found = (by_timestamp or {}).get(tp)
            if found is None or found < 0:
                plan.warnings.append(f"Partition {tp.partition} from topic {tp.topic} is empty. "
                                     "Falling back to latest known offset.")
                new = known(latest, tp, "ending")
            else:
                new = found
        plan.offsets[tp] = new
    return plan


def parse_reset_csv(text: str, single_group: str | None) -> dict[str, dict[TopicPartition, int]]:
    """`--from-file`'s CSV, as `--export` writes it: `topic,partition,offset` lines when one
    --group is given (`single_group`) and the first line has three fields, else
    `group,topic,partition,offset`. {group: {partition: offset}}; a bad line is an error."""
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    no_group = single_group is not None and bool(lines) and len(lines[0].split(",")) == 3
    out: dict[str, dict[TopicPartition, int]] = {}
    for n, line in enumerate(lines, 1):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != (3 if no_group else 4):
            raise GroupInputError(f"line {n} of the reset file: expected "
                                  f"{'topic,partition,offset' if no_group else 'group,topic,partition,offset'}, "
                                  f"got {line!r}")
        group, rest = (single_group or "", fields) if no_group else (fields[0], fields[1:])
        topic, partition, offset = rest
        try:
            tp, value = TopicPartition(topic, int(partition)), int(offset)
        except ValueError:
            raise GroupInputError(f"line {n} of the reset file: partition and offset must be whole numbers, "
                                  f"got {line!r}") from None
        out.setdefault(group, {})[tp] = value
    return out


def export_csv(offsets: Mapping[str, Mapping[TopicPartition, int]], with_group: bool) -> str:
    """`--export`: one line per partition, `topic,partition,offset` (one group asked for)
    or `group,topic,partition,offset`, each ended by a newline."""
    return "".join(f"{group + ',' if with_group else ''}{tp.topic},{tp.partition},{off}\n"
                   for group, plan in offsets.items() for tp, off in sorted(plan.items()))


def _value(spec: ResetSpec) -> int:
    if spec.value is None:
        raise GroupInputError(f"--{spec.mode.value} needs a value")
    return spec.value


def lag(committed: int | None, log_end: int | None) -> int | None:
    """Kafka's lag: log end minus the committed offset; unknown if either is."""
    if committed is None or committed < 0 or log_end is None:
        return None
    return log_end - committed


# ----------------------------------------------------------------------------- describe rows
@dataclass(frozen=True)
class MemberInfo:
    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    assignment: tuple[TopicPartition, ...]
    #: a KIP-848 member's epoch and target assignment (ConsumerGroupDescribe); None for a classic member
    member_epoch: int | None = None
    target: tuple[TopicPartition, ...] | None = None


@dataclass(frozen=True)
class PartitionRow:
    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None

    def as_json(self) -> dict[str, object]:
        return {"group": self.group, "topic": self.topic, "partition": self.partition,
                "current_offset": self.current_offset, "log_end_offset": self.log_end_offset, "lag": self.lag,
                "consumer_id": self.consumer_id, "host": self.host, "client_id": self.client_id}


def partition_rows(group: str, members: Sequence[MemberInfo], committed: Mapping[TopicPartition, int],
                   log_end: Mapping[TopicPartition, int | None]) -> list[PartitionRow]:
    """`--describe --offsets`: the partitions each member owns (members with the most
    partitions first, as Kafka), then the partitions with a committed offset no member owns."""
    rows: list[PartitionRow] = []
    owned: set[TopicPartition] = set()
    for m in sorted((m for m in members if m.assignment), key=lambda m: -len(m.assignment)):
        for tp in sorted(m.assignment):
            owned.add(tp)
            current = committed.get(tp)
            rows.append(PartitionRow(group, tp.topic, tp.partition, current, log_end.get(tp),
                                     lag(current, log_end.get(tp)), m.member_id, m.host, m.client_id))
    for tp in sorted(set(committed) - owned):
        rows.append(PartitionRow(group, tp.topic, tp.partition, committed[tp], log_end.get(tp),
                                 lag(committed[tp], log_end.get(tp)), None, None, None))
    return rows


# ----------------------------------------------------------------------------- tables
def _cell(value: object) -> str:
    return MISSING if value is None else str(value)


def table(header: Sequence[str], rows: Sequence[Sequence[object]], widths: Sequence[int]) -> list[str]:
    """Left-aligned columns at least `widths` wide (0 = as wide as its longest cell); the
    last column is never padded. Trailing blanks are cut."""
    cells = [list(header)] + [[_cell(v) for v in r] for r in rows]
    sizes = [max([w] + [len(r[i]) for r in cells]) for i, w in enumerate(widths)]
    out = []
    for r in cells:
        line = " ".join(c.ljust(sizes[i]) if i < len(r) - 1 else c for i, c in enumerate(r))
        out.append(line.rstrip())
    return out


def offsets_table(rows: Sequence[PartitionRow]) -> list[str]:
    """Kafka's `--describe --offsets` columns (group, topic, consumer id and host at least 15 wide)."""
    header = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
              "CLIENT-ID")
    body = [(r.group, r.topic, r.partition, r.current_offset, r.log_end_offset, r.lag, r.consumer_id, r.host,
             r.client_id) for r in rows]
    return table(header, body, (15, 15, 10, 15, 15, 15, 15, 15, 0))


def members_table(group: str, members: Sequence[MemberInfo], verbose: bool,
                  target_epoch: int | None = None) -> list[str]:
    """Kafka's `--describe --members` (GROUP-INSTANCE-ID only when a member is static;
    ASSIGNMENT with --verbose, as `topic(0,1)` per topic). A KIP-848 group's --verbose shows each
    member's CURRENT-EPOCH and CURRENT-ASSIGNMENT beside the group's TARGET-EPOCH and the member's
    TARGET-ASSIGNMENT, as Kafka 4's tool does."""
    static = any(m.group_instance_id for m in members)
    modern = target_epoch is not None
    header = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if static else []) + ["HOST", "CLIENT-ID",
                                                                                     "#PARTITIONS"]
    widths = [15, 15] + ([17] if static else []) + [15, 15, 15]
    if verbose:
        extra = ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
                 "TARGET-ASSIGNMENT"] if modern else ["ASSIGNMENT"]
        header += extra
        widths += [15, 25, 15, 0] if modern else [0]
    body = []
    for m in members:
        row: list[object] = [group, m.member_id] + ([m.group_instance_id or ""] if static else []) + [
            m.host, m.client_id, len(m.assignment)]
        if verbose and modern:
            row += [m.member_epoch, format_assignment(m.assignment), target_epoch, format_assignment(m.target or ())]
        elif verbose:
            row.append(format_assignment(m.assignment))
        body.append(row)
    return table(header, body, widths)


def format_assignment(assignment: Sequence[TopicPartition]) -> str:
    if not assignment:
        return MISSING
    topics = partitions_by_topic(assignment)
    return ", ".join(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in sorted(topics.items()))


def state_table(group: str, coordinator: str, strategy: str, state: str, members: int) -> list[str]:
    """Kafka's `--describe --state`."""
    return table(("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
                 [(group, coordinator, strategy, state, members)], (15, 25, 20, 15, 0))


def list_table(groups: Sequence[Sequence[str]], columns: Sequence[str] = ("STATE",)) -> list[str]:
    """`--list --state` / `--type`: GROUP then TYPE and/or STATE (the group column at least 25
    wide, the others 20, as Kafka)."""
    width = max([15] + [len(g[0]) for g in groups]) + 10
    return table(("GROUP", *columns), groups, (width, *[20] * (len(columns) - 1), 0))




def reset_table(group: str, offsets: Mapping[TopicPartition, int]) -> list[str]:
    """Kafka's reset result: GROUP TOPIC PARTITION NEW-OFFSET."""
    return table(("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
                 [(group, tp.topic, tp.partition, o) for tp, o in sorted(offsets.items())], (30, 30, 10, 0))


def delete_offsets_table(results: Mapping[TopicPartition, str | None]) -> list[str]:
    """`--delete-offsets`: TOPIC PARTITION STATUS (Successful, or the partition's error)."""
    return table(("TOPIC", "PARTITION", "STATUS"),
                 [(tp.topic, tp.partition, "Successful" if err is None else f"Error: {err}")
                  for tp, err in sorted(results.items())], (30, 15, 0))
