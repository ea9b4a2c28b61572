"""The Kafka-protocol client the data source reads with: metadata, offsets, fetches.

Why not a consumer library: Spark plans exact offset ranges and each task must read
exactly its range from the partition's *current* leader, following leader changes
without skipping or repeating an offset. Blocking `BrokerConnection`s make that
explicit: the task knows the last offset it read, and on NOT_LEADER_OR_FOLLOWER, a
fenced epoch or a dead socket it refreshes metadata and asks the new leader from there.

Every retry loop is bounded (a count or a time budget), and every error that is not
retriable surfaces as a `SourceError` naming the topic-partition.
"""
from __future__ import annotations

import logging
import random
import ssl
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from praha.common import TopicPartition
from praha.errors import ErrorCode, PrahaError
from praha.protocol.client import BrokerConnection
from praha.protocol.client_security import PLAINTEXT, ClientSecurity, SaslAuthenticationError
from praha.protocol.messages.gen.metadata import MetadataRequest
from praha.protocol.messages.gen.produce_fetch import FetchRequest, ListOffsetsRequest

log = logging.getLogger(__name__)

METADATA_VERSION, FETCH_VERSION, LIST_OFFSETS_VERSION = 12, 12, 7
EARLIEST_TS, LATEST_TS = -2, -1

#: errors after which the leader (or our idea of it) is wrong: refresh metadata and retry
RETRIABLE = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.BROKER_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,  # also what a broker says before UpdateMetadata reaches it
    ErrorCode.OFFSET_NOT_AVAILABLE,  # ListOffsets from a new leader whose high watermark still lags
})


class SourceError(PrahaError):
    """A read or offset lookup failed for good (after its bounded retries)."""


class AccessError(SourceError):
    """Authentication failed, or the user may not do what the query needs: retrying
    cannot help, so it surfaces at once (Spark's own task retries are bounded)."""


#: what each refusal means, for a message that names the operation (Kafka's ACL names)
AUTHORIZATION_FAILED = frozenset({ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                  ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                  ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})


def not_authorized(operation: str, topic: str, client: ClusterClient | None = None) -> AccessError:
    user = f" as User:{client.security.username}" if client is not None and client.security.username else ""
    return AccessError(f"Not authorized to {operation} topic {topic}{user} (TOPIC_AUTHORIZATION_FAILED): "
                       f"grant it with `praha acls --add --allow-principal User:NAME --operation {operation} "
                       f"--topic {topic}`", code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)


class DataLossError(SourceError):
    """Offsets the query needs are gone (retention, topic deletion, unclean election)."""


def data_loss_message(what: str) -> str:
    return (f"{what}. Some data may have been lost because it is not available in the cluster any more: "
            "deleted by retention, by topic deletion, or truncated by an unclean leader election. "
            "If you want the query to continue when data is lost, set the option failOnDataLoss to false.")


@dataclass(frozen=True, slots=True)
class PartitionMeta:
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()


@dataclass
class Metadata:
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    partitions: dict[TopicPartition, PartitionMeta] = field(default_factory=dict)
    topic_errors: dict[str, int] = field(default_factory=dict)
    controller_id: int = -1
    #: Kafka's AclOperation bit field per topic, when asked for (`refresh(authorized_operations=True)`)
    topic_operations: dict[str, int] = field(default_factory=dict)

    def topics(self) -> set[str]:
        return {tp.topic for tp in self.partitions}

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.partitions if tp.topic == topic)


