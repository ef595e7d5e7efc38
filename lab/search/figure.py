"""A recipe search as it ran, drawn: the gate's weakest cell of each configuration against the core-minutes
it had spent, one panel per compared point, each trial's end marked (passed, cut at a rung, spent)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from arith.tracking.schema import EPOCH_COLUMN, POINT_COLOURS, POINT_COLUMN, SEED_COLUMN
from experiments.verdicts import LEARNED, TOLERANCE
from lab.search.declared import BUDGET, RUNG

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
    `lab.search.costs.search_evaluations`; `split`: a point's name as (recipe, compared point),
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
