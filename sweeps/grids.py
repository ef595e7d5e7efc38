"""The grids a sweep can run: every experiment's (`experiments.registry`), by name, and `points`, a grid's
validated trial configs at a scale (`sweeps.space`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from arith.config import ConfigError, ExperimentConfig
from experiments.grid import Grid
from experiments.registry import EXPERIMENTS, Lazy, claims_for
from sweeps.scales import SCALES, Scale
from sweeps.space import SweepLink, resolve

#: every grid by name, built on first use (`Lazy`: a broken plugin fails in a command, not at import)
GRIDS: MutableMapping[str, Grid] = Lazy(lambda: {name: e.grid for name, e in EXPERIMENTS.items()})


def get_grid(name: str) -> Grid:
    """The grid called `name`; an unknown name fails listing the valid ones."""
    if name not in GRIDS:
        raise ConfigError(f"unknown grid {name!r}; choose one of: {', '.join(GRIDS)}")
    return GRIDS[name]


def points(
    grid: Grid | str,
    scale: Scale | str = "paper",
    seeds: int | Iterable[int] = 1,
    overrides: Mapping[str, Any] | None = None,
    only: Mapping[str, str] | None = None,
    link: SweepLink | None = None,
) -> list[ExperimentConfig]:
    """Every trial of `grid` (a name or a Grid) at `scale`: one validated config per point and seed,
    tagged for MLflow; `only` keeps the points with those values before `overrides`; `link` nests them
    under their sweep's parent run (`space.resolve`)."""
    grid = get_grid(grid) if isinstance(grid, str) else grid
    return resolve(grid, scale, seeds, overrides, only, link)


def list_grids() -> str:
    """The `--list` text: every grid's axes, size, paper tables and claims; then the scales."""
    lines = []
    for grid in GRIDS.values():
        lines.append(f"{grid.name}  ({len(grid.points())} points)  {grid.description}")
        lines += [f"    axes: {line}" for line in grid.axis_summary()]
        lines.append(f"    paper: {', '.join(grid.paper_tables) or 'none (beyond the paper)'}")
        claims = claims_for(grid.name, grid.parent)
        whose = f" (those of {grid.parent})" if grid.parent and claims else ""
        lines.append(f"    claims: {len(claims)}{whose}" if claims else "    claims: none")
    lines.append("")
    lines += [f"scale {s.name}: {s.description}" for s in SCALES.values()]
    return "\n".join(lines)
