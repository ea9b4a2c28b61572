"""Client data APIs: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DescribeCluster.

Produce, per partition: 1. we must lead it (else NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR
if its log dir failed here, or UNKNOWN_TOPIC_OR_PARTITION if the cluster does not know it); 2. acks=all needs an ISR
of at least `min.insync.replicas` (NOT_ENOUGH_REPLICAS); 3. the batches stay bytes:
the log validates framing and CRC, patches base offset and leader epoch (in the request
frame itself, which `praha.protocol.produce` leaves the records in) and appends; 4. the
high watermark may move (single-member ISR) and parked fetches wake. A transactional
batch (with a `transactional_id`) that would open a transaction in a partition is first
checked with the transaction coordinator (KIP-890, `txn_verification`). acks=all then
parks the request until every partition's high watermark passes its batch
(NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum meanwhile,
REQUEST_TIMED_OUT at `timeout_ms`); acks=0 gets no answer.

Fetch: followers (replica_id ≥ 0) first report their progress (fetch offset = their
log end), then read up to our log end; consumers read below the high watermark, or with
`isolation_level` 1 (read_committed) below the last stable offset, and then also get the
aborted transactions overlapping what they read (Kafka's `aborted_transactions`). Every
answer carries the last stable offset. Whole
batches, `partition_max_bytes` each and `max_bytes` in all, at least one batch for
the first partition with data. Below `min_bytes` the request is parked until enough
bytes arrive or `max_wait_ms` passes, then read again. Fetch sessions are not kept:
every answer is a full, sessionless one (session id 0), which both kafka-python and
librdkafka accept. The answer is encoded by `encode_fetch_frame` (byte-identical to
kafka-python's codec; `encode_fetch_response` when every record is bytes: those are
joined once into the frame, not copied field by field). Records of at least
`ZERO_COPY_MIN_BYTES` per partition stay in the segment file: the frame carries a
`FileRegion` (a descriptor of its own, position, size) that the socket server hands to
os.sendfile, so the record bytes never enter the process; smaller reads are read and
joined once into the frame. Followers are served the same way, as in Kafka, although
they read up to the log end, which a truncation (this leader turned follower) may cut
or rewrite while a send waits: a cut region closes the connection (the socket server),
and rewritten bytes are either the new leader's batches or fail the follower's CRC
check, which fetches again; the follower also drops any answer that arrives after its
leader epoch moved on.
"""
from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from praha.broker.handlers.authorization import NOT_REQUESTED
from praha.broker.handlers.txn_verification import TxnProducer, TxnVerifier, is_transactional, transactional_producer
from praha.broker.network.socket_server import Answer, Muted, SegmentedFrame
from praha.broker.replication.delayed import ProduceWait
from praha.broker.replication.partition import Partition
from praha.common import TopicPartition, by_topic
from praha.errors import ErrorCode, PrahaError
from praha.log.errors import OffsetOutOfRangeError
from praha.log.leader_epoch import UNDEFINED_EPOCH
from praha.log.slices import FileRegion
from praha.log.validator import RecordValidationError
from praha.protocol.error_response import refusal
from praha.protocol.fetch import FETCH_BY_TOPIC_ID, FetchedPartition, fetch_replica_id, fetch_response_pieces
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.admin import (
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from praha.protocol.messages.gen.metadata import DescribeClusterRequest, DescribeClusterResponse
from praha.protocol.messages.gen.produce_fetch import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    FetchRequest,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProduceResponse,
)
from praha.protocol.messages.runtime import ZERO_UUID, WireMessage
from praha.protocol.produce import ProduceRequestView
from praha.protocol.registry import CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID
from praha.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from praha.topic_rules import INTERNAL_TOPICS

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker
    from praha.broker.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)


_FT = FetchRequest.FetchTopic
_FP = FetchRequest.FetchTopic.FetchPartition
_LOP = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition
_PR = ProduceResponse.TopicProduceResponse
_PP = ProduceResponse.TopicProduceResponse.PartitionProduceResponse
_LR = ListOffsetsResponse.ListOffsetsTopicResponse
_LP = ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse
_OR = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_OP = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult.EpochEndOffset
_DB = DescribeClusterResponse.DescribeClusterBroker
_DRT = DeleteRecordsResponse.DeleteRecordsTopicResult
_DRP = _DRT.DeleteRecordsPartitionResult
_ARLT = AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult
_ARLP = _ARLT.AlterReplicaLogDirPartitionResult
_LDR = DescribeLogDirsResponse.DescribeLogDirsResult
_LDT = _LDR.DescribeLogDirsTopic
_LDP = _LDT.DescribeLogDirsPartition

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
#: KIP-405's: the first offset still in local storage, and the last offset tiered to remote
#: storage (praha has no remote tier: the log start, and none)
EARLIEST_LOCAL, LATEST_TIERED = -4, -5
#: the ListOffsets version from which each special timestamp is understood; any other
#: negative timestamp, or one asked for in an older version, is UNSUPPORTED_VERSION (as Kafka)
SPECIAL_TIMESTAMP_SINCE: dict[int, int] = {LATEST: 0, EARLIEST: 0, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8,
                                           LATEST_TIERED: 9}
