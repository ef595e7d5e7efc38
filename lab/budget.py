"""The step budget a point needs to pass the competence gate: a fit over runs at several budgets, followed
to the gate's threshold.

A claim whose models do not learn the task within the trial's step budget is not testable. What a user
then wants to know is how much compute would make it testable, and at which scale to get it. This
answers from runs of one point at several budgets (`train.max_steps` varied, everything else fixed: the
pre-search grid `cpu_tune_steps`): the log-odds of the gate's reading (each record's lowest accuracy on
the cells the competence rule reads: where the paper's own model learned, else the cells in range) is
fitted as a straight line in
log steps (least squares), the form learning curves of these models take between "nothing learned" and
"learned", and the line is followed to the threshold. It is an extrapolation, not a measurement: it is
shown with the budgets it rests on, and refused when the accuracy does not rise with the budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis.sweep import tag_columns
from arith.tracking.schema import (
    ACCURACY_COLUMN,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    POINT_COLUMN,
    ROW_DIGITS_COLUMN,
    SEED_COLUMN,
)
from experiments.cells import in_range
from experiments.verdicts import LEARNED, gated_cells
from sweeps.grids import GRIDS
from sweeps.scales import SCALES

#: an extrapolation past this many steps is reported as such, not as a number
_FAR = 1e9
#: accuracies are clipped to this margin from 0 and 1 before the log-odds (0 and 1 have none)
_CLIP = 0.005


def gate_accuracy(cells: pd.DataFrame, config: dict, scale: str = "", grid: str = "") -> float:
    """The competence gate's reading of one record (`experiments.verdicts.gated_cells`): its lowest accuracy
    on the cells whose paper counterpart the paper's own model learned (through the scale's digit map and the
    training range), else on the cells in range (for multiplication the products whose factors have at
    most max_digits digits together; else the trained lengths)."""
    tags = config.get("tracking.tags") or {}
    scalars = {k: v for k, v in config.items() if k.startswith(("data.", "model.", "train.")) and _scalar(v)}
    frame = cells.assign(
        **scalars,
        **{tag: [value] * len(cells) for tag, value in tag_columns(tags).items()},  # a tuple is one value
        final_epoch=config.get("train.epochs", 0),
    )
    if CONTEXT_COLUMN not in frame:
        frame[CONTEXT_COLUMN] = "main"
    for axis in (ROW_DIGITS_COLUMN, COL_DIGITS_COLUMN):  # as analysis.load.tidy_cells types them
        frame[axis] = pd.to_numeric(frame[axis], errors="coerce").astype("Int64")
    gated, _ = gated_cells(frame, record_digit_map(scale, grid), in_range)
    return float(gated[ACCURACY_COLUMN].min()) if len(gated) else math.nan


def record_digit_map(scale: str, grid: str) -> dict[int, int]:
    """paper digit count -> a pre-search record's (the records carry no map): its scale's, or the identity
    at an unknown scale or for a grid that keeps the paper's digit counts (nl_mix)."""
    keeps = scale not in SCALES or (grid in GRIDS and not GRIDS[grid].scale_digits)
    return {n: n if keeps else SCALES[scale].digits(n) for n in range(1, 41)}


def _scalar(value) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _logit(p: float) -> float:
    p = min(max(p, _CLIP), 1 - _CLIP)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class BudgetFit:
    """log-odds(the gate's reading) = intercept + slope * ln(steps), fitted on `budgets`."""

    budgets: tuple[tuple[int, float], ...]  # (steps, the gate's reading), by steps
    slope: float
    intercept: float

    def accuracy_at(self, steps: np.ndarray) -> np.ndarray:
        """The fitted curve's accuracy at `steps`."""
        return 1 / (1 + np.exp(-(self.intercept + self.slope * np.log(steps))))

    def steps_to(self, target: float = LEARNED) -> float | None:
        """Steps at which the line reaches `target`; None when it does not rise."""
        if self.slope <= 0:
            return None
        exponent = (_logit(target) - self.intercept) / self.slope
        return math.exp(exponent) if exponent < math.log(_FAR) else math.inf


def fit_budgets(budgets: Iterable[tuple[int, float]]) -> BudgetFit | None:
    """The fit over (steps, accuracy) pairs; None with fewer than two budgets."""
    points = tuple(sorted((int(s), float(a)) for s, a in budgets if not math.isnan(a)))
    if len({s for s, _ in points}) < 2:
        return None
    x = np.log([s for s, _ in points])
    y = np.array([_logit(a) for _, a in points])
    slope, intercept = np.polyfit(x, y, 1)
    return BudgetFit(points, float(slope), float(intercept))


def budget_series(records: Iterable[dict]) -> dict[tuple[str, str, int], list[dict]]:
    """Pre-search records (docs/presearch/'s JSON lines) by (grid, point less its step budget, seed),
    in that order; failed trials left out. Records run with other `--set` values (a learning rate) are
    another point, named with them where they are not the same for all the grid's records."""
    records = [rec for rec in records if "error" not in rec]

    def settings(rec: dict) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((k, str(v)) for k, v in rec.get("set", {}).items() if k != "train.max_steps"))

    shared: dict[str, set[tuple[str, str]]] = {}  # per grid, the --set values every record has
    for rec in records:
        grid = rec.get("grid", "")
        shared[grid] = shared.get(grid, set(settings(rec))) & set(settings(rec))
    groups: dict[tuple[str, str, int], list[dict]] = {}
    for rec in records:
        grid = rec.get("grid", "")
        parts = [p for p in rec[POINT_COLUMN].split(",") if not p.startswith("max_steps=")]
        parts += [f"{k}={v}" for k, v in settings(rec) if (k, v) not in shared[grid]]
        groups.setdefault((grid, ",".join(parts), rec.get(SEED_COLUMN, 0)), []).append(rec)
    return dict(sorted(groups.items()))


