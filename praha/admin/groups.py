"""A blocking consumer-group admin client over the Kafka wire protocol (what Kafka's
`Admin` does for kafka-consumer-groups), used by `praha groups`.

Each request goes where Kafka's admin sends it: group requests to the group's coordinator
(found with FindCoordinator, key type 0; v4 looks several groups up at once), ListGroups to
every broker (each lists the groups it coordinates; the answers are merged), ListOffsets to
each partition's leader (from Metadata). Versions are the highest both sides speak, from
each broker's ApiVersions. A group request answered COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR (or a broken connection) is retried after
looking the coordinator up again, a bounded number of times; then a
`CoordinatorUnavailableError` says what went wrong last. Other Kafka errors become
`GroupAdminError`s carrying Kafka's code and message.
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from praha.admin.group_plans import CONSUMER_PROTOCOL_TYPE, MemberInfo, decode_assignment
from praha.common import TopicPartition
from praha.errors import ErrorCode, PrahaError, UnknownTopicError
from praha.protocol.api_keys import ApiKey
from praha.protocol.client import BrokerConnection
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.protocol.errors import BrokerConnectionError
from praha.protocol.messages.gen.groups import (
    ConsumerGroupDescribeRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from praha.protocol.messages.gen.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
from praha.protocol.messages.gen.produce_fetch import ListOffsetsRequest
from praha.protocol.registry import APIS

T = TypeVar("T")

#: the versions this client speaks (the broker's ranges narrow them further)
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.FIND_COORDINATOR: (0, 4),
    ApiKey.LIST_GROUPS: (0, 5),  # v5: the group type (KIP-848)
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),  # KIP-848 groups
    ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),  # KIP-932 share groups (praha.admin.share_groups)
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),  # v1: the lag
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.OFFSET_FETCH: (0, 8),
    ApiKey.OFFSET_COMMIT: (0, 8),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (0, 12),
    # `praha transactions` (praha.admin.transactions) shares this client's plumbing
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 1),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.WRITE_TXN_MARKERS: (1, 1),
    # Kafka's tools by name (praha.admin.cluster_admin) share it too
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    # and the console's topic list (praha.console.cluster_client)
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
}
#: answers after which Kafka's admin finds the coordinator again and retries
COORDINATOR_RETRIABLE = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                   ErrorCode.NOT_COORDINATOR})
#: ListOffsets answers after which the partition's leader is looked up again
LEADER_RETRIABLE = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                              ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.UNKNOWN_LEADER_EPOCH,
                              ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.REQUEST_TIMED_OUT,
                              ErrorCode.OFFSET_NOT_AVAILABLE})  # a new leader whose high watermark lags
EARLIEST_TIMESTAMP, LATEST_TIMESTAMP = -2, -1

#: Kafka's own messages (`org.apache.kafka.common.protocol.Errors`) for the codes a user meets here
KAFKA_MESSAGES: dict[int, str] = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.LEADER_NOT_AVAILABLE: "There is no leader for this topic-partition as we are in the middle of a "
                                    "leadership election.",
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "For requests intended only for the leader, this error indicates that the "
                                      "broker is not the current leader.",
    ErrorCode.REQUEST_TIMED_OUT: "The request timed out.",
    ErrorCode.OFFSET_METADATA_TOO_LARGE: "The metadata field of the offset request was too large.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.ILLEGAL_GENERATION: "Specified group generation id is not valid.",
    ErrorCode.INVALID_GROUP_ID: "The configured groupId is invalid.",
    ErrorCode.UNKNOWN_MEMBER_ID: "The coordinator is not aware of this member.",
    ErrorCode.REBALANCE_IN_PROGRESS: "The group is rebalancing, so a rejoin is needed.",
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE: "The committing offset data size is not valid.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.UNSUPPORTED_VERSION: "The version of API is not supported.",
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group id does not exist.",
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: "The consumer group is actively subscribed to the topic",
}


def error_message(code: int) -> str:
    """Kafka's message for an error code (its name for codes without one here)."""
    if code in KAFKA_MESSAGES:
        return KAFKA_MESSAGES[code]
    try:
        return f"{ErrorCode(code).name} (error code {code})"
    except ValueError:  # a code this praha does not know is still reported
        return f"error code {code}"


