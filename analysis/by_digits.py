"""Accuracy by digit count, each seed drawn: the shape of the paper's length-generalisation figures.

A mean of 0.94 may be five seeds near it or four at 1.00 and one at 0.78; the tables give the mean, this
figure the seeds. Seeds that chose the sweep's budget are drawn hollow: shown, never judged.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from analysis.curves import point_colours, point_labels
from analysis.findings import chose_budget_seeds
from analysis.sweep import Sweep
from arith.tracking.schema import (
    ACCURACY_COLUMN,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    POINT_COLUMN,
    ROW_DIGITS_COLUMN,
    RUN_ID_COLUMN,
    SEED_COLUMN,
)
from experiments.cells import measured
from experiments.verdicts import LEARNED

#: half the gap between neighbouring points' dots at one digit count (in digits)
JITTER = 0.05


def length_cells(sweep: Sweep, labels: pd.Series) -> pd.DataFrame:
    """Each finished trial's cells at its last evaluation, with its point's label; empty for a grid of two
    digit counts (multiplication)."""
    cells = measured(sweep.cells)
    if cells.empty or cells[ROW_DIGITS_COLUMN].notna().any():
        return cells.iloc[0:0]
    by_run = dict(zip(sweep.trials[RUN_ID_COLUMN], labels, strict=True))
    return cells.assign(**{POINT_COLUMN: cells[RUN_ID_COLUMN].map(by_run)}).dropna(subset=[POINT_COLUMN])


def accuracy_by_digits_figure(sweep: Sweep) -> Figure | None:
    """A panel per context: each point's mean over its judged seeds by digit count (a line, in a band
    from the lowest seed to the highest), each seed a dot, beyond the training range shaded."""
    labels = point_labels(sweep.trials, sweep.axes)
    cells = length_cells(sweep, labels)
    if cells.empty:
        return None
    presearch = set(chose_budget_seeds(sweep.presearch_seeds_tag))
    contexts = sorted(cells[CONTEXT_COLUMN].fillna("main").unique())
    points = sorted(cells[POINT_COLUMN].unique())
    colour = point_colours(sweep.trials, labels)
    figure = Figure(figsize=(max(7.5, 4.6 * len(contexts) + 0.6), 3.6 + 0.14 * len(points)))
    axes = figure.subplots(1, len(contexts), sharey=True, squeeze=False)[0]
    trained = float(cells["data.max_digits"].astype(float).max())
    offsets = {p: (i - (len(points) - 1) / 2) * JITTER * 2 for i, p in enumerate(points)}
    for ax, context in zip(axes, contexts, strict=True):
        mine = cells[cells[CONTEXT_COLUMN].fillna("main") == context]
        digits = sorted(mine[COL_DIGITS_COLUMN].astype(int).unique())
        if digits and digits[-1] > trained:
            ax.axvspan(trained + 0.5, digits[-1] + 0.5, color="0.9", lw=0, zorder=0)
        for point, rows in mine.groupby(POINT_COLUMN):
            x = rows[COL_DIGITS_COLUMN].astype(int) + offsets[point]
            fresh, accuracy = ~rows[SEED_COLUMN].astype(int).isin(presearch), rows[ACCURACY_COLUMN]
            ax.scatter(x[fresh], accuracy[fresh], s=18, color=colour[point], alpha=0.7)
            ax.scatter(x[~fresh], accuracy[~fresh], s=22, facecolors="none", edgecolors=colour[point])
            if not fresh.any():  # a pre-search's point: its seeds shown, no mean drawn as if judged
                continue
            judged = rows[fresh].groupby(COL_DIGITS_COLUMN)[ACCURACY_COLUMN]
            means, low, high = judged.mean(), judged.min(), judged.max()
            at = means.index.astype(int) + offsets[point]
            ax.fill_between(at, low.to_numpy(), high.to_numpy(), color=colour[point], alpha=0.15, lw=0)
            ax.plot(at, means.to_numpy(), color=colour[point], lw=1.5)
        ax.axhline(LEARNED, color="k", ls=":", lw=0.8)
        ax.set_xticks(digits)
        ax.set_xlabel("digits")
        ax.set_title(context if len(contexts) > 1 else "", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylim(-0.04, 1.04)
    axes[0].set_ylabel("exact-match accuracy at the end")
    handles = [Line2D([], [], color=colour[p], marker="o", ms=4, lw=1.5, label=p) for p in points]
    handles.append(
        Line2D(
            [], [], color="0.4", marker="o", ms=4, lw=0, label="a seed (line: their mean, band: their range)"
        )
    )
    if cells[SEED_COLUMN].astype(int).isin(presearch).any():
        hollow = {"marker": "o", "ms": 5, "mfc": "none", "lw": 0}
        handles.append(
            Line2D([], [], color="0.4", label="a seed that chose the budget (not in the mean)", **hollow)
        )
    if any(cells[COL_DIGITS_COLUMN].astype(float) > trained):
        handles.append(Line2D([], [], color="0.75", lw=6, label="beyond the training range"))
    handles.append(Line2D([], [], color="k", ls=":", lw=0.8, label=f"the gate's {LEARNED:g}"))
    figure.legend(handles=handles, fontsize=7, frameon=False, loc="lower center", ncol=2)
    figure.suptitle(f"{sweep.grid}: accuracy by digit count, each seed", fontsize=11)
    rows = (len(handles) + 1) // 2  # the legend's, below the panels
    figure.tight_layout(rect=(0, (0.15 + 0.14 * rows) / figure.get_figheight(), 1, 1))
    return figure
