"""Kafka's controller-to-broker APIs declared for kafka-python, from Kafka's JSON (LeaderAndIsr,
StopReplica, UpdateMetadata, ControlledShutdown of Kafka 3.x, in `kafka_python_schemas/`):
an implementation independent of praha's generated codecs, to compare them with."""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "kafka_python_schemas"


class LeaderAndIsrRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class LeaderAndIsrResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class StopReplicaRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class StopReplicaResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class UpdateMetadataRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class UpdateMetadataResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ControlledShutdownRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ControlledShutdownResponse(ApiMessage, load_json=_SCHEMAS):
    pass