# ----------------------------------------------------------------------------- errors
class GroupAdminError(PrahaError):
    """A group request failed with a Kafka error (`code`) or could not be made."""


class CoordinatorUnavailableError(GroupAdminError):
    code = ErrorCode.COORDINATOR_NOT_AVAILABLE


class GroupNotFoundError(GroupAdminError):
    code = ErrorCode.GROUP_ID_NOT_FOUND


class GroupNotEmptyError(GroupAdminError):
    code = ErrorCode.NON_EMPTY_GROUP


class InvalidGroupIdError(GroupAdminError):
    code = ErrorCode.INVALID_GROUP_ID


class GroupApiUnsupportedError(GroupAdminError):
    """A broker serves no version of an API this client needs (no group coordinator)."""

    code = ErrorCode.UNSUPPORTED_VERSION


_ERROR_CLASSES: dict[int, type[GroupAdminError]] = {
    ErrorCode.GROUP_ID_NOT_FOUND: GroupNotFoundError,
    ErrorCode.NON_EMPTY_GROUP: GroupNotEmptyError,
    ErrorCode.INVALID_GROUP_ID: InvalidGroupIdError,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: CoordinatorUnavailableError,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: CoordinatorUnavailableError,
    ErrorCode.NOT_COORDINATOR: CoordinatorUnavailableError,
}


def group_error(code: int, message: str) -> GroupAdminError:
    """The GroupAdminError subclass for a Kafka error code, with `code` set."""
    cls = _ERROR_CLASSES.get(code, GroupAdminError)
    try:
        known: ErrorCode | None = ErrorCode(code)
    except ValueError:
        known = None
    return cls(message, code=known)


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True, order=True)
class Node:
    id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (id: {self.id})"


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None  # None when the broker answered ListGroups below v4
    #: "classic" or "consumer" (KIP-848); None when the broker answered ListGroups below v5
    group_type: str | None = None

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type in (CONSUMER_PROTOCOL_TYPE, "")


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    assignment_strategy: str
    members: tuple[MemberInfo, ...]
    coordinator: Node
    #: "classic", or "consumer" for a KIP-848 group (described with ConsumerGroupDescribe)
    group_type: str = "classic"
    #: a KIP-848 group's epoch and target assignment epoch; None for a classic group
    group_epoch: int | None = None
    assignment_epoch: int | None = None

    @property
    def exists(self) -> bool:
        return self.state != "Dead"


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str


@dataclass
class ClusterView:
    """What Metadata said: live brokers and, per asked topic, each partition's leader."""

    brokers: dict[int, Node] = field(default_factory=dict)
    leaders: dict[str, dict[int, int]] = field(default_factory=dict)
    internal: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)

    def partitions(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self.leaders.get(topic, {}))]


