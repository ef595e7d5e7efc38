"""Learning curves: how a sweep's trials learned over their steps, and how the gate's reading of a point grows
with its step budget.

A claim is not testable when a model it compares did not learn the cells the paper's own model learned.
These two figures show why and what it would take: the training loss of each point over the trial's steps
beside where each trial ended on the cells the competence gate reads (its lowest cell: still falling loss,
more steps would help; flat, they would not), and, for the points the pre-search ran at several budgets,
the measured gate readings (the lowest gated cell) with the fit `analysis.budget` follows to the threshold.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import matplotlib
import numpy as np
import pandas as pd

matplotlib.use("Agg")
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from analysis.budget import budget_series, fit_budgets, gate_budgets
from analysis.sweep import Sweep
from arith.tracking.schema import (
    ACCURACY_COLUMN,
    COLOUR_COLUMN,
    EPOCH_COLUMN,
    LOSS_METRIC,
    POINT_COLOURS,
    POINT_COLUMN,
    RUN_ID_COLUMN,
    SEED_COLUMN,
)
from experiments.search import BUDGET, RUNG
from experiments.verdicts import LEARNED, TOLERANCE, gated_cells, in_range, measured

#: the loss is one batch's: each trial's curve is a rolling mean over this many logged values
SMOOTH = 5


def point_labels(trials: pd.DataFrame, axes: list[str]) -> pd.Series:
    """A short label for each trial's point: the sweep's axes and their values."""
    shown = [a for a in axes if a in trials.columns]
    if not shown:
        return trials[POINT_COLUMN].astype(str)
    return (
        trials[shown]
        .astype(str)
        .apply(lambda row: ", ".join(f"{k.rpartition('.')[2]}={v}" for k, v in row.items()), axis=1)
    )


def point_colours(trials: pd.DataFrame, labels: pd.Series) -> dict[str, str]:
    """Each point label's colour: its trials' run colour (the `mlflow.runColor` tag the sweep gave them,
    what the MLflow UI's charts draw them in), else by its place among the sorted labels, from the same
    palette (trials of a sweep from before the tag)."""
    tagged = trials[COLOUR_COLUMN] if COLOUR_COLUMN in trials.columns else pd.Series("", index=trials.index)
    points = sorted(set(labels))
    colour = {p: POINT_COLOURS[i % len(POINT_COLOURS)] for i, p in enumerate(points)}
    for label, tag in zip(labels, tagged.fillna(""), strict=True):
        if tag:
            colour[label] = tag
    return colour


def gated_by_trial(sweep: Sweep) -> pd.Series:
    """Each finished trial's lowest accuracy, at its last evaluation, on the cells the competence rule
    reads (`experiments.verdicts.gated_cells`: where the paper's own model learned, through the sweep's digit
    map; else the cells in range). A trial has learned when this is at least LEARNED, as the gate reads it."""
    cells = measured(sweep.cells)
    if cells.empty:
        return pd.Series(dtype=float)
    digit_map = sweep.digit_map
    lowest = {}
    for run_id, trial in cells.groupby(RUN_ID_COLUMN):
        gated, _ = gated_cells(trial, digit_map, in_range)
        if not gated.empty:
            lowest[run_id] = float(gated[ACCURACY_COLUMN].min())
    return pd.Series(lowest, dtype=float)


def learning_curves_figure(sweep: Sweep, history: pd.DataFrame | None = None) -> Figure | None:
    """Left: each point's training loss by step (the mean over its seeds, the band their range). Right:
    each trial's lowest accuracy at the end on the cells the competence rule reads (a dot per seed) against
    the threshold: the gate's own reading, so a point whose dots sit left of it is not learned."""
    history = sweep.history_of((LOSS_METRIC,)) if history is None else history
    accuracy = gated_by_trial(sweep)
    if history.empty and accuracy.empty:
        return None
    labels = dict(zip(sweep.trials[RUN_ID_COLUMN], point_labels(sweep.trials, sweep.axes), strict=True))
    points = sorted(set(labels.values()))
    colour = point_colours(sweep.trials, pd.Series(list(labels.values())))
    figure = Figure(figsize=(11, 3.4 + 0.36 * len(points)))
    loss_ax, acc_ax = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1.5, 1]})
    if not history.empty:
        frame = history.assign(**{POINT_COLUMN: history[RUN_ID_COLUMN].map(labels)})
        for point, lines in frame.groupby(POINT_COLUMN):
            by_step = lines.pivot_table(index="step", columns=RUN_ID_COLUMN, values="value")
            by_step = by_step.rolling(SMOOTH, min_periods=1).mean()
            steps = by_step.index.to_numpy()
            loss_ax.plot(steps, by_step.mean(axis=1), color=colour[point], lw=1.4, label=point)
            if by_step.shape[1] > 1:
                low, high = by_step.min(axis=1), by_step.max(axis=1)
                loss_ax.fill_between(steps, low, high, color=colour[point], alpha=0.18, lw=0)
        loss_ax.set_yscale("log")
        # below the panel, not over the curves it names (the same points as the right panel's rows)
        loss_ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(0, -0.2), ncol=2)
    loss_ax.set_xlabel("optimiser step")
    loss_ax.set_ylabel(f"{LOSS_METRIC}, mean of {SMOOTH} logs\n(line: mean over seeds; band: their range)")
    loss_ax.grid(alpha=0.3, which="both")
    for i, point in enumerate(points):
        runs = [r for r, p in labels.items() if p == point and r in accuracy.index]
        values = accuracy.loc[runs]
        acc_ax.scatter(values, [i] * len(values), s=34, alpha=0.8, color=colour[point], zorder=3)
        if len(values):
            acc_ax.plot([values.mean()] * 2, [i - 0.3, i + 0.3], color="k", lw=2)
    acc_ax.axvline(LEARNED, color="k", ls="--", lw=1)
    acc_ax.set_yticks(range(len(points)), points, fontsize=8)
    acc_ax.yaxis.tick_right()
    acc_ax.set_xlim(-0.03, 1.03)
    acc_ax.set_xlabel(
        "lowest accuracy at the end on the gated cells\n"
        f"(dot: a seed; black bar: their mean; dashed: learned = {LEARNED:g} on every one)"
    )
    acc_ax.grid(axis="x", alpha=0.3)
    figure.suptitle(f"{sweep.grid}: learning curves", fontsize=11)
    figure.tight_layout()
    return figure


