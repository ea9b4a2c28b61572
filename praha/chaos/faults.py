"""Fault injection: each planned fault is injected, held, then healed before returning.

Kinds (see docs/reliability.md for what each one exercises):
  kill               SIGKILL a broker, restart it after `hold_s` — either at once (a
                     bounce: the new process replaces the registration of the old one
                     before its session expires) or once ZooKeeper has noticed the death
  kill_controller    the same, aimed at the broker holding `/controller`
  pause              SIGSTOP a broker past its ZooKeeper session timeout, then SIGCONT:
                     a zombie (a zombie controller when aimed at the controller) that
                     must find itself fenced
  long_pause         SIGSTOP a broker and (with --workload txn) one transactional producer
                     process together, for longer than the transaction timeout and the
                     ZooKeeper session (the KAFKA-17754 shape: requests sent before the pause
                     land after the coordinator aborted the transaction), then SIGCONT, the
                     broker or the producer first (seeded)
  zk_expire          cut the broker's ZooKeeper proxies past the session timeout: its
                     session expires while the process runs on; then restore
  controlled_restart SIGTERM (controlled shutdown), wait for exit, restart
  stutter            short SIGSTOP/SIGCONT bursts below the session timeout: a broker
                     whose disk or CPU stalls now and then (a safe "slow disk")
  stale_controller   the harness plays a deposed controller: LeaderAndIsr, UpdateMetadata and
                     StopReplica (all empty) with the previous controller epoch, to every live
                     broker; each must answer STALE_CONTROLLER_EPOCH (an acceptance is a
                     violation at once). Zombies rarely get a request out — the controller
                     stops acting the moment ZooKeeper is unreachable — so this is how the
                     brokers' fence is exercised in every campaign
  forged_controller  a plain client claims to be controller 99 (current, next and largest epoch):
                     StopReplica deleting every hosted replica, LeaderAndIsr, UpdateMetadata
                     pointing every broker at 127.0.0.1:1; each must answer
                     STALE_CONTROLLER_EPOCH (issue 15: the broker checks ZooKeeper's seat)
  member_kill        SIGKILL one member process of the consumer group (no LeaveGroup: the
                     coordinator finds out by the session timeout), start a new one after
                     `hold_s`
  coordinator_kill   `kill`, aimed at the group's coordinator: the broker FindCoordinator
                     names (the leader of the group's __consumer_offsets partition)
  zk_member_kill     SIGKILL one server of the ZooKeeper ensemble, restart it
  forged_zk_write    (secure_zookeeper campaigns) an unauthenticated client straight to a
                     ZooKeeper server tries what would take the cluster over: create a topic,
                     queue a deletion and a reassignment, grant itself an ACL and a SCRAM user,
                     claim `/controller`, bump `/controller_epoch`, rewrite a topic; each must be
                     refused with NoAuth (`forged_zk_write_accepted` otherwise, undone at once)
  full_disk          fill the broker's second log dir (a small tmpfs of its own) to the last
                     byte: its next write there fails with ENOSPC, the dir goes offline, its
                     replicas move (the controller's log-dir event flow) while its other dir
                     serves on; held, then the broker is restarted with room on the disk (as
                     with Kafka, a failed dir comes back only with a restart). Skipped where
                     tmpfs cannot be mounted
  partition, one_way, flaky_link
                     network faults between hosts of their own (only with --netns): nftables
                     drop rules per node, planned in praha/chaos/netfaults.py; held past the
                     session timeout when ZooKeeper is cut (past the replica lag otherwise),
                     then removed
Every wait is bounded; a heal that fails is recorded (and the campaign's final health
check reports what stayed broken) rather than raised.
"""
from __future__ import annotations

import logging
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from praha.chaos import netfaults
from praha.chaos.environment import TXN_ABORT_CHECK_MS, ChaosEnvironment, wait_until
from praha.chaos.group import ConsumerGroup
from praha.chaos.schedule import PlannedFault, resolve
from praha.chaos.timeline import Timeline
from praha.chaos.txn import TxnWorkload
from praha.chaos.txnclient import TRANSACTION_TIMEOUT_MS
from praha.cluster import netns
from praha.cluster.netns import Drop
from praha.common import BrokerInfo, TopicPartition

log = logging.getLogger(__name__)

#: kinds whose target is a broker (the others: a ZooKeeper server, a group member)
BROKER_KINDS = frozenset({"kill", "kill_controller", "pause", "zk_expire", "controlled_restart", "stutter",
                          "stale_controller", "forged_controller", "coordinator_kill", "full_disk", "long_pause",
                          "partition", "one_way", "flaky_link"})


