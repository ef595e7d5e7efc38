"""docs/RESULTS.md's table of the claims judged not testable: why, and what a judged sweep would take."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from analysis.cell_text import command_notes
from arith.tracking.schema import POINT_COLUMN, SEED_COLUMN
from lab.analysis_output import markdown_table as markdown
from lab.reach import (
    GpuBatch,
    GpuRate,
    PlannedGpuSweep,
    judged_cost,
)
from lab.results.grids import (
    BUDGET_POINTS,
    GPU_INSTEAD,
    ONE_CORE_INSTEAD,
    UNTESTABLE_NOTE,
    GridResult,
)


def untestable_table(
    results: list[GridResult],
    budgets: pd.DataFrame,
    curves: dict[str, str],
    paper_trial: Callable[[str], str] | None = None,
    steps: dict[str, list[float | None]] | None = None,
    gpu: dict[str, list[GpuBatch]] | None = None,
    rates: dict[tuple[str, str], list[GpuRate]] | None = None,
    searched: dict[str, str] | None = None,
    judged: Mapping[str, Sequence[str]] | None = None,
    planned: dict[str, list[PlannedGpuSweep]] | None = None,
) -> str:
    """Each claim judged not testable: why (and where it is judged all the same: `judged`, by claim text,
    `judged_where`), its learning curves, the steps the pre-search extrapolates its
    models need, what a recipe search for it found (`searched`, by grid, where one has run), what a judged
    sweep would cost on one core (at those `steps`, by "grid: point") and on a GPU (the GPU plan's judged
    batch of the grid at its setting's measured pace, `planned`, and the banked `gpu` batches of the grid
    or its parent), and how long a trial is at paper scale (`paper_trial(grid)`, where given);
    empty when none is."""
    steps_to = next((c for c in budgets.columns if c.startswith("steps to ")), "")
    rows = []
    for result in results:
        findings = [f for f in result.analysis.findings if not f.judged] if result.analysis else []
        if not findings:
            continue
        estimates = []
        for name in BUDGET_POINTS.get(result.grid, []):
            rows_of = (
                budgets[budgets["grid"] + ": " + budgets[POINT_COLUMN] == name] if len(budgets) else budgets
            )
            if rows_of.empty:
                continue
            by_estimate = rows_of.groupby(steps_to, sort=False)[SEED_COLUMN]  # which seeds said what
            for estimate, seeds in by_estimate:
                said = f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"
                label = "" if len(rows_of) == 1 else f" ({said})"
                estimates.append(f"{name}{label}: {estimate}")
        per_grid = {
            "learning curves": f"[figure]({curves[result.grid]})" if result.grid in curves else "",
            "steps to pass the gate (pre-search, cpu model)": "; ".join(estimates) or "no budget series",
        }
        if searched:
            per_grid["recipe search (pre-search seeds)"] = searched.get(result.grid, "none run")
        if paper_trial is not None:
            per_grid["a trial at paper scale"] = paper_trial(result.grid)
        costs = [c for part in result.costs if part for c in part]
        plans = [plan for plan, _ in result.parts]
        instead = ONE_CORE_INSTEAD.get(result.grid, ""), GPU_INSTEAD.get(result.grid, "")
        for f in findings:
            cost = judged_cost(
                result.grid,
                plans,
                f.claim,
                costs,
                steps or {},
                gpu or {},
                BUDGET_POINTS,
                *instead,
                rates,
                planned,
            )
            elsewhere = (judged or {}).get(f.claim, ())
            also = f"; judged in {'; '.join(elsewhere)}" if elsewhere else ""
            rows.append(
                {
                    "grid": result.grid,
                    "claim": f.claim,
                    "why": f.evidence + also,
                    **per_grid,
                    **cost,
                }
            )
    if not rows:
        return ""
    rows, commands = command_notes(rows)
    table = markdown(pd.DataFrame(rows))
    return f"### Not testable: why, and what it would take\n\n{UNTESTABLE_NOTE}\n\n{table}\n{commands}"
