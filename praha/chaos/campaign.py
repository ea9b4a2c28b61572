"""One chaos campaign, start to finish.

Flow: 1. start ZooKeeper, the per-broker proxies and the brokers; 2. create the RF 3
data topics (min.insync.replicas=2) and wait until every broker serves them; 3. start
consumers, producers, the consumer group's member processes, the high-watermark monitor,
the cluster observer and the admin worker; 4. run the seeded fault schedule, one fault at a time (inject, hold, heal),
each preceded by a bounded wait for all brokers to be registered; 5. heal everything,
stop the admin, wait (bounded) for full health; 6. stop producers, read every data
partition back with a fresh consumer, let the group catch up to the end (bounded), stop
its members, fetch its committed offsets a last time; 7. stop the cluster gracefully, compare replicas
on disk (every log dir, before the tmpfs ones are unmounted), read the state-change logs;
8. judge, write report.json, summary.txt and timeline.png. Every process is stopped by PID whatever happens.
"""
from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from praha.chaos import invariants as inv
from praha.chaos import leftovers
from praha.chaos.config import CampaignConfig
from praha.chaos.environment import ChaosEnvironment, wait_until
from praha.chaos.faults import FaultInjector, FaultRecord, target_label
from praha.chaos.group import ConsumerGroup
from praha.chaos.history import Verdict
from praha.chaos.ledger import GroupLedger, Ledger, Tp
from praha.chaos.observers import ClusterObserver, HighWatermarkMonitor, HwState
from praha.chaos.plot import plot_timeline
from praha.chaos.principals import Role
from praha.chaos.report import headline, summary_text, violation_json
from praha.chaos.schedule import build_schedule
from praha.chaos.share_workload import ShareWorkload
from praha.chaos.timeline import Timeline
from praha.chaos.txn import TOPIC_PARTITIONS, TxnWorkload, summarize
from praha.chaos.workload import AdminWorker, ConsumerWorker, ProducerWorker

log = logging.getLogger(__name__)

Progress = Callable[[str], None]

