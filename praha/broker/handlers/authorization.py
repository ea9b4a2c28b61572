"""Which requests a session may make: the ACL decision (`praha.security.acl.decide`) over
the broker's ACL cache.

What each API needs is declared once, in its route (`praha.broker.handlers.routes.ROUTES`,
`Route.acls`: operation, resource type, where the names come from); a unit test fails
for a route without checks and runs every API refused against a fake broker. Handlers
ask `allowed(session, operation, resource type, name)` per resource and answer Kafka's
error for each refused one (TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
so a request naming several resources is answered for each (Kafka's partial answers);
Metadata hides the topics a principal may not describe. With no authoriser configured
every request is allowed.
"""
from __future__ import annotations

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

#: the operations each resource type has (Kafka's AclEntry.supportedOperations), whose
#: allowed subset the authorised-operations fields report as a bit field (1 << operation)
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    T: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    G: (Op.READ, Op.DESCRIBE, Op.DELETE),
    C: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE, Op.ALTER,
        Op.DESCRIBE),
    X: (Op.DESCRIBE, Op.WRITE),
}
#: an authorised-operations field that was not asked for: Kafka's -2147483648 (bit 31 alone)
NOT_REQUESTED = -2147483648


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

    def authorized_operations(self, req: DecodedRequest, resource_type: ResourceType, name: str) -> int:
        """The operations the session may do on the resource, as the wire's 32-bit field
        (bit n: AclOperation n; all of them without an authoriser, as Kafka)."""
        ops = SUPPORTED_OPERATIONS[resource_type]
        if self.enabled:
            ops = tuple(op for op in ops if self._quietly_allowed(req.session, op, resource_type, name))
        bits = 0
        for op in ops:
            bits |= 1 << int(op)
        return bits - (1 << 32) if bits >= 1 << 31 else bits

    def _quietly_allowed(self, session: Session, op: AclOperation, resource_type: ResourceType, name: str) -> bool:
        assert self.config is not None
        assert self.cache is not None
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
