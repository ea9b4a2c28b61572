"""The primary's seat: one registry at a time writes `_schemas`, the one holding the
ephemeral znode `/schema_registry/primary` (its broker id and URL); the others forward
writes to it. Ids come from a counter znode, advanced with a version check, so an id is
never handed out twice, whichever primary (or stale one) asks."""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from praha.registry import errors

log = logging.getLogger(__name__)
ROOT = "/schema_registry"
PRIMARY_PATH = f"{ROOT}/primary"
ID_COUNTER_PATH = f"{ROOT}/schema_id_counter"


class PrimarySeat:
    def __init__(self, client: Any, broker_id: int, url: str, on_change: Callable[[], None] = lambda: None):
        self.client = client  # kazoo
        self.broker_id = broker_id
        self.url = url
        self._holder: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._on_change = on_change
        self._stopped = False

    def start(self) -> None:
        self.client.ensure_path(ROOT)
        self._elect()
        self.client.DataWatch(PRIMARY_PATH, self._watch)

    def stop(self) -> None:
        self._stopped = True
        try:
            data, _ = self.client.get(PRIMARY_PATH)
            if json.loads(data).get("broker_id") == self.broker_id:
                self.client.delete(PRIMARY_PATH)
        except Exception:  # noqa: BLE001 - the session may be gone already
            pass

    def _elect(self) -> None:
        try:
            self.client.create(PRIMARY_PATH, json.dumps({"broker_id": self.broker_id, "url": self.url}).encode(),
                               ephemeral=True)
            log.info("schema registry: broker %d is the primary (%s)", self.broker_id, self.url)
        except NodeExistsError:
            pass

    def _watch(self, data: bytes | None, _stat: Any) -> bool:
        """kazoo's thread: remember the holder; an empty seat gets a candidate (kazoo async)."""
        if self._stopped:
            return False
        with self._lock:
            self._holder = json.loads(data) if data else None
        if data is None:
            threading.Thread(target=self._elect, name="registry-election", daemon=True).start()
        self._on_change()
        return True

    def holder(self) -> dict[str, Any] | None:
        with self._lock:
            if self._holder is not None:
                return self._holder
        try:
            data, _ = self.client.get(PRIMARY_PATH)
            return dict(json.loads(data))
        except NoNodeError:
            return None

    def is_primary(self) -> bool:
        h = self.holder()
        return h is not None and h.get("broker_id") == self.broker_id

    def primary_url(self) -> str:
        h = self.holder()
        if h is None:
            raise errors.forwarding_error("no primary registry is elected yet")
        return str(h["url"])

    def allocate_id(self, at_least: int) -> int:
        """The next schema id: above the counter and above `at_least` (the largest id read)."""
        for _ in range(100):
            try:
                data, stat = self.client.get(ID_COUNTER_PATH)
            except NoNodeError:
                try:
                    self.client.create(ID_COUNTER_PATH, b"0")
                except NodeExistsError:
                    pass
                continue
            new = max(int(data or b"0"), at_least) + 1
            try:
                self.client.set(ID_COUNTER_PATH, str(new).encode(), version=stat.version)
                return new
            except BadVersionError:
                continue
        raise errors.store_error("could not advance the schema id counter")
