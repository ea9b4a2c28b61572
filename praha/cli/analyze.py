"""`praha analyze state-change-log`: the operations report, computed by a PySpark batch job.

  praha analyze state-change-log --path DIR [--out OUT] [--format csv,parquet] [--no-plot]

DIR is searched recursively for `state-change.log` files (a local cluster directory
holds one per broker under broker-N/data/). Prints the tables, writes every table as
CSV and Parquet into OUT (default DIR/analysis), and a plot of offline and
under-replicated partitions over time (OUT/offline_partitions.png).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_ERROR = 0, 1


def cmd_state_change_log(args: argparse.Namespace) -> int:
    from praha.analytics.report import plot_offline, summary_text, write_outputs
    from praha.analytics.state_change import NoStateChangeEvents, analyze, first_event_file, log_files
    from praha.cli.options import CliError

    path = Path(args.path)
    if args.cores < 1:
        raise CliError(f"--cores must be at least 1, got {args.cores}")
    if not path.exists():
        raise CliError(f"--path {path} does not exist")
    files = log_files(path)
    if not files:
        raise CliError(f"no state-change.log files under {path}")
    if first_event_file(files) is None:
        raise CliError(f"no state-change events in {', '.join(files[:3])}"
                       + (f" and {len(files) - 3} more files" if len(files) > 3 else ""))
    formats = tuple(f.strip() for f in args.format.split(",") if f.strip())
    bad = [f for f in formats if f not in ("csv", "parquet")]
    if bad:
        raise CliError(f"--format takes csv and/or parquet, not {', '.join(bad)}")
    out = Path(args.out) if args.out else (path.parent if path.is_file() else path) / "analysis"
    print(f"analyzing {len(files)} state-change logs under {path} with Spark (local[{args.cores}])...",
          file=sys.stderr, flush=True)
    t0 = time.monotonic()
    from praha.spark import local_session

    spark = local_session("praha-analyze", cores=args.cores, quiet=True)
    try:
        analysis = analyze(spark, path)
    except NoStateChangeEvents as e:
        spark.stop()
        raise CliError(str(e)) from None
    print(summary_text(analysis, limit=args.limit))
    written = write_outputs(analysis, out, formats)
    if not args.no_plot:
        written.append(plot_offline(analysis, out / "offline_partitions.png"))
    print(f"\nwrote {len(written)} outputs to {out} ({time.monotonic() - t0:.1f} s):")
    for p in written:
        print(f"  {p}")
    return EXIT_OK


def register(sub: Any) -> None:
    p = sub.add_parser("analyze", help="operations analytics with Spark").add_subparsers(dest="sub", required=True)
    s = p.add_parser("state-change-log", help="elections, offline and under-replicated time, controller failovers",
                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from praha.cluster.local import DEFAULT_DIR

    s.add_argument("--path", type=Path, default=DEFAULT_DIR,
                   help=f"directory searched for state-change.log files (default {DEFAULT_DIR})")
    s.add_argument("--out", type=Path, help="output directory (default PATH/analysis)")
    s.add_argument("--format", default="csv,parquet", help="csv, parquet or both (default csv,parquet)")
    s.add_argument("--no-plot", action="store_true", help="skip the PNG plot")
    s.add_argument("--limit", type=int, default=40, help="partition rows to print (all are in the CSV)")
    s.add_argument("--cores", type=int, default=2, help="Spark local cores (default 2)")
    s.set_defaults(fn=cmd_state_change_log)
