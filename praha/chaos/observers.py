"""Continuous checks while faults run: high watermarks, controllers, availability, memory.

HighWatermarkMonitor: every half second asks some broker's Metadata for each data
partition's leader and leader epoch, then the leader itself (ListOffsets LATEST with
that leader epoch, so the answer belongs to it) for the high watermark. Within one
leader epoch the high watermark must never go back (a violation at once). Across a
leader change the new leader may briefly report less than its predecessor did (as in
Kafka: its high watermark catches up once followers fetch); those dips are counted,
and the final check demands every offset ever below a reported high watermark is
still there.

ClusterObserver: ZooKeeper's `/controller` and epoch (failovers, time without a
controller), partitions without a live leader (unavailability per partition),
under-replicated partitions, each broker process's RSS, and each broker's
`praha_controller_active_controller` / `_controller_epoch` figures: two brokers active
with the same epoch at once is a violation.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from praha.chaos.environment import ChaosEnvironment
from praha.chaos.ledger import Tp
from praha.chaos.timeline import Timeline
from praha.protocol.client import BrokerConnection

log = logging.getLogger(__name__)

LATEST = -1


@dataclass
class HwState:
    by_epoch: dict[tuple[Tp, int], int] = field(default_factory=dict)
    max_hw: dict[Tp, int] = field(default_factory=dict)
    samples: int = 0
    cross_epoch_dips: int = 0
    regressions: int = 0


class HighWatermarkMonitor(threading.Thread):
    def __init__(self, env: ChaosEnvironment, tps: list[Tp], timeline: Timeline, stop: threading.Event,
                 interval_s: float = 0.5):
        super().__init__(name="chaos-hw", daemon=True)
        self.env = env
        self.tps = tps
        self.timeline = timeline
        self.stop_event = stop
        self.interval_s = interval_s
        self.state = HwState()
        self._conns: dict[int, BrokerConnection] = {}
        self._rr = 0

    def run(self) -> None:
        try:
            while not self.stop_event.wait(self.interval_s):
                try:
                    self.poll_once()
                except Exception as e:  # noqa: BLE001 - brokers come and go
                    log.debug("hw poll failed: %s", e)
        finally:
            for c in self._conns.values():
                c.close()

    def _conn(self, bid: int) -> BrokerConnection | None:
        env = self.env
        if bid in env.paused:
            return None
        c = self._conns.get(bid)
        if c is None:
            b = env.brokers().get(bid)
            if b is None:
                return None
            c = self._conns[bid] = BrokerConnection(b.host, b.port, timeout=1.0, security=env.admin_security())
        return c

    def _send(self, bid: int, request: Any, version: int) -> Any:
        c = self._conn(bid)
        if c is None:
            return None
        try:
            return c.send(request, version)
        except Exception:  # noqa: BLE001 - a dead or paused broker: try another next time
            c.close()
            return None

    def poll_once(self) -> None:
        from praha.protocol.messages.gen.metadata import MetadataRequest as M
        from praha.protocol.messages.gen.produce_fetch import ListOffsetsRequest as L

        ids = sorted(self.env.brokers())
        topics = sorted({t for t, _ in self.tps})
        md = None
        for i in range(len(ids)):
            bid = ids[(self._rr + i) % len(ids)]
            md = self._send(bid, M(topics=[M.MetadataRequestTopic(name=t) for t in topics],
                                   allow_auto_topic_creation=False), 9)
            if md is not None:
                self._rr = (self._rr + i + 1) % len(ids)
                break
        if md is None:
            return
        by_leader: dict[int, list[tuple[Tp, int]]] = {}
        wanted = set(self.tps)
        for t in md.topics:
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                if tp in wanted and p.error_code == 0 and p.leader_id >= 0:
                    by_leader.setdefault(p.leader_id, []).append((tp, p.leader_epoch))
        for leader, parts in by_leader.items():
            req = L(replica_id=-1, isolation_level=0, topics=[
                L.ListOffsetsTopic(name=t, partitions=[
                    L.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, current_leader_epoch=e, timestamp=LATEST)
                    for (tt, p), e in parts if tt == t])
                for t in sorted({tp[0] for tp, _ in parts})])
            resp = self._send(leader, req, 5)
            if resp is None:
                continue
            epochs = {tp: e for tp, e in parts}
            for t in resp.topics:
                for p in t.partitions:
                    tp = (t.name, p.partition_index)
                    if p.error_code == 0 and tp in epochs and p.offset >= 0:
                        self.observe(tp, leader, epochs[tp], p.offset)

    def observe(self, tp: Tp, leader: int, epoch: int, hw: int) -> None:
        st = self.state
        st.samples += 1
        key = (tp, epoch)
        prev = st.by_epoch.get(key)
        if prev is not None and hw < prev:
            st.regressions += 1
            self.timeline.violate("hw_regressed", f"{tp[0]}-{tp[1]} high watermark {prev} -> {hw} "
                                  f"within leader epoch {epoch} (leader {leader})",
                                  topic=tp[0], partition=tp[1], leader=leader, leader_epoch=epoch,
                                  before=prev, after=hw)
        st.by_epoch[key] = max(hw, prev or 0)
        top = st.max_hw.get(tp, 0)
        if hw < top:
            st.cross_epoch_dips += 1
        else:
            st.max_hw[tp] = hw


@dataclass
class Incarnation:
    broker: int
    pid: int
    first_t: float
    rss_mb: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class ObserverState:
    controller_changes: list[tuple[float, int, int]] = field(default_factory=list)  # t, controller id, epoch
    no_controller_s: float = 0.0
    unavailable_s: dict[str, float] = field(default_factory=dict)  # "topic-p" -> seconds without leader
    incarnations: dict[tuple[int, int], Incarnation] = field(default_factory=dict)
    dual_active_samples: int = 0
    overlap_samples: int = 0  # two brokers active with different epochs (a transition)


class ClusterObserver(threading.Thread):
    def __init__(self, env: ChaosEnvironment, data_topics: set[str], timeline: Timeline, stop: threading.Event,
                 interval_s: float = 0.5):
        super().__init__(name="chaos-observer", daemon=True)
        self.env = env
        self.data_topics = data_topics
        self.timeline = timeline
        self.stop_event = stop
        self.interval_s = interval_s
        self.state = ObserverState()
        self._last_controller: tuple[int, int] | None = None
        self._round = 0

    def run(self) -> None:
        last = time.monotonic()
        while not self.stop_event.wait(self.interval_s):
            now = time.monotonic()
            dt, last = now - last, now
            for step in (self._controller, self._partitions, self._memory, self._metrics):
                try:
                    step(dt)
                except Exception as e:  # noqa: BLE001 - ZooKeeper or brokers mid-fault
                    log.debug("observer step %s failed: %s", step.__name__, e)
            self._round += 1

    def _controller(self, dt: float) -> None:
        cid, epoch = self.env.controller_id(), self.env.controller_epoch()
        self.timeline.sample("controller_epoch", epoch)
        if cid < 0:
            self.state.no_controller_s += dt
        if (cid, epoch) != self._last_controller:
            self._last_controller = (cid, epoch)
            self.state.controller_changes.append((round(self.timeline.now(), 3), cid, epoch))
            self.timeline.add("controller", f"controller {cid} epoch {epoch}", controller=cid, epoch=epoch)

    def _partitions(self, dt: float) -> None:
        from praha.admin.status import topics_status

        store = self.env.store
        live = self.env.live_broker_ids()
        topics = topics_status(store, live, [])
        offline = under = 0
        for name, info in topics.items():
            for p in info["partitions"]:
                if p["offline"]:
                    offline += 1
                    if name in self.data_topics:
                        key = f"{name}-{p['partition']}"
                        self.state.unavailable_s[key] = self.state.unavailable_s.get(key, 0.0) + dt
                if p["under_replicated"]:
                    under += 1
        self.timeline.sample("offline_partitions", offline)
        self.timeline.sample("under_replicated_partitions", under)
        self.timeline.sample("live_brokers", len(live))

    def _memory(self, dt: float) -> None:
        if self._round % 4:
            return
        t = round(self.timeline.now(), 3)
        for bid, b in self.env.brokers().items():
            if not self.env.running(bid):
                continue
            try:
                rss = psutil.Process(b.pid).memory_info().rss / 2**20
            except psutil.Error:
                continue
            inc = self.state.incarnations.setdefault((bid, b.pid), Incarnation(bid, b.pid, t))
            inc.rss_mb.append((t, round(rss, 1)))
            self.timeline.sample(f"rss_mb_{bid}", rss, t)

    def _metrics(self, dt: float) -> None:
        if self._round % 2:
            return
        from praha.testing.cluster import scrape_metrics

        active: list[tuple[int, int]] = []
        for bid, b in self.env.brokers().items():
            if bid in self.env.paused or not self.env.running(bid):
                continue
            try:
                m = scrape_metrics(b.actual_metrics_port, timeout=0.5, host=b.host)
            except Exception:  # noqa: BLE001
                continue
            if m.get("praha_controller_active_controller", 0) >= 1:
                active.append((bid, int(m.get("praha_controller_controller_epoch", -1))))
        epochs = [e for _, e in active]
        if len(set(epochs)) < len(epochs):
            self.state.dual_active_samples += 1
            self.timeline.violate("two_controllers_same_epoch",
                                  f"brokers {[b for b, _ in active]} all report being the active controller "
                                  f"with epochs {epochs}", active=active)
        elif len(active) > 1:
            self.state.overlap_samples += 1
            self.timeline.add("note", f"controller hand-over in progress: {active}")
