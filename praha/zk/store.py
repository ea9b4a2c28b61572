"""`ZkStore`: Kafka's ZooKeeper calls (Kafka's `KafkaZkClient`), on a `ZooKeeperClient`.

Used by the controller's event thread and by the broker (registration, ISR updates); the
admin writes (topic creation, partition changes, configs) are in `admin_zk`. The session,
bulk reads, batched writes and watches are the generic client's (`client.ZooKeeperClient`);
this class adds what needs Kafka's layout (`znodes`, with `fast_codecs` on hot paths):
  - typed reads and writes of Kafka's znodes;
  - fencing: `fenced_multi` and every `epoch_zk_version` write is conditional on the zkVersion
    of `/controller_epoch`, so nothing a deposed controller writes is ever applied;
  - Kafka's controller election (`register_controller_and_increment_epoch`) and broker
    registration (czxid = broker epoch).

Errors: a corrupt znode → `ZNodeDecodeError`; no connection within the request timeout →
`ZkUnavailableError`; a fenced write after the controller epoch moved → `ControllerMovedError`.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
)
from kazoo.protocol.states import ZnodeStat

from praha.common import (
    BrokerInfo,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    TopicPartition,
    new_topic_id,
)
from praha.errors import (
    BrokerIdInUseError,
    ControllerMovedError,
    PrahaError,
    TopicExistsError,
    UnknownTopicError,
    ZNodeDecodeError,
)
from praha.zk import fast_codecs as fast
from praha.zk import znodes as zn
from praha.zk.auth import ZkAuth
from praha.zk.client import (
    ROLLED_BACK_ERRORS,
    VersionCheck,
    VersionCheckFailedError,
    ZkError,
    ZooKeeperClient,
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

# the write ops and outcomes, as before the split (the controller imports WriteOutcome from here)
__all__ = ["CreateOp", "DeleteOp", "SetDataOp", "WriteOutcome", "WriteResult", "ZkError", "ZkOp", "ZkStore"]

log = logging.getLogger(__name__)
K = TypeVar("K")


def _epoch_check(epoch_zk_version: int) -> VersionCheck:
    return (zn.CONTROLLER_EPOCH_PATH, epoch_zk_version)


@contextmanager
def _fenced(epoch_zk_version: int) -> Iterator[None]:
    """A failed check of `/controller_epoch` means this controller was deposed."""
    try:
        yield
    except VersionCheckFailedError as e:
        raise ControllerMovedError(
            f"controller epoch zkVersion is no longer {epoch_zk_version} ({e.error_name}): "
            "this controller has been deposed, its writes are refused") from None


class ZkStore(ZooKeeperClient):
    """See the module docstring. Not usable before `start()`; `stop()` ends the session."""

    def __init__(self, connect: str, session_timeout_ms: int = 18000, connection_timeout_ms: int = 6000,
                 auth: ZkAuth | None = None):
        super().__init__(connect, session_timeout_ms, connection_timeout_ms, auth)
        #: (czxid, version, content, encoded entries or None) of /admin/reassign_partitions as
        #: last read or written here (see get_reassignments)
        self._reassignments_cache: tuple[int, int, dict[TopicPartition, tuple[int, ...]],
                                         fast.ReassignmentFragments | None] | None = None

    def ensure_persistent_paths(self) -> None:
        """Create Kafka's persistent paths (and their parents) if missing."""
        self.ensure_paths(zn.PERSISTENT_PATHS)

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
        error = next((r for r in results if isinstance(r, BaseException) and not isinstance(r, ROLLED_BACK_ERRORS)),
                     None)
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

    def repair_controller_epoch(self, epoch: int) -> int | None:
        """Make `/controller_epoch` at least `epoch`: create it if absent, overwrite it if corrupt
        or lower (conditional on the version read, so a concurrent election is never undone).
        Every election bumps value and version together from 0 (Kafka's way too), so a sound
        znode's value is at least its data version, and the version bounds the epochs elected
        through it even when no live broker has seen the newest: a value below its version is
        also overwritten, with at least the version the write gives it, which keeps that rule.
        A value of `epoch` (and of the version) or more is left alone. Returns the epoch
        written, None when nothing was."""
        got = self.get_data(zn.CONTROLLER_EPOCH_PATH)
        if got is None:
            ops: list[ZkOp] = [CreateOp(zn.CONTROLLER_EPOCH_PATH, zn.encode_controller_epoch(epoch))]
        else:
            try:
                if zn.decode_controller_epoch(got[0]) >= max(epoch, got[1].version):
                    return None
            except ZNodeDecodeError:
                pass
            epoch = max(epoch, got[1].version + 1)
            ops = [SetDataOp(zn.CONTROLLER_EPOCH_PATH, zn.encode_controller_epoch(epoch), got[1].version)]
        return epoch if self.multi(ops)[0].ok else None

    def delete_if_unchanged_corrupt(self, path: str) -> bool:
        """Delete `path` if its data still fails to decode, conditional on the version read (so a
        valid value written meanwhile survives). Only for znodes with a known codec. Returns
        whether it deleted."""
        decode = zn.decoder_for_path(path)
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
        # retried through a lost connection: a create that was applied comes back as our own node
        return self._retrying(f"register broker {info.id}", lambda: self._register_once(info.id, path, data))

    def _register_once(self, broker_id: int, path: str, data: bytes) -> int:
        for _ in range(3):
            try:
                _, stat = self._get(self.client.create_async(path, data, ephemeral=True, include_data=True))
                return int(stat.czxid)
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
                    return int(stat.czxid)
                try:
                    old = zn.decode_broker(broker_id, old_data)
                    where = f"{old.host}:{old.port}"
                except ZNodeDecodeError:
                    where = "an unreadable address"
                raise BrokerIdInUseError(
                    f"broker.id {broker_id} is already registered in ZooKeeper by another live broker at {where} "
                    f"(session 0x{stat.ephemeralOwner:x}); choose another broker.id or stop that broker") from None
            except KazooException as e:
                raise self._wrap(e, f"register broker {broker_id}") from None
        raise ZkError(f"could not register broker {broker_id}: {path} keeps changing")

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
        return int(mine[1].czxid)

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

    def get_or_create_cluster_id(self, new_id: Callable[[], str] = zn.new_cluster_id) -> str:
        """`/cluster/id`, created with a fresh id by the first broker that finds none (retried
        through a lost connection: a create that was applied comes back as NodeExists)."""
        return self._retrying("create /cluster/id", lambda: self._cluster_id_once(new_id))

    def _cluster_id_once(self, new_id: Callable[[], str]) -> str:
        got = self.get_data(zn.CLUSTER_ID_PATH)
        if got is not None:
            return zn.decode_cluster_id(got[0])
        try:
            self.ensure_paths([zn.CLUSTER_PATH])
            cluster_id = new_id()
            self._get(self.client.create_async(zn.CLUSTER_ID_PATH, zn.encode_cluster_id(cluster_id)))
            return cluster_id
        except NodeExistsError:  # another broker was first
            got = self.get_data(zn.CLUSTER_ID_PATH)
            if got is None:
                raise ZkError("/cluster/id vanished right after it was created") from None
            return zn.decode_cluster_id(got[0])
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

    def _decode_bulk(self, keys: Iterable[K], path_of: Callable[[K], str],
                     decode: Callable[[str, bytes, ZnodeStat], Any], multi_read_batch: int | None = None,
                     mzxids: dict[K, int] | None = None) -> tuple[dict[K, Any], dict[K, ZNodeDecodeError]]:
        """Read and decode; each result is decoded as it arrives, while later reads are in flight.
        With `mzxids`, also the zxid of each znode's last write, by key."""
        keys = list(dict.fromkeys(keys))
        paths = [path_of(k) for k in keys]
        ok: dict[K, Any] = {}
        bad: dict[K, ZNodeDecodeError] = {}

        def restart() -> None:
            ok.clear()
            bad.clear()
            if mzxids is not None:
                mzxids.clear()

        def consume(i: int, got: tuple[bytes, ZnodeStat] | None) -> None:
            if got is None:
                return
            consume_batch(i, [got])

        def consume_batch(start: int, got: list[tuple[bytes, ZnodeStat]]) -> None:
            for i, (data, stat) in enumerate(got, start):
                key = keys[i]
                if mzxids is not None:
                    mzxids[key] = stat.mzxid
                try:
                    ok[key] = decode(paths[i], data, stat)
                except ZNodeDecodeError as e:
                    bad[key] = e
        self.stream_data(paths, consume, restart, multi_read_batch, consume_batch)
        return ok, bad

    def get_topic_assignments(self, topics: Iterable[str]
                              ) -> tuple[dict[str, TopicAssignment], dict[str, ZNodeDecodeError]]:
        """Assignments of the given topics; absent topics are in neither dict."""
        # a topic znode grows with its partition count: fewer per multi-read response
        return self._decode_bulk(topics, zn.topic_path, fast.decode_topic_assignment, multi_read_batch=50)

    def get_partition_states(self, tps: Iterable[TopicPartition], mzxids: dict[TopicPartition, int] | None = None
                             ) -> tuple[dict[TopicPartition, LeaderIsrAndControllerEpoch],
                                        dict[TopicPartition, ZNodeDecodeError]]:
        """Leader/ISR per partition (zk_version from the stat); missing ones are in neither dict.
        With `mzxids`, also fills in the zxid of each znode's last write (a failover compares
        it with leaders' registration czxids to spot leaders that restarted unseen)."""
        return self._decode_bulk(tps, zn.tp_state_path, fast.decode_partition_state, mzxids=mzxids)

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
                state = fast.decode_partition_state(paths[i], got[0], got[1])
            except ZNodeDecodeError as e:
                consume(tps[i], None, e)
                return
            consume(tps[i], state, None)
        self.stream_data(paths, each, restart)

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
            stat = self.exists(zn.REASSIGN_PARTITIONS_PATH)
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

    def get_log_dir_event_notifications(self) -> tuple[list[str], set[int]]:
        """(child names, brokers they name). Unreadable ones name no broker but are listed,
        so the controller deletes them too."""
        names = sorted(self.get_children(zn.LOG_DIR_EVENT_NOTIFICATION_PATH) or [])
        raw = self.get_data_bulk([zn.log_dir_event_path(n) for n in names])
        brokers: set[int] = set()
        for path, got in raw.items():
            if got is None:
                continue
            try:
                brokers.add(zn.decode_log_dir_event(got[0], path))
            except ZNodeDecodeError as e:
                log.warning("ignoring corrupt log dir event notification: %s", e)
        return names, brokers

    def get_topics_marked_for_deletion(self) -> list[str]:
        return sorted(self.get_children(zn.DELETE_TOPICS_PATH) or [])

    # -- fenced writes ---------------------------------------------------------------------------------
    def fenced_multi(self, ops: Sequence[ZkOp], controller_epoch_zk_version: int,
                     batch_size: int = 100) -> list[WriteResult]:
        """`checked_multi` against `/controller_epoch` at `controller_epoch_zk_version`: one
        WriteResult per op, or `ControllerMovedError` (and none of this call's later writes is
        applied) once another controller was elected. See `checked_multi` for the ordering rules."""
        with _fenced(controller_epoch_zk_version):
            return self.checked_multi(ops, _epoch_check(controller_epoch_zk_version), batch_size)

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
        ops = [CreateOp(zn.tp_state_path(tp), fast.encode_partition_state(states[tp])) for tp in tps]
        return dict(zip(tps, self.fenced_multi(ops, epoch_zk_version)))

    def update_partition_states(self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
                                epoch_zk_version: int) -> dict[TopicPartition, WriteResult]:
        """Set each state znode, conditional on `leader_and_isr.zk_version` and fenced by the epoch;
        an OK result's `stat_version` is the partition's new zkVersion."""
        tps = list(states)
        ops = [SetDataOp(zn.tp_state_path(tp), fast.encode_partition_state(states[tp]),
                         states[tp].leader_and_isr.zk_version) for tp in tps]
        return dict(zip(tps, self.fenced_multi(ops, epoch_zk_version)))

    def conditional_update_partition_state(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch,
                                           expected_version: int) -> WriteResult:
        """A partition leader's own ISR change: conditional on the zkVersion, not fenced."""
        try:
            stat = self._get(self.client.set_async(zn.tp_state_path(tp), fast.encode_partition_state(state),
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
        return str(path).rsplit("/", 1)[-1]

    def delete_isr_change_notifications(self, names: Iterable[str], epoch_zk_version: int) -> None:
        """Fenced deletes of processed notifications (already gone is fine)."""
        ops = [DeleteOp(zn.isr_change_path(n)) for n in names]
        if ops:
            self.fenced_multi(ops, epoch_zk_version)

    def create_log_dir_event_notification(self, broker_id: int) -> str:
        """A log directory of `broker_id` failed: one sequential, persistent
        `/log_dir_event_notification/log_dir_event_<seq>`; returns its child name."""
        try:
            path = self._get(self.client.create_async(zn.LOG_DIR_EVENT_SEQUENCE_PREFIX_PATH,
                                                      zn.encode_log_dir_event(broker_id), sequence=True))
        except KazooException as e:
            raise self._wrap(e, "create log dir event notification") from None
        return str(path).rsplit("/", 1)[-1]

    def delete_log_dir_event_notifications(self, names: Iterable[str], epoch_zk_version: int) -> None:
        """Fenced deletes of processed log-dir event notifications (already gone is fine)."""
        ops = [DeleteOp(zn.log_dir_event_path(n)) for n in names]
        if ops:
            self.fenced_multi(ops, epoch_zk_version)

    # -- topic writes ------------------------------------------------------------------------------------
    def create_topic(self, topic: str, assignment: TopicAssignment, config: Mapping[str, str] | None = None) -> None:
        """Admin topic creation as Kafka's AdminZkClient: config first, then the assignment znode
        (with a new topic id unless one is given), whose appearance the controller watches.
        TopicExistsError if present or being deleted."""
        if not assignment.topic_id:
            assignment = TopicAssignment(assignment.partitions, new_topic_id())
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
        when `epoch_zk_version` is given."""
        if epoch_zk_version is None:
            self.delete_trees(paths)
            return
        with _fenced(epoch_zk_version):
            self.delete_trees(paths, _epoch_check(epoch_zk_version))

    def delete_topic_znodes(self, topics: Iterable[str], epoch_zk_version: int,
                            last_leader_epochs: Mapping[str, int] | None = None) -> None:
        """End of a topic deletion (fenced): `/brokers/topics/<t>` with its subtree, then
        `/config/topics/<t>`, then the `/admin/delete_topics/<t>` marker, as Kafka. First each
        topic's last leader epoch is kept (`retired_leader_epochs`), for a re-creation."""
        topics = list(topics)
        retired = dict(last_leader_epochs or {})
        if retired:
            paths = {t: zn.retired_leader_epoch_path(t) for t in retired}
            present = self.get_data_bulk(paths.values())
            self.ensure_paths([zn.RETIRED_LEADER_EPOCHS_PATH])
            self.fenced_multi([
                (SetDataOp(paths[t], zn.encode_retired_leader_epoch(e)) if present[paths[t]] is not None
                 else CreateOp(paths[t], zn.encode_retired_leader_epoch(e))) for t, e in retired.items()
            ], epoch_zk_version)
        self.delete_recursive_fenced([zn.topic_path(t) for t in topics], epoch_zk_version)
        self.fenced_multi([DeleteOp(zn.config_topic_path(t)) for t in topics], epoch_zk_version)
        self.fenced_multi([DeleteOp(zn.delete_topic_path(t)) for t in topics], epoch_zk_version)

    def get_retired_leader_epochs(self, topics: Iterable[str]) -> dict[str, int]:
        """The last leader epoch of each earlier, deleted topic of these names (absent: none)."""
        ok, bad = self._decode_bulk(topics, zn.retired_leader_epoch_path,
                                    lambda path, data, _stat: zn.decode_retired_leader_epoch(path, data))
        for topic, error in bad.items():
            log.warning("ignoring the retired leader epoch of %s: %s", topic, error)
        return ok

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
        fragments = fast.reassignment_fragments(reassignment, cached[3] if cached is not None else None)
        if fragments is None:
            data = zn.encode_reassignment(reassignment)
        else:
            data = fast.join_reassignment(fragments)
        with _fenced(epoch_zk_version):
            result, stat = self.checked_write(SetDataOp(path, data), _epoch_check(epoch_zk_version))
        if result.outcome is WriteOutcome.NO_NODE:
            self.fenced_multi([CreateOp(path, data)], epoch_zk_version)
        elif result.outcome is WriteOutcome.OK and stat is not None:
            content = {tp: tuple(replicas) for tp, replicas in reassignment.items()}
            self._reassignments_cache = (stat.czxid, stat.version, content, fragments)

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

