"""A controller bench rig: stand-ins, ZooKeeper, broker 1, and the trial loop of a
controller flow (`Rig.run_trials`); a bench script's options, work directory and sizes."""
from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from praha.common import (
    TopicPartition,
)
from praha.zk import znodes as zn
from praha.zk.ops import CreateOp
from praha.zk.server import EmbeddedZooKeeper
from praha.zk.store import ZkStore

from .broker import BrokerProcess, LogTail, wait_for_line
from .constants import LEADER_AND_ISR, REPO, RF, STOP_REPLICA, UPDATE_METADATA
from .load import LoadMeter, wait_until
from .profiling import start_py_spy, stop_py_spy
from .standins import StandInBroker, leader_and_isr_partitions
from .zookeeper import (
    Assign,
    LeaderOf,
    bench_store,
    clear_broker,
    current_controller_epoch,
    first_replica_leads,
    preload,
    raw_fenced_writes,
    replicas_of,
    reset_states,
    start_zookeeper,
)

# ------------------------------------------------------------------------- a controller bench rig
STAND_INS = (2, 3, 4, 5, 6)


def rotation(brokers: Sequence[int], rf: int = RF) -> Assign:
    """RF replicas rotating over `brokers`, leaders spread evenly (the first replica leads)."""
    n = len(brokers)
    return lambda g: tuple(brokers[(g + k) % n] for k in range(rf))


