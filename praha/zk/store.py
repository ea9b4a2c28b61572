"""`ZkStore`: praha's one door to ZooKeeper, a wrapper over one kazoo client.

Used by the controller's event thread and by the broker (registration, ISR updates).
What it adds over kazoo:
  - typed reads and writes in Kafka's znode formats (see `znodes`);
  - bulk reads: ZooKeeper's multi-read (OpCode 22) when the server has it (3.6+), else
    pipelined async calls in a bounded window — a failover reads every partition state;
  - fenced batched writes: `fenced_multi` groups operations into transactions, each one
    starting with a version check of `/controller_epoch`, so nothing a deposed controller
    writes is ever applied; per-operation outcomes are recovered from kazoo's result lists;
  - Kafka's controller election (`register_controller_and_increment_epoch`) and broker
    registration (czxid = broker epoch);
  - session events as four callbacks, and watches that re-register themselves.

Threading: every method may be called from any thread except kazoo's own: session
listeners and watch callbacks run on kazoo's threads and must only enqueue work (a
blocking call there would stall kazoo's connection loop, and a ZooKeeper call would
deadlock waiting for a response that thread itself must read).

Errors: a corrupt znode → `ZNodeDecodeError`; no connection within the request timeout →
`ZkUnavailableError` (reads are retried across reconnects until then; a write interrupted
by a connection loss has an unknown outcome and is not retried); a fenced write after the
controller epoch moved → `ControllerMovedError`.
"""
from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from kazoo.client import KazooClient, _prefix_root
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import CheckVersion, Create, Delete, SetData
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.security import OPEN_ACL_UNSAFE
from kazoo.retry import KazooRetry

from praha.common import (
    BrokerInfo,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from praha.errors import (
    BrokerIdInUseError,
    ControllerMovedError,
    PrahaError,
    TopicExistsError,
    UnknownTopicError,
    ZNodeDecodeError,
)
from praha.zk import znodes as zn
from praha.zk.multiread import (
    GET_CHILDREN_OPCODE,
    GET_DATA_OPCODE,
    MultiRead,
    server_supports_multi_read,
)
from praha.zk.ops import CreateOp, DeleteOp, SetDataOp, WriteOutcome, WriteResult, ZkOp, outcome_of_error
from praha.zk.watches import WatchCallback, WatchEvent, WatchEventType, WatchHandle, WatchKind

__all__ = [
    "ZkStore", "ZkError", "ZkUnavailableError", "SessionListener", "CreateOp", "SetDataOp", "DeleteOp",
    "ZkOp", "WriteOutcome", "WriteResult", "WatchHandle", "WatchEvent", "WatchEventType", "ZnodeStat",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

_CONNECTION_ERRORS = (ConnectionLoss, SessionExpiredError, ConnectionClosedError, KazooTimeoutError)
_ROLLED_BACK = (RolledBackError, RuntimeInconsistency)


class ZkError(PrahaError):
    """An unexpected ZooKeeper error (not a decode error, not a lost controller seat)."""


class ZkUnavailableError(ZkError):
    """No usable ZooKeeper connection within the request timeout (or the store is stopped)."""


class SessionListener(Protocol):
    """Session events. Called on kazoo's connection thread: implementations only enqueue."""

    def on_suspended(self) -> None: ...          # connection lost; session may still be alive
    def on_reconnected(self) -> None: ...        # connection back, same session (ephemerals intact)
    def on_session_expired(self) -> None: ...    # session LOST: our ephemerals are gone
    def on_new_session(self) -> None: ...        # connected again, with a new session


def _new_cluster_id() -> str:
    """Kafka's form: a random UUID in unpadded URL-safe base64 (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")


def _ancestors_first(paths: Iterable[str]) -> list[str]:
    """Every path with its missing ancestors, parents before children, without repeats."""
    out: dict[str, None] = {}
    for path in paths:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            out.setdefault("/" + "/".join(parts[:i]), None)
    return list(out)


def _decoder_for(path: str) -> Callable[[bytes], Any]:
    """The codec check for a znode path (for `delete_if_unchanged_corrupt`)."""
    parts = path.strip("/").split("/")
    if path == zn.CONTROLLER_PATH:
        return lambda d: zn.decode_controller(d, path)
    if path == zn.CONTROLLER_EPOCH_PATH:
        return lambda d: zn.decode_controller_epoch(d, path)
    if path in (zn.REASSIGN_PARTITIONS_PATH,):
        return lambda d: zn.decode_reassignment(d, path)
    if path == zn.PREFERRED_REPLICA_ELECTION_PATH:
        return lambda d: zn.decode_preferred_election(d, path)
    if path == zn.CLUSTER_ID_PATH:
        return lambda d: zn.decode_cluster_id(d, path)
    if path.startswith(zn.ISR_CHANGE_NOTIFICATION_PATH + "/"):
        return lambda d: zn.decode_isr_change(d, path)
    if path.startswith(zn.CONFIG_TOPICS_PATH + "/"):
        return lambda d: zn.decode_config(d, path)
    if path.startswith(zn.BROKER_IDS_PATH + "/") and parts[-1].isdigit():
        return lambda d: zn.decode_broker(int(parts[-1]), d, path=path)
    if path.startswith(zn.TOPICS_PATH + "/"):
        if len(parts) == 3:
            return lambda d: zn.decode_topic_assignment(d, path)
        if len(parts) == 6 and parts[5] == "state":
            return lambda d: zn.decode_partition_state(d, 0, path)
    raise ValueError(f"no codec known for {path}")


def _is_plain_path(path: str) -> bool:
    """An already normal absolute path ("/a/b"): kazoo's `_prefix_root` would give back
    chroot + path for it, so that is all it needs."""
    return path[:1] == "/" and path[-1:] != "/" and "//" not in path and "/." not in path


def _chrooted(client: KazooClient, path: str) -> str:
    """`_prefix_root(client.chroot, path)`, cheaply for plain paths: kazoo's re-normalises every
    path (at 100k paths it costs as much as decoding the answers), but a path that is already
    a normal absolute one only needs the chroot (kept normalised by kazoo, "" without one) in
    front. Any other path goes through kazoo's own."""
    if _is_plain_path(path):
        return (client.chroot or "") + path
    return _prefix_root(client.chroot, path)


def _multi_read_async(client: KazooClient, operations: list[tuple[int, str]]):
    """`multiread.multi_read_async`, with the cheaper chroot prefix of `_chrooted`."""
    root = client.chroot or ""
    ops = [(op, root + path) if _is_plain_path(path) else (op, _prefix_root(client.chroot, path))
           for op, path in operations]
    async_result = client.handler.async_result()
    client._call(MultiRead(ops), async_result)
    return async_result


# -- fast decoding of the znodes a failover reads by the hundred thousand ----------------------
# The codecs in `znodes` are the reference: strict, with precise error messages. These
# two take the common case (well-formed JSON of the expected shape) without the generic
# helpers, a regex per partition id and a new JSONDecoder per call, and hand anything
# else to the reference codec, so results and errors are exactly the reference's.


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


_JSON = json.JSONDecoder(parse_constant=_reject_constant)  # as znodes' json.loads(..., parse_constant=)


def _json_or_none(data: bytes) -> Any:
    """The JSON value if `data` is exactly one (no surrounding whitespace, as Kafka writes it),
    else None. The C scanner directly: `JSONDecoder.decode` adds two regex passes per call."""
    try:
        text = data.decode("utf-8")
        value, end = _JSON.scan_once(text, 0)
    except Exception:  # noqa: BLE001 - StopIteration, decode errors...: the reference codec reports it
        return None
    return value if end == len(text) else None


def _decode_partition_state(path: str, data: bytes, stat: ZnodeStat) -> LeaderIsrAndControllerEpoch:
    obj = _json_or_none(data)
    if type(obj) is dict:
        leader, isr = obj.get("leader"), obj.get("isr")
        leader_epoch, controller_epoch = obj.get("leader_epoch"), obj.get("controller_epoch")
        version = obj.get("version", 1)
        if (type(leader) is int and type(leader_epoch) is int and type(controller_epoch) is int
                and type(version) is int and version == 1
                and type(isr) is list and all(type(r) is int for r in isr)):
            return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, tuple(isr), leader_epoch, stat.version),
                                               controller_epoch)
    return zn.decode_partition_state(data, stat.version, path)