READ_COMMITTED = 1  # Fetch and ListOffsets isolation_level

#: a consumer's partition read of at least this many bytes is sent from the file with
#: os.sendfile; below it the copy is cheaper than the extra event-loop round trips
ZERO_COPY_MIN_BYTES = 64 * 1024


class DataApis:
    def __init__(self, broker: Broker):
        self.broker = broker
        #: None disables the zero-copy reads (every record byte is read into the frame)
        self.zero_copy_min_bytes: int | None = ZERO_COPY_MIN_BYTES
        self.verifier = TxnVerifier(broker)

    @property
    def rm(self) -> ReplicaManager:
        return self.broker.replica_manager

    # ------------------------------------------------------------------ shared checks
    def _leader(self, tp: TopicPartition, current_leader_epoch: int = -1) -> tuple[Partition | None, int]:
        """Our partition if we lead it (and the client's epoch matches), else an error code."""
        p = self.rm.partitions.get(tp)
        if p is None or not p.is_leader:
            if p is None and tp in self.rm.offline_partitions:
                return None, ErrorCode.KAFKA_STORAGE_ERROR  # its log dir failed on this broker
            known = p is not None or self.broker.metadata_cache.partition(tp) is not None
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if current_leader_epoch >= 0:
            if current_leader_epoch < p.leader_epoch:
                return None, ErrorCode.FENCED_LEADER_EPOCH
            if current_leader_epoch > p.leader_epoch:
                return None, ErrorCode.UNKNOWN_LEADER_EPOCH
        return p, ErrorCode.NONE

    # ------------------------------------------------------------------ Produce
    async def handle_produce(self, req: DecodedRequest) -> Answer:
        r = req.body(ProduceRequestView)
        acks = r.acks
        rm = self.rm
        results: dict[TopicPartition, list[int]] = {}  # tp -> [error, base offset, log start, log append time]
        refusals: dict[TopicPartition, tuple[str, list[tuple[int, str]]]] = {}  # message, record errors (v8+)
        waits: dict[TopicPartition, ProduceWait] = {}
        # KIP-890: records, producer, token
        to_verify: dict[TopicPartition, tuple[memoryview, TxnProducer, object]] = {}
        verify = r.transactional_id is not None and self.verifier.enabled
        if r.transactional_id is None and any(is_transactional(pd.records) for t in r.topic_data
                                              for pd in t.partition_data):
            return self._refuse_all(r, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)  # Kafka's answer
        authz = self.broker.authz
        if r.transactional_id is not None and not authz.transactional_id_allowed(req, AclOperation.WRITE,
                                                                                  r.transactional_id):
            return self._refuse_all(r, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        for t in r.topic_data:
            writable_topic = authz.topic_allowed(req, AclOperation.WRITE, t.name)
            for pd in t.partition_data:
                tp = TopicPartition(t.name, pd.index)
                if not writable_topic:
                    results[tp] = [ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, -1]
                    continue
                if acks not in (-1, 0, 1):
                    results[tp] = [ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, -1]
                    continue
                if tp in results or tp in to_verify:  # a partition named twice: the first entry counts
                    continue
                if tp.topic in INTERNAL_TOPICS:  # written by the coordinators only (Kafka's answer)
                    results[tp] = [ErrorCode.INVALID_TOPIC_EXCEPTION, -1, -1, -1]
                    continue
                p, code = self._produce_target(tp, acks)
                if p is None:
                    results[tp] = [code, -1, -1, -1]
                    continue
                records = pd.records
                if records is None:
                    results[tp] = [ErrorCode.INVALID_RECORD, -1, -1, -1]
                    continue
                producer = transactional_producer(records) if verify else None
                if producer is not None:
                    try:
                        token = p.log.begin_verification(producer.producer_id, producer.producer_epoch)
                    except PrahaError as e:  # the log closed meanwhile (deleted, shutting down)
                        results[tp] = [int(e.code), -1, -1, -1]
                        continue
                    if token is not None:
                        to_verify[tp] = (records, producer, token)
                        continue
                self._append(p, tp, records, acks, results, refusals, waits)
        if to_verify and r.transactional_id is not None:
            await self._verify_and_append(r.transactional_id, to_verify, acks, results, refusals, waits)
        if waits:
            outcome = await rm.park_produce(waits, r.timeout_ms)
            for tp, w in outcome.items():
                code = w.error if w.error is not None else ErrorCode.REQUEST_TIMED_OUT
                if code != ErrorCode.NONE:
                    results[tp][0] = code
        quota = self.broker.client_quotas.produce
        throttle = quota.record(req.principal, req.header.client_id or "", req.size) if quota.overrides else 0
        if throttle:
            quota.throttled(throttle)
        if acks == 0:
            return Muted(None, throttle) if throttle else None
        def answer(tp: TopicPartition, code: int, base: int, start: int, append_time: int) -> _PP:
            message, record_errors = refusals.get(tp, (None, []))
            return _PP(index=tp.partition, error_code=int(code), base_offset=base, log_append_time_ms=append_time,
                       log_start_offset=start, error_message=message,
                       record_errors=[_PP.BatchIndexAndErrorMessage(i, m) for i, m in record_errors])
        topics = by_topic((tp.topic, answer(tp, *row)) for tp, row in results.items())
        response = ProduceResponse(
            responses=[_PR(name=t, partition_responses=ps) for t, ps in topics.items()], throttle_time_ms=throttle)
        return Muted(response, throttle) if throttle else response

    @staticmethod
    def _refuse_all(r: ProduceRequestView, code: int) -> ProduceResponse | None:
        """One error for every partition of a Produce (nothing appended)."""
        if r.acks == 0:
            return None
        return ProduceResponse(throttle_time_ms=0, responses=[_PR(name=t.name, partition_responses=[
            _PP(index=pd.index, error_code=int(code), base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
                record_errors=[], error_message=None) for pd in t.partition_data]) for t in r.topic_data])

    def _produce_target(self, tp: TopicPartition, acks: int) -> tuple[Partition | None, int]:
        """Our partition if we lead it and, for acks=all, its ISR is large enough."""
        p, code = self._leader(tp)
        if p is not None and acks == -1 and len(p.isr) < p.min_insync_replicas:
            return None, ErrorCode.NOT_ENOUGH_REPLICAS
        return p, code

    def _append(self, p: Partition, tp: TopicPartition, records: memoryview, acks: int,
                results: dict[TopicPartition, list[int]],
                refusals: dict[TopicPartition, tuple[str, list[tuple[int, str]]]],
                waits: dict[TopicPartition, ProduceWait], verified: dict[int, object] | None = None) -> None:
        rm = self.rm
        try:
            # a view of the request frame, which nothing reads after this request
            writable = type(records) is memoryview and not records.readonly
            info = p.log.append_as_leader(records, p.leader_epoch, in_place=writable, verified=verified)
        except PrahaError as e:
            results[tp] = [int(e.code), -1, -1, -1]
            refusals[tp] = (str(e), e.record_errors if isinstance(e, RecordValidationError) else [])
            return
        results[tp] = [ErrorCode.NONE, info.first_offset, p.log.log_start_offset, info.log_append_time]
        if info.record_count:
            rm.stats.bytes_in += info.size_bytes
            rm.stats.messages_in += info.record_count
            rm.after_leader_append(p)
        if acks == -1 and (info.record_count or info.duplicate):  # a retry waits like the first write
            waits[tp] = ProduceWait(info.last_offset + 1)

    async def _verify_and_append(self, transactional_id: str,
                                 to_verify: dict[TopicPartition, tuple[memoryview, TxnProducer, object]],
                                 acks: int, results: dict[TopicPartition, list[int]],
                                 refusals: dict[TopicPartition, tuple[str, list[tuple[int, str]]]],
                                 waits: dict[TopicPartition, ProduceWait]) -> None:
        """KIP-890: ask the transaction coordinator about the partitions that would open a
        transaction (one request per producer), then append those it confirmed, if this
        broker still leads them."""
        by_producer: dict[TxnProducer, list[TopicPartition]] = {}
        for tp, (_, producer, _) in to_verify.items():
            by_producer.setdefault(producer, []).append(tp)
        for producer, tps in by_producer.items():
            codes = await self.verifier.verify(transactional_id, producer.producer_id, producer.producer_epoch, tps)
            for tp in tps:
                records, _, token = to_verify[tp]
                code = codes.get(tp, ErrorCode.INVALID_TXN_STATE)
                p = None
                if code == ErrorCode.NONE:
                    p, code = self._produce_target(tp, acks)
                if p is None:
                    results[tp] = [code, -1, -1, -1]
                    continue
                self._append(p, tp, records, acks, results, refusals, waits, verified={producer.producer_id: token})

    # ------------------------------------------------------------------ DeleteRecords
    async def handle_delete_records(self, req: DecodedRequest) -> DeleteRecordsResponse:
        """Move each partition's log start up to the offset given (-1: the high watermark),
        then wait — up to the request's timeout — until every in-sync replica's log start is
        there too (their fetches report it); answer with that low watermark. An offset
        above the high watermark is OFFSET_OUT_OF_RANGE, as in Kafka. The segments wholly
        below the new start are deleted by the next retention pass."""
        r = req.body(DeleteRecordsRequest)
        rm = self.rm
        results: dict[TopicPartition, list[int]] = {}  # tp -> [error, low watermark]
        waits: dict[TopicPartition, ProduceWait] = {}
        for t in r.topics or []:
            deletable = self.broker.authz.topic_allowed(req, AclOperation.DELETE, t.name)
            for pd in t.partitions or []:
                tp = TopicPartition(t.name, pd.partition_index)
                if not deletable:
                    results[tp] = [ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1]
                    continue
                if tp.topic in INTERNAL_TOPICS:
                    results[tp] = [ErrorCode.INVALID_TOPIC_EXCEPTION, -1]  # the coordinators own them
                    continue
                p, code = self._leader(tp)
                if p is None:
                    results[tp] = [code, -1]
                    continue
                offset = p.high_watermark if pd.offset == -1 else pd.offset
                if offset < 0 or offset > p.high_watermark:
                    results[tp] = [ErrorCode.OFFSET_OUT_OF_RANGE, -1]
                    continue
                if p.log.increment_log_start_offset(offset):
                    rm.fetch_purgatory.check(tp)  # type: ignore[union-attr]  # set in start()
                results[tp] = [ErrorCode.NONE, p.low_watermark()]
                waits[tp] = ProduceWait(offset)
        if waits:
            outcome = await rm.park_delete_records(waits, r.timeout_ms)
            for tp, w in outcome.items():
                p = rm.partitions.get(tp)
                results[tp] = [w.error if w.error is not None else ErrorCode.REQUEST_TIMED_OUT,
                               p.low_watermark() if p is not None and p.is_leader else -1]
        topics = by_topic((tp.topic, _DRP(partition_index=tp.partition, low_watermark=low, error_code=int(code)))
                          for tp, (code, low) in results.items())
        return DeleteRecordsResponse(throttle_time_ms=0, topics=[_DRT(name=t, partitions=ps)
                                                                 for t, ps in topics.items()])

    # ------------------------------------------------------------------ DescribeLogDirs
    async def handle_describe_log_dirs(self, req: DecodedRequest) -> WireMessage:
        """Per log directory: the replicas in it (all, or those asked for) with their size
        and how far their log end is below the high watermark, and the disk's total and
        usable bytes (v4). A failed (offline) directory answers KAFKA_STORAGE_ERROR with no
        replicas and unknown sizes (-1), as Kafka's."""
        r = req.body(DescribeLogDirsRequest)
        if not self.broker.authz.cluster_allowed(req, AclOperation.DESCRIBE):  # Kafka: an empty answer
            return refusal(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        lm = self.rm.log_manager
        wanted: dict[str, set[int]] | None = None
        if r.topics is not None:
            wanted = {}
            for t in r.topics:
                wanted.setdefault(t.topic, set()).update(t.partitions or [])
        if lm is None:  # before the logs are open there is no directory to describe
            return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=[])
        by_dir: dict[str, dict[str, list[_LDP]]] = {d: {} for d in lm.log_dirs}
        for tp, lg in list(lm):
            if wanted is not None and tp.partition not in wanted.get(tp.topic, ()):
                continue
            d = lm.log_dir_of(tp)
            if d is None:
                continue
            p = self.rm.partitions.get(tp)
            lag = max((p.high_watermark if p is not None else 0) - lg.log_end_offset, 0)
            by_dir.setdefault(d, {}).setdefault(tp.topic, []).append(_LDP(
                partition_index=tp.partition, partition_size=lg.size_bytes, offset_lag=lag, is_future_key=False))
        for tp, future, d in lm.future_logs():  # replicas on their way to another dir
            if wanted is not None and tp.partition not in wanted.get(tp.topic, ()):
                continue
            current = lm.get(tp)
            lag = max((current.log_end_offset if current is not None else 0) - future.log_end_offset, 0)
            by_dir.setdefault(d, {}).setdefault(tp.topic, []).append(_LDP(
                partition_index=tp.partition, partition_size=future.size_bytes, offset_lag=lag, is_future_key=True))
        results = []
        for d in lm.offline_log_dirs():
            by_dir.pop(d, None)
            results.append(_LDR(error_code=int(ErrorCode.KAFKA_STORAGE_ERROR), log_dir=d, total_bytes=-1,
                                usable_bytes=-1, is_cordoned=False, topics=[]))
        for d, topics in by_dir.items():
            code = ErrorCode.NONE
            try:
                usage = shutil.disk_usage(d)
                total, usable = usage.total, usage.free
            except OSError:
                code, total, usable = ErrorCode.KAFKA_STORAGE_ERROR, -1, -1
            results.append(_LDR(error_code=int(code), log_dir=d, total_bytes=total, usable_bytes=usable,
                                is_cordoned=False,
                                topics=[_LDT(name=t, partitions=ps) for t, ps in sorted(topics.items())]))
        return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=results)

    # ------------------------------------------------------------------ AlterReplicaLogDirs
    async def handle_alter_replica_log_dirs(self, req: DecodedRequest) -> AlterReplicaLogDirsResponse:
        """Move replicas of this broker to other dirs of it (praha/broker/replication/log_dir_mover.py)."""
        answers: list[tuple[str, _ARLP]] = []
        allowed = self.broker.authz.cluster_allowed(req, AclOperation.ALTER)  # Kafka: Alter on the cluster
        for d in req.body(AlterReplicaLogDirsRequest).dirs:
            for t in d.topics:
                for partition in t.partitions:
                    code = (self.rm.mover.alter(TopicPartition(t.name, partition), d.path) if allowed
                            else ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                    answers.append((t.name, _ARLP(partition_index=partition, error_code=int(code))))
        return AlterReplicaLogDirsResponse(throttle_time_ms=0, results=[
            _ARLT(topic_name=t, partitions=ps) for t, ps in by_topic(answers).items()])

    # ------------------------------------------------------------------ Fetch
    async def handle_fetch(self, req: DecodedRequest) -> EncodedFetchResponse | Muted:
        r = req.body(FetchRequest)
        version = req.header.api_version
        replica_id = fetch_replica_id(r, version)
        wanted: list[tuple[TopicPartition, _FP]] = []
        by_id = version >= FETCH_BY_TOPIC_ID
        names, unknown = await self._names_of_topic_ids(r.topics) if by_id else ({}, [])
        for t in r.topics:
            name = (names.get(t.topic_id) if t.topic_id is not None else None) if by_id else t.topic
            if name is None:
                continue
            for fp in t.partitions:
                wanted.append((TopicPartition(name, fp.partition), fp))
        denied = self._unreadable(req, replica_id, wanted)
        if denied:
            wanted = [w for w in wanted if w[0] not in denied]
        max_bytes = r.max_bytes
        quota = self.broker.client_quotas.fetch
        limited = replica_id < 0 and bool(quota.overrides)  # consumers only: followers have their own throttle
        client_id = (req.header.client_id or "") if limited else ""
        if replica_id >= 0:
            self._record_follower_fetches(replica_id, wanted)
        elif limited:  # no more than the quota could ever let through at once (Kafka's cap)
            cap = quota.max_value_in_window(req.principal, client_id)
            if cap is not None:
                max_bytes = max(1, min(max_bytes, int(cap)))
        committed = replica_id < 0 and r.isolation_level == READ_COMMITTED
        parts, total, errored = self._read_all(wanted, replica_id, max_bytes, committed)
        if r.max_wait_ms > 0 and total < min(r.min_bytes, max_bytes) and not errored and wanted:
            _close_regions(parts)
            await self._park_fetch(wanted, replica_id, min(r.min_bytes, max_bytes), r.max_wait_ms, committed)
            parts, total, _ = self._read_all(wanted, replica_id, max_bytes, committed)
        if limited:
            throttle = quota.record(req.principal, client_id, total)
            if throttle:  # answered empty, as Kafka does: the bytes are not sent, so not counted
                quota.unrecord(req.principal, client_id, total)
                quota.throttled(throttle)
                _close_regions(parts)
                return Muted(EncodedFetchResponse([], throttle), throttle)
        if total:
            self.rm.stats.bytes_out += total
        parts += [(tp, _error_partition(tp.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)) for tp in denied]
        ids = {name: tid for tid, name in names.items()}
        topics: dict[str | uuid.UUID, list[FetchedPartition]] = by_topic(
            (ids[tp.topic] if by_id else tp.topic, pdata) for tp, pdata in parts)
        for t in unknown:  # Kafka's answer for an id it does not know, partition by partition
            topics[t.topic_id or ZERO_UUID] = [_error_partition(fp.partition, ErrorCode.UNKNOWN_TOPIC_ID)
                                               for fp in t.partitions]
        return EncodedFetchResponse(list(topics.items()))

    async def _names_of_topic_ids(self, topics: list[_FT]) -> tuple[dict[uuid.UUID, str], list[_FT]]:
        """The name of each topic a Fetch v13+ names by id, and the topics whose id no topic
        here has (ids not in the cache yet are read from ZooKeeper first)."""
        cache = self.broker.metadata_cache
        if any(t.topic_id not in cache.names_by_id for t in topics):
            await self.broker.load_topic_ids()
        names = {t.topic_id: cache.names_by_id[t.topic_id] for t in topics
                 if t.topic_id and t.topic_id.int and t.topic_id in cache.names_by_id}  # the zero id names no topic
        return names, [t for t in topics if t.topic_id not in names]

    def _unreadable(self, req: DecodedRequest, replica_id: int,
                    wanted: list[tuple[TopicPartition, _FP]]) -> set[TopicPartition]:
        """Partitions the session may not fetch: a follower needs ClusterAction, a consumer
        Read on the topic (Kafka answers TOPIC_AUTHORIZATION_FAILED for each)."""
        authz = self.broker.authz
        if not authz.enabled:
            return set()
        if replica_id >= 0:
            ok = authz.cluster_allowed(req, AclOperation.CLUSTER_ACTION)
            return set() if ok else {tp for tp, _ in wanted}
        readable = {t: authz.topic_allowed(req, AclOperation.READ, t) for t in {tp.topic for tp, _ in wanted}}
        return {tp for tp, _ in wanted if not readable[tp.topic]}

    def _record_follower_fetches(self, replica_id: int, wanted: list[tuple[TopicPartition, _FP]]) -> None:
        rm = self.rm
        for tp, fp in wanted:
            p = rm.partitions.get(tp)
            if p is not None and p.is_leader and (fp.current_leader_epoch < 0
                                                  or fp.current_leader_epoch == p.leader_epoch):
                rm.record_follower_fetch(p, replica_id, fp.fetch_offset, fp.log_start_offset)

    def _read_all(self, wanted: list[tuple[TopicPartition, _FP]], replica_id: int, max_bytes: int,
                  committed: bool = False) -> tuple[list[tuple[TopicPartition, FetchedPartition]], int, bool]:
        out = []
        total = 0
        errored = False
        for tp, fp in wanted:
            pdata, n = self._read_one(tp, fp, replica_id, max_bytes - total, first=total == 0, committed=committed)
            if pdata.error_code != ErrorCode.NONE:
                errored = True
            total += n
            out.append((tp, pdata))
        return out, total, errored

    def _read_one(self, tp: TopicPartition, fp: _FP, replica_id: int, limit: int,
                  first: bool, committed: bool = False) -> tuple[FetchedPartition, int]:
        """One partition's answer and its record bytes; records of at least
        `zero_copy_min_bytes` come as a FileRegion (still in the file) instead of bytes.
        A read_committed read stops at the last stable offset and names the aborted
        transactions it overlaps."""
        p, code = self._leader(tp, fp.current_leader_epoch)
        if p is None:
            return _error_partition(tp.partition, code), 0
        lg = p.log
        hw = p.high_watermark
        lso = lg.last_stable_offset(hw)
        max_bytes = min(fp.partition_max_bytes, limit) if limit > 0 else 0
        data: bytes | FileRegion | None = b""
        aborted: list[tuple[int, int]] | None = [] if committed else None
        if max_bytes > 0 or first:
            try:
                sl = lg.read_slice(fp.fetch_offset, max(max_bytes, 1),
                                   None if replica_id >= 0 else lso if committed else hw, min_one_batch=first)
                if committed and sl.size:
                    aborted = [(t.producer_id, t.first_offset)
                               for t in lg.collect_aborted_transactions(fp.fetch_offset, sl.next_offset)]
                data = None
                zero_copy = self.zero_copy_min_bytes
                if zero_copy is not None and sl.size >= zero_copy:
                    try:
                        data = sl.region()
                    except OSError:  # no descriptor to spare (EMFILE): copy instead
                        data = None
                if data is None:
                    data = sl.read()
            except OSError as e:  # the disk failed under the read: its dir goes offline
                return _error_partition(tp.partition, int(lg.io_error("read from", e).code)), 0
            except OffsetOutOfRangeError:
                return FetchedPartition(tp.partition, ErrorCode.OFFSET_OUT_OF_RANGE, hw, lso,
                                        lg.log_start_offset, b""), 0
            except PrahaError as e:
                return _error_partition(tp.partition, int(e.code)), 0
        n = len(data) if data is not None else 0
        return FetchedPartition(tp.partition, ErrorCode.NONE, hw, lso, lg.log_start_offset, data or b"", aborted), n

    async def _park_fetch(self, wanted: list[tuple[TopicPartition, _FP]], replica_id: int,
                          min_bytes: int, max_wait_ms: int, committed: bool = False) -> None:
        rm = self.rm
        by_tp = dict(wanted)
        epochs = {}
        # a follower's fetch (min_bytes 1) completes on any new batch: found from the log
        # end alone, without locating the batches on every append of the leader
        follower_wants_any = replica_id >= 0 and min_bytes <= 1
        for tp, _ in wanted:
            p = rm.partitions.get(tp)
            epochs[tp] = p.leader_epoch if p is not None else -1

        def available(tp: TopicPartition) -> int:
            p = rm.partitions.get(tp)
            if p is None or not p.is_leader or p.leader_epoch != epochs[tp]:
                return -1
            fp = by_tp[tp]
            if follower_wants_any and p.log.log_start_offset <= fp.fetch_offset < p.log.log_end_offset:
                return 1  # a follower reads whole batches up to the log end: at least one is there
            hw = p.high_watermark
            try:
                sl = p.log.read_slice(fp.fetch_offset, fp.partition_max_bytes,
                                      None if replica_id >= 0 else p.log.last_stable_offset(hw) if committed else hw,
                                      min_one_batch=True)
            except PrahaError:
                return -1
            return sl.size

        await rm.park_fetch(min_bytes, list(by_tp), available, max_wait_ms)

    # ------------------------------------------------------------------ ListOffsets
    async def handle_list_offsets(self, req: DecodedRequest) -> ListOffsetsResponse:
        r = req.body(ListOffsetsRequest)
        topics = []
        authz = self.broker.authz
        for t in r.topics:
            parts = []
            seen = set()
            describable = authz.topic_allowed(req, AclOperation.DESCRIBE, t.name)
            for lp in t.partitions:
                tp = TopicPartition(t.name, lp.partition_index)
                if not describable:
                    parts.append(_lo(tp.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
                if tp in seen:
                    parts.append(_lo(tp.partition, ErrorCode.INVALID_REQUEST))
                    continue
                seen.add(tp)
                if lp.timestamp < 0 and req.header.api_version < SPECIAL_TIMESTAMP_SINCE.get(lp.timestamp, 1 << 15):
                    parts.append(_lo(tp.partition, ErrorCode.UNSUPPORTED_VERSION))
                    continue
                parts.append(self._list_offset(tp, lp, r.replica_id, r.isolation_level))
            topics.append(_LR(name=t.name, partitions=parts))
        return ListOffsetsResponse(throttle_time_ms=0, topics=topics)

    def _list_offset(self, tp: TopicPartition, lp: _LOP, replica_id: int, isolation_level: int = 0) -> _LP:
        """Consumers (replica id -1) see the leader's offsets below the high watermark, or
        below the last stable offset with read_committed (isolation level 1);
        replicas see the leader's log end; Kafka's debugging id (-2) asks any replica, also
        a follower, for its own log (how `reassign verify` shows how far behind one is)."""
        if replica_id == DEBUGGING_REPLICA_ID:
            p = self.rm.partitions.get(tp)
            if p is None:
                return _lo(tp.partition, ErrorCode.NOT_LEADER_OR_FOLLOWER
                           if self.broker.metadata_cache.partition(tp) is not None
                           else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        else:
            p, code = self._leader(tp, lp.current_leader_epoch)
            if p is None:
                return _lo(tp.partition, code)
        lg = p.log
        ts = lp.timestamp
        limit = p.high_watermark if replica_id == CONSUMER_REPLICA_ID else lg.log_end_offset
        if replica_id == CONSUMER_REPLICA_ID and isolation_level == READ_COMMITTED:
            limit = lg.last_stable_offset(limit)
        # Kafka: a new leader's high watermark is its old follower one until its followers fetch
        # from it; below the start of its epoch it would send a consumer back (a stale end)
        lagging = replica_id == CONSUMER_REPLICA_ID and p.leader_epoch_start_offset > p.high_watermark
        if ts == LATEST_TIERED:  # nothing is ever tiered
            return _lo(tp.partition, ErrorCode.NONE, -1, -1, -1)
        if ts in (EARLIEST, EARLIEST_LOCAL):  # every offset from the log start is local
            off = lg.log_start_offset
            return _lo(tp.partition, ErrorCode.NONE, off, -1, lg.epoch_cache.epoch_for_offset(off))
        if ts == LATEST:
            if lagging:
                return _lo(tp.partition, ErrorCode.OFFSET_NOT_AVAILABLE)
            return _lo(tp.partition, ErrorCode.NONE, limit, -1, lg.epoch_cache.epoch_for_offset(max(limit - 1, 0)))
        try:
            found = lg.offset_of_max_timestamp() if ts == MAX_TIMESTAMP else lg.offset_for_timestamp(ts)
        except PrahaError as e:
            return _lo(tp.partition, int(e.code))
        if found is None or found[0] >= limit:  # not found below the limit: maybe only not yet
            return _lo(tp.partition, ErrorCode.OFFSET_NOT_AVAILABLE if lagging else ErrorCode.NONE, -1, -1, -1)
        off, found_ts = found
        return _lo(tp.partition, ErrorCode.NONE, off, found_ts, lg.epoch_cache.epoch_for_offset(off))

    # ------------------------------------------------------------------ OffsetForLeaderEpoch
    async def handle_offset_for_leader_epoch(self, req: DecodedRequest) -> OffsetForLeaderEpochResponse:
        r = req.body(OffsetForLeaderEpochRequest)
        topics = []
        authz = self.broker.authz
        cluster_action = authz.cluster_allowed(req, AclOperation.CLUSTER_ACTION)
        for t in r.topics:
            parts = []
            allowed = cluster_action or authz.topic_allowed(req, AclOperation.DESCRIBE, t.topic)
            for op in t.partitions:
                tp = TopicPartition(t.topic, op.partition)
                if not allowed:  # Kafka: ClusterAction (brokers), else Describe on the topic
                    parts.append(_OP(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=op.partition,
                                     leader_epoch=UNDEFINED_EPOCH, end_offset=-1))
                    continue
                p, code = self._leader(tp, op.current_leader_epoch)
                if p is None:
                    parts.append(_OP(error_code=code, partition=op.partition,
                                     leader_epoch=UNDEFINED_EPOCH, end_offset=-1))
                    continue
                epoch, end = p.log.end_offset_for_epoch(op.leader_epoch)
                parts.append(_OP(error_code=ErrorCode.NONE, partition=op.partition, leader_epoch=epoch, end_offset=end))
            topics.append(_OR(topic=t.topic, partitions=parts))
        return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)

    # ------------------------------------------------------------------ DescribeCluster
    async def handle_describe_cluster(self, req: DecodedRequest) -> DescribeClusterResponse:
        cache = self.broker.metadata_cache
        listener = req.session.listener
        brokers = cache.endpoints_on(listener)
        own = self.broker.broker_info
        own_endpoint = own.endpoint(listener) if own is not None else None
        if not brokers and own is not None and own_endpoint is not None:
            brokers = [(own, own_endpoint)]
        return DescribeClusterResponse(
            throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
            cluster_id=self.broker.cluster_id, controller_id=cache.controller_id,
            brokers=[_DB(broker_id=b.id, host=ep.host, port=ep.port, rack=b.rack,
                         is_fenced=False) for b, ep in brokers],
            cluster_authorized_operations=self.broker.authz.authorized_operations(
                req, ResourceType.CLUSTER, CLUSTER_NAME)
            if req.body(DescribeClusterRequest).include_cluster_authorized_operations else NOT_REQUESTED)


def _error_partition(partition: int, code: int) -> FetchedPartition:
    return FetchedPartition(partition, int(code), -1, -1, -1, b"")


def _close_regions(parts: list[tuple[TopicPartition, FetchedPartition]]) -> None:
    for _, pdata in parts:
        if isinstance(pdata.records, FileRegion):
            pdata.records.close()


class EncodedFetchResponse:
    """A FetchResponse that encodes itself with `encode_fetch_frame` (record bytes joined
    once, or left in the file, instead of kafka-python's field-by-field buffer). It offers
    exactly what `praha.protocol.framing.encode_response` uses of an ApiMessage: `_header`,
    `API_VERSION`, `with_header(correlation_id=)` and `encode(header=True, framed=True)`.

    `encode` gives bytes, or a `SegmentedFrame` when records stay in files (`bytes()` of
    it reads them: the same bytes); the frame owns the regions and closes them."""

    def __init__(self, topics: Sequence[tuple[str | uuid.UUID, list[FetchedPartition]]], throttle_time_ms: int = 0):
        self.topics = topics
        self.throttle_time_ms = throttle_time_ms
        self._header = None
        self.API_VERSION = 12
        self._correlation_id = 0

    def with_header(self, correlation_id: int = 0) -> None:
        self._correlation_id = correlation_id

    def encode(self, header: bool = True, framed: bool = True) -> bytes | SegmentedFrame:
        assert header, "only the framed form with header is produced"
        assert framed, "only the framed form with header is produced"
        return encode_fetch_frame(self.API_VERSION, self._correlation_id, self.topics,
                                  throttle_time_ms=self.throttle_time_ms)


def encode_fetch_frame(version: int, correlation_id: int,
                       topics: Sequence[tuple[str | uuid.UUID, list[FetchedPartition]]],
                       error_code: int = 0, session_id: int = 0, throttle_time_ms: int = 0) -> bytes | SegmentedFrame:
    """A framed FetchResponse v4-v16 (size prefix, response header, body; topics by name,
    or by id from v13), byte-identical to kafka-python's encoding. Records given as bytes are joined
    once into the frame;
    records given as a `FileRegion` are not read: the answer is then a SegmentedFrame of
    the bytes around them and the regions themselves (sent with os.sendfile)."""
    out = fetch_response_pieces(version, correlation_id, topics, error_code, session_id, throttle_time_ms)
    if not any(type(x) is FileRegion for x in out):
        return b"".join(out)
    pieces: list[bytes | FileRegion] = []
    run: list[bytes] = []
    for x in out:
        if type(x) is FileRegion:
            if run:
                pieces.append(b"".join(run))
                run = []
            pieces.append(x)
        else:
            run.append(x)
    if run:
        pieces.append(b"".join(run))
    return SegmentedFrame(pieces, sum(len(x) for x in out))


def _lo(partition: int, code: int, offset: int = -1, timestamp: int = -1, epoch: int = -1) -> _LP:
    return _LP(partition_index=partition, error_code=int(code), old_style_offsets=[], timestamp=timestamp,
               offset=offset, leader_epoch=epoch)