class ClusterClient:
    """Blocking client over one connection per broker; not thread-safe (one per task)."""

    def __init__(self, bootstrap: Iterable[tuple[str, int]], client_id: str = "praha-spark",
                 timeout: float = 10.0, connect_timeout: float = 3.0, read_committed: bool = False,
                 security: ClientSecurity = PLAINTEXT):
        self.bootstrap = tuple(bootstrap)
        #: TLS and SASL of every connection this client opens (`praha.spark.security`)
        self.security = security
        self.client_id = client_id
        #: Kafka's isolation level: 1 (read_committed) stops at the last stable offset
        self.isolation_level = 1 if read_committed else 0
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.meta = Metadata()
        self._conns: dict[tuple[str, int], BrokerConnection] = {}

    # ------------------------------------------------------------------ connections
    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    def __enter__(self) -> ClusterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _conn(self, addr: tuple[str, int]) -> BrokerConnection:
        c = self._conns.get(addr)
        if c is None:
            c = BrokerConnection(addr[0], addr[1], timeout=self.connect_timeout, client_id=self.client_id,
                                 security=self.security)
            self._conns[addr] = c
        if not c.connected:
            # TLS and SASL happen inside connect(): a handshake and a SCRAM exchange on a busy
            # machine need the request timeout, not the TCP connect timeout
            secured = self.security.ssl_context is not None or bool(self.security.sasl_mechanism)
            c.timeout = max(self.connect_timeout, self.timeout) if secured else self.connect_timeout
            try:
                c.connect()
            except SaslAuthenticationError as e:
                raise AccessError(f"SASL authentication with {addr[0]}:{addr[1]} failed "
                                  f"({self.security.sasl_mechanism}, user {self.security.username!r}): {e}; "
                                  "check kafka.sasl.jaas.config", code=ErrorCode.SASL_AUTHENTICATION_FAILED) from None
            except PrahaError as e:
                if isinstance(e.__cause__, ssl.SSLError):
                    raise AccessError(f"TLS handshake with {addr[0]}:{addr[1]} failed: {e.__cause__}; check "
                                      "kafka.security.protocol, kafka.ssl.truststore.* and "
                                      "kafka.ssl.endpoint.identification.algorithm") from None
                raise
        c.timeout = self.timeout
        return c

    def send_to(self, broker_id: int, request: Any, version: int, timeout: float | None = None) -> Any:
        addr = self.meta.brokers.get(broker_id)
        if addr is None:
            raise SourceError(f"broker {broker_id} is not in the cluster metadata", code=ErrorCode.BROKER_NOT_AVAILABLE)
        return self._conn(addr).send(request, version, timeout=timeout)

    # ------------------------------------------------------------------ metadata
    def refresh(self, topics: list[str] | None = None, authorized_operations: bool = False) -> Metadata:
        """Metadata from any reachable broker (known ones first, then the bootstrap list).

        `topics=None` asks for every topic; `authorized_operations` asks the broker what this
        user may do with each (Metadata v8+). Raises SourceError if no broker answers."""
        req = MetadataRequest(
            topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t, topic_id=None)
                                                for t in topics],
            allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
            include_topic_authorized_operations=authorized_operations)
        candidates = list(dict.fromkeys(list(self.meta.brokers.values()) + list(self.bootstrap)))
        random.shuffle(candidates)
        errors = []
        for addr in candidates:
            try:
                resp = self._conn(addr).send(req, METADATA_VERSION)
            except AccessError:
                raise
            except PrahaError as e:
                errors.append(f"{addr[0]}:{addr[1]}: {e}")
                continue
            md = Metadata(brokers={b.node_id: (b.host, b.port) for b in resp.brokers},
                          controller_id=resp.controller_id)
            for t in resp.topics:
                if t.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and topics is not None:
                    raise not_authorized("Describe", t.name, self)
                if t.error_code != ErrorCode.NONE:
                    md.topic_errors[t.name] = t.error_code
                    continue
                if authorized_operations:
                    md.topic_operations[t.name] = t.topic_authorized_operations
                for p in t.partitions:
                    md.partitions[TopicPartition(t.name, p.partition_index)] = PartitionMeta(
                        p.leader_id, p.leader_epoch, tuple(p.replica_nodes), tuple(p.isr_nodes))
            if topics is None:
                self.meta = md
            else:
                merged = {tp: m for tp, m in self.meta.partitions.items() if tp.topic not in set(topics)}
                merged.update(md.partitions)
                md.partitions = merged
                self.meta = md
            return md
        raise SourceError("no broker answered a metadata request: " + "; ".join(errors),
                          code=ErrorCode.NETWORK_EXCEPTION)

    def leader(self, tp: TopicPartition) -> PartitionMeta | None:
        m = self.meta.partitions.get(tp)
        if m is None or m.leader < 0 or m.leader not in self.meta.brokers:
            return None
        return m

    # ------------------------------------------------------------------ offsets
    def list_offsets(self, wanted: dict[TopicPartition, int], retries: int,
                     backoff_ms: int) -> dict[TopicPartition, int]:
        """{tp: timestamp or -2/-1} → {tp: offset}; -1 where no record has that timestamp.
        Partitions that no longer exist (topic deleted) are left out of the answer.

        One request per leader; partitions whose leader moved or died are retried after
        a metadata refresh, at most `retries` times, `backoff_ms` apart."""
        result: dict[TopicPartition, int] = {}
        pending = dict(wanted)
        last_error: dict[TopicPartition, str] = {}
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(backoff_ms / 1000)
            if attempt or any(self.leader(tp) is None for tp in pending):
                try:
                    md = self.refresh(sorted({tp.topic for tp in pending}))
                except AccessError:
                    raise
                except SourceError as e:
                    last_error = {tp: str(e) for tp in pending}
                    continue
                if attempt:  # gone from the cluster (topic deleted): the caller sees it missing
                    for tp in [tp for tp in pending if tp not in md.partitions and
                               md.topic_errors.get(tp.topic) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]:
                        if _deleted(self, tp):
                            pending.pop(tp)
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in pending:
                m = self.leader(tp)
                if m is None:
                    last_error[tp] = "no leader"
                    continue
                by_leader.setdefault(m.leader, []).append(tp)
            for leader, tps in by_leader.items():
                req = ListOffsetsRequest(replica_id=-1, isolation_level=self.isolation_level,
                                         timeout_ms=int(self.timeout * 1000), topics=[
                    ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=[
                        ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                            partition_index=tp.partition, current_leader_epoch=self.meta.partitions[tp].leader_epoch,
                            timestamp=pending[tp], max_num_offsets=1)
                        for tp in tps if tp.topic == t])
                    for t in sorted({tp.topic for tp in tps})])
                try:
                    resp = self.send_to(leader, req, LIST_OFFSETS_VERSION)
                except AccessError:
                    raise
                except PrahaError as e:
                    for tp in tps:
                        last_error[tp] = f"broker {leader}: {e}"
                    continue
                for t in resp.topics:
                    for p in t.partitions:
                        tp = TopicPartition(t.name, p.partition_index)
                        if p.error_code == ErrorCode.NONE:
                            result[tp] = p.offset
                            pending.pop(tp, None)
                        elif p.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                            raise not_authorized("Describe", tp.topic, self)
                        elif p.error_code in RETRIABLE:
                            last_error[tp] = f"broker {leader}: error {_name(p.error_code)}"
                        else:
                            raise SourceError(f"offset lookup for {tp} failed: {_name(p.error_code)}",
                                              code=_code(p.error_code))
            if not pending:
                return result
        raise SourceError(
            f"offset lookup failed after {retries} retries (fetchOffset.numRetries) for "
            + ", ".join(f"{tp} ({last_error.get(tp, 'no answer')})" for tp in sorted(pending)),
            code=ErrorCode.LEADER_NOT_AVAILABLE)

    # ------------------------------------------------------------------ fetch
    def fetch_once(self, tp: TopicPartition, offset: int, max_bytes: int, max_wait_ms: int) -> Any:
        """One Fetch (at the client's isolation level) for one partition from its current leader; returns
        the partition's answer. Raises PrahaError on a connection problem, SourceError
        (code RETRIABLE) if we have no leader for it."""
        m = self.leader(tp)
        if m is None:
            raise SourceError(f"no leader known for {tp}", code=ErrorCode.LEADER_NOT_AVAILABLE)
        req = FetchRequest(
            replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes,
            isolation_level=self.isolation_level,
            session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
            topics=[FetchRequest.FetchTopic(topic=tp.topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
                partition=tp.partition, current_leader_epoch=m.leader_epoch, fetch_offset=offset,
                last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=max_bytes)])])
        resp = self.send_to(m.leader, req, FETCH_VERSION, timeout=self.timeout + max_wait_ms / 1000)
        for t in resp.responses:
            for p in t.partitions:
                if t.topic == tp.topic and p.partition_index == tp.partition:
                    return p
        raise SourceError(f"fetch answer from broker {m.leader} lacks {tp}", code=ErrorCode.UNKNOWN_SERVER_ERROR)


