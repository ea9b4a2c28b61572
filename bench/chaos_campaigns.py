"""Where a chaos campaign's wall time goes, from the report.json of campaigns already run.

  python bench/chaos_campaigns.py REPORT.json [REPORT.json ...] [--plot bench/chaos-campaigns.png]

For each campaign: its figures (faults by kind, acknowledged records, transactions committed and
aborted, records polled, anomalies, violations, duration) and its wall time split into
set-up (cluster, topics, workload until it works: up to the first fault), faults (each fault
from injection to heal), between faults (the seeded gap plus the wait for every broker
registered with a controller) and the end (heal, final reads, the checks, the replica
comparison). Prints one markdown table row per campaign and the per-kind fault times over all
of them; `--plot` draws both (a bar per campaign, a bar per kind). Runs nothing itself.
"""
from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any


def phases(report: dict[str, Any]) -> dict[str, float]:
    faults = report["faults"]
    total = float(report["duration_s"])
    if not faults:
        return {"setup": total, "faults": 0.0, "between": 0.0, "end": 0.0}
    first, last = faults[0]["start_t"], faults[-1]["healed_t"]
    in_faults = sum(f["healed_t"] - f["start_t"] for f in faults)
    return {"setup": first, "faults": in_faults, "between": (last - first) - in_faults, "end": total - last}


def row(report: dict[str, Any]) -> str:
    fig, cfg = report["figures"], report["config"]
    txn = fig.get("txn") or {}
    anomalies = sum((txn.get("anomalies") or {}).values())
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(fig["faults_by_kind"].items(), key=lambda kv: (-kv[1], kv[0])))
    p = phases(report)
    flags = " ".join(x for x, on in (("--netns", cfg.get("netns")), ("--secure", cfg.get("secure")),
                                     (f"--zk-ensemble {cfg['zk_ensemble']}", cfg["zk_ensemble"] > 1)) if on)
    return (
        f"| {report['seed']} | {cfg['brokers']} {flags} | {fig['faults']} | {kinds} | {fig['acked']:,} | {fig['lost']} "
        f"| {txn.get('committed_txns', '-')} | {txn.get('aborted_txns', '-')} | {txn.get('polled', '-')} "
        f"| {anomalies} | {fig['violations']} | {report['duration_s']:.0f} "
        f"| {p['setup']:.0f} / {p['faults']:.0f} / {p['between']:.0f} / {p['end']:.0f} |"
    )


HEADER = ("| seed | brokers, options | faults | kinds | acked | lost | committed txns | aborted | polled | anomalies "
          "| violations | wall s | set-up / faults / between / end s |\n|" + "---:|" * 5 + "---:|" * 8)


def per_kind(reports: list[dict[str, Any]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for r in reports:
        for f in r["faults"]:
            out[f["kind"]].append(f["healed_t"] - f["start_t"])
    return dict(out)


def plot(reports: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.8))
    # in the order given, each named by seed, options and wall time (a seed may be run twice)
    names = [f"{i + 1}. {r['seed']}{' secure' if r['config'].get('secure') else ''} ({r['duration_s']:.0f} s)"
             for i, r in enumerate(reports)]
    left = [0.0] * len(reports)
    for key, color in (("setup", "#999"), ("faults", "#d62728"), ("between", "#ff9896"), ("end", "#1f77b4")):
        vals = [phases(r)[key] for r in reports]
        a.barh(names, vals, left=left, color=color, label=key)
        left = [x + v for x, v in zip(left, vals)]
    a.set_xlabel("wall seconds")
    a.set_title("campaigns: where the time goes")
    a.legend(loc="lower right", fontsize=8)
    kinds = per_kind(reports)
    order = sorted(kinds, key=lambda k: statistics.mean(kinds[k]))
    b.barh(order, [statistics.mean(kinds[k]) for k in order], color="#d62728")
    for i, k in enumerate(order):
        b.text(statistics.mean(kinds[k]), i, f" n={len(kinds[k])}", va="center", fontsize=7)
    b.set_xlabel("mean seconds from injection to heal")
    b.set_title("per fault kind, over all these campaigns")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports", nargs="+", type=Path)
    p.add_argument("--plot", type=Path)
    args = p.parse_args()
    reports = [json.loads(r.read_text()) for r in args.reports]
    print(HEADER)
    for r in reports:
        print(row(r))
    total = sum(r["figures"]["faults"] for r in reports)
    wall = sum(r["duration_s"] for r in reports)
    print(f"\n{total} faults in {wall:.0f} s of campaigns: {wall / max(total, 1):.1f} s per fault")
    for k, v in sorted(per_kind(reports).items(), key=lambda kv: -statistics.mean(kv[1])):
        print(f"  {k}: {len(v)} faults, mean {statistics.mean(v):.1f} s, max {max(v):.1f} s")
    if args.plot:
        plot(reports, args.plot)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
