"""Kafka's controller-to-broker APIs, as praha sends and answers them.

The classes are the generated ones (`praha.protocol.messages.gen.controller`, from
`messages/controller.wire`); this module names the versions praha speaks. Field names are the
snake_case of Kafka's, e.g. `LeaderAndIsrRequest.topic_states[i].partition_states[j].partition_epoch`.
"""
from __future__ import annotations

from praha.protocol.messages.gen.controller import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)

#: The version praha sends and answers for each controller API (Kafka 2.4-3.x's ZK mode).
LEADER_AND_ISR_VERSION = 4
STOP_REPLICA_VERSION = 3
UPDATE_METADATA_VERSION = 6
CONTROLLED_SHUTDOWN_VERSION = 3

#: UpdateMetadata endpoints carry the security protocol as Kafka's numeric id.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
SECURITY_PROTOCOL_NAMES = {v: k for k, v in SECURITY_PROTOCOL_IDS.items()}


__all__ = [
    "LeaderAndIsrRequest", "LeaderAndIsrResponse",
    "StopReplicaRequest", "StopReplicaResponse",
    "UpdateMetadataRequest", "UpdateMetadataResponse",
    "ControlledShutdownRequest", "ControlledShutdownResponse",
    "LEADER_AND_ISR_VERSION", "STOP_REPLICA_VERSION", "UPDATE_METADATA_VERSION",
    "CONTROLLED_SHUTDOWN_VERSION", "SECURITY_PROTOCOL_IDS", "SECURITY_PROTOCOL_NAMES",
]