@dataclass(slots=True)
class Chunk:
    """Raw record batches fetched at `offset`, and the partition's high watermark then."""

    offset: int
    records: bytes
    high_watermark: int
    #: read_committed: (producer id, first offset) of the aborted transactions in the chunk
    aborted: list[tuple[int, int]] | None = None


def fetch_range(client: ClusterClient, tp: TopicPartition, start: int, end: int, *, fail_on_data_loss: bool,
                max_bytes: int, poll_timeout_ms: int, backoff_ms: int = 200,
                position: list[int] | None = None) -> Iterator[Chunk]:
    """Yield raw chunks covering [start, end) of `tp`, following the leader.

    The caller decodes each chunk and writes the next offset to read into `position[0]`
    (it knows where the last complete batch ended); a refetch after a failure starts
    there, so no offset is skipped or repeated. Gives up (SourceError) when the range
    makes no progress for `poll_timeout_ms`. Data loss (offsets below the log start,
    or a log that ends before `end` for good) fails, or with `fail_on_data_loss=False`
    is skipped with a warning."""
    pos = position if position is not None else [start]
    pos[0] = start
    stalled_since: float | None = None
    last_problem = ""
    while pos[0] < end:
        offset = pos[0]
        now = time.monotonic()
        if stalled_since is not None and (now - stalled_since) * 1000 > poll_timeout_ms:
            if last_problem.startswith("out of range"):
                _lost(f"cannot read offsets [{offset}, {end}) of {tp}: {last_problem}", fail_on_data_loss)
                return
            raise SourceError(f"reading {tp} made no progress at offset {offset} for {poll_timeout_ms} ms "
                              f"(kafkaConsumer.pollTimeoutMs): {last_problem}", code=ErrorCode.REQUEST_TIMED_OUT)
        try:
            if client.leader(tp) is None:
                client.refresh([tp.topic])
            p = client.fetch_once(tp, offset, max_bytes, max_wait_ms=250)
        except AccessError:
            raise
        except PrahaError as e:
            last_problem = f"{type(e).__name__}: {e}"
            stalled_since = stalled_since or now
            client.meta.partitions.pop(tp, None)  # refresh before the next try
            time.sleep(backoff_ms / 1000)
            continue
        code = p.error_code
        if code == ErrorCode.NONE:
            records = p.records or b""
            if records:
                aborted = None if p.aborted_transactions is None else [
                    (a.producer_id, a.first_offset) for a in p.aborted_transactions]
                yield Chunk(offset, records, p.high_watermark, aborted)
                if pos[0] > offset:
                    stalled_since = None
                    continue
            stalled_since = stalled_since or now
            if records:  # bytes, but no complete batch from our offset on: should not happen; do not spin
                last_problem = f"the leader returned no complete record batch at offset {offset}"
                time.sleep(backoff_ms / 1000)
            else:  # nothing new: the (new) leader's high watermark has not reached us yet
                last_problem = f"high watermark {p.high_watermark} of the leader is at or below offset {offset}"
                time.sleep(min(backoff_ms, 50) / 1000)
            continue
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            if p.log_start_offset > offset:
                _lost(f"offsets [{offset}, {min(end, p.log_start_offset)}) of {tp} are gone "
                      f"(log start offset is now {p.log_start_offset})", fail_on_data_loss)
                pos[0] = min(end, p.log_start_offset)
                stalled_since = None
                continue
            # beyond the leader's log: a new leader may not have caught up yet, or the log was truncated
            last_problem = (
                f"out of range: offset {offset} is beyond the leader's log (high watermark {p.high_watermark})"
            )
            stalled_since = stalled_since or now
            client.meta.partitions.pop(tp, None)
            time.sleep(backoff_ms / 1000)
            continue
        if code in RETRIABLE:
            last_problem = f"error {_name(code)}"
            stalled_since = stalled_since or now
            client.meta.partitions.pop(tp, None)
            time.sleep(backoff_ms / 1000)
            if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and _deleted(client, tp):
                _lost(f"{tp} no longer exists; offsets [{offset}, {end}) cannot be read", fail_on_data_loss)
                return
            continue
        if code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
            raise not_authorized("Read", tp.topic, client)
        raise SourceError(f"fetch of {tp} at offset {offset} failed: {_name(code)}", code=_code(code))


def _deleted(client: ClusterClient, tp: TopicPartition) -> bool:
    """True if the cluster's metadata no longer has `tp` (its topic was deleted). Asked
    twice (of random brokers): a just-restarted broker may not have its metadata yet."""
    for _ in range(2):
        try:
            md = client.refresh([tp.topic])
        except PrahaError:
            return False
        if tp in md.partitions or md.topic_errors.get(tp.topic, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) \
                != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return False
    return True


def _lost(message: str, fail: bool) -> None:
    if fail:
        raise DataLossError(data_loss_message(message))
    log.warning("%s (failOnDataLoss=false: skipped)", message)


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


def _code(code: int) -> ErrorCode | None:
    try:
        return ErrorCode(code)
    except ValueError:
        return None
