"""The transaction coordinator's flows over a fake log and a fake marker channel (pure
logic; the wire, the real log and the real markers are the integration tests')."""
from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from praha.coordinator.group.coordinator import GroupConfig, GroupCoordinator
from praha.coordinator.group.metadata import CommittedOffset
from praha.coordinator.group.records import offset_key, offset_value
from praha.coordinator.group.storage import LogRecord
from praha.coordinator.transaction.coordinator import TransactionCoordinator, TxnConfig
from praha.coordinator.transaction.markers import MarkerJob, MarkerStats
from praha.coordinator.transaction.metadata import TxnState
from praha.coordinator.transaction.records import TxnLogValue, decode_key, decode_value, encode_key, encode_value
from praha.errors import ErrorCode as E

CONFIG = TxnConfig(partitions=1, max_timeout_ms=900000, id_expiration_ms=1000, abort_check_interval_ms=3600000,
                   expiration_check_interval_ms=3600000)


class FakeLog:
    def __init__(self) -> None:
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.fail_with: E | None = None
        self.producers: list[tuple[int, int] | None] = []

    async def append(self, partition, records, producer=None) -> E:
        await asyncio.sleep(0)
        if self.fail_with is not None:
            return self.fail_with
        self.records.setdefault(partition, []).extend(records)
        self.producers.append(producer)
        return E.NONE

    def read(self, partition: int) -> Iterator[LogRecord]:
        yield from [LogRecord(k, v) for k, v in self.records.get(partition, [])]

    def states(self, partition: int = 0) -> list[tuple[str, str, int]]:
        out = []
        for k, v in self.records.get(partition, []):
            if v is None:
                out.append((decode_key(k), "tombstone", -1))
            else:
                d = decode_value(v)
                out.append((decode_key(k), TxnState.of_id(d.state_id).display, d.producer_epoch))
        return out


class FakeMarkers:
    def __init__(self) -> None:
        self.jobs: list[MarkerJob] = []
        self.stats = MarkerStats()
        self.hold = False

    def write(self, job: MarkerJob) -> asyncio.Future[bool]:
        job.done = asyncio.get_running_loop().create_future()
        self.jobs.append(job)
        if not self.hold:
            job.done.set_result(True)
        return job.done

    @property
    def pending(self) -> int:
        return 0

    def shutdown(self) -> None:
        pass


async def blocking(fn):
    return fn()


def make(log: FakeLog | None = None) -> tuple[TransactionCoordinator, FakeLog, FakeMarkers]:
    log = log or FakeLog()
    markers = FakeMarkers()
    ids = iter(range(1000, 2000))

    async def allocate() -> int:
        return next(ids)

    return TransactionCoordinator(CONFIG, log, markers, allocate, blocking), log, markers  # type: ignore[arg-type]


async def loaded(c: TransactionCoordinator, epoch: int = 5) -> None:
    c.on_elected(0, epoch)
    for _ in range(50):
        if c._check("x") == E.NONE:
            return
        await asyncio.sleep(0)
    raise AssertionError("not loaded")


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def run(coro):
    return asyncio.run(coro)


def test_init_gives_a_producer_id_then_bumps_its_epoch():
    async def go():
        c, log, _ = make()
        assert (await c.init_producer_id("t", 60000)).error == E.NOT_COORDINATOR
        await loaded(c)
        first = await c.init_producer_id("t", 60000)
        again = await c.init_producer_id("t", 60000)
        assert (first.error, first.producer_id, first.producer_epoch) == (E.NONE, 1000, 0)
        assert (again.error, again.producer_id, again.producer_epoch) == (E.NONE, 1000, 1)
        assert log.states() == [("t", "Empty", 0), ("t", "Empty", 1)]
        assert (await c.init_producer_id("t", 0)).error == E.INVALID_TRANSACTION_TIMEOUT
        assert (await c.init_producer_id("t", 900001)).error == E.INVALID_TRANSACTION_TIMEOUT
        assert (await c.init_producer_id("", 1000)).error == E.INVALID_REQUEST
        c.shutdown()
    run(go())


