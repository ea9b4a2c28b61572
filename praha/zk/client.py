"""`ZooKeeperClient`: one kazoo session with what praha needs on top, and nothing of Kafka.

Kafka's `ZooKeeperClient` counterpart: it knows no znode path or format (that is
`store.ZkStore`, built on this class). What it adds over kazoo:
  - session events as four callbacks (`SessionListener`), and a fast reconnect;
  - reads retried across reconnects until the request timeout;
  - bulk reads: ZooKeeper's multi-read (OpCode 22) when the server has it (3.6+), else
    pipelined async calls in a bounded window; `stream_data` hands each answer over as it
    arrives, while the later reads are in flight;
  - batched writes (`multi`) and checked ones (`checked_multi`): each transaction starts with
    a version check of one znode, so nothing is applied once that znode moved; per-operation
    outcomes are recovered from kazoo's result lists;
  - watches that re-register themselves (`watches.WatchHandle`), re-armed on reconnection.

Flow of a checked batched write (`checked_multi`):
  1. split the ops into transactions of ≤ batch_size, pipelined up to `write_window`;
  2. each transaction: the version check, then its ops (built without kazoo's path
     normalisation, see `_commit`);
  3. a failed check raises `VersionCheckFailedError` (later transactions are refused too);
  4. a transaction fails as a whole: its failing op gets its outcome, the ops before and
     after it are sent again in new transactions, until every op has an outcome.

Threading: every method may be called from any thread except kazoo's own: session
listeners and watch callbacks run on kazoo's threads and must only enqueue work (a
blocking call there would stall kazoo's connection loop, and a ZooKeeper call would
deadlock waiting for a response that thread itself must read).

Errors: no connection within the request timeout → `ZkUnavailableError` (reads are retried
across reconnects until then; a write interrupted by a connection loss has an unknown
outcome and is not retried); any other unexpected ZooKeeper error → `ZkError`.
"""
from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, Self, TypeVar, cast

