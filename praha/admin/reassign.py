"""Partition reassignment, as Kafka's kafka-reassign-partitions (ZooKeeper mode).

  generate  1. parse the topics file and broker list; 2. read the topics' assignments;
            3. propose Kafka's rack-unaware placement over the given brokers, keeping each
            topic's partition count and replication factor. Writes nothing.
  execute   1. parse and check the plan on its own (empty, duplicates, bad JSON); 2. refuse
            if `/admin/reassign_partitions` exists; 3. check it against the cluster
            (unknown topic/partition/broker, topic marked for deletion, partition already
            moving, target equal to the current replicas — the controller refuses that);
            4. optionally write the throttle configs; 5. create `/admin/reassign_partitions`,
            which the controller watches. Nothing is written unless every check passed.
            6. replicas given a log dir (`log_dirs`, absolute paths or "any"): AlterReplicaLogDirs
            to their brokers (`praha.admin.records.alter_replica_log_dirs`), retried while a
            new replica does not exist yet, as Kafka's tool.
  verify    per partition: in progress (still in the znode or with adding/removing
            replicas; which targets are not in the ISR yet), complete (replicas equal the
            target) or failed; when all are complete, remove the throttle configs.
  cancel    AlterPartitionReassignments with a null target for each partition, sent to
            the controller (its reassignment flow reverts them); then remove throttles.
  list      in-flight reassignments from ZooKeeper, with their progress.

Throttles (Kafka's names): topic configs `leader.replication.throttled.replicas` (every
current replica of a moving partition, "partition:broker") and
`follower.replication.throttled.replicas` (every new replica), broker configs
`leader.replication.throttled.rate` and `follower.replication.throttled.rate` on each
broker involved; each change also gets a `/config/changes/config_change_<seq>` notice.
"""
from __future__ import annotations

import json
import os
import random
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from praha.common import BrokerInfo, TopicAssignment, TopicPartition, partitions_by_topic
from praha.config import (
    FOLLOWER_THROTTLED_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_RATE,
    LEADER_THROTTLED_REPLICAS,
)
from praha.errors import (
    ErrorCode,
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    PrahaError,
    ReassignmentInProgressError,
    UnknownTopicError,
)
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.protocol.registry import CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID
from praha.topic_rules import assign_replicas
from praha.zk import znodes as zn
from praha.zk.admin_zk import BROKERS, TOPICS, read_config, write_config
from praha.zk.store import ZkStore

Plan = dict[TopicPartition, tuple[int, ...]]
#: (partition, broker) → the absolute log dir that replica goes to
LogDirPlan = dict[tuple[TopicPartition, int], str]
ANY_LOG_DIR = "any"

TOPIC_THROTTLE_KEYS = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)
BROKER_THROTTLE_KEYS = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)


def _ids(values: Iterable[int]) -> str:
    return ",".join(map(str, values))


def _tps(tps: Iterable[TopicPartition]) -> str:
    return ", ".join(str(tp) for tp in sorted(tps))


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


# ------------------------------------------------------------------------------ parsing
def _load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise InvalidRequestError(f"{what} is not valid JSON: {e}") from None