#: a fault that takes longer than this to inject, hold and heal is listed (an availability
#: problem, not a safety one: the invariants judge safety and final health)
SLOW_HEAL_S = 30.0
#: faults that, by design, leave the controller in its seat (stalls below the session timeout, probes)
CONTROLLER_KEEPING_KINDS = {"stutter", "stale_controller", "forged_controller", "zk_member_kill", "member_kill"}
#: after the faults: how long the consumer group gets to commit up to every high watermark
GROUP_CATCH_UP_S = 60.0
#: how long the transactional clients get to start (imports, InitProducerId, the first commit)
TXN_START_S = 120.0


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _client_logger(path: Path) -> logging.Logger:
    """librdkafka's chatter goes to a file of the campaign, not the terminal."""
    logger = logging.getLogger(f"praha.chaos.clients.{path.parent.name}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG if os.environ.get("PRAHA_CHAOS_CLIENT_DEBUG") else logging.INFO)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger.addHandler(handler)
    return logger


def _data_topics(cfg: CampaignConfig) -> list[str]:
    return [f"chaos-data-{i}" for i in range(cfg.topics)]


def _create_data_topics(env: ChaosEnvironment, cfg: CampaignConfig) -> list[Tp]:
    return _create_topics(env, cfg, {t: cfg.partitions for t in _data_topics(cfg)})


def _create_topics(env: ChaosEnvironment, cfg: CampaignConfig, partitions: dict[str, int]) -> list[Tp]:
    """RF `cfg.replication_factor` topics with min.insync.replicas, served by every broker (bounded wait)."""
    from praha.admin.client_status import fetch_metadata
    from praha.zk.admin_zk import create_topic

    topics = list(partitions)
    for t, n in partitions.items():
        create_topic(env.store, t, n, cfg.replication_factor, {"min.insync.replicas": str(cfg.min_insync_replicas)})
    tps = [(t, p) for t, n in partitions.items() for p in range(n)]

    def served_everywhere() -> bool:
        for b in env.brokers().values():
            md = fetch_metadata(b.address, topics=topics, timeout=2.0, security=env.admin_security())
            led = sum(1 for t in md.topics for p in t.partitions if p.error_code == 0 and p.leader_id >= 0)
            if led != len(tps):
                return False
        return True

    if not wait_until(served_everywhere, 60):
        raise RuntimeError(f"topics {topics} did not get leaders on every broker within 60s")
    return tps


def _assignments(env: ChaosEnvironment, topics: list[str]) -> dict[Tp, tuple[int, ...]]:
    found, _ = env.store.get_topic_assignments(topics)
    return {(t, p): tuple(a.replicas) for t, ta in found.items() for p, a in ta.partitions.items()}


def run_campaign(cfg: CampaignConfig, progress: Progress = _stderr) -> dict[str, Any]:
    """Run one campaign; returns the report (also written under `cfg.workdir`)."""
    cfg.validate()
    root = (Path(cfg.workdir) / f"seed-{cfg.seed}-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    root.mkdir(parents=True, exist_ok=True)
    for gone in leftovers.cleanup_leftovers():  # what campaigns killed from outside left behind
        progress(f"chaos: removed what a killed campaign left in {gone.root}: {gone.processes} processes, "
                 f"{gone.mounts} mounts, {gone.namespaces} namespaces and links")
    owner = leftovers.claim(root)
    kinds = cfg.effective_kinds()
    schedule = build_schedule(cfg.seed, cfg.faults, kinds, cfg.min_gap_s, cfg.max_gap_s)
    progress(f"chaos: seed {cfg.seed} (replay with --seed {cfg.seed}), {cfg.faults} faults over {kinds}, "
             f"{cfg.brokers} brokers, directory {root}")
    (root / "schedule.json").write_text(json.dumps([p.to_json() for p in schedule], indent=1))
    timeline = Timeline()
    env = ChaosEnvironment(cfg, root)
    stop_admin, stop_clients, stop_watch = threading.Event(), threading.Event(), threading.Event()
    threads: list[threading.Thread] = []
    faults: list[FaultRecord] = []
    ledger = Ledger(timeline)
    admin: AdminWorker | None = None
    hw_monitor: HighWatermarkMonitor | None = None
    observer: ClusterObserver | None = None
    consumers: list[ConsumerWorker] = []
    producers: list[ProducerWorker] = []
    group: ConsumerGroup | None = None
    group_ledger: GroupLedger | None = None
    txn: TxnWorkload | None = None
    share: ShareWorkload | None = None
    share_figures: dict[str, Any] | None = None
    txn_ops: list[dict[str, Any]] = []
    verdict: Verdict | None = None
    health = inv.Health(False, 0.0, ["not reached"])
    final = inv.FinalRead()
    assignments: dict[Tp, tuple[int, ...]] = {}
    interrupted = ""
    try:
        progress("chaos: starting ZooKeeper and brokers")
        env.start()
        timeline.add("note", "cluster up", brokers=cfg.brokers, zookeeper=env.zk_connect)
        tps = _create_data_topics(env, cfg)
        timeline.add("note", "data topics ready", partitions=len(tps))
        clients_log = _client_logger(root / "clients.log")
        consumers = [ConsumerWorker(f"c{i}", env.access(Role.READER), tps, ledger, stop_watch, clients_log)
                     for i in range(cfg.consumers)]
        producers = [ProducerWorker(f"p{i}", env.access(Role.PRODUCER), tps, ledger, cfg.records_per_second,
                                    stop_clients, clients_log)
                     for i in range(cfg.producers)]
        hw_monitor = HighWatermarkMonitor(env, tps, timeline, stop_watch)
        observer = ClusterObserver(env, set(_data_topics(cfg)), timeline, stop_watch)
        admin = AdminWorker(env, tps, timeline, cfg.seed, cfg.admin_interval_s, stop_admin)
        threads = [*consumers, *producers, hw_monitor, observer, admin]
        for t in threads:
            t.start()
        if cfg.workload == "txn":
            _create_topics(env, cfg, TOPIC_PARTITIONS)
            txn = TxnWorkload(root, env.access, timeline, cfg.seed)
            txn.start()
        if cfg.workload == "share":
            share = ShareWorkload(root, env, timeline, cfg.seed, clients_log)
            share.start(lambda parts: _create_topics(env, cfg, parts), stop_clients)
        if cfg.group_members > 0:
            group = ConsumerGroup(root, env.access(Role.READER), _data_topics(cfg), timeline, cfg.group_members)
            group.start()
        time.sleep(3.0)
        if txn is not None:
            txn.wait_working(TXN_START_S)
        injector = FaultInjector(env, timeline, group, txn)
        for plan in schedule:
            wait_until(lambda: env.live_broker_ids() == set(env.brokers()) and env.controller_id() > 0, 30)
            rec = injector.inject(plan)
            if rec is not None:
                faults.append(rec)
                progress(f"chaos: fault {plan.index + 1}/{len(schedule)} {rec.kind} "
                         f"{target_label(rec.kind)} {rec.target}"
                         f"{' (controller)' if rec.was_controller else ''}: "
                         f"{'healed' if rec.ok else 'FAILED ' + rec.error} at {rec.healed_t:.1f}s, "
                         f"{ledger.acked_count()} acked, {len(timeline.violations)} violations")
            time.sleep(plan.gap_s)
        stop_admin.set()
        admin.join(timeout=60)
        injector.heal_everything()
        progress("chaos: faults done; waiting for the cluster to heal")
        health = inv.wait_healthy(env, admin.deleted, cfg.heal_timeout_s, timeline)
        time.sleep(2.0)
        stop_clients.set()
        for p in producers:
            p.join(timeout=60)
        if any(p.is_alive() for p in producers):  # its late acknowledgements would pass for lost records
            timeline.add("note", "a producer was still running at the final read: "
                         + ", ".join(p.pname for p in producers if p.is_alive()))
        progress(f"chaos: healed={health.healthy} in {health.waited_s:.1f}s; reading every record back")
        assignments = _assignments(env, _data_topics(cfg))
        final = inv.read_everything(env.access(Role.READER), tps, clients_log,
                                    wanted=inv.acked_ends(ledger.snapshot_acked()))
        if final.end_moves or final.below_acked:
            timeline.add("note", f"final read: the end offsets moved {final.end_moves} times while the clients "
                         f"were stopped; {len(final.below_acked)} partitions ended below what was acknowledged",
                         end_queries=final.end_queries, below_acked=final.below_acked)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(
                max(ledger.served.get(tp, {-1: ""}), default=-1) + 1 < final.high_watermarks.get(tp, 0) for tp in tps):
            time.sleep(0.2)
        if group is not None:
            group_ledger = _finish_group(group, final, tps, clients_log, timeline, progress)
        if txn is not None:
            progress("chaos: stopping the transactional writers; reading every transactional record back")
            txn_ops, verdict = txn.finish(clients_log)
        if share is not None:
            progress("chaos: letting the share group finish every record; judging it")
            share_figures = share.finish()
    except KeyboardInterrupt:
        interrupted = "interrupted"
        timeline.add("note", "campaign interrupted")
        raise
    finally:
        stop_admin.set()
        stop_clients.set()
        stop_watch.set()
        for t in threads:
            t.join(timeout=30)
        if group is not None:
            group.stop()
        if txn is not None:
            txn.stop()
        if share is not None:
            share.stop()
        progress("chaos: stopping the cluster")
        replica_divergent = -1
        try:
            env.stop_cluster()
            if not interrupted:  # every log dir, before any tmpfs one is unmounted
                replica_divergent = inv.check_replicas(env.log_dirs(), assignments, final, timeline)
                inv.describe_copies(env.log_dirs(), final)
        except Exception:  # noqa: BLE001 - reported as -1; close() must still run
            log.exception("comparing the replicas on disk failed")
        finally:
            env.close()
            leftovers.release(owner)  # not reached if close() failed: cleanup_leftovers finishes it
    return _judge(cfg, root, timeline, env, ledger, faults, final, health, replica_divergent, hw_monitor,
                  observer, admin, consumers, producers, interrupted, group_ledger,
                  (txn_ops, verdict, txn.problems if txn is not None else []), share_figures)


def _finish_group(group: ConsumerGroup, final: inv.FinalRead, tps: list[Tp], logger: logging.Logger,
                  timeline: Timeline, progress: Progress) -> GroupLedger:
    """Let the group commit up to every final high watermark (bounded), stop its members, and
    ask the coordinator a last time what is committed."""
    t0 = time.monotonic()
    caught_up = False
    while time.monotonic() - t0 < GROUP_CATCH_UP_S:
        try:
            committed = group.committed(tps, logger, timeout=10)
        except Exception as e:  # noqa: BLE001 - the coordinator may still be moving
            log.debug("committed offsets unreadable: %s", e)
            committed = {}
        if all(committed.get(tp, -1) >= final.high_watermarks.get(tp, 0) for tp in tps):
            caught_up = True
            break
        time.sleep(0.5)
    waited = round(time.monotonic() - t0, 2)
    timeline.add("group", f"group {'caught up' if caught_up else 'did not catch up'} after {waited:.1f}s")
    progress(f"chaos: consumer group {'caught up' if caught_up else 'DID NOT catch up'} in {waited:.1f}s")
    if not caught_up:
        state = group.state_line()
        timeline.add("group", f"group not caught up: {state}")
        progress(f"chaos: group {state}")
    group.stop()
    last: dict[Tp, int] = {}
    for _attempt in range(3):
        try:
            last = group.committed(tps, logger, timeout=15)
        except Exception as e:  # noqa: BLE001
            log.warning("final OffsetFetch failed: %s", e)
        if len(last) == len(tps):
            break
        time.sleep(1.0)
    g = group.collect()
    g.final_committed = last
    g.caught_up, g.catch_up_s = caught_up, waited
    return g


def _judge(cfg: CampaignConfig, root: Path, timeline: Timeline, env: ChaosEnvironment, ledger: Ledger,
           faults: list[FaultRecord], final: inv.FinalRead, health: inv.Health,
           replica_divergent: int, hw_monitor: HighWatermarkMonitor | None,
           observer: ClusterObserver | None, admin: AdminWorker | None, consumers: list[ConsumerWorker],
           producers: list[ProducerWorker], interrupted: str,
           group_ledger: GroupLedger | None = None,
           txn: tuple[list[dict[str, Any]], Verdict | None, list[str]] = ([], None, []),
           share: dict[str, Any] | None = None) -> dict[str, Any]:
    hw = hw_monitor.state if hw_monitor else HwState()
    txn_ops, verdict, txn_problems = txn
    for problem in txn_problems:
        timeline.violate("txn_workload", problem)
    if verdict is not None:
        for anomaly, n in verdict.counts.items():
            if n:
                timeline.violate(anomaly, f"{n} in the transactional history", examples=verdict.examples[anomaly][:3])
    for what, ok in env.refusals.items():
        if not ok:
            timeline.violate("security_probe_accepted", f"a secure broker let in what it must refuse: {what}")
    records = inv.check_records(ledger, final, hw, timeline)
    group = inv.check_group(group_ledger, ledger, timeline) if group_ledger is not None else None
    if replica_divergent < 0:
        timeline.violate("replicas_unread", "the replicas' segment files could not be compared")
        replica_divergent = 0
    controllers = inv.check_controllers(inv.read_state_change_logs(env.cluster.root), timeline)
    obs = observer.state if observer else None
    memory = inv.check_memory(obs.incarnations if obs else {}, cfg.rss_bound_mb, cfg.rss_growth_bound_mb, timeline)
    timeline.finish()
    by_kind: dict[str, int] = {}
    for f in faults:
        by_kind[f.kind] = by_kind.get(f.kind, 0) + 1
    gaps = _failover_gaps(faults, controllers.elections)
    unavailable = obs.unavailable_s if obs else {}
    worst = max(unavailable.items(), key=lambda kv: kv[1], default=("-", 0.0))
    figures = {
        "faults": len(faults),
        "faults_by_kind": by_kind,
        "faults_failed": sum(1 for f in faults if not f.ok),
        "slow_heals": [
            {"index": f.index, "kind": f.kind, "target": f.target, "seconds": round(f.healed_t - f.start_t, 1)}
            for f in faults
            if f.healed_t - f.start_t > SLOW_HEAL_S
        ],
        "sent": ledger.sent,
        **{k: v for k, v in asdict(records).items()},
        "replica_divergent_offsets": replica_divergent,
        "divergent_offsets": records.divergent_offsets + replica_divergent,
        "produce_refused_locally": sum(p.refused for p in producers),
        "consumer_errors": sum(c.errors for c in consumers),
        "served_by_consumers": ledger.served_count,
        "consumer_rewinds": ledger.rewinds,
        "hw_samples": hw.samples,
        "hw_regressions": hw.regressions,
        "hw_cross_epoch_dips": hw.cross_epoch_dips,
        "controller_failovers": max(0, len(controllers.elections) - 1),
        "controller_epochs": sorted(controllers.epochs),
        "failover_ms_median": statistics.median(controllers.failover_ms) if controllers.failover_ms else 0.0,
        "failover_ms_max": max(controllers.failover_ms, default=0.0),
        "controller_gap_s": gaps,
        "no_controller_s": round(obs.no_controller_s, 2) if obs else 0.0,
        "stale_requests_refused": controllers.refused_stale,
        "controller_requests_logged": controllers.accepted_requests_logged,
        "dual_controller_acceptances": (controllers.dual_controller_acceptances
                                        + (obs.dual_active_samples if obs else 0)),
        "controller_overlap_samples": obs.overlap_samples if obs else 0,
        "unavailable_s": {k: round(v, 2) for k, v in sorted(unavailable.items())},
        "unavailable_s_total": round(sum(unavailable.values()), 2),
        "unavailable_worst": f"{worst[0]} {worst[1]:.1f}s",
        "rss_peak_mb": max(memory.peak_mb.values(), default=0.0),
        "rss_peak_by_process": memory.peak_mb,
        "rss_growth_by_process": memory.growth_mb,
        "group_commit_regressions": group.commit_regressions + group.observed_regressions if group else 0,
        "group_undelivered": group.undelivered if group else 0,
        "group": asdict(group) if group else None,
        "txn": {**asdict(summarize(txn_ops)), **verdict.to_json()} if verdict is not None else None,
        "share": share,
        "violations": len(timeline.violations),
    }
    report: dict[str, Any] = {
        "seed": cfg.seed,
        "config": cfg.to_json(),
        "interrupted": interrupted,
        "duration_s": round(timeline.now(), 1),
        "figures": figures,
        "faults": [f.to_json() for f in faults],
        "admin": admin.outcomes if admin else {},
        "health": asdict(health),
        "security_refusals": env.refusals,
        "controller_elections": controllers.elections,
        "violations": [{**violation_json(v), "seed": cfg.seed} for v in timeline.violations],
        "events": [asdict(e) for e in timeline.events],
        "paths": {"json": str(root / "report.json"), "summary": str(root / "summary.txt"),
                  "plot": str(root / "timeline.png"), "cluster": str(env.cluster.root),
                  **({"history": str(root / "history.jsonl")} if verdict is not None else {})},
    }
    (root / "report.json").write_text(json.dumps(report, indent=1, default=str))
    (root / "summary.txt").write_text(summary_text(report) + "\n")
    ack_times = [a.t for a in ledger.snapshot_acked().values()]
    try:
        latencies = [(timeline.t_of_wall(int(o["t"] * 1000)), max(1e-3, o["t"] - o["invoke_t"]), o["type"])
                     for o in txn_ops if o.get("op") == "txn" and "invoke_t" in o]
        plot_timeline(report, ack_times, timeline.samples, root / "timeline.png", latencies)
    except Exception as e:  # noqa: BLE001 - a plot failure must not hide the verdict
        log.warning("timeline plot failed: %s", e)
        report["paths"]["plot"] = ""
    report["headline"] = headline(report)
    return report


def _failover_gaps(faults: list[FaultRecord], elections: list[dict[str, Any]]) -> list[float]:
    """For each fault that took the controller away: seconds until the next controller election."""
    gaps = []
    for f in faults:
        if not f.was_controller or f.kind in CONTROLLER_KEEPING_KINDS:
            continue
        nxt = next((e for e in elections if e["t"] >= f.start_t), None)
        if nxt is not None:
            gaps.append(round(nxt["t"] - f.start_t, 2))
    return gaps
