"""The catalogue of experiments: every module of `experiments.catalog`, and your own.

Each module of `experiments/catalog/` declares `EXPERIMENTS` (a tuple of `Experiment`); they are found by
listing the folder, so adding an experiment adds one file. Experiments outside this repository are loaded
from the importable modules named in the environment variable `POSDESC_EXPERIMENTS` (comma-separated), each
declaring `EXPERIMENTS` the same way: `POSDESC_EXPERIMENTS=my_lab.carries python sweeps/run.py --grid
carries` runs one, and `python -m analysis` judges it by its claims. A module may declare `SEARCHES` too:
the recipe searches (`experiments.search`) of its experiments, `python sweeps/run.py --search NAME`.
"""

from __future__ import annotations

import importlib
import os
import pkgutil

from experiments import catalog
from experiments.claim import Claim, Experiment
from experiments.search import ChosenRecipe, Search

#: the environment variable naming modules of experiments outside this repository
PLUGINS_ENV = "POSDESC_EXPERIMENTS"


def _module_names() -> list[str]:
    own = [f"{catalog.__name__}.{m.name}" for m in pkgutil.iter_modules(catalog.__path__)]
    return own + [name.strip() for name in os.environ.get(PLUGINS_ENV, "").split(",") if name.strip()]


def _collect() -> dict[str, Experiment]:
    found: dict[str, Experiment] = {}
    for name in _module_names():
        module = importlib.import_module(name)
        declared = getattr(module, "EXPERIMENTS", None)
        if declared is None:
            raise ImportError(f"{name} declares no EXPERIMENTS (a tuple of experiments.claim.Experiment)")
        for experiment in declared:
            if experiment.name in found:
                raise ValueError(f"experiment {experiment.name!r} is declared twice (again in {name})")
            found[experiment.name] = experiment
    return found


#: every experiment by its grid's name, in the order of their modules' names and, within one, declared
EXPERIMENTS: dict[str, Experiment] = _collect()


def _collect_searches() -> dict[str, Search]:
    """The recipe searches the same modules declare (`SEARCHES`, optional), each of a known experiment."""
    found: dict[str, Search] = {}
    for name in _module_names():
        for search in getattr(importlib.import_module(name), "SEARCHES", ()):
            if search.name in found or search.name in EXPERIMENTS:
                raise ValueError(f"search {search.name!r} is declared twice or names an experiment")
            if search.experiment not in EXPERIMENTS:
                raise ValueError(f"search {search.name!r} serves unknown experiment {search.experiment!r}")
            found[search.name] = search
    return found


#: every recipe search by name (`python sweeps/run.py --search NAME`)
SEARCHES: dict[str, Search] = _collect_searches()


def claims_for(grid: str, variant_of: str = "") -> tuple[Claim, ...]:
    """The claims a sweep of `grid` is judged by: its experiment's (a variant holds its parent's), else,
    for a grid this checkout does not declare, its parent's (the sweep's `variant_of` tag)."""
    experiment = EXPERIMENTS.get(grid) or EXPERIMENTS.get(variant_of)
    return experiment.claims if experiment else ()


def recipe_for(grid: str, scale: str) -> ChosenRecipe | None:
    """The recipe a search chose for `grid`'s experiment at `scale` (None: none declared)."""
    experiment = EXPERIMENTS.get(grid)
    return experiment.recipe(scale) if experiment else None


def presearch_seeds_of(grid: str) -> tuple[int, ...]:
    """The seeds of the pre-search that chose `grid`'s budget, as its experiment declares them (a sweep's
    own `presearch_seeds` tag wins over this)."""
    experiment = EXPERIMENTS.get(grid)
    return experiment.grid.presearch_seeds if experiment else ()


def presearch_record(grid: str) -> str:
    """Where that pre-search is recorded ("" when the experiment names no record)."""
    experiment = EXPERIMENTS.get(grid)
    return experiment.presearch if experiment else ""
