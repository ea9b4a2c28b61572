"""What the console asks of the cluster, as one user: confluent-kafka's admin client (topics,
configs, offsets, ACLs, SCRAM users), praha's wire clients (groups, transactions, log dirs,
login) and ZooKeeper reads (controller epoch, quotas). Every answer is a small dataclass the
pages render; every failure is a `ConsoleError` with Kafka's error name and message.

Nothing here reaches into a broker process: a user without Describe on a topic does not get
it from Metadata, so the pages never show it."""
from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import confluent_kafka as _confluent_kafka
import confluent_kafka.admin as _confluent_admin

from praha.admin.group_plans import (
    GroupInputError,
    PartitionRow,
    ResetMode,
    ResetPlan,
    ResetSpec,
    partition_rows,
    plan_reset,
)
from praha.admin.groups import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    GroupAdminError,
    GroupDescription,
    GroupListing,
    error_message,
)
from praha.admin.records import describe_log_dirs
from praha.admin.transactions import TransactionAdmin
from praha.common import TopicPartition
from praha.console.target import Target
from praha.errors import ErrorCode, PrahaError
from praha.protocol.api_keys import ApiKey
from praha.protocol.client import BrokerConnection
from praha.protocol.client_security import ClientSecurity, SaslAuthenticationError
from praha.protocol.messages.gen.admin import DescribeLogDirsRequest
from praha.protocol.messages.gen.metadata import MetadataRequest
from praha.protocol.messages.gen.produce_fetch import ListOffsetsRequest

#: confluent-kafka's modules, untyped here: its stubs export fewer names than it has
ck: Any = _confluent_kafka
cka: Any = _confluent_admin
T = TypeVar("T")
log = logging.getLogger(__name__)
#: how long a computed table stays fresh: pages that refresh live ask at most this often
FRESH_S = 1.5
#: topics on one page of the topic list (a page may ask for up to MAX_PAGE_SIZE)
PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
TIMEOUT_S = 10.0


class ConsoleError(PrahaError):
    """A failure shown on the page as is (nothing was changed)."""


class LoginError(ConsoleError):
    code = ErrorCode.SASL_AUTHENTICATION_FAILED


def _kafka_error(e: Exception) -> ConsoleError:
    """confluent-kafka's KafkaException → a ConsoleError carrying Kafka's error name."""
    err: Any = e.args[0] if e.args else None
    if hasattr(err, "name") and hasattr(err, "str"):
        code = None
        try:
            code = ErrorCode(err.code())
        except (ValueError, TypeError):
            pass
        return ConsoleError(f"{err.name()}: {err.str()}", code)
    return ConsoleError(str(e))


# ------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class LogDirUsage:
    path: str
    used_bytes: int
    total_bytes: int
    usable_bytes: int
    error: str | None


@dataclass
class BrokerRow:
    id: int
    host: str
    port: int
    rack: str | None
    alive: bool
    controller: bool
    epoch: int = -1
    leaders: int = 0
    replicas: int = 0
    under_replicated: int = 0
    offline: int = 0
    log_dirs: list[LogDirUsage] = field(default_factory=list)
    log_dirs_error: str | None = None


@dataclass(frozen=True)
class ZkState:
    connect: str
    state: str
    controller_epoch: int
    error: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    log_start: int | None = None
    high_watermark: int | None = None
    last_stable: int | None = None

    @property
    def offline(self) -> bool:
        return self.leader < 0

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


@dataclass(frozen=True)
class TopicRow:
    name: str
    partitions: int
    replication: int
    size_bytes: int
    messages: int
    under_replicated: int
    offline: int
    lag: int
    internal: bool


@dataclass(frozen=True)
class TopicPage:
    """One page of the topic list: the rows shown and where they sit among all the topics."""

    rows: list[TopicRow]
    matching: int
    page: int
    pages: int
    size: int
    taken_ms: int


@dataclass
class Overview:
    cluster_id: str
    controller_id: int
    zookeeper: ZkState | None
    brokers: list[BrokerRow]
    topics: int
    partitions: int
    under_replicated: int
    offline: int
    taken_ms: int


@dataclass(frozen=True)
class ConfigRow:
    name: str
    value: str | None
    source: str
    read_only: bool
    sensitive: bool


@dataclass(frozen=True)
class GroupRow:
    group_id: str
    type: str
    protocol_type: str
    state: str
    members: int
    lag: int | None


@dataclass
class GroupDetail:
    group_id: str
    type: str
    description: GroupDescription
    rows: list[PartitionRow]
    lag: int | None


