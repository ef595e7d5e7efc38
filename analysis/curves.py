"""Learning curves: why a model did not learn the cells a claim's competence gate reads, and whether more
steps would help (a loss still falling) or not (flat).
"""

from __future__ import annotations

import matplotlib
import pandas as pd

matplotlib.use("Agg")
from matplotlib.figure import Figure

from analysis.sweep import Sweep
from arith.tracking.schema import (
    ACCURACY_COLUMN,
    COLOUR_COLUMN,
    LOSS_METRIC,
    POINT_COLOURS,
    POINT_COLUMN,
    RUN_ID_COLUMN,
)
from experiments.cells import in_range, measured
from experiments.verdicts import LEARNED, gated_cells

#: the loss is one batch's: each trial's curve is a rolling mean over this many logged values
SMOOTH = 5


def point_labels(trials: pd.DataFrame, axes: list[str]) -> pd.Series:
    shown = [a for a in axes if a in trials.columns]
    if not shown:
        return trials[POINT_COLUMN].astype(str)
    return (
        trials[shown]
        .astype(str)
        .apply(lambda row: ", ".join(f"{k.rpartition('.')[2]}={v}" for k, v in row.items()), axis=1)
    )


def point_colours(trials: pd.DataFrame, labels: pd.Series) -> dict[str, str]:
    """Each point label's colour: its trials' `mlflow.runColor` tag (the MLflow UI's charts' colour), else
    by its place among the sorted labels, from the same palette."""
    tagged = trials[COLOUR_COLUMN] if COLOUR_COLUMN in trials.columns else pd.Series("", index=trials.index)
    points = sorted(set(labels))
    colour = {p: POINT_COLOURS[i % len(POINT_COLOURS)] for i, p in enumerate(points)}
    for label, tag in zip(labels, tagged.fillna(""), strict=True):
        if tag:
            colour[label] = tag
    return colour


def gated_by_trial(sweep: Sweep) -> pd.Series:
    """Each finished trial's lowest accuracy at its last evaluation on the cells the competence rule reads
    (`experiments.verdicts.gated_cells`): it learned when this is at least LEARNED."""
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


def seeds_by_point(
    ax, by_point: list[tuple[str, pd.Series]], colours: list[str], size: int, alpha: float
) -> None:
    """A row per point of accuracies: a dot per seed, a black bar at their mean."""
    for i, ((_, values), colour) in enumerate(zip(by_point, colours, strict=True)):
        ax.scatter(values, [i] * len(values), s=size, alpha=alpha, color=colour, zorder=3)
        if len(values):
            ax.plot([values.mean()] * 2, [i - 0.3, i + 0.3], color="k", lw=2)
    ax.set_yticks(range(len(by_point)), [point for point, _ in by_point], fontsize=8)
    ax.set_xlim(-0.03, 1.03)
    ax.grid(axis="x", alpha=0.3)


def learning_curves_figure(sweep: Sweep, history: pd.DataFrame | None = None) -> Figure | None:
    """Left: each point's training loss by step (the mean over its seeds, the band their range). Right:
    each trial's `gated_by_trial` (a dot per seed) against the gate's threshold."""
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
    by_point = [
        (p, accuracy.loc[[r for r, q in labels.items() if q == p and r in accuracy.index]]) for p in points
    ]
    seeds_by_point(acc_ax, by_point, [colour[p] for p in points], size=34, alpha=0.8)
    acc_ax.axvline(LEARNED, color="k", ls="--", lw=1)
    acc_ax.yaxis.tick_right()
    acc_ax.set_xlabel(
        "lowest accuracy at the end on the gated cells\n"
        f"(dot: a seed; black bar: their mean; dashed: learned = {LEARNED:g} on every one)"
    )
    figure.suptitle(f"{sweep.grid}: learning curves", fontsize=11)
    figure.tight_layout()
    return figure
