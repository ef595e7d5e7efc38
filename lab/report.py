"""`python -m lab.report --grid NAME`: `python -m analysis` for a grid the plan (docs/results/plan.yaml) runs
in parts. `--plan` reads every part the store holds as one sweep, judged as docs/RESULTS.md judges it (no
verdict while a part waits; logged on no part's run); without it the report is of the grid's latest sweep,
and a note says how many of the plan's parts it leaves out.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import lab  # noqa: F401  (registers the lab's grids)
from analysis.__main__ import analysis_parser, print_report, read_report_options
from analysis.findings import Finding
from analysis.load import AnalysisError, Sweep, require_store
from arith.config import ConfigError
from arith.tracking import store
from lab.analysis_claims import awaiting_plan
from lab.plan import PLAN_FILE, ROOT, PlanSweeps, plan_sweeps


def plan_note(planned: PlanSweeps, latest: str) -> str:
    """What a report of the grid's latest sweep leaves out of its plan ('' when it leaves out nothing)."""
    if not planned.ran or (planned.ran == (latest,) and not planned.waiting):
        return ""
    how = (
        f"`python -m lab.search --grid {planned.grid}` reads them as one search"
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
    p = analysis_parser(prog="python -m lab.report")
    p.add_argument(
        "--plan",
        action="store_true",
        help="read every part of the grid's plan (docs/results/plan.yaml) that the store holds as one sweep, "
        "judged as docs/RESULTS.md judges it (no verdict while a part waits; Holm's correction over this "
        "grid's claims, where the page corrects over all of its claims); logged on no part's run",
    )
    options, args = read_report_options(argv, p)
    if args.plan and options.runs:
        p.error("--plan reads the plan's parts; --run names sweeps itself: give one of them")
    if options.runs:
        return print_report(options)
    try:
        require_store(options.tracking_uri)
        planned = plan_sweeps(store.client(options.tracking_uri), options.grid)
        if not args.plan:
            return print_report(options, note=lambda sweep: plan_note(planned, sweep.parent_run_id))
        runs = planned.to_read(options.tracking_uri)
    except (AnalysisError, ConfigError) as err:
        print(f"analysis: {err}", file=sys.stderr)
        return 2

    def read_as_one(sweep: Sweep) -> str:
        return (
            f"read as one sweep: {len(runs)} of the {planned.parts} parts of {options.grid!r} in "
            f"docs/results/plan.yaml ({planned.waiting} still to run)"
        )

    def judged_once_run(findings: list[Finding]) -> list[Finding]:
        if not planned.waiting:
            return findings
        return awaiting_plan(findings, planned.waiting, planned.parts, str(PLAN_FILE.relative_to(ROOT)))

    whole = replace(options, runs=tuple(runs), no_log=True)
    return print_report(whole, rejudge=judged_once_run, note=read_as_one)


if __name__ == "__main__":
    sys.exit(main())