def target_label(kind: str) -> str:
    return {"zk_member_kill": "zk server", "forged_zk_write": "zk server", "member_kill": "group member"}.get(
        kind, "broker")

#: flaky_link's delaying proxy listens here in the broker's namespace
DETOUR_PORT = 19092

#: long_pause: between resuming the broker and the producer (in the seeded order)
RESUME_GAP_S = 2.0

#: a controller id no broker has: what a forger claims to be
FORGED_CONTROLLER_ID = 99


@dataclass
class FaultRecord:
    index: int
    kind: str
    target: int | None  # broker id; ZooKeeper server index (zk_member_kill); member slot (member_kill)
    start_t: float
    healed_t: float = -1.0
    was_controller: bool = False
    ok: bool = True
    error: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class FaultInjector:
    def __init__(self, env: ChaosEnvironment, timeline: Timeline, group: ConsumerGroup | None = None,
                 txn: TxnWorkload | None = None):
        self.env = env
        self.timeline = timeline
        self.group = group
        self.txn = txn
        self.session_s = env.cfg.session_timeout_ms / 1000.0

    # ------------------------------------------------------------------ entry point
    def inject(self, plan: PlannedFault) -> FaultRecord | None:
        """Inject, hold, heal. None when the fault had no possible target (skipped)."""
        target = self._target(plan)
        if target is None:
            self.timeline.add("note", f"fault {plan.index} ({plan.kind}) skipped: no target")
            return None
        rec = FaultRecord(plan.index, plan.kind, target, round(self.timeline.now(), 3))
        rec.was_controller = plan.kind in BROKER_KINDS and target == self.env.controller_id()
        self.timeline.add("fault", f"{plan.kind} {target_label(plan.kind)} {target}",
                          index=plan.index, fault=plan.kind, target=target, controller=rec.was_controller)
        try:
            getattr(self, f"_do_{plan.kind}")(target, plan, rec)
        except Exception as e:  # noqa: BLE001 - recorded; the final health check judges the cluster
            rec.ok = False
            rec.error = f"{type(e).__name__}: {e}"
            log.warning("fault %d (%s on %s) failed: %s", plan.index, plan.kind, target, rec.error)
            self.heal_everything()
        rec.healed_t = round(self.timeline.now(), 3)
        self.timeline.add("heal", f"healed {plan.kind} {target}", index=plan.index, ok=rec.ok, error=rec.error)
        return rec

    def _target(self, plan: PlannedFault) -> int | None:
        env = self.env
        if plan.kind == "zk_member_kill":
            if env.ensemble is None:
                return None
            return resolve(plan.pick, range(len(env.ensemble.servers)))
        if plan.kind == "forged_zk_write":
            return resolve(plan.pick, range(len(env.zk_addresses())))
        if plan.kind == "member_kill":
            return resolve(plan.pick, self.group.running_slots()) if self.group is not None else None
        running = [b for b in env.brokers() if env.running(b) and b not in env.paused]
        if plan.kind == "full_disk":
            return resolve(plan.pick, [b for b in running if b in env.disks])
        if plan.kind == "kill_controller" or (plan.prefer_controller and plan.kind in ("pause", "zk_expire")):
            cid = env.controller_id()
            if cid in running:
                return cid
        if plan.kind == "coordinator_kill":
            if self.group is None:
                return None
            brokers = env.brokers()
            coordinator = self.group.find_coordinator([(brokers[b].host, brokers[b].port) for b in sorted(running)])
            return coordinator if coordinator in running else None
        return resolve(plan.pick, running)

    # ------------------------------------------------------------------ kinds
    def _do_kill(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        pid = self.env.cluster.kill_broker(bid)
        rec.details["pid"] = pid
        self._maybe_outlive_session(bid, plan, rec)
        time.sleep(plan.hold_s)
        self._restart(bid, rec)

    def _maybe_outlive_session(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        """Stay down until the broker's registration is gone (its death observed), if planned."""
        rec.details["outlive_session"] = plan.outlive_session
        if plan.outlive_session:
            env = self.env
            rec.details["session_expired"] = wait_until(lambda: bid not in env.live_broker_ids(),
                                                        self.session_s * 3 + 5)

    _do_kill_controller = _do_kill
    _do_coordinator_kill = _do_kill

    def _do_member_kill(self, slot: int, plan: PlannedFault, rec: FaultRecord) -> None:
        assert self.group is not None
        rec.details.update(self.group.kill_member(slot, plan.hold_s))

    def _do_stale_controller(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        from praha.protocol.controller_requests import (
            LeaderAndIsrRequestData,
            StopReplicaRequestData,
            UpdateMetadataRequestData,
        )

        env = self.env
        epoch = env.controller_epoch()
        stale = max(epoch - 1, 0)
        live, _ = env.store.get_live_brokers()

        def requests_for(target: BrokerInfo) -> list[Any]:
            return [
                LeaderAndIsrRequestData(bid, stale, target.epoch, [], []),
                UpdateMetadataRequestData(bid, stale, target.epoch, [], list(live.values())),
                StopReplicaRequestData(bid, stale, target.epoch, []),
            ]

        refused, answers = self._probe_fence(live, requests_for, "stale_epoch_accepted",
                                             f"controller epoch {stale} (current {epoch})", must_refuse=epoch > stale)
        rec.details.update({"stale_epoch": stale, "current_epoch": epoch, "refused": refused, "answers": answers})
        time.sleep(plan.hold_s)

    def _do_forged_controller(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        """A plain client claims to be controller 99 with the current, the next and the largest
        controller epoch: StopReplica deleting every replica a broker hosts, an empty
        LeaderAndIsr, an UpdateMetadata pointing every broker at 127.0.0.1:1. Every broker must
        answer STALE_CONTROLLER_EPOCH; an acceptance is a violation (and the deletion would
        show as lost records)."""
        from praha.common import EndPoint, TopicPartition
        from praha.protocol.controller_requests import (
            LeaderAndIsrRequestData,
            StopReplicaPartition,
            StopReplicaRequestData,
            UpdateMetadataRequestData,
        )

        env = self.env
        epoch = env.controller_epoch()
        live, _ = env.store.get_live_brokers()
        assignments, _bad = env.store.get_topic_assignments(env.store.get_all_topics())
        bogus = [BrokerInfo(b, (EndPoint("127.0.0.1", 1),)) for b in sorted(live)]

        def requests_for(target: BrokerInfo) -> list[Any]:
            hosted = [StopReplicaPartition(TopicPartition(t, p), 2**31 - 2, True)
                      for t, a in assignments.items() for p, r in a.partitions.items() if target.id in r.replicas]
            return [req for forged in (epoch, epoch + 1, 2**31 - 1) for req in (
                StopReplicaRequestData(FORGED_CONTROLLER_ID, forged, target.epoch, hosted),
                LeaderAndIsrRequestData(FORGED_CONTROLLER_ID, forged, target.epoch, [], []),
                UpdateMetadataRequestData(FORGED_CONTROLLER_ID, forged, target.epoch, [], bogus),
            )]

        refused, answers = self._probe_fence(live, requests_for, "forged_request_accepted",
                                             f"forged controller {FORGED_CONTROLLER_ID}", must_refuse=True)
        rec.details.update({"current_epoch": epoch, "refused": refused, "answers": answers})
        time.sleep(plan.hold_s)

    def _do_forged_zk_write(self, server: int, plan: PlannedFault, rec: FaultRecord) -> None:
        """Every write must fail with NoAuth; one that succeeds is a violation, undone with the
        brokers' identity so that the campaign goes on against the cluster it started."""
        from praha.testing.forged_zk import REFUSED, outsider, try_forged_writes

        env = self.env
        topic = next(iter(sorted(env.store.get_all_topics())), "absent")
        host, port = env.zk_addresses()[server]
        k = outsider(f"{host}:{port}")
        try:
            answers, created = try_forged_writes(k, topic, f"forged-{plan.index}")
        finally:
            k.stop()
            k.close()
        if created:
            env.store.delete_recursive(created)
        for what, answer in answers.items():
            if answer != REFUSED:
                self.timeline.violate("forged_zk_write_accepted", f"an unauthenticated ZooKeeper client tried to "
                                      f"{what}: {answer} where NoAuth was due", zk_server=server)
        refused = sum(a == REFUSED for a in answers.values())
        rec.details.update({"refused": refused, "answers": answers})
        time.sleep(plan.hold_s)

    def _probe_fence(self, live: dict[int, BrokerInfo], requests_for: Callable[[BrokerInfo], list[Any]],
                     violation: str, who: str, must_refuse: bool) -> tuple[int, dict[str, int]]:
        """Send each live broker its requests; count STALE_CONTROLLER_EPOCH answers and record
        any other answer as `violation` (when `must_refuse`)."""
        from praha.errors import ErrorCode
        from praha.protocol import controller_wire as wire
        from praha.protocol.client import BrokerConnection

        refused, answers = 0, {}
        for target in sorted(live):
            info = live[target]
            b = self.env.brokers()[target]  # its client listener (a secure broker registers two)
            with BrokerConnection(b.host, b.port, timeout=5.0, security=self.env.admin_security()) as conn:
                for i, req in enumerate(requests_for(info)):
                    obj, version = wire.request_to_wire(req)
                    code = wire.response_from_wire(conn.send(obj, version)).error_code
                    answers[f"{target}:{i}:{type(req).__name__}"] = int(code)
                    if code == ErrorCode.STALE_CONTROLLER_EPOCH:
                        refused += 1
                    elif must_refuse:
                        self.timeline.violate(
                            violation, f"broker {target} answered {ErrorCode(code).name} to a "
                            f"{type(req).__name__} of {who}", broker=target)
        return refused, answers

    def _do_pause(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        env = self.env
        env.cluster.pause_broker(bid)
        env.paused.add(bid)
        try:
            # frozen until ZooKeeper has expired its session and the cluster moved on
            gone = wait_until(lambda: bid not in env.live_broker_ids(), self.session_s * 3 + 5)
            rec.details["session_expired"] = gone
            time.sleep(plan.hold_s)
        finally:
            env.cluster.resume_broker(bid)
            env.paused.discard(bid)
        rec.details["reregistered"] = wait_until(lambda: bid in env.live_broker_ids(), self.session_s * 4 + 30)

    def _do_long_pause(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        env = self.env
        writer, pid = None, None
        if self.txn is not None:
            live = [n for n in self.txn.writers() if self.txn.pid(n) is not None]
            writer = live[min(int(plan.pick * len(live)), len(live) - 1)] if live else None
            pid = self.txn.pid(writer) if writer else None
        hold = max(TRANSACTION_TIMEOUT_MS + TXN_ABORT_CHECK_MS, env.cfg.session_timeout_ms) / 1000 + 1 + plan.hold_s
        rec.details.update(writer=writer, hold_s=round(hold, 2), broker_resumed_first=plan.prefer_controller)
        until = time.monotonic() + hold
        env.cluster.pause_broker(bid)
        env.paused.add(bid)
        if pid is not None:
            os.kill(pid, signal.SIGSTOP)
        self.timeline.add("fault", f"long_pause: broker {bid} and {writer or 'no'} transactional producer stopped")
        try:
            rec.details["session_expired"] = wait_until(lambda: bid not in env.live_broker_ids(),
                                                        self.session_s * 3 + 5)
            time.sleep(max(0.0, until - time.monotonic()))
        finally:  # one, then the other a moment later: whose stale requests land first is the point
            if plan.prefer_controller or pid is None:
                env.cluster.resume_broker(bid)
                env.paused.discard(bid)
            if pid is not None:
                time.sleep(RESUME_GAP_S if plan.prefer_controller else 0.0)
                _continue(pid)
                time.sleep(0.0 if plan.prefer_controller else RESUME_GAP_S)
            env.cluster.resume_broker(bid)
            env.paused.discard(bid)
        rec.details["reregistered"] = wait_until(lambda: bid in env.live_broker_ids(), self.session_s * 4 + 30)

    def _do_zk_expire(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        env = self.env
        on_hosts = env.layout is not None
        if on_hosts:  # its own host: drop what it exchanges with ZooKeeper
            zk = tuple(n.address for n in env.zk_nodes())
            netns.apply_drops(env.broker_node(bid), [Drop(zk), Drop(zk, inbound=False)])
        for p in env.proxies.get(bid, []):
            p.cut()
        try:
            gone = wait_until(lambda: bid not in env.live_broker_ids(), self.session_s * 3 + 5)
            rec.details["session_expired"] = gone
            time.sleep(plan.hold_s)
        finally:
            if on_hosts:
                netns.heal(env.broker_node(bid))
            for p in env.proxies.get(bid, []):
                p.restore()
        rec.details["reregistered"] = wait_until(lambda: bid in env.live_broker_ids(), self.session_s * 4 + 30)

    def _do_controlled_restart(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        t0 = time.monotonic()
        clean = self.env.cluster.stop_broker(bid, timeout=45)
        rec.details["clean_exit"] = clean
        rec.details["shutdown_s"] = round(time.monotonic() - t0, 2)
        if not clean:
            self._maybe_outlive_session(bid, plan, rec)
        time.sleep(plan.hold_s)
        self._restart(bid, rec)

    def _do_stutter(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        env = self.env
        stall = min(0.4, self.session_s / 5)
        bursts = 3 + int(plan.hold_s * 3)
        for _ in range(bursts):
            env.cluster.pause_broker(bid)
            env.paused.add(bid)
            try:
                time.sleep(stall)
            finally:
                env.cluster.resume_broker(bid)
                env.paused.discard(bid)
            time.sleep(stall)
        rec.details["bursts"] = bursts
        rec.details["stall_s"] = stall

    def _do_full_disk(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        from praha.admin.records import describe_log_dirs

        env = self.env
        disk = env.disks[bid]
        address = env.brokers()[bid].address

        def offline() -> bool:
            (b,) = describe_log_dirs(address, [bid], timeout=5, security=env.admin_security())
            return any(d.path == str(disk.path) and d.error == "KAFKA_STORAGE_ERROR" for d in b.dirs)

        try:
            rec.details["filled_bytes"] = disk.fill()
            # the broker notices at its next write there: an append, or the high watermark
            # checkpoint (every 5 s) at the latest
            t0 = time.monotonic()
            rec.details["dir_offline"] = wait_until(offline, 30)
            rec.details["noticed_s"] = round(time.monotonic() - t0, 2)
            if not rec.details["dir_offline"]:
                rec.ok = False
                rec.error = "the full log dir was not taken offline within 30 s"
            time.sleep(plan.hold_s)
            t0 = time.monotonic()
            rec.details["clean_exit"] = env.cluster.stop_broker(bid, timeout=45)
            rec.details["shutdown_s"] = round(time.monotonic() - t0, 2)
        finally:
            disk.free()
        self._restart(bid, rec)

    def _do_zk_member_kill(self, index: int, plan: PlannedFault, rec: FaultRecord) -> None:
        ensemble = self.env.ensemble
        assert ensemble is not None
        server = ensemble.servers[index]
        rec.details["pid"] = server.pid
        server.kill()
        self.env.zk_members_down.add(index)
        time.sleep(plan.hold_s + 1.0)
        server.launch()
        server.wait_ready(time.monotonic() + 60)
        self.env.zk_members_down.discard(index)

    # ------------------------------------------------------------------ network (hosts of their own)
    def _do_partition(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        self._network(netfaults.plan_partition, plan, rec)

    def _do_one_way(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        self._network(netfaults.plan_one_way, plan, rec)

    def _do_flaky_link(self, bid: int, plan: PlannedFault, rec: FaultRecord) -> None:
        self._network(netfaults.plan_flaky_link, plan, rec)

    def _view(self, rng: random.Random) -> netfaults.View:
        """Addresses, the controller, and one data partition's leader and followers now."""
        env = self.env
        lay = env.network()
        view = netfaults.View({n: node.address for n, node in lay.nodes.items()}, lay.gateway, env.controller_id())
        topics = sorted(t for t in env.store.get_all_topics() if t.startswith("chaos-data-"))
        if topics:
            found, _ = env.store.get_topic_assignments(topics)
            tps = sorted(TopicPartition(t, p) for t, a in found.items() for p in a.partitions)
            if tps:
                tp = rng.choice(tps)
                states, _ = env.store.get_partition_states([tp])
                if tp in states:
                    s = states[tp].leader_and_isr
                    view.leader = s.leader
                    view.followers = tuple(r for r in found[tp.topic].partitions[tp.partition].replicas
                                           if r != s.leader)
        return view

    def _network(self, planner: Callable[[netfaults.View, random.Random], netfaults.NetPlan], plan: PlannedFault,
                 rec: FaultRecord) -> None:
        env = self.env
        rng = random.Random(f"{env.cfg.seed}-{plan.index}")  # the same seed plans the same cut
        net = planner(self._view(rng), rng)
        rec.details.update(net.describe())
        victims = [n for n in net.drops if n.startswith("b")] or ([net.detour.node] if net.detour else [])
        if victims:
            rec.target = int(victims[0][1:])
        nodes = env.network().nodes
        # held past the session timeout when ZooKeeper is cut (expiry, elections), past the
        # replica lag otherwise (ISR shrink)
        lag_s = env.cfg.replica_lag_time_max_ms / 1000.0
        hold = (self.session_s if net.cuts_zookeeper else lag_s) * 1.5 + plan.hold_s
        proxies: list[subprocess.Popen[str]] = []
        try:
            for name, drops in net.drops.items():
                netns.apply_drops(nodes[name], drops)
            if net.detour is not None:
                proxies = self._detour(net.detour, plan.index)
            time.sleep(hold)
        finally:
            for name in [*net.drops, *([net.detour.node] if net.detour else [])]:
                netns.heal(nodes[name])
            # the client port's proxy, then (secure) the inter-broker port's
            for key, proc in zip(("proxy", "proxy_internal"), proxies):
                rec.details[key] = _stop_proxy(proc)
        rec.details["held_s"] = round(hold, 2)
        rec.details["all_registered"] = wait_until(lambda: env.live_broker_ids() == set(env.brokers()),
                                                   self.session_s * 4 + 30)

    def _detour(self, detour: netfaults.Detour, index: int) -> list[subprocess.Popen[str]]:
        """Start a delaying proxy in the broker's namespace in front of each of its Kafka ports
        (the client port; on a secure cluster the inter-broker TLS port too), then send the
        peers' connections to those ports through them."""
        from praha.cluster.local import NETNS_INTERNAL_PORT

        node = self.env.network().node(detour.node)
        ports = [self.env.brokers()[int(detour.node[1:])].port, *([NETNS_INTERNAL_PORT] if self.env.cfg.secure else [])]
        procs: list[subprocess.Popen[str]] = []
        try:
            for i, port in enumerate(ports):
                with open(self.env.root / f"proxy-{index}-{port}.stderr", "wb") as err:
                    procs.append(subprocess.Popen(
                        ["ip", "netns", "exec", node.netns, sys.executable, "-m", "praha.testing.proxy",
                         "--listen", f"0.0.0.0:{DETOUR_PORT + i}", "--target", f"{node.address}:{port}",
                         "--delay-ms", str(detour.delay_ms), "--jitter-ms", str(detour.jitter_ms),
                         "--seed", f"{self.env.cfg.seed + index + i}"],
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True))
            for proc in procs:
                assert proc.stdout is not None
                ready, _, _ = select.select([proc.stdout], [], [], 30)
                line = proc.stdout.readline() if ready else ""
                if "listening" not in line:
                    raise RuntimeError(f"the delaying proxy did not start: {line.strip()!r}")
            netns.apply_detour(node, detour.peers, {port: DETOUR_PORT + i for i, port in enumerate(ports)})
        except BaseException:
            for proc in procs:
                _stop_proxy(proc)
            raise
        return procs

    # ------------------------------------------------------------------ healing
    def _restart(self, bid: int, rec: FaultRecord) -> None:
        t0 = time.monotonic()
        last: Exception | None = None
        for _attempt in range(3):
            try:
                if not self.env.running(bid):
                    self.env.cluster.start_broker(bid, wait=True, timeout=60)
                rec.details["restart_s"] = round(time.monotonic() - t0, 2)
                return
            except Exception as e:  # noqa: BLE001 - e.g. its old registration still there: retry
                last = e
                time.sleep(1.0)
        raise RuntimeError(f"broker {bid} did not come back: {last}")

    def heal_everything(self) -> None:
        """After a failed fault: resume, reconnect and restart whatever is down (bounded)."""
        env = self.env
        for disk in env.disks.values():
            disk.free()
        for bid in list(env.paused):
            try:
                env.cluster.resume_broker(bid)
            except Exception:  # noqa: BLE001
                pass
            env.paused.discard(bid)
        for proxies in env.proxies.values():
            for p in proxies:
                p.restore()
        if env.layout is not None:
            for node in env.layout.nodes.values():
                netns.heal(node)
        if env.ensemble is not None:
            for i in list(env.zk_members_down):
                try:
                    env.ensemble.servers[i].launch()
                    env.ensemble.servers[i].wait_ready(time.monotonic() + 60)
                    env.zk_members_down.discard(i)
                except Exception as e:  # noqa: BLE001
                    log.warning("ZooKeeper server %d did not come back: %s", i, e)
        for bid in env.brokers():
            if not env.running(bid):
                try:
                    env.cluster.start_broker(bid, wait=True, timeout=60)
                except Exception as e:  # noqa: BLE001
                    log.warning("broker %d did not come back: %s", bid, e)


def _stop_proxy(proc: subprocess.Popen[str]) -> str:
    """SIGTERM the delaying proxy (SIGKILL after a bound); what it said last."""
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
    return (out or "").strip().splitlines()[-1] if (out or "").strip() else ""


def _continue(pid: int) -> None:
    """SIGCONT a client process that may have exited meanwhile."""
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass
