"""The campaign report: one JSON document, a readable summary, and the headline figures.

`headline(report)` is the object `praha chaos --json` prints as its last line; its keys
are stable (faults, acked, lost, duplicated, divergent_offsets,
dual_controller_acceptances, violations — all counts — plus seed and a few more, among
them the consumer group's group_commit_regressions and group_undelivered).
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

from praha.chaos.share_invariants import share_line

HEADLINE_KEYS = ("seed", "faults", "acked", "lost", "duplicated", "divergent_offsets",
                 "dual_controller_acceptances", "violations")


def headline(report: dict[str, Any]) -> dict[str, Any]:
    fig = report["figures"]
    out = {"seed": report["seed"], **{k: fig[k] for k in HEADLINE_KEYS if k != "seed"}}
    out.update({
        "faults_by_kind": fig["faults_by_kind"],
        "fault_kinds": fig["faults_by_kind"],
        "read": fig["read"],
        "failed_sends": fig["failed"],
        "controller_failovers": fig["controller_failovers"],
        "group_commit_regressions": fig.get("group_commit_regressions", 0),
        "group_undelivered": fig.get("group_undelivered", 0),
        **_txn_headline(fig.get("txn")),
        **({"share_violations": fig["share"]["violations"], "share_accepted": fig["share"]["accepted"]}
           if fig.get("share") else {}),
        **({"secure": True, "security_refusals": report["security_refusals"]}
           if report.get("config", {}).get("secure") else {}),
        "violation_kinds": sorted({v["invariant"] for v in report["violations"]}),
        "duration_s": report["duration_s"],
        "report": report.get("paths", {}).get("json", ""),
    })
    return out


def _txn_headline(txn: dict[str, Any] | None) -> dict[str, Any]:
    """The transactional workload's figures (absent without --workload txn)."""
    if txn is None:
        return {}
    return {"committed_txns": txn["committed_txns"], "aborted_txns": txn["aborted_txns"],
            "indeterminate_txns": txn["indeterminate_txns"], "txn_values_committed": txn["acked"],
            "polled": txn["polled"], "anomalies": txn["anomalies"]}


def violation_json(v: Any) -> dict[str, Any]:
    return asdict(v)


def _default_kinds(cfg: dict[str, Any]) -> bool:
    from praha.chaos.config import CampaignConfig

    return list(cfg["kinds"]) == list(CampaignConfig(zk_ensemble=cfg["zk_ensemble"],
                                                     secure_zookeeper=cfg.get("secure_zookeeper", False),
                                                     secure=cfg.get("secure", False),
                                                     netns=cfg.get("netns", False),
                                                     workload=cfg.get("workload", "queue")).effective_kinds())


def _gap(f: dict[str, Any]) -> str:
    gaps = sorted(f.get("controller_gap_s") or [])
    if not gaps:
        return "no controller was hit"
    return (f"controller hit {len(gaps)}x: next election after {gaps[len(gaps) // 2]:.1f}s median / "
            f"{gaps[-1]:.1f}s max")


def _group_line(g: dict[str, Any]) -> str:
    return (f"  consumer group: {g['members_started']} members started ({g['member_kills']} SIGKILLed), "
            f"{g['rebalances']} assignments, {g['commits_acked']} commits acknowledged "
            f"({g['commit_failures']} refused), {g['observed']} committed offsets observed; "
            f"commits gone backwards {g['commit_regressions'] + g['observed_regressions']}; "
            f"delivered {g['delivered']} ids ({g['deliveries']} deliveries), undelivered acknowledged "
            f"{g['undelivered']}; caught up {'yes' if g['caught_up'] else 'NO'} in {g['catch_up_s']:.1f}s")


def _txn_line(t: dict[str, Any]) -> str:
    found = {k: n for k, n in t["anomalies"].items() if n}
    return (f"  transactions: {t['committed_txns']} committed ({t['acked']} values), {t['aborted_txns']} aborted, "
            f"{t['indeterminate_txns']} indeterminate; {t['polled']} records polled, {t['ops']} operations; "
            f"anomalies: {', '.join(f'{k} {n}' for k, n in sorted(found.items())) or 'none'} "
            f"(G0 cycles, allowed: {t['g0_cycles']}; consumers' own rewinds after OFFSET_OUT_OF_RANGE: "
            f"{t.get('offset_resets', 0)})")


def _security_line(refusals: dict[str, bool]) -> str:
    return ("  security: clients on SASL_SSL (SCRAM-SHA-512) as principals of their own, ACLs on; refused: "
            + ", ".join(f"{what} {'yes' if ok else 'NO'}" for what, ok in refusals.items()))


def summary_text(report: dict[str, Any]) -> str:
    f = report["figures"]
    cfg = report["config"]
    lines = [
        f"chaos campaign, seed {report['seed']} (replay: praha chaos --brokers {cfg['brokers']} "
        f"--faults {cfg['faults']} --seed {report['seed']}"
        + (f" --zk-ensemble {cfg['zk_ensemble']}" if cfg["zk_ensemble"] > 1 else "")
        + (" --netns" if cfg.get("netns") else "") + (" --secure" if cfg.get("secure") else "")
        + (f" --workload {cfg['workload']}" if cfg.get("workload", "queue") != "queue" else "")
        + ("" if _default_kinds(cfg) else f" --kinds {','.join(cfg['kinds'])}") + ")",
        f"  duration {report['duration_s']:.0f}s, {cfg['brokers']} brokers, ZooKeeper "
        + ("3-node ensemble" if cfg["zk_ensemble"] > 1 else "single server"),
        f"  faults: {f['faults']} ({', '.join(f'{k} {n}' for k, n in sorted(f['faults_by_kind'].items()))})"
        + (f", {f['faults_failed']} did not heal cleanly" if f["faults_failed"] else ""),
        *(["  slow heals (> 30 s): " + ", ".join(f"#{h['index']} {h['kind']} {h['target']} {h['seconds']:.0f}s"
                                                   for h in f["slow_heals"])] if f.get("slow_heals") else []),
        f"  records: sent {f['sent']}, acknowledged {f['acked']}, failed {f['failed']} "
        f"({', '.join(f'{k} {n}' for k, n in sorted(f.get('failed_by_error', {}).items())) or '-'}), "
        f"read back {f['read']}, "
        f"lost {f['lost']}, offset holes {f.get('offset_gaps', 0)}; counted client resends: "
        f"duplicated {f['duplicated']}, acknowledged out of send order {f['out_of_order']}",
        f"  divergent offsets: {f['divergent_offsets']} (served vs final), {f['replica_divergent_offsets']} "
        "(between replicas on disk)",
        f"  high watermarks: {f['hw_samples']} samples, {f['hw_regressions']} regressions within a leader epoch, "
        f"{f['hw_cross_epoch_dips']} dips across leader changes",
        f"  controllers: {f['controller_failovers']} elections (epochs {f['controller_epochs']}), "
        f"failover {f['failover_ms_median']:.0f} ms median / {f['failover_ms_max']:.0f} ms max, "
        f"{_gap(f)}, {f['stale_requests_refused']} stale requests refused, "
        f"{f['dual_controller_acceptances']} dual-controller acceptances",
        *([_group_line(f["group"])] if f.get("group") else []),
        *([_txn_line(f["txn"])] if f.get("txn") else []),
        *([share_line(f["share"])] if f.get("share") else []),
        f"  unavailability: {f['unavailable_s_total']:.1f} partition-seconds without a leader "
        f"(worst {f['unavailable_worst']})",
        *([_security_line(report["security_refusals"])] if report.get("security_refusals") else []),
        f"  memory: peak RSS {f['rss_peak_mb']:.0f} MB (bound {cfg['rss_bound_mb']:.0f} MB)",
        "  admin: " + ", ".join(f"{op} {o['ok']} ok/{o['refused']} refused" for op, o in report["admin"].items()),
        f"  healed in {report['health']['waited_s']:.1f}s: "
        + ("healthy" if report["health"]["healthy"] else "; ".join(report["health"]["problems"][:5])),
        f"  violations: {f['violations']}",
    ]
    for v in report["violations"][:20]:
        lines.append(f"    [{v['t']:8.2f}s] {v['invariant']}: {v['message']}")
        before = [e for e in v["around"] if e["t"] <= v["t"] + 1.0]
        for e in before[-6:]:
            lines.append(f"        {e['t']:8.2f}s {e['kind']}: {e['what']}")
    paths = report.get("paths", {})
    if paths:
        lines.append(f"  report: {paths.get('json')}  plot: {paths.get('plot')}")
    return "\n".join(lines)