def _check_version(obj: Mapping[str, Any]) -> None:
    version = obj.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise InvalidRequestError(f"Not supported version field value {version!r}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_topics_to_move(text: str) -> list[str]:
    """`{"version":1,"topics":[{"topic":"foo"}]}` → ["foo"]."""
    obj = _load_json(text, "the topics-to-move file")
    usage = 'expected {"version":1,"topics":[{"topic":"foo"},...]}'
    if not isinstance(obj, dict) or not isinstance(obj.get("topics"), list):
        raise InvalidRequestError(f"invalid topics-to-move JSON: {usage}")
    _check_version(obj)
    topics = []
    for entry in obj["topics"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise InvalidRequestError(f"invalid topics-to-move entry {entry!r}: {usage}")
        topics.append(entry["topic"])
    if not topics:
        raise InvalidRequestError("List of topics to reassign is empty.")
    dupes = sorted({t for t in topics if topics.count(t) > 1})
    if dupes:
        raise InvalidRequestError(f"List of topics to reassign contains duplicate entries: {', '.join(dupes)}")
    return topics


def parse_broker_list(text: str) -> list[int]:
    """`1,2,3` → [1, 2, 3]."""
    try:
        brokers = [int(x) for x in text.split(",")]
    except ValueError:
        raise InvalidRequestError(
            f"invalid broker list {text!r}: expected broker ids separated by ',' (e.g. 1,2,3)") from None
    dupes = sorted({b for b in brokers if brokers.count(b) > 1})
    if dupes:
        raise InvalidRequestError(f"Broker list contains duplicate entries: {_ids(dupes)}")
    return brokers


def parse_plan(text: str) -> Plan:
    """A reassignment JSON (Kafka's format), checked on its own; its `log_dirs` are read by
    `parse_log_dirs`."""
    obj = _load_json(text, "the reassignment file")
    usage = 'expected {"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,3]},...]}'
    if not isinstance(obj, dict) or not isinstance(obj.get("partitions"), list):
        raise InvalidRequestError(f"invalid reassignment JSON: {usage}")
    _check_version(obj)
    entries: list[tuple[TopicPartition, tuple[int, ...]]] = []
    for e in obj["partitions"]:
        if not (isinstance(e, dict) and isinstance(e.get("topic"), str) and _is_int(e.get("partition"))
                and isinstance(e.get("replicas"), list) and all(_is_int(r) for r in e["replicas"])):
            raise InvalidRequestError(f"invalid reassignment entry {json.dumps(e)}: {usage}")
        tp, replicas = TopicPartition(e["topic"], e["partition"]), tuple(e["replicas"])
        dirs = e.get("log_dirs")
        if dirs is not None:
            if not isinstance(dirs, list) or len(dirs) != len(replicas):
                raise InvalidRequestError(f"Size of replicas list {list(replicas)} is different from size of "
                                          f"log dirs list {dirs} for partition {tp}")
            if not all(isinstance(d, str) and (d == ANY_LOG_DIR or os.path.isabs(d)) for d in dirs):
                raise InvalidRequestError(f"invalid log dirs list {dirs} for partition {tp}: each entry is "
                                          f"\"{ANY_LOG_DIR}\" or an absolute path")
        entries.append((tp, replicas))
    if not entries:
        raise InvalidRequestError("Partition reassignment list cannot be empty.")
    empty = [tp for tp, r in entries if not r]
    if empty:
        raise InvalidReplicaAssignmentError(f"Empty replica list specified for partition {_tps(empty)}")
    counts = Counter(tp for tp, _ in entries)
    dup_tps = sorted(tp for tp, n in counts.items() if n > 1)
    if dup_tps:
        raise InvalidRequestError(f"Partition reassignment contains duplicate topic partitions: {_tps(dup_tps)}")
    dup_replicas = [(tp, sorted({b for b in r if r.count(b) > 1})) for tp, r in sorted(entries)]
    dup_replicas = [(tp, d) for tp, d in dup_replicas if d]
    if dup_replicas:
        raise InvalidReplicaAssignmentError("Partition replica lists may not contain duplicate entries: " + ". ".join(
            f"{tp} contains multiple entries for {_ids(d)}" for tp, d in dup_replicas))
    return dict(entries)


def parse_log_dirs(text: str) -> LogDirPlan:
    """The replicas a reassignment JSON (already checked by `parse_plan`) places in a named log
    directory of their broker: (partition, broker) → absolute path ("any" entries left out)."""
    out: LogDirPlan = {}
    for e in json.loads(text)["partitions"]:
        for broker, d in zip(e["replicas"], e.get("log_dirs") or ()):
            if d != ANY_LOG_DIR:
                out[(TopicPartition(e["topic"], e["partition"]), broker)] = d
    return out


def format_plan(plan: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's reassignment JSON, compact, sorted by topic and partition."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(r), "log_dirs": ["any"] * len(r)}
        for tp, r in sorted(plan.items())]}, separators=(",", ":"))


# ------------------------------------------------------------------------------ cluster reads
@dataclass
class ClusterView:
    """What the checks need, read in a few bulk calls."""

    assignments: dict[str, TopicAssignment]
    live: set[int]
    marked: set[str]
    in_znode: Plan  # /admin/reassign_partitions

    @property
    def reassigning(self) -> set[TopicPartition]:
        moving = {TopicPartition(t, p) for t, a in self.assignments.items()
                  for p, r in a.partitions.items() if r.is_being_reassigned}
        return moving | set(self.in_znode)


