"""Run the `cpu` miniature of every grid in sequence, then regenerate docs/RESULTS.md from the MLflow store.

    python scripts/reproduce_cpu.py                       # every planned sweep, then the report
    python scripts/reproduce_cpu.py --grids nl_mix        # one sweep, then the report
    python scripts/reproduce_cpu.py --report-only         # only rewrite docs/RESULTS.md from the store
    python scripts/reproduce_cpu.py --archive             # only archive the store's sweeps

Each part of the plan (docs/results/plan.yaml, `analysis.plan`) is `sweeps/run.py --scale cpu` into one
local store (default runs/cpu/mlflow.db). After a sweep its parent run is tagged with the command, the
machine and the wall time, and archived in docs/results/sweeps/ (arith/tracking/archive.py). First of all
every archive the store lacks is imported into it: an archived part counts as run (`--rerun` runs it
again). The page itself is composed by `analysis.results` from the store alone, on any clone.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time

from analysis.load import find_parent
from analysis.plan import (
    ARCHIVES,
    ROOT,
    TAG_COMMAND,
    TAG_MACHINE,
    TAG_WALL,
    Planned,
    archive_store,
    grids,
    part_runs,
    repo_relative,
    restore_archives,
)
from analysis.results import write_results
from arith.tracking.archive import export_sweep
from arith.tracking.store import client as store_client
from sweeps.grids import points
from sweeps.progress import trial_steps
from sweeps.storage import SweepStorage, machine


def paper_trial_steps(grid: str) -> int:
    """Optimiser steps of the grid's longest trial at `paper` scale (sweeps.progress.trial_steps)."""
    return max(trial_steps(cfg.to_dict()) for cfg in points(grid, "paper"))


def run_sweep(plan: Planned, uri: str, storage: str) -> None:
    """One sweep via sweeps/run.py, or the rest of the one a stopped session left of this part (`--resume`:
    its ended trials kept, the others continued from their last checkpoint); on success its parent run is
    tagged with command, machine and wall time (every session's: its sweep.json keeps them)."""
    folders = SweepStorage(storage)
    stopped = folders.stopped(plan.grid, plan.scale, plan.sweep_args())
    cmd = plan.command(uri, storage)
    shown = repo_relative("python " + shlex.join(cmd))
    print(f"\n=== {plan.grid}: {shown}" + (" --resume (a stopped session's)" if stopped else ""), flush=True)
    start = time.perf_counter()
    sweep = subprocess.Popen([sys.executable, *cmd, *(["--resume"] if stopped else [])], cwd=ROOT)
    try:
        try:
            code = sweep.wait()
        except KeyboardInterrupt:  # Ctrl-C reached the sweep too: let Tune save its state and stop
            sweep.wait()
            raise
    finally:
        name = stopped or folders.stopped(plan.grid, plan.scale, plan.sweep_args())
        if name:
            wall, machines = folders.add_session(name, time.perf_counter() - start, machine()[0])
    if code:
        raise subprocess.CalledProcessError(code, cmd)
    client = store_client(uri)
    parent = find_parent(client, plan.grid)
    client.set_tag(parent.info.run_id, TAG_COMMAND, shown)
    client.set_tag(parent.info.run_id, TAG_MACHINE, machines)
    client.set_tag(parent.info.run_id, TAG_WALL, f"{wall:.0f}")
    archive = ARCHIVES / plan.archive_name
    export_sweep(client, parent.info.run_id, archive)
    print(f"=== {plan.grid}: archived in {archive}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/reproduce_cpu.py", description=__doc__)
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
    store = (ROOT / args.store).resolve()
    store.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{store / 'mlflow.db'}"
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
                run_sweep(plan, uri, str(store / "ray_results"))
    write_results(uri, ROOT / args.out, paper_steps=paper_trial_steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
