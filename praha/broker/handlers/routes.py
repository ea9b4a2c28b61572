"""The broker's API table: every API it serves, at which versions, and by which handler.

Serving a new API is one handler method and one `Route` here. The socket server decodes a
frame with `versions` (so what is advertised and what is accepted never disagree),
looks the handler up in `handlers` and awaits it; the handler returns the response
object, or None for no answer (acks=0). Handlers run on the network event loop, so they
may touch the metadata cache and replica manager directly; anything that blocks
(ZooKeeper, disk-heavy work) goes to an executor or to the controller's event thread.

The handlers are grouped by what they need (one class each): the metadata cache
(`metadata`), the controller's requests (`controller`), the data path
(`data`), the controller-side admin APIs (`admin`), producer ids
(`producer_ids`), consumer groups (`group`), transactions (`txn`),
configs (`config`), client quotas (`quota`), transaction markers from a
transaction coordinator (`txn_marker`), ACLs and SCRAM credentials (`security`).
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from praha.broker.handlers.admin import AdminApis
from praha.broker.handlers.config import ConfigApis
from praha.broker.handlers.consumer_group import ConsumerGroupApis
from praha.broker.handlers.controller import ControllerApis
from praha.broker.handlers.data import DataApis
from praha.broker.handlers.group import GroupApis
from praha.broker.handlers.metadata import MetadataApis
from praha.broker.handlers.producer_ids import ProducerIdApis
from praha.broker.handlers.quota import QuotaApis
from praha.broker.handlers.security import SecurityApis
from praha.broker.handlers.share import ShareApis
from praha.broker.handlers.txn import TransactionApis
from praha.broker.handlers.txn_marker import TxnMarkerApis
from praha.broker.network.socket_server import Answer
from praha.errors import ErrorCode
from praha.protocol.api_keys import ApiKey
from praha.protocol.error_response import refusal
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.metadata import ApiVersionsResponse
from praha.protocol.messages.runtime import WireMessage
from praha.protocol.registry import api_versions_response, check_supported
from praha.security.acl import AclOperation, ResourceType

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

Handler = Callable[[DecodedRequest], Awaitable[Answer]]


@dataclass(frozen=True)
class AclCheck:
    """One authorisation an API asks for (Kafka's KafkaApis): `operation` on resources of
    `resource`, named by the request's `names` (a field path, or "cluster")."""

    resource: ResourceType
    operation: AclOperation
    names: str

    @property
    def refusal(self) -> ErrorCode:
        """The error a request refused by this check answers."""
        return REFUSALS[self.resource]


#: what a refused check answers, per resource type
REFUSALS: dict[ResourceType, ErrorCode] = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}
#: the APIs a client may use before or without any authorisation (Kafka's: authentication itself)
OPEN_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


@dataclass(frozen=True)
class Route:
    """One served API: its versions, the handler method (of `owner`'s instance) and the
    ACL checks its handler makes (any of them may apply, e.g. Fetch: Read on each topic
    from a consumer, ClusterAction from a follower)."""

    api_key: ApiKey
    versions: tuple[int, int]
    owner: type
    method: Callable[..., Awaitable[Answer]]
    acls: tuple[AclCheck, ...] = ()
    #: False where the checks only shape the answer (what is listed, the authorised
    #: operations) and never refuse the request, as Kafka's
    refuses: bool = True