def read_view(store: ZkStore, topics: Iterable[str]) -> ClusterView:
    topics = sorted(set(topics))
    assignments, bad = store.get_topic_assignments(topics)
    if bad:
        raise PrahaError("; ".join(str(e) for e in bad.values()))
    brokers, _ = store.get_live_brokers()
    return ClusterView(assignments, set(brokers), set(store.get_topics_marked_for_deletion()),
                       dict(store.get_reassignments()))


# ------------------------------------------------------------------------------ generate
def propose(assignments: Mapping[str, TopicAssignment], topics: Sequence[str], brokers: Sequence[int],
            live: Collection[int], rng: random.Random | None = None) -> tuple[Plan, Plan]:
    """(current, proposed) for `topics` moved onto `brokers` (pure)."""
    unknown = [t for t in topics if t not in assignments]
    if unknown:
        raise UnknownTopicError(f"{_plural(len(unknown), 'Topic', 'Topics')} {', '.join(unknown)} not found.")
    missing = sorted(set(brokers) - set(live))
    if missing:
        raise InvalidReplicaAssignmentError(f"Unknown broker {_plural(len(missing), 'id', 'ids')} {_ids(missing)} "
                                            f"(live brokers: {_ids(sorted(live))})")
    current: Plan = {}
    proposed: Plan = {}
    for topic in sorted(topics):
        parts = assignments[topic].partitions
        rf = len(parts[min(parts)].replicas)
        for p, replicas in assign_replicas(brokers, len(parts), rf, rng=rng).items():
            proposed[TopicPartition(topic, p)] = replicas
        for p, a in parts.items():
            current[TopicPartition(topic, p)] = tuple(a.replicas)
    return current, proposed


def generate(store: ZkStore, topics: Sequence[str], brokers: Sequence[int], rng: random.Random | None = None
             ) -> tuple[Plan, Plan]:
    view = read_view(store, topics)
    return propose(view.assignments, topics, brokers, view.live, rng)


# ------------------------------------------------------------------------------ execute
def check_plan(plan: Plan, view: ClusterView) -> Plan:
    """Refuse what the controller would refuse or ignore; returns the current replicas."""
    topics = sorted({tp.topic for tp in plan})
    unknown_topics = [t for t in topics if t not in view.assignments]
    if unknown_topics:
        raise UnknownTopicError(f"{_plural(len(unknown_topics), 'Topic', 'Topics')} "
                                f"{', '.join(unknown_topics)} not found.")
    unknown = [tp for tp in plan if tp.partition not in view.assignments[tp.topic].partitions]
    if unknown:
        raise UnknownTopicError(f"Unable to find {_plural(len(unknown), 'partition', 'partitions')}: {_tps(unknown)}")
    missing = sorted({b for r in plan.values() for b in r} - view.live)
    if missing:
        raise InvalidReplicaAssignmentError(f"Unknown broker {_plural(len(missing), 'id', 'ids')} {_ids(missing)} "
                                            f"(live brokers: {_ids(sorted(view.live))})")
    marked = [t for t in topics if t in view.marked]
    if marked:
        raise InvalidRequestError(f"{_plural(len(marked), 'Topic', 'Topics')} {', '.join(marked)} "
                                  f"{_plural(len(marked), 'is', 'are')} marked for deletion; "
                                  f"{_plural(len(marked), 'its', 'their')} partitions cannot be reassigned.")
    moving = sorted(set(plan) & view.reassigning)
    if moving:
        raise ReassignmentInProgressError(f"{_plural(len(moving), 'Partition', 'Partitions')} {_tps(moving)} "
                                          f"{_plural(len(moving), 'is', 'are')} already being reassigned.")
    current = {tp: tuple(view.assignments[tp.topic].partitions[tp.partition].replicas) for tp in plan}
    same = sorted(tp for tp in plan if plan[tp] == current[tp])
    if same:
        raise InvalidReplicaAssignmentError("; ".join(
            f"Partition {tp} is already assigned to replicas {_ids(current[tp])}" for tp in same)
            + " (a reassignment must change the replica list).")
    return current


@dataclass
class ExecuteResult:
    current: Plan
    throttled_topics: list[str] = field(default_factory=list)
    throttled_brokers: list[int] = field(default_factory=list)


