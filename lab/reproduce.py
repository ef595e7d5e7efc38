"""Run the `cpu` miniature of every grid in sequence, then regenerate docs/RESULTS.md from the MLflow store.

    python -m lab.reproduce                       # every planned sweep, then the report
    python -m lab.reproduce --grids nl_mix        # one sweep, then the report
    python -m lab.reproduce --report-only         # only rewrite docs/RESULTS.md (= python -m lab.results)
    python -m lab.reproduce --archive             # only archive the store's sweeps

Each part of the plan (docs/results/plan.yaml, `lab.plan`) is `python -m lab.sweep` into one local store
(default runs/cpu/mlflow.db), run by `lab.run_part.run_part`: a part a stopped session left is resumed,
not started again; after a sweep its parent run is tagged with the command, every session's machine and
wall time, and archived in docs/results/sweeps/ (arith/tracking/archive.py). First of all
every archive the store lacks is imported into it: an archived part counts as run (`--rerun` runs it
again). The page itself is composed by `lab.results` from the store alone, on any clone.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from arith.tracking.store import client as store_client
from lab.paper_trial import paper_trial
from lab.plan import ROOT, archive_store, grids, part_runs, restore_archives, store_uri
from lab.results.page import write_results
from lab.run_part import INTERRUPTED, SweepInterrupted, end_part, run_part


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.reproduce", description=__doc__)
    parser.add_argument("--grids", default="", help="comma-separated grids to run (default: the whole plan)")
    parser.add_argument("--store", default="runs/cpu", help="folder of the MLflow store and Ray results")
    parser.add_argument("--out", default="docs/RESULTS.md")
    parser.add_argument("--report-only", action="store_true", help="do not run sweeps, only rewrite --out")
    parser.add_argument(
        "--rerun", action="store_true", help="run the chosen parts again even where the store has them"
    )
    parser.add_argument(
        "--archive",
        action="store_true",
        help="write the store's latest sweep of each part to docs/results/sweeps/ (no sweeps run)",
    )
    args = parser.parse_args(argv)
    uri = store_uri(args.store)
    store = (ROOT / args.store).resolve()
    chosen = [g for g in args.grids.split(",") if g] or grids()
    unknown = [g for g in chosen if g not in grids()]
    if unknown:
        parser.error(f"unknown grid(s) {unknown}; choose from: {', '.join(grids())}")
    if args.archive:
        archive_store(uri)
        return 0
    restore_archives(uri)  # an archived part counts as run: only --rerun runs it again
    if not args.report_only:
        client = store_client(uri)
        for grid in chosen:
            for plan, run in part_runs(client, grid):
                if run is not None and not args.rerun:
                    print(f"=== {grid}: `{shlex.join(plan.sweep_args())}` is in the store (--rerun: again)")
                    continue
                if plan.ended_early:  # stopped for good: archived as it stands, not resumed
                    end_part(plan, uri, str(store / "ray_results"))
                    continue
                try:
                    run_part(plan, uri, str(store / "ray_results"))
                except SweepInterrupted as stop:
                    print(f"=== {stop}; the same command resumes it", flush=True)
                    return INTERRUPTED
    write_results(uri, ROOT / args.out, paper_trial=paper_trial)
    return 0


if __name__ == "__main__":
    sys.exit(main())
