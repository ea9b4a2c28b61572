"""Record deletion and log directories over the wire, as kafka-delete-records and
kafka-log-dirs do them.

Deleting records:
1. read the plan (`{"partitions": [{"topic", "partition", "offset"}], "version": 1}`;
   offset -1 means the high watermark);
2. find each partition's leader with one Metadata request;
3. send one DeleteRecords per leader; each partition answers with its new low watermark or
   Kafka's error (a partition with no leader or an unknown one is answered here).

Describing log directories: the brokers from Metadata (or the ones named), one
DescribeLogDirs each, filtered to the topics named.

Moving replicas between log directories (`praha reassign execute` with `log_dirs`): one
AlterReplicaLogDirs per broker; a replica answering REPLICA_NOT_AVAILABLE (not created yet:
the broker remembers the dir for it) is asked again every 100 ms until `timeout`, as Kafka's
kafka-reassign-partitions does.
"""
from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from praha.admin.client_status import fetch_metadata
from praha.common import TopicPartition
from praha.errors import ErrorCode, InvalidRequestError, PrahaError
from praha.protocol.client import BrokerConnection
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.protocol.messages.gen.admin import AlterReplicaLogDirsRequest, DescribeLogDirsRequest
from praha.protocol.messages.gen.produce_fetch import DeleteRecordsRequest

DELETE_RECORDS_VERSION = 2
DESCRIBE_LOG_DIRS_VERSION = 4
ALTER_REPLICA_LOG_DIRS_VERSION = 1
HIGH_WATERMARK = -1


def parse_offset_plan(text: str) -> dict[TopicPartition, int]:
    """Kafka's offset JSON file; InvalidRequestError naming what is wrong."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidRequestError(f"the offset JSON file is not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("partitions"), list):
        raise InvalidRequestError('the offset JSON file must be {"partitions": [...], "version": 1}')
    if doc.get("version", 1) != 1:
        raise InvalidRequestError(f"unsupported offset JSON version {doc.get('version')!r} (only 1)")
    plan: dict[TopicPartition, int] = {}
    for i, item in enumerate(doc["partitions"]):
        if not isinstance(item, dict) or not isinstance(item.get("topic"), str) \
                or type(item.get("partition")) is not int or type(item.get("offset")) is not int:
            raise InvalidRequestError(f"partitions[{i}]: expected topic (string), partition and offset (integers)")
        tp = TopicPartition(item["topic"], item["partition"])
        if tp in plan:
            raise InvalidRequestError(f"offset json file contains duplicate topic partitions: {tp}")
        if item["offset"] < HIGH_WATERMARK:
            raise InvalidRequestError(f"{tp}: offset {item['offset']} is negative (use -1 for the high watermark)")
        plan[tp] = item["offset"]
    if not plan:
        raise InvalidRequestError("the offset JSON file names no partitions")
    return plan


@dataclass(frozen=True, slots=True)
class DeleteResult:
    low_watermark: int = -1
    error: str | None = None


def delete_records(bootstrap: str, plan: dict[TopicPartition, int], timeout: float = 30.0,
                   security: ClientSecurity = PLAINTEXT) -> dict[TopicPartition, DeleteResult]:
    md = fetch_metadata(bootstrap.split(",")[0], sorted({tp.topic for tp in plan}), timeout, security)
    brokers = {b.node_id: (b.host, b.port) for b in md.brokers}
    leaders: dict[TopicPartition, int] = {}
    results: dict[TopicPartition, DeleteResult] = {}
    for t in md.topics:
        for p in t.partitions:
            leaders[TopicPartition(t.name, p.partition_index)] = p.leader_id
    by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
    for tp in plan:
        leader = leaders.get(tp)
        if leader is None:
            results[tp] = DeleteResult(error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.name)
        elif leader not in brokers:
            results[tp] = DeleteResult(error=ErrorCode.LEADER_NOT_AVAILABLE.name)
        else:
            by_leader[leader].append(tp)
    for leader, tps in by_leader.items():
        topics: dict[str, list[Any]] = defaultdict(list)
        for tp in tps:
            topics[tp.topic].append(DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(
                partition_index=tp.partition, offset=plan[tp]))
        request = DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(name=t, partitions=ps)
                                               for t, ps in topics.items()], timeout_ms=int(timeout * 1000))
        try:
            with BrokerConnection(*brokers[leader], timeout=timeout + 5, security=security) as conn:
                response = conn.send(request, DELETE_RECORDS_VERSION)
        except PrahaError as e:
            for tp in tps:
                results[tp] = DeleteResult(error=f"broker {leader}: {e}")
            continue
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                results[tp] = DeleteResult(p.low_watermark) if p.error_code == 0 else \
                    DeleteResult(error=_error_name(p.error_code))
    return {tp: results.get(tp, DeleteResult(error="no answer from the leader")) for tp in plan}


@dataclass(frozen=True, slots=True)
class LogDirPartition:
    partition: str
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDir:
    path: str
    error: str | None
    partitions: list[LogDirPartition]
    total_bytes: int = -1
    usable_bytes: int = -1


@dataclass(frozen=True, slots=True)
class BrokerLogDirs:
    broker: int
    dirs: list[LogDir]
    error: str | None = None


def describe_log_dirs(bootstrap: str, broker_ids: list[int] | None = None, topics: set[str] | None = None,
                      timeout: float = 30.0, security: ClientSecurity = PLAINTEXT) -> list[BrokerLogDirs]:
    """Every log directory of the named brokers (default: all live ones), with the
    partitions of `topics` (default: all) in each."""
    md = fetch_metadata(bootstrap.split(",")[0], [], timeout, security=security)
    brokers = {b.node_id: (b.host, b.port) for b in md.brokers}
    wanted = sorted(brokers) if broker_ids is None else broker_ids
    out = []
    for bid in wanted:
        if bid not in brokers:
            out.append(BrokerLogDirs(bid, [], f"broker {bid} is not alive (live: {sorted(brokers)})"))
            continue
        try:
            with BrokerConnection(*brokers[bid], timeout=timeout, security=security) as conn:
                response = conn.send(DescribeLogDirsRequest(topics=None), DESCRIBE_LOG_DIRS_VERSION)
        except PrahaError as e:
            out.append(BrokerLogDirs(bid, [], str(e)))
            continue
        dirs = []
        for r in response.results:
            parts = [LogDirPartition(f"{t.name}-{p.partition_index}", p.partition_size, p.offset_lag,
                                     bool(p.is_future_key))
                     for t in r.topics if topics is None or t.name in topics
                     for p in sorted(t.partitions, key=lambda p: p.partition_index)]
            dirs.append(LogDir(r.log_dir, None if r.error_code == 0 else _error_name(r.error_code),
                               sorted(parts, key=lambda p: p.partition), r.total_bytes, r.usable_bytes))
        out.append(BrokerLogDirs(bid, dirs))
    return out


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


def log_dirs_json(brokers: list[BrokerLogDirs]) -> str:
    """kafka-log-dirs' JSON document."""
    return json.dumps({"brokers": [{"broker": b.broker, "logDirs": [
        {"logDir": d.path, "error": d.error, "partitions": [
            {"partition": p.partition, "size": p.size, "offsetLag": p.offset_lag, "isFuture": p.is_future}
            for p in d.partitions]} for d in b.dirs]} for b in brokers if b.error is None], "version": 1})


