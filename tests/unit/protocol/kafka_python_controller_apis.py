"""Kafka's controller-to-broker APIs declared for kafka-python, from Kafka's JSON (LeaderAndIsr,
StopReplica, UpdateMetadata, ControlledShutdown of Kafka 3.x, in `kafka_python_schemas/`):
an implementation independent of praha's generated codecs, to compare them with."""
from __future__ import annotations

from typing import Any

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "kafka_python_schemas"


def _declare(name: str) -> Any:
    return type(name, (ApiMessage,), {"__module__": __name__}, load_json=_SCHEMAS)


LeaderAndIsrRequest, LeaderAndIsrResponse = _declare("LeaderAndIsrRequest"), _declare("LeaderAndIsrResponse")
StopReplicaRequest, StopReplicaResponse = _declare("StopReplicaRequest"), _declare("StopReplicaResponse")
UpdateMetadataRequest, UpdateMetadataResponse = _declare("UpdateMetadataRequest"), _declare("UpdateMetadataResponse")
ControlledShutdownRequest = _declare("ControlledShutdownRequest")
ControlledShutdownResponse = _declare("ControlledShutdownResponse")
