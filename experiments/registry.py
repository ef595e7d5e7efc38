"""The catalogue of experiments: every module of `experiments.catalog`, and your own.

Each module of `experiments/catalog/` declares `EXPERIMENTS` (a tuple of `Experiment`); they are found by
listing the folder, so adding an experiment adds one file. Experiments outside this repository are loaded
from the importable modules named in the environment variable `POSDESC_EXPERIMENTS` (comma-separated), each
declaring `EXPERIMENTS` the same way: `POSDESC_EXPERIMENTS=my_lab.carries python sweeps/run.py --grid
carries` runs one, and `python -m analysis` judges it by its claims. A module may declare `NO_RECIPE` (per
task without a recipe at a recipe scale, what its nearest pre-search reached) and `SEARCHES` too:
searches over its experiments' points (objects naming themselves and the experiment they serve, e.g. the
lab's recipe searches, `lab.search.declared.Search`, that `python -m lab.sweep --search NAME` runs).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Generic, Protocol, TypeVar

from arith.errors import ConfigError
from experiments import catalog
from experiments.claim import Claim, Experiment
from experiments.recipes import Recipe

#: the environment variable naming modules of experiments outside this repository
PLUGINS_ENV = "POSDESC_EXPERIMENTS"

K = TypeVar("K")
V = TypeVar("V")


class Search(Protocol):
    """What the registry reads of a declared search: its name and the experiment whose points it runs."""

    name: str
    experiment: str


class PluginError(ConfigError):
    """A module of experiments cannot be used; the message names it and says why, in one line."""


class Lazy(MutableMapping[K, V], Generic[K, V]):
    """A mapping built on first use, not at import: a broken plugin then fails inside a command's error
    handling (one line, exit 2), and `--help` works without the catalogue. Built again when the plugins
    named in $POSDESC_EXPERIMENTS change (a module that registers itself after a first use)."""

    def __init__(self, build: Callable[[], dict[K, V]]) -> None:
        self._build = build
        self._items: dict[K, V] | None = None
        self._plugins: str | None = None

    def _loaded(self) -> dict[K, V]:
        plugins = os.environ.get(PLUGINS_ENV, "")
        if self._items is None or plugins != self._plugins:
            self._items, self._plugins = None, plugins
            self._items = self._build()
        return self._items

    def __getitem__(self, key: K) -> V:
        return self._loaded()[key]

    def __setitem__(self, key: K, value: V) -> None:
        self._loaded()[key] = value

    def __delitem__(self, key: K) -> None:
        del self._loaded()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


def _module_names() -> list[str]:
    own = [f"{catalog.__name__}.{m.name}" for m in pkgutil.iter_modules(catalog.__path__)]
    return own + [name.strip() for name in os.environ.get(PLUGINS_ENV, "").split(",") if name.strip()]


def _import(name: str) -> object:
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
    for name in _module_names():
        declared = getattr(_import(name), "EXPERIMENTS", None)
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


#: every experiment by its grid's name, in the order of their modules' names and, within one, declared
#: (collected on first use)
EXPERIMENTS: Mapping[str, Experiment] = Lazy(_collect)


def _collect_searches() -> dict[str, Search]:
    """The recipe searches the same modules declare (`SEARCHES`, optional), each of a known experiment."""
    found: dict[str, Search] = {}
    for name in _module_names():
        for search in getattr(_import(name), "SEARCHES", ()):
            if not isinstance(getattr(search, "name", None), str) or not hasattr(search, "experiment"):
                raise PluginError(f"{name}: SEARCHES holds {search!r}, not a search (no name, no experiment)")
            if search.name in found or search.name in EXPERIMENTS:
                raise PluginError(f"search {search.name!r} is declared twice or names an experiment")
            if search.experiment not in EXPERIMENTS:
                raise PluginError(f"search {search.name!r} serves unknown experiment {search.experiment!r}")
            found[search.name] = search
    return found


#: every declared search by name (collected on first use)
SEARCHES: Mapping[str, Search] = Lazy(_collect_searches)


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
    """Why no experiment has a recipe for `task`, as a module of experiments says it (`NO_RECIPE`: task ->
    what its nearest pre-search reached), else that none has run."""
    notes = (getattr(_import(name), "NO_RECIPE", {}) for name in _module_names())
    return next((note[task] for note in notes if task in note), "no pre-search has run for it")


def presearch_record(grid: str) -> str:
    """Where that pre-search is recorded ("" when the experiment names no record)."""
    experiment = EXPERIMENTS.get(grid)
    return experiment.presearch if experiment else ""