def budget_figure(records: list[dict], target: float = LEARNED, budget: int = 3000) -> Figure | None:
    """The gate's reading against the step budget for every pre-search point run at several budgets: the
    measured budgets as dots, the fitted log-odds line (analysis.budget) drawn on to where it reaches
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


#: how a search's trial ended, as the figure marks it: (marker, size)
TRIAL_ENDS = {"passed": ("*", 12), "cut": ("x", 8), "spent": ("s", 6), "running": ("o", 7)}
TRIAL_END_LABELS = {
    "passed": "passed the gate",
    "cut": "cut by ASHA at a rung",
    "spent": "whole budget, short of the gate",
    "running": "running, or paused to resume",
}


def trial_end(last: pd.Series, threshold: float) -> str:
    """How a search's trial ended, from its last evaluation: it passed (tagged so by the search, or its
    last epoch read the gate), ASHA cut it at a rung, it spent its whole budget short of the gate (every
    epoch, FINISHED, or the search's core-minutes, where ASHA stopped it), or it has not ended (RUNNING,
    or KILLED with no tag: stopped with its session, it resumes)."""
    if last["stopped"] == "passed" or last["gate"] >= threshold - TOLERANCE:
        return "passed"
    if last["stopped"] == RUNG:
        return "cut"
    return "spent" if last["status"] == "FINISHED" or last["stopped"] == BUDGET else "running"


def search_figure(
    evaluations: pd.DataFrame,
    split: Callable[[str], tuple[str, str]],
    rungs: list[float],
    threshold: float = LEARNED,
) -> Figure | None:
    """A recipe search as it ran: one panel per compared point (a claim's format), the gate's weakest cell
    of each configuration (a recipe, one colour in every panel) against the core-minutes it had spent, one
    line a trial; its end marked: a star where it passed the gate, a cross where ASHA cut it at a rung, a
    square where it spent its whole budget short of the gate (its steps, or the search's core-minutes), an
    open circle while it runs (or waits, stopped with its session, to resume). `evaluations`:
    `analysis.search.search_evaluations`; `split`: a point's name as (recipe, compared point),
    `Search.split_point`; `rungs`: where ASHA compares, drawn as verticals."""
    if evaluations.empty:
        return None
    names = evaluations[POINT_COLUMN].map(split)
    named = evaluations.assign(recipe=names.str[0], compared=names.str[1])
    recipes, panels = sorted(named["recipe"].unique()), sorted(named["compared"].unique())
    colour = {r: POINT_COLOURS[i % len(POINT_COLOURS)] for i, r in enumerate(recipes)}
    figure = Figure(figsize=(6 * len(panels) + 3.5, 4.6))
    axes = np.atleast_1d(figure.subplots(1, len(panels), sharex=True, sharey=True, squeeze=False)[0])
    for ax, compared in zip(axes, panels, strict=True):
        panel = named[named["compared"] == compared]
        for (recipe, _seed), trial in panel.groupby(["recipe", SEED_COLUMN]):
            trial = trial.sort_values(EPOCH_COLUMN)
            ax.plot(trial["core_minutes"], trial["gate"], color=colour[recipe], lw=1.2, marker=".", ms=4)
            marker, size = TRIAL_ENDS[trial_end(trial.iloc[-1], threshold)]
            last = trial.iloc[-1]
            ax.plot([last["core_minutes"]], [last["gate"]], marker=marker, ms=size, ls="", zorder=3,
                    color=colour[recipe], mfc="none" if marker == "o" else colour[recipe])  # fmt: skip
        ax.axhline(threshold, color="k", ls="--", lw=1)
        for rung in rungs:
            ax.axvline(rung, color="grey", lw=0.8, ls=":")
        ax.set_title(compared, fontsize=10)
        ax.set_xlabel("core-minutes spent (the trial's own CPU time)")
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("weakest gated cell (unseen problems)")
    handles = [Line2D([], [], color=colour[r], lw=1.5, label=r) for r in recipes]
    for end, label in TRIAL_END_LABELS.items():
        marker, size = TRIAL_ENDS[end]
        hollow = "none" if end == "running" else None
        handles.append(
            Line2D([], [], color="grey", marker=marker, ms=size * 0.75, ls="", mfc=hollow, label=label)
        )
    axes[-1].legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    rungs_said = "; dotted, ASHA's rungs" if rungs else ""
    figure.suptitle(f"Cost to the gate ({threshold:g}, dashed){rungs_said}", fontsize=10)
    figure.tight_layout()
    return figure


def save(figure: Figure, path) -> None:
    """Write a figure as a PNG with no timestamp in it, so the same numbers give the same file."""
    figure.savefig(path, dpi=100, metadata={"Software": None})
