"""How long a grid's trial is at the paper's scale, for the results page's table of what could not be
tested here."""

from __future__ import annotations

from arith.config import ConfigError
from arith.training.optim import run_steps
from experiments.grid import Grid
from sweeps.grids import get_grid, points
from sweeps.scales import Scale


def longest_trial(grid: Grid | str, scale: Scale | str = "paper") -> int:
    """Optimiser steps of the grid's longest trial at `scale` (`arith.training.optim.run_steps`)."""
    return max(run_steps(cfg) for cfg in points(grid, scale))


def paper_trial(name: str) -> str:
    """How long a trial of grid `name` is at `paper` scale, where the paper's numbers were made. A variant
    that fixes its steps at every scale (`Grid.over_scale`) runs its own steps there, so the paper's own
    trial, its parent's, is named beside them rather than passed off as the variant's. A grid made for
    another scale that the paper scale refuses (length_gen's lengths past GPT-2 small's table at its
    settings) says so instead of failing the report."""
    made_for = get_grid(name).scale
    try:
        steps = longest_trial(name)
    except ConfigError:
        if not made_for or made_for == "paper":
            raise
        return f"none: the grid is made for --scale {made_for} and refused at paper scale"
    text = f"{steps:,} steps (GPT-2 small)"
    parent = get_grid(name).parent
    if parent and (paper := longest_trial(parent)) != steps:
        text += f"; the variant fixes its steps at every scale: the paper's own trial ({parent}) is {paper:,}"
    return text
