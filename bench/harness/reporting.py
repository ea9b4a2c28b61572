"""RESULTS.md sections and a bench's tables, medians and verdicts."""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .load import machine_line


def write_section(path: Path, heading: str, section: str) -> None:
    """Replace the section that starts with the line `heading` (up to the next `## `), or
    append it; the other sections are kept as they are."""
    if not section.startswith(heading + "\n"):
        raise ValueError("the section must start with its heading line")
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    start = text.find(heading + "\n")
    while start > 0 and text[start - 1] != "\n":  # a heading line, not a substring of another
        start = text.find(heading + "\n", start + 1)
    if start >= 0:
        nxt = text.find("\n## ", start + 1)
        text = text[:start] + section.rstrip("\n") + "\n" + (text[nxt:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    path.write_text(text)


def fmt_s(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"  # noqa: PLR0124 - NaN check


def median(xs: Sequence[float]) -> float:
    import statistics

    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def summarise_trials(results: dict[int, list], medians: dict[str, str],
                     extremes: dict[str, tuple[Callable, str]] | None = None) -> list[dict]:
    """One row per size: "P", then for each `medians` entry (row key → trial field) the median
    over the trials (trials where it is NaN left out: a figure a trial could not take), for each
    `extremes` entry (row key → (max or min, trial field)) the worst trial's, and "trials"."""
    rows = []
    for p, trials in results.items():
        row: dict = {"P": p}
        row.update({key: median([getattr(t, name) for t in trials]) for key, name in medians.items()})
        row.update({key: agg(getattr(t, name) for t in trials) for key, (agg, name) in (extremes or {}).items()})
        row["trials"] = len(trials)
        rows.append(row)
    return rows


# ------------------------------------------------------------------------- a bench's tables, verdicts, section, plot
Column = tuple[str, "str | Callable[[dict], str]"]


def secs(key: str) -> Callable[[dict], str]:
    """A table cell: the row's `key` in seconds (`fmt_s`: "n/a" for a figure not taken)."""
    return lambda r: fmt_s(r[key])


#: the columns every controller bench's table ends with
OTHER_LOAD: Column = ("other load", lambda r: f"{r['other_load'] * 100:.0f}%")
TRIALS: Column = ("trials", "{trials}")


def md_table(columns: Sequence[Column], rows: list[dict]) -> str:
    """A right-aligned Markdown table, one line per row, as RESULTS.md has them; each column is
    (header, cell) where the cell is a format template of the row (`"{P:,}"`) or a function of it."""
    cell = [(c if callable(c) else c.format_map) for _h, c in columns]
    return ("| " + " | ".join(h for h, _c in columns) + " |\n" + "|" + "---:|" * len(columns) + "\n"
            + "".join("| " + " | ".join(f(r) for f in cell) + " |\n" for r in rows))


def ratio_verdict(r: dict) -> str:
    """The verdict every size gets: its time as a multiple of the raw write limit."""
    return f"P={r['P']:,}: {fmt_s(r['time_s'])}s = {r['ratio']:.2f}x the raw limit"


def target_verdicts(r: dict, target_s: float) -> list[str]:
    """The absolute target's verdict, for the P = 10,000 row only (the size it is set at)."""
    if r["P"] != 10_000:
        return []
    ok = r["time_s"] < target_s
    return [f"P=10,000: {fmt_s(r['time_s'])}s ({'meets' if ok else 'MISSES'} < {target_s:g} s)"]


def missing_verdicts(r: dict, what: str = "") -> list[str]:
    """A warning when partitions were never acknowledged (`what`: with which leader), since the
    time of such a size is then only a lower bound."""
    return [f"P={r['P']:,}: {r['missing']} partitions never acknowledged{what}"] if r["missing"] else []


def rig_machine(zk: str = "", broker: str = "", stand_ins: str = "") -> str:
    """The "Machine:" paragraph of a `Rig` bench's section: the machine, then what ran where;
    `zk`, `broker`, `stand_ins` add to the notes on ZooKeeper, broker 1 and the stand-ins."""
    return (f"{machine_line()}. ZooKeeper 3.9 embedded (forceSync=no{zk}); broker 1 is a real broker "
            f"process and the controller (it hosts no replica{broker}); brokers 2-6 are stand-ins "
            f"({stand_ins}`bench/_harness.py`).")


def section_text(heading: str, command: str, machine: str, what: str, table: str, verdicts: list[str],
                 plot_file: str, after_verdicts: str = "") -> str:
    """A bench's RESULTS.md section, laid out as all of them are: heading, command, machine,
    what is timed, the table, the verdicts as a list, (`after_verdicts`), the plot."""
    return (
        f"{heading}\n\n"
        f"Command: `{command}`\n\n"
        f"Machine: {machine}\n\n"
        f"{what}\n\n"
        + table + "\n"
        + "".join(f"- {v}\n" for v in verdicts)
        + after_verdicts
        + f"\nPlot: `bench/{plot_file}` (log-log).\n"
    )


def report_results(args, script: str, printed: str, verdicts: list[str], heading: str,
                   section: Callable[[str], str], plot: Callable[[], None]) -> None:
    """Print the table(s) and the verdicts; unless --no-write, replace the script's section of
    --results (`section(command line)`, so that a figure can be reproduced) and draw --plot."""
    print("\n" + printed)
    for v in verdicts:
        print(v)
    if args.no_write:
        return
    command = (f"python bench/{Path(script).name} " + " ".join(sys.argv[1:])).strip()
    write_section(Path(args.results), heading, section(command))
    plot()
    print(f"\nwrote {args.results} and {args.plot}")


