"""How a grid's point becomes a trial config at a scale: `trial_config` decides one trial's settings in one
order of precedence (`SOURCES`; `provenance` says which step set each); `sweeps.grids.points` gives a grid's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from arith.config import ConfigError, ExperimentConfig
from arith.data.datasets import validate_data
from arith.tracking import schema
from arith.validation import validate
from experiments.grid import PRESEARCH_FIRST_SEED, Grid, Point
from experiments.recipes import Recipe
from experiments.registry import recipe_for
from sweeps.scales import Scale


@dataclass(frozen=True)
class SweepLink:
    """What a trial records of its sweep: the parent run it nests under and the sweep's tags it carries,
    written by `trial_config` with the rest of the trial's config, not patched in afterwards."""

    parent_run_id: str
    tags: Mapping[str, str] = field(default_factory=dict)


def scale_note(grid: Grid, scale: str) -> str | None:
    """A line saying the grid is made for another scale than `scale` (None when it is not)."""
    if grid.scale and grid.scale != scale:
        return (
            f"note: grid {grid.name!r} is made for --scale {grid.scale} (its settings replace that scale's); "
            f"at scale {scale!r} they are kept as they are"
        )
    return None


def trial_recipe(grid: Grid, scale: Scale, task: str) -> Recipe | None:
    """The recipe a trial of `grid` trains at on `scale`: its experiment's at the scale, else the one the
    scale was given for the task (a search's candidate; `Scale.recipe`), else None."""
    return recipe_for(grid.name, scale.name) or scale.recipe(task)


#: where a trial's setting came from, in the order of precedence (`trial_config`)
DEFAULT, BASE, POINT, SCALE, RECIPE, OVER_SCALE, SET, SEEDS = SOURCES = (
    "default",
    "grid base",
    "grid point",
    "--scale",
    "recipe",
    "grid point (over the scale)",
    "--set",
    "--seeds",
)


@dataclass(frozen=True)
class Stage:
    """A trial's config after one step of its precedence (`SOURCES`), and the settings that step names
    outright (an override equal to what was there before is still where the setting comes from)."""

    source: str
    config: ExperimentConfig
    named: frozenset[str] = frozenset()


def config_stages(
    grid: Grid,
    point: Point,
    scale: Scale,
    overrides: Mapping[str, Any] | None = None,
    seed: int | None = None,
    link: SweepLink | None = None,
) -> list[Stage]:
    """The trial's config after each step of `SOURCES`, each over the ones before, the last one the trial's
    own (unvalidated): the defaults; the grid's base and the point (the paper-scale config); the scale
    (`Scale.shrink`, then with a step budget the epochs it needs); the recipe its experiment declares for the
    scale (`trial_recipe`); the point's `over_scale` keys, then `--set` (after either, a step budget's
    epochs are fitted again unless `train.epochs` was set outright); the seed (None: the configured one),
    `data.seed` moved by as much, the MLflow names and tags, and with `link` the sweep's parent run."""
    defaults = ExperimentConfig()
    base = dict(grid.base)
    axes = {k for k, v in point.overrides.items() if k not in base or repr(base[k]) != repr(v)}
    paper_cfg = defaults.with_overrides(point.overrides)  # the paper-scale config
    stages = [
        Stage(DEFAULT, defaults),
        Stage(BASE, defaults.with_overrides(base), frozenset(base)),
        Stage(POINT, paper_cfg, frozenset(axes)),
    ]
    recipe = trial_recipe(grid, scale, paper_cfg.data.task)
    cfg = scale.shrink(paper_cfg, scale_digits=grid.scale_digits)
    if not recipe and scale.steps:
        cfg = scale.fit_epochs(cfg, paper_cfg)
    stages.append(Stage(SCALE, cfg, frozenset(scale.overrides)))
    if recipe:
        cfg = scale.fit_epochs(recipe.apply(cfg, paper_cfg), paper_cfg)
    stages.append(Stage(RECIPE, cfg, frozenset(recipe.settings) if recipe else frozenset()))
    over_scale = {k: v for k, v in point.overrides.items() if k in grid.over_scale}
    for source, later, named in (
        (OVER_SCALE, over_scale, over_scale),
        (SET, {**over_scale, **(overrides or {})}, overrides or {}),
    ):
        cfg = stages[4].config.with_overrides(later)
        if later and (recipe.steps if recipe else scale.steps) and "train.epochs" not in later:
            # a new step budget, batch or sample count moves the epochs; what was set outright stays set
            cfg = scale.fit_epochs(cfg, paper_cfg).with_overrides(later)
        stages.append(Stage(source, cfg, frozenset(named)))
    seed = cfg.train.seed if seed is None else seed
    # the point's colour in the MLflow UI's charts and the report's figures: by its place among the grid's
    # points, so that a subset run (--only) or a later part of the sweep keeps its colours
    names = [p.name for p in grid.points()]
    place = names.index(point.name) if point.name in names else len(names)
    trial = cfg.with_overrides(
        {
            "data.seed": cfg.data.seed + seed - cfg.train.seed,
            "train.seed": seed,
            "tracking.experiment": grid.name,
            "tracking.run_name": f"{point.name},seed={seed}",
            "tracking.tags": {
                **cfg.tracking.tags,
                schema.GRID_TAG: grid.name,
                schema.SCALE_TAG: scale.name,
                schema.SEED_TAG: str(seed),
                schema.POINT_TAG: point.name,
                schema.RUN_COLOR_TAG: schema.POINT_COLOURS[place % len(schema.POINT_COLOURS)],
                schema.PAPER_TABLE_TAG: schema.paper_table_tag(grid.table_of(paper_cfg)),
                schema.PAPER_EPOCHS_TAG: json.dumps(_paper_epochs(paper_cfg, cfg)),
                **(link.tags if link else {}),
            },
            **({"tracking.parent_run_id": link.parent_run_id} if link else {}),
        }
    )
    return [*stages, Stage(SEEDS, trial)]


