"""One root exception for praha, carrying the Kafka error code a client would see.

Every error praha raises on purpose is a `PrahaError`. Subclasses exist where a caller
needs to tell cases apart (a lost controller seat, a corrupt znode, bad input). The
`ErrorCode` enum lists the Kafka wire codes we use, so handlers can answer clients with
exactly the code Kafka would send.
"""
from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """Kafka protocol error codes (the subset praha produces)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    REASSIGNMENT_IN_PROGRESS = 60
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    PRODUCER_FENCED = 90
    UNKNOWN_TOPIC_ID = 100
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_REGULAR_EXPRESSION = 128


class PrahaError(Exception):
    """Root of every error praha raises deliberately."""

    code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str = "", code: ErrorCode | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class ConfigError(PrahaError):
    """A configuration value is missing, unknown or invalid; start-up must stop."""

    code = ErrorCode.INVALID_CONFIG


class InvalidRequestError(PrahaError):
    """Bad input from a client or an operator (malformed frame, bad argument)."""

    code = ErrorCode.INVALID_REQUEST


class ZNodeDecodeError(PrahaError):
    """A znode holds data that is not valid for its kind (garbage, unknown version)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"corrupt znode {path}: {reason}")
        self.path = path
        self.reason = reason


class ControllerMovedError(PrahaError):
    """This broker is not (or no longer) the active controller; its writes are fenced."""

    code = ErrorCode.NOT_CONTROLLER


class BrokerIdInUseError(PrahaError):
    """Another live broker already registered this broker.id."""


class UnknownTopicError(PrahaError):
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class TopicExistsError(PrahaError):
    code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidTopicError(PrahaError):
    code = ErrorCode.INVALID_TOPIC_EXCEPTION


class InvalidPartitionsError(PrahaError):
    code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(PrahaError):
    code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(PrahaError):
    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class TopicAlreadyMarkedForDeletionError(PrahaError):
    """The deletion marker exists already (the DeleteTopics API treats this as success)."""

    code = ErrorCode.INVALID_REQUEST


class ReassignmentInProgressError(PrahaError):
    """A reassignment touches the topic (or, for `execute`, the cluster) right now."""

    code = ErrorCode.REASSIGNMENT_IN_PROGRESS


class ConcurrentModificationError(PrahaError):
    """The znode changed between our read and our conditional write."""

    code = ErrorCode.INVALID_REQUEST


class CorruptLogError(PrahaError):
    code = ErrorCode.CORRUPT_MESSAGE
