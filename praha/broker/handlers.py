"""Request handlers: one coroutine per API key, answering from broker state.

The network layer decodes a frame, looks up the handler here, awaits it and encodes
what it returns (None means "no response", e.g. acks=0). Handlers run on the network
event loop, so they may touch the metadata cache and replica manager directly; anything
that blocks (ZooKeeper, disk-heavy work) goes to an executor or to the controller's
event thread.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from kafka.protocol.admin import CreateTopicsResponse
from kafka.protocol.metadata import MetadataResponse

from praha.common import NO_LEADER, TopicPartition
from praha.errors import ErrorCode, PrahaError
from praha.protocol import controller_wire as wire
from praha.protocol.controller_apis import ControlledShutdownResponse
from praha.protocol.controller_requests import ControllerResponseData
from praha.protocol.framing import DecodedRequest
from praha.protocol.registry import api_versions_response, check_supported
from praha.zk.admin_zk import create_topic

if TYPE_CHECKING:
    from praha.broker.server import BrokerServer

log = logging.getLogger(__name__)

Handler = Callable[[DecodedRequest], Awaitable[Any]]

API_VERSIONS, METADATA, CREATE_TOPICS = 18, 3, 19
LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA, CONTROLLED_SHUTDOWN = 4, 5, 6, 7

_MR = MetadataResponse
_MRT = MetadataResponse.MetadataResponseTopic
_MRP = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition


class RequestHandlers:
    def __init__(self, broker: "BrokerServer"):
        self.broker = broker
        self.handlers: dict[int, Handler] = {}
        self.versions: dict[int, tuple[int, int]] = {}
        self.register(API_VERSIONS, (0, 4), self.handle_api_versions)
        self.register(METADATA, (0, 12), self.handle_metadata)
        self.register(LEADER_AND_ISR, (4, 4), self.handle_leader_and_isr)
        self.register(STOP_REPLICA, (3, 3), self.handle_stop_replica)
        self.register(UPDATE_METADATA, (6, 6), self.handle_update_metadata)
        self.register(CONTROLLED_SHUTDOWN, (3, 3), self.handle_controlled_shutdown)
        __import__("praha.broker.data_handlers", fromlist=["_"]).register_data_apis(self, broker)
        self.register(CREATE_TOPICS, (2, 7), self.handle_create_topics)
        __import__("praha.broker.admin_handlers", fromlist=["_"]).register_admin_apis(self, broker)
        __import__("praha.broker.producer_ids", fromlist=["_"]).register_producer_apis(self, broker)

    def register(self, api_key: int, versions: tuple[int, int], handler: Handler) -> None:
        """Serve `api_key` at `versions`; checked against the schemas now, so a typo fails at start-up."""
        check_supported({api_key: versions})
        self.handlers[api_key] = handler
        self.versions[api_key] = versions

    # ---- client APIs --------------------------------------------------------------------
    async def handle_api_versions(self, req: DecodedRequest):
        return api_versions_response(self.versions)

    async def handle_metadata(self, req: DecodedRequest):
        cache = self.broker.metadata_cache
        r = req.request
        if r.topics is None:
            names = cache.topics()
        else:
            names = [t.name for t in r.topics if t.name is not None]
        topics = [self._topic_metadata(name) for name in names]
        brokers = [
            _MR.MetadataResponseBroker(node_id=b.id, host=b.host, port=b.port, rack=b.rack)
            for b in sorted(cache.live_brokers.values(), key=lambda b: b.id)
        ]
        # before the first UpdateMetadata the list is empty, as Kafka's: a client that got a
        # one-broker list would forget the others and fail what it had queued for them
        return _MR(
            throttle_time_ms=0, brokers=brokers, cluster_id=self.broker.cluster_id,
            controller_id=cache.controller_id, topics=topics, authorized_operations=None,
        )

    def _topic_metadata(self, name: str):
        cache = self.broker.metadata_cache
        parts = cache.topic_partitions(name)
        if not parts:
            return _MRT(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=None,
                        is_internal=False, partitions=[], authorized_operations=None)
        out = []
        for p in sorted(parts):
            s = parts[p]
            leader = s.leader if cache.is_alive(s.leader) else NO_LEADER
            code = ErrorCode.NONE if leader != NO_LEADER else ErrorCode.LEADER_NOT_AVAILABLE
            out.append(_MRP(
                error_code=code, partition_index=p, leader_id=leader, leader_epoch=s.leader_epoch,
                replica_nodes=list(s.replicas), isr_nodes=list(s.isr), offline_replicas=list(s.offline_replicas),
            ))
        return _MRT(error_code=ErrorCode.NONE, name=name, topic_id=None, is_internal=False,
                    partitions=out, authorized_operations=None)

    async def handle_create_topics(self, req: DecodedRequest):
        """Only the active controller creates topics (clients send CreateTopics there); the
        znodes are written off the event loop, then we wait — up to the request's timeout —
        until every partition has a leader in our metadata cache."""
        r = req.request
        controller = self.broker.controller
        cfg = self.broker.config
        results = []
        loop = asyncio.get_running_loop()
        created: dict[str, int] = {}
        for t in r.topics or []:
            if controller is None or not controller.is_acting:
                results.append(_topic_result(t.name, ErrorCode.NOT_CONTROLLER, "this broker is not the controller"))
                continue
            assignment = {a.partition_index: list(a.broker_ids) for a in (t.assignments or [])}
            config = {c.name: c.value for c in (t.configs or [])}

            def create(t=t, assignment=assignment, config=config):
                return create_topic(
                    self.broker.store, t.name, t.num_partitions, t.replication_factor, config, assignment or None,
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
            results.append(_topic_result(t.name, ErrorCode.NONE, None, n, rf))
            if not r.validate_only:
                created[t.name] = n
        deadline = loop.time() + max(0, r.timeout_ms or 0) / 1000.0
        cache = self.broker.metadata_cache
        while created and loop.time() < deadline:
            if all(len(cache.topic_partitions(name)) == n for name, n in created.items()):
                break
            await asyncio.sleep(0.05)
        return CreateTopicsResponse(throttle_time_ms=0, topics=results)

    # ---- controller APIs ----------------------------------------------------------------
    async def handle_leader_and_isr(self, req: DecodedRequest):
        data = wire.leader_and_isr_from_wire(req.request)
        code = self.broker.fence.check(LEADER_AND_ISR, data.controller_epoch, data.broker_epoch)
        if code != ErrorCode.NONE:
            self._log_refused("LeaderAndIsr", data.controller_id, data.controller_epoch, code)
            return wire.response_to_wire(LEADER_AND_ISR, ControllerResponseData(code))
        result = await self.broker.replica_manager_call(lambda rm: rm.become_leader_or_follower(data))
        self.broker.state_log.record(
            "LeaderAndIsrReceived", data.controller_id, data.controller_epoch, partitions=len(data.partitions),
            leaders={str(s.tp): [s.leader, s.leader_epoch] for s in data.partitions},
        )
        return wire.response_to_wire(LEADER_AND_ISR, result)

    async def handle_update_metadata(self, req: DecodedRequest):
        data = wire.update_metadata_from_wire(req.request)
        code = self.broker.fence.check(UPDATE_METADATA, data.controller_epoch, data.broker_epoch)
        if code != ErrorCode.NONE:
            self._log_refused("UpdateMetadata", data.controller_id, data.controller_epoch, code)
            return wire.response_to_wire(UPDATE_METADATA, ControllerResponseData(code))
        deleted = self.broker.metadata_cache.update(data)
        self.broker.on_metadata_update(data, deleted)
        return wire.response_to_wire(UPDATE_METADATA, ControllerResponseData(ErrorCode.NONE))

    async def handle_stop_replica(self, req: DecodedRequest):
        data = wire.stop_replica_from_wire(req.request)
        code = self.broker.fence.check(STOP_REPLICA, data.controller_epoch, data.broker_epoch)
        if code != ErrorCode.NONE:
            self._log_refused("StopReplica", data.controller_id, data.controller_epoch, code)
            return wire.response_to_wire(STOP_REPLICA, ControllerResponseData(code))
        result = await self.broker.replica_manager_call(lambda rm: rm.stop_replicas(data))
        return wire.response_to_wire(STOP_REPLICA, result)

    async def handle_controlled_shutdown(self, req: DecodedRequest):
        controller = self.broker.controller
        r = req.request
        if controller is None or not controller.is_acting:
            return ControlledShutdownResponse(error_code=ErrorCode.NOT_CONTROLLER, remaining_partitions=[])
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def done(code, remaining):
            loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result((code, remaining)))

        controller.controlled_shutdown(r.broker_id, r.broker_epoch, done)
        code, remaining = await fut
        return ControlledShutdownResponse(
            error_code=int(code),
            remaining_partitions=[
                ControlledShutdownResponse.RemainingPartition(topic_name=tp.topic, partition_index=tp.partition)
                for tp in sorted(remaining)
            ],
        )

    def _log_refused(self, api: str, controller_id: int, epoch: int, code: ErrorCode) -> None:
        log.warning(
            "refused %s from controller %d with epoch %d: %s (highest seen %d)",
            api, controller_id, epoch, code.name, self.broker.fence.highest_controller_epoch,
        )
        self.broker.state_log.record(f"{api}Refused", controller_id, epoch, error=code.name)


def _topic_result(name, code, message, partitions: int = -1, rf: int = -1):
    return CreateTopicsResponse.CreatableTopicResult(
        name=name, topic_id=None, error_code=int(code), error_message=message, topic_config_error_code=0,
        num_partitions=partitions, replication_factor=rf, configs=None,
    )


def remaining_from_wire(resp) -> set[TopicPartition]:
    return {TopicPartition(p.topic_name, p.partition_index) for p in (resp.remaining_partitions or [])}