def _partition_map_or_none(v: Any) -> dict[int, tuple[int, ...]] | None:
    if type(v) is not dict:
        return None
    out: dict[int, tuple[int, ...]] = {}
    for key, replicas in v.items():
        # ASCII digits only, as the reference's [0-9]+ (str.isdigit alone accepts e.g. "²")
        if not (key.isascii() and key.isdigit()) or type(replicas) is not list:
            return None
        if not all(type(r) is int for r in replicas):
            return None
        out[int(key)] = tuple(replicas)
    return out


def _decode_topic_assignment(path: str, data: bytes, _stat: ZnodeStat) -> TopicAssignment:
    obj = _json_or_none(data)
    if type(obj) is dict:
        version, topic_id = obj.get("version"), obj.get("topic_id")
        if type(version) is int and version in (1, 2, 3) and (topic_id is None or type(topic_id) is str):
            replicas = _partition_map_or_none(obj.get("partitions"))
            adding = _partition_map_or_none(obj.get("adding_replicas") or {})
            removing = _partition_map_or_none(obj.get("removing_replicas") or {})
            if replicas is not None and adding is not None and removing is not None:
                return TopicAssignment(
                    {p: ReplicaAssignment(r, adding.get(p, ()), removing.get(p, ())) for p, r in replicas.items()},
                    topic_id,
                )
    return zn.decode_topic_assignment(data, path)


def _encode_partition_state(state: LeaderIsrAndControllerEpoch) -> bytes:
    """`znodes.encode_partition_state`, byte for byte, without building a dict and running the
    generic JSON encoder (a controller event writes one per partition). Plain ints only (a bool
    is an int to Python but `true` to JSON); anything else goes to the reference codec."""
    lai = state.leader_and_isr
    ce, leader, le, isr = state.controller_epoch, lai.leader, lai.leader_epoch, lai.isr
    if (type(ce) is int and type(leader) is int and type(le) is int and type(isr) in (tuple, list)
            and all(type(r) is int for r in isr)):
        return b'{"controller_epoch":%d,"leader":%d,"version":1,"leader_epoch":%d,"isr":[%s]}' % (
            ce, leader, le, ",".join(map(str, isr)).encode("ascii"))
    return zn.encode_partition_state(state)


def _reassignment_fragments(reassignment: Mapping[TopicPartition, Sequence[int]],
                            known: dict | None) -> dict[TopicPartition, tuple[tuple, bytes]] | None:
    """tp → (replicas, the bytes of its entry in `znodes.encode_reassignment(reassignment)`):
    joined with "," inside `{"version":1,"partitions":[...]}` the entries are that encoding.
    Entries of `known` (the same form) whose replicas did not change are reused. None if some
    value is not a plain str/int (the reference encoder then writes it)."""
    out: dict[TopicPartition, tuple[tuple, bytes]] = {}
    for tp, replicas in reassignment.items():
        if known is not None:
            k = known.get(tp)
            if k is not None and (k[0] == replicas or k[0] == tuple(replicas)):
                out[tp] = k
                continue
        topic, partition = tp
        if type(topic) is not str or type(partition) is not int:
            return None
        rs = tuple(replicas)
        if not all(type(r) is int for r in rs):
            return None
        out[tp] = (rs, b'{"topic":' + json.dumps(topic, ensure_ascii=False).encode("utf-8")
                   + b',"partition":%d,"replicas":[%s]}' % (partition, ",".join(map(str, rs)).encode("ascii")))
    return out


