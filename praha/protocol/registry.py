"""Which Kafka APIs praha can speak, and the classes that encode them.

One table, api key → request/response class, for every API a praha broker or controller
may serve. Whether a broker actually serves an API, and at which versions, is the
broker's call: it passes a `{api_key: (min, max)}` table to `decode_request` and to
`api_versions_response`, so what it advertises and what it accepts never disagree.

Version ranges here are those of the schemas (kafka-python's own, or praha's for the
controller APIs). kafka-python ignores a schema's minimum version; the registry keeps it,
because versions below it lack fields in those schemas and would decode wrongly.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeProducersRequest,
    DescribeProducersResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafka.protocol.admin.acl import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from kafka.protocol.admin.transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.admin.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka.protocol.schemas import BaseField

from praha.errors import ConfigError, ErrorCode
from praha.protocol.api_keys import ApiKey
from praha.protocol.consumer_group_apis import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from praha.protocol.controller_apis import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)

#: replica ids of Fetch/ListOffsets that are not brokers: a consumer (reads below the high
#: watermark, from the leader) and Kafka's debugging id (any replica's own log, for tools)
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API: its classes and the versions its schema describes."""

    api_key: int
    name: str
    request: Any  # a kafka-python ApiMessage subclass
    response: Any
    min_version: int
    max_version: int

    def is_flexible(self, version: int) -> bool:
        return bool(self.request.flexible_version_q(version))


def _spec(request: Any, response: Any) -> ApiSpec:
    lo, hi = BaseField.parse_versions(request.json["validVersions"])
    rlo, rhi = BaseField.parse_versions(response.json["validVersions"])
    name = request.json["name"].removesuffix("Request")
    return ApiSpec(request.API_KEY, name, request, response, max(lo, rlo), min(hi, rhi))


#: api key → ApiSpec for every API praha may serve.
APIS: dict[int, ApiSpec] = {s.api_key: s for s in (
    _spec(ProduceRequest, ProduceResponse),
    _spec(FetchRequest, FetchResponse),
    _spec(ListOffsetsRequest, ListOffsetsResponse),
    _spec(MetadataRequest, MetadataResponse),
    _spec(LeaderAndIsrRequest, LeaderAndIsrResponse),
    _spec(StopReplicaRequest, StopReplicaResponse),
    _spec(UpdateMetadataRequest, UpdateMetadataResponse),
    _spec(ControlledShutdownRequest, ControlledShutdownResponse),
    _spec(FindCoordinatorRequest, FindCoordinatorResponse),
    _spec(ApiVersionsRequest, ApiVersionsResponse),
    _spec(CreateTopicsRequest, CreateTopicsResponse),
    _spec(DeleteTopicsRequest, DeleteTopicsResponse),
    _spec(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    _spec(CreatePartitionsRequest, CreatePartitionsResponse),
    _spec(ElectLeadersRequest, ElectLeadersResponse),
    _spec(AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse),
    _spec(ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse),
    _spec(DescribeClusterRequest, DescribeClusterResponse),
    _spec(InitProducerIdRequest, InitProducerIdResponse),
    _spec(JoinGroupRequest, JoinGroupResponse),
    _spec(SyncGroupRequest, SyncGroupResponse),
    _spec(HeartbeatRequest, HeartbeatResponse),
    _spec(LeaveGroupRequest, LeaveGroupResponse),
    _spec(OffsetCommitRequest, OffsetCommitResponse),
    _spec(OffsetFetchRequest, OffsetFetchResponse),
    _spec(ListGroupsRequest, ListGroupsResponse),
    _spec(DescribeGroupsRequest, DescribeGroupsResponse),
    _spec(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
    _spec(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse),
    _spec(DeleteGroupsRequest, DeleteGroupsResponse),
    _spec(OffsetDeleteRequest, OffsetDeleteResponse),
    _spec(DescribeConfigsRequest, DescribeConfigsResponse),
    _spec(AlterConfigsRequest, AlterConfigsResponse),
    _spec(DeleteRecordsRequest, DeleteRecordsResponse),
    _spec(DescribeLogDirsRequest, DescribeLogDirsResponse),
    _spec(AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse),
    _spec(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse),
    _spec(DescribeProducersRequest, DescribeProducersResponse),
    _spec(SaslHandshakeRequest, SaslHandshakeResponse),
    _spec(SaslAuthenticateRequest, SaslAuthenticateResponse),
    _spec(CreateAclsRequest, CreateAclsResponse),
    _spec(DescribeAclsRequest, DescribeAclsResponse),
    _spec(DeleteAclsRequest, DeleteAclsResponse),
    _spec(DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse),
    _spec(AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse),
    _spec(DescribeClientQuotasRequest, DescribeClientQuotasResponse),
    _spec(AlterClientQuotasRequest, AlterClientQuotasResponse),
    _spec(AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    _spec(AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    _spec(EndTxnRequest, EndTxnResponse),
    _spec(TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    _spec(DescribeTransactionsRequest, DescribeTransactionsResponse),
    _spec(ListTransactionsRequest, ListTransactionsResponse),
    _spec(WriteTxnMarkersRequest, WriteTxnMarkersResponse),
)}


def request_class(api_key: int) -> Any:
    return APIS[api_key].request


def response_class(api_key: int) -> Any:
    return APIS[api_key].response


def schema_versions() -> dict[int, tuple[int, int]]:
    """Every registered API at every version its schema describes."""
    return {k: (s.min_version, s.max_version) for k, s in APIS.items()}


def header_version(api_key: int, api_version: int) -> int:
    """Request header version Kafka uses: 0 for ControlledShutdown v0, 2 if flexible, else 1.

    Unknown keys get 1: their correlation id sits at the same offset either way."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    spec = APIS.get(api_key)
    return 2 if spec is not None and spec.is_flexible(api_version) else 1


def check_supported(supported: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Validate a broker's version table against the schemas; a typo must fail at start-up."""
    out: dict[int, tuple[int, int]] = {}
    for key, (lo, hi) in supported.items():
        spec = APIS.get(key)
        if spec is None:
            raise ConfigError(f"api key {key} is not in praha's protocol registry")
        if not spec.min_version <= lo <= hi <= spec.max_version:
            raise ConfigError(f"{spec.name} versions {lo}-{hi} outside the schema's "
                              f"{spec.min_version}-{spec.max_version}")
        out[key] = (lo, hi)
    return out


def api_versions_response(supported: Mapping[int, tuple[int, int]],
                          error_code: int = ErrorCode.NONE,
                          throttle_time_ms: int = 0) -> ApiMessage:
    """The ApiVersions answer advertising exactly `supported` (checked by check_supported).

    The caller picks the encoding version (the request's, or 0 after UNSUPPORTED_VERSION)."""
    table = check_supported(supported)
    keys = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(table.items())]
    return ApiVersionsResponse(error_code=int(error_code), api_keys=keys,
                               throttle_time_ms=throttle_time_ms)


def unsupported_version_response(supported: Mapping[int, tuple[int, int]]) -> ApiMessage:
    """Kafka's answer to ApiVersions at a version it lacks (KIP-511): encode it at v0."""
    return api_versions_response(supported, error_code=ErrorCode.UNSUPPORTED_VERSION)


__all__ = [
    "ApiSpec", "APIS", "request_class", "response_class",
    "schema_versions", "header_version", "check_supported", "api_versions_response",
    "unsupported_version_response",
]
