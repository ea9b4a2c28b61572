"""Admin APIs served by the active controller: DeleteTopics, CreatePartitions,
ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments.

Only the broker that is the acting controller answers them; every other broker says
NOT_CONTROLLER (clients then refresh metadata and retry the new one), as Kafka in
ZooKeeper mode. Two kinds:
  - znode writers (DeleteTopics, CreatePartitions), like Kafka's AdminManager: 1. check
    and write ZooKeeper in an executor (`praha.zk.admin_zk`), 2. wait — at most
    the request's timeout — until our metadata cache shows the result (topic gone, new
    partitions present), else REQUEST_TIMED_OUT; the change still happens later;
  - controller calls (ElectLeaders, Alter/ListPartitionReassignments): 1. cheap checks
    here, 2. `controller.run_on_controller(fn, callback)` runs the controller flow's entry
    point on its event thread, the callback hops back to this loop; 3. ElectLeaders then
    waits, like Kafka's DelayedElectLeader, until the cache shows each elected leader.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from praha.common import TopicPartition, by_topic
from praha.errors import ControllerMovedError, ErrorCode, PrahaError, TopicAlreadyMarkedForDeletionError
from praha.protocol.error_response import refusal
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.admin import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from praha.protocol.messages.runtime import WireMessage
from praha.security.acl import AclOperation
from praha.zk.admin_zk import add_partitions, delete_topic

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import AdminFlows, Broker, ControllerSeat, PartitionResults
    from praha.protocol.controller_requests import PartitionLeaderState

log = logging.getLogger(__name__)

PREFERRED, UNCLEAN = 0, 1
_POLL_S = 0.05
NOT_CONTROLLER_MESSAGE = "This broker is not the active controller."

_R = TypeVar("_R")
_T = TypeVar("_T")


class ControllerCallError(PrahaError):
    """The controller flow could not be run (missing entry point, timeout)."""


def _flows(controller: ControllerSeat, name: str) -> AdminFlows:
    """The controller's flows, once they are known to have the admin entry point `name`."""
    flows = controller.flows
    if getattr(flows, name, None) is None:
        raise ControllerCallError(f"the controller does not implement {name} yet")
    return flows


def _error_of(e: BaseException) -> tuple[int, str]:
    if isinstance(e, ControllerMovedError):
        return ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
    if isinstance(e, asyncio.TimeoutError):
        return ErrorCode.REQUEST_TIMED_OUT, "The controller did not answer in time."
    if isinstance(e, PrahaError):
        return int(e.code), str(e)
    return ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(e).__name__}: {e}"


def _by_topic(items: Iterable[TopicPartition]) -> dict[str, list[int]]:
    return by_topic((tp.topic, tp.partition) for tp in sorted(items))


