"""What a recipe search found, read from the store: each configuration's cost to the gate.

A search's sweep (`python -m lab.sweep --search NAME`, `lab.search.sweep`) leaves in each trial's MLflow run
the gate's weakest cell at each evaluation (`gate/weakest_unseen`, step = epoch) and the core-minutes spent
by then (`cpu_seconds`, which the trainer logs each epoch, so a running search reads live; at its end
`search/core_minutes`). A configuration is a point of the search's grid (compared format x recipe);
its *cost to the gate* is the core-minutes at which the weakest gated cell first reached `LEARNED` (0.9),
the most over its seeds (the gate asks it of every seed); where a seed never did, "not reached" with the
best the configuration read (its weakest seed's best). `search_cost_table` builds it from the store (for
docs/RESULTS.md and the end of a search), `cost_to_gate` from the evaluations alone.

    python -m lab.search --grid mul_format_recipe --tracking-uri sqlite:///mlflow.db [--figure f.png]

The figure (`lab.search.figure.search_figure`) draws each configuration's weakest gated cell against the
core-minutes it had spent, a panel per compared format, with ASHA's rungs: how it learned, where it was cut.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from analysis.load import AnalysisError, find_parent, require_store
from arith.config import ExperimentConfig
from arith.data.datasets import train_size
from arith.tracking import store
from arith.tracking.schema import (
    CPU_SECONDS,
    GATE_METRIC,
    POINT_COLUMN,
    POINT_TAG,
    SEED_COLUMN,
    SEED_TAG,
    SESSIONS_TAG,
)
from arith.training.metrics import MIN_UNSEEN
from experiments.registry import EXPERIMENTS
from experiments.verdicts import LEARNED, TOLERANCE
from lab.analysis_output import save
from lab.search.declared import CORE_MINUTES, MACHINES_TAG, RUNG, STOPPED_TAG, Search
from lab.search.figure import search_figure
from lab.search.view import share_search_view
from lab.searches import SEARCHES
from lab.training_records import machine_at, read_sessions, steps_after

#: the folder of the parent run's artifacts a search logs at its end (its tables and figure)
ARTIFACT_DIR = "search"
#: the recipe table's column of a recipe's cost: the most any compared point of the claim needed at it
RECIPE_COST = "core-min to gate, every compared point"
#: one row per trial x evaluation, what `cost_to_gate` reads
#: (machine: the processors its sweep's sessions ran on, whose core-minutes compare within one only)
EVALUATION_COLUMNS = [
    POINT_COLUMN,
    SEED_COLUMN,
    "status",
    "stopped",
    "epoch",
    "steps",
    "core_minutes",
    "gate",
    "machine",
]
#: a recipe's cost where its compared points were measured on different processors
MIXED = "measured on different processors: compare within one"
COST_COLUMNS = [
    "configuration",
    "seeds",
    "cut at a rung",
    "core-min to gate",
    "steps to gate",
    "best weakest cell",
    "core-min spent",
]


def search_evaluations(tracking_uri: str, parent_run_id: str) -> pd.DataFrame:
    """Every evaluation of every trial of the search's sweep (whatever its status: the trials ASHA stopped
    count), with the core-minutes spent by then."""
    require_store(tracking_uri)
    client = store.client(tracking_uri)
    parent = client.get_run(parent_run_id)
    runs = store.trial_runs(
        tracking_uri, [client.get_experiment(parent.info.experiment_id).name], parent_run_id
    )
    rows = []
    for run in runs:
        tags = run.data.tags
        gate = {m.step: m.value for m in client.get_metric_history(run.info.run_id, GATE_METRIC)}
        spent = core_minutes_by_epoch(client, run.info.run_id)
        steps = steps_by_epoch(run.data.params)
        sessions = read_sessions(tags.get(SESSIONS_TAG))
        for epoch in sorted(set(gate) & set(spent)):
            rows.append(
                {
                    POINT_TAG: tags.get(POINT_TAG, run.info.run_name),
                    SEED_TAG: int(tags.get(SEED_TAG, -1)),
                    "status": run.info.status,
                    "stopped": tags.get(STOPPED_TAG, ""),
                    "epoch": epoch,
                    "steps": steps(epoch),
                    "core_minutes": spent[epoch],
                    "gate": gate[epoch],
                    # the machine that computed the epoch's last step where the trial recorded it (a
                    # trial resumed on another processor), else every machine of the search's sessions
                    "machine": machine_at(sessions, steps(epoch)) or parent.data.tags.get(MACHINES_TAG, ""),
                }
            )
    return pd.DataFrame(rows, columns=EVALUATION_COLUMNS)


def every_part_evaluations(tracking_uri: str, runs: list[Any]) -> pd.DataFrame:
    """The evaluations of every sweep of one search (`runs`, its parent runs latest first: the plan's
    parts of a search too long for a session, docs/results/plan.yaml), read as one search; a trial
    (point, seed) that a later sweep ran again is read from that one only."""
    frames, seen = [], set()
    for run in runs:
        frame = search_evaluations(tracking_uri, run.info.run_id)
        keys = list(zip(frame[POINT_TAG], frame[SEED_TAG], strict=True))
        frames.append(frame[[k not in seen for k in keys]])
        seen |= set(keys)
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=EVALUATION_COLUMNS)


def steps_by_epoch(params: Mapping[str, str]) -> Callable[[int], int]:
    """A trial's optimiser steps at the end of each epoch, from the config its run logged in full."""
    keys = set(ExperimentConfig.keys())
    cfg = ExperimentConfig().with_overrides({k: v for k, v in params.items() if k in keys})
    t = cfg.train
    lines = train_size(cfg.data)
    return lambda epoch: steps_after(epoch, lines, t.batch_size, t.epochs_per_pass, t.max_steps)


