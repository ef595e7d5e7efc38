"""The catalogue of experiments: every module of `experiments.catalog`, and your own.

Each module of `experiments/catalog/` declares `EXPERIMENTS` (a tuple of `Experiment`), found by listing
the folder. Modules outside this repository named in `POSDESC_EXPERIMENTS` (comma-separated) are loaded the
same way: `POSDESC_EXPERIMENTS=my_lab.carries python sweeps/run.py --grid carries` runs one. A module may
also declare `NO_RECIPE`: per task without a recipe at a recipe scale, what its nearest pre-search reached.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections import UserDict
from collections.abc import Callable, Mapping
from typing import TypeVar

from arith.errors import ConfigError
from experiments import catalog
from experiments.claim import Claim, Experiment
from experiments.recipes import Recipe

#: the environment variable naming modules of experiments outside this repository
PLUGINS_ENV = "POSDESC_EXPERIMENTS"

K = TypeVar("K")
V = TypeVar("V")


class PluginError(ConfigError):
    """A module of experiments cannot be used; the message names it and says why, in one line."""


class Lazy(UserDict[K, V]):
    """A mapping built on first use, not at import (a broken plugin then fails inside a command's error
    handling, and `--help` works without the catalogue); built again when $POSDESC_EXPERIMENTS changes."""

    def __init__(self, build: Callable[[], dict[K, V]]) -> None:  # no UserDict.__init__: `data` is built
        self._build = build
        self._items: dict[K, V] | None = None
        self._plugins: str | None = None

    @property
    def data(self) -> dict[K, V]:
        plugins = os.environ.get(PLUGINS_ENV, "")
        if self._items is None or plugins != self._plugins:
            self._items, self._plugins = None, plugins
            self._items = self._build()
        return self._items


def module_names() -> list[str]:
    """The catalogue's modules, then the plugins'."""
    own = [f"{catalog.__name__}.{m.name}" for m in pkgutil.iter_modules(catalog.__path__)]
    return own + [name.strip() for name in os.environ.get(PLUGINS_ENV, "").split(",") if name.strip()]


def load(name: str) -> object:
    """The module `name`; whatever stops its import is a PluginError naming it."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name and name.startswith(err.name):
            raise PluginError(f"{PLUGINS_ENV}: no module named {name!r} on the Python path") from None
        raise PluginError(f"{PLUGINS_ENV}: module {name!r} failed to import ({err})") from None
    except Exception as err:
        lines = str(err).strip().splitlines()
        why = f"{type(err).__name__}: {lines[-1]}" if lines else type(err).__name__
        raise PluginError(f"{PLUGINS_ENV}: module {name!r} failed to import ({why})") from None


def _collect() -> dict[str, Experiment]:
    found: dict[str, Experiment] = {}
    for name in module_names():
        declared = getattr(load(name), "EXPERIMENTS", None)
        if declared is None:
            raise PluginError(f"{name} declares no EXPERIMENTS (a tuple of experiments.claim.Experiment)")
        if not isinstance(declared, list | tuple):
            declared = (declared,)
        for experiment in declared:
            if not isinstance(experiment, Experiment):
                raise PluginError(
                    f"{name}: EXPERIMENTS holds {experiment!r}, not an experiments.claim.Experiment"
                )
            if experiment.name in found:
                raise PluginError(f"experiment {experiment.name!r} is declared twice (again in {name})")
            found[experiment.name] = experiment
    return found


#: every experiment by its grid's name, in the order of their modules and, within one, declared
EXPERIMENTS: Mapping[str, Experiment] = Lazy(_collect)


def claims_for(grid: str, variant_of: str = "") -> tuple[Claim, ...]:
    """The claims a sweep of `grid` is judged by: its experiment's (a variant holds its parent's), else,
    for a grid this checkout does not declare, its parent's (the sweep's `variant_of` tag)."""
    experiment = EXPERIMENTS.get(grid) or EXPERIMENTS.get(variant_of)
    return experiment.claims if experiment else ()


def recipe_for(grid: str, scale: str) -> Recipe | None:
    """The recipe a search chose for `grid`'s experiment at `scale` (None: none declared)."""
    experiment = EXPERIMENTS.get(grid)
    return experiment.recipe(scale) if experiment else None


def why_no_recipe(task: str) -> str:
    """Why no experiment has a recipe for `task`, as a module's `NO_RECIPE` says, else that none has run."""
    notes = (getattr(load(name), "NO_RECIPE", {}) for name in module_names())
    return next((note[task] for note in notes if task in note), "no pre-search has run for it")


def presearch_record(grid: str) -> str:
    """Where that pre-search is recorded ("" when the experiment names no record)."""
    experiment = EXPERIMENTS.get(grid)
    return experiment.presearch if experiment else ""
