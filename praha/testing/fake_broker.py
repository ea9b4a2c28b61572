"""A broker without processes, ZooKeeper or disks, for tests of the request handlers'
decisions: the parts a handler reaches for before it answers are plain stand-ins, and
anything else it touches fails loudly (naming the attribute), so a test shows exactly
what a handler needs.

Used by the per-route authorisation tests: every API, answered for a principal with no
ACLs, must refuse with the error its route declares, and touch nothing else.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from praha.config import BrokerConfig
from praha.errors import ErrorCode, PrahaError
from praha.protocol.messages.reflect import fields_of, struct_class
from praha.protocol.registry import request_class

_PLAIN: dict[str, Any] = {"bool": True, "string": "t", "uuid": uuid.UUID(int=7), "float64": 1.0, "bytes": b"",
                          "records": None}


def sample_request(api_key: int, version: int) -> Any:
    """A request of `api_key` at `version` with every field set: "t" for strings (topic,
    group and transactional id names alike), small numbers, one entry in every array of
    structs and two in plain arrays. Enough to drive a handler down its main path."""
    cls = request_class(api_key)
    return cls(**_sample_fields(cls, cls, fields_of(cls), version))


def _sample_fields(top: Any, cls: Any, fields: list[Any], version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if version not in f.versions:
            continue
        if f.is_struct:
            sub = struct_class(cls, f, top)
            item = sub(**_sample_fields(top, sub, f.fields, version))
            out[f.name] = [item] if f.is_array else item
        elif f.is_array:
            out[f.name] = [_PLAIN.get(f.element, 3), _PLAIN.get(f.element, 4)]
        else:
            out[f.name] = _PLAIN.get(f.type, 2)
    return out


class Untouchable:
    """A part of the broker a refused request must not reach."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        raise AssertionError(f"the handler reached {self._name}.{attr} before refusing")


@dataclass
class FakeMetadataCache:
    """Knows the topics given (one partition each, led by broker 1) and no live brokers."""

    topic_names: tuple[str, ...] = ()
    controller_id: int = 1
    topic_ids: dict[str, Any] = field(default_factory=dict)

    @property
    def names_by_id(self) -> dict[Any, str]:
        return {tid: name for name, tid in self.topic_ids.items()}

    def topics(self) -> list[str]:
        return sorted(self.topic_names)

    def contains_topic(self, topic: str) -> bool:
        return topic in self.topic_names

    def topic_partitions(self, topic: str) -> dict[int, Any]:
        return {}

    def partition(self, tp: Any) -> None:
        return None

    def endpoints_on(self, listener: str) -> list[Any]:
        return []

    def is_alive(self, broker_id: int) -> bool:
        return False


class _NoQuota:
    overrides: dict[Any, Any] = {}


class NoQuotas:
    """Client quotas with none set (what a broker has until an admin sets one)."""

    def __init__(self) -> None:
        self.produce = _NoQuota()
        self.fetch = _NoQuota()
        self.request = _NoQuota()


class NoShareGroups:
    """A group coordinator holding no share group (ListGroups lists none)."""

    def listed(self, states: Any, types: Any) -> list[Any]:
        return []


class FakeBroker:
    """The `praha.broker.handlers.broker_api.Broker` the handlers see, with `authz` as given."""

    def __init__(self, authz: Any, topics: tuple[str, ...] = (), **parts: Any):
        """`parts` replace the untouchable ones by name (e.g. a coordinator stand-in)."""
        self.broker_id = 1
        self.cluster_id = "fake-cluster"
        self.config = BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:1/fake")
        self.authz = authz
        # the sample requests name a topic "t" or by the sample id
        self.metadata_cache = FakeMetadataCache(topics, topic_ids={t: _PLAIN["uuid"] for t in topics})
        self.store = None
        self.broker_info = None
        self.controller = None
        self.client_quotas = NoQuotas()
        self.share_groups = parts.pop("share_groups", NoShareGroups())
        for part in ("fence", "replica_manager", "state_log", "group_coordinator", "txn_coordinator", "share_sessions",
                     "share_manager"):
            setattr(self, part, parts.pop(part, Untouchable(part)))
        if parts:
            raise TypeError(f"no such broker part: {', '.join(parts)}")

    async def load_topic_ids(self) -> None:
        """The fake knows every id it will ever know."""

    def zk_store(self) -> Any:
        raise PrahaError("the fake broker has no ZooKeeper", ErrorCode.UNKNOWN_SERVER_ERROR)

    async def replica_manager_call(self, fn: Any) -> Any:
        raise AssertionError("the handler reached the replica manager before refusing")

    def on_metadata_update(self, data: Any, deleted: Any) -> None:
        raise AssertionError("the handler applied metadata before refusing")

    def broker_figures(self) -> list[tuple[str, float, str]]:
        return []

    async def controller_seat(self) -> tuple[int, int] | None:
        return None

    async def registered_brokers(self, broker_ids: list[int]) -> dict[int, Any]:
        return {}


__all__ = ["FakeBroker", "FakeMetadataCache", "NoQuotas", "Untouchable", "sample_request"]
