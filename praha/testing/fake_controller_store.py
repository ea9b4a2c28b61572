"""An in-memory `ControllerStore` for unit tests of the controller's flows (no ZooKeeper).

It keeps what the flows read and write as plain fields, and applies ZooKeeper's rules
where the flows depend on them: partition state znodes carry a zkVersion and updates are
conditional on it (BAD_VERSION otherwise); creating an existing one is NODE_EXISTS; a
write to a watched state znode fires its data watch, as ZooKeeper does. Epoch fencing is
not modelled (there is only one controller in a unit test).

For the tests to look at: `log` lists the writes in order (("state", tp, leader, isr),
("topic", t), ("admin",)); `writes` counts state znode writes; `watched` lists the paths
watched; `fired` the paths whose watch fired; `streamed` counts streamed reads. Faults:
`corrupt` partitions have a state znode that does not decode; `lose_connection_at`
makes the next streamed read stop at that index and start over (as after a lost
connection).
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence

from praha.common import BrokerInfo, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicAssignment, TopicPartition
from praha.errors import ZNodeDecodeError
from praha.zk import znodes
from praha.zk.ops import WriteOutcome, WriteResult
from praha.zk.watches import WatchEvent, WatchEventType

WatchCallback = Callable[[WatchEvent], None]
StateConsumer = Callable[[TopicPartition, "LeaderIsrAndControllerEpoch | None", "ZNodeDecodeError | None"], None]


class FakeWatch:
    def __init__(self, path: str, callback: WatchCallback):
        self.path = path
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeControllerStore:
    def __init__(self) -> None:
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicAssignment] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.retired_leader_epochs: dict[str, int] = {}
        self.isr_change_notifications: dict[str, set[TopicPartition]] = {}
        #: /log_dir_event_notification children: name → the broker it names
        self.log_dir_events: dict[str, int] = {}
        self.marked_for_deletion: set[str] = set()
        #: /admin/reassign_partitions (None: absent)
        self.admin: dict[TopicPartition, tuple[int, ...]] | None = None
        #: /admin/preferred_replica_election (None: absent)
        self.preferred: set[TopicPartition] | None = None
        self.corrupt: set[TopicPartition] = set()
        self.lose_connection_at: int | None = None
        self.watches: dict[str, FakeWatch] = {}
        self.watched: list[str] = []
        self.fired: list[str] = []
        self.log: list[tuple[object, ...]] = []
        self.writes = 0
        self.streamed = 0

    # ---- set-up helpers -----------------------------------------------------------------------
    def put(self, tp: TopicPartition, leader: int, isr: Iterable[int], leader_epoch: int = 0,
            controller_epoch: int = 1) -> None:
        """A state znode at zkVersion 0, as a leader election long ago left it."""
        self.states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, tuple(isr), leader_epoch, 0),
                                                      controller_epoch)

    def fire(self, path: str) -> None:
        """ZooKeeper's notification of a change of `path`, if it is watched."""
        watch = self.watches.get(path)
        if watch is not None and not watch.cancelled:
            self.fired.append(path)
            watch.callback(WatchEvent(path, WatchEventType.CHANGED))

    # ---- partition states ---------------------------------------------------------------------
    def get_partition_states(
        self, tps: Iterable[TopicPartition], mzxids: dict[TopicPartition, int] | None = None
    ) -> tuple[dict[TopicPartition, LeaderIsrAndControllerEpoch], dict[TopicPartition, ZNodeDecodeError]]:
        ok: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        bad: dict[TopicPartition, ZNodeDecodeError] = {}
        for tp in tps:
            if tp in self.corrupt:
                bad[tp] = ZNodeDecodeError(znodes.tp_state_path(tp), "corrupt")
            elif tp in self.states:
                ok[tp] = self.states[tp]
        return ok, bad

    def stream_partition_states(
        self, tps: Sequence[TopicPartition], consume: StateConsumer, restart: Callable[[], None]
    ) -> None:
        self.streamed += 1
        assert len(set(tps)) == len(tps), "a streamed read names each partition once"
        lose_at, self.lose_connection_at = self.lose_connection_at, None
        restart()
        for i, tp in enumerate(tps):
            if i == lose_at:
                restart()
                break
            self._consume_one(tp, consume)
        else:
            return
        for tp in tps:
            self._consume_one(tp, consume)

    def _consume_one(self, tp: TopicPartition, consume: StateConsumer) -> None:
        if tp in self.corrupt:
            consume(tp, None, ZNodeDecodeError(znodes.tp_state_path(tp), "corrupt"))
        else:
            consume(tp, self.states.get(tp), None)

    def create_partition_states(
        self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch], epoch_zk_version: int
    ) -> dict[TopicPartition, WriteResult]:
        out = {}
        for tp, st in states.items():
            if tp in self.states:
                out[tp] = WriteResult(WriteOutcome.NODE_EXISTS)
                continue
            li = st.leader_and_isr
            self.states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(li.leader, li.isr, li.leader_epoch, 0),
                                                          st.controller_epoch)
            out[tp] = WriteResult(WriteOutcome.OK, 0)
            self.writes += 1
        return out

    def update_partition_states(
        self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch], epoch_zk_version: int
    ) -> dict[TopicPartition, WriteResult]:
        self.log.extend(("state", tp, s.leader_and_isr.leader, s.leader_and_isr.isr) for tp, s in states.items())
        out = {}
        for tp, st in states.items():
            cur = self.states.get(tp)
            li = st.leader_and_isr
            if cur is None:
                out[tp] = WriteResult(WriteOutcome.NO_NODE)
            elif cur.leader_and_isr.zk_version != li.zk_version:
                out[tp] = WriteResult(WriteOutcome.BAD_VERSION)
            else:
                version = li.zk_version + 1
                self.states[tp] = LeaderIsrAndControllerEpoch(
                    LeaderAndIsr(li.leader, li.isr, li.leader_epoch, version), st.controller_epoch)
                out[tp] = WriteResult(WriteOutcome.OK, version)
                self.writes += 1
        for tp, res in out.items():
            if res.ok:
                self.fire(znodes.tp_state_path(tp))
        return out

    # ---- brokers and topics -------------------------------------------------------------------
    def exists(self, path: str) -> object | None:
        present = {
            znodes.REASSIGN_PARTITIONS_PATH: self.admin is not None,
            znodes.PREFERRED_REPLICA_ELECTION_PATH: self.preferred is not None,
        }
        present.update({znodes.topic_path(t): True for t in self.topics})
        return True if present.get(path) else None

    def get_live_brokers(self) -> tuple[dict[int, BrokerInfo], dict[int, ZNodeDecodeError]]:
        return dict(self.brokers), {}

    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        return self.brokers.get(broker_id)

    def get_all_topics(self) -> list[str]:
        return sorted(self.topics)

    def get_topic_assignments(
        self, topics: Iterable[str]
    ) -> tuple[dict[str, TopicAssignment], dict[str, ZNodeDecodeError]]:
        return {t: copy.deepcopy(self.topics[t]) for t in topics if t in self.topics}, {}

    def get_topic_configs(
        self, topics: Iterable[str]
    ) -> tuple[dict[str, dict[str, str]], dict[str, ZNodeDecodeError]]:
        return {t: dict(self.topic_configs[t]) for t in topics if t in self.topic_configs}, {}

    def set_topic_assignments(
        self, assignments: Mapping[str, TopicAssignment], epoch_zk_version: int
    ) -> dict[str, WriteResult]:
        for topic, assignment in assignments.items():
            self.topics[topic] = copy.deepcopy(assignment)
            self.log.append(("topic", topic))
        return {t: WriteResult(WriteOutcome.OK, 0) for t in assignments}

    # ---- ISR change notifications -------------------------------------------------------------
    def get_isr_change_notifications(self) -> tuple[list[str], set[TopicPartition]]:
        names = sorted(self.isr_change_notifications)
        return names, {tp for n in names for tp in self.isr_change_notifications[n]}

    def delete_isr_change_notifications(self, names: Iterable[str], epoch_zk_version: int) -> None:
        for n in names:
            self.isr_change_notifications.pop(n, None)

    # ---- log-dir event notifications (written by brokers whose log directory failed) ----------
    def get_log_dir_event_notifications(self) -> tuple[list[str], set[int]]:
        names = sorted(self.log_dir_events)
        return names, {self.log_dir_events[n] for n in names}

    def delete_log_dir_event_notifications(self, names: Iterable[str], epoch_zk_version: int) -> None:
        for n in names:
            self.log_dir_events.pop(n, None)

    # ---- topic deletion -----------------------------------------------------------------------
    def get_topics_marked_for_deletion(self) -> list[str]:
        return sorted(self.marked_for_deletion)

    def delete_topic_deletion_markers(self, topics: Iterable[str], epoch_zk_version: int) -> None:
        self.marked_for_deletion -= set(topics)

    def delete_topic_znodes(self, topics: Iterable[str], epoch_zk_version: int,
                            last_leader_epochs: Mapping[str, int] | None = None) -> None:
        self.retired_leader_epochs.update(last_leader_epochs or {})
        for t in list(topics):
            self.topics.pop(t, None)
            self.topic_configs.pop(t, None)
            self.marked_for_deletion.discard(t)
            for tp in [tp for tp in self.states if tp.topic == t]:
                del self.states[tp]

    def get_retired_leader_epochs(self, topics: Iterable[str]) -> dict[str, int]:
        return {t: self.retired_leader_epochs[t] for t in topics if t in self.retired_leader_epochs}

    # ---- admin requests -----------------------------------------------------------------------
    def get_reassignments(self) -> dict[TopicPartition, tuple[int, ...]]:
        return dict(self.admin or {})

    def set_reassignments(
        self, reassignment: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int
    ) -> None:
        self.admin = {tp: tuple(r) for tp, r in reassignment.items()} or None
        self.log.append(("admin",))

    def get_preferred_election(self) -> set[TopicPartition]:
        return set(self.preferred or ())

    def delete_preferred_election(self, epoch_zk_version: int) -> None:
        self.preferred = None

    # ---- watches ------------------------------------------------------------------------------
    def watch_data(self, path: str, callback: WatchCallback, group: str | None = None) -> FakeWatch:
        self.watched.append(path)
        watch = self.watches[path] = FakeWatch(path, callback)
        return watch

    def watch_data_many(
        self, paths: Iterable[str], callback_for_path: Callable[[str], WatchCallback], group: str | None = None,
        wait: bool = True,
    ) -> dict[str, FakeWatch]:
        return {p: self.watch_data(p, callback_for_path(p), group) for p in dict.fromkeys(paths)}

    def wait_armed(self, handles: Iterable[FakeWatch]) -> None:
        """Fake watches are armed at once."""

    def watch_children(self, path: str, callback: WatchCallback, group: str | None = None) -> FakeWatch:
        return self.watch_data(path, callback, group)
