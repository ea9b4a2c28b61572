"""The workload principals of a secure campaign (`praha chaos --secure`) and what each may do.

GRANTS declares every principal and its ACLs; the campaign creates each user (SCRAM-SHA-512,
a random password) and its ACLs before any client starts. The harness's own checks
(observers, the admin worker, the fence probes) connect as the cluster's admin, a super user;
the final reads that judge the records connect as the reader, like the consumers they check.
"""
from __future__ import annotations

from enum import Enum

from praha.cluster.secure import ADMIN_USER, Grant


class Role(Enum):
    """Who a client is: the value is its user name on a secure cluster."""
    ADMIN = ADMIN_USER  # the harness's checks (the cluster's super user)
    PRODUCER = "chaos-producer"  # idempotent and transactional producers
    READER = "chaos-reader"  # consumers of both isolation levels, the consumer group, the final reads
    TRANSFORMER = "chaos-transformer"  # the consume-transform-produce stage


#: every topic, group and transactional id of a campaign starts with this
PREFIX = "chaos-"
_READ_TOPICS = Grant("Topic", PREFIX, ("Read", "Describe"))
_GROUPS = Grant("Group", PREFIX, ("Read", "Describe"))
_WRITE_TOPICS = Grant("Topic", PREFIX, ("Write", "Describe"))
_TXN_IDS = Grant("TransactionalId", PREFIX, ("Write", "Describe"))
_IDEMPOTENT = Grant("Cluster", "kafka-cluster", ("IdempotentWrite",), prefixed=False)

#: what each workload principal may do (the admin is a super user and needs no ACL)
GRANTS: dict[Role, tuple[Grant, ...]] = {
    Role.PRODUCER: (_WRITE_TOPICS, _TXN_IDS, _IDEMPOTENT),
    Role.READER: (_READ_TOPICS, _GROUPS),
    Role.TRANSFORMER: (_READ_TOPICS, _GROUPS, _WRITE_TOPICS, _TXN_IDS, _IDEMPOTENT),
}
