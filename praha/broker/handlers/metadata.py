"""Metadata and CreateTopics: what every broker answers from its metadata cache.

Metadata: the live brokers and, per topic asked for (all when none are named), each
partition's leader (if it is alive), ISR, replicas and offline replicas. CreateTopics:
only the acting controller creates topics; it writes the znodes off the event loop
(`praha.zk.admin_zk.create_topic`, every check before any write) and then waits, up to the
request's timeout, until every new partition has a leader in its metadata cache. A
Metadata request naming unknown topics creates them when `auto.create.topics.enable` (Kafka's
default, true) and the request allows it.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING

from praha.broker.handlers.authorization import NOT_REQUESTED
from praha.common import NO_LEADER, topic_id_uuid
from praha.errors import ErrorCode, PrahaError
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.admin import CreateTopicsRequest, CreateTopicsResponse
from praha.protocol.messages.gen.metadata import MetadataRequest, MetadataResponse
from praha.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from praha.topic_rules import INTERNAL_TOPICS
from praha.zk.admin_zk import create_topic, create_topic_if_absent

#: the id of a topic written without one (Kafka's Uuid.ZERO_UUID)

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker
    from praha.common import TopicAssignment

log = logging.getLogger(__name__)

_MR = MetadataResponse
_MRT = MetadataResponse.MetadataResponseTopic
_MRP = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition


class MetadataApis:
    def __init__(self, broker: Broker):
        self.broker = broker

    async def handle_metadata(self, req: DecodedRequest) -> MetadataResponse:
        cache = self.broker.metadata_cache
        r = req.body(MetadataRequest)
        by_id: list[uuid.UUID] = []
        asked_by_id: dict[str, uuid.UUID] = {}
        if r.topics is None:
            names = cache.topics()
        else:
            names = [t.name for t in r.topics if t.name is not None]
            # v10+: topics asked for by id (a KIP-848 consumer resolving its assignment)
            by_id = [t.topic_id for t in r.topics if t.name is None and t.topic_id is not None
                     and t.topic_id.int] if req.api_version >= 10 else []
        unknown_ids: list[uuid.UUID] = []
        if by_id:
            await self.load_topic_ids(cache.topics())
            name_of = {tid: n for n, tid in cache.topic_ids.items()}
            unknown_ids = [tid for tid in by_id if tid not in name_of]
            asked_by_id = {name_of[tid]: tid for tid in by_id if tid in name_of and name_of[tid] not in names}
            names += list(asked_by_id)
        created: dict[str, ErrorCode] = {}
        authz = self.broker.authz
        describable = {n: authz.topic_allowed(req, AclOperation.DESCRIBE, n) for n in names}
        if r.topics is None:  # all topics: only those the principal may describe (as Kafka)
            names = [n for n in names if describable[n]]
        unknown = [n for n in names if not cache.contains_topic(n) and describable[n]]
        if unknown and self.broker.config.auto_create_topics_enable and \
                (req.api_version < 4 or r.allow_auto_topic_creation):
            may_create = authz.cluster_allowed(req, AclOperation.CREATE)
            creatable = [n for n in unknown if may_create or authz.topic_allowed(req, AclOperation.CREATE, n)]
            created = {n: ErrorCode.TOPIC_AUTHORIZATION_FAILED for n in unknown if n not in creatable}
            if creatable:
                created.update(await self._auto_create(creatable))
        await self.load_topic_ids([n for n in names if describable[n]])
        with_ops = req.api_version >= 8 and bool(r.include_topic_authorized_operations)
        topics = [self._topic_metadata(name, created.get(name),
                                       authz.authorized_operations(req, ResourceType.TOPIC, name) if with_ops
                                       else NOT_REQUESTED) if describable[name] else
                  _MRT(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,  # a topic asked for by id keeps its name
                       name=None if name in asked_by_id else name, topic_id=asked_by_id.get(name), is_internal=False,
                       partitions=[], topic_authorized_operations=NOT_REQUESTED)
                  for name in names]
        topics += [_MRT(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=tid, is_internal=False,
                        partitions=[], topic_authorized_operations=NOT_REQUESTED) for tid in unknown_ids]
        brokers = [  # each broker's endpoint on the listener the client came through (as Kafka)
            _MR.MetadataResponseBroker(node_id=b.id, host=ep.host, port=ep.port, rack=b.rack)
            for b, ep in cache.endpoints_on(req.session.listener)
        ]
        # before the first UpdateMetadata the list is empty, as Kafka's: a client that got a
        # one-broker list would forget the others and fail what it had queued for them
        return _MR(
            throttle_time_ms=0, brokers=brokers, cluster_id=self.broker.cluster_id,
            controller_id=cache.controller_id, topics=topics,
            cluster_authorized_operations=authz.authorized_operations(req, ResourceType.CLUSTER, CLUSTER_NAME)
            if 8 <= req.api_version <= 10 and r.include_cluster_authorized_operations else NOT_REQUESTED,
        )

    async def load_topic_ids(self, names: list[str]) -> None:
        """Read the ids of known topics not yet in the cache from their znodes (once per
        topic; a topic written without one, by an old tool, is answered with the zero id and
        asked about again: the controller gives it an id as soon as it sees it)."""
        cache = self.broker.metadata_cache
        missing = [n for n in names if n not in cache.topic_ids and cache.contains_topic(n)]
        if not missing:
            return
        try:
            store = self.broker.zk_store()
            found, _bad = await asyncio.get_running_loop().run_in_executor(
                None, store.get_topic_assignments, missing)
        except PrahaError as e:  # ZooKeeper unreachable: answer with the zero id, ask again next time
            log.debug("topic ids of %d topics not read: %s", len(missing), e)
            return
        for name in missing:
            tid = topic_id_uuid(found[name].topic_id) if name in found else None
            if tid is not None and cache.contains_topic(name):  # (not deleted meanwhile)
                cache.set_topic_id(name, tid)

    async def _auto_create(self, names: list[str]) -> dict[str, ErrorCode]:
        """Kafka's auto topic creation (ZooKeeper mode: the broker writes the znodes itself),
        with `num.partitions` and `default.replication.factor`. A name just created, or
        being created by someone else, answers LEADER_NOT_AVAILABLE (clients ask again);
        an invalid name INVALID_TOPIC_EXCEPTION; internal topics are never auto-created."""
        cfg = self.broker.config
        wanted = [n for n in names if n not in INTERNAL_TOPICS]

        def create_all() -> dict[str, ErrorCode]:
            out: dict[str, ErrorCode] = {}
            store = self.broker.zk_store()
            for name in wanted:
                try:  # an invalid name raises InvalidTopicError (INVALID_TOPIC_EXCEPTION)
                    create_topic_if_absent(store, name, cfg.num_partitions, cfg.default_replication_factor)
                    out[name] = ErrorCode.LEADER_NOT_AVAILABLE
                except PrahaError as e:
                    out[name] = e.code
            return out

        if not wanted:
            return {}
        created = await asyncio.get_running_loop().run_in_executor(None, create_all)
        made = [n for n, c in created.items() if c == ErrorCode.LEADER_NOT_AVAILABLE]
        if made:
            log.info("auto-created or found being created %d topics (e.g. %s)", len(made), made[0])
        return created

    def _topic_metadata(self, name: str, auto_created: ErrorCode | None = None, ops: int = NOT_REQUESTED) -> _MRT:
        cache = self.broker.metadata_cache
        parts = cache.topic_partitions(name)
        if not parts:
            code = auto_created if auto_created is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return _MRT(error_code=int(code), name=name, topic_id=None,
                        is_internal=False, partitions=[], topic_authorized_operations=ops)
        out = []
        for p in sorted(parts):
            s = parts[p]
            leader = s.leader if cache.is_alive(s.leader) else NO_LEADER
            code = ErrorCode.NONE if leader != NO_LEADER else ErrorCode.LEADER_NOT_AVAILABLE
            out.append(_MRP(
                error_code=code, partition_index=p, leader_id=leader, leader_epoch=s.leader_epoch,
                replica_nodes=list(s.replicas), isr_nodes=list(s.isr), offline_replicas=list(s.offline_replicas),
            ))
        return _MRT(error_code=ErrorCode.NONE, name=name, topic_id=cache.topic_ids.get(name),
                    is_internal=name in INTERNAL_TOPICS,
                    partitions=out, topic_authorized_operations=ops)

    async def handle_create_topics(self, req: DecodedRequest) -> CreateTopicsResponse:
        """Only the active controller creates topics (clients send CreateTopics there); the
        znodes are written off the event loop, then we wait — up to the request's timeout —
        until every partition has a leader in our metadata cache."""
        r = req.body(CreateTopicsRequest)
        controller = self.broker.controller
        cfg = self.broker.config
        results = []
        loop = asyncio.get_running_loop()
        created: dict[str, int] = {}
        authz = self.broker.authz
        may_create_any = authz.cluster_allowed(req, AclOperation.CREATE)
        for t in r.topics or []:
            if not may_create_any and not authz.topic_allowed(req, AclOperation.CREATE, t.name):
                results.append(_topic_result(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
                continue
            if controller is None or not controller.is_acting:
                results.append(_topic_result(t.name, ErrorCode.NOT_CONTROLLER, "this broker is not the controller"))
                continue
            assignment = {a.partition_index: list(a.broker_ids) for a in (t.assignments or [])}
            null_configs = [c.name for c in (t.configs or []) if c.value is None]
            if null_configs:  # Kafka's answer (ZkAdminManager.createTopics)
                results.append(_topic_result(t.name, ErrorCode.INVALID_CONFIG,
                                             f"Null value not supported for topic configs: {','.join(null_configs)}"))
                continue
            config = {c.name: c.value for c in (t.configs or []) if c.value is not None}

            def create(t: CreateTopicsRequest.CreatableTopic = t, assignment: dict[int, list[int]] = assignment,
                       config: dict[str, str] = config) -> TopicAssignment:
                return create_topic(
                    self.broker.zk_store(), t.name, t.num_partitions, t.replication_factor, config, assignment or None,
                    validate_only=bool(r.validate_only), default_partitions=cfg.num_partitions,
                    default_replication_factor=cfg.default_replication_factor,
                )

            try:
                plan = await loop.run_in_executor(None, create)
            except PrahaError as e:
                results.append(_topic_result(t.name, e.code, str(e)))
                continue
            n = len(plan.partitions)
            rf = len(next(iter(plan.partitions.values())).replicas)
            results.append(_topic_result(t.name, ErrorCode.NONE, None, n, rf, topic_id_uuid(plan.topic_id)))
            if not r.validate_only:
                created[t.name] = n
        deadline = loop.time() + max(0, r.timeout_ms or 0) / 1000.0
        cache = self.broker.metadata_cache
        while created and loop.time() < deadline:
            if all(len(cache.topic_partitions(name)) == n for name, n in created.items()):
                break
            await asyncio.sleep(0.05)
        return CreateTopicsResponse(throttle_time_ms=0, topics=results)

def _topic_result(name: str, code: int, message: str | None, partitions: int = -1, rf: int = -1,
                  topic_id: uuid.UUID | None = None) -> CreateTopicsResponse.CreatableTopicResult:
    return CreateTopicsResponse.CreatableTopicResult(
        name=name, topic_id=topic_id, error_code=int(code), error_message=message, topic_config_error_code=0,
        num_partitions=partitions, replication_factor=rf, configs=None,
    )
