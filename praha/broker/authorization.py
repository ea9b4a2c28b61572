"""Which requests a session may make: the ACL decision (`praha.security.acl.decide`) over
the broker's ACL cache, and the table of what each API needs (Kafka's KafkaApis).

Handlers ask `allowed(session, operation, resource type, name)` per resource and answer
Kafka's error for each refused one (TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_
FAILED); Metadata hides the topics a principal may not describe. With no authoriser
configured every request is allowed.
"""
from __future__ import annotations

from praha.protocol.api_keys import ApiKey
from praha.protocol.framing import DecodedRequest, Session
from praha.security.acl import (
    CLUSTER_NAME,
    WILDCARD_PRINCIPAL,
    AclOperation,
    AuthorizerConfig,
    PermissionType,
    ResourceType,
    decide,
)
from praha.security.acl_store import AclCache

T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
Op = AclOperation

#: API → the (resource type, operation) pairs KafkaApis checks (any of them may apply,
#: e.g. Fetch: Read on each topic from a consumer, ClusterAction from a follower).
#: New APIs (transactions: AddPartitionsToTxn → Write on the TransactionalId, …) add a line.
REQUIRED: dict[int, tuple[tuple[ResourceType, AclOperation], ...]] = {
    ApiKey.PRODUCE: ((T, Op.WRITE), (X, Op.WRITE)),
    ApiKey.FETCH: ((T, Op.READ), (C, Op.CLUSTER_ACTION)),
    ApiKey.LIST_OFFSETS: ((T, Op.DESCRIBE),),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ((T, Op.DESCRIBE), (C, Op.CLUSTER_ACTION)),
    ApiKey.METADATA: ((T, Op.DESCRIBE), (C, Op.CREATE), (T, Op.CREATE)),
    ApiKey.LEADER_AND_ISR: ((C, Op.CLUSTER_ACTION),),
    ApiKey.STOP_REPLICA: ((C, Op.CLUSTER_ACTION),),
    ApiKey.UPDATE_METADATA: ((C, Op.CLUSTER_ACTION),),
    ApiKey.CONTROLLED_SHUTDOWN: ((C, Op.CLUSTER_ACTION),),
    ApiKey.OFFSET_COMMIT: ((G, Op.READ), (T, Op.READ)),
    ApiKey.OFFSET_FETCH: ((G, Op.DESCRIBE), (T, Op.DESCRIBE)),
    ApiKey.FIND_COORDINATOR: ((G, Op.DESCRIBE), (X, Op.DESCRIBE)),
    ApiKey.JOIN_GROUP: ((G, Op.READ),),
    ApiKey.HEARTBEAT: ((G, Op.READ),),
    ApiKey.LEAVE_GROUP: ((G, Op.READ),),
    ApiKey.SYNC_GROUP: ((G, Op.READ),),
    ApiKey.CREATE_TOPICS: ((C, Op.CREATE), (T, Op.CREATE)),
    ApiKey.DELETE_TOPICS: ((T, Op.DELETE),),
    ApiKey.CREATE_PARTITIONS: ((T, Op.ALTER),),
    ApiKey.DELETE_RECORDS: ((T, Op.DELETE),),
    ApiKey.DESCRIBE_CONFIGS: ((T, Op.DESCRIBE_CONFIGS), (C, Op.DESCRIBE_CONFIGS)),
    ApiKey.ALTER_CONFIGS: ((T, Op.ALTER_CONFIGS), (C, Op.ALTER_CONFIGS)),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ((T, Op.ALTER_CONFIGS), (C, Op.ALTER_CONFIGS)),
    ApiKey.ELECT_LEADERS: ((C, Op.ALTER),),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ((C, Op.ALTER),),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ((C, Op.DESCRIBE),),
    ApiKey.DESCRIBE_LOG_DIRS: ((C, Op.DESCRIBE),),
    ApiKey.ALTER_REPLICA_LOG_DIRS: ((C, Op.ALTER),),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: ((C, Op.DESCRIBE_CONFIGS),),
    ApiKey.ALTER_CLIENT_QUOTAS: ((C, Op.ALTER_CONFIGS),),
    ApiKey.INIT_PRODUCER_ID: ((C, Op.IDEMPOTENT_WRITE), (T, Op.WRITE), (X, Op.WRITE)),
    ApiKey.ADD_PARTITIONS_TO_TXN: ((X, Op.WRITE), (T, Op.WRITE), (C, Op.CLUSTER_ACTION)),
    ApiKey.ADD_OFFSETS_TO_TXN: ((X, Op.WRITE), (G, Op.READ)),
    ApiKey.END_TXN: ((X, Op.WRITE),),
    ApiKey.TXN_OFFSET_COMMIT: ((X, Op.WRITE), (G, Op.READ), (T, Op.READ)),
    ApiKey.WRITE_TXN_MARKERS: ((C, Op.CLUSTER_ACTION),),
    ApiKey.DESCRIBE_TRANSACTIONS: ((X, Op.DESCRIBE),),
    ApiKey.LIST_TRANSACTIONS: ((X, Op.DESCRIBE),),
    ApiKey.DESCRIBE_PRODUCERS: ((T, Op.READ),),
    ApiKey.DESCRIBE_GROUPS: ((G, Op.DESCRIBE),),
    ApiKey.LIST_GROUPS: ((C, Op.DESCRIBE), (G, Op.DESCRIBE)),
    ApiKey.DELETE_GROUPS: ((G, Op.DELETE),),
    ApiKey.OFFSET_DELETE: ((G, Op.DELETE), (T, Op.READ)),
    ApiKey.CREATE_ACLS: ((C, Op.ALTER),),
    ApiKey.DELETE_ACLS: ((C, Op.ALTER),),
    ApiKey.DESCRIBE_ACLS: ((C, Op.DESCRIBE),),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: ((C, Op.ALTER),),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: ((C, Op.DESCRIBE),),
}