def trial_config(
    grid: Grid,
    point: Point,
    scale: Scale,
    overrides: Mapping[str, Any] | None = None,
    seed: int | None = None,
    link: SweepLink | None = None,
) -> ExperimentConfig:
    """One trial's config, validated and tagged: the one place a trial's settings are decided (the last of
    `config_stages`)."""
    trial = config_stages(grid, point, scale, overrides, seed, link)[-1].config
    try:
        validate_data(validate(trial).data)  # what the data layer cannot produce fails here too
    except ConfigError as err:
        made_for = f" (the grid is made for --scale {grid.scale})" if scale_note(grid, scale.name) else ""
        raise ConfigError(
            f"grid {grid.name!r} point {point.name!r} at scale {scale.name!r}{made_for}: {err}"
        ) from err
    return trial


def provenance(stages: list[Stage]) -> dict[str, str]:
    """Each setting of the trial -> the last step of `config_stages` that named or changed it."""
    flats = [stage.config.flat() for stage in stages]
    out = {}
    for key in flats[-1]:
        out[key] = DEFAULT
        for stage, before, after in zip(stages[1:], flats, flats[1:], strict=False):
            if key in stage.named or repr(after[key]) != repr(before[key]):
                out[key] = stage.source
    return out


def setting_sources(
    grid: Grid, scale: Scale, configs: Iterable[ExperimentConfig], overrides: Mapping[str, Any] | None = None
) -> list[dict[str, str]]:
    """Where every setting of the sweep's trials came from, one row a setting: its key, the step(s) of
    `SOURCES` that set it ("extension": a sweep extension changed it) and its value (or "(varies)")."""
    points = {p.name: p for p in grid.points()}
    seen: dict[str, list[tuple[str, str]]] = {}
    for cfg in configs:
        point = points[cfg.tracking.tags[schema.POINT_TAG]]
        stages = config_stages(grid, point, scale, overrides, cfg.train.seed)
        sources, built = provenance(stages), stages[-1].config.flat()
        for key, value in cfg.flat().items():
            source = sources[key] if repr(built[key]) == repr(value) else "extension"
            seen.setdefault(key, []).append((source, repr(value)))
    return [
        {
            "setting": key,
            "from": " / ".join(dict.fromkeys(source for source, _ in pairs)),
            "value": _clipped(pairs[0][1]) if len({value for _, value in pairs}) == 1 else "(varies)",
        }
        for key, pairs in seen.items()
    ]


def _clipped(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def parse_seeds(text: str) -> int | tuple[int, ...]:
    """`--seeds`: a count K ("3"), explicit seeds ("1,2") or ranges ("20-29", "5,7-9"). A count of
    PRESEARCH_FIRST_SEED (100) or more is refused: it is nearly always a pre-search seed written without
    its comma ("100" for "100,")."""
    values: list[int] = []
    try:
        for part in filter(None, (p.strip() for p in text.split(","))):
            first, dash, last = part.partition("-")
            low, high = int(first), int(last if dash else first)
            if high < low:
                raise ValueError(part)
            values.extend(range(low, high + 1))
    except ValueError:
        values = []
    if not values:
        raise ConfigError(f"--seeds takes a count (3), seeds like 1,2 or a range like 20-29, not {text!r}")
    if len(values) == 1 and "," not in text and "-" not in text:
        count = values[0]
        if count >= PRESEARCH_FIRST_SEED:
            raise ConfigError(
                f"--seeds {count} would be a count of {count} seeds ({count} from the first); "
                f"for seed {count} alone write --seeds {count}, (with its comma), "
                f"and for a range --seeds {count}-{count + 4}"
            )
        return count
    return tuple(values)


def _paper_epochs(paper_cfg: ExperimentConfig, cfg: ExperimentConfig) -> dict[str, int]:
    """Evaluated epoch -> the paper's epoch it stands for (a scale shortens training proportionally)."""
    scaled = sorted({*cfg.train.eval_epochs, cfg.train.epochs})
    paper = sorted({*paper_cfg.train.eval_epochs, paper_cfg.train.epochs})
    if len(scaled) == len(paper):
        return {str(s): p for s, p in zip(scaled, paper, strict=True)}
    return {str(cfg.train.epochs): paper_cfg.train.epochs}