def gate_budgets(records: Iterable[dict]) -> list[tuple[int, float]]:
    """(steps, the gate's reading) of each record of one point."""
    return [
        (
            rec["steps"],
            gate_accuracy(pd.DataFrame(rec["cells"]), rec["config"], rec.get("scale", ""), rec["grid"]),
        )
        for rec in records
    ]


def _two_figures(x: float) -> int:
    """An extrapolation's precision: two significant figures (33,954 -> 34,000)."""
    return int(round(x, 1 - math.floor(math.log10(x))))


def budget_table(
    records: list[dict], target: float = LEARNED, budget: int = 3000, single: bool = False
) -> pd.DataFrame:
    """One row per point of pre-search records (docs/presearch/'s JSON lines) whose step budget
    varies: the budgets with the gate's reading, the extrapolated steps to `target` and what that
    is in trial time at the rate measured on the records' machine. Points at a single budget are left
    out, unless `single`: then they say whether that budget reached `target` (a measurement, no fit)."""
    rows = []
    for (grid, point, seed), recs in budget_series(records).items():
        budgets = gate_budgets(recs)
        fit = fit_budgets(budgets)
        if fit is None and not (single and budgets):
            continue
        measured = fit.budgets if fit is not None else tuple(sorted(budgets))
        seconds_per_step = sum(r["train_seconds"] for r in recs) / sum(r["steps"] for r in recs)
        steps = fit.steps_to(target) if fit is not None else None
        reached = [s for s, a in measured if a >= target]
        if reached:
            estimate = f"reached at {reached[0]:,} (measured)"
        elif fit is None:
            estimate = f"not reached at {measured[-1][0]:,} (measured; one budget, no extrapolation)"
        elif steps is None:
            estimate = "no estimate: accuracy does not rise with the budget"
        elif math.isinf(steps):
            estimate = f"beyond {_FAR:,.0f} (the fit is nearly flat)"
        else:
            estimate = f"~{_two_figures(steps):,} ({steps / budget:.0f}x the {budget:,}-step budget)"
        minutes = (reached[0] if reached else steps or math.nan) * seconds_per_step / 60
        minutes = math.nan if math.isinf(minutes) else minutes
        rows.append(
            {
                "grid": grid,
                POINT_COLUMN: point,
                SEED_COLUMN: seed,
                "lowest gated-cell accuracy at steps": ", ".join(f"{s:,}: {a:.2f}" for s, a in measured),
                f"steps to {target:.2f} on every gated cell": estimate,
                "minutes a trial at that budget": "" if math.isnan(minutes) else f"{minutes:,.0f}",
                "machine": recs[0].get("machine", ""),
            }
        )
    return pd.DataFrame(rows)


def steps_needed(records: list[dict], target: float = LEARNED) -> dict[str, list[float | None]]:
    """Per pre-searched point ("grid: point", as `budget_table` names it), each seed's steps to `target`:
    the first budget measured reaching it, else the fit's extrapolation; None where there is neither (one
    budget not reached, a fit that does not rise or is nearly flat)."""
    out: dict[str, list[float | None]] = {}
    for (grid, point, _seed), recs in budget_series(records).items():
        budgets = sorted(gate_budgets(recs))
        reached = [s for s, a in budgets if a >= target]
        fit = fit_budgets(budgets)
        steps = float(reached[0]) if reached else (fit.steps_to(target) if fit is not None else None)
        out.setdefault(f"{grid}: {point}", []).append(
            steps if steps is None or math.isfinite(steps) else None
        )
    return out


def budget_figure(records: list[dict], target: float = LEARNED, budget: int = 3000) -> Figure | None:
    """The gate's reading against the step budget for every pre-search point run at several budgets: the
    measured budgets as dots, the fitted log-odds line (`fit_budgets`) drawn on to where it reaches
    `target`, the trial budget and the target marked."""
    fits = {
        f"{grid}: {point} (seed {seed})": fit
        for (grid, point, seed), recs in budget_series(records).items()
        if (fit := fit_budgets(gate_budgets(recs))) is not None
    }
    if not fits:
        return None
    figure = Figure(figsize=(11, 4.6))
    ax = figure.subplots()
    right = budget
    for i, (name, fit) in enumerate(fits.items()):
        steps, accuracies = zip(*fit.budgets, strict=True)
        ax.scatter(steps, accuracies, color=f"C{i}", s=30, zorder=3, label=name)
        reach = fit.steps_to(target)
        end = max(steps) if reach is None or not math.isfinite(reach) else max(max(steps), reach)
        end = min(end, 1e6)
        right = max(right, end)
        xs = np.geomspace(min(steps), end, 60)
        ax.plot(xs, fit.accuracy_at(xs), color=f"C{i}", lw=1, ls=":")
    ax.axhline(target, color="k", ls="--", lw=1)
    ax.axvline(budget, color="grey", lw=1)
    ax.text(budget, 0.5, f" {budget:,}-step budget", fontsize=8, color="grey", rotation=90, va="center")
    ax.set_xscale("log")
    ax.set_xlim(right=right * 1.3)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("optimiser steps (log)")
    ax.set_ylabel("lowest accuracy on the gated cells")
    ax.set_title(f"The gate's reading by step budget; dotted: the fit followed to {target:g}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    figure.tight_layout()
    return figure
