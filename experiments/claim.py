"""An experiment of the paper, declared once: the grid that runs it and the claims its numbers are judged by.

A `Claim` is one sentence of the paper with the check that reads it off a sweep's per-seed cells. A variant
of an `Experiment` (a budget, a scale) holds the same claim objects, so a claim is written once and judges
every variant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from arith.tracking.schema import ACCURACY_COLUMN
from experiments.grid import Grid, variant
from experiments.recipes import Recipe
from experiments.verdicts import Outcome

#: paper digit count -> the sweep's (None: the claim reads no paper table)
DigitMap = dict[int, int] | None
#: a claim's check: the sweep's per-seed cells and its digit map -> the contrasts read, or why not testable
Check = Callable[[pd.DataFrame, DigitMap], Outcome]


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, the cells that show a compared model learned, and the check that reads it."""

    text: str
    #: the paper label(s) it comes from (`tb:*`, `fig:*`), or why there is none
    source: str
    check: Check
    #: which accuracy the check reads, gate and contrast alike: `accuracy` (every test problem, as the
    #: paper's tables) or `accuracy_unseen` (only those that are not training problems)
    reads: str = ACCURACY_COLUMN
    #: the claim's stable name, unique in the catalogue: its verdict's tag (`claim.<id>`) whatever its wording
    id: str = ""


@dataclass(frozen=True)
class Experiment:
    """A grid and the claims that judge its sweeps (none for an experiment beyond the paper's claims)."""

    grid: Grid
    claims: tuple[Claim, ...] = ()
    #: where the pre-search that chose the grid's budget (`grid.presearch_seeds`) is recorded
    presearch: str = ""
    #: the recipes searches chose for it, one a scale: every point of the experiment trains at it
    recipes: tuple[Recipe, ...] = ()

    @property
    def name(self) -> str:
        return self.grid.name

    def recipe(self, scale: str) -> Recipe | None:
        """The recipe chosen for this experiment at `scale` (None: none declared)."""
        return next((r for r in self.recipes if r.scale == scale), None)

    def variant(
        self, name: str, description: str, settings: Mapping[str, Any], *, presearch: str = "", **how: Any
    ) -> Experiment:
        """The same experiment on a derived grid (`experiments.grid.variant`), judged by the same claims."""
        derived = variant(self.grid, name, description, settings, **how)
        return replace(self, grid=derived, presearch=presearch or self.presearch)
