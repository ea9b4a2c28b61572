"""The timeline plot of a campaign (PNG): what was done to the cluster, and how it fared.

Panels, sharing the time axis: faults as spans per target (one row per broker, one for
ZooKeeper, one for the consumer group's members), acknowledged records per second, offline
and under-replicated partitions, the controller epoch, broker RSS, and (with the
transactional workload) every transaction's latency at its completion, coloured ok / fail /
indeterminate, over the fault intervals shaded, as Jepsen's plots are. Violations are red
lines across every panel.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

KIND_COLORS = {
    "kill": "tab:red", "kill_controller": "darkred", "pause": "tab:purple", "zk_expire": "tab:orange",
    "controlled_restart": "tab:blue", "stutter": "tab:olive", "stale_controller": "tab:cyan",
    "forged_controller": "tab:gray",
    "member_kill": "tab:green", "coordinator_kill": "tab:pink", "zk_member_kill": "tab:brown",
    "full_disk": "gold", "partition": "black", "one_way": "dimgray", "flaky_link": "silver",
    "long_pause": "indigo",
}
#: a transaction's outcome → its colour in the latency panel
OUTCOME_COLORS = {"ok": "tab:blue", "fail": "tab:red", "info": "tab:orange"}


def _per_second(times: list[float]) -> tuple[list[float], list[float]]:
    if not times:
        return [], []
    end = int(max(times)) + 1
    counts = [0.0] * (end + 1)
    for t in times:
        counts[int(t)] += 1
    return list(range(end + 1)), counts


def plot_timeline(report: dict[str, Any], ack_times: list[float], samples: dict[str, list[tuple[float, float]]],
                  path: Path, latencies: list[tuple[float, float, str]] | None = None) -> Path | None:
    """`latencies`: (completion time, seconds taken, outcome) of each transaction."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle
    except ImportError:  # pragma: no cover - matplotlib is a test dependency
        return None
    panels = 6 if latencies else 5
    fig, axes = plt.subplots(panels, 1, figsize=(16, 11 + 2 * (panels - 5)), sharex=True,
                             gridspec_kw={"height_ratios": [2, 1.3, 1.3, 1, 1.3, 1.6][:panels]})
    ax_f, ax_a, ax_p, ax_c, ax_m = axes[:5]
    if latencies:
        ax_l = axes[5]
        for fault in report["faults"]:  # shaded, as Jepsen shades its nemesis intervals
            end = fault["healed_t"] if fault["healed_t"] >= 0 else fault["start_t"] + 1
            ax_l.axvspan(fault["start_t"], end, color=KIND_COLORS.get(fault["kind"], "grey"), alpha=0.15, lw=0)
        for outcome, color in OUTCOME_COLORS.items():
            pts = [(t, d) for t, d, o in latencies if o == outcome]
            ax_l.scatter([p[0] for p in pts], [p[1] for p in pts], s=4, color=color, label=f"{outcome} {len(pts)}")
        ax_l.set_yscale("log")
        ax_l.set_ylabel("txn latency s")
        ax_l.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    brokers = int(report["config"]["brokers"])
    for fault in report["faults"]:
        row = {"zk_member_kill": -1, "member_kill": 0}.get(fault["kind"], int(fault["target"] or 0))
        end = fault["healed_t"] if fault["healed_t"] >= 0 else fault["start_t"] + 1
        ax_f.barh(row, end - fault["start_t"], left=fault["start_t"], height=0.6,
                  color=KIND_COLORS.get(fault["kind"], "grey"), edgecolor="black", linewidth=0.3)
    ensemble = int(report["config"].get("zk_ensemble", 1)) > 1
    group = any(f["kind"] == "member_kill" for f in report["faults"])
    rows = ([-1] if ensemble else []) + ([0] if group else []) + list(range(1, brokers + 1))
    ax_f.set_yticks(rows, (["zk"] if ensemble else []) + (["group"] if group else [])
                    + [f"b{b}" for b in range(1, brokers + 1)])
    ax_f.set_title(f"chaos seed {report['seed']}: {report['figures']['faults']} faults, "
                   f"{report['figures']['acked']} acked, {report['figures']['lost']} lost, "
                   f"{report['figures']['violations']} violations")
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in KIND_COLORS.values()]
    ax_f.legend(handles, list(KIND_COLORS), loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    xs, ys = _per_second(ack_times)
    ax_a.plot(xs, ys, lw=0.8)
    ax_a.set_ylabel("acks/s")
    for series, style in (("offline_partitions", "r-"), ("under_replicated_partitions", "y-")):
        pts = samples.get(series, [])
        if pts:
            ax_p.step([p[0] for p in pts], [p[1] for p in pts], style, lw=0.8, where="post", label=series)
    ax_p.set_ylabel("partitions")
    if ax_p.get_legend_handles_labels()[0]:
        ax_p.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    pts = samples.get("controller_epoch", [])
    if pts:
        ax_c.step([p[0] for p in pts], [p[1] for p in pts], "k-", lw=0.8, where="post")
    ax_c.set_ylabel("ctrl epoch")
    for name, pts in sorted(samples.items()):
        if name.startswith("rss_mb_") and pts:
            ax_m.plot([p[0] for p in pts], [p[1] for p in pts], lw=0.8, label=name[len("rss_mb_"):])
    ax_m.set_ylabel("RSS MB")
    axes[-1].set_xlabel("seconds since start")
    if ax_m.get_legend_handles_labels()[0]:
        ax_m.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    for v in report["violations"]:
        for ax in axes:
            ax.axvline(v["t"], color="red", lw=1.0, alpha=0.7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
