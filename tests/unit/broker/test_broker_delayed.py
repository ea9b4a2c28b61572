"""Purgatory bookkeeping: parked operations complete on their key, expire on time, and
leave no watchers behind."""
from __future__ import annotations

import asyncio

from praha.broker.replication.delayed import DelayedFetch, DelayedProduce, ProduceWait, Purgatory


def run(coro):
    return asyncio.run(coro)


def test_delayed_produce_completes_when_every_partition_is_decided():
    async def go():
        loop = asyncio.get_running_loop()
        hw = {"a": 0, "b": 0}
        pg = Purgatory("produce", loop)
        waits = {"a": ProduceWait(5), "b": ProduceWait(3)}
        op = DelayedProduce(loop, waits, lambda k, req: 0 if hw[k] >= req else None)
        fut = pg.watch(op, waits, 10_000)
        assert not fut.done()
        assert len(pg) == 1
        hw["a"] = 5
        assert pg.check("a") == 0
        assert not fut.done()
        assert pg.check("zzz") == 0
        hw["b"] = 3
        assert pg.check("b") == 1
        result = await fut
        assert result["a"].error == 0
        assert result["b"].error == 0
        assert len(pg) == 0
        assert not pg._watchers
    run(go())


def test_delayed_produce_times_out_with_undecided_partitions():
    async def go():
        loop = asyncio.get_running_loop()
        pg = Purgatory("produce", loop)
        waits = {"a": ProduceWait(5), "b": ProduceWait(3)}
        codes = {"a": 0, "b": None}
        op = DelayedProduce(loop, waits, lambda k, req: codes[k])
        fut = pg.watch(op, waits, 30)
        result = await asyncio.wait_for(fut, 2)
        assert result["a"].error == 0
        assert result["b"].error is None
        assert pg.stats.expired == 1
        assert len(pg) == 0
        assert not pg._watchers
    run(go())


def test_an_already_satisfied_operation_is_never_parked():
    async def go():
        loop = asyncio.get_running_loop()
        pg = Purgatory("produce", loop)
        op = DelayedProduce(loop, {"a": ProduceWait(1)}, lambda k, req: 6)  # e.g. NOT_LEADER
        fut = pg.watch(op, ["a"], 10_000)
        assert fut.done()
        assert (await fut)["a"].error == 6
        assert len(pg) == 0
        assert not pg._watchers
    run(go())


def test_delayed_fetch_accumulates_bytes_across_partitions():
    async def go():
        loop = asyncio.get_running_loop()
        avail = {"a": 0, "b": 0}
        pg = Purgatory("fetch", loop)
        op = DelayedFetch(loop, 100, ["a", "b"], lambda k: avail[k])
        fut = pg.watch(op, ["a", "b"], 10_000)
        avail["a"] = 60
        pg.check("a")
        avail["a"] = 70  # re-checking a key replaces its count, never double-counts
        pg.check("a")
        assert not fut.done()
        avail["b"] = 30
        pg.check("b")
        assert fut.done()
        assert await fut is True
    run(go())


def test_delayed_fetch_completes_at_once_when_a_partition_errs_and_expires_false():
    async def go():
        loop = asyncio.get_running_loop()
        pg = Purgatory("fetch", loop)
        avail = {"a": 0}
        fut = pg.watch(DelayedFetch(loop, 1, ["a"], lambda k: avail[k]), ["a"], 10_000)
        avail["a"] = -1  # leadership lost
        pg.check("a")
        assert await fut is True
        fut2 = pg.watch(DelayedFetch(loop, 1, ["a"], lambda k: 0), ["a"], 20)
        assert await asyncio.wait_for(fut2, 2) is False
        assert len(pg) == 0
    run(go())


def test_expire_all_answers_every_parked_operation():
    async def go():
        loop = asyncio.get_running_loop()
        pg = Purgatory("fetch", loop)
        futs = [pg.watch(DelayedFetch(loop, 1, [k], lambda k: 0), [k], 60_000) for k in "abc"]
        pg.expire_all()
        assert [f.done() for f in futs] == [True] * 3
        assert len(pg) == 0
        assert not pg._watchers
    run(go())