class RequestHandlers:
    """Builds the handler groups for one broker and binds the table to them."""

    def __init__(self, broker: Broker):
        self.broker = broker
        self.metadata = MetadataApis(broker)
        self.controller = ControllerApis(broker)
        self.data = DataApis(broker)
        self.admin = AdminApis(broker)
        self.producer_ids = ProducerIdApis(broker)
        self.groups = GroupApis(broker)
        self.consumer_groups = ConsumerGroupApis(broker)
        self.configs = ConfigApis(broker)
        self.quotas = QuotaApis(broker)
        self.security = SecurityApis(broker)
        self.transactions = TransactionApis(broker)
        self.txn_markers = TxnMarkerApis(broker)
        self.share = ShareApis(broker)
        groups: dict[type, object] = {type(g): g for g in (
            self, self.metadata, self.controller, self.data, self.admin, self.producer_ids, self.groups,
            self.consumer_groups, self.configs, self.quotas, self.security, self.transactions,
            self.txn_markers, self.share)}
        self.handlers: dict[int, Handler] = {}
        self.versions: dict[int, tuple[int, int]] = {}
        for route in ROUTES:
            self.register(route.api_key, route.versions, route.method.__get__(groups[route.owner]))

    def register(self, api_key: int, versions: tuple[int, int], handler: Handler) -> None:
        """Serve `api_key` at `versions`; checked against the schemas now, so a typo fails at start-up."""
        check_supported({api_key: versions})
        self.handlers[api_key] = handler
        self.versions[api_key] = versions

    async def handle_api_versions(self, req: DecodedRequest) -> ApiVersionsResponse:
        return api_versions_response(self.versions)

    async def handle_sasl_handshake(self, req: DecodedRequest) -> WireMessage:
        """Only an unauthenticated SASL connection may hand-shake (`authentication`); here
        the connection is authenticated already or not SASL at all: Kafka's answer."""
        return refusal(req, ErrorCode.ILLEGAL_SASL_STATE)

    async def handle_sasl_authenticate(self, req: DecodedRequest) -> WireMessage:
        return refusal(req, ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate outside a SASL handshake")


T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
Op = AclOperation
CLUSTER = "cluster"


def acls(*checks: tuple[ResourceType, AclOperation, str]) -> tuple[AclCheck, ...]:
    return tuple(AclCheck(*c) for c in checks)


#: every API this broker serves (versions: what current clients negotiate, within the schemas)
ROUTES: tuple[Route, ...] = (
    Route(ApiKey.PRODUCE, (3, 11), DataApis, DataApis.handle_produce,
          acls=acls((T, Op.WRITE, "topic_data[].name"), (X, Op.WRITE, "transactional_id"))),
    Route(ApiKey.FETCH, (4, 16), DataApis, DataApis.handle_fetch,
          acls=acls((T, Op.READ, "topics[].topic"), (C, Op.CLUSTER_ACTION, CLUSTER))),
    Route(ApiKey.LIST_OFFSETS, (1, 10), DataApis, DataApis.handle_list_offsets,
          acls=acls((T, Op.DESCRIBE, "topics[].name"))),
    Route(ApiKey.METADATA, (0, 13), MetadataApis, MetadataApis.handle_metadata,
          acls=acls((T, Op.DESCRIBE, "topics[].name"), (C, Op.CREATE, CLUSTER), (T, Op.CREATE, "topics[].name"))),
    Route(ApiKey.LEADER_AND_ISR, (4, 4), ControllerApis, ControllerApis.handle_leader_and_isr,
          acls=acls((C, Op.CLUSTER_ACTION, CLUSTER))),
    Route(ApiKey.STOP_REPLICA, (3, 3), ControllerApis, ControllerApis.handle_stop_replica,
          acls=acls((C, Op.CLUSTER_ACTION, CLUSTER))),
    Route(ApiKey.UPDATE_METADATA, (6, 6), ControllerApis, ControllerApis.handle_update_metadata,
          acls=acls((C, Op.CLUSTER_ACTION, CLUSTER))),
    Route(ApiKey.CONTROLLED_SHUTDOWN, (3, 3), ControllerApis, ControllerApis.handle_controlled_shutdown,
          acls=acls((C, Op.CLUSTER_ACTION, CLUSTER))),
    Route(ApiKey.API_VERSIONS, (0, 4), RequestHandlers, RequestHandlers.handle_api_versions),
    Route(ApiKey.SASL_HANDSHAKE, (0, 1), RequestHandlers, RequestHandlers.handle_sasl_handshake),
    Route(ApiKey.SASL_AUTHENTICATE, (0, 2), RequestHandlers, RequestHandlers.handle_sasl_authenticate),
    Route(ApiKey.CREATE_TOPICS, (2, 7), MetadataApis, MetadataApis.handle_create_topics,
          acls=acls((C, Op.CREATE, CLUSTER), (T, Op.CREATE, "topics[].name"))),
    # DeleteTopics starts at v1 in kafka-python's schema
    Route(ApiKey.DELETE_TOPICS, (1, 6), AdminApis, AdminApis.handle_delete_topics,
          acls=acls((T, Op.DELETE, "topic_names[] | topics[].name"))),
    Route(ApiKey.INIT_PRODUCER_ID, (0, 5), ProducerIdApis, ProducerIdApis.handle_init_producer_id,
          acls=acls((C, Op.IDEMPOTENT_WRITE, CLUSTER), (T, Op.WRITE, "any topic"), (X, Op.WRITE, "transactional_id"))),
    Route(ApiKey.DESCRIBE_PRODUCERS, (0, 0), ProducerIdApis, ProducerIdApis.handle_describe_producers,
          acls=acls((T, Op.READ, "topics[].name"))),
    Route(ApiKey.OFFSET_FOR_LEADER_EPOCH, (2, 4), DataApis, DataApis.handle_offset_for_leader_epoch,
          acls=acls((T, Op.DESCRIBE, "topics[].topic"), (C, Op.CLUSTER_ACTION, CLUSTER))),
    Route(ApiKey.CREATE_PARTITIONS, (0, 3), AdminApis, AdminApis.handle_create_partitions,
          acls=acls((T, Op.ALTER, "topics[].name"))),
    Route(ApiKey.ELECT_LEADERS, (0, 2), AdminApis, AdminApis.handle_elect_leaders,
          acls=acls((C, Op.ALTER, CLUSTER))),
    Route(ApiKey.ALTER_PARTITION_REASSIGNMENTS, (0, 1), AdminApis, AdminApis.handle_alter_partition_reassignments,
          acls=acls((C, Op.ALTER, CLUSTER))),
    Route(ApiKey.LIST_PARTITION_REASSIGNMENTS, (0, 0), AdminApis, AdminApis.handle_list_partition_reassignments,
          acls=acls((C, Op.DESCRIBE, CLUSTER))),
    Route(ApiKey.DESCRIBE_CLUSTER, (0, 1), DataApis, DataApis.handle_describe_cluster,
          acls=acls((C, Op.DESCRIBE, CLUSTER + ": the authorised operations only")), refuses=False),
    Route(ApiKey.FIND_COORDINATOR, (0, 6), GroupApis, GroupApis.handle_find_coordinator,
          acls=acls((G, Op.DESCRIBE, "key | coordinator_keys[]"), (X, Op.DESCRIBE, "key | coordinator_keys[]"))),
    Route(ApiKey.JOIN_GROUP, (0, 9), GroupApis, GroupApis.handle_join_group,
          acls=acls((G, Op.READ, "group_id"))),
    Route(ApiKey.SYNC_GROUP, (0, 5), GroupApis, GroupApis.handle_sync_group,
          acls=acls((G, Op.READ, "group_id"))),
    Route(ApiKey.HEARTBEAT, (0, 4), GroupApis, GroupApis.handle_heartbeat,
          acls=acls((G, Op.READ, "group_id"))),
    Route(ApiKey.LEAVE_GROUP, (0, 5), GroupApis, GroupApis.handle_leave_group,
          acls=acls((G, Op.READ, "group_id"))),
    # KIP-848 consumer groups (praha's schemas of Kafka 4's APIs)
    Route(ApiKey.CONSUMER_GROUP_HEARTBEAT, (0, 1), ConsumerGroupApis, ConsumerGroupApis.handle_consumer_group_heartbeat,
          acls=acls((G, Op.READ, "group_id"))),
    Route(ApiKey.CONSUMER_GROUP_DESCRIBE, (0, 1), ConsumerGroupApis, ConsumerGroupApis.handle_consumer_group_describe,
          acls=acls((G, Op.DESCRIBE, "group_ids[]"))),
    # KIP-932 share groups: v1 is what Kafka 4.1+ and librdkafka 2.15+ speak (v0 was early access)
    Route(ApiKey.SHARE_GROUP_HEARTBEAT, (1, 1), ShareApis, ShareApis.handle_share_group_heartbeat,
          acls=acls((G, Op.READ, "group_id"))),
    Route(ApiKey.SHARE_GROUP_DESCRIBE, (1, 1), ShareApis, ShareApis.handle_share_group_describe,
          acls=acls((G, Op.DESCRIBE, "group_ids[]"))),
    Route(ApiKey.SHARE_FETCH, (1, 1), ShareApis, ShareApis.handle_share_fetch,
          acls=acls((G, Op.READ, "group_id"), (T, Op.READ, "topics[].topic_id"))),
    Route(ApiKey.SHARE_ACKNOWLEDGE, (1, 1), ShareApis, ShareApis.handle_share_acknowledge,
          acls=acls((G, Op.READ, "group_id"), (T, Op.READ, "topics[].topic_id"))),
    Route(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, (0, 1), ShareApis, ShareApis.handle_describe_share_group_offsets,
          acls=acls((G, Op.DESCRIBE, "groups[].group_id"), (T, Op.DESCRIBE, "groups[].topics[].topic_name"))),
    Route(ApiKey.ALTER_SHARE_GROUP_OFFSETS, (0, 0), ShareApis, ShareApis.handle_alter_share_group_offsets,
          acls=acls((G, Op.READ, "group_id"), (T, Op.READ, "topics[].topic_name"))),
    Route(ApiKey.DELETE_SHARE_GROUP_OFFSETS, (0, 0), ShareApis, ShareApis.handle_delete_share_group_offsets,
          acls=acls((G, Op.DELETE, "group_id"), (T, Op.READ, "topics[].topic_name"))),
    # kafka-python's schemas start OffsetCommit at v2 and OffsetFetch at v1; v9: member epochs (KIP-848)
    Route(ApiKey.OFFSET_COMMIT, (2, 9), GroupApis, GroupApis.handle_offset_commit,
          acls=acls((G, Op.READ, "group_id"), (T, Op.READ, "topics[].name"))),
    Route(ApiKey.OFFSET_FETCH, (1, 9), GroupApis, GroupApis.handle_offset_fetch,
          acls=acls((G, Op.DESCRIBE, "group_id | groups[].group_id"), (T, Op.DESCRIBE, "topics[].name"))),
    Route(ApiKey.LIST_GROUPS, (0, 5), GroupApis, GroupApis.handle_list_groups,
          acls=acls((C, Op.DESCRIBE, CLUSTER + ": all groups"),
                    (G, Op.DESCRIBE, "each group: the groups listed")), refuses=False),
    Route(ApiKey.DESCRIBE_GROUPS, (0, 5), GroupApis, GroupApis.handle_describe_groups,
          acls=acls((G, Op.DESCRIBE, "groups[]"))),
    Route(ApiKey.DELETE_GROUPS, (0, 2), GroupApis, GroupApis.handle_delete_groups,
          acls=acls((G, Op.DELETE, "groups_names[]"))),
    Route(ApiKey.OFFSET_DELETE, (0, 0), GroupApis, GroupApis.handle_offset_delete,
          acls=acls((G, Op.DELETE, "group_id"), (T, Op.READ, "topics[].name"))),
    # kafka-python's DescribeConfigs schema starts at v1
    Route(ApiKey.DELETE_RECORDS, (0, 2), DataApis, DataApis.handle_delete_records,
          acls=acls((T, Op.DELETE, "topics[].name"))),
    # kafka-python's DescribeLogDirs schema starts at v1
    Route(ApiKey.DESCRIBE_LOG_DIRS, (1, 4), DataApis, DataApis.handle_describe_log_dirs,
          acls=acls((C, Op.DESCRIBE, CLUSTER))),
    # kafka-python's AlterReplicaLogDirs schema starts at v1
    Route(ApiKey.ALTER_REPLICA_LOG_DIRS, (1, 2), DataApis, DataApis.handle_alter_replica_log_dirs,
          acls=acls((C, Op.ALTER, CLUSTER))),
    Route(ApiKey.DESCRIBE_CONFIGS, (1, 4), ConfigApis, ConfigApis.handle_describe_configs,
          acls=acls((T, Op.DESCRIBE_CONFIGS, "resources[].resource_name"), (C, Op.DESCRIBE_CONFIGS, CLUSTER))),
    Route(ApiKey.ALTER_CONFIGS, (0, 2), ConfigApis, ConfigApis.handle_alter_configs,
          acls=acls((T, Op.ALTER_CONFIGS, "resources[].resource_name"), (C, Op.ALTER_CONFIGS, CLUSTER))),
    Route(ApiKey.INCREMENTAL_ALTER_CONFIGS, (0, 1), ConfigApis, ConfigApis.handle_incremental_alter_configs,
          acls=acls((T, Op.ALTER_CONFIGS, "resources[].resource_name"), (C, Op.ALTER_CONFIGS, CLUSTER))),
    Route(ApiKey.DESCRIBE_CLIENT_QUOTAS, (0, 1), QuotaApis, QuotaApis.handle_describe_client_quotas,
          acls=acls((C, Op.DESCRIBE_CONFIGS, CLUSTER))),
    Route(ApiKey.ALTER_CLIENT_QUOTAS, (0, 1), QuotaApis, QuotaApis.handle_alter_client_quotas,
          acls=acls((C, Op.ALTER_CONFIGS, CLUSTER))),
    # kafka-python's ACL schemas start at v1
    Route(ApiKey.DESCRIBE_ACLS, (1, 3), SecurityApis, SecurityApis.handle_describe_acls,
          acls=acls((C, Op.DESCRIBE, CLUSTER))),
    Route(ApiKey.CREATE_ACLS, (1, 3), SecurityApis, SecurityApis.handle_create_acls,
          acls=acls((C, Op.ALTER, CLUSTER))),
    Route(ApiKey.DELETE_ACLS, (1, 3), SecurityApis, SecurityApis.handle_delete_acls,
          acls=acls((C, Op.ALTER, CLUSTER))),
    Route(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, (0, 0), SecurityApis,
          SecurityApis.handle_describe_user_scram_credentials,
          acls=acls((C, Op.DESCRIBE, CLUSTER))),
    Route(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, (0, 0), SecurityApis, SecurityApis.handle_alter_user_scram_credentials,
          acls=acls((C, Op.ALTER, CLUSTER))),
    # transactions, at Kafka 3.7's versions (v4 of AddPartitionsToTxn: partition leaders' verification)
    Route(ApiKey.ADD_PARTITIONS_TO_TXN, (0, 4), TransactionApis, TransactionApis.handle_add_partitions_to_txn,
          acls=acls((X, Op.WRITE, "v3_and_below_transactional_id | transactions[].transactional_id"),
                    (T, Op.WRITE, "topics[].name"), (C, Op.CLUSTER_ACTION, CLUSTER + ": v4 verification"))),
    Route(ApiKey.ADD_OFFSETS_TO_TXN, (0, 3), TransactionApis, TransactionApis.handle_add_offsets_to_txn,
          acls=acls((X, Op.WRITE, "transactional_id"), (G, Op.READ, "group_id"))),
    Route(ApiKey.END_TXN, (0, 3), TransactionApis, TransactionApis.handle_end_txn,
          acls=acls((X, Op.WRITE, "transactional_id"))),
    Route(ApiKey.TXN_OFFSET_COMMIT, (0, 3), GroupApis, GroupApis.handle_txn_offset_commit,
          acls=acls((X, Op.WRITE, "transactional_id"), (G, Op.READ, "group_id"), (T, Op.READ, "topics[].name"))),
    Route(ApiKey.DESCRIBE_TRANSACTIONS, (0, 0), TransactionApis, TransactionApis.handle_describe_transactions,
          acls=acls((X, Op.DESCRIBE, "transactional_ids[]"))),
    Route(ApiKey.LIST_TRANSACTIONS, (0, 1), TransactionApis, TransactionApis.handle_list_transactions,
          acls=acls((X, Op.DESCRIBE, "each transaction: the ones listed")), refuses=False),
    # Kafka 3.9 serves v0-1; kafka-python's schema starts at v1 (the flexible one coordinators send)
    Route(ApiKey.WRITE_TXN_MARKERS, (1, 1), TxnMarkerApis, TxnMarkerApis.handle_write_txn_markers,
          acls=acls((C, Op.CLUSTER_ACTION, CLUSTER))),
)

#: api key -> (min, max) version served, as ApiVersions advertises it
SERVED_VERSIONS: dict[int, tuple[int, int]] = {r.api_key: r.versions for r in ROUTES}