# ----------------------------------------------------------------------------- the client
class GroupAdmin:
    """Consumer-group operations against a cluster; `bootstrap` is `host:port[,host:port]`.

    Blocking, one request in flight per broker connection. Use as a context manager (or
    call `close`) so the connections are closed."""

    def __init__(self, bootstrap: str | Sequence[str], timeout: float = 10.0, retries: int = 10,
                 backoff: float = 0.2, client_id: str = "praha-groups",
                 sleep: Callable[[float], None] = time.sleep, security: ClientSecurity = PLAINTEXT):
        items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
        self.bootstrap = [_parse_address(i.strip()) for i in items if i.strip()]
        if not self.bootstrap:
            raise GroupAdminError("no bootstrap server given")
        self.timeout = timeout
        self.retries = max(1, retries)
        self.backoff = backoff
        self.client_id = client_id
        self._sleep = sleep
        self.security = security
        self._connections: dict[tuple[str, int], BrokerConnection] = {}
        self._versions: dict[tuple[str, int], dict[int, tuple[int, int]]] = {}

    def __enter__(self) -> GroupAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    # -- wire plumbing --------------------------------------------------------------------
    def _connection(self, host: str, port: int) -> BrokerConnection:
        key = (host, port)
        conn = self._connections.get(key)
        if conn is None:
            conn = BrokerConnection(host, port, timeout=self.timeout, client_id=self.client_id, security=self.security)
            self._connections[key] = conn
        return conn

    def _api_versions(self, host: str, port: int) -> dict[int, tuple[int, int]]:
        key = (host, port)
        if key not in self._versions:
            conn = self._connection(host, port)
            version = 3
            for _ in range(2):
                resp = conn.send(ApiVersionsRequest(client_software_name="praha",
                                                    client_software_version="0.1.0"), version)
                ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
                if resp.error_code == ErrorCode.UNSUPPORTED_VERSION and ApiKey.API_VERSIONS in ranges:
                    version = min(version, ranges[ApiKey.API_VERSIONS][1])
                    continue
                if resp.error_code != ErrorCode.NONE:
                    raise group_error(resp.error_code, f"ApiVersions to {host}:{port} failed: "
                                                       f"{error_message(resp.error_code)}")
                self._versions[key] = ranges
                break
            else:
                raise GroupAdminError(f"{host}:{port} refused every ApiVersions version")
        return self._versions[key]

    def version_for(self, host: str, port: int, api_key: int) -> int:
        """The highest version of `api_key` both this client and the broker speak."""
        spec = APIS[api_key]
        lo, hi = CLIENT_VERSIONS[api_key]
        lo, hi = max(lo, spec.min_version), min(hi, spec.max_version)
        theirs = self._api_versions(host, port).get(api_key)
        if theirs is None or max(lo, theirs[0]) > min(hi, theirs[1]):
            served = "no version" if theirs is None else f"versions {theirs[0]}-{theirs[1]}"
            raise GroupApiUnsupportedError(
                f"the broker at {host}:{port} serves {served} of {spec.name} (praha groups speaks {lo}-{hi})"
                + ("; consumer groups need brokers with the group coordinator" if theirs is None else ""))
        return min(hi, theirs[1])

    def _send(self, host: str, port: int, api_key: int, build: Callable[[int], Any]) -> Any:
        version = self.version_for(host, port, api_key)
        return self._connection(host, port).send(build(version), version)

    def _forget(self, host: str, port: int) -> None:
        conn = self._connections.pop((host, port), None)
        if conn is not None:
            conn.close()
        self._versions.pop((host, port), None)

    def _any_broker(self, call: Callable[[str, int], T]) -> T:
        """`call` on the first bootstrap broker that answers."""
        last: Exception | None = None
        for attempt in range(self.retries):
            for host, port in self.bootstrap:
                try:
                    return call(host, port)
                except BrokerConnectionError as e:
                    self._forget(host, port)
                    last = e
            self._pause(attempt)
        raise GroupAdminError(f"no broker answered (bootstrap {_addresses(self.bootstrap)}): {last}",
                              code=ErrorCode.NETWORK_EXCEPTION)

    def _pause(self, attempt: int) -> None:
        self._sleep(min(self.backoff * (2 ** min(attempt, 4)), 2.0))

    # -- metadata ----------------------------------------------------------------------------
    def cluster(self, topics: Iterable[str] | None = ()) -> ClusterView:
        """Live brokers and the leaders of `topics` (None: every topic)."""
        wanted = None if topics is None else list(dict.fromkeys(topics))

        def build(v: int) -> Any:
            req_topics = None if wanted is None else [
                MetadataRequest.MetadataRequestTopic(name=t, topic_id=None) for t in wanted]
            if wanted is None and v == 0:
                req_topics = []  # v0 has no "all topics" null; [] means all there
            return MetadataRequest(topics=req_topics, allow_auto_topic_creation=False,
                                   include_cluster_authorized_operations=False,
                                   include_topic_authorized_operations=False)

        md = self._any_broker(lambda h, p: self._send(h, p, ApiKey.METADATA, build))
        view = ClusterView(brokers={b.node_id: Node(b.node_id, b.host, b.port) for b in md.brokers})
        for t in md.topics:
            if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                view.missing.add(t.name)
                continue
            view.leaders[t.name] = {p.partition_index: p.leader_id for p in t.partitions}
            if getattr(t, "is_internal", False):
                view.internal.add(t.name)
        return view

    def topic_partitions(self, topics: Iterable[str]) -> list[TopicPartition]:
        """Every partition of `topics`; an unknown topic raises UnknownTopicError."""
        names = list(dict.fromkeys(topics))
        if not names:
            return []
        view = self.cluster(names)
        for t in names:
            if t in view.missing or t not in view.leaders:
                raise UnknownTopicError(f"Topic '{t}' does not exist.")
        return [tp for t in names for tp in view.partitions(t)]

    # -- coordinators ------------------------------------------------------------------------
    def find_coordinators(self, groups: Sequence[str], key_type: int = 0) -> dict[str, tuple[int, Node | None]]:
        """{group (or, key type 1, transactional id): (error code, coordinator)} from one
        broker (batched with FindCoordinator v4)."""

        def ask(host: str, port: int) -> dict[str, tuple[int, Node | None]]:
            version = self.version_for(host, port, ApiKey.FIND_COORDINATOR)
            conn = self._connection(host, port)
            out: dict[str, tuple[int, Node | None]] = {}
            if version >= 4:
                resp = conn.send(FindCoordinatorRequest(key_type=key_type, coordinator_keys=list(groups)), version)
                for c in resp.coordinators:
                    out[c.key] = (c.error_code, Node(c.node_id, c.host, c.port) if c.error_code == 0 else None)
                return out
            for g in groups:
                resp = conn.send(FindCoordinatorRequest(key=g, key_type=key_type), version)
                out[g] = (resp.error_code, Node(resp.node_id, resp.host, resp.port) if resp.error_code == 0 else None)
            return out

        return self._any_broker(ask)

    def find_coordinator(self, group: str) -> Node:
        """The coordinator of `group` (retried while the cluster has none to offer)."""
        return self._per_group([group], lambda node, gs: {g: (ErrorCode.NONE, node) for g in gs})[group]

    def _per_group(self, groups: Sequence[str],
                   send: Callable[[Node, list[str]], Mapping[str, tuple[int, T]]], key_type: int = 0) -> dict[str, T]:
        """Run `send(coordinator, its groups)` for each coordinator; groups whose lookup or
        answer is retriable (or whose coordinator did not answer) are looked up again and
        retried, at most `retries` times. A non-retriable error code raises."""
        pending = list(dict.fromkeys(groups))
        done: dict[str, T] = {}
        last: dict[str, str] = {}
        for attempt in range(self.retries):
            if not pending:
                break
            if attempt:
                self._pause(attempt - 1)
            located = self.find_coordinators(pending, key_type)
            retry: list[str] = []
            by_node: dict[Node, list[str]] = defaultdict(list)
            for g in pending:
                code, node = located.get(g, (ErrorCode.COORDINATOR_NOT_AVAILABLE, None))
                if code in COORDINATOR_RETRIABLE or (code == ErrorCode.NONE and node is None):
                    retry.append(g)
                    last[g] = f"FindCoordinator: {error_message(code)}"
                elif code != ErrorCode.NONE:
                    raise group_error(code, f"cannot find the coordinator of group '{g}': {error_message(code)}")
                else:
                    assert node is not None
                    by_node[node].append(g)
            for node, gs in sorted(by_node.items()):
                try:
                    answers = send(node, gs)
                except BrokerConnectionError as e:
                    self._forget(node.host, node.port)
                    retry.extend(gs)
                    last.update({g: f"coordinator {node}: {e}" for g in gs})
                    continue
                for g in gs:
                    if g not in answers:
                        raise GroupAdminError(f"coordinator {node} did not answer for group '{g}'")
                    code, value = answers[g]
                    if code in COORDINATOR_RETRIABLE:
                        retry.append(g)
                        last[g] = f"coordinator {node}: {error_message(code)}"
                    elif code != ErrorCode.NONE:
                        raise group_error(code, f"group '{g}': {error_message(code)}")
                    else:
                        done[g] = value
            pending = retry
        if pending:
            g = pending[0]
            raise CoordinatorUnavailableError(
                f"the coordinator of group '{g}' did not answer after {self.retries} attempts: {last.get(g)}")
        return done

    # -- groups ------------------------------------------------------------------------------
    def list_groups(self, states: Sequence[str] = (), types: Sequence[str] = ()) -> list[GroupListing]:
        """Every consumer group (protocol type `consumer` or empty) on every broker, sorted;
        `states` filters on the brokers (ListGroups v4+), `types` too (v5+: classic, consumer);
        refused below, as Kafka's admin."""
        brokers = self.cluster(()).brokers
        found: dict[str, GroupListing] = {}
        for node in sorted(brokers.values()):
            for g in self._list_on(node, states, types):
                if g.is_consumer_group:
                    found.setdefault(g.group_id, g)
        return [found[g] for g in sorted(found)]

    def _list_on(self, node: Node, states: Sequence[str], types: Sequence[str] = ()) -> list[GroupListing]:
        versions: list[int] = []

        def build(version: int) -> Any:
            if states and version < 4:  # Kafka's admin refuses rather than list unfiltered
                raise GroupApiUnsupportedError(
                    f"The broker only supports ListGroups v{version}, but we need v4 or newer to request groups "
                    "by states.")
            if types and version < 5:
                raise GroupApiUnsupportedError(
                    f"The broker only supports ListGroups v{version}, but we need v5 or newer to request groups "
                    "by type.")
            versions.append(version)
            return ListGroupsRequest(states_filter=list(states) if version >= 4 else [],
                                     types_filter=list(types) if version >= 5 else [])

        resp = self.listing_on(node, ApiKey.LIST_GROUPS, build, "list its groups")
        typed = bool(versions) and versions[-1] >= 5
        return [GroupListing(g.group_id, g.protocol_type, getattr(g, "group_state", None) or None,
                             (g.group_type or None) if typed else None)
                for g in resp.groups]

    def listing_on(self, node: Node, api_key: int, build: Callable[[int], Any], what: str) -> Any:
        """A broker's answer to a listing request (ListGroups, ListTransactions), asked again
        while it is loading or the connection breaks, at most `retries` times."""
        last = ""
        for attempt in range(self.retries):
            if attempt:
                self._pause(attempt - 1)
            try:
                resp = self._send(node.host, node.port, api_key, build)
            except BrokerConnectionError as e:
                self._forget(node.host, node.port)
                last = str(e)
                continue
            if resp.error_code in COORDINATOR_RETRIABLE:
                last = error_message(resp.error_code)
                continue
            if resp.error_code != ErrorCode.NONE:
                raise group_error(resp.error_code, f"{APIS[api_key].name} on broker {node}: "
                                                   f"{error_message(resp.error_code)}")
            return resp
        raise CoordinatorUnavailableError(f"broker {node} did not {what} after {self.retries} attempts: {last}")

    def describe_groups(self, group_ids: Sequence[str]) -> dict[str, GroupDescription]:
        """State, assignor, members (with decoded assignments) and coordinator of each group.
        A group that does not exist comes back in state Dead, as Kafka answers."""

        def send(node: Node, gs: list[str]) -> dict[str, tuple[int, GroupDescription]]:
            resp = self._send(node.host, node.port, ApiKey.DESCRIBE_GROUPS,
                              lambda v: DescribeGroupsRequest(groups=gs, include_authorized_operations=False))
            out: dict[str, tuple[int, GroupDescription]] = {}
            for d in resp.groups:
                if d.error_code == ErrorCode.GROUP_ID_NOT_FOUND:  # v6 style; Dead below
                    out[d.group_id] = (ErrorCode.NONE, GroupDescription(d.group_id, "Dead", "", "", (), node))
                    continue
                consumer = d.protocol_type == CONSUMER_PROTOCOL_TYPE
                members = tuple(MemberInfo(
                    member_id=m.member_id, client_id=m.client_id, host=m.client_host,
                    group_instance_id=getattr(m, "group_instance_id", None),
                    assignment=tuple(decode_assignment(m.member_assignment)) if consumer else ()) for m in d.members)
                out[d.group_id] = (d.error_code, GroupDescription(d.group_id, d.group_state, d.protocol_type,
                                                                  d.protocol_data, members, node))
            return out

        return self._per_group(group_ids, send)

    def describe_consumer_groups(self, group_ids: Sequence[str]) -> dict[str, GroupDescription]:
        """KIP-848 groups (ConsumerGroupDescribe): state, server assignor and members with their
        current assignments. A group that is not a consumer-protocol group comes back Dead, as
        a classic group is described by `describe_groups`."""

        def send(node: Node, gs: list[str]) -> dict[str, tuple[int, GroupDescription]]:
            resp = self._send(node.host, node.port, ApiKey.CONSUMER_GROUP_DESCRIBE,
                              lambda v: ConsumerGroupDescribeRequest(group_ids=gs))
            out: dict[str, tuple[int, GroupDescription]] = {}
            for d in resp.groups:
                if d.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
                    out[d.group_id] = (ErrorCode.NONE, GroupDescription(d.group_id, "Dead", "", "", (), node))
                    continue
                members = tuple(MemberInfo(
                    member_id=m.member_id, client_id=m.client_id, host=m.client_host, group_instance_id=m.instance_id,
                    assignment=_partitions(m.assignment), member_epoch=m.member_epoch,
                    target=_partitions(m.target_assignment)) for m in d.members)
                out[d.group_id] = (d.error_code, GroupDescription(d.group_id, d.group_state, CONSUMER_PROTOCOL_TYPE,
                                                                  d.assignor_name, members, node, "consumer",
                                                                  d.group_epoch, d.assignment_epoch))
            return out

        return self._per_group(group_ids, send)

    def describe_groups_of_any_type(self, group_ids: Sequence[str]) -> dict[str, GroupDescription]:
        """`describe_groups`, and ConsumerGroupDescribe for the ones it reports Dead: a KIP-848
        group is not described by DescribeGroups (Kafka 4 answers GROUP_ID_NOT_FOUND)."""
        described = self.describe_groups(group_ids)
        dead = [g for g, d in described.items() if not d.exists]
        if dead:
            try:
                modern = self.describe_consumer_groups(dead)
            except GroupApiUnsupportedError:  # a broker without KIP-848: they are Dead indeed
                modern = {}
            described.update({g: d for g, d in modern.items() if d.exists})
        return described

    def committed_offsets(
        self, group: str, topics: Iterable[str] | None = None
    ) -> dict[TopicPartition, CommittedOffset]:
        """The group's committed offsets (of `topics` only, if given)."""
        return self.committed_offsets_of([group], topics)[group]

    def committed_offsets_of(self, groups: Sequence[str], topics: Iterable[str] | None = None
                             ) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        """Committed offsets of several groups: one OffsetFetch v8 per coordinator, one per
        group below v8."""
        wanted = None if topics is None else list(dict.fromkeys(topics))
        want_tps: list[TopicPartition] | None = None if wanted is None else self.topic_partitions(wanted)

        def by_topic(cls: Any) -> list[Any] | None:
            if want_tps is None:
                return None
            parts: dict[str, list[int]] = defaultdict(list)
            for tp in want_tps:
                parts[tp.topic].append(tp.partition)
            return [cls(name=t, partition_indexes=ps) for t, ps in parts.items()]

        def collect(topic_list: Iterable[Any]) -> dict[TopicPartition, CommittedOffset]:
            out: dict[TopicPartition, CommittedOffset] = {}
            for t in topic_list:
                for p in t.partitions:
                    if p.error_code == ErrorCode.NONE and p.committed_offset >= 0:
                        out[TopicPartition(t.name, p.partition_index)] = CommittedOffset(
                            p.committed_offset, getattr(p, "committed_leader_epoch", -1), p.metadata or "")
            return out

        def send(node: Node, gs: list[str]) -> dict[str, tuple[int, dict[TopicPartition, CommittedOffset]]]:
            version = self.version_for(node.host, node.port, ApiKey.OFFSET_FETCH)
            conn = self._connection(node.host, node.port)
            out: dict[str, tuple[int, dict[TopicPartition, CommittedOffset]]] = {}
            if version >= 8:
                req = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
                    group_id=g, member_id=None, member_epoch=-1,
                    topics=by_topic(OffsetFetchRequest.OffsetFetchRequestGroup.OffsetFetchRequestTopics))
                    for g in gs], require_stable=False)
                resp = conn.send(req, version)
                for grp in resp.groups:
                    out[grp.group_id] = (grp.error_code, collect(grp.topics))
                return out
            for g in gs:
                topics_arg = by_topic(OffsetFetchRequest.OffsetFetchRequestTopic)
                resp = conn.send(OffsetFetchRequest(group_id=g, topics=topics_arg, require_stable=False), version)
                out[g] = (getattr(resp, "error_code", ErrorCode.NONE), collect(resp.topics))
            return out

        return self._per_group(groups, send)

    def alter_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Commit `offsets` for `group` as Kafka's admin does (generation -1, no member id):
        {partition: error code}, all 0 on success. The coordinator refuses while the group
        has members."""
        by_topic: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for tp, off in sorted(offsets.items()):
            by_topic[tp.topic].append((tp.partition, off))

        def send(node: Node, gs: list[str]) -> dict[str, tuple[int, dict[TopicPartition, int]]]:
            req = OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                retention_time_ms=-1,
                topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=[
                    OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                        partition_index=p, committed_offset=o, committed_leader_epoch=-1, commit_timestamp=-1,
                        committed_metadata="") for p, o in ps]) for t, ps in by_topic.items()])
            resp = self._send(node.host, node.port, ApiKey.OFFSET_COMMIT, lambda v: req)
            results = {
                TopicPartition(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions
            }
            retriable = [c for c in results.values() if c in COORDINATOR_RETRIABLE]
            return {group: (retriable[0] if retriable else ErrorCode.NONE, results)}

        return self._per_group([group], send)[group]

    def delete_groups(self, group_ids: Sequence[str]) -> dict[str, int]:
        """DeleteGroups: {group: error code} (0 = deleted; NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND ...)."""

        def send(node: Node, gs: list[str]) -> dict[str, tuple[int, int]]:
            resp = self._send(node.host, node.port, ApiKey.DELETE_GROUPS,
                              lambda v: DeleteGroupsRequest(groups_names=gs))
            out: dict[str, tuple[int, int]] = {}
            for r in resp.results:
                # retriable codes drive the retry; every other outcome is the group's result
                out[r.group_id] = (r.error_code if r.error_code in COORDINATOR_RETRIABLE else ErrorCode.NONE,
                                   r.error_code)
            return out

        return self._per_group(group_ids, send)

    def delete_offsets(self, group: str, partitions: Sequence[TopicPartition]) -> tuple[int, dict[TopicPartition, int]]:
        """OffsetDelete: (the group-level error code, {partition: error code})."""
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in sorted(set(partitions)):
            by_topic[tp.topic].append(tp.partition)

        def send(node: Node, gs: list[str]) -> dict[str, tuple[int, tuple[int, dict[TopicPartition, int]]]]:
            req = OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
                name=t, partitions=[OffsetDeleteRequest.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(
                    partition_index=p) for p in ps]) for t, ps in by_topic.items()])
            resp = self._send(node.host, node.port, ApiKey.OFFSET_DELETE, lambda v: req)
            results = {
                TopicPartition(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions
            }
            top = resp.error_code
            return {group: (top if top in COORDINATOR_RETRIABLE else ErrorCode.NONE, (top, results))}

        return self._per_group([group], send)[group]

    # -- log offsets -------------------------------------------------------------------------
    def earliest_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        """Each partition's log start offset."""
        return self.log_offsets(partitions, EARLIEST_TIMESTAMP)

    def latest_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        """Each partition's log end offset (the high watermark: what a consumer can read)."""
        return self.log_offsets(partitions, LATEST_TIMESTAMP)

    def offsets_for_time(self, partitions: Sequence[TopicPartition], timestamp_ms: int
                         ) -> dict[TopicPartition, int | None]:
        """The first offset at or after `timestamp_ms` (-1 where no record is that recent)."""
        if timestamp_ms < 0:
            raise GroupAdminError(f"a timestamp must not be negative, got {timestamp_ms}",
                                  code=ErrorCode.INVALID_REQUEST)
        return self.log_offsets(partitions, timestamp_ms)

    def log_offsets(self, partitions: Sequence[TopicPartition], timestamp: int) -> dict[TopicPartition, int | None]:
        """ListOffsets from each partition's leader: `timestamp` EARLIEST_TIMESTAMP (-2),
        LATEST_TIMESTAMP (-1, the high watermark) or a time in ms (the first offset at or
        after it; -1 if none). None for a partition whose offset could not be had."""
        pending = sorted(set(partitions))
        out: dict[TopicPartition, int | None] = {}
        for attempt in range(self.retries):
            if not pending:
                break
            if attempt:
                self._pause(attempt - 1)
            view = self.cluster({tp.topic for tp in pending})
            retry: list[TopicPartition] = []
            by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
            for tp in pending:
                leader = view.leaders.get(tp.topic, {}).get(tp.partition)
                if tp.topic in view.missing or (tp.topic in view.leaders and leader is None):
                    out[tp] = None  # no such topic or partition
                elif leader is None or leader < 0 or leader not in view.brokers:
                    retry.append(tp)
                else:
                    by_leader[leader].append(tp)
            for leader, tps in sorted(by_leader.items()):
                node = view.brokers[leader]
                grouped: dict[str, list[int]] = defaultdict(list)
                for tp in tps:
                    grouped[tp.topic].append(tp.partition)
                req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
                    ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=[
                        ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                            partition_index=p, current_leader_epoch=-1, timestamp=timestamp)
                        for p in ps]) for t, ps in grouped.items()])
                try:
                    resp = self._send(node.host, node.port, ApiKey.LIST_OFFSETS, _always(req))
                except BrokerConnectionError:
                    self._forget(node.host, node.port)
                    retry.extend(tps)
                    continue
                answered = set()
                for t in resp.topics:
                    for p in t.partitions:
                        tp = TopicPartition(t.name, p.partition_index)
                        answered.add(tp)
                        if p.error_code == ErrorCode.NONE:
                            out[tp] = p.offset
                        elif p.error_code in LEADER_RETRIABLE:
                            retry.append(tp)
                        else:
                            out[tp] = None
                retry.extend(tp for tp in tps if tp not in answered)
            pending = retry
        for tp in pending:
            out[tp] = None
        return out


def _always(request: Any) -> Callable[[int], Any]:
    """A request builder that ignores the version (the message encodes at any)."""
    return lambda _version: request


def _parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise GroupAdminError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def _addresses(items: Iterable[tuple[str, int]]) -> str:
    return ",".join(f"{h}:{p}" for h, p in items)


__all__ = [
    "GroupAdmin", "GroupListing", "GroupDescription", "CommittedOffset", "ClusterView", "Node",
    "GroupAdminError", "CoordinatorUnavailableError", "GroupNotFoundError", "GroupNotEmptyError",
    "InvalidGroupIdError", "GroupApiUnsupportedError", "group_error", "error_message",
    "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "CLIENT_VERSIONS", "KAFKA_MESSAGES",
]


def _partitions(assignment: Any) -> tuple[TopicPartition, ...]:
    """ConsumerGroupDescribe's Assignment (topic name, partitions) as partitions."""
    return tuple(TopicPartition(t.topic_name, p) for t in assignment.topic_partitions for p in sorted(t.partitions))
