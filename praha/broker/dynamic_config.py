"""Dynamic config on a broker: Kafka's config change notices, applied as they come.

Admin tools write an entity's config (`/config/topics/<t>`, `/config/brokers/<id>`) and
then a sequential notice `/config/changes/config_change_<seq>` naming it. Here:
1. at start: read this broker's config (`/config/brokers/<default>`, overridden by
   `/config/brokers/<id>`) and remember the highest notice present (what older notices
   describe is in the configs just read);
2. on every change of `/config/changes`'s children (the watch re-arms itself), read the
   notices above the last one handled, in sequence order;
3. per notice: "topics/<t>" → `on_topic(t)`; "brokers/<id>" or "brokers/<default>" →
   re-read our broker config and `on_broker(config)`; "clients/<id>", "users/<u>" and
   "users/<u>/clients/<id>" (client quotas) → `on_quota(entity path)`; "groups/<g>" (GROUP
   configs) → `on_group(g)`; other entities are ignored; a notice that does not decode is logged and skipped;
4. notices older than 15 minutes are deleted (Kafka's brokers do the same), so the
   directory does not grow without bound.
Callbacks run on this listener's own thread: callers hop to their event loop themselves.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from praha.errors import ZNodeDecodeError
from praha.zk import znodes as zn
from praha.zk.ops import DeleteOp

if TYPE_CHECKING:
    from praha.zk.store import ZkStore
    from praha.zk.watches import WatchEvent, WatchHandle

log = logging.getLogger(__name__)

NOTICE_EXPIRY_MS = 15 * 60 * 1000


def notice_sequence(name: str) -> int | None:
    """The sequence number of `config_change_<seq>`, None for another name."""
    if not name.startswith(zn.CONFIG_CHANGE_PREFIX):
        return None
    digits = name[len(zn.CONFIG_CHANGE_PREFIX):]
    return int(digits) if digits.isdigit() else None


class ConfigChangeListener:
    def __init__(self, store: ZkStore, broker_id: int, on_topic: Callable[[str], None],
                 on_broker: Callable[[dict[str, str]], None], expiry_ms: int = NOTICE_EXPIRY_MS,
                 on_quota: Callable[[str], None] | None = None, on_group: Callable[[str], None] | None = None):
        self.store = store
        self.on_quota = on_quota
        self.on_group = on_group
        self.broker_id = broker_id
        self.on_topic = on_topic
        self.on_broker = on_broker
        self.expiry_ms = expiry_ms
        self.last_handled = -1
        self.notices_handled = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="config-changes")
        self._watch: WatchHandle | None = None
        self._stopped = False

    def start(self) -> dict[str, str]:
        """Read the broker config, note the newest notice, start watching. Returns the config."""
        names = self.store.get_children(zn.CONFIG_CHANGES_PATH) or []
        seqs = [s for s in map(notice_sequence, names) if s is not None]
        self.last_handled = max(seqs, default=-1)
        config = self.broker_config()
        self._watch = self.store.watch_children(zn.CONFIG_CHANGES_PATH, self._on_watch, group="config-changes")
        return config

    def stop(self) -> None:
        self._stopped = True
        if self._watch is not None:
            self._watch.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def broker_config(self) -> dict[str, str]:
        """This broker's dynamic config: `<default>` overridden by its own id's."""
        paths = [zn.config_broker_path(zn.DEFAULT_BROKER_ENTITY), zn.config_broker_path(self.broker_id)]
        got = self.store.get_data_bulk(paths)
        merged: dict[str, str] = {}
        for path in paths:
            item = got.get(path)
            if item is None:
                continue
            try:
                merged.update(zn.decode_config(item[0], path))
            except ZNodeDecodeError as e:
                log.warning("ignoring the dynamic broker config in %s: %s", path, e)
        return merged

    def _on_watch(self, _event: WatchEvent) -> None:
        if not self._stopped:  # kazoo's thread: hand over, never block it
            try:
                self._executor.submit(self._process)
            except RuntimeError:  # shut down meanwhile
                pass

    def _process(self) -> None:
        try:
            self.process_new_notices()
        except Exception as e:  # noqa: BLE001 - ZooKeeper may be away; the next change retries
            log.warning("could not process config change notices: %r", e)

    def process_new_notices(self) -> int:
        """Handle the notices above the last one handled; returns how many."""
        names = self.store.get_children(zn.CONFIG_CHANGES_PATH) or []
        by_seq = sorted((s, n) for n in names if (s := notice_sequence(n)) is not None)
        new = [(s, n) for s, n in by_seq if s > self.last_handled]
        paths = {n: f"{zn.CONFIG_CHANGES_PATH}/{n}" for _, n in by_seq}
        got = self.store.get_data_bulk(paths.values())
        topics: list[str] = []
        quota_entities: list[str] = []
        groups: list[str] = []
        broker_changed = False
        for seq, name in new:
            item = got.get(paths[name])
            self.last_handled = seq
            if item is None:  # purged meanwhile
                continue
            try:
                entity_type, entity = zn.decode_config_change(item[0], paths[name])
            except ZNodeDecodeError as e:
                log.warning("skipping config change notice %s: %s", name, e)
                continue
            if entity_type == "topics":
                topics.append(entity)
            elif entity_type == "brokers" and entity in (zn.DEFAULT_BROKER_ENTITY, str(self.broker_id)):
                broker_changed = True
            elif entity_type in ("clients", "users"):
                quota_entities.append(f"{entity_type}/{entity}")
            elif entity_type == "groups":
                groups.append(entity)
        if new:
            log.info("config change notices: %d new (%d topics, %d quota entities, broker config %s)", len(new),
                     len(set(topics)), len(set(quota_entities)), "changed" if broker_changed else "unchanged")
            self.notices_handled += len(new)
        for topic in dict.fromkeys(topics):
            self.on_topic(topic)
        if broker_changed:
            self.on_broker(self.broker_config())
        if self.on_quota is not None:
            for entity_path in dict.fromkeys(quota_entities):
                self.on_quota(entity_path)
        if self.on_group is not None:
            for group in dict.fromkeys(groups):
                self.on_group(group)
        self._purge_expired(got)
        return len(new)

    def _purge_expired(self, got: dict[str, Any]) -> None:
        cutoff = time.time() * 1000 - self.expiry_ms
        old = [DeleteOp(path) for path, item in got.items() if item is not None and item[1].ctime < cutoff]
        if old:
            self.store.multi(old)  # another broker may have deleted some first: outcomes ignored
