"""A recipe search, declared: what a recipe may change, on which of an experiment's points, on which
pre-search seeds, under which early-stopping scheduler.

A `Search` names the experiment whose claim it serves and the points that claim compares (`compared`:
mul_format's basic and padding + reversed product), and the axes of a recipe: model shape, batch, peak
learning rate, steps (warmup and decay are laid over each trial's own steps, so they are timed to its
budget). `python -m lab.sweep --search NAME` runs every configuration (compared point x recipe) on the
search's seeds under Ray Tune's ASHA scheduler (`lab.search.sweep`), which reads at each evaluation the
weakest cell of the competence gate (accuracy on the problems not trained on) against the core-minutes
spent, and stops the configurations that fall behind; `lab.search.costs` turns the store into the table of
what each configuration cost to reach the gate.

A search runs on pre-search seeds only (from `PRESEARCH_FIRST_SEED` up): the seeds that choose a recipe
never judge the claim it serves. The recipe it chooses is declared on the experiment (a `Recipe` in
`Experiment.recipes`, its evidence naming the search in `lab.recipes.EVIDENCE`), so that every compared
point trains at the one recipe.
Torch-free, like the experiments it serves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from arith.config import ConfigError
from arith.tracking.schema import GATE_METRIC
from experiments.cells import in_range
from experiments.grid import PRESEARCH_FIRST_SEED, Axes, Grid, Variant, variant

#: written into each trial's MLflow run when the search ends: its core-minutes at each evaluated epoch,
#: and on a trial the scheduler stopped, the tag saying where (`rung` or `budget`)
CORE_MINUTES = "search/core_minutes"
STOPPED_TAG = "search_stopped"
#: the `search_stopped` tags of a trial ASHA stopped before it reached the gate (`passed`: it did, and
#: ended): at a rung, below the configurations recorded there before it; or at the search's core-minute
#: budget, having spent the whole of it
RUNG, BUDGET = "rung", "budget"
#: on a search's parent run, every machine a session of it ran on ("; "-separated): its core-minutes
#: compare only on one processor (a CPU that emulates bf16 takes several times longer)
MACHINES_TAG = "search_machines"


@dataclass(frozen=True)
class Asha:
    """Ray Tune's ASHA scheduler in a search's units: a configuration runs at least `grace_core_min`
    core-minutes, at most `max_core_min`; at each rung (grace x reduction_factor^k) only the best
    1 / `reduction_factor` of the configurations recorded there go on."""

    grace_core_min: float = 10.0
    max_core_min: float = 90.0
    reduction_factor: int = 3

    def rungs(self) -> list[float]:
        """The core-minutes at which ASHA compares configurations (the last one is the budget)."""
        out, at = [], self.grace_core_min
        while at < self.max_core_min:
            out.append(at)
            at *= self.reduction_factor
        return [*out, self.max_core_min]

    def most_core_min(self, configurations: int) -> float:
        """An upper bound of the search's cost: every configuration to the first rung, a
        `reduction_factor`-th of them on to each next one (ASHA may promote a few more)."""
        total, left, reached = 0.0, float(configurations), 0.0
        for rung in self.rungs():
            total += left * (rung - reached)
            left, reached = max(1.0, left / self.reduction_factor), rung
        return total


@dataclass(frozen=True)
class Search:
    """A recipe search over the compared points of one experiment (see the module docstring)."""

    name: str
    description: str
    #: the experiment (its grid's name) whose claim the recipe serves
    experiment: str
    #: the experiment's points the claim compares, by their axis values (`variant`'s `only`)
    compared: Mapping[str, list[Any]]
    #: what a recipe may change: config keys (or a bundle's name with `Variant` values, e.g. the model
    #: shape) -> the values tried; absolute values, set after the scale (train.lr is the peak rate itself)
    axes: Axes
    #: settings every configuration shares (precision, schedule, warmup), set after the scale too
    base: Mapping[str, Any] = field(default_factory=dict)
    #: the scale it runs at; its recipe for the task is the candidate each configuration stands in for
    scale: str = "cpu_recipe"
    #: the fraction of the paper's sample count the candidates draw (at a recipe scale)
    sample_fraction: float = 1.0
    #: the pre-search seeds each configuration runs on (from PRESEARCH_FIRST_SEED up)
    seeds: tuple[int, ...] = (PRESEARCH_FIRST_SEED,)
    scheduler: Asha = field(default_factory=Asha)
    #: the gate's cells where the paper has no table for a point (`experiments.cells` selector)
    fallback: Callable[[pd.DataFrame], pd.DataFrame] = in_range
    #: what ASHA ranks configurations by: the gate's weakest cell (the cheapest recipe that learns), or a
    #: length test's reach (`schema.LENGTH_SCORE_METRIC`: how far beyond its training a model holds)
    metric: str = GATE_METRIC
    #: end a configuration as soon as it passes the gate (its cost to the gate is then known); a search
    #: that ranks by something the gate does not measure (a length's reach) runs each to its budget
    stop_at_gate: bool = True

    def __post_init__(self) -> None:
        check_presearch_seeds(self.seeds, self.name)

    def settings_keys(self) -> tuple[str, ...]:
        """Every config key the search sets (its base's and its axes', bundles opened): set after the
        scale (`Grid.over_scale`), since a recipe replaces the scale's values outright."""
        keys = list(self.base)
        for axis, values in self.axes.items():
            if "." in axis:
                keys.append(axis)
            keys += [k for v in values if isinstance(v, Variant) for k in v.overrides]
        return tuple(dict.fromkeys(keys))

    def split_point(self, point: str) -> tuple[str, str]:
        """A configuration's name (a point of `grid`, `model=tiny,...,format=basic,max_digits=5`) as
        (its recipe, its compared point): the `compared` axes' `key=value` parts apart from the rest."""
        compared = {key.rpartition(".")[2] for key in self.compared}
        parts = point.split(",")
        mine = [part for part in parts if part.partition("=")[0] in compared]
        return ",".join(p for p in parts if p not in mine), ",".join(mine)

    def grid(self, parent: Grid) -> Grid:
        """The search's grid: `parent` (the experiment's) cut to the compared points, times the recipe
        axes, every search setting after the scale, tagged with the search's pre-search seeds. The compared
        points vary fastest, so each configuration's formats are tried side by side, not one format's
        whole search before the other's."""
        derived = variant(
            parent,
            self.name,
            self.description,
            self.base,
            only=self.compared,
            over_scale=self.settings_keys(),
            scale=self.scale,
            presearch_seeds=self.seeds,
        )
        return dataclasses.replace(derived, axes={**self.axes, **derived.axes}, also=())


def check_presearch_seeds(seeds: Iterable[int], what: str) -> None:
    """Refuse seeds below PRESEARCH_FIRST_SEED: those are the ones claims are judged on."""
    low = sorted(s for s in seeds if s < PRESEARCH_FIRST_SEED)
    if low:
        raise ConfigError(
            f"{what}: a search runs on pre-search seeds from {PRESEARCH_FIRST_SEED} up (the seeds below "
            f"judge the claims a recipe serves), not {', '.join(map(str, low))}"
        )