class Rig:
    """One size of one controller bench: an embedded ZooKeeper, stand-in brokers 2..6
    (those in `own_sessions` registered in a ZooKeeper session of their own, the others in
    the bench's), and the real broker 1 as the only controller candidate. Broker 1 hosts no
    replica: the benches' partitions live on the stand-ins, so broker 1's process does the
    controller's work (plus its own UpdateMetadata handling) and nothing else."""

    def __init__(self, root: Path, name: str, args, stand_ins: Sequence[int] = STAND_INS,
                 own_sessions: Iterable[int] = (), keep: Iterable[int] = (LEADER_AND_ISR, STOP_REPLICA),
                 jute_maxbuffer: int | None = None, broker_props: dict[str, str] | None = None):
        self.root = root
        self.name = name
        self.args = args
        self.stand_in_ids = list(stand_ins)
        self.own_sessions = set(own_sessions)
        self.keep = tuple(keep)
        self.jute_maxbuffer = jute_maxbuffer
        self.broker_props = {"auto.leader.rebalance.enable": "false", **(broker_props or {})}
        self.zk: EmbeddedZooKeeper | None = None
        self.store: ZkStore | None = None
        self.sinks: dict[int, StandInBroker] = {}
        self.broker: BrokerProcess | None = None
        self.tail: LogTail | None = None
        self._spy: subprocess.Popen | None = None
        self._trials = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Rig:
        self.zk = start_zookeeper(self.root / f"zk-{self.name}", heap_mb=self.args.zk_heap_mb,
                                  jute_maxbuffer=self.jute_maxbuffer)
        self.store = bench_store(self.zk)
        self.store.ensure_persistent_paths()
        self.store.get_or_create_cluster_id()
        if self.store.get_controller_epoch() is None:  # so that the raw limit can be fenced before broker 1 runs
            self.store.multi([CreateOp(zn.CONTROLLER_EPOCH_PATH, zn.encode_controller_epoch(0))])
        for bid in self.stand_in_ids:
            self.sinks[bid] = StandInBroker(bid, keep=self.keep).start()
            self.register(bid)
        return self

    def __enter__(self) -> Rig:
        """`start()`, and `close()` at the end of the block, also when starting fails half-way
        (a ZooKeeper JVM or stand-in left running would skew the next size and the machine)."""
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc) -> None:
        self.close()

    def preload(self, topics: list[tuple[str, int]], assign: Assign = replicas_of,
                leader_of: LeaderOf = first_replica_leads) -> None:
        """`preload` the topics, printing how long it took (set-up time, not measured, but worth
        knowing at 50k partitions)."""
        t = time.perf_counter()
        preload(self.store, topics, assign, leader_of)
        print(f"  pre-loaded in {time.perf_counter() - t:.1f}s", flush=True)

    def reset(self, topics: list[tuple[str, int]], assign: Assign = replicas_of,
              leader_of: LeaderOf = first_replica_leads) -> None:
        """Between trials: every partition state back to its pre-loaded value (written with the
        current controller epoch, so the next broker 1 accepts it), and the stand-ins with a
        session of their own registered again (a trial may have closed it; a new broker epoch)."""
        reset_states(self.store, topics, assign, leader_of, controller_epoch=current_controller_epoch(self.store)[0])
        for bid in sorted(self.own_sessions):
            self.register(bid)

    def register(self, bid: int) -> int:
        sink = self.sinks[bid]
        if bid in self.own_sessions:
            return sink.register_own_session(self.zk.connect_string)
        self.store.deregister_broker(bid)
        sink.epoch = self.store.register_broker(sink.info())
        return sink.epoch

    def close(self) -> None:
        try:
            self.stop_controller()
        finally:
            for s in self.sinks.values():
                s.stop()
            if self.store is not None:
                self.store.stop()
            if self.zk is not None:
                self.zk.stop()

    # -- broker 1 ----------------------------------------------------------------------------
    def start_controller(self, timeout: float) -> BrokerProcess:
        """Start broker 1; it wins the election (nobody else runs for it) and fails over.
        Returns once its ControllerFailover line is written, every stand-in has its
        UpdateMetadata, and its CPU has been quiet for a moment."""
        self._trials += 1
        b = BrokerProcess(self.root / f"broker-{self.name}-{self._trials}", self.zk.connect_string,
                          extra=self.broker_props)
        self.broker = b
        t0 = time.time()
        b.start()
        b.wait_controller_started(timeout, active=True)
        wait_for_line(b.state_log, "ControllerFailover", timeout, b.alive)
        wait_until(lambda: all(s.first_after(UPDATE_METADATA, t0) for s in self.live_sinks()), timeout,
                   "the failover's UpdateMetadata at every stand-in")
        self.settle(timeout)
        self.tail = LogTail(b.state_log)
        self.tail.mark()
        if getattr(self.args, "py_spy", None):
            self._spy = start_py_spy(b.pid, Path(self.args.py_spy) / f"{self.name}-{self._trials}.txt",
                                     duration=max(10, int(timeout)), fmt="raw", gil_only=True)
            time.sleep(1.0)  # let py-spy attach
        return b

    def live_sinks(self) -> list[StandInBroker]:
        return [s for bid, s in self.sinks.items() if bid not in self.own_sessions or s.session is not None]

    def settle(self, timeout: float, quiet_s: float = 0.6, threshold: float = 0.1) -> None:
        """Until broker 1 used less than `threshold` of a CPU over `quiet_s` (bounded)."""
        b = self.broker
        deadline = time.monotonic() + timeout
        last = b.cpu_s()
        while time.monotonic() < deadline:
            time.sleep(quiet_s)
            now = b.cpu_s()
            if now - last < threshold * quiet_s:
                return
            last = now
        print(f"  (broker {b.broker_id} did not quiet down within {timeout:.0f}s)")

    def stop_controller(self) -> None:
        stop_py_spy(self._spy)
        self._spy = None
        b, self.broker = self.broker, None
        if b is None:
            return
        b.stop()
        clear_broker(self.store, b.broker_id)
        if not getattr(self.args, "keep", False):
            shutil.rmtree(b.dir, ignore_errors=True)

    @contextmanager
    def controller_trial(self) -> Iterator[tuple[BrokerProcess, LoadMeter]]:
        """Broker 1 started and quiet, the stand-ins' records of its failover forgotten, and a
        load meter running, for one measurement; broker 1 stopped afterwards whatever happened
        (every trial starts from a fresh controller)."""
        b = self.start_controller(self.args.timeout)
        try:
            self.forget_requests()
            yield b, LoadMeter([b.pid, self.zk.pid])
        finally:
            self.stop_controller()

    def run_trials(self, tps: Sequence[TopicPartition], new_trial: Callable[[float], object],
                   measure: Callable[[object, BrokerProcess, LoadMeter], None], line: Callable[[object], str],
                   reset: Callable[[], None]) -> list:
        """The --repeat trials of a controller flow over the pre-loaded partitions `tps`. Per trial:
        `reset()` (not before the first: the pre-load is its state); the raw limit over `tps`, timed
        before broker 1 runs so that nothing else loads ZooKeeper; `new_trial(raw seconds)`; then
        `measure(trial, broker 1, meter)` in a `controller_trial`; `line(trial)` printed."""
        trials = []
        for i in range(self.args.repeat):
            if i:
                reset()
            trial = new_trial(raw_fenced_writes(self.store, tps))
            trials.append(trial)
            with self.controller_trial() as (b, meter):
                measure(trial, b, meter)
            print(f"  trial {i + 1}: {line(trial)}", flush=True)
        return trials

    def first_line(self, event: str, pred: Callable[[dict], bool]) -> dict:
        """The first `event` line of broker 1's state-change log (from the tail's mark on) that
        satisfies `pred` (bounded by --timeout; fails at once if broker 1 exits)."""
        lines = self.tail.wait(lambda ls: any(pred(ln) for ln in ls), [event], self.args.timeout, self.broker.alive)
        return next(ln for ln in lines if pred(ln))

    # -- measurements ----------------------------------------------------------------------------
    def forget_requests(self) -> None:
        for s in self.sinks.values():
            s.forget()

    def quiet_stand_ins(self, since: float, timeout: float, expect: Iterable[int] = (),
                        api_key: int = LEADER_AND_ISR, quiet_s: float = 0.5) -> None:
        """Until each stand-in of `expect` has received an `api_key` request since `since`,
        and then no stand-in has received anything for `quiet_s` (bounded)."""
        expect = [self.sinks[b] for b in expect]
        wait_until(lambda: all(s.since(since, api_key) for s in expect), timeout,
                   f"api {api_key} requests at stand-ins {[s.broker_id for s in expect]}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = max((r.t_out for s in self.sinks.values() for r in s.since(since)), default=since)
            if time.time() - last >= quiet_s:
                return
            time.sleep(0.05)
        raise RuntimeError(f"stand-ins still receiving requests after {timeout:.0f}s")

    def acked(self, since: float, want: Callable[[TopicPartition, int, int], bool],
              tps: Iterable[TopicPartition], replicas: Callable[[TopicPartition], Iterable[int]]
              ) -> tuple[float, int]:
        """When every partition of `tps` had a LeaderAndIsr entry that satisfies
        `want(tp, leader, leader_epoch)` answered by each of `replicas(tp)` that is a live
        stand-in (request bodies decoded now, after the measurement). Returns (the latest
        such answer's wall time, partitions never acknowledged)."""
        first: dict[tuple[TopicPartition, int], float] = {}
        for bid, s in self.sinks.items():
            for r in s.since(since, LEADER_AND_ISR):
                if r.body is None:
                    continue
                for tp, leader, epoch in leader_and_isr_partitions(r.body):
                    key = (tp, bid)
                    if key not in first and want(tp, leader, epoch):
                        first[key] = r.t_out
        live = {bid for bid, s in self.sinks.items() if bid not in self.own_sessions or s.session is not None}
        latest, missing = since, 0
        for tp in tps:
            for bid in replicas(tp):
                if bid not in live:
                    continue
                t = first.get((tp, bid))
                if t is None:
                    missing += 1
                    break
                latest = max(latest, t)
        return latest, missing

    def acknowledged(self, trial, since: float, meter: LoadMeter, expect: Iterable[int],
                     want: Callable[[TopicPartition, int, int], bool], tps: Iterable[TopicPartition],
                     replicas: Callable[[TopicPartition], Iterable[int]]) -> float:
        """The end of a measured controller flow: once the stand-ins of `expect` have their
        LeaderAndIsr and all have gone quiet, the machine's other load (`trial.other_load`, read
        before decoding so the decoding does not count) and `acked` (`trial.missing`); returns the
        wall time of the last wanted acknowledgement."""
        self.quiet_stand_ins(since, self.args.timeout, expect=expect)
        trial.other_load = meter.other_share()
        last, trial.missing = self.acked(since, want, tps, replicas)
        return last


# ------------------------------------------------------------------------- a bench script's options, sizes, trials
def common_args(doc: str, plot_file: str, default_sizes: str = "1000,10000,50000", timeout: float = 300.0,
                repeat_help: str = "trials per size (median reported)",
                py_spy_help: str = "record a py-spy profile of broker 1 per trial"):
    """The options every controller bench takes (the description is the first line of the
    script's docstring; `plot_file` the default plot in bench/), so that they mean the same in
    each; a script adds its own after these."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--sizes", default=default_sizes, help="partition counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=3, help=repeat_help)
    ap.add_argument("--partitions-per-topic", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=timeout, help="bound on every wait, seconds")
    ap.add_argument("--zk-heap-mb", type=int, default=1536)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed)")
    ap.add_argument("--keep", action="store_true", help="keep broker directories (logs)")
    ap.add_argument("--py-spy", default=None, metavar="DIR", help=py_spy_help)
    ap.add_argument("--results", default=str(REPO / "bench" / "RESULTS.md"))
    ap.add_argument("--no-write", action="store_true", help="print only; do not touch RESULTS.md / the plot")
    ap.add_argument("--plot", default=str(REPO / "bench" / plot_file))
    return ap


def sizes(spec: str) -> list[int]:
    """The partition counts of a comma-separated option (--sizes, --hosting-sizes)."""
    return [int(s) for s in spec.split(",") if s.strip()]


@contextmanager
def work_dir(args, prefix: str = "praha-bench-") -> Iterator[Path]:
    """The work directory of a run: --dir (kept), else a temporary one removed at the end
    unless --keep (ZooKeeper data and broker logs of 50k partitions are large). Also makes the
    --py-spy directory, so that the first profile does not fail after minutes of set-up."""
    import tempfile

    if args.py_spy:
        Path(args.py_spy).mkdir(parents=True, exist_ok=True)
    if args.dir:
        root = Path(args.dir)
        root.mkdir(parents=True, exist_ok=True)
        remove = False
    else:
        root = Path(tempfile.mkdtemp(prefix=prefix))
        remove = not args.keep
    try:
        yield root
    finally:
        if remove:
            shutil.rmtree(root, ignore_errors=True)


def run_sizes(args, run_size: Callable[[int, object, Path], list], prefix: str = "praha-bench-") -> dict[int, list]:
    """`run_size(P, args, work directory)` for every --sizes P, in one `work_dir`; returns the
    trials by P."""
    results: dict[int, list] = {}
    with work_dir(args, prefix) as root:
        for p in sizes(args.sizes):
            results[p] = run_size(p, args, root)
    return results