@dataclass(frozen=True, order=True)
class AclRow:
    principal: str
    host: str
    operation: str
    permission: str
    resource_type: str
    name: str
    pattern: str


# ------------------------------------------------------------------------------ the wire admin
class WireAdmin(TransactionAdmin):
    """praha's group and transaction admin, over the user's TLS/SASL settings."""

    def __init__(self, bootstrap: str, security: ClientSecurity, timeout: float = TIMEOUT_S):
        super().__init__(bootstrap, timeout=timeout, retries=4)
        self.client_id = "praha-console"
        self.security = security

    def list_all_groups(self) -> list[GroupListing]:
        """Every group of every protocol type (kafka-consumer-groups lists only consumer groups;
        a console shows Connect's and others' too, as the brokers report them)."""
        found: dict[str, GroupListing] = {}
        for node in sorted(self.cluster(()).brokers.values()):
            for g in self._list_on(node, ()):
                found.setdefault(g.group_id, g)
        return [found[g] for g in sorted(found)]

    def offsets_on(self, host: str, port: int, topics: Mapping[str, Sequence[int]], timestamp: int
                   ) -> dict[TopicPartition, int | None]:
        """One ListOffsets to the broker at host:port for all of `topics`' partitions (None
        where it answers an error); a connection that fails is dropped and the error raised."""
        request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=name, partitions=[
                ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=p, current_leader_epoch=-1, timestamp=timestamp) for p in parts])
            for name, parts in topics.items()])
        try:
            resp = self._send(host, port, ApiKey.LIST_OFFSETS, lambda _version: request)
        except PrahaError:
            self._forget(host, port)
            raise
        return {TopicPartition(t.name, p.partition_index): p.offset if p.error_code == ErrorCode.NONE else None
                for t in resp.topics for p in t.partitions}

    def metadata_of(self, names: Sequence[str]) -> Any:
        """Metadata for these topics only (never all: a page asks for its own)."""
        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in names],
                                  allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                                  include_topic_authorized_operations=False)
        return self._any_broker(lambda h, p: self._send(h, p, ApiKey.METADATA, lambda _version: request))

    def sizes_on(self, host: str, port: int, topics: Mapping[str, Sequence[int]]) -> dict[TopicPartition, int | None]:
        """One DescribeLogDirs to the broker at host:port for `topics`' partitions: each
        replica's size there (a replica being moved to another dir counted once)."""
        D = DescribeLogDirsRequest.DescribableLogDirTopic
        request = DescribeLogDirsRequest(topics=[D(topic=t, partitions=list(ps)) for t, ps in topics.items()])
        try:
            resp = self._send(host, port, ApiKey.DESCRIBE_LOG_DIRS, lambda _version: request)
        except PrahaError:
            self._forget(host, port)
            raise
        return {TopicPartition(t.name, p.partition_index): p.partition_size
                for r in resp.results if r.error_code == ErrorCode.NONE
                for t in r.topics for p in t.partitions if not p.is_future_key}

    def _connection(self, host: str, port: int) -> BrokerConnection:
        key = (host, port)
        conn = self._connections.get(key)
        if conn is None:
            conn = BrokerConnection(host, port, timeout=self.timeout, client_id=self.client_id,
                                    security=self.security)
            self._connections[key] = conn
        return conn


#: lag samples per group, shared by every session: (time_ms, total lag)
LAG_HISTORY: dict[str, deque[tuple[int, int]]] = defaultdict(lambda: deque(maxlen=720))
#: brokers ever seen alive, so a dead broker stays on the page, marked offline
_SEEN_BROKERS: dict[int, tuple[str, int, str | None]] = {}
_SEEN_LOCK = threading.Lock()


