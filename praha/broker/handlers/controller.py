"""The controller's requests to this broker (LeaderAndIsr, UpdateMetadata, StopReplica)
and ControlledShutdown, which brokers send to the controller.

Each controller request: 1. decode it into praha's typed request
(`praha.protocol.controller_wire`); 2. check its controller and broker epochs against the
fence (`broker/replication/fencing.py`): a stale one is refused, logged and written to the
state-change log; 3. hand it to the replica manager (LeaderAndIsr, StopReplica) or the
metadata cache (UpdateMetadata); 4. answer with the per-partition results.
ControlledShutdown is answered by the hosted controller seat if it is acting, else
NOT_CONTROLLER (the shutting-down broker then asks the new controller).
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from praha.broker.replication.fencing import Verdict
from praha.common import BrokerInfo, TopicPartition
from praha.errors import ErrorCode, PrahaError
from praha.protocol import controller_wire as wire
from praha.protocol.api_keys import ApiKey
from praha.protocol.controller_apis import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from praha.protocol.controller_requests import ControllerRequest, ControllerResponseData
from praha.protocol.error_response import refusal
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.runtime import WireMessage
from praha.security.acl import AclOperation

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

log = logging.getLogger(__name__)

LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA


class ControllerApis:
    def __init__(self, broker: Broker):
        self.broker = broker

    def _cluster_action_refused(self, req: DecodedRequest, api: int) -> WireMessage | None:
        """The answer to a sender without ClusterAction on the cluster (only brokers have it:
        Kafka's KafkaApis), or None when it may send controller requests."""
        if self.broker.authz.cluster_allowed(req, AclOperation.CLUSTER_ACTION):
            return None
        log.warning("refused %s from %s (%s): no ClusterAction on the cluster", ApiKey(api).name,
                    req.session.principal, req.session.client_host)
        if api == ApiKey.CONTROLLED_SHUTDOWN:
            return refusal(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return wire.response_to_wire(api, ControllerResponseData(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))

    async def handle_leader_and_isr(self, req: DecodedRequest) -> WireMessage:
        if (refused := self._cluster_action_refused(req, LEADER_AND_ISR)) is not None:
            return refused
        data = wire.leader_and_isr_from_wire(req.body(LeaderAndIsrRequest))
        refusal = await self._refusal(LEADER_AND_ISR, "LeaderAndIsr", data)
        if refusal is not None:
            return refusal
        fence = self.broker.fence
        result = await self.broker.replica_manager_call(lambda rm: rm.become_leader_or_follower(
            data, still_current=lambda: fence.still_current(data.controller_epoch, data.broker_epoch)))
        if result.error_code != ErrorCode.NONE:  # went stale while it waited to take effect
            fence.refused[(LEADER_AND_ISR, data.controller_epoch)] += 1
            self._log_refused("LeaderAndIsr", data.controller_id, data.controller_epoch, ErrorCode(result.error_code),
                              "stale by the time it could take effect")
            return wire.response_to_wire(LEADER_AND_ISR, result)
        self.broker.state_log.record(
            "LeaderAndIsrReceived", data.controller_id, data.controller_epoch, partitions=len(data.partitions),
            leaders={str(s.tp): [s.leader, s.leader_epoch] for s in data.partitions},
        )
        return wire.response_to_wire(LEADER_AND_ISR, result)

    async def handle_update_metadata(self, req: DecodedRequest) -> WireMessage:
        if (refused := self._cluster_action_refused(req, UPDATE_METADATA)) is not None:
            return refused
        data = wire.update_metadata_from_wire(req.body(UpdateMetadataRequest))
        refusal = await self._refusal(UPDATE_METADATA, "UpdateMetadata", data)
        if refusal is not None:
            return refusal
        if not await self._endpoints_registered(data.live_brokers):
            code = ErrorCode.STALE_CONTROLLER_EPOCH
            self._log_refused("UpdateMetadata", data.controller_id, data.controller_epoch, code,
                              "its broker endpoints differ from the brokers' registrations")
            return wire.response_to_wire(UPDATE_METADATA, ControllerResponseData(code))
        deleted = self.broker.metadata_cache.update(data)
        self.broker.on_metadata_update(data, deleted)
        return wire.response_to_wire(UPDATE_METADATA, ControllerResponseData(ErrorCode.NONE))

    async def handle_stop_replica(self, req: DecodedRequest) -> WireMessage:
        if (refused := self._cluster_action_refused(req, STOP_REPLICA)) is not None:
            return refused
        data = wire.stop_replica_from_wire(req.body(StopReplicaRequest))
        refusal = await self._refusal(STOP_REPLICA, "StopReplica", data)
        if refusal is not None:
            return refusal
        result = await self.broker.replica_manager_call(lambda rm: rm.stop_replicas(data))
        return wire.response_to_wire(STOP_REPLICA, result)

    async def handle_controlled_shutdown(self, req: DecodedRequest) -> WireMessage:
        if (refused := self._cluster_action_refused(req, ApiKey.CONTROLLED_SHUTDOWN)) is not None:
            return refused
        controller = self.broker.controller
        r = req.body(ControlledShutdownRequest)
        if controller is None or not controller.is_acting:
            return refusal(req, ErrorCode.NOT_CONTROLLER)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[int, set[TopicPartition]]] = loop.create_future()

        def settle(code: int, remaining: set[TopicPartition]) -> None:
            if not fut.done():
                fut.set_result((code, remaining))

        def done(code: int, remaining: set[TopicPartition]) -> None:
            loop.call_soon_threadsafe(settle, code, remaining)

        controller.controlled_shutdown(r.broker_id, r.broker_epoch, done)
        code, remaining = await fut
        return ControlledShutdownResponse(
            error_code=int(code),
            remaining_partitions=[
                ControlledShutdownResponse.RemainingPartition(topic_name=tp.topic, partition_index=tp.partition)
                for tp in sorted(remaining)
            ],
        )

    async def _refusal(self, api_key: int, name: str, data: ControllerRequest) -> WireMessage | None:
        """None if the fence admits `data`; otherwise the refusal to send back (logged)."""
        code = await self._admit(api_key, data.controller_id, data.controller_epoch, data.broker_epoch)
        if code == ErrorCode.NONE:
            return None
        self._log_refused(name, data.controller_id, data.controller_epoch, code)
        return wire.response_to_wire(api_key, ControllerResponseData(code))

    async def _admit(self, api_key: int, controller_id: int, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        """The fence's verdict (broker/replication/fencing.py), reading ZooKeeper's controller seat when
        the sender is not the controller last confirmed there."""
        fence = self.broker.fence
        verdict = fence.decide(controller_id, controller_epoch, broker_epoch)
        if verdict is Verdict.VERIFY:
            try:
                seat = await self.broker.controller_seat()
            except PrahaError as e:
                log.warning("could not read the controller seat to check a request from controller %d "
                            "(epoch %d): %s", controller_id, controller_epoch, e)
                verdict = fence.after_reading(controller_id, controller_epoch, None, read_failed=True)
            else:
                verdict = fence.after_reading(controller_id, controller_epoch, seat)
        return fence.settle(api_key, controller_epoch, verdict)

    async def _endpoints_registered(self, brokers: list[BrokerInfo]) -> bool:
        """Every broker an UpdateMetadata names is registered with those endpoints: brokers
        whose entry differs from what this broker already believes are read from ZooKeeper."""
        known = self.broker.metadata_cache.live_brokers
        unfamiliar = [b for b in brokers if not _same_endpoints(known.get(b.id), b)]
        if not unfamiliar:
            return True
        try:
            registered = await self.broker.registered_brokers([b.id for b in unfamiliar])
        except PrahaError as e:
            log.warning("could not read broker registrations to check an UpdateMetadata: %s", e)
            return True
        return all(_same_endpoints(registered.get(b.id), b) for b in unfamiliar)

    def _log_refused(self, api: str, controller_id: int, epoch: int, code: ErrorCode, why: str = "") -> None:
        log.warning(
            "refused %s from controller %d with epoch %d: %s%s (highest seen %d, controller in ZooKeeper %s)",
            api, controller_id, epoch, code.name, f", {why}" if why else "",
            self.broker.fence.highest_controller_epoch, self.broker.fence.known_controller,
        )
        self.broker.state_log.record(f"{api}Refused", controller_id, epoch, error=code.name)


def _same_endpoints(a: BrokerInfo | None, b: BrokerInfo) -> bool:
    return a is not None and a.endpoints == b.endpoints and (a.rack or None) == (b.rack or None)
