"""`python -m analysis --grid NAME`: print the comparison of a sweep with the paper (exit 2 on bad input).

A grid the plan (docs/results/plan.yaml) runs in parts is read whole with `--plan`, as docs/RESULTS.md
reads it; without it the report is of the grid's latest sweep, and says how many parts it leaves out.
"""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from pathlib import Path

from analysis.load import AnalysisError, read_sweep, require_store
from analysis.plan import PLAN_FILE, ROOT, PlanSweeps, plan_sweeps
from analysis.report import FORMATS, report_sweep
from analysis.ui_start import ui_command
from analysis.ui_view import share_view
from arith.config import ConfigError, TrackingConfig
from arith.tracking import store


def check_out(out: Path) -> None:
    """--out names a folder to write into, or one to create: refused before the analysis runs, not after."""
    blocked = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise AnalysisError(f"--out {out}: {blocked} is a file; name a folder (new, or one to write into)")


def plan_note(planned: PlanSweeps, latest: str) -> str:
    """What a report of the grid's latest sweep leaves out of its plan ('' when it leaves out nothing)."""
    if not planned.ran or (planned.ran == (latest,) and not planned.waiting):
        return ""
    how = (
        f"`python -m analysis.search --grid {planned.grid}` reads them as one search"
        if planned.search
        else "--plan reads them as one sweep, as docs/RESULTS.md does"
    )
    left = f", {planned.waiting} still to run" if planned.waiting else ""
    held = f"{len(planned.ran)} in this store{left}"
    which = "one part" if latest in planned.ran else "none"
    return (
        f"note: this report reads sweep {latest}, {which} of the {planned.parts} parts of {planned.grid!r} "
        f"in docs/results/plan.yaml ({held}); {how}"
    )


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
    parser.add_argument(
        "--plan",
        action="store_true",
        help="read every part of the grid's plan (docs/results/plan.yaml) that the store holds as one sweep, "
        "judged as docs/RESULTS.md judges it (no verdict while a part waits; Holm's correction over this "
        "grid's claims, where the page corrects over all of its claims); logged on no part's run",
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
    if args.plan and args.run:
        parser.error("--plan reads the plan's parts; --run names sweeps itself: give one of them")
    runs = [r for r in args.run.split(",") if r] if args.run else None
    try:
        if args.out:
            check_out(Path(args.out))
        plan = None
        if args.plan:
            require_store(uri)
            plan = plan_sweeps(store.client(uri), args.grid)
            runs = plan.to_read(uri)
        sweep = read_sweep(args.grid, uri, runs)  # read once: the report and the UI view share it
        if not runs:  # its latest sweep: what of its plan that leaves out (a note, below)
            plan = plan_sweeps(store.client(uri), args.grid)
        waiting = (plan.waiting, plan.parts) if args.plan else (0, 0)
        log = not args.no_log and not args.plan  # the plan's analysis is no one part's
        plan_file = str(PLAN_FILE.relative_to(ROOT))
        text = report_sweep(sweep, args.out, args.format, log, waiting, plan_file, args.ui_url or "")
        link = share_view(sweep, args.ui_url) if args.ui_url else ""
    except (AnalysisError, ConfigError) as err:  # ConfigError: a broken plugin of experiments
        print(f"analysis: {err}", file=sys.stderr)
        return 2
    if args.plan:
        print(
            f"read as one sweep: {len(runs)} of the {plan.parts} parts of {args.grid!r} in "
            f"docs/results/plan.yaml ({plan.waiting} still to run)",
            file=sys.stderr,
        )
    elif plan is not None and (note := plan_note(plan, sweep.parent_run_id)):
        print(note, file=sys.stderr)
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
            print(f"  start the UI first:          {ui_command(uri, port)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