def execute(store: ZkStore, plan: Plan, throttle: int = -1) -> ExecuteResult:
    """Check everything, then write throttles (if any) and `/admin/reassign_partitions`."""
    if store.exists(zn.REASSIGN_PARTITIONS_PATH) is not None:
        raise ReassignmentInProgressError(
            "Cannot execute because there is an existing partition reassignment "
            "(/admin/reassign_partitions exists): wait for it to complete (praha reassign list / verify) "
            "or cancel it (praha reassign cancel).")
    current = check_plan(plan, read_view(store, {tp.topic for tp in plan}))
    result = ExecuteResult(current)
    if throttle >= 0:
        result.throttled_topics, result.throttled_brokers = set_throttles(store, current, plan, throttle)
    try:
        store.create_reassignment(plan)
    except PrahaError as e:
        if "already in progress" in str(e):
            raise ReassignmentInProgressError(
                "Cannot execute because another partition reassignment was started meanwhile.") from None
        raise
    return result


# ------------------------------------------------------------------------------ throttles
def throttle_settings(current: Plan, plan: Plan) -> tuple[dict[str, tuple[str, str]], list[int]]:
    """Per topic (leader replicas, follower replicas) values, and the brokers to rate-limit."""
    leaders: dict[str, set[tuple[int, int]]] = {}
    followers: dict[str, set[tuple[int, int]]] = {}
    brokers: set[int] = set()
    for tp, target in plan.items():
        before = current[tp]
        leaders.setdefault(tp.topic, set()).update((tp.partition, b) for b in before)
        followers.setdefault(tp.topic, set()).update((tp.partition, b) for b in target if b not in before)
        brokers.update(before)
        brokers.update(target)

    def fmt(pairs: set[tuple[int, int]]) -> str:
        return ",".join(f"{p}:{b}" for p, b in sorted(pairs))

    return {t: (fmt(leaders[t]), fmt(followers.get(t, set()))) for t in sorted(leaders)}, sorted(brokers)


def set_throttles(store: ZkStore, current: Plan, plan: Plan, rate: int) -> tuple[list[str], list[int]]:
    """Write the throttle configs of a reassignment (other config keys are kept)."""
    topics, brokers = throttle_settings(current, plan)
    configs, _ = store.get_topic_configs(list(topics))
    for topic, (leader, follower) in topics.items():
        config = dict(configs.get(topic, {}))
        config[LEADER_THROTTLED_REPLICAS] = leader
        config[FOLLOWER_THROTTLED_REPLICAS] = follower
        write_config(store, TOPICS, topic, config)
    for b in brokers:
        config = read_config(store, BROKERS, str(b))
        config.update({LEADER_THROTTLED_RATE: str(rate), FOLLOWER_THROTTLED_RATE: str(rate)})
        write_config(store, BROKERS, str(b), config)
    return list(topics), brokers


def clear_throttles(store: ZkStore, topics: Iterable[str],
                    brokers: Iterable[int] | None = None) -> tuple[list[int], list[str]]:
    """Remove throttle configs from `topics` and from `brokers` (default: every broker that
    has a `/config/brokers/<id>`); returns what was actually changed."""
    if brokers is None:
        brokers = [int(c) for c in store.get_children(zn.CONFIG_BROKERS_PATH) or [] if c.isdigit()]
    cleared_brokers = []
    for b in sorted(set(brokers)):
        config = read_config(store, BROKERS, str(b))
        if any(k in config for k in BROKER_THROTTLE_KEYS):
            write_config(store, BROKERS, str(b), {k: v for k, v in config.items() if k not in BROKER_THROTTLE_KEYS})
            cleared_brokers.append(b)
    topics = sorted(set(topics))
    configs, _ = store.get_topic_configs(topics)
    cleared_topics = []
    for t in topics:
        config = configs.get(t, {})
        if any(k in config for k in TOPIC_THROTTLE_KEYS) and store.exists(zn.topic_path(t)) is not None:
            write_config(store, TOPICS, t, {k: v for k, v in config.items() if k not in TOPIC_THROTTLE_KEYS})
            cleared_topics.append(t)
    return cleared_brokers, cleared_topics


# ------------------------------------------------------------------------------ progress
@dataclass
class PartitionProgress:
    """One partition's reassignment as ZooKeeper shows it."""

    tp: TopicPartition
    replicas: tuple[int, ...]          # the assignment now (OAR ∪ RAR while moving)
    target: tuple[int, ...]            # RAR
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    in_progress: bool
    leader: int = -1
    isr: tuple[int, ...] = ()
    leader_offset: int | None = None   # leader's high watermark, if it answered
    #: log end offsets of replicas not yet in the ISR, by broker (those that answered)
    replica_offsets: dict[int, int] = field(default_factory=dict)

    @property
    def not_in_isr(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.isr)

    @property
    def state(self) -> str:
        if self.in_progress:
            return "in_progress"
        return "complete" if self.replicas == self.target else "failed"