def test_commit_writes_prepare_markers_then_complete():
    async def go():
        c, log, markers = make()
        await loaded(c, epoch=7)
        pid = (await c.init_producer_id("t", 60000)).producer_id
        assert await c.add_partitions("t", pid, 0, [("a", 0), ("a", 1)]) == E.NONE
        assert await c.add_partitions("t", pid, 0, [("a", 0)]) == E.NONE  # already in: nothing written
        assert c.verify_partitions("t", pid, 0, [("a", 1), ("b", 0)]) == {("a", 1): E.NONE,
                                                                          ("b", 0): E.INVALID_TXN_STATE}
        assert await c.end_txn("t", pid, 0, commit=True) == E.NONE
        await settle()
        job = markers.jobs[0]
        assert (job.commit, job.coordinator_epoch, job.producer_epoch, job.remaining) == (
            True, 7, 0, {("a", 0), ("a", 1)})
        assert [s for _, s, _ in log.states()] == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
        assert c.describe("t").state == "CompleteCommit"
        assert c.stats.commits == 1
        assert await c.end_txn("t", pid, 0, commit=True) == E.NONE  # a retried commit
        assert await c.end_txn("t", pid, 0, commit=False) == E.INVALID_TXN_STATE
        c.shutdown()
    run(go())


def test_bad_requests_get_kafkas_errors_and_change_nothing():
    async def go():
        c, log, markers = make()
        await loaded(c)
        pid = (await c.init_producer_id("t", 60000)).producer_id
        before = list(log.records[0])
        assert await c.end_txn("t", pid, 0, commit=True) == E.INVALID_TXN_STATE  # no transaction
        assert await c.end_txn("nope", pid, 0, commit=True) == E.INVALID_PRODUCER_ID_MAPPING
        assert await c.add_partitions("t", pid + 1, 0, [("a", 0)]) == E.INVALID_PRODUCER_ID_MAPPING
        assert await c.add_partitions("t", pid, 3, [("a", 0)]) == E.PRODUCER_FENCED
        assert log.records[0] == before
        assert not markers.jobs
        assert c.describe("nope").error == E.TRANSACTIONAL_ID_NOT_FOUND
        c.shutdown()
    run(go())


def test_a_new_incarnation_fences_and_aborts_the_old_ones_transaction():
    async def go():
        c, log, markers = make()
        await loaded(c)
        old = await c.init_producer_id("t", 60000)
        assert await c.add_partitions("t", old.producer_id, 0, [("a", 0)]) == E.NONE
        markers.hold = True
        assert (await c.init_producer_id("t", 60000)).error == E.CONCURRENT_TRANSACTIONS
        await settle()
        job = markers.jobs[0]
        assert (job.commit, job.producer_epoch) == (False, 1)  # the abort carries the fenced epoch
        assert (await c.init_producer_id("t", 60000)).error == E.CONCURRENT_TRANSACTIONS  # still aborting
        assert await c.end_txn("t", old.producer_id, 0, commit=True) == E.PRODUCER_FENCED  # the zombie
        job.done.set_result(True)
        await settle()
        new = await c.init_producer_id("t", 60000)
        assert (new.error, new.producer_id, new.producer_epoch) == (E.NONE, old.producer_id, 2)
        assert await c.add_partitions("t", old.producer_id, 0, [("a", 0)]) == E.PRODUCER_FENCED
        assert [s for _, s, _ in log.states()] == ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"]
        c.shutdown()
    run(go())


def test_a_timed_out_transaction_is_fenced_and_aborted():
    async def go():
        c, log, markers = make()
        await loaded(c)
        r = await c.init_producer_id("t", 1000)
        assert await c.add_partitions("t", r.producer_id, 0, [("a", 0)]) == E.NONE
        start = c.txns["t"].start_ms
        assert await c.abort_timed_out(start + 999) == 0
        assert await c.abort_timed_out(start + 1001) == 1
        await settle()
        assert c.txns["t"].state is TxnState.COMPLETE_ABORT
        assert c.txns["t"].producer_epoch == 1
        assert markers.jobs[0].commit is False
        assert await c.end_txn("t", r.producer_id, 0, commit=True) == E.PRODUCER_FENCED
        c.shutdown()
    run(go())


