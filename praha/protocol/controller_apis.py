"""Kafka's controller-to-broker APIs, which kafka-python does not ship.

They are declared exactly like kafka-python's own message classes (the class name picks
the JSON file, here from `praha.protocol.schemas`), so they encode, decode and carry
headers the same way as every client API. Field names are the snake_case of the JSON
names, e.g. `LeaderAndIsrRequest.topic_states[i].partition_states[j].partition_epoch`.
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "praha.protocol.schemas"

#: The version praha sends and answers for each controller API (Kafka 2.4-3.x's ZK mode).
LEADER_AND_ISR_VERSION = 4
STOP_REPLICA_VERSION = 3
UPDATE_METADATA_VERSION = 6
CONTROLLED_SHUTDOWN_VERSION = 3

#: UpdateMetadata endpoints carry the security protocol as Kafka's numeric id.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
SECURITY_PROTOCOL_NAMES = {v: k for k, v in SECURITY_PROTOCOL_IDS.items()}


class LeaderAndIsrRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


class LeaderAndIsrResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


class StopReplicaRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


class StopReplicaResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


class UpdateMetadataRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


class UpdateMetadataResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


class ControlledShutdownRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


class ControlledShutdownResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


__all__ = [
    "LeaderAndIsrRequest", "LeaderAndIsrResponse",
    "StopReplicaRequest", "StopReplicaResponse",
    "UpdateMetadataRequest", "UpdateMetadataResponse",
    "ControlledShutdownRequest", "ControlledShutdownResponse",
    "LEADER_AND_ISR_VERSION", "STOP_REPLICA_VERSION", "UPDATE_METADATA_VERSION",
    "CONTROLLED_SHUTDOWN_VERSION", "SECURITY_PROTOCOL_IDS", "SECURITY_PROTOCOL_NAMES",
]
