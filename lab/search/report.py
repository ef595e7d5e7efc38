"""What a recipe search found, as docs/RESULTS.md says it: how far it has got through the plan's parts,
what it concludes for its claim (the cheapest recipe at which every compared point reached the gate, or,
once complete, that none did within its budget), the evidence on its claim's not-testable rows, and its
section (tables and figure). The cost tables themselves are `lab.search.costs`'s."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from arith.tracking import store
from arith.tracking.archive import archived_id
from experiments.registry import EXPERIMENTS, claims_for
from lab.analysis_output import save
from lab.choice import search_part_choice
from lab.plan import Planned
from lab.search.costs import (
    RECIPE_COST,
    compared_labels,
    cost_markdown,
    cost_to_gate,
    every_part_evaluations,
    figure_of,
    recipe_costs,
)
from lab.search.declared import MACHINES_TAG, Search
from lab.searches import SEARCHES

#: a search's plan parts (docs/results/plan.yaml), each with its sweep in the store (None: not run)
PlanParts = Mapping[str, Sequence[tuple[Planned, Any]]]


def plan_progress(name: str, runs: list[Any], plan_parts: PlanParts | None) -> str:
    """How far the search has got: of the plan's parts (`plan_parts[name]`) where the plan declares it
    (how many have a sweep in the store, how many it ended before they ran), else of its sweeps; and how
    many are still running."""
    running = sum(run.info.status != "FINISHED" for run in runs)
    if plan_parts and name in plan_parts:
        # a part counts as run once its sweep is recorded (at its end); a sweep running or stopped to be
        # resumed is counted apart, as a sweep
        still = f", {running} sweep{'s' if running > 1 else ''} not ended" if running else ""
        parts = plan_parts[name]
        started = sum(run is not None for _, run in parts)
        unrun = sum(run is None and bool(plan.ended_early) for plan, run in parts)
        ended = f", {unrun} ended unrun (docs/results/plan.yaml says why)" if unrun else ""
        return f"{started} of {len(parts)} plan parts run{still}{ended}"
    if len(runs) > 1:  # the plan's parts of a search longer than a session
        return f"{len(runs)} sweeps, " + (f"{running} not ended" if running else "all ended")
    return "not ended" if running else "ended"


def parts_left(name: str, plan_parts: PlanParts | None) -> bool:
    """Whether the plan has parts of the search still to run (neither run nor ended unrun)."""
    parts = (plan_parts or {}).get(name, ())
    return any(plan.still_to_run(run) for plan, run in parts)


#: a search whose most expensive trial spent less than this share of the budget ran out of steps first
ENDED_SHORT = 0.9


def conclusion(table: pd.DataFrame, search: Search, complete: bool) -> str:
    """What the search concludes for its claim from its cost table: the cheapest recipe at which every
    compared point reached the gate; or, once it is `complete` (every configuration read, or every plan
    part run or ended unrun) without one, that none within its budget did; else "" (still running)."""
    if table.empty:
        return ""
    recipes = recipe_costs(table, search)
    served = recipes[recipes[RECIPE_COST].str.match(r"\d")]
    if not served.empty:
        best = served.iloc[0]
        return f"every compared point passed at {best['recipe']}, {best[RECIPE_COST]} core-min a trial"
    if complete:
        which = (
            f"none of the {len(recipes)} recipes read brought"
            if len(recipes) > 1
            else "its one recipe did not bring"
        )
        budget = search.scheduler.max_core_min
        said = f"complete: {which} every compared point to the gate within {budget:g} core-min a trial"
        missed = table[table["core-min to gate"].str.startswith("not reached")]
        counts = missed["cut at a rung"].str.extract(r"(\d+) of (\d+)").astype(int)  # "k of n" trials cut
        cut, trials = counts[0], counts[1]
        each = pd.to_numeric(missed["core-min spent"], errors="coerce") / trials
        if len(missed) and not cut.any() and each.max() < ENDED_SHORT * budget:
            # they ran out of steps, not of the budget: say so, or the budget reads as what they spent
            low, high = f"{each.min():.0f}", f"{each.max():.0f}"
            spent = low if low == high else f"{low}-{high}"
            said += f" (its trials that missed it ran out of steps first, after {spent} core-min)"
        return said
    return ""


def is_complete(name: str, runs: list[Any], table: pd.DataFrame, plan_parts: PlanParts | None) -> bool:
    """Whether a search has nothing left to read: no sweep of it running, and every configuration it
    declares read, or every part the plan declares of it run or ended unrun."""
    if any(run.info.status != "FINISHED" for run in runs):
        return False
    search = SEARCHES[name]
    declared = len(search.grid(EXPERIMENTS[search.experiment].grid).points())
    planned = bool(plan_parts and plan_parts.get(name))
    return len(table) == declared or (planned and not parts_left(name, plan_parts))


def search_evidence(tracking_uri: str, grid: str, plan_parts: PlanParts | None = None) -> str:
    """What the recipe search for `grid`'s claims found (every sweep of it, read as one), for its
    not-testable row ("" where none has run): per compared point, the cheapest configuration to the
    gate, or that none of those it read got there and the best any did, or that none has run yet; how
    far the search has got (`plan_progress`) and how many configurations it read."""
    client, said = store.client(tracking_uri), []
    for name, search in SEARCHES.items():
        if not set(claims_for(grid)) & set(claims_for(search.experiment)):
            continue
        runs = store.sweep_runs(client, name)
        table = cost_to_gate(every_part_evaluations(tracking_uri, runs)) if runs else None
        if table is None or table.empty:
            continue
        by_point: dict[str, list[dict]] = {}
        for row in table.to_dict("records"):  # cheapest first
            recipe, compared = search.split_point(row["configuration"])
            by_point.setdefault(compared, []).append({**row, "recipe": recipe})
        found = []
        for compared in compared_labels(search):
            rows = by_point.get(compared, [])
            if not rows:
                found.append(f"{compared}: not run yet")
                continue
            passed = [r for r in rows if not r["core-min to gate"].startswith("not reached")]
            if passed:
                cheapest = passed[0]
                found.append(
                    f"{compared} passed at {cheapest['core-min to gate']} core-min ({cheapest['recipe']})"
                )
                continue
            best = max(rows, key=lambda r: r["best weakest cell"])
            read = f"{len(rows)} configuration{'' if len(rows) == 1 else 's'} read"
            found.append(
                f"{compared}: none of {read} passed (best {best['best weakest cell']:.2f}, {best['recipe']})"
            )
        configurations = len(search.grid(EXPERIMENTS[search.experiment].grid).points())
        progress = plan_progress(name, runs, plan_parts)
        concluded = conclusion(table, search, is_complete(name, runs, table, plan_parts))
        said.append(
            f"{name} ({progress}; {len(table)} of {configurations} configurations read, at most "
            f"{search.scheduler.max_core_min:g} core-min a trial): "
            + "; ".join(found)
            + (f"; {concluded}" if concluded else "")
        )
    return " ".join(said)


def machines(parent: Any) -> str:
    """Where a search's sessions ran (`search_machines` on its parent run), as the section says it."""
    names = [m for m in parent.data.tags.get(MACHINES_TAG, "").split("; ") if m]
    if len(names) > 1:
        return f", on {' and '.join(names)} (its core-minutes mix processors: compare within one)"
    return f", on {names[0]}" if names else ""