def alter_replica_log_dirs(brokers: dict[int, tuple[str, int]], moves: dict[tuple[TopicPartition, int], str],
                           timeout: float = 10.0, security: ClientSecurity = PLAINTEXT
                           ) -> dict[tuple[TopicPartition, int], str | None]:
    """Ask each broker to move (or place) its replicas in `moves` to the dir given; returns each
    replica's outcome: None once the move started, else the error's name (REPLICA_NOT_AVAILABLE
    if it still did not exist at `timeout`)."""
    _Dir = AlterReplicaLogDirsRequest.AlterReplicaLogDir
    _Topic = _Dir.AlterReplicaLogDirTopic
    outcome: dict[tuple[TopicPartition, int], str | None] = {}
    pending = dict(moves)
    deadline = time.monotonic() + timeout
    while pending:
        by_broker: dict[int, dict[str, dict[str, list[int]]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(list))
        )
        for (tp, b), d in pending.items():
            by_broker[b][d][tp.topic].append(tp.partition)
        for b, dirs in by_broker.items():
            if b not in brokers:
                for (tp, bb) in [k for k in pending if k[1] == b]:
                    outcome[(tp, bb)] = f"broker {b} is not alive"
                    del pending[(tp, bb)]
                continue
            request = AlterReplicaLogDirsRequest(dirs=[
                _Dir(path=d, topics=[_Topic(name=t, partitions=ps) for t, ps in topics.items()])
                for d, topics in dirs.items()])
            try:
                with BrokerConnection(*brokers[b], timeout=timeout, security=security) as conn:
                    response = conn.send(request, ALTER_REPLICA_LOG_DIRS_VERSION)
            except PrahaError as e:
                for key in [k for k in pending if k[1] == b]:
                    outcome[key] = f"broker {b}: {e}"
                    del pending[key]
                continue
            for t in response.results:
                for p in t.partitions:
                    key = (TopicPartition(t.topic_name, p.partition_index), b)
                    outcome[key] = None if p.error_code == 0 else _error_name(p.error_code)
                    if p.error_code != ErrorCode.REPLICA_NOT_AVAILABLE and key in pending:
                        del pending[key]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    return outcome
