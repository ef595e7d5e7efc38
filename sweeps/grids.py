"""The grids a sweep can run: every experiment's (`experiments.registry`), by name, and `points`, a grid's
validated trial configs at a scale (each one `sweeps.space.trial_config`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any

from arith.config import ConfigError, ExperimentConfig
from arith.tracking.schema import POINT_TAG
from experiments.grid import Grid
from experiments.registry import EXPERIMENTS, Lazy, claims_for
from sweeps.errors import SweepError
from sweeps.scales import SCALES, Scale, get_scale
from sweeps.space import SweepLink, trial_config, trial_recipe

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
    only: Mapping[str, str | Sequence[str]] | None = None,
    link: SweepLink | None = None,
) -> list[ExperimentConfig]:
    """Every trial of `grid` (a name or a Grid) at `scale`: one validated config per point and seed, tagged
    for MLflow and with `link` nested under its sweep's parent run. `seeds` is a count K (the configured
    train.seed and the K-1 after it) or explicit seeds. `only` (`--only`) keeps the points whose config at
    the scale has one of its values for every key, read before `overrides`: a `--set` moves a kept point
    without dropping it, and is validated only on the points kept."""
    grid = get_grid(grid) if isinstance(grid, str) else grid
    scale = get_scale(scale) if isinstance(scale, str) else scale
    only = {k: (v,) if isinstance(v, str) else tuple(v) for k, v in (only or {}).items()}
    kept = grid.points()
    bundles = {k: only.pop(k) for k in list(only) if k in grid.bundle_axes()}
    if bundles:  # `--only model=tiny`: a bundle of settings by its name
        kept = [p for p in kept if all(any(f"{k}={v}" in p.labels for v in vs) for k, vs in bundles.items())]
        if not kept:
            raise SweepError(f"--only {bundles} matches none of the grid's {len(grid.points())} points")
    if only:
        names = {
            c.tracking.tags[POINT_TAG] for c in select([trial_config(grid, p, scale) for p in kept], only)
        }
        kept = [p for p in kept if p.name in names]
    out = []
    for point in kept:
        first = trial_config(grid, point, scale, overrides, link=link)
        values = _seed_values(seeds, first.train.seed)
        _refuse_a_rejected_recipe(grid, scale, first.data.task, values)
        for seed in values:
            same = seed == first.train.seed
            out.append(first if same else trial_config(grid, point, scale, overrides, seed, link))
    return out


def _refuse_a_rejected_recipe(grid: Grid, scale: Scale, task: str, seeds: list[int]) -> None:
    """A recipe its pre-search tried and did not choose runs on the scale's pre-search seeds only: no sweep
    that could judge a claim trains at a budget known not to learn."""
    recipe = trial_recipe(grid, scale, task)
    judging = [s for s in seeds if s not in scale.presearch_seeds]
    if recipe and not recipe.chosen and judging:
        shown = judging if len(judging) <= 6 else [*judging[:2], "...", judging[-1]]
        raise ConfigError(
            f"grid {grid.name!r} at scale {scale.name!r}: the {task!r} recipe {recipe.name!r} is a candidate "
            f"its pre-search did not choose and only the pre-search seeds "
            f"{', '.join(map(str, scale.presearch_seeds))} run it, not {', '.join(map(str, shown))}"
        )


def select(
    configs: list[ExperimentConfig], only: Mapping[str, str | Sequence[str]]
) -> list[ExperimentConfig]:
    """The configs that have, for every `--only` key, its value or one of its values
    (`arith.config.parse_only`; e.g. model.init=random); fails when none do."""
    if not only:
        return configs
    unknown = set(only) - set(ExperimentConfig.keys())
    if unknown:
        raise ConfigError(
            f"--only: unknown key(s) {sorted(unknown)}; valid keys: {', '.join(ExperimentConfig.keys())}"
        )
    wanted = {k: (v,) if isinstance(v, str) else tuple(v) for k, v in only.items()}
    kept = [c for c in configs if all(str(c.flat()[k]) in values for k, values in wanted.items())]
    if not kept:
        raise SweepError(f"--only {dict(only)} matches none of the grid's {len(configs)} points")
    return kept


def _seed_values(seeds: int | Iterable[int], base: int) -> list[int]:
    if isinstance(seeds, int):
        if seeds < 1:
            raise ConfigError(f"--seeds must be >= 1 (got {seeds})")
        return [base + i for i in range(seeds)]
    values = list(seeds)
    if not values or len(set(values)) != len(values):
        raise ConfigError(f"seeds must be distinct and at least one (got {values})")
    return values


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
