"""Shared machinery of the consumer-group benchmarks (issue 11: rebalance, offset_commit,
coordinator_failover).

A local 3-broker cluster (embedded ZooKeeper + broker processes, `LocalCluster`) in a
temporary directory with the group settings of the benches, stopped by PID in `finally`;
topics created with an explicit replica assignment; `__consumer_offsets` created by a first
FindCoordinator and waited for (every partition led); the machine's load over a window
(`Load`); medians and section writing. 127.0.0.1 only, every wait bounded.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness import median  # noqa: E402,F401 - the group benches import it from here
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest  # noqa: E402
from produce import start_cluster  # noqa: E402

from praha.cluster.local import LocalCluster  # noqa: E402
from praha.common import ReplicaAssignment, TopicAssignment, new_topic_id  # noqa: E402
from praha.coordinator.group.records import OFFSETS_TOPIC, partition_for  # noqa: E402
from praha.protocol.client import BrokerConnection  # noqa: E402
from praha.zk.store import ZkStore  # noqa: E402

#: group settings of every group bench: no initial rebalance delay (the brief), commits
#: bounded, the session timeouts the benches use allowed
GROUP_BROKER_CONFIG = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.fetch.wait.max.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.commit.timeout.ms": "5000",
}


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (from /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pids: Sequence[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            total += (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


class Load:
    """Over a window: the machine's busy share of all CPUs, and the share taken by processes
    other than this one and `pids` (the brokers): other helpers share the machine."""

    def __init__(self, pids: Sequence[int] = ()):
        self.pids = list(pids)
        self.t0 = time.perf_counter()
        self.busy0 = machine_busy_seconds()
        self.own0 = process_cpu_s(self.pids) + time.process_time()

    def done(self) -> dict[str, float]:
        wall = max(time.perf_counter() - self.t0, 1e-9)
        cpus = os.cpu_count() or 1
        busy = machine_busy_seconds() - self.busy0
        own = process_cpu_s(self.pids) + time.process_time() - self.own0
        return {"busy": busy / (wall * cpus), "others": max(busy - own, 0.0) / (wall * cpus),
                "own_cpu_s": own}


@contextmanager
def group_cluster(keep_dir: bool = False, overrides: dict[str, str] | None = None,
                  prefix: str = "praha-bench-groups-") -> Iterator[LocalCluster]:
    """A 3-broker local cluster with GROUP_BROKER_CONFIG; everything stopped by PID after."""
    root = tempfile.mkdtemp(prefix=prefix)
    cluster = LocalCluster(root)
    try:
        start_cluster(cluster, {**GROUP_BROKER_CONFIG, **(overrides or {})}, timeout=90)
        yield cluster
    finally:
        cluster.down()
        if keep_dir:
            print(f"cluster dir kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def bootstrap(cluster: LocalCluster) -> str:
    return ",".join(f"127.0.0.1:{b.port}" for b in cluster.load().brokers.values())


def broker_pids(cluster: LocalCluster) -> list[int]:
    """The brokers' PIDs and ZooKeeper's (the cluster's own processes, for `Load`)."""
    state = cluster.load()
    return [b.pid for b in state.brokers.values()] + ([state.zookeeper_pid] if state.zookeeper_pid > 0 else [])


def wait_until(pred: Callable[[], object], timeout: float, what: str, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(step)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def metadata(host: str, port: int, topics: list[str] | None) -> object:
    with BrokerConnection(host, port, timeout=30) as conn:
        req = MetadataRequest[7](topics=topics, allow_auto_topic_creation=False)
        return conn.send(req, 7)


def leaders(cluster: LocalCluster, topic: str, via: int | None = None) -> dict[int, int]:
    """partition -> leader id of `topic`, from one live broker's Metadata (-1: none)."""
    brokers = cluster.load().brokers
    b = brokers[via] if via is not None else next(iter(brokers.values()))
    md = metadata("127.0.0.1", b.port, [topic])
    for t in md.topics:  # type: ignore[attr-defined]
        if t.name == topic:
            return {p.partition_index: p.leader_id for p in t.partitions}
    return {}


def create_topic(cluster: LocalCluster, name: str, partitions: int, rf: int = 3,
                 config: dict[str, str] | None = None,
                 assignment: dict[int, tuple[int, ...]] | None = None, timeout: float = 120) -> None:
    """Create through ZooKeeper (as the admin tools do) and wait until every partition is led
    in every broker's metadata."""
    state = cluster.load()
    ids = sorted(state.brokers)
    if assignment is None:
        assignment = {p: tuple(ids[(p + i) % len(ids)] for i in range(rf)) for p in range(partitions)}
    store = ZkStore(state.zookeeper).start()
    try:
        # with a topic id, as Kafka's tools write it (a KIP-848 group assigns by topic id)
        store.create_topic(name, TopicAssignment({p: ReplicaAssignment(r) for p, r in assignment.items()},
                                                 new_topic_id()), config or {})
    finally:
        store.stop()
    for bid in ids:
        wait_until(lambda bid=bid: (lambda ls: len(ls) == partitions and min(ls.values()) >= 0)(
            leaders(cluster, name, via=bid)), timeout, f"{name}'s leaders in broker {bid}'s metadata", step=0.2)


def ensure_offsets_topic(cluster: LocalCluster, timeout: float = 120) -> dict[int, int]:
    """FindCoordinator until `__consumer_offsets` exists and every one of its partitions has a
    leader in every broker's metadata; returns partition -> leader."""
    b = next(iter(cluster.load().brokers.values()))

    def found() -> bool:
        with BrokerConnection("127.0.0.1", b.port, timeout=30) as conn:
            return conn.send(FindCoordinatorRequest(key="bench-probe", key_type=0), 3).error_code == 0

    wait_until(found, timeout, "FindCoordinator to answer (the offsets topic created)", step=0.2)
    for bid in cluster.load().brokers:
        wait_until(lambda bid=bid: (lambda ls: len(ls) == 50 and min(ls.values()) >= 0)(
            leaders(cluster, OFFSETS_TOPIC, via=bid)), timeout, f"{OFFSETS_TOPIC} led in broker {bid}", step=0.2)
    return leaders(cluster, OFFSETS_TOPIC)


def offsets_assignment(cluster: LocalCluster) -> dict[int, tuple[int, ...]]:
    """`__consumer_offsets`' replica assignment from ZooKeeper (so a bench topic can copy it)."""
    state = cluster.load()
    store = ZkStore(state.zookeeper).start()
    try:
        ta = store.get_topic_assignments([OFFSETS_TOPIC])[0][OFFSETS_TOPIC]
    finally:
        store.stop()
    return {p: tuple(ra.replicas) for p, ra in ta.partitions.items()}


def groups_on(partitions: set[int], n: int, prefix: str) -> list[str]:
    """The first `n` group ids `prefix-<i>` whose `__consumer_offsets` partition is in `partitions`."""
    out: list[str] = []
    i = 0
    while len(out) < n:
        g = f"{prefix}-{i}"
        if partition_for(g, 50) in partitions:
            out.append(g)
        i += 1
    return out


def ms(x: float) -> str:
    return "—" if x != x else f"{x * 1000:,.0f}"


SECTION = "## Consumer groups (issue 11)"
SECTION_INTRO = (
    "The speed benchmarks of issue 11 (\"Speed\"): rebalances of 10 confluent-kafka members over 900 "
    "partitions, offset commits next to acks=all produce requests, and the coordinator's failover with 1,000 "
    "groups. Each script rewrites its own subsection below. Figures, not asserts; the machine is shared with "
    "other work (its load is recorded next to each figure).")


def write_subsection(results: Path, sub_heading: str, text: str) -> None:
    """Replace (or add) the `### ...` subsection `sub_heading` inside the `## Consumer groups
    (issue 11)` section of RESULTS.md, keeping the other subsections."""
    from harness import write_section

    body = results.read_text() if results.exists() else ""
    start = body.find(SECTION + "\n")
    if start >= 0:
        nxt = body.find("\n## ", start + 1)
        section = body[start:nxt + 1 if nxt >= 0 else len(body)]
    else:
        section = f"{SECTION}\n\n{SECTION_INTRO}\n"
    text = text.rstrip("\n") + "\n"
    if not text.startswith(sub_heading + "\n"):
        raise ValueError("the subsection must start with its heading line")
    s = section.find(sub_heading + "\n")
    if s >= 0:
        e = section.find("\n### ", s + 1)
        section = section[:s] + text + ("\n" + section[e + 1:] if e >= 0 else "")
    else:
        section = section.rstrip("\n") + "\n\n" + text
    write_section(results, SECTION, section)