def progress(store: ZkStore, tps: Iterable[TopicPartition] | None,
             targets: Mapping[TopicPartition, Sequence[int]] | None = None,
             view: ClusterView | None = None) -> dict[TopicPartition, PartitionProgress]:
    """Progress of `tps` (None: every partition being reassigned). `targets` (a plan) wins
    over the znode's; a partition the controller has not started yet counts its target's
    new replicas as adding and its dropped ones as removing, as Kafka lists them."""
    if view is None:
        topics = store.get_all_topics() if tps is None else {tp.topic for tp in tps}
        view = read_view(store, topics)
    wanted = sorted(view.reassigning if tps is None else set(tps))
    unknown = [tp for tp in wanted if tp.topic not in view.assignments
               or tp.partition not in view.assignments[tp.topic].partitions]
    if unknown:
        raise UnknownTopicError(f"Unable to find {_plural(len(unknown), 'partition', 'partitions')}: {_tps(unknown)}")
    states, _ = store.get_partition_states(wanted)
    out = {}
    for tp in wanted:
        a = view.assignments[tp.topic].partitions[tp.partition]
        replicas = tuple(a.replicas)
        if targets is not None and tp in targets:
            target = tuple(targets[tp])
        elif tp in view.in_znode:
            target = tuple(view.in_znode[tp])
        else:
            target = a.target_replicas
        moving = a.is_being_reassigned or tp in view.in_znode
        adding, removing = tuple(a.adding), tuple(a.removing)
        if moving and not a.is_being_reassigned:
            adding = tuple(b for b in target if b not in replicas)
            removing = tuple(b for b in replicas if b not in target)
            replicas = tuple(dict.fromkeys(target + replicas))
        st = states.get(tp)
        li = st.leader_and_isr if st else None
        out[tp] = PartitionProgress(tp, replicas if moving else tuple(a.replicas), target, adding, removing, moving,
                                    li.leader if li else -1, tuple(li.isr) if li else ())
    return out


def _latest_offsets(info: BrokerInfo, tps: Iterable[TopicPartition], replica_id: int, timeout: float
                    ) -> dict[TopicPartition, int]:
    """ListOffsets(latest) of `tps` from one broker; {} if it does not answer."""
    from praha.protocol.client import BrokerConnection
    from praha.protocol.messages.gen.produce_fetch import ListOffsetsRequest

    topic_cls = ListOffsetsRequest.ListOffsetsTopic
    part_cls = topic_cls.ListOffsetsPartition
    by_topic = partitions_by_topic(tps)
    request = ListOffsetsRequest(replica_id=replica_id, isolation_level=0, topics=[
        topic_cls(name=t, partitions=[part_cls(partition_index=i, current_leader_epoch=-1, timestamp=-1)
                                      for i in idx]) for t, idx in by_topic.items()])
    try:
        with BrokerConnection(info.host, info.port, timeout=timeout, client_id="praha-admin") as conn:
            response = conn.send(request, 4)
    except PrahaError:
        return {}
    return {TopicPartition(t.name, q.partition_index): q.offset
            for t in response.topics for q in t.partitions if q.error_code == ErrorCode.NONE}


def add_leader_offsets(store: ZkStore, parts: Iterable[PartitionProgress], timeout: float = 2.0) -> None:
    """Best effort, so an operator sees how far behind each new replica is: each leader's
    high watermark (ListOffsets as a consumer), and the log end of every replica not yet
    in the ISR (ListOffsets with Kafka's debugging replica id, answered by followers)."""
    parts = list(parts)
    by_broker: dict[tuple[int, int], list[PartitionProgress]] = {}
    for p in parts:
        if p.leader >= 0:
            by_broker.setdefault((p.leader, CONSUMER_REPLICA_ID), []).append(p)
            for b in p.not_in_isr:
                by_broker.setdefault((b, DEBUGGING_REPLICA_ID), []).append(p)
    if not by_broker:
        return
    brokers, _ = store.get_live_brokers()
    for (broker, replica_id), ps in by_broker.items():
        info = brokers.get(broker)
        if info is None:
            continue
        offsets = _latest_offsets(info, [p.tp for p in ps], replica_id, timeout)
        for p in ps:
            if p.tp not in offsets:
                continue
            if replica_id == CONSUMER_REPLICA_ID:
                p.leader_offset = offsets[p.tp]
            else:
                p.replica_offsets[broker] = offsets[p.tp]


