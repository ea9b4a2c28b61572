"""Presenting an `Analysis`: text tables, CSV + Parquet files, and the offline-partitions plot."""
from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path
from typing import Any

from praha.analytics.state_change import Analysis, offline_series, under_replicated_series


def format_table(columns: list[str], data: list[tuple[Any, ...]], limit: int | None = None) -> str:
    shown = data if limit is None else data[:limit]
    cells = [[_cell(v) for v in r] for r in shown]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells]
    if limit is not None and len(data) > limit:
        lines.append(f"... {len(data) - limit} more rows (see the CSV)")
    return "\n".join(lines)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def _ts(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def summary_text(a: Analysis, limit: int = 40) -> str:
    out = []
    span = (a.end_ms - a.start_ms) / 1000
    out.append(f"state-change logs from {_ts(a.start_ms)} to {_ts(a.end_ms)} ({span:.1f} s)")
    cols, elections = a.table("elections")
    kind_i, unclean_i = cols.index("kind"), cols.index("unclean")
    kinds: dict[str, int] = {}
    for r in elections:
        kinds[r[kind_i]] = kinds.get(r[kind_i], 0) + 1
    unclean = sum(1 for r in elections if r[unclean_i])
    out.append("elections by kind: " + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none")
               + f"; unclean: {unclean}")
    cols, offline = a.table("offline")
    off = sum(r[cols.index("duration_ms")] for r in offline)
    out.append(f"offline: {len(offline)} periods, {off / 1000:.2f} partition-seconds "
               "(from the controller learning of a leader's death to the next election)")
    out.append("\ncontrollers:")
    out.append(format_table(*a.table("controllers")))
    out.append("\nper broker:")
    out.append(format_table(*a.table("brokers")))
    out.append("\nper partition:")
    out.append(format_table(*a.table("partitions"), limit=limit))
    return "\n".join(out)


TABLES = {"partitions": "partitions", "brokers": "brokers", "controllers": "controllers",
          "elections": "elections", "offline_periods": "offline", "under_replicated_periods": "under_replicated"}


def write_outputs(a: Analysis, out_dir: str | Path, formats: tuple[str, ...] = ("csv", "parquet")) -> list[Path]:
    """Every result table as a CSV file and/or a Parquet dataset in `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, attr in TABLES.items():
        if "csv" in formats:
            cols, data = a.table(attr)
            path = out / f"{name}.csv"
            with open(path, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(cols)
                w.writerows(data)
            written.append(path)
        if "parquet" in formats:
            path = out / f"{name}.parquet"
            getattr(a, attr).coalesce(1).write.mode("overwrite").parquet(str(path))
            written.append(path)
    return written


def plot_offline(a: Analysis, path: str | Path) -> Path:
    """Offline (and under-replicated) partitions over time, controller elections marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = a.start_ms
    fig, ax = plt.subplots(figsize=(10, 4))
    for series, label, color, width in ((under_replicated_series(a), "under-replicated partitions", "tab:orange", 1.2),
                                        (offline_series(a), "offline partitions", "tab:red", 2.0)):
        xs = [0.0] + [(t - t0) / 1000 for t, _ in series] + [(a.end_ms - t0) / 1000]
        ys = [0] + [v for _, v in series] + [series[-1][1] if series else 0]
        ax.step(xs, ys, where="post", label=label, color=color, linewidth=width)
    cols, controllers = a.table("controllers")
    for r in controllers:
        at = (r[cols.index("elected_ms")] - t0) / 1000
        ax.axvline(at, color="tab:blue", alpha=0.4, linestyle="--")
        ax.text(at, ax.get_ylim()[1] * 0.95, f" controller {r[cols.index('controller')]}\n"
                f" epoch {r[cols.index('controller_epoch')]}", fontsize=7, color="tab:blue", va="top")
    ax.set_xlabel(f"seconds since {_ts(t0)}")
    ax.set_ylabel("partitions")
    ax.set_title("praha: partitions offline / under-replicated over time (from the state-change logs)")
    ax.legend(loc="upper right")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