def test_after_a_failover_a_prepared_commit_is_completed():
    async def go():
        log = FakeLog()
        value = TxnLogValue(1234, 3, 60000, TxnState.PREPARE_COMMIT.id, (("a", 0), ("b", 2)), 10, 5)
        ongoing = TxnLogValue(1235, 0, 60000, TxnState.ONGOING.id, (("a", 1),), 10, 5)
        log.records[0] = [(encode_key("t"), encode_value(value)), (encode_key("u"), encode_value(ongoing)),
                          (encode_key("gone"), encode_value(ongoing)), (encode_key("gone"), None)]
        c, _, markers = make(log)
        await loaded(c, epoch=9)
        await settle()
        job = markers.jobs[0]
        assert (job.transactional_id, job.commit, job.coordinator_epoch, job.producer_id, job.producer_epoch) == (
            "t", True, 9, 1234, 3)
        assert c.txns["t"].state is TxnState.COMPLETE_COMMIT
        assert c.txns["u"].state is TxnState.ONGOING
        assert "gone" not in c.txns
        code, listed = c.list_transactions({"ongoing"})
        assert code == E.NONE
        assert [t.transactional_id for t in listed] == ["u"]
        c.on_resigned(0)
        assert c.txns == {}
        assert (await c.end_txn("u", 1235, 0, True)) == E.NOT_COORDINATOR
        c.shutdown()
    run(go())


def test_a_failed_write_changes_nothing_and_maps_the_error():
    async def go():
        c, log, _ = make()
        await loaded(c)
        r = await c.init_producer_id("t", 60000)
        log.fail_with = E.NOT_ENOUGH_REPLICAS
        assert await c.add_partitions("t", r.producer_id, 0, [("a", 0)]) == E.COORDINATOR_NOT_AVAILABLE
        assert c.txns["t"].state is TxnState.EMPTY
        assert c.txns["t"].pending is None
        log.fail_with = E.NOT_LEADER_OR_FOLLOWER
        assert (await c.init_producer_id("t", 60000)).error == E.NOT_COORDINATOR
        c.shutdown()
    run(go())


def test_idle_transactional_ids_expire_with_a_tombstone():
    async def go():
        c, log, _ = make()
        await loaded(c)
        await c.init_producer_id("t", 60000)
        last = c.txns["t"].last_update_ms
        assert await c.expire_ids(last + 999) == 0
        assert await c.expire_ids(last + 1000) == 1
        assert "t" not in c.txns
        assert log.states()[-1] == ("t", "tombstone", -1)
        c.shutdown()
    run(go())


# ---------------------------------------------------------------- transactional offsets (group side)
class OffsetsFake(FakeLog):
    def __init__(self) -> None:
        super().__init__()
        self.entries: list[LogRecord] = []

    async def append(self, partition, records, producer=None) -> E:
        code = await super().append(partition, records, producer)
        self.entries += [LogRecord(k, v, producer[0] if producer else -1) for k, v in records]
        return code

    def read(self, partition: int) -> Iterator[LogRecord]:
        yield from list(self.entries)


async def group_coordinator(log: OffsetsFake) -> GroupCoordinator:
    g = GroupCoordinator(GroupConfig(partitions=1, initial_rebalance_delay_ms=0), log, blocking)
    g.on_elected(0, 1)
    for _ in range(50):
        if g.owned.get(0, (None,))[0] is not None and g._check("g") == E.NONE:
            return g
        await asyncio.sleep(0)
    raise AssertionError("not loaded")