def core_minutes_by_epoch(client: Any, run_id: str) -> dict[int, float]:
    """A trial's core-minutes at each epoch: the CPU clock its trainer logs each epoch (`cpu_seconds`, so
    a running search's are live), overwritten by the search's record at its end (`search/core_minutes`,
    the same clock as Tune received it; the only one in stores from before the trainer logged it)."""
    live = {m.step: m.value / 60.0 for m in client.get_metric_history(run_id, CPU_SECONDS)}
    return live | {m.step: m.value for m in client.get_metric_history(run_id, CORE_MINUTES)}


def _trial_cost(trial: pd.DataFrame, threshold: float) -> dict[str, float | bool]:
    """One trial's core-minutes and optimiser steps to the gate (NaN: not reached), best gate value,
    core-minutes spent and whether ASHA cut it at a rung (a trial stopped at the search's core-minute
    budget ran the whole of it: not cut)."""
    ordered = trial.sort_values("epoch")
    reached = ordered[ordered["gate"] >= threshold - TOLERANCE]
    return {
        "to_gate": float(reached["core_minutes"].iloc[0]) if len(reached) else math.nan,
        "steps_to_gate": float(reached["steps"].iloc[0]) if len(reached) else math.nan,
        "best": float(ordered["gate"].max()),
        "spent": float(ordered["core_minutes"].max()),
        "cut": ordered["stopped"].iloc[-1] == RUNG,
    }


def core_minutes(value: float) -> float:
    """Core-minutes as the table shows them: to 0.1 from 1 up, to two significant digits below (a toy
    search's trials reach the gate in seconds of CPU time, which 0.1 would round to 0)."""
    return round(value, 1) if value >= 1 else float(f"{value:.2g}")


def cost_to_gate(evaluations: pd.DataFrame, threshold: float = LEARNED) -> pd.DataFrame:
    """One row per configuration (point): its seeds, how many ASHA cut at a rung, the core-minutes
    until the weakest gated cell first reached `threshold` on every seed ("not reached" otherwise), the
    best value its weakest seed read, and the core-minutes spent in all; where its sweeps ran on more than
    one processor (the plan's parts of a search, sessions apart), the processors of each. Cheapest first."""
    machines = evaluations.get("machine", pd.Series(dtype=str)).fillna("")
    mixed = machines.nunique() > 1
    rows = []
    for point, configuration in evaluations.groupby(POINT_COLUMN, sort=True):
        trials = {
            seed: _trial_cost(t, threshold) for seed, t in configuration.groupby(SEED_COLUMN, sort=True)
        }
        costs = pd.DataFrame.from_dict(trials, orient="index")
        reached = bool(costs["to_gate"].notna().all())
        best, to_gate = float(costs["best"].min()), float(costs["to_gate"].max())
        rows.append(
            {
                "configuration": point,
                "seeds": ", ".join(map(str, trials)),
                "cut at a rung": f"{int(costs['cut'].sum())} of {len(trials)}",
                "core-min to gate": f"{core_minutes(to_gate):g}"
                if reached
                else f"not reached (best {best:.2f})",
                "steps to gate": f"{costs['steps_to_gate'].max():,.0f}" if reached else "not reached",
                "best weakest cell": round(best, 3),
                "core-min spent": core_minutes(float(costs["spent"].sum())),
                **({"machine": "; ".join(dict.fromkeys(configuration["machine"]))} if mixed else {}),
                "_order": (0, to_gate) if reached else (1, -best),
            }
        )
    if not rows:
        return pd.DataFrame(columns=COST_COLUMNS)
    table = pd.DataFrame(rows).sort_values("_order", kind="stable", key=lambda c: c.map(tuple))
    return table.drop(columns="_order").reset_index(drop=True)