class ClusterClient:
    """The cluster as one user sees it. Thread-safe (a lock per client): pages of one
    session are served one at a time."""

    def __init__(self, target: Target, user: str = "", password: str = "", zk: Any = None):

        self.target = target
        self.user = user
        self._password = password
        self.admin = cka.AdminClient({**target.confluent(user, password), "client.id": "praha-console"})
        self.wire_security = target.wire(user, password)
        self.wire = WireAdmin(target.bootstrap, self.wire_security)
        self.zk = zk  # a started ZkStore shared by the console, or None
        self._lock = threading.RLock()
        self._cache: dict[str, tuple[float, Any]] = {}
        #: the topic list's wire clients, one per question asked at once (one page at a time)
        self._page_lock = threading.Lock()
        self._page_wire = WireAdmin(target.bootstrap, self.wire_security)
        self._leader_wire = {what: WireAdmin(target.bootstrap, self.wire_security)
                             for what in ("earliest", "latest", "sizes")}

    def close(self) -> None:
        self.wire.close()
        self._page_wire.close()
        for w in self._leader_wire.values():
            w.close()

    def confluent_config(self) -> dict[str, str]:
        return self.target.confluent(self.user, self._password)

    def check_login(self) -> None:
        """Authenticate once at the first broker; a wrong password raises LoginError."""
        unreachable = []
        for item in self.target.bootstrap.split(","):
            host, _, port = item.strip().rpartition(":")
            try:
                with BrokerConnection(host, int(port), timeout=TIMEOUT_S, client_id="praha-console",
                                      security=self.wire_security):
                    return
            except SaslAuthenticationError as e:
                raise LoginError(f"login failed for user {self.user!r}: {e}") from None
            except PrahaError as e:
                unreachable.append(f"{host}:{port}: {e}")
        raise LoginError("no broker answered: " + "; ".join(unreachable))

    def _cached(self, key: str, compute: Callable[[], T], fresh: float = FRESH_S) -> T:
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and time.monotonic() - hit[0] < fresh:
            return hit[1]  # type: ignore[no-any-return]
        value = compute()  # outside the lock: a computation may ask for other cached answers from threads
        with self._lock:
            self._cache[key] = (time.monotonic(), value)
        return value

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()

    # -- metadata -------------------------------------------------------------------------
    def metadata(self) -> Any:
        def compute() -> Any:
            try:
                return self.admin.list_topics(timeout=TIMEOUT_S)
            except Exception as e:
                raise _kafka_error(e) from None
        return self._cached("metadata", compute, fresh=1.0)

    def _describe_cluster(self) -> Any:
        try:
            return self.admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
        except Exception as e:
            raise _kafka_error(e) from None

    def zk_state(self) -> ZkState | None:
        if self.zk is None:
            return None
        connect = self.target.zookeeper or ""
        try:
            epoch = self.zk.get_controller_epoch()
            return ZkState(connect, str(self.zk.client.state), -1 if epoch is None else epoch[0])
        except Exception as e:  # ZooKeeper down or corrupt: shown, not raised
            return ZkState(connect, str(getattr(self.zk.client, "state", "?")), -1, str(e))

    def overview(self) -> Overview:
        return self._cached("overview", self._overview)

    def _overview(self) -> Overview:
        t0 = time.monotonic()
        md = self.metadata()
        cluster = self._describe_cluster()
        racks = {n.id: n.rack for n in cluster.nodes}
        controller = cluster.controller.id if cluster.controller is not None else -1
        live = {b.id: (b.host, b.port, racks.get(b.id)) for b in md.brokers.values()}
        with _SEEN_LOCK:
            _SEEN_BROKERS.update(live)
            seen = dict(_SEEN_BROKERS)
        epochs: dict[int, int] = {}
        if self.zk is not None:
            try:
                registered, _ = self.zk.get_live_brokers()
                epochs = {b.id: b.epoch for b in registered.values()}
            except Exception:
                pass
        rows = {bid: BrokerRow(bid, h, p, r, bid in live, bid == controller, epochs.get(bid, -1))
                for bid, (h, p, r) in seen.items()}
        n_parts = urp = offline = 0
        for t in md.topics.values():
            for p in t.partitions.values():
                n_parts += 1
                for r in p.replicas:
                    if r not in rows:
                        rows[r] = BrokerRow(r, "?", 0, None, False, False)
                    rows[r].replicas += 1
                if p.leader in rows:
                    rows[p.leader].leaders += 1
                if p.leader < 0:
                    offline += 1
                    for r in p.replicas:
                        rows[r].offline += 1
                elif len(p.isrs) < len(p.replicas):
                    urp += 1
                    rows[p.leader].under_replicated += 1
        self._add_log_dirs(rows)
        return Overview(md.cluster_id or cluster.cluster_id or "", controller, self.zk_state(),
                        [rows[b] for b in sorted(rows)], len(md.topics), n_parts, urp, offline,
                        int((time.monotonic() - t0) * 1000))

    def _log_dirs(self) -> list[Any]:
        return self._cached("log_dirs", lambda: describe_log_dirs(
            self.target.bootstrap, timeout=TIMEOUT_S, security=self.wire_security), fresh=5.0)

    def _add_log_dirs(self, rows: dict[int, BrokerRow]) -> None:
        try:
            described = self._log_dirs()
        except PrahaError as e:
            for r in rows.values():
                r.log_dirs_error = str(e)
            return
        for b in described:
            row = rows.get(b.broker)
            if row is None:
                continue
            row.log_dirs_error = b.error
            row.log_dirs = [LogDirUsage(d.path, sum(p.size for p in d.partitions), d.total_bytes, d.usable_bytes,
                                        d.error) for d in b.dirs]

    # -- topics ---------------------------------------------------------------------------
    def topic_names(self) -> list[str]:
        """Every topic this user may see, in order. Without a login every visitor sees every
        topic, so ZooKeeper's /brokers/topics answers (cheap at any size); with one, Metadata,
        which leaves out the topics the user may not describe."""
        if self.zk is None or self.target.needs_login:
            return sorted(self.metadata().topics)

        def from_zookeeper() -> list[str]:
            try:
                return sorted(self.zk.get_all_topics())
            except Exception as e:  # ZooKeeper unreachable: the brokers still answer
                log.warning("console: topic names from Metadata, ZooKeeper failed: %s", e)
                return sorted(self.metadata().topics)
        return self._cached("names", from_zookeeper)

    def partitions_of(self, topic: str) -> list[PartitionInfo]:
        t = self.metadata().topics.get(topic)
        if t is None or (t.error is not None and not t.partitions):
            raise ConsoleError(f"UNKNOWN_TOPIC_OR_PARTITION: topic {topic!r} does not exist "
                               "(or you may not describe it)", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        live = {b for b in self.metadata().brokers}
        return [PartitionInfo(p.id, p.leader, tuple(p.replicas), tuple(p.isrs),
                              tuple(r for r in p.replicas if r not in live))
                for p in sorted(t.partitions.values(), key=lambda p: p.id)]

    def list_offsets(self, tps: Sequence[TopicPartition], spec: str, committed: bool = False,
                     timestamp: int = 0) -> dict[TopicPartition, int | None]:
        """ListOffsets through the admin client: spec earliest, latest or timestamp;
        `committed`: read_committed (the last stable offset for latest)."""

        if not tps:
            return {}
        what = {"earliest": cka.OffsetSpec.earliest(), "latest": cka.OffsetSpec.latest()}.get(spec) \
            or cka.OffsetSpec.for_timestamp(timestamp)
        level = ck.IsolationLevel.READ_COMMITTED if committed else ck.IsolationLevel.READ_UNCOMMITTED
        futures = self.admin.list_offsets({ck.TopicPartition(tp.topic, tp.partition): what for tp in tps},
                                          isolation_level=level, request_timeout=TIMEOUT_S)
        out: dict[TopicPartition, int | None] = {}
        for ctp, fut in futures.items():
            try:
                out[TopicPartition(ctp.topic, ctp.partition)] = fut.result(TIMEOUT_S).offset
            except Exception:
                out[TopicPartition(ctp.topic, ctp.partition)] = None
        return out

    def topic(self, name: str) -> list[PartitionInfo]:
        parts = self.partitions_of(name)
        tps = [TopicPartition(name, p.partition) for p in parts]
        start = self.list_offsets(tps, "earliest")
        hw = self.list_offsets(tps, "latest")
        lso = self.list_offsets(tps, "latest", committed=True)
        return [PartitionInfo(p.partition, p.leader, p.replicas, p.isr, p.offline_replicas,
                              start.get(tp), hw.get(tp), lso.get(tp)) for p, tp in zip(parts, tps)]

    def topics_page(self, page: int = 1, size: int = PAGE_SIZE, query: str = "", internal: bool = False
                    ) -> TopicPage:
        """One page of the topic list, names in order, `query` a part of the name. Only the
        page's topics are asked about (Metadata, ListOffsets, DescribeLogDirs), so a page
        costs the same at 20 topics or 20,000, as in other Kafka consoles."""
        t0 = time.monotonic()
        names = [n for n in self.topic_names() if (internal or not n.startswith("__")) and query in n]
        pages = max(1, -(-len(names) // size))
        page = min(max(1, page), pages)
        rows = self._topic_rows(names[(page - 1) * size: page * size])
        return TopicPage(rows, len(names), page, pages, size, int((time.monotonic() - t0) * 1000))

    def _topic_rows(self, names: Sequence[str]) -> list[TopicRow]:
        if not names:
            return []
        # the page's Metadata first; then ListOffsets earliest and latest and DescribeLogDirs at
        # once, each one request per leader for the partitions it leads; every group's committed
        # offsets (for lag) are asked beside them and kept a few seconds
        with self._page_lock, ThreadPoolExecutor(3, thread_name_prefix="console-topics") as pool:
            f_committed = pool.submit(self._cached, "committed", self._all_committed, 3.0)
            parts, brokers = self._metadata_of(names)
            by_leader: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
            for name, of_topic in parts.items():
                for p in of_topic:
                    if p.leader in brokers:
                        by_leader[p.leader][name].append(p.partition)
            f_start = pool.submit(self._per_leader, "earliest", brokers, by_leader)
            f_sizes = pool.submit(self._per_leader, "sizes", brokers, by_leader)
            end = self._per_leader("latest", brokers, by_leader)
            start, sizes = f_start.result(), f_sizes.result()
            lag = self._lag_by_topic(f_committed.result(), end)
        rows = []
        for name in names:
            infos = parts.get(name)
            if infos is None:
                continue  # gone since it was listed, or not for this user
            tps = [TopicPartition(name, p.partition) for p in infos]
            known = [size for tp in tps if (size := sizes.get(tp)) is not None]
            rows.append(TopicRow(
                name, len(infos), max((len(p.replicas) for p in infos), default=0),
                sum(known) if len(known) == len(tps) else -1,
                sum((end.get(tp) or 0) - (start.get(tp) or 0) for tp in tps),
                sum(1 for p in infos if not p.offline and p.under_replicated), sum(1 for p in infos if p.offline),
                lag.get(name, 0), name.startswith("__")))
        return rows

    def _metadata_of(self, names: Sequence[str]) -> tuple[dict[str, list[PartitionInfo]], dict[int, tuple[str, int]]]:
        """Metadata for `names` only: their partitions (leaving out a topic Metadata has no
        partitions for) and the live brokers."""
        try:
            md = self._page_wire.metadata_of(names)
        except PrahaError as e:
            raise ConsoleError(f"Metadata: {e}", getattr(e, "code", None)) from None
        brokers = {b.node_id: (b.host, b.port) for b in md.brokers}
        parts = {t.name: [PartitionInfo(p.partition_index, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes),
                                        tuple(r for r in p.replica_nodes if r not in brokers))
                          for p in sorted(t.partitions, key=lambda p: p.partition_index)]
                 for t in md.topics if t.partitions}
        return parts, brokers

    def _per_leader(self, what: str, brokers: Mapping[int, tuple[str, int]],
                    by_leader: Mapping[int, Mapping[str, list[int]]]) -> dict[TopicPartition, int | None]:
        """One request to each leader for the partitions it leads: ListOffsets `earliest` or
        `latest`, or DescribeLogDirs (`sizes`: the leader's replica's size). A broker that
        fails leaves its partitions out (logged)."""
        wire = self._leader_wire[what]
        out: dict[TopicPartition, int | None] = {}
        for leader, topics in sorted(by_leader.items()):
            host, port = brokers[leader]
            try:
                if what == "sizes":
                    out.update(wire.sizes_on(host, port, topics))
                else:
                    out.update(wire.offsets_on(host, port, topics,
                                               EARLIEST_TIMESTAMP if what == "earliest" else LATEST_TIMESTAMP))
            except PrahaError as e:
                log.warning("console: %s from broker %d failed: %s", what, leader, e)
        return out

    def _all_committed(self) -> dict[str, dict[TopicPartition, Any]] | None:
        """Every group's committed offsets (None when they cannot be had)."""
        try:
            groups = [g.group_id for g in self.wire.list_all_groups()]
            return self.wire.committed_offsets_of(groups) if groups else {}
        except PrahaError as e:
            log.warning("console: group offsets unavailable for topic lag: %s", e)
            return None

    @staticmethod
    def _lag_by_topic(committed: Mapping[str, Mapping[TopicPartition, Any]] | None,
                      end: Mapping[TopicPartition, int | None]) -> dict[str, int]:
        """Consumer lag summed over every group, per topic."""
        out: dict[str, int] = defaultdict(int)
        for offsets in (committed or {}).values():
            for tp, c in offsets.items():
                last = end.get(tp)
                if last is not None and c.offset >= 0:
                    out[tp.topic] += max(0, last - c.offset)
        return out

    def configs(self, name: str) -> list[ConfigRow]:

        self.partitions_of(name)
        res = cka.ConfigResource(cka.ConfigResource.Type.TOPIC, name)
        try:
            entries = self.admin.describe_configs([res], request_timeout=TIMEOUT_S)[res].result(TIMEOUT_S)
        except Exception as e:
            raise _kafka_error(e) from None
        return [ConfigRow(c.name, None if c.is_sensitive else c.value, c.source_name(c.source)
                          if hasattr(c, "source_name") else _source(c.source), bool(c.is_read_only),
                          bool(c.is_sensitive)) for c in sorted(entries.values(), key=lambda c: c.name)]

    # -- changes (each one logged by the caller) ----------------------------------------------
    def _wait(self, futures: Mapping[Any, Any]) -> None:
        try:
            for f in futures.values():
                f.result(TIMEOUT_S * 3)
        except Exception as e:
            raise _kafka_error(e) from None
        finally:
            self.invalidate()

    def _one(self, futures: Mapping[Any, Any]) -> Any:
        """The result of a change's one future (Kafka's error raised); cached answers dropped."""
        try:
            return next(iter(futures.values())).result(TIMEOUT_S * 3)
        except Exception as e:
            raise _kafka_error(e) from None
        finally:
            self.invalidate()

    def alter_config(self, topic: str, key: str, value: str | None) -> None:
        """Set (or with None, delete) one topic config: IncrementalAlterConfigs, validated
        by the broker first (validate_only), so an invalid value changes nothing."""

        self.partitions_of(topic)
        op = cka.AlterConfigOpType.DELETE if value is None else cka.AlterConfigOpType.SET
        entry = cka.ConfigEntry(key, value, incremental_operation=op)
        res = cka.ConfigResource(cka.ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])
        self._wait(self.admin.incremental_alter_configs([res], request_timeout=TIMEOUT_S, validate_only=True))
        self._wait(self.admin.incremental_alter_configs([res], request_timeout=TIMEOUT_S))

    def create_topic(self, name: str, partitions: int, replication: int, configs: Mapping[str, str]) -> None:

        self._wait(self.admin.create_topics([cka.NewTopic(name, partitions, replication, config=dict(configs))],
                                            request_timeout=TIMEOUT_S, operation_timeout=TIMEOUT_S))

    def delete_topic(self, name: str) -> None:
        self.partitions_of(name)
        self._wait(self.admin.delete_topics([name], request_timeout=TIMEOUT_S, operation_timeout=TIMEOUT_S))

    def add_partitions(self, name: str, total: int) -> None:

        self.partitions_of(name)
        self._wait(self.admin.create_partitions([cka.NewPartitions(name, total)], request_timeout=TIMEOUT_S,
                                                operation_timeout=TIMEOUT_S))

    def delete_records(self, name: str, partition: int, before: int) -> int:
        """Delete records below `before` (-1: the high watermark); the new log start."""

        if partition not in {p.partition for p in self.partitions_of(name)}:
            raise ConsoleError(f"UNKNOWN_TOPIC_OR_PARTITION: {name} has no partition {partition}",
                               ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        result = self._one(self.admin.delete_records([ck.TopicPartition(name, partition, before)],
                                                     request_timeout=TIMEOUT_S, operation_timeout=TIMEOUT_S))
        return int(result.low_watermark)

    # -- groups ---------------------------------------------------------------------------
    def groups(self) -> list[GroupRow]:
        return self._cached("groups", self._groups)

    def _groups(self) -> list[GroupRow]:
        try:
            listed = self.wire.list_all_groups()
            ids = [g.group_id for g in listed]
            modern = [g.group_id for g in listed if g.group_type == "consumer"]  # KIP-848: not DescribeGroups'
            classic = [i for i in ids if i not in set(modern)]
            described = {**(self.wire.describe_groups(classic) if classic else {}),
                         **(self.wire.describe_consumer_groups(modern) if modern else {})}
            committed = self.wire.committed_offsets_of(ids) if ids else {}
        except PrahaError as e:
            raise ConsoleError(f"groups: {e}", getattr(e, "code", None)) from None
        tps = sorted({tp for offsets in committed.values() for tp in offsets})
        end = self.list_offsets(tps, "latest")
        rows = []
        for g in listed:
            d = described.get(g.group_id)
            total = _total_lag(committed.get(g.group_id, {}), end)
            rows.append(GroupRow(g.group_id, g.group_type or "classic", g.protocol_type or "",
                                 (d.state if d else g.state) or "Unknown", len(d.members) if d else 0, total))
        return rows

    def group(self, group_id: str) -> GroupDetail:
        try:
            d = self.wire.describe_groups_of_any_type([group_id])[group_id]
            committed = {tp: c.offset for tp, c in self.wire.committed_offsets(group_id).items()}
        except PrahaError as e:
            raise ConsoleError(f"group {group_id!r}: {e}", getattr(e, "code", None)) from None
        if not d.exists and not committed:
            raise ConsoleError(f"GROUP_ID_NOT_FOUND: group {group_id!r} does not exist",
                               ErrorCode.GROUP_ID_NOT_FOUND)
        tps = sorted(set(committed) | {tp for m in d.members for tp in m.assignment})
        end = self.list_offsets(tps, "latest")
        rows = partition_rows(group_id, d.members, committed, end)
        total = sum(r.lag for r in rows if r.lag is not None) if rows else None
        if total is not None:
            LAG_HISTORY[group_id].append((int(time.time() * 1000), total))
        return GroupDetail(group_id, d.group_type, d, rows, total)

    def plan_reset(self, group_id: str, topic: str | None, mode: ResetMode, value: int | None) -> ResetPlan:
        """The new offsets a reset would commit (nothing is written): Kafka's rules from
        `praha.admin.group_plans`, over this group's partitions (or one topic's)."""
        try:
            committed = {tp: c.offset for tp, c in self.wire.committed_offsets(group_id).items()}
            if topic:
                tps = [TopicPartition(topic, p.partition) for p in self.partitions_of(topic)]
            else:
                tps = sorted(committed)
            if not tps:
                raise ConsoleError(f"group {group_id!r} has no committed offsets; name a topic to reset")
            earliest = self.list_offsets(tps, "earliest")
            latest = self.list_offsets(tps, "latest")
            by_time = self.list_offsets(tps, "time", timestamp=value or 0) if mode.uses_timestamp else None
            return plan_reset(ResetSpec(mode, value), tps, committed, earliest, latest, by_time)
        except GroupInputError as e:
            raise ConsoleError(str(e), ErrorCode.INVALID_REQUEST) from None

    def apply_reset(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        d = self.wire.describe_groups([group_id])[group_id]
        if d.state not in ("Empty", "Dead"):
            raise ConsoleError(f"Assignments can only be reset if the group '{group_id}' is inactive, but the "
                               f"current state is {d.state}.", ErrorCode.NON_EMPTY_GROUP)
        try:
            results = self.wire.alter_offsets(group_id, offsets)
        except PrahaError as e:
            raise ConsoleError(str(e), getattr(e, "code", None)) from None
        finally:
            self.invalidate()
        bad = {tp: c for tp, c in results.items() if c}
        if bad:
            tp, c = next(iter(bad.items()))
            raise ConsoleError(f"{len(bad)} partitions not reset, e.g. {tp}: {error_message(c)}")

    def delete_group(self, group_id: str) -> None:
        try:
            code = self.wire.delete_groups([group_id])[group_id]
        except GroupAdminError as e:
            raise ConsoleError(str(e), e.code) from None
        finally:
            self.invalidate()
        if code:
            raise ConsoleError(f"{ErrorCode(code).name}: {error_message(code)}", ErrorCode(code))

    # -- transactions, ACLs, users, quotas ----------------------------------------------------
    def transactions(self) -> list[Any]:
        try:
            listed = self.wire.list_transactions()
        except PrahaError as e:
            raise ConsoleError(f"transactions: {e}", getattr(e, "code", None)) from None
        out: list[Any] = []
        for t in listed:
            try:
                out.append(self.wire.describe_transaction(t.transactional_id))
            except PrahaError:
                out.append(t)
        return out

    def acls(self) -> list[AclRow]:

        flt = cka.AclBindingFilter(cka.ResourceType.ANY, None, cka.ResourcePatternType.ANY, None, None,
                                   cka.AclOperation.ANY,
                               cka.AclPermissionType.ANY)
        try:
            bindings = self.admin.describe_acls(flt, request_timeout=TIMEOUT_S).result(TIMEOUT_S)
        except Exception as e:
            raise _kafka_error(e) from None
        return sorted(AclRow(b.principal, b.host, b.operation.name, b.permission_type.name,
                             b.restype.name, b.name, b.resource_pattern_type.name) for b in bindings)

    def change_acl(self, row: AclRow, add: bool) -> None:
        """CreateAcls of exactly this ACL, or DeleteAcls of it (an ACL that is not there is an
        error, so a stale page changes nothing silently)."""
        try:
            parts = (cka.ResourceType[row.resource_type], row.name, cka.ResourcePatternType[row.pattern],
                     row.principal, row.host, cka.AclOperation[row.operation], cka.AclPermissionType[row.permission])
        except KeyError as e:
            raise ConsoleError(f"INVALID_REQUEST: unknown {e.args[0]}", ErrorCode.INVALID_REQUEST) from None
        if add:
            self._wait(self.admin.create_acls([cka.AclBinding(*parts)], request_timeout=TIMEOUT_S))
            return
        removed = self._one(self.admin.delete_acls([cka.AclBindingFilter(*parts)], request_timeout=TIMEOUT_S))
        if not removed:
            raise ConsoleError("no such ACL (it may have been removed already)")

    def change_scram_user(self, user: str, mechanism: str, password: str | None, iterations: int) -> None:
        """AlterUserScramCredentials: set the user's credential for `mechanism` from a password
        (hashed by the client, as Kafka's admin does), or with None remove it."""
        try:
            mech = cka.ScramMechanism[mechanism.replace("-", "_")]
        except KeyError:
            raise ConsoleError(f"the mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512, got {mechanism!r}") from None
        change = cka.UserScramCredentialDeletion(user, mech) if password is None else \
            cka.UserScramCredentialUpsertion(user, cka.ScramCredentialInfo(mech, iterations), password.encode())
        self._wait(self.admin.alter_user_scram_credentials([change], request_timeout=TIMEOUT_S))

    def scram_users(self) -> list[tuple[str, str, int]]:
        """Every SCRAM credential: (user, mechanism as SCRAM_SHA_512, iterations). Asked with
        praha's wire client: confluent-kafka 2.16's describe of every user aborted the console
        process (munmap_chunk) when the broker refused a visitor without Describe on the cluster."""
        from praha.admin.cluster_admin import ClusterAdmin
        from praha.protocol.scram import ScramMechanism

        try:
            with ClusterAdmin(self.target.bootstrap, timeout=TIMEOUT_S, retries=2, client_id="praha-console",
                              security=self.wire_security) as admin:
                described = admin.describe_scram([])
        except PrahaError as e:
            raise ConsoleError(str(e), getattr(e, "code", None)) from None
        out = []
        for user, code, _message, infos in described:
            for mid, iterations in infos if not code else []:
                m = ScramMechanism.by_wire_id(mid)
                out.append((user, m.mechanism_name.replace("-", "_") if m else str(mid), iterations))
        return sorted(out)

    def change_quota(self, kind: str, name: str, key: str, value: float | None) -> None:
        """AlterClientQuotas of one user's or client id's quota ("" names the default; None
        removes the key); the broker checks the key and value with Kafka's rules."""
        from praha.admin.cluster_admin import ClusterAdmin

        entity_type = {"users": "user", "clients": "client-id"}.get(kind)
        if entity_type is None:
            raise ConsoleError(f"a quota is for users or clients, got {kind!r}")
        try:
            with ClusterAdmin(self.target.bootstrap, timeout=TIMEOUT_S, retries=2, client_id="praha-console",
                              security=self.wire_security) as admin:
                admin.alter_client_quotas([(entity_type, name or None)], [(key, value)])
        except PrahaError as e:
            raise ConsoleError(str(e), getattr(e, "code", None)) from None

    def quotas(self) -> list[tuple[str, str, dict[str, str]]]:
        """Client quotas from ZooKeeper (`/config/users`, `/config/clients`)."""
        if self.zk is None:
            raise ConsoleError("quotas are read from ZooKeeper: start the console with --zookeeper or --dir")
        out = []
        for kind in ("users", "clients"):
            try:
                names = self.zk.client.get_children(f"/config/{kind}")
            except Exception:
                continue
            for name in sorted(names):
                data, _ = self.zk.client.get(f"/config/{kind}/{name}")
                import json

                config = json.loads(data or b"{}").get("config", {})
                quota = {k: v for k, v in config.items() if not k.startswith("SCRAM-")}
                if quota:
                    out.append((kind, name, quota))
        return out


def _total_lag(committed: Mapping[TopicPartition, Any], end: Mapping[TopicPartition, int | None]) -> int | None:
    if not committed:
        return None
    total = 0
    for tp, c in committed.items():
        e = end.get(tp)
        if e is not None:
            total += max(0, e - c.offset)
    return total


def _source(source: int) -> str:
    try:
        return str(cka.ConfigSource(source).name)
    except Exception:
        return str(source)
