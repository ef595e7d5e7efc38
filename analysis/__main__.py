"""`python -m analysis --grid NAME`: print the comparison of a sweep with the paper (exit 2 on bad input).

Without `--run` the report is of the grid's latest sweep; `--run ID1,ID2` reads several sweeps (seeds or
points run apart) as one.
"""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from analysis.findings import Finding
from analysis.load import AnalysisError, Sweep, read_sweep
from analysis.report import FORMATS, report_sweep
from analysis.ui_view import share_view, ui_command
from arith.config import ConfigError, TrackingConfig


def check_out(out: Path) -> None:
    """--out names a folder to write into or to create: refused before the analysis runs, not after."""
    blocked = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise AnalysisError(f"--out {out}: {blocked} is a file; name a folder (new, or one to write into)")


def analysis_parser(prog: str = "python -m analysis") -> argparse.ArgumentParser:
    """The command line's flags (a command may add its own)."""
    p = argparse.ArgumentParser(prog=prog, description=__doc__)
    p.add_argument(
        "--grid", required=True, help="the sweep's grid (`python sweeps/run.py --list`), e.g. nl_mix"
    )
    p.add_argument(
        "--tracking-uri",
        default="",
        help="MLflow store; default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db",
    )
    p.add_argument(
        "--run",
        default=None,
        help="the sweep's parent run id (default: the grid's latest sweep); several, comma-separated, "
        "read as one sweep (seeds or points run apart)",
    )
    p.add_argument("--format", default="markdown", choices=list(FORMATS))
    p.add_argument("--out", default=None, help="folder for the report, CSVs and heatmaps")
    p.add_argument("--no-log", action="store_true", help="do not log the outputs on the parent run")
    p.add_argument(
        "--ui-url",
        default=None,
        metavar="URL",
        help="also store a ready-made MLflow UI view of the sweep and print its link under this `mlflow ui` "
        "address (e.g. http://127.0.0.1:5000)",
    )
    return p


@dataclass(frozen=True)
class ReportOptions:
    """What the command line asks of the report (`runs`: parent run ids; empty: the grid's latest)."""

    grid: str
    tracking_uri: str
    runs: tuple[str, ...] = ()
    format: str = "markdown"
    out: str | None = None
    no_log: bool = False
    ui_url: str | None = None


def read_report_options(
    argv: list[str] | None, parser: argparse.ArgumentParser | None = None
) -> tuple[ReportOptions, argparse.Namespace]:
    """argv read by `parser` (default `analysis_parser()`): the report's options, and every flag parsed."""
    args = (parser or analysis_parser()).parse_args(argv)
    uri = TrackingConfig(tracking_uri=args.tracking_uri).resolved_uri()
    runs = tuple(r for r in (args.run or "").split(",") if r)
    return ReportOptions(args.grid, uri, runs, args.format, args.out, args.no_log, args.ui_url), args


def print_report(
    options: ReportOptions,
    rejudge: Callable[[list[Finding]], list[Finding]] | None = None,
    note: Callable[[Sweep], str] = lambda sweep: "",
) -> int:
    """Read the sweep, write and print its report; `rejudge`: as `analysis.report.report_sweep`'s;
    `note`: a line for stderr about the sweep read."""
    uri = options.tracking_uri
    try:
        if options.out:
            check_out(Path(options.out))
        # read once: the report and the UI view share it
        sweep = read_sweep(options.grid, uri, list(options.runs) or None)
        log = not options.no_log
        text = report_sweep(sweep, options.out, options.format, log, rejudge, options.ui_url or "")
        link = share_view(sweep, options.ui_url) if options.ui_url else ""
        said = note(sweep)
    except (AnalysisError, ConfigError) as err:  # ConfigError: a broken plugin of experiments
        print(f"analysis: {err}", file=sys.stderr)
        return 2
    if said:
        print(said, file=sys.stderr)
    if options.format == "html" and options.out:  # a page of inline images is for a browser, not a terminal
        print(f"HTML report: {Path(options.out) / 'report.html'} (open it in a browser)")
        print(f"heatmaps and CSVs: {Path(options.out)}/")
    else:
        print(text)
    if link:
        print(f"MLflow UI view of this sweep: {link}")
        print(f"  charts of the same groups:   {link}&compareRunsMode=CHART")
        if not uri.startswith(("http://", "https://")):
            port = urllib.parse.urlparse(options.ui_url).port or 5000
            print(f"  start the UI first:          {ui_command(uri, port)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    options, _ = read_report_options(argv)
    return print_report(options)


if __name__ == "__main__":
    sys.exit(main())