class ZkStore:
    """See the module docstring. Not usable before `start()`; `stop()` ends the session."""

    #: outstanding single async reads during a pipelined bulk read
    read_window = 2000
    #: paths per multi-read request, and multi-read requests in flight
    multi_read_batch = 500
    multi_read_window = 16
    #: transactions in flight during `multi`/`fenced_multi`
    write_window = 64

    def __init__(self, connect: str, session_timeout_ms: int = 18000, connection_timeout_ms: int = 6000):
        self.connect = connect
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms
        self.request_timeout = max(session_timeout_ms, connection_timeout_ms) / 1000.0
        self._client: KazooClient | None = None
        self._listeners: list[SessionListener] = []
        self._watches: set[WatchHandle] = set()
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._session_id: int | None = None
        self._lost = False
        self._stopping = False
        self._ready = False  # set once start() has seen the first session
        self.server_version: tuple[int, ...] | None = None
        self.multi_read_supported = False
        #: (czxid, version, content, encoded entries or None) of /admin/reassign_partitions as
        #: last read or written here (see get_reassignments)
        self._reassignments_cache: tuple[int, int, dict, dict | None] | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "ZkStore":
        """Connect (creating the chroot if missing, as Kafka does) and detect multi-read."""
        if self._client is not None:
            return self
        self._stopping = self._ready = self._lost = False
        self._client = self._new_client(self.connect)
        self._client.add_listener(self._on_state)
        try:
            with warnings.catch_warnings():  # a missing chroot is created just below
                warnings.filterwarnings("ignore", message="No chroot path exists")
                self._client.start(timeout=self.connection_timeout_ms / 1000.0)
        except KazooTimeoutError:
            self._client = None
            raise ZkUnavailableError(
                f"could not connect to ZooKeeper at {self.connect} within {self.connection_timeout_ms} ms") from None
        self._session_id = self._client.client_id[0] if self._client.client_id else None
        self._connected.set()
        self._ready = True
        if self._client.chroot and self._client.exists("/") is None:
            self._create_chroot()
        self._detect_server_version()
        return self

    def _new_client(self, hosts: str) -> KazooClient:
        # Fast reconnect: kazoo's default backoff grows to a minute; a broker must be back
        # within a fraction of its session timeout. Commands retried only briefly.
        return KazooClient(
            hosts=hosts,
            timeout=self.session_timeout_ms / 1000.0,
            connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=2, max_jitter=0.2, max_delay=1.0),
            command_retry=KazooRetry(max_tries=5, delay=0.05, backoff=2, max_jitter=0.2, max_delay=1.0,
                                     deadline=self.request_timeout),
        )

    def _create_chroot(self) -> None:
        """Kafka's createChrootIfNecessary: a chrooted client cannot create its own root."""
        slash = self.connect.find("/")
        hosts, chroot = self.connect[:slash], self.connect[slash:].rstrip("/")
        client = self._new_client(hosts)
        try:
            client.start(timeout=self.connection_timeout_ms / 1000.0)
            client.ensure_path(chroot)
        except KazooTimeoutError:
            raise ZkUnavailableError(f"could not connect to ZooKeeper at {hosts}") from None
        finally:
            client.stop()
            client.close()

    def _detect_server_version(self) -> None:
        """Multi-read needs ZooKeeper 3.6+; an older server would drop the request."""
        try:
            answer = self._client.command(b"srvr")
            m = re.search(r"Zookeeper version: (\d+)\.(\d+)\.(\d+)", answer)
        except Exception:
            m = None
        if m:
            self.server_version = tuple(int(x) for x in m.groups())
            self.multi_read_supported = server_supports_multi_read(self.server_version)

    def stop(self) -> None:
        """Close the session (its ephemerals vanish at once); no session events are emitted."""
        self._stopping = True
        self.cancel_watches()
        client, self._client = self._client, None
        self._connected.clear()
        if client is not None:
            try:
                client.stop()
            finally:
                client.close()

    def __enter__(self) -> "ZkStore":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def client(self) -> KazooClient:
        """The kazoo client, for what this class does not cover."""
        if self._client is None:
            raise ZkUnavailableError("ZkStore is not started")
        return self._client

    @property
    def session_id(self) -> int | None:
        return self._session_id

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def ensure_persistent_paths(self) -> None:
        """Create Kafka's persistent paths (and their parents) if missing."""
        self._create_missing(_ancestors_first(zn.PERSISTENT_PATHS))

    def _create_missing(self, paths: Sequence[str]) -> None:
        """Pipelined creates in order (ZooKeeper serves one client in order); existing ones are fine."""
        client = self.client
        results = self._pipelined(paths, lambda p: client.create_async(p, b""))
        for path, r in zip(paths, results):
            if isinstance(r, BaseException) and not isinstance(r, NodeExistsError):
                raise self._wrap(r, f"create {path}")

    # -- session events ---------------------------------------------------------------------
    def add_session_listener(self, listener: SessionListener) -> None:
        """Register a listener; its methods run on kazoo's thread and must only enqueue."""
        with self._lock:
            self._listeners.append(listener)

    def remove_session_listener(self, listener: SessionListener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _notify(self, method: str) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            fn = getattr(listener, method, None)
            if fn is None:
                continue
            try:
                fn()
            except Exception:
                log.exception("session listener %s.%s failed", type(listener).__name__, method)

    def _on_state(self, state: str) -> None:
        """kazoo state listener (connection thread): translate, re-arm watches, notify."""
        if self._stopping:
            return
        if state == KazooState.SUSPENDED:
            self._connected.clear()
            self._notify("on_suspended")
        elif state == KazooState.LOST:
            self._connected.clear()
            self._lost = True
            self._notify("on_session_expired")
        elif state == KazooState.CONNECTED:
            client = self._client
            if client is None or not self._ready:  # still inside start(): the first connection
                return
            client_id = client.client_id
            sid = client_id[0] if client_id else None
            new_session = self._lost or (self._session_id is not None and sid != self._session_id)
            self._session_id = sid
            self._lost = False
            self._connected.set()
            self._rearm_watches()  # before listeners enqueue reads: re-arm requests go first
            self._notify("on_new_session" if new_session else "on_reconnected")

    # -- request plumbing ---------------------------------------------------------------------
    def _wrap(self, exc: BaseException, what: str) -> PrahaError:
        if isinstance(exc, _CONNECTION_ERRORS) or self._client is None:
            return ZkUnavailableError(f"ZooKeeper unavailable during {what}: {type(exc).__name__}")
        return ZkError(f"ZooKeeper error during {what}: {exc!r}")

    def _get(self, async_result) -> Any:
        try:
            return async_result.get(timeout=self.request_timeout)
        except KazooTimeoutError:
            raise ZkUnavailableError(f"no ZooKeeper response within {self.request_timeout:.1f} s") from None

    def _outcome(self, async_result) -> Any:
        """The value, or the kazoo exception instance (a timeout raises)."""
        try:
            return async_result.get(timeout=self.request_timeout)
        except KazooTimeoutError:
            raise ZkUnavailableError(f"no ZooKeeper response within {self.request_timeout:.1f} s") from None
        except KazooException as e:
            return e

    def _pipelined(self, items: Sequence[T], issue: Callable[[T], Any], window: int | None = None) -> list[Any]:
        """Issue async calls with at most `window` outstanding; results (or exceptions) in order."""
        return [outcome for _i, outcome in self._pipelined_iter(items, issue, window)]

    def _pipelined_iter(self, items: Sequence[T], issue: Callable[[T], Any], window: int | None = None):
        """Yield (index, result or exception) in order, as soon as each is in, while the
        next ones are in flight: the caller's work on one result overlaps the wait for the others."""
        window = window or self.read_window
        inflight: deque[tuple[int, Any]] = deque()
        for i, item in enumerate(items):
            if len(inflight) >= window:
                j, ar = inflight.popleft()
                yield j, self._outcome(ar)
            inflight.append((i, issue(item)))
        while inflight:
            j, ar = inflight.popleft()
            yield j, self._outcome(ar)

    def _read(self, what: str, fn: Callable[[], T]) -> T:
        """Run a read, retrying across reconnections until the request timeout."""
        deadline = time.monotonic() + self.request_timeout
        while True:
            try:
                return fn()
            except (ZkUnavailableError, *_CONNECTION_ERRORS) as e:
                remaining = deadline - time.monotonic()
                if self._stopping or self._client is None or remaining <= 0:
                    raise (e if isinstance(e, ZkUnavailableError) else self._wrap(e, what)) from None
                self._connected.wait(min(remaining, 1.0))
            except KazooException as e:
                raise self._wrap(e, what) from None

    # -- raw reads ------------------------------------------------------------------------------
    def get_data(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        def once():
            try:
                data, stat = self._get(self.client.get_async(path))
            except NoNodeError:
                return None
            return (data or b""), stat
        return self._read(f"get {path}", once)

    def get_children(self, path: str) -> list[str] | None:
        def once():
            try:
                return self._get(self.client.get_children_async(path))
            except NoNodeError:
                return None
        return self._read(f"get children {path}", once)

    def exists(self, path: str) -> ZnodeStat | None:
        return self._read(f"exists {path}", lambda: self._get(self.client.exists_async(path)))

    def get_data_bulk(self, paths: Iterable[str], use_multi_read: bool | None = None,
                      multi_read_batch: int | None = None) -> dict[str, tuple[bytes, ZnodeStat] | None]:
        """Data and stat of each path (None if absent). Multi-read by default when the server has
        it; `multi_read_batch` (paths per request) bounds a response's size for large znodes."""
        return self._bulk(list(dict.fromkeys(paths)), GET_DATA_OPCODE, use_multi_read, multi_read_batch)

    def get_children_bulk(self, paths: Iterable[str], use_multi_read: bool | None = None
                          ) -> dict[str, list[str] | None]:
        """Children of each path (None if absent)."""
        return self._bulk(list(dict.fromkeys(paths)), GET_CHILDREN_OPCODE, use_multi_read)

    def exists_bulk(self, paths: Iterable[str]) -> dict[str, ZnodeStat | None]:
        paths = list(dict.fromkeys(paths))

        def once():
            client = self.client
            results = self._pipelined(paths, client.exists_async)
            for path, r in zip(paths, results):
                if isinstance(r, BaseException):
                    raise self._wrap(r, f"exists {path}")
            return dict(zip(paths, results))
        return self._read("bulk exists", once)

    def _bulk(self, paths: list[str], opcode: int, use_multi_read: bool | None,
              multi_read_batch: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}

        def put(i: int, value: Any) -> None:
            out[paths[i]] = value
        self._bulk_each(paths, opcode, use_multi_read, multi_read_batch, put, out.clear)
        return out

    def _bulk_each(self, paths: list[str], opcode: int, use_multi_read: bool | None, multi_read_batch: int | None,
                   consume: Callable[[int, Any], None], restart: Callable[[], None]) -> None:
        """`consume(i, value)` for each path in order, as the results come in (value: (data, stat)
        or the child list; None if absent). A read interrupted by a lost connection starts over
        after `restart()`, within the request timeout; any other error raises."""
        multi = self.multi_read_supported if use_multi_read is None else use_multi_read
        what = "bulk get" if opcode == GET_DATA_OPCODE else "bulk get children"
        get_data = opcode == GET_DATA_OPCODE

        def one(i: int, r: Any) -> None:
            if isinstance(r, NoNodeError):
                consume(i, None)
            elif isinstance(r, BaseException):
                raise self._wrap(r, f"{what} {paths[i]}")
            elif get_data:
                data, stat = r
                consume(i, (data or b"", stat))
            else:
                consume(i, r)

        def once() -> None:
            restart()
            client = self.client
            if not multi:
                issue = client.get_async if get_data else client.get_children_async
                for i, r in self._pipelined_iter(paths, issue):
                    one(i, r)
                return
            step = multi_read_batch or self.multi_read_batch
            batches = [[(opcode, p) for p in paths[i:i + step]] for i in range(0, len(paths), step)]
            for b, batch_result in self._pipelined_iter(batches, lambda ops: _multi_read_async(client, ops),
                                                        window=self.multi_read_window):
                if isinstance(batch_result, BaseException):
                    raise self._wrap(batch_result, "multi-read")
                for k, r in enumerate(batch_result, b * step):
                    one(k, r)
        self._read(what, once)

    # -- controller election ------------------------------------------------------------------
    def get_controller_id(self) -> int | None:
        """The active controller's broker id; None if no `/controller`; ZNodeDecodeError if garbage."""
        got = self.get_data(zn.CONTROLLER_PATH)
        return None if got is None else zn.decode_controller(got[0])

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(controller epoch, zkVersion of `/controller_epoch`), None if the node is absent."""
        got = self.get_data(zn.CONTROLLER_EPOCH_PATH)
        return None if got is None else (zn.decode_controller_epoch(got[0]), got[1].version)

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        """Kafka's election write: one transaction creates the ephemeral `/controller` and bumps
        `/controller_epoch` at its read version. Returns (new epoch, its zkVersion) or raises
        `ControllerMovedError` when another broker won; ZNodeDecodeError on a garbage epoch."""
        current = self.get_controller_epoch()
        if current is None:
            current = self._create_initial_controller_epoch()
        epoch, version = current
        new_epoch = epoch + 1
        tx = self.client.transaction()
        tx.create(zn.CONTROLLER_PATH, zn.encode_controller(broker_id), ephemeral=True)
        tx.set_data(zn.CONTROLLER_EPOCH_PATH, zn.encode_controller_epoch(new_epoch), version)
        try:
            results = self._get(tx.commit_async())
        except KazooException as e:
            raise self._wrap(e, "controller election") from None
        error = next((r for r in results if isinstance(r, BaseException) and not isinstance(r, _ROLLED_BACK)), None)
        if error is None:
            return new_epoch, results[1].version
        if isinstance(error, (NodeExistsError, BadVersionError)):
            # maybe our own earlier attempt succeeded (e.g. retried after a connection loss)
            if self.get_controller_id() == broker_id:
                now = self.get_controller_epoch()
                if now is not None and now[0] == new_epoch:
                    return now
            raise ControllerMovedError(
                f"broker {broker_id} lost the controller election (epoch {new_epoch}): another broker won")
        raise ZkError(f"controller election failed: {error!r}")

    def _create_initial_controller_epoch(self) -> tuple[int, int]:
        try:
            self._get(self.client.create_async(zn.CONTROLLER_EPOCH_PATH, zn.encode_controller_epoch(0)))
            return 0, 0
        except NodeExistsError:
            current = self.get_controller_epoch()
            if current is None:
                raise ZkError("/controller_epoch vanished right after it existed") from None
            return current
        except KazooException as e:
            raise self._wrap(e, "create /controller_epoch") from None

    def delete_stale_controller(self, broker_id: int) -> bool:
        """Delete `/controller` if it names `broker_id` but belongs to another session: the seat of
        a previous incarnation of this broker, killed and restarted before its session expired.
        Conditional on the znode's version, so a fresh election's result is never removed."""
        got = self.get_data(zn.CONTROLLER_PATH)
        if got is None:
            return False
        data, stat = got
        try:
            owner = zn.decode_controller(data)
        except ZNodeDecodeError:
            return False
        if owner != broker_id or stat.ephemeralOwner == self.session_id:
            return False
        try:
            self.client.delete(zn.CONTROLLER_PATH, version=stat.version)
        except (NoNodeError, BadVersionError):
            return False
        log.info("deleted /controller left by a previous incarnation of broker %d", broker_id)
        return True

    def delete_controller(self, epoch_zk_version: int | None = None) -> None:
        """Delete `/controller` (absent is fine); fenced by the epoch's zkVersion when given."""
        if epoch_zk_version is not None:
            self.fenced_multi([DeleteOp(zn.CONTROLLER_PATH)], epoch_zk_version)
            return
        try:
            self._get(self.client.delete_async(zn.CONTROLLER_PATH))
        except NoNodeError:
            pass
        except KazooException as e:
            raise self._wrap(e, "delete /controller") from None

    def repair_controller_epoch(self, epoch: int) -> bool:
        """Make `/controller_epoch` at least `epoch`: create it if absent, overwrite it if corrupt
        or lower (conditional on the version read, so a concurrent election is never undone).
        A value of `epoch` or more is left alone. Returns whether it wrote."""
        got = self.get_data(zn.CONTROLLER_EPOCH_PATH)
        if got is None:
            ops: list[ZkOp] = [CreateOp(zn.CONTROLLER_EPOCH_PATH, zn.encode_controller_epoch(epoch))]
        else:
            try:
                if zn.decode_controller_epoch(got[0]) >= epoch:
                    return False
            except ZNodeDecodeError:
                pass
            ops = [SetDataOp(zn.CONTROLLER_EPOCH_PATH, zn.encode_controller_epoch(epoch), got[1].version)]
        return self.multi(ops)[0].ok

    def delete_if_unchanged_corrupt(self, path: str) -> bool:
        """Delete `path` if its data still fails to decode, conditional on the version read (so a
        valid value written meanwhile survives). Only for znodes with a known codec. Returns
        whether it deleted."""
        decode = _decoder_for(path)
        got = self.get_data(path)
        if got is None:
            return False
        try:
            decode(got[0])
            return False
        except ZNodeDecodeError:
            pass
        return self.multi([DeleteOp(path, got[1].version)])[0].ok

    # -- brokers --------------------------------------------------------------------------------
    def register_broker(self, info: BrokerInfo) -> int:
        """Create the ephemeral `/brokers/ids/<id>`; returns the broker epoch (its czxid).

        An existing node owned by this session is accepted (a retried registration); one
        owned by another session means another live broker has this id."""
        path = zn.broker_path(info.id)
        data = zn.encode_broker(info)
        for _ in range(3):
            try:
                _, stat = self._get(self.client.create_async(path, data, ephemeral=True, include_data=True))
                return stat.czxid
            except NoNodeError:
                self.ensure_persistent_paths()
            except NodeExistsError:
                got = self.get_data(path)
                if got is None:
                    continue  # vanished meanwhile (an old session expiring): try again
                old_data, stat = got
                if stat.ephemeralOwner == self._session_id:
                    if old_data != data:
                        self._get(self.client.set_async(path, data, stat.version))
                    return stat.czxid
                try:
                    old = zn.decode_broker(info.id, old_data)
                    where = f"{old.host}:{old.port}"
                except ZNodeDecodeError:
                    where = "an unreadable address"
                raise BrokerIdInUseError(
                    f"broker.id {info.id} is already registered in ZooKeeper by another live broker at {where} "
                    f"(session 0x{stat.ephemeralOwner:x}); choose another broker.id or stop that broker") from None
            except KazooException as e:
                raise self._wrap(e, f"register broker {info.id}") from None
        raise ZkError(f"could not register broker {info.id}: {path} keeps changing")

    def replace_broker_registration(self, info: BrokerInfo, stale_epoch: int) -> int:
        """Atomically swap a stale registration (czxid `stale_epoch`, e.g. this broker's previous
        incarnation whose session has not expired yet) for ours; returns the new broker epoch.
        BrokerIdInUseError if the registration is not that one any more."""
        path = zn.broker_path(info.id)
        got = self.get_data(path)
        if got is None:
            return self.register_broker(info)
        stat = got[1]
        if stat.czxid != stale_epoch:
            raise BrokerIdInUseError(
                f"broker.id {info.id}: the registration changed (epoch {stat.czxid}, expected {stale_epoch})")
        result = self.multi([DeleteOp(path, stat.version), CreateOp(path, zn.encode_broker(info), ephemeral=True)])
        if not all(r.ok for r in result):
            raise BrokerIdInUseError(f"broker.id {info.id}: the registration changed while replacing it")
        mine = self.get_data(path)
        if mine is None or mine[1].ephemeralOwner != self._session_id:
            raise BrokerIdInUseError(f"broker.id {info.id}: another broker registered right after the swap")
        return mine[1].czxid

    def deregister_broker(self, broker_id: int) -> None:
        try:
            self._get(self.client.delete_async(zn.broker_path(broker_id)))
        except NoNodeError:
            pass
        except KazooException as e:
            raise self._wrap(e, f"deregister broker {broker_id}") from None

    def get_live_brokers(self) -> tuple[dict[int, BrokerInfo], dict[int, ZNodeDecodeError]]:
        """Registered brokers (epoch from czxid) and the registrations that did not decode."""
        ids = sorted(int(c) for c in (self.get_children(zn.BROKER_IDS_PATH) or []) if c.isdigit())
        raw = self.get_data_bulk([zn.broker_path(i) for i in ids])
        brokers: dict[int, BrokerInfo] = {}
        errors: dict[int, ZNodeDecodeError] = {}
        for broker_id in ids:
            got = raw[zn.broker_path(broker_id)]
            if got is None:
                continue
            try:
                brokers[broker_id] = zn.decode_broker(broker_id, got[0], got[1].czxid)
            except ZNodeDecodeError as e:
                errors[broker_id] = e
        return brokers, errors

    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        got = self.get_data(zn.broker_path(broker_id))
        return None if got is None else zn.decode_broker(broker_id, got[0], got[1].czxid)

    def get_or_create_cluster_id(self, new_id: Callable[[], str] = _new_cluster_id) -> str:
        """`/cluster/id`, created with a fresh id by the first broker that finds none."""
        got = self.get_data(zn.CLUSTER_ID_PATH)
        if got is not None:
            return zn.decode_cluster_id(got[0])
        try:
            self._create_missing([zn.CLUSTER_PATH])
            cluster_id = new_id()
            self._get(self.client.create_async(zn.CLUSTER_ID_PATH, zn.encode_cluster_id(cluster_id)))
            return cluster_id
        except NodeExistsError:
            return zn.decode_cluster_id(self.get_data(zn.CLUSTER_ID_PATH)[0])
        except KazooException as e:
            raise self._wrap(e, "create /cluster/id") from None

    def allocate_producer_id_block(self, broker_id: int, block_size: int = 1000, attempts: int = 20
                                   ) -> tuple[int, int]:
        """Claim the next `block_size` producer ids (inclusive bounds) by a conditional update
        of `/latest_producer_id_block`, as Kafka's brokers do; a lost race re-reads. A
        corrupt znode is an error (ids must never be handed out twice)."""
        for _ in range(attempts):
            got = self.get_data(zn.PRODUCER_ID_BLOCK_PATH)
            start = 0
            if got is not None and got[0]:
                start = zn.decode_producer_id_block(got[0])[2] + 1
            data = zn.encode_producer_id_block(broker_id, start, start + block_size - 1)
            if got is None:
                op: ZkOp = CreateOp(zn.PRODUCER_ID_BLOCK_PATH, data)
            else:
                op = SetDataOp(zn.PRODUCER_ID_BLOCK_PATH, data, got[1].version)
            if self.multi([op])[0].ok:
                return start, start + block_size - 1
        raise PrahaError(f"could not claim a producer id block in {attempts} attempts")

    # -- topics: typed reads ----------------------------------------------------------------------
    def get_all_topics(self) -> list[str]:
        return sorted(self.get_children(zn.TOPICS_PATH) or [])

    def _decode_bulk(self, keys: Iterable[T], path_of: Callable[[T], str],
                     decode: Callable[[str, bytes, ZnodeStat], Any], multi_read_batch: int | None = None
                     ) -> tuple[dict[T, Any], dict[T, ZNodeDecodeError]]:
        """Read and decode; each result is decoded as it arrives, while later reads are in flight."""
        keys = list(dict.fromkeys(keys))
        paths = [path_of(k) for k in keys]
        ok: dict[T, Any] = {}
        bad: dict[T, ZNodeDecodeError] = {}

        def restart() -> None:
            ok.clear()
            bad.clear()

        def consume(i: int, got: tuple[bytes, ZnodeStat] | None) -> None:
            if got is None:
                return
            try:
                ok[keys[i]] = decode(paths[i], got[0], got[1])
            except ZNodeDecodeError as e:
                bad[keys[i]] = e
        self._bulk_each(paths, GET_DATA_OPCODE, None, multi_read_batch, consume, restart)
        return ok, bad

    def get_topic_assignments(self, topics: Iterable[str]
                              ) -> tuple[dict[str, TopicAssignment], dict[str, ZNodeDecodeError]]:
        """Assignments of the given topics; absent topics are in neither dict."""
        # a topic znode grows with its partition count: fewer per multi-read response
        return self._decode_bulk(topics, zn.topic_path, _decode_topic_assignment, multi_read_batch=50)

    def get_partition_states(self, tps: Iterable[TopicPartition], mzxids: dict[TopicPartition, int] | None = None
                             ) -> tuple[dict[TopicPartition, LeaderIsrAndControllerEpoch],
                                        dict[TopicPartition, ZNodeDecodeError]]:
        """Leader/ISR per partition (zk_version from the stat); missing ones are in neither dict.
        With `mzxids`, also fills in the zxid of each znode's last write (a failover compares
        it with leaders' registration czxids to spot leaders that restarted unseen)."""
        if mzxids is None:
            return self._decode_bulk(tps, zn.tp_state_path, _decode_partition_state)
        tps = list(dict.fromkeys(tps))
        by_path = {zn.tp_state_path(tp): tp for tp in tps}

        def decode(path: str, data: bytes, stat: ZnodeStat) -> LeaderIsrAndControllerEpoch:
            mzxids[by_path[path]] = stat.mzxid
            return _decode_partition_state(path, data, stat)
        return self._decode_bulk(tps, zn.tp_state_path, decode)

    def stream_partition_states(self, tps: Sequence[TopicPartition],
                                consume: Callable[[TopicPartition, LeaderIsrAndControllerEpoch | None,
                                                   ZNodeDecodeError | None], None],
                                restart: Callable[[], None]) -> None:
        """`get_partition_states`, handing each partition to `consume(tp, state, error)` in order as
        its answer comes in (state None and error None: no znode), while the later reads are in
        flight, so the caller's work on one overlaps the wait for the others. `tps` must not
        repeat. A read interrupted by a lost connection starts over after `restart()`."""
        paths = [zn.tp_state_path(tp) for tp in tps]

        def each(i: int, got: tuple[bytes, ZnodeStat] | None) -> None:
            if got is None:
                consume(tps[i], None, None)
                return
            try:
                state = _decode_partition_state(paths[i], got[0], got[1])
            except ZNodeDecodeError as e:
                consume(tps[i], None, e)
                return
            consume(tps[i], state, None)
        self._bulk_each(paths, GET_DATA_OPCODE, None, None, each, restart)

    def get_topic_configs(self, topics: Iterable[str]
                          ) -> tuple[dict[str, dict[str, str]], dict[str, ZNodeDecodeError]]:
        """Config overrides per topic; a topic without `/config/topics/<t>` is in neither dict."""
        return self._decode_bulk(topics, zn.config_topic_path, lambda p, d, s: zn.decode_config(d, p))

    def get_reassignments(self) -> dict[TopicPartition, tuple[int, ...]]:
        """`/admin/reassign_partitions` ({} if absent; ZNodeDecodeError if garbage).

        The controller rewrites this znode after every completed partition, and each rewrite
        fires its watch: while its stat says it is still what this store last wrote or read
        (same czxid and version: the same content), the decoded content is reused and only
        the stat is fetched, not the whole znode (megabytes for tens of thousands of partitions)."""
        cached = self._reassignments_cache
        if cached is not None:
            stat = self._read("exists reassignment", lambda: self._get(self.client.exists_async(
                zn.REASSIGN_PARTITIONS_PATH)))
            if stat is None:
                return {}
            if (stat.czxid, stat.version) == cached[:2]:
                return dict(cached[2])
        got = self.get_data(zn.REASSIGN_PARTITIONS_PATH)
        if got is None:
            return {}
        content = zn.decode_reassignment(got[0])
        self._reassignments_cache = (got[1].czxid, got[1].version, dict(content), None)
        return content

    def get_preferred_election(self) -> set[TopicPartition]:
        """`/admin/preferred_replica_election` (empty if absent; ZNodeDecodeError if garbage)."""
        got = self.get_data(zn.PREFERRED_REPLICA_ELECTION_PATH)
        return set() if got is None else zn.decode_preferred_election(got[0])

    def get_isr_change_notifications(self) -> tuple[list[str], set[TopicPartition]]:
        """(child names, partitions they name). Unreadable notifications add no partition but
        are listed, so the controller deletes them too."""
        names = sorted(self.get_children(zn.ISR_CHANGE_NOTIFICATION_PATH) or [])
        raw = self.get_data_bulk([zn.isr_change_path(n) for n in names])
        partitions: set[TopicPartition] = set()
        for path, got in raw.items():
            if got is None:
                continue
            try:
                partitions |= zn.decode_isr_change(got[0], path)
            except ZNodeDecodeError as e:
                log.warning("ignoring corrupt ISR change notification: %s", e)
        return names, partitions

    def get_topics_marked_for_deletion(self) -> list[str]:
        return sorted(self.get_children(zn.DELETE_TOPICS_PATH) or [])

    # -- batched writes -----------------------------------------------------------------------------
    def multi(self, ops: Sequence[ZkOp], batch_size: int = 100) -> list[WriteResult]:
        """Unfenced batched writes (admin tools, brokers); same outcome rules as `fenced_multi`."""
        return self._run_multi(ops, None, batch_size)

    def fenced_multi(self, ops: Sequence[ZkOp], controller_epoch_zk_version: int,
                     batch_size: int = 100) -> list[WriteResult]:
        """Apply `ops` in transactions of ≤ batch_size, each starting with a check that
        `/controller_epoch` still has `controller_epoch_zk_version`; one WriteResult per op.

        A transaction fails as a whole: its failing op gets its outcome, the others are
        retried in new transactions until every op has one. If the epoch check fails,
        `ControllerMovedError` is raised and none of this call's later writes is applied.
        Ops in one transaction apply in order; after a retry, ops of different transactions
        may apply out of order, so put ops that depend on each other (create a parent, then
        its child) in separate calls."""
        return self._run_multi(ops, (zn.CONTROLLER_EPOCH_PATH, controller_epoch_zk_version), batch_size)

    def _commit(self, ops: Sequence[ZkOp], idx: list[int], check: tuple[str, int] | None):
        """Send one transaction: the epoch check (if fenced), then the ops at `idx`.

        The kazoo request objects are built here as `TransactionRequest` would build them
        (same argument checks, same flags and ACL), but with the cheap chroot prefix of
        `_chrooted`: kazoo's path normalisation was most of a 10k-partition write's CPU time.
        Anything `TransactionRequest` would refuse or treat specially goes through it."""
        client = self.client
        tx = client.transaction()
        operations = tx.operations
        if check is not None:
            if type(check[0]) is str and type(check[1]) is int:
                operations.append(CheckVersion(_chrooted(client, check[0]), check[1]))
            else:
                tx.check(*check)
        acl = client.default_acl or OPEN_ACL_UNSAFE
        for i in idx:
            op = ops[i]
            kind = type(op)
            if kind is SetDataOp:
                if type(op.path) is str and type(op.data) is bytes and type(op.version) is int:
                    operations.append(SetData(_chrooted(client, op.path), op.data, op.version))
                else:
                    tx.set_data(op.path, op.data, op.version)
            elif kind is CreateOp:
                if (type(op.path) is str and type(op.data) is bytes and type(op.ephemeral) is bool
                        and type(op.sequential) is bool and isinstance(acl, (tuple, list))):
                    flags = (1 if op.ephemeral else 0) | (2 if op.sequential else 0)
                    operations.append(Create(_chrooted(client, op.path), op.data, acl, flags))
                else:
                    tx.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)
            elif kind is DeleteOp:
                if type(op.path) is str and type(op.version) is int:
                    operations.append(Delete(_chrooted(client, op.path), op.version))
                else:
                    tx.delete(op.path, op.version)
            elif isinstance(op, SetDataOp):
                tx.set_data(op.path, op.data, op.version)
            elif isinstance(op, CreateOp):
                tx.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)
            elif isinstance(op, DeleteOp):
                tx.delete(op.path, op.version)
            else:
                raise TypeError(f"not a ZooKeeper write op: {op!r}")
        return tx.commit_async()

    def _run_multi(self, ops: Sequence[ZkOp], check: tuple[str, int] | None, batch_size: int) -> list[WriteResult]:
        """The batching loop of `fenced_multi`/`multi` (transactions pipelined, failures split off)."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        results: list[WriteResult | None] = [None] * len(ops)
        pending: deque[list[int]] = deque(
            list(range(i, min(i + batch_size, len(ops)))) for i in range(0, len(ops), batch_size))
        inflight: deque[tuple[list[int], Any]] = deque()
        skip = 0 if check is None else 1
        while pending or inflight:
            while pending and len(inflight) < self.write_window:
                idx = pending.popleft()
                inflight.append((idx, self._commit(ops, idx, check)))
            idx, ar = inflight.popleft()
            try:
                res = self._get(ar)
            except KazooException as e:
                raise self._wrap(e, "multi-op write") from None
            if check is not None and isinstance(res[0], BaseException) and not isinstance(res[0], _ROLLED_BACK):
                raise ControllerMovedError(
                    f"controller epoch zkVersion is no longer {check[1]} ({type(res[0]).__name__}): "
                    "this controller has been deposed, its writes are refused")
            res = res[skip:]
            failed_at = next((k for k, r in enumerate(res)
                              if isinstance(r, BaseException) and not isinstance(r, _ROLLED_BACK)), None)
            if failed_at is None:
                if any(isinstance(r, BaseException) for r in res):
                    raise ZkError(f"transaction rolled back without a failing operation: {res!r}")
                for k, r in zip(idx, res):
                    results[k] = self._success(ops[k], r)
                continue
            results[idx[failed_at]] = outcome_of_error(res[failed_at])
            prefix, suffix = idx[:failed_at], idx[failed_at + 1:]
            retry = [prefix] if prefix else []
            if len(suffix) >= 16:  # several stale ops are likely: split to isolate them in parallel
                half = len(suffix) // 2
                retry += [suffix[:half], suffix[half:]]
            elif suffix:
                retry.append(suffix)
            pending.extendleft(reversed(retry))
        return results  # type: ignore[return-value]

    @staticmethod
    def _success(op: ZkOp, result: Any) -> WriteResult:
        if isinstance(op, SetDataOp):
            return WriteResult(WriteOutcome.OK, result.version)
        if isinstance(op, CreateOp):
            return WriteResult(WriteOutcome.OK, 0, created_path=result)
        return WriteResult(WriteOutcome.OK)

    # -- partition state writes ------------------------------------------------------------------------
    def create_partition_states(self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
                                epoch_zk_version: int) -> dict[TopicPartition, WriteResult]:
        """Create each partition's state znode (fenced). Missing `partitions` and `partitions/<p>`
        parents are created first (fenced too; existing ones are fine). A topic whose
        `/brokers/topics/<t>` is absent gets NO_NODE; an existing state gets NODE_EXISTS."""
        tps = list(states)
        topics = list(dict.fromkeys(tp.topic for tp in tps))
        listed = self.get_children_bulk([zn.partitions_path(t) for t in topics])
        existing = {t: set(listed[zn.partitions_path(t)] or ()) for t in topics}
        missing_parents = [CreateOp(zn.partitions_path(t)) for t in topics if listed[zn.partitions_path(t)] is None]
        missing_children = [CreateOp(zn.partition_path(tp.topic, tp.partition)) for tp in tps
                            if str(tp.partition) not in existing[tp.topic]]
        for level in (missing_parents, missing_children):
            if level:
                self.fenced_multi(level, epoch_zk_version)
        ops = [CreateOp(zn.tp_state_path(tp), _encode_partition_state(states[tp])) for tp in tps]
        return dict(zip(tps, self.fenced_multi(ops, epoch_zk_version)))

    def update_partition_states(self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
                                epoch_zk_version: int) -> dict[TopicPartition, WriteResult]:
        """Set each state znode, conditional on `leader_and_isr.zk_version` and fenced by the epoch;
        an OK result's `stat_version` is the partition's new zkVersion."""
        tps = list(states)
        ops = [SetDataOp(zn.tp_state_path(tp), _encode_partition_state(states[tp]),
                         states[tp].leader_and_isr.zk_version) for tp in tps]
        return dict(zip(tps, self.fenced_multi(ops, epoch_zk_version)))

    def conditional_update_partition_state(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch,
                                           expected_version: int) -> WriteResult:
        """A partition leader's own ISR change: conditional on the zkVersion, not fenced."""
        try:
            stat = self._get(self.client.set_async(zn.tp_state_path(tp), _encode_partition_state(state),
                                                   expected_version))
        except (BadVersionError, NoNodeError) as e:
            return outcome_of_error(e)
        except KazooException as e:
            raise self._wrap(e, f"update state of {tp}") from None
        return WriteResult(WriteOutcome.OK, stat.version)

    def create_isr_change_notification(self, tps: Iterable[TopicPartition]) -> str:
        """Write one sequential `/isr_change_notification/isr_change_<seq>`; returns its child name."""
        try:
            path = self._get(self.client.create_async(zn.ISR_CHANGE_SEQUENCE_PREFIX_PATH,
                                                      zn.encode_isr_change(tps), sequence=True))
        except KazooException as e:
            raise self._wrap(e, "create ISR change notification") from None
        return path.rsplit("/", 1)[-1]

    def delete_isr_change_notifications(self, names: Iterable[str], epoch_zk_version: int) -> None:
        """Fenced deletes of processed notifications (already gone is fine)."""
        ops = [DeleteOp(zn.isr_change_path(n)) for n in names]
        if ops:
            self.fenced_multi(ops, epoch_zk_version)

    # -- topic writes ------------------------------------------------------------------------------------
    def create_topic(self, topic: str, assignment: TopicAssignment, config: Mapping[str, str] | None = None) -> None:
        """Admin topic creation as Kafka's AdminZkClient: config first, then the assignment znode,
        whose appearance the controller watches. TopicExistsError if present or being deleted."""
        if self.exists(zn.delete_topic_path(topic)) is not None:
            raise TopicExistsError(f"Topic '{topic}' is marked for deletion.")
        if self.exists(zn.topic_path(topic)) is not None:
            raise TopicExistsError(f"Topic '{topic}' already exists.")
        self.set_topic_config(topic, config or {})
        try:
            self._get(self.client.create_async(zn.topic_path(topic), zn.encode_topic_assignment(assignment)))
        except NodeExistsError:
            raise TopicExistsError(f"Topic '{topic}' already exists.") from None
        except NoNodeError:
            self.ensure_persistent_paths()
            return self.create_topic(topic, assignment, config)
        except KazooException as e:
            raise self._wrap(e, f"create topic {topic}") from None

    def set_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """Set or create `/config/topics/<t>` (unfenced: an admin write)."""
        path, data = zn.config_topic_path(topic), zn.encode_config(config)
        try:
            try:
                self._get(self.client.set_async(path, data))
            except NoNodeError:
                self._get(self.client.create_async(path, data, makepath=True))
        except NodeExistsError:
            self._get(self.client.set_async(path, data))
        except KazooException as e:
            raise self._wrap(e, f"set config of {topic}") from None

    def set_topic_assignment(self, topic: str, assignment: TopicAssignment,
                             epoch_zk_version: int | None = None, expected_version: int = -1) -> WriteResult:
        """Rewrite `/brokers/topics/<t>`: fenced when `epoch_zk_version` is given (the controller),
        plain otherwise (admin partition expansion); conditional if `expected_version` ≥ 0."""
        op = SetDataOp(zn.topic_path(topic), zn.encode_topic_assignment(assignment), expected_version)
        if epoch_zk_version is not None:
            return self.fenced_multi([op], epoch_zk_version)[0]
        return self.multi([op])[0]

    def set_topic_assignments(self, assignments: Mapping[str, TopicAssignment],
                              epoch_zk_version: int) -> dict[str, WriteResult]:
        """`set_topic_assignment(t, a, epoch_zk_version)` for each topic, grouped in fenced multi-ops."""
        topics = list(assignments)
        ops = [SetDataOp(zn.topic_path(t), zn.encode_topic_assignment(assignments[t])) for t in topics]
        return dict(zip(topics, self.fenced_multi(ops, epoch_zk_version)))

    def mark_topic_for_deletion(self, topic: str) -> None:
        """Admin request: create `/admin/delete_topics/<t>` (idempotent)."""
        if self.exists(zn.topic_path(topic)) is None:
            raise UnknownTopicError(f"Topic '{topic}' does not exist.")
        try:
            self._get(self.client.create_async(zn.delete_topic_path(topic), b"", makepath=True))
        except NodeExistsError:
            pass
        except KazooException as e:
            raise self._wrap(e, f"mark {topic} for deletion") from None

    def delete_recursive_fenced(self, paths: Iterable[str], epoch_zk_version: int) -> None:
        """Delete each path with its subtree, deepest level first, fenced (absent is fine)."""
        self.delete_recursive(paths, epoch_zk_version)

    def delete_recursive(self, paths: Iterable[str], epoch_zk_version: int | None = None) -> None:
        """Delete each path with its subtree, deepest level first (absent is fine); fenced
        when `epoch_zk_version` is given. Listing uses bulk reads, deleting batched writes."""
        levels: list[list[str]] = []
        frontier = list(dict.fromkeys(paths))
        while frontier:
            children = self.get_children_bulk(frontier)
            existing = [p for p in frontier if children[p] is not None]
            levels.append(existing)
            frontier = [f"{p.rstrip('/')}/{c}" for p in existing for c in children[p]]
        for level in reversed(levels):
            if not level:
                continue
            ops = [DeleteOp(p) for p in level]
            results = self.multi(ops) if epoch_zk_version is None else self.fenced_multi(ops, epoch_zk_version)
            failed = [(p, r) for p, r in zip(level, results) if r.outcome not in (WriteOutcome.OK, WriteOutcome.NO_NODE)]
            if failed:
                raise ZkError(f"could not delete {failed[0][0]}: {failed[0][1]} (a child appeared meanwhile?)")

    def delete_topic_znodes(self, topics: Iterable[str], epoch_zk_version: int) -> None:
        """End of a topic deletion (fenced): `/brokers/topics/<t>` with its subtree, then
        `/config/topics/<t>`, then the `/admin/delete_topics/<t>` marker, as Kafka."""
        topics = list(topics)
        self.delete_recursive_fenced([zn.topic_path(t) for t in topics], epoch_zk_version)
        self.fenced_multi([DeleteOp(zn.config_topic_path(t)) for t in topics], epoch_zk_version)
        self.fenced_multi([DeleteOp(zn.delete_topic_path(t)) for t in topics], epoch_zk_version)

    def delete_topic_deletion_markers(self, topics: Iterable[str], epoch_zk_version: int) -> None:
        """Drop `/admin/delete_topics/<t>` markers (e.g. of topics that do not exist)."""
        ops = [DeleteOp(zn.delete_topic_path(t)) for t in topics]
        if ops:
            self.fenced_multi(ops, epoch_zk_version)

    # -- admin znodes: reassignment, preferred election ----------------------------------------------------
    def create_reassignment(self, reassignment: Mapping[TopicPartition, Sequence[int]]) -> None:
        """Admin request; ZkError if a reassignment is already in progress."""
        try:
            self._get(self.client.create_async(zn.REASSIGN_PARTITIONS_PATH, zn.encode_reassignment(reassignment),
                                               makepath=True))
        except NodeExistsError:
            raise ZkError("a partition reassignment is already in progress") from None
        except KazooException as e:
            raise self._wrap(e, "create reassignment") from None

    def set_reassignments(self, reassignment: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int) -> None:
        """Controller: rewrite the reassignments still in progress; delete the znode when none is left."""
        path = zn.REASSIGN_PARTITIONS_PATH
        cached, self._reassignments_cache = self._reassignments_cache, None
        if not reassignment:
            self.fenced_multi([DeleteOp(path)], epoch_zk_version)
            return
        fragments = _reassignment_fragments(reassignment, cached[3] if cached is not None else None)
        if fragments is None:
            data = zn.encode_reassignment(reassignment)
        else:
            data = b'{"version":1,"partitions":[' + b",".join(f[1] for f in fragments.values()) + b"]}"
        result, stat = self._fenced_single(SetDataOp(path, data), epoch_zk_version)
        if result.outcome is WriteOutcome.NO_NODE:
            self.fenced_multi([CreateOp(path, data)], epoch_zk_version)
        elif result.outcome is WriteOutcome.OK and stat is not None:
            self._reassignments_cache = (stat.czxid, stat.version, dict(reassignment), fragments)

    def _fenced_single(self, op: ZkOp, epoch_zk_version: int) -> tuple[WriteResult, Any]:
        """`fenced_multi([op], epoch_zk_version)[0]`, plus kazoo's raw result (the ZnodeStat of a
        set): one transaction, the same outcomes and errors."""
        try:
            res = self._get(self._commit([op], [0], (zn.CONTROLLER_EPOCH_PATH, epoch_zk_version)))
        except KazooException as e:
            raise self._wrap(e, "multi-op write") from None
        if isinstance(res[0], BaseException) and not isinstance(res[0], _ROLLED_BACK):
            raise ControllerMovedError(
                f"controller epoch zkVersion is no longer {epoch_zk_version} ({type(res[0]).__name__}): "
                "this controller has been deposed, its writes are refused")
        r = res[1]
        if isinstance(r, BaseException):
            if isinstance(r, _ROLLED_BACK):
                raise ZkError(f"transaction rolled back without a failing operation: {res!r}")
            return outcome_of_error(r), None
        return self._success(op, r), r

    def create_preferred_election(self, tps: Iterable[TopicPartition]) -> None:
        """Admin request; ZkError if an election request is already pending."""
        try:
            self._get(self.client.create_async(zn.PREFERRED_REPLICA_ELECTION_PATH, zn.encode_preferred_election(tps),
                                               makepath=True))
        except NodeExistsError:
            raise ZkError("a preferred replica election is already pending") from None
        except KazooException as e:
            raise self._wrap(e, "create preferred election") from None

    def delete_preferred_election(self, epoch_zk_version: int) -> None:
        self.fenced_multi([DeleteOp(zn.PREFERRED_REPLICA_ELECTION_PATH)], epoch_zk_version)

    # -- watches --------------------------------------------------------------------------------------
    def watch_data(self, path: str, callback: WatchCallback, group: str | None = None) -> WatchHandle:
        """Fire `callback(WatchEvent)` on every creation, change and deletion of `path`
        (works while it is absent). Callbacks run on kazoo's thread: enqueue only."""
        return self._watch(path, WatchKind.DATA, callback, group)

    def watch_data_many(self, paths: Iterable[str], callback_for_path: Callable[[str], WatchCallback],
                        group: str | None = None) -> dict[str, WatchHandle]:
        """`watch_data` for many paths: all are armed first, then waited for together, so the
        cost is about one round trip instead of one per path (a failover watches every topic).
        `callback_for_path(path)` gives each path's callback. Returns path → handle."""
        client = self.client
        handles = {path: WatchHandle(client, path, WatchKind.DATA, callback_for_path(path), group, self._forget_watch)
                   for path in dict.fromkeys(paths)}
        with self._lock:
            self._watches.update(handles.values())
        for h in handles.values():
            h.arm()
        deadline = time.monotonic() + self.request_timeout
        for h in handles.values():  # registered server-side before the caller reads
            h.wait_armed(max(0.0, deadline - time.monotonic()))
        return handles

    def watch_children(self, path: str, callback: WatchCallback, group: str | None = None) -> WatchHandle:
        """Fire `callback(WatchEvent)` whenever the children of `path` change (also on its
        creation and deletion). Callbacks run on kazoo's thread: enqueue only."""
        return self._watch(path, WatchKind.CHILDREN, callback, group)

    def _watch(self, path: str, kind: WatchKind, callback: WatchCallback, group: str | None) -> WatchHandle:
        handle = WatchHandle(self.client, path, kind, callback, group, self._forget_watch)
        with self._lock:
            self._watches.add(handle)
        handle.arm()
        handle.wait_armed(self.request_timeout)  # registered server-side before the caller reads
        return handle

    def _forget_watch(self, handle: WatchHandle) -> None:
        with self._lock:
            self._watches.discard(handle)

    def unwatch(self, path: str) -> int:
        """Cancel every watch on `path`; returns how many."""
        with self._lock:
            handles = [h for h in self._watches if h.path == path]
        for h in handles:
            h.cancel()
        return len(handles)

    def cancel_watches(self, group: str | None = None) -> int:
        """Cancel the watches of `group` (e.g. "controller" at resignation); all if None."""
        with self._lock:
            handles = [h for h in self._watches if group is None or h.group == group]
        for h in handles:
            h.cancel()
        return len(handles)

    def _rearm_watches(self) -> None:
        with self._lock:
            handles = list(self._watches)
        for h in handles:
            h.arm(resync=True)
