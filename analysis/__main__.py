"""`python -m analysis --grid NAME`: print the comparison of a sweep with the paper (exit 2 on bad input)."""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from pathlib import Path

from analysis.load import AnalysisError, read_sweep
from analysis.report import FORMATS, report_sweep
from analysis.ui_view import share_view
from arith.config import ConfigError, TrackingConfig


def check_out(out: Path) -> None:
    """--out names a folder to write into, or one to create: refused before the analysis runs, not after."""
    blocked = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise AnalysisError(f"--out {out}: {blocked} is a file; name a folder (new, or one to write into)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis", description=__doc__)
    parser.add_argument(
        "--grid", required=True, help="the sweep's grid (`python sweeps/run.py --list`), e.g. nl_mix"
    )
    parser.add_argument(
        "--tracking-uri",
        default="",
        help="MLflow store; default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db",
    )
    parser.add_argument(
        "--run",
        default=None,
        help="the sweep's parent run id (default: the grid's latest sweep); several, comma-separated, "
        "read as one sweep (seeds or points run apart)",
    )
    parser.add_argument("--format", default="markdown", choices=list(FORMATS))
    parser.add_argument("--out", default=None, help="folder for the report, CSVs and heatmaps")
    parser.add_argument("--no-log", action="store_true", help="do not log the outputs on the parent run")
    parser.add_argument(
        "--ui-url",
        default=None,
        metavar="URL",
        help="also store a ready-made MLflow UI view of the sweep and print its link under this `mlflow ui` "
        "address (e.g. http://127.0.0.1:5000)",
    )
    args = parser.parse_args(argv)
    uri = TrackingConfig(tracking_uri=args.tracking_uri).resolved_uri()
    runs = [r for r in args.run.split(",") if r] if args.run else None
    try:
        if args.out:
            check_out(Path(args.out))
        sweep = read_sweep(args.grid, uri, runs)  # read once: the report and the UI view share it
        text = report_sweep(sweep, args.out, args.format, log_artifacts=not args.no_log)
        link = share_view(sweep, args.ui_url) if args.ui_url else ""
    except (AnalysisError, ConfigError) as err:  # ConfigError: a broken plugin of experiments
        print(f"analysis: {err}", file=sys.stderr)
        return 2
    if args.format == "html" and args.out:  # a page of inline images is for a browser, not a terminal
        print(f"HTML report: {Path(args.out) / 'report.html'} (open it in a browser)")
        print(f"heatmaps and CSVs: {Path(args.out)}/")
    else:
        print(text)
    if link:
        print(f"MLflow UI view of this sweep: {link}")
        print(f"  charts of the same groups:   {link}&compareRunsMode=CHART")
        if not uri.startswith(("http://", "https://")):
            port = urllib.parse.urlparse(args.ui_url).port or 5000
            print(f"  start the UI first:          mlflow ui --backend-store-uri {uri} --port {port}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