class AdminApis:
    def __init__(self, broker: Broker):
        self.broker = broker

    @property
    def acting(self) -> bool:
        c = self.broker.controller
        return c is not None and c.is_acting

    async def _on_controller(self, fn: Callable[[ControllerSeat], _R], timeout_s: float) -> _R:
        """Run `fn(controller)` on the controller's event thread; its result, or raises."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[_R] = loop.create_future()

        def settle(result: _R | None, error: BaseException | None) -> None:
            if fut.done():
                return
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(result)  # type: ignore[arg-type]  # None only alongside an error

        def done(result: _R | None, error: BaseException | None) -> None:
            loop.call_soon_threadsafe(settle, result, error)

        controller = self.broker.controller
        if controller is None:
            raise ControllerCallError("this broker hosts no controller yet")
        controller.run_on_controller(fn, done)
        return await asyncio.wait_for(fut, max(timeout_s, 0.5))

    async def _in_executor(self, fn: Callable[[], _R]) -> _R:
        return await asyncio.get_running_loop().run_in_executor(None, fn)

    async def _wait_until(self, pending: set[_T], done: Callable[[_T], bool], timeout_ms: int) -> set[_T]:
        """Poll `done(item)` for each pending item until all are done or the timeout passes;
        returns what is still pending."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, timeout_ms) / 1000.0
        while pending:
            pending = {x for x in pending if not done(x)}
            if not pending or loop.time() >= deadline:
                break
            await asyncio.sleep(_POLL_S)
        return pending

    # ------------------------------------------------------------------ DeleteTopics
    async def handle_delete_topics(self, req: DecodedRequest) -> DeleteTopicsResponse:
        """Mark each topic for deletion, then wait until our cache no longer has it."""
        r, version = req.body(DeleteTopicsRequest), req.api_version
        if version >= 6:  # by name, or by an id a Metadata answer gave (KIP-516)
            by_id = {tid: name for name, tid in self.broker.metadata_cache.topic_ids.items()}
            wanted = [(t.name if t.name is not None else by_id.get(t.topic_id) if t.topic_id else None, t.topic_id)
                      for t in r.topics or []]
        else:
            wanted = [(name, None) for name in r.topic_names or []]
        names = [n for n, _ in wanted]
        result_cls = DeleteTopicsResponse.DeletableTopicResult
        results: list[DeleteTopicsResponse.DeletableTopicResult] = []
        waiting: set[str] = set()
        for name, topic_id in wanted:
            if name is not None and not self.broker.authz.topic_allowed(req, AclOperation.DELETE, name):
                code, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
            elif not self.acting:
                code, message = ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
            elif not self.broker.config.delete_topic_enable:
                code = ErrorCode.INVALID_REQUEST if version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
                message = "Topic deletion is disabled (delete.topic.enable=false)."
            elif name is None:
                code, message = ErrorCode.UNKNOWN_TOPIC_ID, f"Topic id {topic_id} not found."
            elif names.count(name) > 1:
                code, message = ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
            else:
                try:
                    await self._in_executor(partial(delete_topic, self.broker.zk_store(), name))
                    code, message = ErrorCode.NONE, None
                except TopicAlreadyMarkedForDeletionError:
                    code, message = ErrorCode.NONE, None  # as Kafka: wait for the deletion in progress
                except PrahaError as e:
                    code, message = e.code, str(e)
                if code == ErrorCode.NONE:
                    waiting.add(name)
            results.append(result_cls(name=name, topic_id=topic_id, error_code=int(code), error_message=message))
        if waiting and (r.timeout_ms or 0) > 0:
            cache = self.broker.metadata_cache
            late = await self._wait_until(set(waiting), lambda t: not cache.contains_topic(t), r.timeout_ms)
            for res in results:
                if res.name in late and res.error_code == ErrorCode.NONE:
                    res.error_code, res.error_message = ErrorCode.REQUEST_TIMED_OUT, (
                        f"Topic '{res.name}' is marked for deletion but was not deleted within {r.timeout_ms} ms.")
        return DeleteTopicsResponse(throttle_time_ms=0, responses=results)

    # ------------------------------------------------------------------ CreatePartitions
    async def handle_create_partitions(self, req: DecodedRequest) -> CreatePartitionsResponse:
        """Grow topics (znode writes as `praha topics alter`), then wait for the new
        partitions to reach our cache."""
        r = req.body(CreatePartitionsRequest)
        topics = list(r.topics or [])
        names = [t.name for t in topics]
        result_cls = CreatePartitionsResponse.CreatePartitionsTopicResult
        results: list[CreatePartitionsResponse.CreatePartitionsTopicResult] = []
        waiting: dict[str, int] = {}
        for t in topics:
            if not self.broker.authz.topic_allowed(req, AclOperation.ALTER, t.name):
                code, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
            elif not self.acting:
                code, message = ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE
            elif names.count(t.name) > 1:
                code, message = ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
            else:
                assignment = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
                try:
                    await self._in_executor(partial(add_partitions, self.broker.zk_store(), t.name, t.count, assignment,
                                                    validate_only=bool(r.validate_only)))
                    code, message = ErrorCode.NONE, None
                    if not r.validate_only:
                        waiting[t.name] = t.count
                except PrahaError as e:
                    code, message = e.code, str(e)
            results.append(result_cls(name=t.name, error_code=int(code), error_message=message))
        if waiting and (r.timeout_ms or 0) > 0:
            cache = self.broker.metadata_cache
            late = await self._wait_until(set(waiting), lambda n: len(cache.topic_partitions(n)) >= waiting[n],
                                          r.timeout_ms)
            for res in results:
                if res.name in late and res.error_code == ErrorCode.NONE:
                    res.error_code, res.error_message = ErrorCode.REQUEST_TIMED_OUT, (
                        f"The partitions of '{res.name}' were added but are not online within {r.timeout_ms} ms.")
        return CreatePartitionsResponse(throttle_time_ms=0, results=results)

    # ------------------------------------------------------------------ ElectLeaders
    async def handle_elect_leaders(self, req: DecodedRequest) -> ElectLeadersResponse:
        """Preferred and unclean elections through the controller's flows; the answer waits
        until this broker's metadata shows each elected leader."""
        r, version = req.body(ElectLeadersRequest), req.api_version
        election_type = r.election_type if version >= 1 else PREFERRED
        partitions = None if r.topic_partitions is None else {
            TopicPartition(t.topic, p) for t in r.topic_partitions for p in t.partitions}
        timeout_ms = r.timeout_ms if r.timeout_ms is not None else 60000
        top: int = ErrorCode.NONE
        top_message: str | None = None
        results: PartitionResults = {}
        flow = {PREFERRED: "api_elect_preferred", UNCLEAN: "api_elect_unclean"}.get(election_type)

        def elect(c: ControllerSeat, name: str) -> PartitionResults:
            flows = _flows(c, name)
            return (flows.api_elect_preferred if name == "api_elect_preferred" else flows.api_elect_unclean)(partitions)

        if not self.broker.authz.cluster_allowed(req, AclOperation.ALTER):
            top = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            results = {tp: (top, None) for tp in partitions or ()}
        elif not self.acting:
            top = ErrorCode.NOT_CONTROLLER
            results = {tp: (ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE) for tp in partitions or ()}
        elif flow is None:
            top = ErrorCode.INVALID_REQUEST
            results = {tp: (ErrorCode.INVALID_REQUEST, f"Unknown election type {election_type}.")
                       for tp in partitions or ()}
        else:
            try:
                results = dict(await self._on_controller(lambda c: elect(c, flow), timeout_ms / 1000.0))
            except Exception as e:  # noqa: BLE001 - answered as an error code
                code, top_message = _error_of(e)
                top = code
                results = {tp: (code, top_message) for tp in partitions or ()}
            elected = {tp for tp, (code, _) in results.items() if code == ErrorCode.NONE}
            if elected:
                cache = self.broker.metadata_cache

                def shows_leader(tp: TopicPartition) -> bool:
                    s = cache.partition(tp)
                    if s is None or not s.replicas:
                        return False
                    return s.leader == s.replicas[0] if election_type == PREFERRED else s.leader >= 0

                for tp in await self._wait_until(elected, shows_leader, timeout_ms):
                    results[tp] = (ErrorCode.REQUEST_TIMED_OUT,
                                   f"The new leader of {tp} was not visible within {timeout_ms} ms.")
        if partitions is not None:  # the request's partitions alone, each answered once
            results = {tp: results.get(tp, (ErrorCode.UNKNOWN_SERVER_ERROR, "no result from the controller"))
                       for tp in partitions}
        rer = ElectLeadersResponse.ReplicaElectionResult
        pr = rer.PartitionResult
        return ElectLeadersResponse(throttle_time_ms=0, error_code=int(top) if version >= 1 else 0,
                                    replica_election_results=[
            rer(topic=t, partition_result=[
                pr(partition_id=p, error_code=int(results[TopicPartition(t, p)][0]),
                   error_message=results[TopicPartition(t, p)][1]) for p in ps])
            for t, ps in _by_topic(results).items()])

    # ------------------------------------------------------------------ AlterPartitionReassignments
    async def handle_alter_partition_reassignments(self, req: DecodedRequest) -> AlterPartitionReassignmentsResponse:
        """Checks Kafka's API makes before the controller (empty or duplicate replica lists,
        a replication-factor change when v1 forbids it); the rest is the controller's."""
        r, version = req.body(AlterPartitionReassignmentsRequest), req.api_version
        allow_rf_change = r.allow_replication_factor_change if version >= 1 else True
        cls = AlterPartitionReassignmentsResponse
        if not self.broker.authz.cluster_allowed(req, AclOperation.ALTER):
            return cls(throttle_time_ms=0, allow_replication_factor_change=allow_rf_change,
                       error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, responses=[])
        if not self.acting:
            return cls(throttle_time_ms=0, allow_replication_factor_change=allow_rf_change,
                       error_code=ErrorCode.NOT_CONTROLLER, error_message=NOT_CONTROLLER_MESSAGE, responses=[])
        results: PartitionResults = {}
        targets: dict[TopicPartition, tuple[int, ...] | None] = {}
        cache = self.broker.metadata_cache
        for t in r.topics or []:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if p.replicas is None:
                    targets[tp] = None
                    continue
                replicas = tuple(p.replicas)
                current = cache.partition(tp)
                if not replicas:
                    results[tp] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The replica list is empty.")
                elif len(set(replicas)) != len(replicas):
                    results[tp] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   f"The replica list {list(replicas)} contains a broker twice.")
                elif any(b < 0 for b in replicas):
                    results[tp] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   f"The replica list {list(replicas)} contains a negative broker id.")
                elif (not allow_rf_change and current is not None
                      and len(replicas) != len(_origin(current))):
                    results[tp] = (ErrorCode.INVALID_REPLICATION_FACTOR,
                                   f"The replication factor is changed from {len(_origin(current))} to "
                                   f"{len(replicas)} but allowReplicationFactorChange is false.")
                else:
                    targets[tp] = replicas
        top: int = ErrorCode.NONE
        top_message: str | None = None
        if targets:
            try:
                results.update(await self._on_controller(
                    lambda c: _flows(c, "api_alter_reassignments").api_alter_reassignments(targets),
                    (r.timeout_ms or 60000) / 1000.0))
            except Exception as e:  # noqa: BLE001 - answered as an error code
                top, top_message = _error_of(e)
                if top == ErrorCode.NOT_CONTROLLER:
                    results = {}
                else:
                    results.update({tp: (top, top_message) for tp in targets})
                    top, top_message = ErrorCode.NONE, None
        topic_cls = cls.ReassignableTopicResponse
        part_cls = topic_cls.ReassignablePartitionResponse
        return cls(throttle_time_ms=0, allow_replication_factor_change=allow_rf_change, error_code=int(top),
                   error_message=top_message, responses=[
            topic_cls(name=t, partitions=[
                part_cls(partition_index=p, error_code=int(results[TopicPartition(t, p)][0]),
                         error_message=results[TopicPartition(t, p)][1]) for p in ps])
            for t, ps in _by_topic(results).items()])

    # ------------------------------------------------------------------ ListPartitionReassignments
    async def handle_list_partition_reassignments(self, req: DecodedRequest) -> WireMessage:
        r = req.body(ListPartitionReassignmentsRequest)
        cls = ListPartitionReassignmentsResponse
        if not self.broker.authz.cluster_allowed(req, AclOperation.DESCRIBE):
            return refusal(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        if not self.acting:
            return refusal(req, ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE)
        partitions = None if r.topics is None else {
            TopicPartition(t.name, p) for t in r.topics for p in t.partition_indexes}
        try:
            ongoing = await self._on_controller(
                lambda c: _flows(c, "api_list_reassignments").api_list_reassignments(partitions),
                (r.timeout_ms or 60000) / 1000.0)
        except Exception as e:  # noqa: BLE001 - answered as an error code
            code, message = _error_of(e)
            return refusal(req, ErrorCode(code), message)
        topic_cls = cls.OngoingTopicReassignment
        part_cls = topic_cls.OngoingPartitionReassignment
        return cls(throttle_time_ms=0, error_code=0, error_message=None, topics=[
            topic_cls(name=t, partitions=[
                part_cls(partition_index=p, replicas=list(ongoing[TopicPartition(t, p)][0]),
                         adding_replicas=list(ongoing[TopicPartition(t, p)][1]),
                         removing_replicas=list(ongoing[TopicPartition(t, p)][2])) for p in ps])
            for t, ps in _by_topic(ongoing).items()])


def _origin(state: PartitionLeaderState) -> tuple[int, ...]:
    """A partition's replicas before any reassignment in flight (its replication factor)."""
    adding = set(state.adding_replicas)
    return tuple(b for b in state.replicas if b not in adding)
