"""KIP-848's group APIs, which kafka-python does not ship: ConsumerGroupHeartbeat and
ConsumerGroupDescribe (v0-1), declared like `controller_apis` from praha's JSON schemas.
Field names are the snake_case of the JSON names (`request.topic_partitions[i].topic_id`)."""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "praha.protocol.schemas"


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):  # type: ignore[call-arg,misc]  # metaclass keyword; kafka-python is untyped
    @classmethod
    def json_patch(cls, json: dict) -> dict:  # type: ignore[type-arg]
        """The groups' authorized operations as a set of operation codes (kafka-python's bit field)."""
        fields = json["fields"][1]["fields"]
        next(f for f in fields if f["name"] == "AuthorizedOperations")["type"] = "bitfield"
        return json


__all__ = ["ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse",
           "ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse"]
