"""Watches that re-register themselves (a ZooKeeper watch fires once).

Life of a watch:
  1. `arm()` sends exists (data watch) or getChildren (children watch) with kazoo's watcher
     set; a children watch on an absent node falls back to an exists watch, so it fires
     when the node is created;
  2. ZooKeeper fires: the handler first re-arms (the re-arm request is queued before any
     read the user's callback triggers, and one client's requests are served in order, so
     no change is lost), then calls the user's callback with a `WatchEvent`;
  3. connection lost: kazoo drops every client-side watcher (it does not send SetWatches);
     on reconnection the store calls `arm(resync=True)` on each live watch, which compares
     the node's stat with the last one seen and fires a synthetic event if it changed;
  4. `cancel()`: the watch stops firing and is not re-armed (ZooKeeper may still hold one
     server-side trigger; it is ignored when it fires).

Callbacks run on kazoo's threads: they must only enqueue work (no ZooKeeper calls that
wait, no blocking), as kazoo requires.
"""
from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, NoNodeError, SessionExpiredError
from kazoo.protocol.states import EventType, WatchedEvent

log = logging.getLogger(__name__)


class WatchKind(Enum):
    DATA = "data"
    CHILDREN = "children"


class WatchEventType(Enum):
    CREATED = "created"
    DELETED = "deleted"
    CHANGED = "changed"
    CHILDREN_CHANGED = "children_changed"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    path: str
    type: WatchEventType
    #: True for an event synthesised after a reconnection (a change seen by comparing stats).
    resync: bool = False


WatchCallback = Callable[[WatchEvent], None]

_CONNECTION_ERRORS = (ConnectionLoss, SessionExpiredError, ConnectionClosedError)
_ZK_EVENT_TYPES = {
    EventType.CREATED: WatchEventType.CREATED,
    EventType.DELETED: WatchEventType.DELETED,
    EventType.CHANGED: WatchEventType.CHANGED,
    EventType.CHILD: WatchEventType.CHILDREN_CHANGED,
}


class WatchHandle:
    """A live watch on one path; `cancel()` stops it for good."""

    def __init__(self, client: KazooClient, path: str, kind: WatchKind, callback: WatchCallback,
                 group: str | None, on_cancel: Callable[[WatchHandle], None]):
        self.path = path
        self.kind = kind
        self.group = group
        self._client = client
        self._callback = callback
        self._on_cancel = on_cancel
        self._cancelled = False
        self._lock = threading.Lock()
        self._token: Any = None
        self._armed = threading.Event()

    @property
    def active(self) -> bool:
        return not self._cancelled

    def cancel(self) -> None:
        if not self._cancelled:
            self._cancelled = True
            self._on_cancel(self)

    # -- arming ---------------------------------------------------------------------------
    def arm(self, resync: bool = False) -> None:
        """Register the ZooKeeper watch (non-blocking; safe on kazoo's threads)."""
        if self._cancelled:
            return
        try:
            if self.kind is WatchKind.DATA:
                ar = self._client.exists_async(self.path, watch=self._on_zk_event)
            else:
                ar = self._client.get_children_async(self.path, watch=self._on_zk_event, include_data=True)
        except Exception:  # client closed: the store re-arms on the next connection
            return
        ar.rawlink(functools.partial(self._on_armed, resync))

    def wait_armed(self, timeout: float) -> bool:
        return self._armed.wait(timeout)

    def _arm_exists_fallback(self, resync: bool) -> None:
        try:
            ar = self._client.exists_async(self.path, watch=self._on_zk_event)
        except Exception:
            return
        ar.rawlink(functools.partial(self._on_fallback_armed, resync))

    def _on_armed(self, resync: bool, ar: Any) -> None:
        try:
            value = ar.get(block=False)
        except NoNodeError:  # children watch on an absent node
            self._arm_exists_fallback(resync)
            return
        except _CONNECTION_ERRORS:
            return  # re-armed by the store when the connection is back
        except Exception as e:
            log.warning("cannot watch %s: %r", self.path, e)
            self._armed.set()
            return
        if self.kind is WatchKind.DATA:
            token = None if value is None else (value.czxid, value.mzxid)
        else:
            _children, stat = value
            token = (stat.czxid, stat.cversion)
        self._set_token(token, resync)

    def _on_fallback_armed(self, resync: bool, ar: Any) -> None:
        try:
            stat = ar.get(block=False)
        except _CONNECTION_ERRORS:
            return
        except Exception as e:
            log.warning("cannot watch %s: %r", self.path, e)
            self._armed.set()
            return
        if stat is not None:  # created meanwhile: watch its children after all
            self._set_token(None, False)
            self.arm(False)
            self._fire(WatchEventType.CREATED, resync)
            return
        self._set_token(None, resync)

    def _set_token(self, token: Any, resync: bool) -> None:
        with self._lock:
            old, self._token = self._token, token
        self._armed.set()
        if resync and old != token:
            if token is None:
                kind = WatchEventType.DELETED
            elif old is None:
                kind = WatchEventType.CREATED
            elif self.kind is WatchKind.CHILDREN:
                kind = WatchEventType.CHILDREN_CHANGED
            else:
                kind = WatchEventType.CHANGED
            self._fire(kind, True)

    # -- firing ---------------------------------------------------------------------------
    def _on_zk_event(self, event: WatchedEvent) -> None:
        if self._cancelled or event.type == EventType.NONE:
            return  # NONE: connection state change; the store re-arms on reconnection
        self.arm()
        kind = _ZK_EVENT_TYPES.get(event.type)
        if kind is not None:
            self._fire(kind, False)

    def _fire(self, kind: WatchEventType, resync: bool) -> None:
        if self._cancelled:
            return
        try:
            self._callback(WatchEvent(self.path, kind, resync))
        except Exception:
            log.exception("watch callback for %s failed", self.path)
