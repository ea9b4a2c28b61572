"""Log-log plots of a bench's figures against the raw write limit."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def loglog_plot(path: Path, title: str, xs: Sequence[float], series: Sequence[tuple[Sequence[float], str, dict]],
                xlabel: str = "partitions (RF 3)", hline: tuple[float, str] | None = None,
                legend_fontsize: float | None = None, dpi: int = 110) -> None:
    """A log-log plot of `series` = (ys, style, matplotlib keywords such as label) against
    `xs`, with an optional horizontal target line (value, label): the times grow over decades
    of P, which only a log-log scale shows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for ys, style, kw in series:
        ax.plot(xs, ys, style, **kw)
    if hline:
        ax.axhline(hline[0], color="red", linestyle=":", alpha=0.6, label=hline[1])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("seconds")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend_fontsize)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def plot_vs_raw(path: Path, title: str, rows: list[dict], curves: list[tuple[str, str, str]],
                target_s: float | None = None, target_ratio: float | None = None) -> None:
    """Log-log: each (row key, label, style) against P, with the raw limit and targets."""
    series = [([r[key] for r in rows], style, {"label": label}) for key, label, style in curves]
    series.append(([r["raw_s"] for r in rows], "s--", {"label": "raw limit: fenced multi-op writes (100/op)"}))
    if target_ratio:
        series.append(([target_ratio * r["raw_s"] for r in rows], ":",
                       {"color": "grey", "label": f"{target_ratio:g}× raw limit (target)"}))
    loglog_plot(path, title, [r["P"] for r in rows], series,
                hline=(target_s, f"{target_s:g} s target") if target_s else None, legend_fontsize=8)