def search_sections(
    tracking_uri: str,
    names: Iterable[str] | None = None,
    figures: Path | None = None,
    link: str = "",
    plan_parts: PlanParts | None = None,
) -> str:
    """docs/RESULTS.md's section of the recipe searches: for each declared search (default: every one)
    with a sweep in the store (every one, read as one search: the plan's parts of it), how far it has got
    (`plan_parts`, as `plan_progress` reads it), the cost-to-gate table ("" when none has run), and its
    figure saved in `figures` (as `search_<name>.png`, linked as `link`/that name) where given."""
    client, parts = store.client(tracking_uri), []
    for name in SEARCHES if names is None else names:
        runs = store.sweep_runs(client, name)
        if not runs:
            continue
        search = SEARCHES.get(name)
        budget = search.scheduler.max_core_min if search else None
        what = f"{search.description} ({search.experiment}'s compared points)" if search else name
        evaluations = every_part_evaluations(tracking_uri, runs)
        costs = cost_to_gate(evaluations)
        table = cost_markdown(costs, budget, search)
        if figures is not None and (figure := figure_of(evaluations, search)) is not None:
            save(figure, figures / f"search_{name}.png")
            table += f"\n\n![{name}: the gate by core-minutes]({link}/search_{name}.png)"
        sweeps = "; ".join(f"{archived_id(run)}{machines(run)}" for run in reversed(runs))
        word = "its sweep" if len(runs) == 1 else "its sweeps (the plan's parts, read as one search)"
        progress = plan_progress(name, runs, plan_parts)
        if parts_left(name, plan_parts):
            progress += "; the tables read the configurations run so far"
        if search and (concluded := conclusion(costs, search, is_complete(name, runs, costs, plan_parts))):
            progress += f". **Found:** {concluded}"
        rules = "".join(
            f"{search_part_choice(plan, tracking_uri, run.info.run_id).strip()}\n"
            for plan, run in (plan_parts or {}).get(name, ())
            if run is not None and plan.choose_if_gate_by_step is not None
        )
        rules = f"\n{rules}" if rules else ""
        parts.append(f"### Recipe search {name}\n\n{what}; {word} {sweeps}; {progress}.\n{rules}\n{table}\n")
    return "## Recipe searches: the cost to the gate\n\n" + "\n".join(parts) if parts else ""
