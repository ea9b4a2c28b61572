"""The watches on `/brokers/topics/<t>` that report partition expansion.

Each watched topic's znode change becomes a `PartitionModifications(topic)` event. Topics
are watched when the controller learns them (failover, topic creation) and unwatched when
they are deleted or the controller resigns.
"""
from __future__ import annotations

from collections.abc import Iterable

from praha.controller import events as ev
from praha.controller.services import ControllerServices
from praha.controller.store_api import Watch, WatchCallback
from praha.zk import znodes


class TopicWatches:
    def __init__(self, services: ControllerServices):
        self._services = services
        self._watches: dict[str, Watch] = {}
        self._pending: list[Watch] = []

    def watch(self, topics: Iterable[str], wait: bool = True) -> None:
        """Watch each topic's znode; armed together (one round trip, not one per topic).
        `wait=False`: only queued (the failover reads the partition states meanwhile);
        `wait_armed()` waits for them."""
        new = {znodes.topic_path(t): t for t in topics if t not in self._watches}
        if not new:
            return
        on_watch = self._services.on_watch

        def callback_for(path: str) -> WatchCallback:
            topic = new[path]
            return on_watch(lambda: ev.PartitionModifications(topic))

        handles = self._services.store.watch_data_many(list(new), callback_for, wait=wait)
        for path, handle in handles.items():
            self._watches[new[path]] = handle
        if not wait:
            self._pending.extend(handles.values())

    def wait_armed(self) -> None:
        """Until every watch `watch(..., wait=False)` queued is registered."""
        pending, self._pending = self._pending, []
        if pending:
            self._services.store.wait_armed(pending)

    def unwatch(self, topic: str) -> None:
        handle = self._watches.pop(topic, None)
        if handle is not None:
            handle.cancel()

    def unwatch_all(self) -> None:
        self._pending = []
        for topic in list(self._watches):
            self.unwatch(topic)

    def __contains__(self, topic: str) -> bool:
        return topic in self._watches