def test_txn_offsets_are_visible_only_after_the_commit_marker():
    async def go():
        log = OffsetsFake()
        g = await group_coordinator(log)
        o = CommittedOffset(42, -1, "", 1)
        assert await g.txn_commit_offsets("g", 77, 0, -1, "", None, {("t", 0): o}) == {("t", 0): E.NONE}
        assert log.producers[-1] == (77, 0)  # written in the producer's transaction
        assert g.fetch_offsets("g", [("t", 0)])[1] == {("t", 0): None}
        assert g.has_pending_txn_offsets("g", None) == {("t", 0)}
        assert g.complete_transactional_offsets(0, 77, commit=False) == 1
        assert g.fetch_offsets("g", [("t", 0)])[1] == {("t", 0): None}  # aborted: unchanged
        await g.txn_commit_offsets("g", 77, 0, -1, "", None, {("t", 0): CommittedOffset(50, -1, "", 2)})
        g.complete_transactional_offsets(0, 77, commit=True)
        assert g.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 50
        assert await g.txn_commit_offsets("g", 77, 0, 3, "", None, {("t", 0): o}) == {("t", 0): E.ILLEGAL_GENERATION}
        g.shutdown()
    run(go())


def test_loading_applies_txn_offsets_at_their_markers():
    async def go():
        log = OffsetsFake()
        log.entries = [
            LogRecord(offset_key("g", "t", 0), offset_value(CommittedOffset(10, -1, "", 1).value())),
            LogRecord(offset_key("g", "t", 0), offset_value(CommittedOffset(20, -1, "", 2).value()), 5),
            LogRecord(offset_key("g", "t", 1), offset_value(CommittedOffset(30, -1, "", 2).value()), 6),
            LogRecord(None, None, 5, commit=True),
            LogRecord(None, None, 6, commit=False),
            LogRecord(offset_key("g", "t", 2), offset_value(CommittedOffset(40, -1, "", 2).value()), 7),
        ]
        g = await group_coordinator(log)
        offsets = g.fetch_offsets("g", None)[1]
        assert {tp: o.offset for tp, o in offsets.items()} == {("t", 0): 20}
        assert g.has_pending_txn_offsets("g", None) == {("t", 2)}  # producer 7's transaction is still open
        g.shutdown()
    run(go())


@pytest.mark.parametrize("state", list(TxnState))
def test_every_state_round_trips_through_the_log(state):
    v = TxnLogValue(1, 2, 3, state.id, () if state is TxnState.EMPTY else (("x", 1),), 4, 5)
    assert TxnState.of_id(decode_value(encode_value(v)).state_id) is state


def test_a_marker_that_arrives_while_the_partition_loads_is_applied_after():
    async def go():
        log = OffsetsFake()
        log.entries = [LogRecord(offset_key("g", "t", 0), offset_value(CommittedOffset(20, -1, "", 2).value()), 5)]
        g = GroupCoordinator(GroupConfig(partitions=1, initial_rebalance_delay_ms=0), log, blocking)
        g.on_elected(0, 1)  # loading: the replay has not run yet
        assert g.complete_transactional_offsets(0, 5, commit=True) == 0  # remembered, not lost
        for _ in range(50):
            if g._check("g") == E.NONE:
                break
            await asyncio.sleep(0)
        assert g.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 20
        assert g.has_pending_txn_offsets("g", None) == set()
        g.shutdown()
    run(go())


def test_kip_360_a_producer_naming_its_id_and_epoch():
    async def go():
        c, _, _ = make()
        await loaded(c)
        first = await c.init_producer_id("t", 60000)
        bumped = await c.init_producer_id("t", 60000, first.producer_id, 0)
        assert (bumped.error, bumped.producer_epoch) == (E.NONE, 1)
        retried = await c.init_producer_id("t", 60000, first.producer_id, 0)  # the answer was lost: no bump
        assert (retried.error, retried.producer_epoch) == (E.NONE, 1)
        assert (await c.init_producer_id("t", 60000, first.producer_id + 7, 1)).error == E.PRODUCER_FENCED
        assert (await c.init_producer_id("t", 60000, first.producer_id, 5)).error == E.PRODUCER_FENCED
        # an id the coordinator no longer knows (expired) accepts whatever the producer had
        fresh = await c.init_producer_id("new", 60000, 4242, 9)
        assert (fresh.error, fresh.producer_epoch) == (E.NONE, 0)
        c.shutdown()
    run(go())