@dataclass
class VerifyResult:
    partitions: dict[TopicPartition, PartitionProgress]
    cleared_brokers: list[int] = field(default_factory=list)
    cleared_topics: list[str] = field(default_factory=list)

    @property
    def all_complete(self) -> bool:
        return all(p.state == "complete" for p in self.partitions.values())


def verify(store: ZkStore, plan: Plan, preserve_throttles: bool = False, with_offsets: bool = True) -> VerifyResult:
    parts = progress(store, plan, targets=plan)
    result = VerifyResult(parts)
    if with_offsets:
        add_leader_offsets(store, [p for p in parts.values() if p.in_progress])
    if result.all_complete and not preserve_throttles:
        result.cleared_brokers, result.cleared_topics = clear_throttles(store, {tp.topic for tp in plan})
    return result


# ------------------------------------------------------------------------------ cancel
@dataclass
class CancelResult:
    cancelled: list[TopicPartition] = field(default_factory=list)
    not_active: list[TopicPartition] = field(default_factory=list)
    errors: dict[TopicPartition, str] = field(default_factory=dict)
    cleared_brokers: list[int] = field(default_factory=list)
    cleared_topics: list[str] = field(default_factory=list)


def cancel_via_api(locate: Callable[[], tuple[str, int]], tps: Collection[TopicPartition],
                   timeout: float = 30.0, security: ClientSecurity = PLAINTEXT
                   ) -> dict[TopicPartition, tuple[int, str | None]]:
    """AlterPartitionReassignments with a null target per partition, to the controller."""
    from praha.admin.controller_api import call_controller
    from praha.protocol.messages.gen.admin import AlterPartitionReassignmentsRequest as Req

    by_topic = partitions_by_topic(sorted(tps))
    request = Req(timeout_ms=int(timeout * 1000), allow_replication_factor_change=True, topics=[
        Req.ReassignableTopic(name=t, partitions=[Req.ReassignableTopic.ReassignablePartition(
            partition_index=p, replicas=None) for p in ps]) for t, ps in by_topic.items()])
    response, _ = call_controller(locate, request, lambda r: r.error_code == ErrorCode.NOT_CONTROLLER,
                                  timeout=timeout + 5, security=security)
    if response.error_code != ErrorCode.NONE:
        raise PrahaError(f"the controller refused the cancellation: {_code_name(response.error_code)}"
                         + (f": {response.error_message}" if response.error_message else ""))
    return {TopicPartition(t.name, p.partition_index): (p.error_code, p.error_message)
            for t in response.responses for p in t.partitions}


def cancel(store: ZkStore, locate: Callable[[], tuple[str, int]], tps: Collection[TopicPartition] | None,
           preserve_throttles: bool = False, timeout: float = 30.0) -> CancelResult:
    """Cancel the given partitions' reassignments (None: every one in flight)."""
    if tps is None:
        tps = sorted(read_view(store, store.get_all_topics()).reassigning)
    else:
        progress(store, tps)  # unknown partitions are an error before anything is sent
    result = CancelResult()
    if tps:
        for tp, (code, message) in sorted(cancel_via_api(locate, tps, timeout).items()):
            if code == ErrorCode.NONE:
                result.cancelled.append(tp)
            elif code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS:
                result.not_active.append(tp)
            else:
                result.errors[tp] = f"{_code_name(code)}" + (f": {message}" if message else "")
    if not preserve_throttles and result.cancelled:
        still = read_view(store, store.get_all_topics()).reassigning
        topics = {tp.topic for tp in result.cancelled} - {tp.topic for tp in still}
        brokers: list[int] | None = None if not still else []
        result.cleared_brokers, result.cleared_topics = clear_throttles(store, topics, brokers)
    return result


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


__all__ = [
    "Plan", "parse_topics_to_move", "parse_broker_list", "parse_plan", "format_plan", "propose", "generate",
    "check_plan", "execute", "ExecuteResult", "throttle_settings", "set_throttles", "clear_throttles",
    "PartitionProgress", "progress", "add_leader_offsets", "verify", "VerifyResult", "cancel", "cancel_via_api",
    "CancelResult", "read_view", "ClusterView",
]