def compared_labels(search: Search) -> list[str]:
    """The compared points of `search` as its configurations name them (`format=basic,max_digits=5`), in
    its grid's order: every one the search declares, whether or not a part of it has run."""
    grid = search.grid(EXPERIMENTS[search.experiment].grid)
    return list(dict.fromkeys(search.split_point(point.name)[1] for point in grid.points()))


#: a compared point not run at a recipe another point missed the gate at: its cost could not serve a claim
NOT_NEEDED = "not needed (another point missed the gate here)"


def recipe_costs(table: pd.DataFrame, search: Search) -> pd.DataFrame:
    """The cost table by recipe: one row per recipe with what each compared point (a column: every one the
    search declares, "not run yet" where none of its configurations at the recipe has, NOT_NEEDED where
    one is missing at a recipe another point missed the gate at) cost to the gate
    at it, and the recipe's own cost, the most of them: a claim's formats all train at one recipe, so it
    serves the claim only where every one reached the gate. Recipes every point passed at first
    (cheapest first), then those still waiting on a point (by what the run ones cost), then the rest."""
    by_recipe: dict[str, dict[str, str]] = {}
    machines: dict[str, set[str]] = {}
    for row in table.to_dict("records"):
        recipe, compared = search.split_point(row["configuration"])
        by_recipe.setdefault(recipe, {})[compared] = row["core-min to gate"]
        machines.setdefault(recipe, set()).add(row.get("machine", ""))
    columns = compared_labels(search)
    rows = []
    for recipe, costs in by_recipe.items():
        missing = [c for c in columns if c not in costs]
        short = [c for c in columns if c in costs and costs[c].startswith("not reached")]
        known = max((float(costs[c]) for c in columns if c in costs and c not in short), default=math.inf)
        if short:
            cost, order = f"not reached by {', '.join(short)}", (2, 0.0)
        elif missing:
            cost, order = f"not known: {', '.join(missing)} not run yet", (1, known)
        else:
            cost, order = f"{known:g}" + (f" ({MIXED})" if len(machines[recipe]) > 1 else ""), (0, known)
        unrun = NOT_NEEDED if short else "not run yet"  # a point that missed it: the recipe cannot serve
        rows.append({"recipe": recipe, **{c: costs.get(c, unrun) for c in columns}, RECIPE_COST: cost,
                     "_order": order})  # fmt: skip
    if not rows:
        return pd.DataFrame(columns=["recipe", *columns, RECIPE_COST])
    frame = pd.DataFrame(rows).sort_values("_order", kind="stable", key=lambda c: c.map(tuple))
    return frame.drop(columns="_order").reset_index(drop=True)


def search_cost_table(tracking_uri: str, grid: str, parent_run_id: str | None = None) -> pd.DataFrame:
    """The cost-to-gate table of a search's sweep: the given parent run, else the latest sweep of `grid`
    (the search's name)."""
    require_store(tracking_uri)
    parent = find_parent(store.client(tracking_uri), grid, parent_run_id)
    return cost_to_gate(search_evaluations(tracking_uri, parent.info.run_id))


def markdown(table: pd.DataFrame) -> str:
    header = "| " + " | ".join(table.columns) + " |"
    lines = [header, "|" + " --- |" * len(table.columns)]
    return "\n".join(
        lines + ["| " + " | ".join(str(v) for v in row) + " |" for row in table.itertuples(index=False)]
    )