#: the operations each resource type has (Kafka's AclEntry.supportedOperations), whose
#: allowed subset the authorised-operations fields report as a bit field (1 << operation)
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    T: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    G: (Op.READ, Op.DESCRIBE, Op.DELETE),
    C: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE, Op.ALTER,
        Op.DESCRIBE),
    X: (Op.DESCRIBE, Op.WRITE),
}
#: an authorised-operations field that was not asked for (kafka-python encodes None as
#: Kafka's -2147483648; a set of operation codes as the bit field)
NOT_REQUESTED = None


class RequestAuthorizer:
    def __init__(self, config: AuthorizerConfig | None = None, cache: AclCache | None = None):
        self.config = config
        self.cache = cache
        self.denied = 0  # refused checks, for the metrics

    @property
    def enabled(self) -> bool:
        return self.config is not None and self.cache is not None

    def allowed(self, session: Session, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        if self.config is None or self.cache is None:
            return True
        ok = decide(self.cache.bindings, self.config, session.principal, session.client_host.lstrip("/"),
                    operation, resource_type, name)
        if not ok:
            self.denied += 1
        return ok

    def authorized_operations(self, req: DecodedRequest, resource_type: ResourceType, name: str) -> set[int]:
        """The operations the session may do on the resource, for the bit field (all of
        them without an authoriser, as Kafka)."""
        ops = SUPPORTED_OPERATIONS[resource_type]
        if self.enabled:
            ops = tuple(op for op in ops if self._quietly_allowed(req.session, op, resource_type, name))
        return {int(op) for op in ops}

    def _quietly_allowed(self, session: Session, op: AclOperation, resource_type: ResourceType, name: str) -> bool:
        assert self.config is not None and self.cache is not None
        return decide(self.cache.bindings, self.config, session.principal, session.client_host.lstrip("/"), op,
                      resource_type, name)

    def may_write_idempotently(self, req: DecodedRequest) -> bool:
        """InitProducerId without a transactional id (Kafka 2.8+, KIP-679): IdempotentWrite
        on the cluster, or Write allowed on some topic."""
        if not self.enabled or self.cluster_allowed(req, AclOperation.IDEMPOTENT_WRITE):
            return True
        assert self.cache is not None
        session = req.session
        candidates = {b.pattern.name for b in self.cache.bindings
                      if b.pattern.type == ResourceType.TOPIC and b.entry.permission == PermissionType.ALLOW
                      and b.entry.operation in (AclOperation.WRITE, AclOperation.ALL)
                      and b.entry.principal in (session.principal, WILDCARD_PRINCIPAL)}
        return any(self.allowed(session, AclOperation.WRITE, ResourceType.TOPIC, name) for name in candidates)

    # the request's session is looked at only when an authoriser is on
    def cluster_allowed(self, req: DecodedRequest, operation: AclOperation) -> bool:
        return not self.enabled or self.allowed(req.session, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def topic_allowed(self, req: DecodedRequest, operation: AclOperation, topic: str) -> bool:
        return not self.enabled or self.allowed(req.session, operation, ResourceType.TOPIC, topic)

    def group_allowed(self, req: DecodedRequest, operation: AclOperation, group: str) -> bool:
        return not self.enabled or self.allowed(req.session, operation, ResourceType.GROUP, group)

    def transactional_id_allowed(self, req: DecodedRequest, operation: AclOperation, transactional_id: str) -> bool:
        return not self.enabled or self.allowed(req.session, operation, ResourceType.TRANSACTIONAL_ID, transactional_id)