from kazoo.client import KazooClient
from kazoo.exceptions import (
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
from kazoo.protocol.states import KazooState, KeeperState, ZnodeStat
from kazoo.retry import KazooRetry, RetryFailedError
from kazoo.security import OPEN_ACL_UNSAFE

from praha.errors import PrahaError
from praha.zk.auth import ZkAuth
from praha.zk.chroot import chrooted
from praha.zk.four_letter import four_letter_word
from praha.zk.multiread import (
    GET_CHILDREN_OPCODE,
    GET_DATA_OPCODE,
    multi_read_async,
    server_supports_multi_read,
)
from praha.zk.ops import (
    CreateOp,
    DeleteOp,
    SetDataOp,
    WriteOutcome,
    WriteResult,
    ZkOp,
    outcome_of_error,
)
from praha.zk.watches import WatchCallback, WatchHandle, WatchKind

log = logging.getLogger(__name__)
T = TypeVar("T")

CONNECTION_ERRORS = (ConnectionLoss, SessionExpiredError, ConnectionClosedError, KazooTimeoutError)
#: what kazoo reports for the operations of a failed transaction other than the failing one
ROLLED_BACK_ERRORS = (RolledBackError, RuntimeInconsistency)

#: (path, zkVersion): a checked transaction applies only while that znode has that version
VersionCheck = tuple[str, int]


class ZkError(PrahaError):
    """An unexpected ZooKeeper error (not a decode error, not a lost controller seat)."""


class ZkUnavailableError(ZkError):
    """No usable ZooKeeper connection within the request timeout (or the client is stopped)."""


class ZkAuthenticationError(ZkError):
    """ZooKeeper refused our credentials (SASL)."""


class VersionCheckFailedError(ZkError):
    """The znode a checked write is conditional on has moved: none of the write was applied."""

    def __init__(self, check: VersionCheck, error_name: str):
        super().__init__(f"{check[0]} is no longer at zkVersion {check[1]} ({error_name})")
        self.check = check
        self.error_name = error_name


class SessionListener(Protocol):
    """Session events. Called on kazoo's connection thread: implementations only enqueue."""

    def on_suspended(self) -> None: ...          # connection lost; session may still be alive
    def on_reconnected(self) -> None: ...        # connection back, same session (ephemerals intact)
    def on_session_expired(self) -> None: ...    # session LOST: our ephemerals are gone
    def on_new_session(self) -> None: ...        # connected again, with a new session


def with_ancestors(paths: Iterable[str]) -> list[str]:
    """Every path with its missing ancestors, parents before children, without repeats."""
    out: dict[str, None] = {}
    for path in paths:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            out.setdefault("/" + "/".join(parts[:i]), None)
    return list(out)


class ZooKeeperClient:
    """See the module docstring. Not usable before `start()`; `stop()` ends the session."""

    #: outstanding single async reads during a pipelined bulk read
    read_window = 2000
    #: paths per multi-read request, and multi-read requests in flight
    multi_read_batch = 500
    multi_read_window = 16
    #: transactions in flight during `multi`/`checked_multi`
    write_window = 64

    def __init__(self, connect: str, session_timeout_ms: int = 18000, connection_timeout_ms: int = 6000,
                 auth: ZkAuth | None = None):
        self.connect = connect
        #: digest credentials and whether created znodes get ACLs (default: $PRAHA_ZOOKEEPER_DIGEST)
        self.auth = auth if auth is not None else ZkAuth.from_environment()
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

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> Self:
        """Connect (creating the chroot if missing, as Kafka does) and detect multi-read."""
        if self._client is not None:
            return self
        self._stopping = self._ready = self._lost = False
        client = self._client = self._new_client(self.connect)
        client.add_listener(self._on_state)
        self._connect_or_refuse(client)
        self._check_authenticated(client)
        self._session_id = client.client_id[0] if client.client_id else None
        self._connected.set()
        self._ready = True
        if client.chroot and self.exists("/") is None:
            self._create_chroot()
        self._detect_server_version(client)
        return self

    def _connect_or_refuse(self, client: KazooClient) -> None:
        """Wait for the first session. A login refused while connecting ends kazoo's attempts
        (AUTH_FAILED) without a session, which `KazooClient.start` would report only as a
        time-out once the whole wait had passed: here it is the refusal, at once."""
        connected = client.start_async()
        deadline = time.monotonic() + self.connection_timeout_ms / 1000.0
        while not connected.wait(0.05) and time.monotonic() < deadline:
            if client.client_state == KeeperState.AUTH_FAILED:
                break
        if client.connected:
            return
        refused = client.client_state == KeeperState.AUTH_FAILED
        self._client = None
        client.stop()
        client.close()
        if refused:
            raise ZkAuthenticationError(f"ZooKeeper at {self.connect} refused the login of "
                                        f"{self.auth.sasl_user or 'this client'!r} (wrong secret?)")
        raise ZkUnavailableError(
            f"could not connect to ZooKeeper at {self.connect} within {self.connection_timeout_ms} ms")

    def _check_authenticated(self, client: KazooClient) -> None:
        """Until the SASL login's outcome is known: kazoo reports the session connected before
        the exchange, and a refused login closes the connection some time later (requests may
        even be answered meanwhile). Success is the exchange completed with the server's proof
        (pure-sasl then disposes of the password); refusal is kazoo's AUTH_FAILED, then CLOSED."""
        if not self.auth.sasl_user:
            return
        deadline = time.monotonic() + self.request_timeout
        while time.monotonic() < deadline:
            mechanism = getattr(getattr(client, "sasl_cli", None), "_chosen_mech", None)
            if mechanism is not None and mechanism.complete and getattr(mechanism, "password", "") is None:
                return
            if client.client_state in (KeeperState.AUTH_FAILED, KeeperState.CLOSED):
                self._client = None
                client.stop()
                client.close()
                raise ZkAuthenticationError(f"ZooKeeper at {self.connect} refused the SASL login of "
                                            f"{self.auth.sasl_user!r} (wrong secret?)")
            time.sleep(0.02)

    def _new_client(self, hosts: str) -> KazooClient:
        # Fast reconnect: kazoo's default backoff grows to a minute; a broker must be back
        # within a fraction of its session timeout. Commands retried only briefly.
        return self.auth.kazoo_client(
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
            KazooRetry(max_tries=-1, delay=0.05, backoff=2, max_delay=1.0,
                       deadline=self.request_timeout)(client.ensure_path, chroot)
        except (KazooTimeoutError, RetryFailedError):
            raise ZkUnavailableError(f"could not connect to ZooKeeper at {hosts}") from None
        finally:
            client.stop()
            client.close()

    def _detect_server_version(self, client: KazooClient) -> None:
        """Multi-read needs ZooKeeper 3.6+; an older server would drop the request."""
        try:
            host, port = client.hosts[0]
            answer = four_letter_word(host, port, "srvr", tls=self.auth.tls) or ""
            m = re.search(r"Zookeeper version: (\d+)\.(\d+)\.(\d+)", answer)
        except Exception:  # noqa: BLE001 - four-letter words may be disabled: no multi-read then
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def client(self) -> KazooClient:
        """The kazoo client, for what this class does not cover."""
        if self._client is None:
            raise ZkUnavailableError(f"{type(self).__name__} is not started")
        return self._client

    @property
    def session_id(self) -> int | None:
        return self._session_id

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def set_acls_bulk(self, items: Sequence[tuple[str, list[Any]]]) -> int:
        """Set each path's ACL (pipelined); paths gone meanwhile are skipped. Returns how many were set."""
        client = self.client
        done = 0
        for (path, _), r in zip(items, self._pipelined(items, lambda item: client.set_acls_async(*item))):
            if isinstance(r, BaseException):
                if isinstance(r, NoNodeError):
                    continue
                raise self._wrap(r, f"set ACL of {path}")
            done += 1
        return done

    def ensure_paths(self, paths: Iterable[str]) -> None:
        """Create each path and its ancestors if missing (pipelined, parents first: ZooKeeper
        serves one client's requests in order); existing ones are fine."""
        ordered = with_ancestors(paths)

        def once() -> None:
            client = self.client
            results = self._pipelined(ordered, lambda p: client.create_async(p, b""))
            for path, r in zip(ordered, results):
                if isinstance(r, BaseException) and not isinstance(r, NodeExistsError):
                    raise self._wrap(r, f"create {path}")

        self._retrying(f"create {len(ordered)} paths", once)

    # -- session events ---------------------------------------------------------------------
    def add_session_listener(self, listener: SessionListener) -> None:
        """Register a listener; its methods run on kazoo's thread and must only enqueue."""
        with self._lock:
            self._listeners.append(listener)

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
        if isinstance(exc, CONNECTION_ERRORS) or self._client is None:
            return ZkUnavailableError(f"ZooKeeper unavailable during {what}: {type(exc).__name__}")
        return ZkError(f"ZooKeeper error during {what}: {exc!r}")

    def _get(self, async_result: Any) -> Any:
        """Wait for a kazoo request: its value, or its kazoo exception raised."""
        try:
            return async_result.get(timeout=self.request_timeout)
        except KazooTimeoutError:
            raise ZkUnavailableError(f"no ZooKeeper response within {self.request_timeout:.1f} s") from None

    def _outcome(self, async_result: Any) -> Any:
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

    def _pipelined_iter(self, items: Sequence[T], issue: Callable[[T], Any], window: int | None = None
                        ) -> Iterator[tuple[int, Any]]:
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

    def _retrying(self, what: str, fn: Callable[[], T]) -> T:
        """Run a request that is safe to repeat (a read, or a write whose repeat is recognised),
        waiting across reconnections until the request timeout: Kafka's ZooKeeper client waits
        for the connection to come back rather than failing on one ConnectionLoss."""
        deadline = time.monotonic() + self.request_timeout
        while True:
            try:
                return fn()
            except (ZkUnavailableError, *CONNECTION_ERRORS) as e:
                remaining = deadline - time.monotonic()
                if self._stopping or self._client is None or remaining <= 0:
                    if isinstance(e, ZkUnavailableError):
                        raise ZkUnavailableError(f"ZooKeeper unavailable during {what}: {e}") from None
                    raise self._wrap(e, what) from None
                self._connected.wait(min(remaining, 1.0))
            except KazooException as e:
                raise self._wrap(e, what) from None

    # -- reads ------------------------------------------------------------------------------
    def get_data(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        def once() -> tuple[bytes, ZnodeStat] | None:
            try:
                data, stat = self._get(self.client.get_async(path))
            except NoNodeError:
                return None
            return (data or b""), stat
        return self._retrying(f"get {path}", once)

    def get_children(self, path: str) -> list[str] | None:
        def once() -> list[str] | None:
            try:
                children: list[str] = self._get(self.client.get_children_async(path))
                return children
            except NoNodeError:
                return None
        return self._retrying(f"get children {path}", once)

    def exists(self, path: str) -> ZnodeStat | None:
        return self._retrying(f"exists {path}", lambda: self._get(self.client.exists_async(path)))

    def get_data_bulk(self, paths: Iterable[str], use_multi_read: bool | None = None,
                      multi_read_batch: int | None = None) -> dict[str, tuple[bytes, ZnodeStat] | None]:
        """Data and stat of each path (None if absent). Multi-read by default when the server has
        it; `multi_read_batch` (paths per request) bounds a response's size for large znodes."""
        return self._bulk(list(dict.fromkeys(paths)), GET_DATA_OPCODE, use_multi_read, multi_read_batch)

    def get_children_bulk(self, paths: Iterable[str], use_multi_read: bool | None = None
                          ) -> dict[str, list[str] | None]:
        """Children of each path (None if absent)."""
        return self._bulk(list(dict.fromkeys(paths)), GET_CHILDREN_OPCODE, use_multi_read)

    def stream_data(self, paths: Sequence[str], consume: Callable[[int, tuple[bytes, ZnodeStat] | None], None],
                    restart: Callable[[], None], multi_read_batch: int | None = None,
                    consume_batch: Callable[[int, list[tuple[bytes, ZnodeStat]]], None] | None = None) -> None:
        """`consume(i, (data, stat) or None if absent)` for each path in order, as the answers
        come in, while the later reads are in flight. A read interrupted by a lost connection
        starts over after `restart()`, within the request timeout; any other error raises.
        With `consume_batch`, a multi-read answer in which every path was found is handed over
        whole instead, as `consume_batch(index of its first path, [(data, stat), ...])`: the
        same values, without a call per path (a failover reads 100k partition states)."""
        self._bulk_each(list(paths), GET_DATA_OPCODE, None, multi_read_batch, consume, restart, consume_batch)

    def _bulk(self, paths: list[str], opcode: int, use_multi_read: bool | None,
              multi_read_batch: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}

        def put(i: int, value: Any) -> None:
            out[paths[i]] = value
        self._bulk_each(paths, opcode, use_multi_read, multi_read_batch, put, out.clear)
        return out

    def _bulk_each(self, paths: list[str], opcode: int, use_multi_read: bool | None, multi_read_batch: int | None,
                   consume: Callable[[int, Any], None], restart: Callable[[], None],
                   consume_batch: Callable[[int, list[Any]], None] | None = None) -> None:
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
            for b, batch_result in self._pipelined_iter(batches, lambda ops: multi_read_async(client, ops),
                                                        window=self.multi_read_window):
                if isinstance(batch_result, BaseException):
                    raise self._wrap(batch_result, "multi-read")
                if consume_batch is not None and all(type(r) is tuple for r in batch_result):
                    consume_batch(b * step, batch_result)  # every path found: (data, stat) each
                    continue
                for k, r in enumerate(batch_result, b * step):
                    one(k, r)
        self._retrying(what, once)

    # -- batched writes -----------------------------------------------------------------------
    def multi(self, ops: Sequence[ZkOp], batch_size: int = 100) -> list[WriteResult]:
        """Batched writes, one WriteResult per op; the outcome rules of `checked_multi`."""
        return self._run_multi(ops, None, batch_size)

    def checked_multi(self, ops: Sequence[ZkOp], check: VersionCheck, batch_size: int = 100) -> list[WriteResult]:
        """Apply `ops` in transactions of ≤ batch_size, each starting with `check`; one
        WriteResult per op.

        A transaction fails as a whole: its failing op gets its outcome, the others are
        retried in new transactions until every op has one. If the check fails,
        `VersionCheckFailedError` is raised and none of this call's later writes is applied.
        Ops in one transaction apply in order; after a retry, ops of different transactions
        may apply out of order, so put ops that depend on each other (create a parent, then
        its child) in separate calls."""
        return self._run_multi(ops, check, batch_size)

    def checked_write(self, op: ZkOp, check: VersionCheck) -> tuple[WriteResult, Any]:
        """`checked_multi([op], check)[0]`, plus kazoo's raw result (the ZnodeStat of a set):
        one transaction, the same outcomes and errors."""
        try:
            res = self._get(self._commit([op], [0], check))
        except KazooException as e:
            raise self._wrap(e, "multi-op write") from None
        if isinstance(res[0], BaseException) and not isinstance(res[0], ROLLED_BACK_ERRORS):
            raise VersionCheckFailedError(check, type(res[0]).__name__)
        r = res[1]
        if isinstance(r, BaseException):
            if isinstance(r, ROLLED_BACK_ERRORS):
                raise ZkError(f"transaction rolled back without a failing operation: {res!r}")
            return outcome_of_error(r), None
        return self._success(op, r), r

    def _commit(self, ops: Sequence[ZkOp], idx: list[int], check: VersionCheck | None) -> Any:
        """Send one transaction: the version check (if any), then the ops at `idx`.

        The kazoo request objects are built here as `TransactionRequest` would build them
        (same argument checks, same flags and ACL), but with the cheap chroot prefix of
        `chroot.chrooted`: kazoo's path normalisation was most of a 10k-partition write's CPU
        time. Anything `TransactionRequest` would refuse or treat specially goes through it."""
        client = self.client
        tx = client.transaction()
        operations = tx.operations
        if check is not None:
            if type(check[0]) is str and type(check[1]) is int:
                operations.append(CheckVersion(chrooted(client, check[0]), check[1]))
            else:
                tx.check(*check)
        acl_for = self.auth.acl_for
        for i in idx:
            op = ops[i]
            if type(op) is SetDataOp:
                if type(op.path) is str and type(op.data) is bytes and type(op.version) is int:
                    operations.append(SetData(chrooted(client, op.path), op.data, op.version))
                else:
                    tx.set_data(op.path, op.data, op.version)
            elif type(op) is CreateOp:
                if (type(op.path) is str and type(op.data) is bytes and type(op.ephemeral) is bool
                        and type(op.sequential) is bool):
                    acl = acl_for(op.path) or OPEN_ACL_UNSAFE
                    flags = (1 if op.ephemeral else 0) | (2 if op.sequential else 0)
                    operations.append(Create(chrooted(client, op.path), op.data, acl, flags))
                else:
                    tx.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)
            elif type(op) is DeleteOp:
                if type(op.path) is str and type(op.version) is int:
                    operations.append(Delete(chrooted(client, op.path), op.version))
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

    def _run_multi(self, ops: Sequence[ZkOp], check: VersionCheck | None, batch_size: int) -> list[WriteResult]:
        """The batching loop of `checked_multi`/`multi` (transactions pipelined, failures split off)."""
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
            if check is not None and isinstance(res[0], BaseException) and not isinstance(res[0], ROLLED_BACK_ERRORS):
                raise VersionCheckFailedError(check, type(res[0]).__name__)
            res = res[skip:]
            failed_at = next((k for k, r in enumerate(res)
                              if isinstance(r, BaseException) and not isinstance(r, ROLLED_BACK_ERRORS)), None)
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
        return cast(list[WriteResult], results)  # every op has its outcome by now

    @staticmethod
    def _success(op: ZkOp, result: Any) -> WriteResult:
        if isinstance(op, SetDataOp):
            return WriteResult(WriteOutcome.OK, result.version)
        if isinstance(op, CreateOp):
            return WriteResult(WriteOutcome.OK, 0, created_path=result)
        return WriteResult(WriteOutcome.OK)

    def delete_trees(self, paths: Iterable[str], check: VersionCheck | None = None) -> None:
        """Delete each path with its subtree, deepest level first (absent is fine); checked
        when `check` is given. Listing uses bulk reads, deleting batched writes."""
        levels: list[list[str]] = []
        frontier = list(dict.fromkeys(paths))
        while frontier:
            children = self.get_children_bulk(frontier)
            existing = [p for p in frontier if children[p] is not None]
            levels.append(existing)
            frontier = [f"{p.rstrip('/')}/{c}" for p in existing for c in children[p] or ()]
        for level in reversed(levels):
            if not level:
                continue
            ops = [DeleteOp(p) for p in level]
            results = self.multi(ops) if check is None else self.checked_multi(ops, check)
            failed = [
                (p, r) for p, r in zip(level, results) if r.outcome not in (WriteOutcome.OK, WriteOutcome.NO_NODE)
            ]
            if failed:
                raise ZkError(f"could not delete {failed[0][0]}: {failed[0][1]} (a child appeared meanwhile?)")

    # -- watches --------------------------------------------------------------------------------------
    def watch_data(self, path: str, callback: WatchCallback, group: str | None = None) -> WatchHandle:
        """Fire `callback(WatchEvent)` on every creation, change and deletion of `path`
        (works while it is absent). Callbacks run on kazoo's thread: enqueue only."""
        return self._watch(path, WatchKind.DATA, callback, group)

    def watch_data_many(self, paths: Iterable[str], callback_for_path: Callable[[str], WatchCallback],
                        group: str | None = None, wait: bool = True) -> dict[str, WatchHandle]:
        """`watch_data` for many paths: all are armed first, then waited for together, so the
        cost is about one round trip instead of one per path (a failover watches every topic).
        `callback_for_path(path)` gives each path's callback. Returns path → handle. With
        `wait=False` it returns once the requests are queued; `wait_armed(handles)` waits for
        them (a request queued before a read is answered before it, so the watch is in place
        when the read is served)."""
        client = self.client
        handles = {path: WatchHandle(client, path, WatchKind.DATA, callback_for_path(path), group, self._forget_watch)
                   for path in dict.fromkeys(paths)}
        with self._lock:
            self._watches.update(handles.values())
        for h in handles.values():
            h.arm()
        if wait:
            self.wait_armed(handles.values())
        return handles

    def wait_armed(self, handles: Iterable[WatchHandle]) -> None:
        """Until ZooKeeper has registered each watch (or the request timeout has passed)."""
        deadline = time.monotonic() + self.request_timeout
        for h in handles:  # registered server-side before the caller reads
            h.wait_armed(max(0.0, deadline - time.monotonic()))

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