def cost_markdown(
    table: pd.DataFrame, budget_core_min: float | None = None, search: Search | None = None
) -> str:
    """The table as docs/RESULTS.md shows it, with what its columns mean; given its `search`, the table by
    recipe after it."""
    if table.empty:
        return "No evaluation of the search is in the store yet."
    lines = [markdown(table)]
    budget = f", at most {budget_core_min:g} core-minutes a trial" if budget_core_min else ""
    note = (
        f"\nCost to the gate: core-minutes (seconds x CPUs / 60) until the weakest gated cell, read on the "
        f"test problems not trained on (all of a cell's where fewer than {MIN_UNSEEN} were not), first "
        f"reached {LEARNED:g} on every seed (the most over its seeds), and the optimiser steps by then (the "
        f"evaluation's, one every epoch: steps compare across processors, core-minutes within one); "
        f"'not reached' gives the best its weakest seed read before it ended or ASHA stopped it{budget}; "
        f"'cut at a rung' counts the seeds ASHA stopped at a rung (below the configurations before them), "
        f"not those that spent the whole budget; "
        f"a trial ends at the gate, so 'core-min spent' is what the search paid, not a full budget; where "
        f"its sweeps ran on more than one processor, 'machine' names each configuration's (core-minutes "
        f"compare within one)."
    )
    if search is None:
        return "\n".join(lines) + "\n" + note
    recipes = (
        "By recipe: a claim's compared points all train at one recipe, which serves it only where every one "
        "reached the gate; its cost is the most of theirs (cheapest first)."
    )
    return "\n".join([*lines, note, "", recipes, "", markdown(recipe_costs(table, search))])


def cost_report(tracking_uri: str, parent_run_id: str, search: Search) -> str:
    """The tables of one search sweep, for the end of `python -m lab.sweep --search`, also logged on its
    parent run (`search/cost_to_gate.md` and the figure, `search/cost_to_gate.png`) for the MLflow UI."""
    from mlflow.exceptions import MlflowException

    try:
        evaluations = search_evaluations(tracking_uri, parent_run_id)
    except AnalysisError as err:
        return f"no cost-to-gate table: {err}"
    text = cost_markdown(cost_to_gate(evaluations), search.scheduler.max_core_min, search)
    try:
        client = store.client(tracking_uri)
        client.log_text(parent_run_id, text, f"{ARTIFACT_DIR}/cost_to_gate.md")
        if (figure := figure_of(evaluations, search)) is not None:
            client.log_figure(parent_run_id, figure, f"{ARTIFACT_DIR}/cost_to_gate.png")
    except (MlflowException, OSError) as err:  # the table is printed whether or not the store takes it
        text += f"\n\n(could not log it on run {parent_run_id}: {err})"
    return text


def figure_of(evaluations: pd.DataFrame, search: Search | None) -> Figure | None:
    """The search's figure (`lab.search.figure.search_figure`), None without evaluations; a sweep of no
    declared search (a plugin's, read elsewhere) in one panel, a line per configuration, without rungs."""
    if search is None:
        return search_figure(evaluations, lambda point: (point, "every configuration"), [])
    return search_figure(evaluations, search.split_point, search.scheduler.rungs())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.search", description=__doc__.splitlines()[0])
    p.add_argument("--grid", required=True, help="the search's name (its sweep's grid)")
    p.add_argument(
        "--run",
        default=None,
        help="one sweep's parent run id (default: every sweep of the search, its plan parts read as one; "
        "the MLflow UI view is of the latest)",
    )
    p.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    p.add_argument("--figure", type=Path, help="also draw the gate by core-minutes to this PNG")
    p.add_argument(
        "--ui-url",
        metavar="URL",
        help="also store a ready-made MLflow UI view of the search and print its link under this `mlflow ui` "
        "address (e.g. http://127.0.0.1:5000)",
    )
    args = p.parse_args(argv)
    try:
        require_store(args.tracking_uri)
        client = store.client(args.tracking_uri)
        parent = find_parent(client, args.grid, args.run)
        runs = [parent] if args.run else store.sweep_runs(client, args.grid)
        evaluations = every_part_evaluations(args.tracking_uri, runs)
        search = SEARCHES.get(args.grid)  # a declared search: its budget and the table by recipe too
        budget = search.scheduler.max_core_min if search else None
        print(cost_markdown(cost_to_gate(evaluations), budget, search))
        if args.figure and (figure := figure_of(evaluations, SEARCHES.get(args.grid))) is not None:
            save(figure, args.figure)
            print(f"wrote {args.figure}")
        if args.ui_url:
            link = share_search_view(args.tracking_uri, parent.info.run_id, args.ui_url)
            print(f"MLflow UI view of this search: {link}")
    except AnalysisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
