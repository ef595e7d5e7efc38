"""The recipe searches the modules of experiments declare (`SEARCHES`, optional, beside `EXPERIMENTS`):
objects naming themselves and the experiment whose points they run (`lab.search.declared.Search`), that
`python -m lab.sweep --search NAME` runs. Read through the registry's plugin hook, on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from experiments.registry import EXPERIMENTS, Lazy, PluginError, load, module_names


class Search(Protocol):
    """What is read of a declared search: its name and the experiment whose points it runs."""

    name: str
    experiment: str


def _collect_searches() -> dict[str, Search]:
    """Every module's `SEARCHES`, each of a known experiment."""
    found: dict[str, Search] = {}
    for name in module_names():
        for search in getattr(load(name), "SEARCHES", ()):
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
