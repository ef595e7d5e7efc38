"""The lab's grids and searches, registered as a module of experiments (`experiments.registry`'s plugin
hook, $POSDESC_EXPERIMENTS; importing `lab` adds this module to it): the variants of the catalogue's
experiments its pre-searches and replications ran, the cpu preset's tuning grids, and the recipe searches.
"""

from __future__ import annotations

from lab.catalog import length_gen, multiplication, position_embedding, tuning
from lab.recipes import NO_RECIPE

EXPERIMENTS = (
    *multiplication.EXPERIMENTS,
    *length_gen.EXPERIMENTS,
    *position_embedding.EXPERIMENTS,
    *tuning.EXPERIMENTS,
)
SEARCHES = (*multiplication.SEARCHES, *length_gen.SEARCHES)
__all__ = ["EXPERIMENTS", "NO_RECIPE", "SEARCHES"]
