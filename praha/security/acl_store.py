"""The ACLs in ZooKeeper (`acl_codec` formats), and every broker's cache of them.

Writes (`add_acls`, `remove_acls`; the CreateAcls/DeleteAcls APIs and `praha acls`):
1. read the resource's ACL znode; 2. write the merged list (conditional on its version,
retried on a race), deleting the znode when none are left; 3. create the change notice.

`AclCache` (one per broker): loads every ACL at start, then watches both change-notice
directories; a notice reloads the ACLs (on its own thread, never kazoo's), so a change is
in force on every broker as soon as its watch fires.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from praha.errors import PrahaError
from praha.security.acl import STORED_TYPES, AccessControlEntry, AclBinding, AclFilter, PatternType, ResourcePattern
from praha.security.acl_codec import (
    EXTENDED_CHANGES,
    LITERAL_CHANGES,
    change_notice,
    decode_acls,
    encode_acls,
    resource_path,
    type_root,
)
from praha.zk.ops import CreateOp, DeleteOp, SetDataOp, WriteOutcome
from praha.zk.store import ZkStore

log = logging.getLogger(__name__)
_ATTEMPTS = 10


def load_all(store: ZkStore) -> list[AclBinding]:
    out: list[AclBinding] = []
    for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        for rtype in STORED_TYPES:
            root = type_root(pattern_type, rtype)
            names = store.get_children(root) or []
            got = store.get_data_bulk([f"{root}/{n}" for n in names])
            for n in names:
                item = got.get(f"{root}/{n}")
                if item is not None:
                    out.extend(decode_acls(ResourcePattern(rtype, n, pattern_type), item[0]))
    return out


def _update(store: ZkStore, pattern: ResourcePattern,
            change: Callable[[list[AccessControlEntry]], list[AccessControlEntry]]) -> tuple[list[AccessControlEntry],
                                                                                           list[AccessControlEntry]]:
    """Apply `change` to the resource's entries with a conditional write; (before, after)."""
    path = resource_path(pattern)
    for _ in range(_ATTEMPTS):
        got = store.get_data(path)
        before = [b.entry for b in decode_acls(pattern, got[0] if got else None)]
        after = change(before)
        if after == before:
            return before, after
        if got is None:
            store.ensure_paths([path.rsplit("/", 1)[0]])
            op: Any = CreateOp(path, encode_acls(after))
        elif after:
            op = SetDataOp(path, encode_acls(after), got[1].version)
        else:
            op = DeleteOp(path, got[1].version)
        result = store.multi([op])[0]
        if result.ok:
            notice_path, data = change_notice(pattern)
            store.ensure_paths([notice_path.rsplit("/", 1)[0]])
            store.multi([CreateOp(notice_path, data, sequential=True)])
            return before, after
        if result.outcome not in (WriteOutcome.BAD_VERSION, WriteOutcome.NODE_EXISTS, WriteOutcome.NO_NODE):
            raise PrahaError(f"could not write {path}: {result.outcome.value}")
    raise PrahaError(f"could not write {path}: changed concurrently {_ATTEMPTS} times")


def add_acls(store: ZkStore, pattern: ResourcePattern, entries: list[AccessControlEntry]) -> None:
    _update(store, pattern, lambda old: old + [e for e in dict.fromkeys(entries) if e not in old])


def remove_acls(store: ZkStore, acl_filter: AclFilter) -> list[AclBinding]:
    """Remove every ACL the filter matches; the removed bindings."""
    removed: list[AclBinding] = []
    patterns = dict.fromkeys(b.pattern for b in load_all(store) if acl_filter.matches(b))
    for pattern in patterns:
        def keep(old: list[AccessControlEntry], p: ResourcePattern = pattern) -> list[AccessControlEntry]:
            return [e for e in old if not acl_filter.matches(AclBinding(p, e))]

        before, after = _update(store, pattern, keep)
        removed.extend(AclBinding(pattern, e) for e in before if e not in after)
    return removed


class AclCache:
    """Every ACL, kept current from the change notices."""

    def __init__(self, store: ZkStore):
        self.store = store
        self.bindings: tuple[AclBinding, ...] = ()
        self.reloads = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="acl-changes")
        self._watches: list[Any] = []
        self._lock = threading.Lock()
        self._stopped = False

    def start(self) -> None:
        self.store.ensure_paths([LITERAL_CHANGES, EXTENDED_CHANGES])
        self.reload()
        for path in (LITERAL_CHANGES, EXTENDED_CHANGES):
            self._watches.append(self.store.watch_children(path, self._on_watch, group="acl-changes"))

    def stop(self) -> None:
        self._stopped = True
        for w in self._watches:
            w.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def reload(self) -> None:
        with self._lock:
            bindings = tuple(load_all(self.store))
            self.bindings = bindings
            self.reloads += 1
        log.info("ACLs loaded: %d bindings (reload %d)", len(bindings), self.reloads)

    def _on_watch(self, _event: object) -> None:
        if not self._stopped:  # kazoo's thread: hand over
            try:
                self._executor.submit(self._reload_quietly)
            except RuntimeError:
                pass

    def _reload_quietly(self) -> None:
        try:
            self.reload()
        except Exception as e:  # noqa: BLE001 - ZooKeeper may be away; the next notice retries
            log.warning("could not reload ACLs: %r", e)
